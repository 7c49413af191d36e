/*
 * auditlog.h -- every audit event as one line for a fleet's log pipeline
 * (the audit_log setting, DESIGN 7).
 *
 * Owns: the audit_log setting's values, the text of an event's line and
 * its escaping, the journal's native datagram, the socket the lines go
 * out on, and the count of lines lost.  Does not own: when a line is sent
 * (after the commit that wrote its row: mirror.c, told by store.c), the
 * rows (store.c: SQLite is the record; a line is a copy, sent once, never
 * waited for, lost if nobody takes it), nor the chain's anchors (audit.c).
 */
#ifndef PTYD_AUDITLOG_H
#define PTYD_AUDITLOG_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "store.h"

#define AUDITLOG_IDENT	      "ptyd-audit-log"
#define AUDITLOG_SYSLOG_PATH  "/dev/log"
#define AUDITLOG_JOURNAL_PATH "/run/systemd/journal/socket"
/* A line's text at most; a longer value is cut, ending in "...". */
#define AUDITLOG_TEXT_MAX  4608 /* four values at most, the rest */
#define AUDITLOG_VALUE_MAX 1024 /* escaped bytes of one value in the text */
/* A journal datagram at most: the fields whole (store.c bounds each to
 * 4 kB), and the text. */
#define AUDITLOG_JOURNAL_MAX 32768

enum auditlog_fmt {
	AUDITLOG_NONE,
	AUDITLOG_SYSLOG,  /* RFC 3164 line: syslog, unix:PATH */
	AUDITLOG_JOURNAL, /* journald's native protocol: journal[:PATH] */
};

struct auditlog_dest {
	enum auditlog_fmt fmt;
	char		  path[108]; /* sun_path */
};

/* An event is store.h's struct store_done: one row as its commit wrote
 * it, NULL strings NULL columns. */

/* "none", "syslog", "unix:/PATH" (the syslog line, to a datagram socket
 * of one's own), "journal" or "journal:/PATH" (the journal's protocol to
 * another socket: tests).  0, or -1 if none of them. */
int auditlog_dest_parse(const char *s, struct auditlog_dest *d);

/* "seq=N event=KIND terminal=N session="S" owner="O" actor="A" at=T
 * detail="D"": NULL as an unquoted -, a string quoted with '"' and '\'
 * escaped by '\' and every byte outside printable ASCII as \xHH, so that
 * no value holds a space-free '"', a newline or another field.  The
 * length (bounded by size, at most AUDITLOG_TEXT_MAX) or -1. */
int auditlog_format_text(char *buf, size_t size,
    const struct store_done *ev);

/* The journal's native datagram: MESSAGE (text), PRIORITY,
 * SYSLOG_FACILITY, SYSLOG_IDENTIFIER and PTYD_SEQ, PTYD_EVENT,
 * PTYD_TERMINAL, PTYD_SESSION, PTYD_OWNER, PTYD_ACTOR, PTYD_AT,
 * PTYD_DETAIL (a NULL one left out), each "NAME=value\n", or, for a value
 * with a newline, "NAME\n", its length as 8 bytes little-endian, the
 * value and "\n".  The length, or -1 if it does not fit. */
int auditlog_format_journal(char *buf, size_t size,
    const struct store_done *ev, const char *text);

/* Where the lines go from now on: 0, or -1 for a value parse refuses. */
int auditlog_init(const char *dest);
/* Log the count of lines lost, if any, and close the socket. */
void auditlog_done(void);
int  auditlog_on(void);

/* Send ev's line, never waiting: a reader that is behind (a full socket)
 * or absent loses it, counted, and warned about once an outage. */
void	 auditlog_send(const struct store_done *ev, time_t now);
uint64_t auditlog_sent(void);
uint64_t auditlog_lost(void);

#endif /* PTYD_AUDITLOG_H */
