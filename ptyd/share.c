/*
 * share.c -- shares (share.h).
 *
 * ptyd's memory is the truth; the header slots are its copy for the
 * next ptyd (a crash, an upgrade: DESIGN 10), and the `shares` rows its
 * copy for people.  Neither ever holds the token: only its SHA-256, by
 * which the index finds a share (256 chains on its first byte, a
 * constant-time compare of the whole hash along the chain).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mirror.h"
#include "proto.h"
#include "ptyd.h"
#include "share.h"
#include "sharetok.h"
#include "store.h"
#include "term.h"
#include "termhdr.h"
#include "xmalloc.h"

#define SHARE_BUCKETS 256

static struct share *share_index[SHARE_BUCKETS];

static void share_timer_cb(void *);

const char *
share_role_name(int role)
{
	switch (role) {
	case PROTO_ROLE_VIEW:
		return ("view");
	case PROTO_ROLE_CONTROL:
		return ("control");
	default:
		return (NULL);
	}
}

int
share_role_parse(const char *s)
{
	if (strcmp(s, "view") == 0)
		return (PROTO_ROLE_VIEW);
	if (strcmp(s, "control") == 0)
		return (PROTO_ROLE_CONTROL);
	return (0);
}

static void
share_index_add(struct share *s)
{
	s->hnext = share_index[s->hash[0]];
	share_index[s->hash[0]] = s;
}

static void
share_index_del(struct share *s)
{
	struct share **pp;

	for (pp = &share_index[s->hash[0]]; *pp != NULL; pp = &(*pp)->hnext)
		if (*pp == s) {
			*pp = s->hnext;
			return;
		}
}

/* The header's copy: the slot filled, its id last. */
static void
share_slot_write(struct share *s)
{
	struct termhdr	     *h = s->term->hdr;
	struct termhdr_share *hs;
	int		      i;

	s->slot = -1;
	if (h == NULL)
		return;
	for (i = 0; i < TERMHDR_SHARES; i++)
		if (atomic_load(&h->shares[i].id) == 0)
			break;
	if (i == TERMHDR_SHARES)
		return; /* max_shares is at most TERMHDR_SHARES */
	hs = &h->shares[i];
	hs->role = s->role;
	hs->created_at = s->created_at;
	hs->expires_at = s->expires_at;
	memcpy(hs->hash, s->hash, sizeof(hs->hash));
	hs->has_user = s->user != NULL;
	snprintf(hs->user, sizeof(hs->user), "%s",
	    s->user != NULL ? s->user : "");
	atomic_store_explicit(&hs->id, s->id, memory_order_release);
	s->slot = i;
}

static void
share_slot_clear(struct share *s)
{
	if (s->slot >= 0 && s->term->hdr != NULL)
		atomic_store_explicit(&s->term->hdr->shares[s->slot].id, 0,
		    memory_order_release);
	s->slot = -1;
}

/* The row in `shares` as s stands, and how it ended (reason NULL: live;
 * "revoked" sets revoked_at, anything else ended_at). */
static void
share_row(const struct share *s, const char *reason, int64_t now)
{
	struct store_share r;
	char		   hex[2 * SHARETOK_HASH + 1];

	sharetok_hex(s->hash, hex);
	memset(&r, 0, sizeof(r));
	r.id = s->id;
	r.terminal_id = s->term->id;
	r.sid = s->term->sid;
	r.owner = s->term->owner;
	r.role = share_role_name(s->role);
	r.user = s->user;
	r.created_at = mirror_wall_s(s->created_at);
	r.expires_at = mirror_wall_s(s->expires_at);
	r.revoked_at = r.ended_at = -1;
	if (reason != NULL && strcmp(reason, "revoked") == 0)
		r.revoked_at = mirror_wall_s(now);
	else if (reason != NULL)
		r.ended_at = mirror_wall_s(now);
	r.end_reason = reason;
	r.token_hash = hex;
	mirror_share(&r, now);
}

static struct share *
share_new(struct term *t, uint32_t id, int role, const char *user,
    int64_t created_at, int64_t expires_at, const uint8_t *hash)
{
	struct share *s = xcalloc(1, sizeof(*s));

	s->term = t;
	s->id = id;
	s->role = (uint8_t)role;
	s->user = user != NULL ? xstrdup(user) : NULL;
	s->created_at = created_at;
	s->expires_at = expires_at;
	memcpy(s->hash, hash, SHARETOK_HASH);
	s->slot = -1;
	ev_timer_init(&s->timer, share_timer_cb, s);
	ev_timer_at(&s->timer, expires_at);
	TAILQ_INSERT_TAIL(&t->shares, s, tentry);
	t->nshares++;
	share_index_add(s);
	return (s);
}

enum share_err
share_create(struct term *t, int role, int64_t ttl, const char *user,
    const char *actor, int64_t now, struct share **out,
    char token[SHARETOK_TEXT + 1])
{
	uint8_t	      raw[SHARETOK_LEN], hash[SHARETOK_HASH];
	struct share *s;
	char	      detail[PROTO_OWNER_MAX + 96];

	if (share_role_name(role) == NULL)
		return (SHARE_EROLE);
	if (ttl < ptyd_conf.share_min_ttl || ttl > ptyd_conf.share_max_ttl)
		return (SHARE_ETTL);
	if (user == NULL && !ptyd_conf.share_anonymous)
		return (SHARE_EANONYMOUS);
	if (t->nshares >= ptyd_conf.max_shares)
		return (SHARE_ELIMIT);
	if (sharetok_new(raw) == -1)
		return (SHARE_ERANDOM);
	sharetok_hash(raw, hash);
	sharetok_encode(raw, token);
	explicit_bzero(raw, sizeof(raw));
	s = share_new(t, (uint32_t)mirror_next_id(), role, user, now, now + ttl,
	    hash);
	share_slot_write(s);
	share_row(s, NULL, now);
	snprintf(detail, sizeof(detail),
	    "share=%u role=%s user=%s expires=%lld", s->id,
	    share_role_name(role), user != NULL ? user : "(anyone)",
	    (long long)(ttl / PTYD_SEC));
	mirror_event(t, now, TERM_EV_SHARE, actor, detail);
	*out = s;
	return (SHARE_OK);
}

struct share *
share_use(const char *token, const char *requester, int64_t now)
{
	uint8_t	      raw[SHARETOK_LEN], hash[SHARETOK_HASH];
	struct share *s, *found = NULL;

	if (sharetok_decode(token, raw) == -1)
		return (NULL);
	sharetok_hash(raw, hash);
	explicit_bzero(raw, sizeof(raw));
	for (s = share_index[hash[0]]; s != NULL; s = s->hnext)
		if (sharetok_equal(s->hash, hash))
			found = s;
	if (found == NULL || now >= found->expires_at ||
	    found->term->state != TERM_RUNNING || !found->term->registered)
		return (NULL);
	if (found->user != NULL && strcmp(found->user, requester) != 0)
		return (NULL);
	return (found);
}

struct share *
share_find(struct term *t, uint32_t id)
{
	struct share *s;

	TAILQ_FOREACH (s, &t->shares, tentry)
		if (s->id == id)
			return (s);
	return (NULL);
}

unsigned int
share_viewers(const struct share *s)
{
	struct viewer *v;
	unsigned int   n = 0;

	TAILQ_FOREACH (v, &s->term->viewers, entry)
		if (v->share_id == s->id)
			n++;
	return (n);
}

unsigned int
share_count(const struct term *t)
{
	return (t->nshares);
}

static void
share_free(struct share *s)
{
	struct term *t = s->term;

	ev_timer_stop(&s->timer);
	share_index_del(s);
	TAILQ_REMOVE(&t->shares, s, tentry);
	t->nshares--;
	explicit_bzero(s->hash, sizeof(s->hash));
	free(s->user);
	free(s);
}

/*
 * s ends: "revoked" (by actor), "expired" or "terminal".  Its slot is
 * cleared first, so a ptyd taking over at any instant after never brings
 * it back; the streams opened through it end with share_ended (but at
 * the terminal's end, where terminal_closed says it).
 */
static void
share_end(struct share *s, const char *reason, const char *actor, int64_t now)
{
	struct term   *t = s->term;
	struct viewer *v, *next;
	char	       detail[96];

	share_slot_clear(s);
	share_row(s, reason, now);
	snprintf(detail, sizeof(detail), "share=%u role=%s reason=%s", s->id,
	    share_role_name(s->role), reason);
	mirror_event(t, now,
	    strcmp(reason, "revoked") == 0 ? TERM_EV_UNSHARE :
					     TERM_EV_SHARE_END,
	    actor, detail);
	/* A stream told leaves the terminal at once (connstream.c): the
	 * walk keeps its next viewer first. */
	if (strcmp(reason, "terminal") != 0)
		for (v = TAILQ_FIRST(&t->viewers); v != NULL; v = next) {
			next = TAILQ_NEXT(v, entry);
			if (v->share_id == s->id && v->share_end == NULL) {
				v->share_end = reason;
				v->wake(v);
			}
		}
	share_free(s);
}

static void
share_timer_cb(void *arg)
{
	struct share *s = arg;

	share_end(s, "expired", NULL, ev_now());
}

int
share_revoke(struct term *t, uint32_t id, const char *actor, int64_t now)
{
	struct share *s;

	if ((s = share_find(t, id)) == NULL)
		return (0);
	share_end(s, "revoked", actor, now);
	return (1);
}

void
share_term_end(struct term *t, int64_t now)
{
	struct share *s, *next;

	for (s = TAILQ_FIRST(&t->shares); s != NULL; s = next) {
		next = TAILQ_NEXT(s, tentry);
		share_end(s, "terminal", NULL, now);
	}
}

void
share_term_free(struct term *t)
{
	struct share *s, *next;

	for (s = TAILQ_FIRST(&t->shares); s != NULL; s = next) {
		next = TAILQ_NEXT(s, tentry);
		share_free(s);
	}
}

/*
 * The shares the last ptyd wrote into t's header, live again here; one
 * past its expiry ends now.  Their ids are not given out again.
 */
void
share_adopt(struct term *t, int64_t now)
{
	struct termhdr_share *hs;
	struct share	     *s;
	uint32_t	      id;
	int		      i;

	if (t->hdr == NULL || t->hdr->layout < 3)
		return;
	for (i = 0; i < TERMHDR_SHARES; i++) {
		hs = &t->hdr->shares[i];
		id = atomic_load_explicit(&hs->id, memory_order_acquire);
		if (id == 0)
			continue;
		mirror_reserve_id(id);
		if (share_role_name((int)hs->role) == NULL ||
		    t->nshares >= TERMHDR_SHARES) {
			atomic_store(&hs->id, 0);
			continue;
		}
		hs->user[sizeof(hs->user) - 1] = '\0';
		s = share_new(t, id, (int)hs->role,
		    hs->has_user ? hs->user : NULL, hs->created_at,
		    hs->expires_at, hs->hash);
		s->slot = i;
		if (t->state != TERM_RUNNING)
			share_end(s, "terminal", NULL, now);
		else if (now >= s->expires_at)
			share_end(s, "expired", NULL, now);
		else
			share_row(s, NULL, now);
	}
}
