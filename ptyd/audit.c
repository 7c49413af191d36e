/*
 * audit.c -- ptyd's anchors of the audit chain (DESIGN 7).
 *
 * Owns: the destination, the last head anchored and when, the few lines
 * waiting because the reader was behind (EAGAIN), and the counts of lines
 * not sent and of tampering seen.  The head goes out at start, at most
 * every AUDIT_ANCHOR_INTERVAL seconds while rows are written, and at stop;
 * a tamper line at once.  A destination nobody reads (no /dev/log in a
 * container) is warned about once and counted; the chain is still written,
 * and ptydctl audit verify says that no anchor covers it.  Does not own:
 * the head (store.c), the lines' text and the sending (anchor.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "anchor.h"
#include "audit.h"
#include "log.h"
#include "xmalloc.h"

#define AUDIT_QUEUE_MAX 16 /* lines waiting for a reader that is behind */

struct audit_point {
	int	known;
	int64_t seq;
	uint8_t hash[CHAIN_HASH_LEN];
};

struct audit_line {
	int  pri;
	char text[ANCHOR_LINE_MAX];
};

static int		  audit_on;
static struct anchor_dest audit_dest;
static char		 *audit_db;
static struct audit_point audit_cur;  /* the head committed */
static struct audit_point audit_sent; /* the last head anchored */
static double		  audit_sent_at;
static struct audit_line  audit_queue[AUDIT_QUEUE_MAX];
static size_t		  audit_nqueue;
static uint64_t		  audit_nunsent, audit_ntampered;
static int		  audit_warned;

int
audit_init(const char *dest, const char *db)
{
	audit_done();
	if (anchor_dest_parse(dest, &audit_dest) == -1)
		return (-1);
	audit_on = audit_dest.to != ANCHOR_TO_NONE;
	audit_db = xstrdup(db);
	return (0);
}

void
audit_done(void)
{
	free(audit_db);
	audit_db = NULL;
	audit_on = 0;
	audit_nqueue = 0;
	memset(&audit_cur, 0, sizeof(audit_cur));
	memset(&audit_sent, 0, sizeof(audit_sent));
	audit_sent_at = 0;
	audit_warned = 0;
}

/* A line that cannot go: warned about once per outage, counted. */
static void
audit_lost(const char *text, int err)
{
	audit_nunsent++;
	if (audit_warned)
		return;
	audit_warned = 1;
	log_warnx("audit anchors cannot be sent to %s: %s; the chain is"
		  " still written, but nothing outside this account vouches"
		  " for it (first line lost: %s)",
	    audit_dest.path, strerror(err), text);
}

/* Send what waits, in order; a reader that is behind keeps the rest. */
static void
audit_drain(double now)
{
	size_t i, sent = 0;

	for (i = 0; i < audit_nqueue; i++) {
		if (anchor_send(&audit_dest, audit_queue[i].pri,
			audit_queue[i].text, (time_t)now) == 0) {
			if (audit_warned)
				log_info(
				    "audit anchors reach %s again (%" PRIu64
				    " lines lost)",
				    audit_dest.path, audit_nunsent);
			audit_warned = 0;
		} else if (errno == EAGAIN || errno == ENOBUFS)
			break;
		else
			audit_lost(audit_queue[i].text, errno);
		sent++;
	}
	memmove(audit_queue, audit_queue + sent,
	    (audit_nqueue - sent) * sizeof(audit_queue[0]));
	audit_nqueue -= sent;
}

static void
audit_send(enum anchor_kind kind, const struct audit_point *p,
    const char *found, int pri, double now)
{
	struct anchor a;
	char	      text[ANCHOR_LINE_MAX];

	memset(&a, 0, sizeof(a));
	a.kind = kind;
	a.seq = p->seq;
	a.has_hash = 1;
	memcpy(a.hash, p->hash, sizeof(a.hash));
	if (found != NULL)
		snprintf(a.found, sizeof(a.found), "%s", found);
	if (anchor_format(text, sizeof(text), &a, audit_db) == -1) {
		audit_lost("(too long for a line)", EMSGSIZE);
		return;
	}
	if (audit_nqueue == AUDIT_QUEUE_MAX) {
		audit_lost(audit_queue[0].text, EAGAIN);
		memmove(audit_queue, audit_queue + 1,
		    (AUDIT_QUEUE_MAX - 1) * sizeof(audit_queue[0]));
		audit_nqueue--;
	}
	audit_queue[audit_nqueue].pri = pri;
	memcpy(audit_queue[audit_nqueue].text, text, sizeof(text));
	audit_nqueue++;
	audit_drain(now);
}

static void
audit_set(struct audit_point *p, int64_t seq,
    const uint8_t hash[CHAIN_HASH_LEN])
{
	p->known = 1;
	p->seq = seq;
	memcpy(p->hash, hash, CHAIN_HASH_LEN);
}

void
audit_start(int64_t seq, const uint8_t hash[CHAIN_HASH_LEN], double now)
{
	if (!audit_on)
		return;
	audit_set(&audit_cur, seq, hash);
	audit_sent = audit_cur;
	audit_sent_at = now;
	audit_send(ANCHOR_START, &audit_cur, NULL, LOG_NOTICE, now);
}

void
audit_head(int64_t seq, const uint8_t hash[CHAIN_HASH_LEN], double now)
{
	if (!audit_on)
		return;
	audit_set(&audit_cur, seq, hash);
	audit_tick(now);
}

void
audit_tamper(int64_t seq, const uint8_t hash[CHAIN_HASH_LEN], const char *found,
    double now)
{
	struct audit_point p;

	audit_ntampered++;
	log_warnx("audit log %s: the last row ptyd wrote (seq %" PRId64
		  ") is %s in the database: someone with this account's"
		  " access rewrote the audit log; continuing the chain from"
		  " what ptyd wrote",
	    audit_db != NULL ? audit_db : "", seq, found);
	if (!audit_on)
		return;
	audit_set(&p, seq, hash);
	audit_send(ANCHOR_TAMPER, &p, found, LOG_WARNING, now);
}

void
audit_tick(double now)
{
	if (!audit_on)
		return;
	if (audit_nqueue > 0)
		audit_drain(now);
	if (!audit_cur.known ||
	    (audit_sent.known && audit_sent.seq == audit_cur.seq &&
		memcmp(audit_sent.hash, audit_cur.hash, CHAIN_HASH_LEN) == 0))
		return;
	if (audit_sent.known && now - audit_sent_at < AUDIT_ANCHOR_INTERVAL &&
	    now >= audit_sent_at)
		return;
	audit_sent = audit_cur;
	audit_sent_at = now;
	audit_send(ANCHOR_HEAD, &audit_cur, NULL, LOG_NOTICE, now);
}

void
audit_stop(double now)
{
	if (!audit_on)
		return;
	if (audit_cur.known)
		audit_send(ANCHOR_STOP, &audit_cur, NULL, LOG_NOTICE, now);
	if (audit_nqueue > 0)
		audit_nunsent += audit_nqueue;
	if (audit_nunsent > 0 || audit_ntampered > 0)
		log_warnx("audit anchors: %" PRIu64 " lines not sent, %" PRIu64
			  " rewrites of the log seen",
		    audit_nunsent, audit_ntampered);
	audit_nqueue = 0;
}

uint64_t
audit_unsent(void)
{
	return (audit_nunsent);
}

uint64_t
audit_tampered(void)
{
	return (audit_ntampered);
}
