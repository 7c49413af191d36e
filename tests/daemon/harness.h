/*
 * harness.h -- the daemon tests' shared harness: one real ptyd per test,
 * started as our child in a temporary directory, and the requests the
 * tests make of it.
 *
 * Owns: the daemon's paths and pid (D), the reply buffer (fbuf), the
 * deadline helpers (now_ms, pause_ms, WAIT_UNTIL), starting, stopping and
 * cleaning up ptyd, and the plain requests (request, call, t_start,
 * t_input, t_list).  Does not own: any test, or a helper only one suite
 * uses (test_daemon.c, test_sweep.c).
 *
 * PTYD_BIN, the daemon to run, comes from the build.
 */
#ifndef HARNESS_H
#define HARNESS_H

#include <sys/resource.h>
#include <sys/types.h>

#include <stdint.h>

#include "frame.h"
#include "proto.h"

#define CALL_MS		5000

/* WAIT_UNTIL's polling interval. */
#define WAIT_POLL_MS	10

struct daemon {
	char	dir[64];
	char	sock[128];
	char	db[128];
	char	log[128];
	char	home[128];
	pid_t	pid;
};

/* How daemon_start_opts runs ptyd; zero is the default for each. */
struct daemon_opts {
	const char		*dir;		/* mkdtemp template */
	const char *const	*extra;		/* more options, NULL-ended */
	rlim_t			 nofile;	/* RLIMIT_NOFILE; 0: inherit */
	rlim_t			 fsize;		/* RLIMIT_FSIZE; 0: inherit */
	int			 wrapper;	/* honour PTYD_TEST_WRAPPER */
};

extern struct daemon	D;
extern uint8_t		fbuf[PROTO_HDR_LEN + PROTO_MAX_PAYLOAD];

int64_t		now_ms(void);
void		pause_ms(int);

/* Poll cond every WAIT_POLL_MS until it holds or ms pass; returns it. */
#define WAIT_UNTIL(cond, ms) __extension__ ({				\
	int64_t	_dl = now_ms() + (ms);					\
	int	_ok;							\
	while (!(_ok = (cond)) && now_ms() < _dl)			\
		pause_ms(WAIT_POLL_MS);					\
	_ok;								\
})

int		daemon_answers(void);
void		daemon_start_opts(const struct daemon_opts *);
int		daemon_stop_status(int);
void		daemon_cleanup(void);

void		encode(struct frame_out *, uint16_t, const void *);
int		request(uint16_t, const void *, int64_t);
uint16_t	call(uint16_t, const void *, void *);
pid_t		t_start_opts(const char *, int);
pid_t		t_start(const char *);
void		t_input(const char *, const char *);
int		t_list(int (*)(const struct msg_list_item *, void *), void *);

#endif /* HARNESS_H */
