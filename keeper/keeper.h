/*
 * keeper.h -- ptyd-keeper: the process that holds an account's shells
 * while ptyd comes and goes (DESIGN 10).
 *
 * keeper.c owns the ptyd it runs (start, hand-over, crash, stop) and the
 * loop; kterm.c owns the terminals it holds (their descriptors, input,
 * the shells' ends).  Nothing here reads what a shell prints.
 */
#ifndef KEEPER_H
#define KEEPER_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include "kwire.h"

/* keeper.c */
void keeper_watch(int fd, uint32_t events, void *ptr); /* epoll, ptr = kt */
void keeper_unwatch(int fd);
void keeper_exited(int64_t id, int status); /* tell the serving ptyd */

/* kterm.c */
struct kterm;
void	      kterm_adopt(int64_t id, pid_t pid, int master, int memfd);
enum kw_input kterm_input(int64_t id, const char *input_id,
    const uint8_t *, size_t, size_t limit);
void	      kterm_signal(int64_t id, int sig, int group);
void	      kterm_forget(int64_t id);
/* A child was reaped: 1 if it was a terminal's shell. */
int	      kterm_reaped(pid_t, int status, int64_t now);
void	      kterm_writable(struct kterm *);
/* Free what was let go of (after each batch of events). */
void	      kterm_collect(void);
/* KW_TERM for each terminal, then KW_TERMS_END: 0 or -1. */
int	      kterm_send_all(int sock);
unsigned int  kterm_count(void);
unsigned int  kterm_live(void); /* shells not yet reaped */
/* Stop: SIGHUP and SIGCONT to each shell's group; with kill, SIGKILL. */
void	      kterm_end_all(int kill);

#endif /* KEEPER_H */
