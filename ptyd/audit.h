/*
 * audit.h -- ptyd's anchoring of the audit chain: when the chain's head
 * goes to the system log (anchor.c), and what a failure to send costs.
 *
 * Owns: the destination (the audit_anchor setting), the last head sent,
 * the interval, the lines waiting for a reader that is behind, the counts
 * of lines not sent and of tampering seen.  Does not own: the head itself
 * (store.c keeps it and writes the rows) or the line's text (anchor.c).
 * Off (every call a no-op) until audit_init, as in the unit tests.
 */
#ifndef PTYD_AUDIT_H
#define PTYD_AUDIT_H

#include <stdint.h>

#include "chain.h"

/* A head anchor at most this often while rows are written (seconds):
 * the window in which rows can be rewritten unseen by a process that
 * also kills ptyd with SIGKILL (DESIGN 7). */
#define AUDIT_ANCHOR_INTERVAL 5.0

/* dest: "syslog", "none" or "unix:PATH" (checked by lib/config.c); db:
 * the database's path as the lines name it.  0, or -1 if dest is bad. */
int  audit_init(const char *dest, const char *db);
void audit_done(void);

/* ptyd has the head seq/hash (the database's last row) at start. */
void audit_start(int64_t seq, const uint8_t hash[CHAIN_HASH_LEN], double now);
/* Rows up to seq were committed: anchored now if the last anchor is
 * AUDIT_ANCHOR_INTERVAL old, else by a later audit_tick. */
void audit_head(int64_t seq, const uint8_t hash[CHAIN_HASH_LEN], double now);
/* The row ptyd last wrote (seq, hash) was found changed or missing in
 * the database (found: "missing", "changed", "foreign"). */
void audit_tamper(int64_t seq, const uint8_t hash[CHAIN_HASH_LEN],
    const char *found, double now);
/* Every flush tick: what is due or waiting goes out. */
void audit_tick(double now);
/* The last head, as a stop anchor; the counts are logged. */
void audit_stop(double now);

uint64_t audit_unsent(void);
uint64_t audit_tampered(void);

#endif /* PTYD_AUDIT_H */
