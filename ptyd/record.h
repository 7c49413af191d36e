/*
 * record.h -- recordings (DESIGN 4): the policy, ptyd's side of
 * ptyd-recorder, the table of recordings, retention (record.c, recproc.c,
 * recretain.c).
 *
 * Owns: which terminals are recorded (record = off|on|owner), the
 * recorder process (started, watched, restarted) and the SOCK_SEQPACKET
 * pair to it (recorder/recwire.h), every recording's row in memory (the
 * truth while ptyd runs; loaded from SQLite at start, written behind
 * through store.c), the recordings folder's descriptor, the choice of
 * what retention removes and the removal.  Never waits for the recorder:
 * every send is MSG_DONTWAIT; one that would block cuts that recording
 * (`behind`).  Does not own: the files' bytes (the recorder), the pty
 * (termio.c, which calls rec_output with what it read), or requests
 * (request.c asks rec_list, rec_open, rec_prune).
 */
#ifndef PTYD_RECORD_H
#define PTYD_RECORD_H

#include <stddef.h>
#include <stdint.h>

struct store;
struct store_rec;
struct term;

enum rec_policy {
	REC_POLICY_OFF,
	REC_POLICY_ON,
	REC_POLICY_OWNER, /* when start asks (record: true) */
};

struct rec_conf {
	enum rec_policy policy;
	int		input;	   /* record_input */
	int64_t		max_age_s; /* record_max_age, in seconds */
	uint64_t	max_bytes; /* record_max_bytes */
	const char     *dir;	   /* <state_dir>/recordings */
	const char     *recorder;  /* ptyd-recorder's path */
};

/* At start, after the store is open and before terminals are adopted:
 * the rows loaded (those an earlier ptyd left recording end `cut`,
 * `takeover`), the folder made and opened, the recorder started if the
 * policy may record, retention armed (now, then hourly). */
void rec_init(const struct rec_conf *, struct store *, int64_t now);
void rec_done(void);
/* An upgrade freezes us (keeperlink.c): the recorder ends every open
 * part (`takeover`) and is gone before the mirror's last flush, so the
 * next ptyd finds the rows ended, with their hashes.  A thaw (the
 * upgrade failed) starts it again, and each recorded terminal's next
 * part. */
void rec_freeze(void);
void rec_thaw(int64_t now);

/* A terminal starts: whether it is recorded (asked: start's record). */
void rec_policy_apply(struct term *, int asked);
/* Start t's next part if it is recorded and not recording now. */
void rec_begin(struct term *, int64_t now);
/* What t does, while it records. */
void rec_output(struct term *, const uint8_t *, size_t, int64_t now);
void rec_resize(struct term *, int64_t now);
void rec_input(struct term *, const uint8_t *, size_t, int64_t now);
/* t's output ended (exited): its recording finishes. */
void rec_end(struct term *, int64_t now);

/* The rows a caller may see (all_owners: every owner's), newest first,
 * session_id "" for all, at most max; cb is given each. */
void rec_list(int all_owners, const char *owner, const char *sid, size_t max,
    void (*cb)(const struct store_rec *, void *), void *arg);
/* The file of recording id, opened for reading, and its size now: 0, or
 * -1 if there is none the caller may read (unknown, another owner's,
 * removed, its file gone). */
int rec_open(int all_owners, const char *owner, int64_t id, int *fd,
    uint64_t *size);
/* Retention now: how many removed, the bytes freed. */
void rec_prune(int64_t now, unsigned int *removed, uint64_t *bytes);

/*
 * Retention's choice, pure: items oldest first, each a recording's state
 * (removable: finished or cut), when it ended (or started) in Unix
 * seconds and its bytes.  why[i] becomes REC_KEEP, REC_AGE (older than
 * max_age_s) or REC_SIZE (the oldest removable ones while the total of
 * those not removed is over max_bytes).  Returns how many go.
 */
enum {
	REC_KEEP = 0,
	REC_AGE = 1,
	REC_SIZE = 2
};
struct rec_item {
	int	 removable;
	double	 at;
	uint64_t bytes;
};
size_t rec_retention(const struct rec_item *, size_t n, double now,
    int64_t max_age_s, uint64_t max_bytes, int *why);

#endif /* PTYD_RECORD_H */
