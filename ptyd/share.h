/*
 * share.h -- shares (DESIGN 2, 6): an owner's grant of one terminal
 * incarnation, with a role (view or control), an expiry and optionally
 * the one user who may use it, reached by a token the owner is shown once.
 *
 * Owns: every struct share; the index by token hash; each share's expiry
 * timer; its slot in the terminal's memfd header (lib/termhdr.h), which a
 * ptyd taking over reads back (share_adopt); the share, unshare and
 * share_end audit events and the `shares` rows.  Does not own: the token's
 * form (sharetok.c), the terminal (term.c) or the streams opened through a
 * share (connstream.c: told through their struct viewer).
 *
 * A share lives no longer than its terminal's running state: any way out
 * of it (exit, close, restart, reap, eviction, shutdown) ends the share.
 */
#ifndef PTYD_SHARE_H
#define PTYD_SHARE_H

#include <sys/queue.h>

#include <stdint.h>

#include "ev.h"
#include "sharetok.h"

struct term;

struct share {
	TAILQ_ENTRY(share) tentry; /* its terminal's, oldest first */
	struct share   *hnext;	   /* the index's chain */
	struct term    *term;
	uint32_t	id;
	uint8_t		role;	    /* PROTO_ROLE_* */
	char	       *user;	    /* NULL: whoever the web server admits */
	int64_t		created_at; /* monotonic us */
	int64_t		expires_at;
	uint8_t		hash[SHARETOK_HASH];
	int		slot; /* in the header; -1: none (no keeper) */
	struct ev_timer timer;
};
TAILQ_HEAD(share_list, share);

enum share_err {
	SHARE_OK = 0,
	SHARE_EINVALID,	  /* unknown, revoked, expired, ended, another's */
	SHARE_EANONYMOUS, /* no user, and share_anonymous = no */
	SHARE_ELIMIT,	  /* max_shares live already */
	SHARE_ETTL,	  /* expires_in out of range */
	SHARE_EROLE,	  /* no such role */
	SHARE_ERANDOM,	  /* no randomness to be had */
};

/* A new share of t (running); token: its text, to be shown once. */
enum share_err share_create(struct term *t, int role, int64_t ttl,
    const char *user, const char *actor, int64_t now, struct share **out,
    char token[SHARETOK_TEXT + 1]);
/* The share token names, if requester may use it now; NULL otherwise
 * (one answer for every reason). */
struct share *share_use(const char *token, const char *requester, int64_t now);
/* Revoke t's share id: 1 if it was live, 0 if not.  Its streams end. */
int share_revoke(struct term *t, uint32_t id, const char *actor, int64_t now);
struct share *share_find(struct term *t, uint32_t id);
/* Streams open through s now. */
unsigned int share_viewers(const struct share *);
unsigned int share_count(const struct term *);
/* t leaves its running state: each share ends (share_end, reason
 * "terminal"); t is being freed: what is left goes quietly. */
void share_term_end(struct term *t, int64_t now);
void share_term_free(struct term *t);
/* t was adopted from the ptyd before: its shares back from the header. */
void share_adopt(struct term *t, int64_t now);
/* "view", "control", or NULL. */
const char *share_role_name(int role);
int	    share_role_parse(const char *);

#endif /* PTYD_SHARE_H */
