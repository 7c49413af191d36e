/*
 * anchor.h -- the audit chain's anchors: one line naming a point of the
 * chain (seq and hash), sent where the account cannot rewrite it (the
 * system log), and read back by ptydctl audit verify.
 *
 * Owns: the audit_anchor setting's values (syslog, none, unix:PATH), the
 * line's text and its parsing, and sending one line as a datagram without
 * ever waiting.  Does not own: when a line is sent (audit.c for ptyd,
 * ptydctl/ptydctl_prune.c), nor what a line proves (chaindb.c).
 */
#ifndef PTYD_ANCHOR_H
#define PTYD_ANCHOR_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "chain.h"

#define ANCHOR_SYSLOG_PATH "/dev/log"
#define ANCHOR_IDENT	   "ptyd-audit"
#define ANCHOR_LINE_MAX	   1024

enum anchor_to {
	ANCHOR_TO_NONE,
	ANCHOR_TO_SYSLOG,
	ANCHOR_TO_UNIX, /* a datagram socket of one's own: tests */
};

struct anchor_dest {
	enum anchor_to to;
	char	       path[108]; /* sun_path */
};

/* What a line says. */
enum anchor_kind {
	ANCHOR_START,  /* ptyd began with this head */
	ANCHOR_HEAD,   /* rows up to seq were written */
	ANCHOR_STOP,   /* ptyd stopped with this head */
	ANCHOR_TAMPER, /* ptyd's own head row was changed or removed */
	ANCHOR_PRUNE,  /* rows up to seq were pruned; hash: row seq's */
	ANCHOR_NKINDS
};

#define ANCHOR_FOUND_MAX 16

struct anchor {
	enum anchor_kind kind;
	int64_t		 seq; /* prune: through */
	int		 has_hash;
	uint8_t		 hash[CHAIN_HASH_LEN];
	char		 found[ANCHOR_FOUND_MAX]; /* tamper: what ptyd found */
};

/* "syslog", "none" or "unix:/ABSOLUTE/PATH"; 0, or -1 if none of them. */
int anchor_dest_parse(const char *s, struct anchor_dest *d);

const char *anchor_kind_name(enum anchor_kind);

/* "audit head db=PATH seq=N hash=HEX" and the like, the path with spaces,
 * '%' and control characters %XX-escaped.  Its length, or -1 if it does
 * not fit. */
int anchor_format(char *buf, size_t size, const struct anchor *a,
    const char *db);

/* The anchor in a line of the system log (any prefix before "audit "),
 * and its db in db (unescaped).  0, or -1 when the line holds none. */
int anchor_parse(const char *line, struct anchor *a, char *db, size_t dbsize);

/* Send msg as one syslog datagram (LOG_AUTHPRIV, priority pri, ident
 * ptyd-audit) to d, never waiting: 0 (also for ANCHOR_TO_NONE), or -1
 * with errno (EAGAIN: the reader is behind; ENOENT, ECONNREFUSED: nobody
 * reads there). */
int anchor_send(const struct anchor_dest *d, int pri, const char *msg,
    time_t now);

/* "<PRI>Mmm dd hh:mm:ss IDENT[PID]: msg" (RFC 3164, LOG_AUTHPRIV) into
 * buf: its length, or -1 (EMSGSIZE) if it does not fit. */
int anchor_syslog_line(char *buf, size_t size, const char *ident, int pri,
    const char *msg, time_t now);

/* One datagram of n bytes to the socket at path, never waiting, from fd
 * (an unbound AF_UNIX SOCK_DGRAM socket) or, with fd -1, from a socket
 * made and closed for it: 0, or -1 with errno as anchor_send's. */
int anchor_dgram(int fd, const char *path, const void *buf, size_t n);

#endif /* PTYD_ANCHOR_H */
