/*
 * anchor.c -- the audit chain's anchor lines and where they go.
 *
 * Owns: the audit_anchor setting's values, the text of an anchor line and
 * its parsing, and sending one line as a syslog datagram.  Not syslog(3):
 * its openlog is the process's one identity, which log.c may already hold
 * for ptyd's own log, and it may wait on a full /dev/log, where ptyd's loop
 * never waits.  Each line is one datagram in the traditional format
 * ("<PRI>Mmm dd hh:mm:ss ptyd-audit[PID]: audit ..."), sent with
 * MSG_DONTWAIT on a socket made for it: journald or rsyslog take it, and
 * journald adds the sender's _PID, _UID and _EXE, which no sender can
 * forge.  The datagram sender and the syslog framing are shared with the
 * audit log's lines (auditlog.c).  Does not own: when lines are sent
 * (audit.c, ptydctl/ptydctl_prune.c) or what they prove (chaindb.c).
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "anchor.h"
#include "util.h"

static const char *const anchor_kinds[ANCHOR_NKINDS] = {
	[ANCHOR_START] = "start",
	[ANCHOR_HEAD] = "head",
	[ANCHOR_STOP] = "stop",
	[ANCHOR_TAMPER] = "tamper",
	[ANCHOR_PRUNE] = "prune",
};

int
anchor_dest_parse(const char *s, struct anchor_dest *d)
{
	memset(d, 0, sizeof(*d));
	if (strcmp(s, "none") == 0)
		d->to = ANCHOR_TO_NONE;
	else if (strcmp(s, "syslog") == 0) {
		d->to = ANCHOR_TO_SYSLOG;
		snprintf(d->path, sizeof(d->path), "%s", ANCHOR_SYSLOG_PATH);
	} else if (strncmp(s, "unix:/", 6) == 0 &&
	    strlen(s + 5) < sizeof(d->path)) {
		d->to = ANCHOR_TO_UNIX;
		snprintf(d->path, sizeof(d->path), "%s", s + 5);
	} else
		return (-1);
	return (0);
}

const char *
anchor_kind_name(enum anchor_kind k)
{
	return (k < ANCHOR_NKINDS ? anchor_kinds[k] : "?");
}

/* The path with bytes that would end or hide a field escaped, and '"':
 * an anchor line holds no quote (anchor_parse). */
static int
anchor_escape(char *buf, size_t size, const char *s)
{
	size_t		     n = 0;
	const unsigned char *p;

	for (p = (const unsigned char *)s; *p != '\0'; p++) {
		if (n + 4 > size)
			return (-1);
		if (*p <= ' ' || *p == '%' || *p == '"' || *p >= 0x7f)
			n += (size_t)snprintf(buf + n, size - n, "%%%02X", *p);
		else
			buf[n++] = (char)*p;
	}
	buf[n] = '\0';
	return (0);
}

int
anchor_format(char *buf, size_t size, const struct anchor *a, const char *db)
{
	char db_esc[ANCHOR_LINE_MAX / 2], hex[CHAIN_HEX_LEN + 1];
	int  n;

	if (anchor_escape(db_esc, sizeof(db_esc), db) == -1)
		return (-1);
	if (a->has_hash)
		chain_hex(a->hash, hex);
	else
		snprintf(hex, sizeof(hex), "-");
	n = snprintf(buf, size, "audit %s db=%s %s=%" PRId64 " hash=%s%s%s",
	    anchor_kind_name(a->kind), db_esc,
	    a->kind == ANCHOR_PRUNE ? "through" : "seq", a->seq, hex,
	    a->found[0] != '\0' ? " found=" : "", a->found);
	return (n < 0 || (size_t)n >= size ? -1 : n);
}

static int
anchor_unescape(const char *s, size_t n, char *out, size_t size)
{
	size_t i, o = 0;
	int    hi, lo;

	for (i = 0; i < n; i++) {
		if (o + 1 >= size)
			return (-1);
		if (s[i] == '%' && i + 2 < n &&
		    (hi = util_hexval(s[i + 1])) != -1 &&
		    (lo = util_hexval(s[i + 2])) != -1) {
			out[o++] = (char)(hi << 4 | lo);
			i += 2;
		} else
			out[o++] = s[i];
	}
	out[o] = '\0';
	return (0);
}

/* One "key=value" token of a line; -1 if the key is unknown or the value
 * is bad. */
static int
anchor_field(const char *tok, size_t n, struct anchor *a, char *db,
    size_t dbsize, int *seen)
{
	const char *eq = memchr(tok, '=', n);
	size_t	    kl, vl;
	char	    num[24], *end;

	if (eq == NULL)
		return (-1);
	kl = (size_t)(eq - tok);
	vl = n - kl - 1;
	if (kl == 2 && memcmp(tok, "db", 2) == 0) {
		*seen |= 1;
		return (anchor_unescape(eq + 1, vl, db, dbsize));
	}
	if ((kl == 3 && memcmp(tok, "seq", 3) == 0) ||
	    (kl == 7 && memcmp(tok, "through", 7) == 0)) {
		if (vl == 0 || vl >= sizeof(num))
			return (-1);
		memcpy(num, eq + 1, vl);
		num[vl] = '\0';
		errno = 0;
		a->seq = strtoll(num, &end, 10);
		*seen |= 2;
		return (errno != 0 || *end != '\0' || a->seq < 0 ? -1 : 0);
	}
	if (kl == 4 && memcmp(tok, "hash", 4) == 0) {
		*seen |= 4;
		a->has_hash = !(vl == 1 && eq[1] == '-');
		return (a->has_hash ? chain_unhex(eq + 1, vl, a->hash) : 0);
	}
	if (kl == 5 && memcmp(tok, "found", 5) == 0 && vl < sizeof(a->found)) {
		memcpy(a->found, eq + 1, vl);
		a->found[vl] = '\0';
	}
	return (0); /* unknown keys: a later version's */
}

/* The "audit KIND" word at the start of s, or -1. */
static int
anchor_kind_find(const char *s, size_t n)
{
	int k;

	for (k = 0; k < ANCHOR_NKINDS; k++)
		if (strlen(anchor_kinds[k]) == n &&
		    memcmp(s, anchor_kinds[k], n) == 0)
			return (k);
	return (-1);
}

int
anchor_parse(const char *line, struct anchor *a, char *db, size_t dbsize)
{
	const char *p, *tok;
	size_t	    n;
	int	    kind, seen = 0;

	memset(a, 0, sizeof(*a));
	for (p = line; (p = strstr(p, "audit ")) != NULL; p++)
		if (p == line || p[-1] == ' ')
			break;
	/* Text after a quote is a value of someone else's line: the audit
	 * log's (auditlog.c) quotes every string it carries, so a session
	 * id or detail saying "audit head ..." is never an anchor. */
	if (p == NULL || memchr(line, '"', (size_t)(p - line)) != NULL)
		return (-1);
	p += 6;
	n = strcspn(p, " \t\r\n");
	if ((kind = anchor_kind_find(p, n)) == -1)
		return (-1);
	a->kind = (enum anchor_kind)kind;
	for (p += n; *p == ' '; p += n) {
		tok = ++p;
		n = strcspn(tok, " \t\r\n");
		if (n > 0 && anchor_field(tok, n, a, db, dbsize, &seen) == -1)
			return (-1);
	}
	return (seen == 7 ? 0 : -1);
}

int
anchor_syslog_line(char *buf, size_t size, const char *ident, int pri,
    const char *msg, time_t now)
{
	static const char mon[12][4] = { "Jan", "Feb", "Mar", "Apr", "May",
		"Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	struct tm	  tm;
	int		  n;

	if (localtime_r(&now, &tm) == NULL)
		memset(&tm, 0, sizeof(tm));
	n = snprintf(buf, size, "<%d>%s %2d %02d:%02d:%02d %s[%ld]: %s",
	    LOG_AUTHPRIV | pri, mon[tm.tm_mon % 12], tm.tm_mday, tm.tm_hour,
	    tm.tm_min, tm.tm_sec, ident, (long)getpid(), msg);
	if (n < 0 || (size_t)n >= size) {
		errno = EMSGSIZE;
		return (-1);
	}
	return (n);
}

int
anchor_dgram(int fd, const char *path, const void *buf, size_t n)
{
	struct sockaddr_un sun;
	int		   own = -1, saved;
	ssize_t		   w;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	if (fd == -1) {
		own = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    0);
		if (own == -1)
			return (-1);
		fd = own;
	}
	w = sendto(fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL,
	    (struct sockaddr *)&sun, sizeof(sun));
	saved = errno;
	if (own != -1)
		close(own);
	errno = saved;
	if (w >= 0 && (size_t)w != n)
		errno = EMSGSIZE;
	return (w >= 0 && (size_t)w == n ? 0 : -1);
}

int
anchor_send(const struct anchor_dest *d, int pri, const char *msg, time_t now)
{
	char buf[ANCHOR_LINE_MAX + 128];
	int  n;

	if (d->to == ANCHOR_TO_NONE)
		return (0);
	if ((n = anchor_syslog_line(buf, sizeof(buf), ANCHOR_IDENT, pri, msg,
		 now)) == -1)
		return (-1);
	return (anchor_dgram(-1, d->path, buf, (size_t)n));
}
