/*
 * record_int.h -- what record.c, recproc.c and recretain.c share and
 * nothing else may use: struct rec, the table (read by the recorder's
 * ends and by retention, changed only by record.c), the configuration
 * and the folder, the helpers that end and write a row, and each file's
 * entry points for the others.
 */
#ifndef PTYD_RECORD_INT_H
#define PTYD_RECORD_INT_H

#include <sys/queue.h>

#include <stddef.h>
#include <stdint.h>

#include "record.h"
#include "recwire.h"
#include "store.h"

struct rec {
	TAILQ_ENTRY(rec) open_entry; /* while recording */
	struct store_rec row;
	int64_t		 t0;	    /* monotonic start: the file's times */
	int		 closing;   /* the close is sent or due */
	int		 close_due; /* to send once the pair drains */
	char		 close_why[REC_REASON_MAX + 1];
};
TAILQ_HEAD(rec_list, rec);

/* record.c: the table, and what rec_init was given. */
extern struct rec_conf rec_conf;
extern struct rec    **rec_all; /* by id */
extern size_t	       rec_n;
extern struct rec_list rec_opened; /* those recording */
extern int	       rec_dir;	   /* the folder, or -1 */
extern int	       rec_inited;

struct rec  *rec_find(int64_t id);
double	     rec_wall(int64_t now);
int	     rec_is(const struct rec *, const char *state);
void	     rec_put(struct rec *);
void	     rec_audit(const struct rec *, int64_t now, enum term_event,
	    const char *detail);
struct term *rec_term(const struct rec *);
void	     rec_ended(struct rec *, int cut, uint64_t bytes, const char *sha,
	    const char *why, int64_t now);
uint64_t     rec_file_size(const struct rec *);

/* recproc.c: the recorder and the pair. */
int  rec_recorder_up(void);
int  rec_send(struct rec *, enum rec_type, int64_t now, const void *a,
     size_t alen, const void *b, size_t blen);
void rec_recorder_init(int64_t now);
void rec_recorder_done(void);

/* recretain.c: the prune timer. */
void rec_retain_init(int64_t now);
void rec_retain_done(void);

#endif /* PTYD_RECORD_INT_H */
