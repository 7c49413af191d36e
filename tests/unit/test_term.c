/*
 * test_term.c -- the terminal registry and lifecycle: cap and eviction
 * order, linger, attach and resume positions, backpressure, request
 * policy, and (with real short-lived shells) start, restart, input, and
 * noticing a shell's end (its pidfd, or SIGCHLD's loop without one).
 */
#include <criterion/criterion.h>

#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/filter.h>
#include <linux/seccomp.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ev.h"
#include "ptyd.h"
#include "spawn.h"
#include "term.h"
#include "term_int.h"
#include "sig.h"

#define S	PTYD_SEC
#define BASE	5000000000ULL

static char	*sh_argv[] = { (char *)"sh", NULL };
static char	*roots[] = { (char *)"/" };
static char	*no_env[] = { NULL };

static void
nowake(struct viewer *v)
{
	(void)v;
}

static void
setup(void)
{
	term_init(NULL);
	ptyd_conf.idle_grace = 900 * S;
	ptyd_conf.linger = 60 * S;
	ptyd_conf.max_terminals = 32;
	ptyd_conf.max_per_owner = 32;
	ptyd_conf.max_viewers = 32;
	ptyd_conf.ring_size = 4096;
	ptyd_conf.input_limit = 1 << 20;
	ptyd_conf.shell = "/bin/sh";
	ptyd_conf.shell_argv = sh_argv;
	ptyd_conf.env = no_env;
	ptyd_conf.roots = roots;
	ptyd_conf.nroots = 1;
	ptyd_conf.default_workspace = "/tmp";
}

/* Kill and reap every shell a test started. */
static void
teardown(void)
{
	struct term	*t;

	for (t = term_first(); t != NULL; t = term_next(t))
		if (t->pid > 0 && !t->reaped)
			kill(-t->pid, SIGKILL);
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
}

static struct term *
mk(const char *owner, const char *sid, int64_t now)
{
	struct term	*t;

	t = term_new(owner, sid, "/tmp", 24, 80, BASE, now);
	term_register(t);
	return (t);
}

static void
viewer_init(struct viewer *v)
{
	memset(v, 0, sizeof(*v));
	v->wake = nowake;
}

TestSuite(term, .init = setup, .fini = teardown);

/* Cap and eviction. */

Test(term, evict_pick_prefers_an_exited_terminal)
{
	struct term	*a = mk("", "a", 0), *b = mk("", "b", 0);

	a->last_activity = 1;
	b->last_activity = 100;
	term_child_exited(b, 0, 50);
	cr_assert_eq(term_evict_pick(NULL), b,
	    "an exited terminal goes first, however recently active");
}

Test(term, evict_pick_takes_the_earliest_exited)
{
	struct term	*a = mk("", "a", 0), *b = mk("", "b", 0);

	term_child_exited(a, 0, 70 * S);
	term_child_exited(b, 0, 20 * S);
	cr_assert_eq(term_evict_pick(NULL), b);
	(void)a;
}

Test(term, evict_pick_takes_the_least_recently_active)
{
	struct term	*a = mk("", "a", 0), *b = mk("", "b", 0),
			*c = mk("", "c", 0);

	a->last_activity = 30;
	b->last_activity = 10;
	c->last_activity = 20;
	cr_assert_eq(term_evict_pick(NULL), b);
	cr_assert_eq(term_evict_pick("nobody"), NULL);
}

Test(term, evict_pick_per_owner_stays_within_the_owner)
{
	struct term	*a = mk("alice", "a", 0), *b = mk("bob", "b", 0);

	a->last_activity = 50;
	b->last_activity = 10;
	cr_assert_eq(term_evict_pick("alice"), a);
	cr_assert_eq(term_evict_pick(NULL), b);
}

static struct term *
start(const char *owner, const char *sid, int restart, int64_t now,
    int *reused)
{
	struct term_start_req	 req;
	struct term		*t;

	memset(&req, 0, sizeof(req));
	req.owner = owner;
	req.sid = sid;
	req.workspace = "";
	req.restart = restart;
	cr_assert_eq(term_start(&req, now, &t, reused), TERM_OK);
	return (t);
}

Test(term, start_at_the_cap_evicts_the_least_recently_active_never_itself)
{
	/* Prevents: a start at the cap evicting the id being started, or a
	 * busy terminal while an idle one exists. */
	struct term	*a, *b, *c;
	int		 reused;

	ptyd_conf.max_terminals = 2;
	a = start("", "a", 0, 1 * S, &reused);
	b = start("", "b", 0, 2 * S, &reused);
	b->last_activity = 0;		/* b is the least recently active */
	c = start("", "c", 0, 3 * S, &reused);
	cr_assert_eq(term_count(), 2);
	cr_assert_eq(term_find("", "a"), a);
	cr_assert_null(term_find("", "b"));
	cr_assert_str_eq(term_reason_wire(b->reason), "evicted");
	cr_assert_eq(term_find("", "c"), c);
}

Test(term, start_at_the_cap_evicts_an_exited_one_first)
{
	struct term	*a, *b;
	int		 reused, status;

	ptyd_conf.max_terminals = 2;
	a = start("", "a", 0, 1 * S, &reused);
	b = start("", "b", 0, 2 * S, &reused);
	a->last_activity = 0;
	/* b's shell really exits; its pty then reads to EIO at once. */
	cr_assert_eq(kill(b->pid, SIGKILL), 0);
	cr_assert_eq(waitpid(b->pid, &status, 0), b->pid);
	term_child_exited(b, status, 3 * S);
	cr_assert_eq(b->state, TERM_EXITED);
	cr_assert_eq(b->exit_code, -SIGKILL);
	(void)start("", "c", 0, 4 * S, &reused);
	cr_assert_eq(term_find("", "a"), a);
	cr_assert_null(term_find("", "b"));
}

Test(term, restart_at_the_cap_evicts_nothing)
{
	/* Prevents: a restart of an existing id counting itself twice and
	 * evicting a neighbour. */
	struct term	*a, *b, *b2;
	int		 reused;

	ptyd_conf.max_terminals = 2;
	a = start("", "a", 0, 1 * S, &reused);
	b = start("", "b", 0, 2 * S, &reused);
	a->last_activity = 0;
	b2 = start("", "b", 1, 3 * S, &reused);
	cr_assert_eq(reused, 0);
	cr_assert_neq(b2, b);
	cr_assert_eq(term_find("", "a"), a, "the neighbour survives");
	cr_assert_eq(term_find("", "b"), b2);
	cr_assert_str_eq(term_reason_wire(b->reason), "restarted");
	cr_assert_gt(b2->base, ring_end(&b->ring) + 1,
	    "every id of the new incarnation is above the old ones");
}

Test(term, per_owner_cap_evicts_within_the_owner)
{
	struct term	*a1, *b1;
	int		 reused;

	ptyd_conf.max_per_owner = 1;
	a1 = start("alice", "1", 0, 1 * S, &reused);
	b1 = start("bob", "1", 0, 2 * S, &reused);
	(void)start("alice", "2", 0, 3 * S, &reused);
	cr_assert_null(term_find("alice", "1"));
	cr_assert_eq(term_find("bob", "1"), b1, "another owner is untouched");
	cr_assert_str_eq(term_reason_wire(a1->reason), "evicted");
}

Test(term, start_of_an_alive_id_reuses_and_only_resizes)
{
	struct term_start_req	 req;
	struct term		*a, *b;
	int			 reused;

	a = start("", "a", 0, 1 * S, &reused);
	cr_assert_eq(reused, 0);
	memset(&req, 0, sizeof(req));
	req.owner = "";
	req.sid = "a";
	req.workspace = "";
	req.rows = 40;
	req.cols = 100;
	cr_assert_eq(term_start(&req, 2 * S, &b, &reused), TERM_OK);
	cr_assert_eq(reused, 1);
	cr_assert_eq(a, b);
	cr_assert_eq(a->rows, 40);
	cr_assert_eq(a->cols, 100);
}

Test(term, start_in_another_workspace_replaces_the_terminal)
{
	struct term_start_req	 req;
	struct term		*a, *b;
	int			 reused;

	a = start("", "a", 0, 1 * S, &reused);
	memset(&req, 0, sizeof(req));
	req.owner = "";
	req.sid = "a";
	req.workspace = "/";
	cr_assert_eq(term_start(&req, 2 * S, &b, &reused), TERM_OK);
	cr_assert_eq(reused, 0);
	cr_assert_neq(a, b);
	cr_assert_str_eq(b->workspace, "/");
}

/* Linger. */

Test(term, exited_terminal_lingers_then_retires)
{
	struct term	*t = mk("", "a", 0);
	struct viewer	 v;
	uint64_t	 resume, lost;

	ring_append(&t->ring, "bye\r\n", 5);
	term_child_exited(t, 7 << 8, 10 * S);
	cr_assert_eq(t->state, TERM_EXITED);
	cr_assert_eq(t->exit_code, 7);
	cr_assert_str_eq(term_reason_wire(t->reason), "exit");
	cr_assert(ev_timer_pending(&t->timer), "the linger timer runs");
	cr_assert_eq(t->timer.when, 10 * S + 60 * S);
	viewer_init(&v);
	cr_assert_eq(term_attach("", "a", &v, 0, 0, NULL, 11 * S, &resume,
	    &lost), TERM_OK, "a reconnecting viewer still gets the tail");
	cr_assert_eq(resume, BASE);
	cr_assert(term_finished(t));
	term_detach(&v, 12 * S);
	cr_assert_eq(term_input("", "a", (const uint8_t *)"x", 1, 12 * S),
	    TERM_ENOTRUNNING);
	term_linger_expired(t, 70 * S);
	cr_assert_null(term_find("", "a"));
	viewer_init(&v);
	cr_assert_eq(term_attach("", "a", &v, 0, 0, NULL, 71 * S, &resume,
	    &lost), TERM_ENOTRUNNING);
}

Test(term, close_while_an_exited_shell_drains_keeps_it_exited)
{
	/* Prevents: a row (and a MSG_EXIT) saying "closed" for a shell that
	 * had already exited by itself while its pty drained; the mirror
	 * takes either state as final, so it must be the true one. */
	struct term	*t = mk("", "a", 0);
	int		 p[2];

	cr_assert_eq(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
	t->master = p[0];	/* a pty someone else still holds open */
	term_child_exited(t, 3 << 8, S);
	cr_assert_eq(t->state, TERM_DRAINING, "still draining");
	cr_assert_eq(term_close("", "a", "bob", 2 * S), 1);
	cr_assert_null(term_find("", "a"), "unregistered at once");
	cr_assert_eq(t->state, TERM_DRAINING, "nothing left to signal");
	close(p[1]);
	term_force_finish(3 * S);
	cr_assert_eq(t->state, TERM_EXITED);
	cr_assert_str_eq(term_reason_wire(t->reason), "exit");
	cr_assert_eq(term_db_state(t), TERM_DB_EXITED);
	cr_assert_eq(t->exit_code, 3);
	cr_assert(!ev_timer_pending(&t->timer), "closed: no linger");
}

Test(term, detach_gives_back_the_actor_of_the_attach)
{
	/* Prevents: detach events without the viewer's user and address,
	 * which the audit's "connected now" pairs with the attach. */
	struct term	*t = mk("", "a", 0);
	struct viewer	 v;
	uint64_t	 resume, lost;

	viewer_init(&v);
	cr_assert_eq(term_attach("", "a", &v, 0, 0, "alice@10.0.0.7", S,
	    &resume, &lost), TERM_OK);
	cr_assert_str_eq(v.actor, "alice@10.0.0.7");
	term_detach(&v, 2 * S);
	cr_assert_null(v.actor, "freed with the detach");
	cr_assert_eq(term_attach("", "a", &v, 0, 0, "", 3 * S, &resume,
	    &lost), TERM_OK);
	cr_assert_null(v.actor, "unknown stays NULL");
	term_detach(&v, 4 * S);
	(void)t;
}

Test(term, killed_shell_reports_minus_the_signal)
{
	struct term	*t = mk("", "a", 0);

	term_child_exited(t, SIGKILL, S);	/* WIFSIGNALED status */
	cr_assert_eq(t->exit_code, -SIGKILL);
}

/* Viewers and positions. */

Test(term, unwatched_since_is_set_at_birth_cleared_and_set_again)
{
	struct term	*t = mk("", "a", 5 * S);
	struct viewer	 v1, v2;
	uint64_t	 resume, lost;

	cr_assert_eq(t->unwatched_since, 5 * S);
	viewer_init(&v1);
	viewer_init(&v2);
	term_attach("", "a", &v1, 0, 0, NULL, 6 * S, &resume, &lost);
	cr_assert_eq(t->unwatched_since, -1);
	term_attach("", "a", &v2, 0, 0, NULL, 7 * S, &resume, &lost);
	term_detach(&v1, 8 * S);
	cr_assert_eq(t->unwatched_since, -1, "still one viewer");
	term_detach(&v2, 9 * S);
	cr_assert_eq(t->unwatched_since, 9 * S);
}

Test(term, viewer_limit)
{
	struct term	*t = mk("", "a", 0);
	struct viewer	 v[3];
	uint64_t	 resume, lost;
	int		 i;

	ptyd_conf.max_viewers = 2;
	for (i = 0; i < 3; i++)
		viewer_init(&v[i]);
	cr_assert_eq(term_attach("", "a", &v[0], 0, 0, NULL, 0, &resume,
	    &lost), TERM_OK);
	cr_assert_eq(term_attach("", "a", &v[1], 0, 0, NULL, 0, &resume,
	    &lost), TERM_OK);
	cr_assert_eq(term_attach("", "a", &v[2], 0, 0, NULL, 0, &resume,
	    &lost), TERM_EVIEWERS);
	cr_assert_eq(t->nviewers, 2);
}

static struct term *
mk_with_output(size_t n)
{
	struct term	*t = mk("", "a", 0);
	size_t		 i;
	char		 c;

	for (i = 0; i < n; i++) {
		c = (char)('a' + i % 26);
		ring_append(&t->ring, &c, 1);
	}
	return (t);
}

Test(term, resume_from_a_kept_position_replays_exactly_from_it)
{
	struct term	*t = mk_with_output(1000);
	struct viewer	 v;
	uint64_t	 resume, lost;

	viewer_init(&v);
	cr_assert_eq(term_attach("", "a", &v, 1, BASE + 600, NULL, 0, &resume,
	    &lost), TERM_OK);
	cr_assert_eq(resume, BASE + 600);
	cr_assert_eq(lost, 0);
	cr_assert_eq(v.pos, BASE + 600);
	(void)t;
}

Test(term, resume_from_the_end_sends_nothing_old)
{
	struct term	*t = mk_with_output(1000);
	struct viewer	 v;
	uint64_t	 resume, lost;

	viewer_init(&v);
	term_attach("", "a", &v, 1, BASE + 1000, NULL, 0, &resume, &lost);
	cr_assert_eq(resume, ring_end(&t->ring));
	cr_assert_eq(lost, 0);
}

Test(term, resume_from_the_terminal_closed_id_replays_nothing)
{
	/* Prevents: a client that saw terminal_closed (id = end + 1) and
	 * reconnected to the lingering terminal getting its whole backlog a
	 * second time, as the id looked like one from another incarnation. */
	struct term	*t = mk_with_output(1000);
	struct viewer	 v;
	uint64_t	 resume, lost;

	t->state = TERM_EXITED;
	viewer_init(&v);
	cr_assert_eq(term_attach("", "a", &v, 1, ring_end(&t->ring) + 1, NULL,
	    0, &resume, &lost), TERM_OK);
	cr_assert_eq(resume, ring_end(&t->ring));
	cr_assert_eq(lost, 0);
	term_detach(&v, 0);
	t->state = TERM_RUNNING;
}

Test(term, resume_from_a_position_that_fell_out_is_a_gap)
{
	struct term	*t = mk_with_output(10000);	/* ring 4096 */
	struct viewer	 v;
	uint64_t	 resume, lost;

	viewer_init(&v);
	term_attach("", "a", &v, 1, BASE + 100, NULL, 0, &resume, &lost);
	cr_assert_eq(resume, ring_start(&t->ring));
	cr_assert_eq(lost, ring_start(&t->ring) - (BASE + 100));
}

Test(term, stale_position_of_an_earlier_incarnation_counts_as_base)
{
	/* Prevents: a Last-Event-ID from before a restart hiding output of
	 * the new shell, or a garbage id producing a huge gap. */
	struct term	*t = mk_with_output(1000);
	struct viewer	 v;
	uint64_t	 resume, lost;

	viewer_init(&v);
	term_attach("", "a", &v, 1, BASE - 1, NULL, 0, &resume, &lost);
	cr_assert_eq(resume, BASE, "whole backlog, no gap");
	cr_assert_eq(lost, 0);
	term_detach(&v, 0);
	viewer_init(&v);
	term_attach("", "a", &v, 1, BASE + 999999, NULL, 0, &resume, &lost);
	cr_assert_eq(resume, BASE);
	cr_assert_eq(lost, 0);
	(void)t;
}

Test(term, stale_position_with_a_lossy_ring_is_a_gap_from_base)
{
	struct term	*t = mk_with_output(10000);
	struct viewer	 v;
	uint64_t	 resume, lost;

	viewer_init(&v);
	term_attach("", "a", &v, 1, 7, NULL, 0, &resume, &lost);
	cr_assert_eq(resume, ring_start(&t->ring));
	cr_assert_eq(lost, ring_start(&t->ring) - BASE);
}

Test(term, no_position_replays_the_backlog_from_a_character_boundary)
{
	struct term	*t = mk("", "a", 0);
	struct viewer	 v;
	uint64_t	 resume, lost;
	int		 i;

	/* 4096-byte ring filled with 3-byte characters after one 'x':
	 * the oldest kept byte is inside a character. */
	ring_append(&t->ring, "x", 1);
	for (i = 0; i < 2000; i++)
		ring_append(&t->ring, "\xe2\x82\xac", 3);
	viewer_init(&v);
	term_attach("", "a", &v, 0, 0, NULL, 0, &resume, &lost);
	cr_assert_eq(lost, 0, "no position asked: no gap");
	cr_assert_eq((resume - (BASE + 1)) % 3, 0);
	cr_assert_geq(resume, ring_start(&t->ring));
	cr_assert_lt(resume, ring_start(&t->ring) + 3);
}

Test(term, backpressure_stops_reading_only_when_a_viewer_is_a_ring_behind)
{
	struct term	*t = mk_with_output(4096);
	struct viewer	 v;
	uint64_t	 resume, lost;

	cr_assert_eq(term_read_limit(t), SIZE_MAX,
	    "unwatched: keep reading, overwrite the oldest");
	viewer_init(&v);
	term_attach("", "a", &v, 1, BASE, NULL, 0, &resume, &lost);
	cr_assert_eq(term_read_limit(t), 0, "a full ring behind: pause");
	v.pos = BASE + 1000;
	cr_assert_eq(term_read_limit(t), 1000);
}

Test(term, viewer_limit_holds_back_an_incomplete_character_while_running)
{
	struct term	*t = mk("", "a", 0);

	ring_append(&t->ring, "ab\xe2\x82", 4);
	cr_assert_eq(term_viewer_limit(t, BASE), BASE + 2);
	cr_assert_eq(term_viewer_limit(t, BASE + 2), BASE + 2);
	term_child_exited(t, 0, S);
	cr_assert_eq(term_viewer_limit(t, BASE), BASE + 4,
	    "once the shell is gone the tail goes out as it is");
}

/* Request policy. */

Test(term, session_id_syntax)
{
	char	long_id[130];

	cr_assert(term_sid_valid("a"));
	cr_assert(term_sid_valid("Az09._:-"));
	cr_assert_not(term_sid_valid(""));
	cr_assert_not(term_sid_valid("a/b"));
	cr_assert_not(term_sid_valid("a b"));
	cr_assert_not(term_sid_valid("\xc3\xa9"));
	memset(long_id, 'x', 128);
	long_id[128] = '\0';
	cr_assert(term_sid_valid(long_id));
	long_id[128] = 'x';
	long_id[129] = '\0';
	cr_assert_not(term_sid_valid(long_id));
}

Test(term, sizes_are_clamped_and_zero_means_default_or_unchanged)
{
	unsigned int	r, c;

	r = 0, c = 0;
	term_clamp(&r, &c, 1);
	cr_assert_eq(r, 24);
	cr_assert_eq(c, 80);
	r = 1, c = 5;
	term_clamp(&r, &c, 1);
	cr_assert_eq(r, 2);
	cr_assert_eq(c, 10);
	r = 9999, c = 9999;
	term_clamp(&r, &c, 0);
	cr_assert_eq(r, 500);
	cr_assert_eq(c, 1000);
	r = 0, c = 0;
	term_clamp(&r, &c, 0);
	cr_assert_eq(r, 0, "resize: 0 leaves it unchanged");
	cr_assert_eq(c, 0);
}

Test(term, workspace_must_resolve_inside_a_root)
{
	static char	*tmp_root[] = { (char *)"/tmp" };
	char		 out[4096];

	ptyd_conf.roots = tmp_root;
	ptyd_conf.nroots = 1;
	cr_assert_eq(term_workspace_resolve("", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/tmp");
	cr_assert_eq(term_workspace_resolve("/tmp/../tmp/.", out, sizeof(out)),
	    0);
	cr_assert_str_eq(out, "/tmp");
	cr_assert_eq(term_workspace_resolve("/etc", out, sizeof(out)), -1);
	cr_assert_eq(term_workspace_resolve("/tmp/../etc", out, sizeof(out)),
	    -1, "resolved before the check");
	cr_assert_eq(term_workspace_resolve("/tmp/no/such/dir", out,
	    sizeof(out)), -1);
	cr_assert_eq(term_workspace_resolve("/tmpfoo", out, sizeof(out)), -1,
	    "a root matches whole path components only");
	cr_assert_eq(term_workspace_resolve("/etc/passwd", out, sizeof(out)),
	    -1);
}

Test(term, new_incarnation_base_is_above_the_old_exit_position)
{
	struct term	*old = mk_with_output(100);

	cr_assert_gt(term_base(old, 0), ring_end(&old->ring) + 1);
	cr_assert_eq(term_base(old, UINT64_C(1) << 62), UINT64_C(1) << 62);
	cr_assert_eq(term_base(NULL, 42), 42);
}

Test(term, shell_environment_is_an_allowlist)
{
	char	*base[] = { (char *)"PATH=/bin", (char *)"AWS_SECRET=x",
		    (char *)"LC_ALL=C", (char *)"XDG_RUNTIME_DIR=/run/u",
		    (char *)"LC_=bad", (char *)"PATHX=no", (char *)"HOME=/h",
		    (char *)"PTYD_SOCKET=/s", (char *)"TERM=dumb", NULL };
	char	*out[32], scratch[256];
	int	 i, n;

	cr_assert_eq(spawn_env(base, "/w", 30, 100, out, 32, scratch,
	    sizeof(scratch)), 0);
	for (n = 0; out[n] != NULL; n++)
		;
	cr_assert_eq(n, 10);
	cr_assert_str_eq(out[0], "PATH=/bin");
	cr_assert_str_eq(out[1], "LC_ALL=C");
	cr_assert_str_eq(out[2], "XDG_RUNTIME_DIR=/run/u");
	cr_assert_str_eq(out[3], "HOME=/h");
	cr_assert_str_eq(out[4], "TERM=xterm-256color");
	for (i = 0; i < n; i++) {
		cr_assert_null(strstr(out[i], "SECRET"));
		cr_assert_null(strstr(out[i], "PTYD_SOCKET"));
		cr_assert_null(strstr(out[i], "TERM=dumb"));
	}
	cr_assert_str_eq(out[n - 3], "COLUMNS=100");
	cr_assert_str_eq(out[n - 2], "LINES=30");
	cr_assert_str_eq(out[n - 1], "PWD=/w");
}

/* Input, with a real shell that does not read. */

Test(term, input_over_the_limit_is_refused_whole)
{
	/* Prevents: a stuck shell growing ptyd's memory without bound, or
	 * a refused input being half-written. */
	struct term	*t;
	uint8_t		 chunk[16384];
	size_t		 before;
	int		 reused, i;
	enum term_err	 e = TERM_OK;

	ptyd_conf.input_limit = 64 * 1024;
	t = start("", "a", 0, S, &reused);
	cr_assert_eq(kill(t->pid, SIGSTOP), 0);
	memset(chunk, 'x', sizeof(chunk));
	for (i = 0; i < 64 && e == TERM_OK; i++) {
		before = t->in_pending;
		e = term_input("", "a", chunk, sizeof(chunk), 2 * S);
	}
	cr_assert_eq(e, TERM_EINPUTFULL);
	cr_assert_eq(t->in_pending, before, "nothing of it was queued");
	cr_assert_leq(t->in_pending, ptyd_conf.input_limit);
	cr_assert_gt(t->in_pending + sizeof(chunk), ptyd_conf.input_limit);
	kill(t->pid, SIGCONT);
}

Test(term, input_to_unknown_or_exited_terminal_is_not_running)
{
	struct term	*t = mk("", "a", 0);

	cr_assert_eq(term_input("", "zz", (const uint8_t *)"x", 1, 0),
	    TERM_ENOTRUNNING);
	term_child_exited(t, 0, S);
	cr_assert_eq(term_input("", "a", (const uint8_t *)"x", 1, 0),
	    TERM_ENOTRUNNING);
	cr_assert_eq(term_resize("", "a", 30, 90, 0), TERM_ENOTRUNNING);
}

Test(term, close_unregisters_first)
{
	struct term	*t;
	int		 reused;

	t = start("", "a", 0, S, &reused);
	cr_assert_eq(term_close("", "a", "me", 2 * S), 1);
	cr_assert_null(term_find("", "a"), "gone from the registry at once");
	cr_assert_eq(t->state, TERM_ENDING);
	cr_assert_str_eq(term_reason_wire(t->reason), "closed");
	cr_assert(ev_timer_pending(&t->timer), "SIGHUP again, then SIGKILL");
	cr_assert_eq(t->timer.when, 2 * S + PTYD_KILL_DELAY / PTYD_HUP_TRIES);
	cr_assert_eq(t->hups, 1);
	cr_assert_eq(term_close("", "a", "me", 3 * S), 0);
}

/* ---- at-most-once input (DESIGN 2) ---- */

Test(term, once_window_holds_the_last_256_ids)
{
	struct once	o;
	char		id[32];
	int		i;

	memset(&o, 0, sizeof(o));
	cr_assert_not(once_seen(&o, "v:1"), "an empty window holds nothing");
	for (i = 0; i < ONCE_WINDOW; i++) {
		snprintf(id, sizeof(id), "v:%d", i);
		once_add(&o, id);
	}
	for (i = 0; i < ONCE_WINDOW; i++) {
		snprintf(id, sizeof(id), "v:%d", i);
		cr_expect(once_seen(&o, id), "%s held", id);
	}
	cr_expect_not(once_seen(&o, "v:256"));
	cr_expect_not(once_seen(&o, "w:0"));
	once_add(&o, "v:256");
	cr_expect_not(once_seen(&o, "v:0"), "the oldest slides out");
	cr_expect(once_seen(&o, "v:1"));
	cr_expect(once_seen(&o, "v:256"));
	once_free(&o);
	cr_expect_not(once_seen(&o, "v:1"));
}

/*
 * Regression: an input whose answer was lost (ptyd stood still past
 * ptyd.fcgi's deadline, or the connection was cut) ran when ptyd went on,
 * and the page's retry typed it a second time.
 */
Test(term, a_repeated_input_id_writes_nothing_the_second_time)
{
	struct term	*t;
	int		 reused, dup = -1;

	t = start("", "a", 0, S, &reused);
	cr_assert_eq(term_input_once("", "a", "p:1", NULL, (const uint8_t *)"x", 1,
	    2 * S, &dup), TERM_OK);
	cr_expect_eq(dup, 0);
	cr_assert_eq(term_input_once("", "a", "p:1", NULL, (const uint8_t *)"x", 1,
	    3 * S, &dup), TERM_OK);
	cr_expect_eq(dup, 1);
	cr_expect_eq(t->bytes_in, 1, "written once");
	cr_assert_eq(term_input_once("", "a", "p:2", NULL, (const uint8_t *)"y", 1,
	    3 * S, &dup), TERM_OK);
	cr_expect_eq(dup, 0);
	cr_assert_eq(term_input_once("", "a", "", NULL, (const uint8_t *)"z", 1,
	    3 * S, &dup), TERM_OK);
	cr_assert_eq(term_input_once("", "a", "", NULL, (const uint8_t *)"z", 1,
	    3 * S, &dup), TERM_OK);
	cr_expect_eq(dup, 0, "no id, no dedup");
	cr_expect_eq(t->bytes_in, 4);
	/* Another owner's terminal with the same id is another window. */
	cr_expect_eq(term_input_once("bob", "a", "p:1", NULL, (const uint8_t *)"x",
	    1, 3 * S, &dup), TERM_ENOTRUNNING);
}

Test(term, a_refused_input_leaves_no_id_so_its_retry_runs)
{
	struct term	*t;
	uint8_t		 chunk[16384];
	int		 reused, dup, i;
	enum term_err	 e = TERM_OK;
	char		 id[16];

	ptyd_conf.input_limit = 64 * 1024;
	t = start("", "a", 0, S, &reused);
	cr_assert_eq(kill(t->pid, SIGSTOP), 0);
	memset(chunk, 'x', sizeof(chunk));
	for (i = 0; i < 64 && e == TERM_OK; i++) {
		snprintf(id, sizeof(id), "f:%d", i);
		e = term_input_once("", "a", id, NULL, chunk, sizeof(chunk), 2 * S,
		    &dup);
	}
	cr_assert_eq(e, TERM_EINPUTFULL);
	cr_expect_not(once_seen(&t->once, id), "%s was refused", id);
	cr_expect_eq(term_input_once("", "zz", "f:x", NULL, chunk, 1, 2 * S, &dup),
	    TERM_ENOTRUNNING);
	kill(t->pid, SIGCONT);
}

Test(term, a_restart_starts_a_fresh_window)
{
	struct term	*t, *old;
	int		 reused, dup;

	old = start("", "a", 0, S, &reused);
	cr_assert_eq(term_input_once("", "a", "p:1", NULL, (const uint8_t *)"x", 1,
	    2 * S, &dup), TERM_OK);
	t = start("", "a", 1, 3 * S, &reused);
	cr_assert_eq(reused, 0);
	cr_assert_neq(t, old);
	cr_assert_eq(term_input_once("", "a", "p:1", NULL, (const uint8_t *)"x", 1,
	    4 * S, &dup), TERM_OK);
	cr_expect_eq(dup, 0, "a new incarnation has typed nothing yet");
}

/* ---- fairness between owners (DESIGN 6) ---- */

/*
 * Regression: at the total cap a start evicted the least recently active
 * terminal of any owner, so one user's starts ended another user's shells.
 */
Test(term, a_start_at_the_cap_evicts_only_the_owners_own_terminals)
{
	struct term	*a1, *b1, *b2, *a2;
	int		 reused;

	ptyd_conf.max_terminals = 3;
	a1 = start("alice", "a1", 0, 1 * S, &reused);
	b1 = start("bob", "b1", 0, 2 * S, &reused);
	b2 = start("bob", "b2", 0, 3 * S, &reused);
	b1->last_activity = 0;		/* bob's b1 is the idlest of all */
	a2 = start("alice", "a2", 0, 4 * S, &reused);
	cr_assert_eq(term_count(), 3);
	cr_expect_not(a1->registered, "alice's own terminal made the room");
	cr_expect(b1->registered && b2->registered, "bob's are untouched");
	cr_expect(a2->registered);
}

Test(term, a_start_into_a_cap_full_of_other_owners_is_refused_unspawned)
{
	struct term_start_req	 req;
	struct term		*t, *b[3];
	int			 reused, i;
	char			 sid[8];

	ptyd_conf.max_terminals = 3;
	for (i = 0; i < 3; i++) {
		snprintf(sid, sizeof(sid), "b%d", i);
		b[i] = start("bob", sid, 0, (i + 1) * S, &reused);
	}
	memset(&req, 0, sizeof(req));
	req.owner = "alice";
	req.sid = "a";
	req.workspace = "";
	t = NULL;
	cr_assert_eq(term_start(&req, 5 * S, &t, &reused), TERM_ELIMIT);
	cr_expect_null(t);
	cr_expect_null(term_find("alice", "a"));
	cr_expect_eq(term_count(), 3);
	for (i = 0; i < 3; i++)
		cr_expect(b[i]->registered && kill(b[i]->pid, 0) == 0,
		    "bob's %d lives", i);
	/* No shell was spawned for the refused start: bob's three are
	 * ptyd's only children. */
	cr_expect_eq(waitpid(-1, NULL, WNOHANG), 0);
	/* Bob restarting one of his own at the cap needs no room. */
	t = start("bob", "b1", 1, 6 * S, &reused);
	cr_expect(t->registered);
	cr_expect_eq(term_count(), 3);
}

Test(term, the_per_owner_cap_evicts_the_owners_oldest)
{
	struct term	*a1, *a2, *a3, *b1;
	int		 reused;

	ptyd_conf.max_terminals = 10;
	ptyd_conf.max_per_owner = 2;
	b1 = start("bob", "b1", 0, 1 * S, &reused);
	a1 = start("alice", "a1", 0, 2 * S, &reused);
	a2 = start("alice", "a2", 0, 3 * S, &reused);
	a3 = start("alice", "a3", 0, 4 * S, &reused);
	cr_expect_not(a1->registered);
	cr_expect(a2->registered && a3->registered && b1->registered);
	cr_expect_eq(term_count_owner("alice"), 2);
}

/* The per-owner counts (kept at register and unregister, not walked)
 * agree with a walk of the registry through many changes. */
static unsigned int
walk_count(const char *owner)
{
	struct term	*t;
	unsigned int	 n = 0;

	for (t = term_first(); t != NULL; t = term_next(t))
		n += strcmp(t->owner, owner) == 0;
	return (n);
}

Test(term, owner_counts_follow_register_and_unregister)
{
	static const char *const owners[] = { "alice", "bob", "" };
	static struct term	*ts[600];
	char			 sid[32];
	int			 i, k;

	for (i = 0; i < 600; i++) {
		snprintf(sid, sizeof(sid), "t%d", i);
		ts[i] = mk(owners[i % 3], sid, (i + 1) * S);
	}
	for (i = 0; i < 600; i += 4)
		term_unregister(ts[i]);
	for (k = 0; k < 3; k++)
		cr_expect_eq(term_count_owner(owners[k]),
		    walk_count(owners[k]), "%s", owners[k]);
	cr_expect_eq(term_count_owner("alice"), 150);
	for (i = 1; i < 600; i += 3)
		term_unregister(ts[i]);
	cr_expect_eq(term_count_owner("bob"), 0);
	cr_expect_eq(term_count_owner("carol"), 0);
	(void)mk("bob", "again", 700 * S);
	cr_expect_eq(term_count_owner("bob"), 1);
	cr_expect_eq(term_count_owner(""), walk_count(""));
}

/* A shell's end. */

static char *exit3_argv[] = { (char *)"sh", (char *)"-c", (char *)"exit 3",
	NULL };

/* Loop turns until t's shell is reaped (5 s at most), handing each turn
 * a SIGCHLD for its pid to term_sigchld when sigchld is set. */
static void
turn_until_reaped(struct term *t, int sigchld)
{
	pid_t pid = t->pid;
	int   i;

	for (i = 0; i < 500 && !t->reaped; i++) {
		cr_assert_eq(ev_run_once(10000), 0);
		if (sigchld && !t->reaped)
			term_sigchld(pid, ev_now());
	}
	cr_assert(t->reaped, "the shell's end was never noticed");
	cr_assert_eq(t->exit_code, 3);
}

/* Wait until pid has ended (a zombie of ours), through a pidfd. */
static void
wait_ended(pid_t pid)
{
	struct pollfd p;

	p.fd = (int)syscall(SYS_pidfd_open, pid, 0);
	cr_assert_neq(p.fd, -1);
	p.events = POLLIN;
	cr_assert_eq(poll(&p, 1, 5000), 1, "%ld never ended", (long)pid);
	close(p.fd);
}

Test(term, a_shell_s_end_is_noticed_through_its_pidfd)
{
	/* Prevents: SIGCHLD's waitpid(-1), which looks at every child (a
	 * millisecond and more with 5,000 terminals), being run for each
	 * shell's end. */
	struct term *t;
	int	     reused, i;

	cr_assert_eq(ev_init(), 0);
	ptyd_conf.shell_argv = exit3_argv;
	t = start("", "a", 0, 0, &reused);
	cr_assert_neq(t->pidfd, -1);
	wait_ended(t->pid);
	/* Its SIGCHLD puts the loop off; the pidfd's callback reaps it. */
	term_sigchld(t->pid, ev_now());
	cr_assert_not(t->reaped);
	for (i = 0; i < 5 && !t->reaped; i++)
		cr_assert_eq(ev_run_once(0), 0);
	cr_assert(t->reaped, "the pidfd's callback did not reap it");
	cr_assert_eq(t->exit_code, 3);
	cr_assert_eq(t->pidfd, -1, "the pidfd is closed once reaped");
}

Test(term, a_job_left_behind_is_reaped_when_its_sigchld_came_with_the_shell_s)
{
	/* Prevents: a background job that outlives its shell (reparented to
	 * ptyd, the subreaper) staying a zombie when its SIGCHLD came folded
	 * into its shell's (signalfd coalesces; the pid is the shell's). */
	static char *job_argv[] = { (char *)"sh", (char *)"-c",
		(char *)"sleep 0.2 & exit 3", NULL };
	struct term *t;
	pid_t	     shell;
	int	     reused, i;

	cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	cr_assert_eq(ev_init(), 0);
	ptyd_conf.shell_argv = job_argv;
	t = start("", "a", 0, 0, &reused);
	shell = t->pid;
	turn_until_reaped(t, 0);
	usleep(500000); /* the job has ended: a zombie of ours */
	term_sigchld(shell, ev_now());
	for (i = 0; i < 300 && waitpid(-1, NULL, WNOHANG | __WNOTHREAD) == 0;
	     i++)
		cr_assert_eq(ev_run_once(10000), 0);
	cr_assert_eq(waitpid(-1, NULL, WNOHANG), -1, "a zombie is left");
	cr_assert_eq(errno, ECHILD);
}
/* pidfd_open answers ENOSYS, as before Linux 5.3 or under a seccomp
 * profile that does not know it. */
static void
filter_pidfd_open(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_pidfd_open, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	cr_assert_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
	cr_assert_eq(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog), 0);
}

Test(term, without_pidfds_sigchld_s_loop_notices_a_shell_s_end)
{
	struct term *t;
	int	     reused;

	filter_pidfd_open();
	cr_assert_eq(ev_init(), 0);
	ptyd_conf.shell_argv = exit3_argv;
	t = start("", "a", 0, 0, &reused);
	cr_assert_eq(t->pidfd, -1);
	turn_until_reaped(t, 1);
}

Test(term, a_shell_let_go_of_unreaped_is_reaped_on_its_sigchld)
{
	/* A terminal freed before its shell was waited for (shutdown's
	 * deadline): its pid leaves the hash, and its SIGCHLD, a pid no
	 * longer known, runs the loop at once. */
	struct term *t;
	pid_t	     pid;
	int	     reused;

	cr_assert_eq(ev_init(), 0);
	ptyd_conf.shell_argv = sh_argv; /* interactive: stays */
	t = start("", "a", 0, 0, &reused);
	pid = t->pid;
	term_pid_remove(t);
	cr_assert_eq(t->pidfd, -1);
	cr_assert_eq(kill(pid, SIGKILL), 0);
	wait_ended(pid);
	term_sigchld(pid, ev_now());
	cr_assert_eq(waitpid(pid, NULL, WNOHANG), -1, "left a zombie");
	cr_assert_eq(errno, ECHILD);
}

static void
nosig(int signo, pid_t pid)
{
	(void)signo;
	(void)pid;
}

Test(term, a_shell_s_status_is_kept_when_started_with_sigchld_ignored)
{
	/* Prevents: a SIGCHLD left ignored by whoever started ptyd (exec
	 * keeps SIG_IGN) making the kernel reap the shells itself, so that
	 * their ends were never noticed. */
	struct term *t;
	int	     reused;

	cr_assert_neq(signal(SIGCHLD, SIG_IGN), SIG_ERR);
	cr_assert_eq(ev_init(), 0);
	cr_assert_eq(sig_init(nosig), 0);
	ptyd_conf.shell_argv = exit3_argv;
	t = start("", "a", 0, 0, &reused);
	turn_until_reaped(t, 0);
}

/* A child of ours that has ended, not yet waited for. */
static pid_t
zombie(void)
{
	pid_t pid = fork();

	cr_assert_neq(pid, -1);
	if (pid == 0)
		_exit(0);
	wait_ended(pid);
	return (pid);
}

Test(term, sigchlds_of_jobs_cost_one_pass_per_gap)
{
	/* A job's SIGCHLD (a pid not a shell's) runs the loop at once,
	 * unless one ran less than TERM_SIGCHLD_GAP ago: then the timer
	 * does, and the zombie waits that long at most. */
	siginfo_t si;
	pid_t	  a, b;
	int	  i;

	cr_assert_eq(ev_init(), 0);
	a = zombie();
	term_sigchld(a, ev_clock());
	cr_assert_eq(waitpid(a, NULL, WNOHANG), -1, "a was not reaped at once");
	b = zombie();
	term_sigchld(b, ev_clock());
	memset(&si, 0, sizeof(si));
	cr_assert_eq(waitid(P_PID, (id_t)b, &si, WEXITED | WNOHANG | WNOWAIT),
	    0);
	cr_assert_eq(si.si_pid, b, "b was reaped before its gap");
	for (i = 0; i < 100 && kill(b, 0) == 0; i++)
		cr_assert_eq(ev_run_once(10000), 0);
	cr_assert_eq(waitpid(b, NULL, WNOHANG), -1, "b was never reaped");
	cr_assert_eq(errno, ECHILD);
}
