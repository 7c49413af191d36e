/*
 * keeperlink.h -- ptyd's side of the keeper (DESIGN 10, lib/kwire.h).
 *
 * Owns: the two sockets to ptyd-keeper, the hand-over at start (hello,
 * welcome, the terminals, ready, go), the messages ptyd sends (adopt,
 * input, signal, forget) and what the keeper tells it later (a shell's
 * end, freeze, thaw, exit).  Does not own the terminals (term.c) or the
 * start-up order (main.c).
 */
#ifndef PTYD_KEEPERLINK_H
#define PTYD_KEEPERLINK_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include "kwire.h"
#include "termstate.h"

struct term;
struct msg_stats_reply;

/* One terminal handed over at start. */
struct kadopt {
	int64_t id;
	pid_t	pid;
	int	exited; /* reaped while no ptyd ran, with status */
	int	status;
	int	master;
	int	memfd;
};

/* Whether this ptyd was started by a keeper (PTYD_KEEPER=1). */
int keeperlink_under(void);
/* Whether the keeper is there now (it can die: then we stop). */
int keeperlink_up(void);

/*
 * Start-up, in this order: hello (and the welcome, the listening socket,
 * the lock, every terminal), then ready (blocks until go; an exit
 * instead ends this process), then start (the event socket joins the
 * loop).  Failures are fatal: the keeper starts another, or keeps the old.
 */
void	       keeperlink_hello(int *listen_fd, int *lock_fd);
struct kadopt *keeperlink_terms(size_t *n);
void	       keeperlink_ready(void);
void	       keeperlink_start(void);
/* How this ptyd came to be (KW_MODE_*), and the audit log's event for
 * it (takeover, upgrade, start). */
enum kw_mode	keeperlink_mode(void);
enum term_event keeperlink_mode_event(void);

/* A terminal was spawned: its master and memfd to the keeper. */
int	      keeperlink_adopt(struct term *, int memfd);
enum kw_input keeperlink_input(struct term *, const char *input_id,
    const uint8_t *, size_t);
void	      keeperlink_signal(struct term *, int sig, int group);
/* Let go of t once its last row is written (keeperlink_written). */
void	      keeperlink_forget(struct term *);
/* The mirror wrote everything it held: the terminals let go of go. */
void	      keeperlink_written(void);

void keeperlink_stats(struct msg_stats_reply *);

#endif /* PTYD_KEEPERLINK_H */
