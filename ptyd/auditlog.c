/*
 * auditlog.c -- every audit event as one line for a fleet's log pipeline.
 *
 * Owns: the audit_log setting's values, an event's line (key=value, the
 * strings quoted and escaped), the journal's native datagram, one socket
 * for all lines, and the counts of lines sent and lost.  A line is sent
 * once, after the commit that wrote its row (mirror.c's hook, told by
 * store.c), never waited for: a full socket or nobody reading loses it,
 * counted, warned about once an outage and logged at stop.  SQLite stays
 * the record; the line is a copy with the row's seq, so a collector can
 * tell a gap.  Not syslog(3), for anchor.c's reasons; its datagram sender
 * and syslog framing are anchor.c's.  The ident is not the anchors'
 * (ptyd-audit): `journalctl -t ptyd-audit` and a verifier's filter keep
 * to the anchors, and a line's quotes keep anchor_parse off it anyway.
 * Does not own: the rows (store.c), the anchors (audit.c).
 */
#include <sys/socket.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "anchor.h"
#include "auditlog.h"
#include "log.h"

static struct auditlog_dest auditlog_to;
static int		    auditlog_fd = -1;
static uint64_t		    auditlog_nsent, auditlog_nlost;
static int		    auditlog_warned;

int
auditlog_dest_parse(const char *s, struct auditlog_dest *d)
{
	const char *path = NULL;

	memset(d, 0, sizeof(*d));
	if (strcmp(s, "none") == 0)
		return (0);
	if (strcmp(s, "syslog") == 0) {
		d->fmt = AUDITLOG_SYSLOG;
		path = AUDITLOG_SYSLOG_PATH;
	} else if (strncmp(s, "unix:/", 6) == 0) {
		d->fmt = AUDITLOG_SYSLOG;
		path = s + 5;
	} else if (strcmp(s, "journal") == 0) {
		d->fmt = AUDITLOG_JOURNAL;
		path = AUDITLOG_JOURNAL_PATH;
	} else if (strncmp(s, "journal:/", 9) == 0) {
		d->fmt = AUDITLOG_JOURNAL;
		path = s + 8;
	}
	if (path == NULL || strlen(path) >= sizeof(d->path))
		return (-1);
	memcpy(d->path, path, strlen(path) + 1);
	return (0);
}

/* One string value, quoted: '"' and '\' as \" and \\, bytes outside
 * printable ASCII (controls, DEL, UTF-8) as \xHH, so that a value never
 * ends early, never holds a newline, and an unescaped '"' is always its
 * end.  Cut at AUDITLOG_VALUE_MAX, ending in "...".  Bytes written. */
static size_t
auditlog_quote(char *buf, size_t size, const char *s)
{
	const unsigned char *p;
	size_t		     n = 0, max;

	if (s == NULL)
		return ((size_t)snprintf(buf, size, "-"));
	max = size < AUDITLOG_VALUE_MAX ? size : AUDITLOG_VALUE_MAX;
	if (max < 6)
		return (0);
	buf[n++] = '"';
	for (p = (const unsigned char *)s; *p != '\0'; p++) {
		if (n + 4 + 5 > max) { /* room for \xHH and ..."\0 */
			memcpy(buf + n, "...", 3);
			n += 3;
			break;
		}
		if (*p == '"' || *p == '\\') {
			buf[n++] = '\\';
			buf[n++] = (char)*p;
		} else if (*p < 0x20 || *p >= 0x7f)
			n += (size_t)snprintf(buf + n, max - n, "\\x%02x", *p);
		else
			buf[n++] = (char)*p;
	}
	buf[n++] = '"';
	buf[n] = '\0';
	return (n);
}

int
auditlog_format_text(char *buf, size_t size, const struct store_done *ev)
{
	char   v[4][AUDITLOG_VALUE_MAX + 1], term[24];
	size_t i;
	int    n;

	auditlog_quote(v[0], sizeof(v[0]), ev->sid);
	auditlog_quote(v[1], sizeof(v[1]), ev->owner);
	auditlog_quote(v[2], sizeof(v[2]), ev->actor);
	auditlog_quote(v[3], sizeof(v[3]), ev->detail);
	if (ev->term_id != 0)
		snprintf(term, sizeof(term), "%" PRId64, ev->term_id);
	else
		snprintf(term, sizeof(term), "-");
	/* The kind is ptyd's own word (termstate.c), never quoted. */
	for (i = 0; ev->kind[i] != '\0'; i++)
		if (ev->kind[i] <= ' ' || ev->kind[i] == '"' ||
		    ev->kind[i] >= 0x7f)
			return (-1);
	n = snprintf(buf, size,
	    "seq=%" PRId64 " event=%s terminal=%s session=%s owner=%s"
	    " actor=%s at=%.6f detail=%s",
	    ev->seq, ev->kind, term, v[0], v[1], v[2], ev->at, v[3]);
	return (n < 0 || (size_t)n >= size ? -1 : n);
}

/* One field of the journal's protocol at buf + *n; -1 if it does not
 * fit.  A value with a newline takes the binary form. */
static int
auditlog_field(char *buf, size_t size, size_t *n, const char *name,
    const char *val)
{
	size_t	 nl = strlen(name), vl, i;
	uint64_t len;

	if (val == NULL)
		return (0);
	vl = strlen(val);
	if (*n + nl + 1 + 8 + vl + 1 > size)
		return (-1);
	/* Bytes, not a string: the datagram has no NUL. */
	for (i = 0; i < nl; i++)
		buf[(*n)++] = name[i];
	if (memchr(val, '\n', vl) == NULL)
		buf[(*n)++] = '=';
	else {
		buf[(*n)++] = '\n';
		len = vl;
		for (i = 0; i < 8; i++)
			buf[(*n)++] = (char)(len >> (8 * i) & 0xff);
	}
	memcpy(buf + *n, val, vl);
	*n += vl;
	buf[(*n)++] = '\n';
	return (0);
}

int
auditlog_format_journal(char *buf, size_t size, const struct store_done *ev,
    const char *text)
{
	char   seq[24], term[24], at[40], pri[4], fac[4];
	size_t n = 0;

	snprintf(seq, sizeof(seq), "%" PRId64, ev->seq);
	snprintf(term, sizeof(term), "%" PRId64, ev->term_id);
	snprintf(at, sizeof(at), "%.6f", ev->at);
	snprintf(pri, sizeof(pri), "%d", LOG_INFO);
	snprintf(fac, sizeof(fac), "%d", LOG_AUTHPRIV >> 3);
	if (auditlog_field(buf, size, &n, "MESSAGE", text) == -1 ||
	    auditlog_field(buf, size, &n, "PRIORITY", pri) == -1 ||
	    auditlog_field(buf, size, &n, "SYSLOG_FACILITY", fac) == -1 ||
	    auditlog_field(buf, size, &n, "SYSLOG_IDENTIFIER",
		AUDITLOG_IDENT) == -1 ||
	    auditlog_field(buf, size, &n, "PTYD_SEQ", seq) == -1 ||
	    auditlog_field(buf, size, &n, "PTYD_EVENT", ev->kind) == -1 ||
	    auditlog_field(buf, size, &n, "PTYD_TERMINAL",
		ev->term_id != 0 ? term : NULL) == -1 ||
	    auditlog_field(buf, size, &n, "PTYD_SESSION", ev->sid) == -1 ||
	    auditlog_field(buf, size, &n, "PTYD_OWNER", ev->owner) == -1 ||
	    auditlog_field(buf, size, &n, "PTYD_ACTOR", ev->actor) == -1 ||
	    auditlog_field(buf, size, &n, "PTYD_AT", at) == -1 ||
	    auditlog_field(buf, size, &n, "PTYD_DETAIL", ev->detail) == -1)
		return (-1);
	return ((int)n);
}

int
auditlog_init(const char *dest)
{
	struct auditlog_dest d;

	if (auditlog_dest_parse(dest, &d) == -1)
		return (-1);
	auditlog_done();
	auditlog_to = d;
	auditlog_nsent = auditlog_nlost = 0;
	auditlog_warned = 0;
	if (d.fmt == AUDITLOG_NONE)
		return (0);
	/* Unbound: each line is a sendto; a socket that cannot be made now
	 * is made again at the next line (anchor_dgram with -1). */
	auditlog_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0);
	return (0);
}

void
auditlog_done(void)
{
	if (auditlog_to.fmt != AUDITLOG_NONE && auditlog_nlost > 0)
		log_warnx("audit log: %" PRIu64 " of %" PRIu64 " lines not"
			  " sent to %s",
		    auditlog_nlost, auditlog_nlost + auditlog_nsent,
		    auditlog_to.path);
	if (auditlog_fd != -1)
		close(auditlog_fd);
	auditlog_fd = -1;
	memset(&auditlog_to, 0, sizeof(auditlog_to));
}

int
auditlog_on(void)
{
	return (auditlog_to.fmt != AUDITLOG_NONE);
}

static void
auditlog_lose(const struct store_done *ev, int err)
{
	auditlog_nlost++;
	if (auditlog_warned)
		return;
	auditlog_warned = 1;
	log_warnx("audit log: lines cannot be sent to %s: %s; SQLite keeps"
		  " every event (first line lost: seq %" PRId64 ")",
	    auditlog_to.path, strerror(err), ev->seq);
}

void
auditlog_send(const struct store_done *ev, time_t now)
{
	static char buf[AUDITLOG_JOURNAL_MAX];
	char	    text[AUDITLOG_TEXT_MAX];
	int	    n;

	if (auditlog_to.fmt == AUDITLOG_NONE)
		return;
	if (auditlog_format_text(text, sizeof(text), ev) == -1) {
		auditlog_lose(ev, EMSGSIZE);
		return;
	}
	if (auditlog_to.fmt == AUDITLOG_JOURNAL)
		n = auditlog_format_journal(buf, sizeof(buf), ev, text);
	else
		n = anchor_syslog_line(buf, sizeof(buf), AUDITLOG_IDENT,
		    LOG_INFO, text, now);
	if (n == -1) {
		auditlog_lose(ev, EMSGSIZE);
		return;
	}
	if (anchor_dgram(auditlog_fd, auditlog_to.path, buf, (size_t)n) == -1) {
		auditlog_lose(ev, errno);
		return;
	}
	if (auditlog_warned)
		log_info("audit log: lines reach %s again (%" PRIu64 " lost)",
		    auditlog_to.path, auditlog_nlost);
	auditlog_warned = 0;
	auditlog_nsent++;
}

uint64_t
auditlog_sent(void)
{
	return (auditlog_nsent);
}

uint64_t
auditlog_lost(void)
{
	return (auditlog_nlost);
}
