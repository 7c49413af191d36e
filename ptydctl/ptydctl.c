/*
 * ptydctl.c -- the operator's and the tests' client for ptyd.
 *
 * Owns: the command line, the command table, and the printing of
 * replies (aligned columns for people, --json for programs).  Does not own
 * the protocol (lib/proto.h, lib/frame.c), the socket I/O (lib/client.c),
 * the audit log's pruning (ptydctl_prune.c) and verifying
 * (ptydctl_audit.c), or what is asked of the keeper (ptydctl_keeper.c).
 *
 *   ptydctl [--socket PATH] [--owner NAME] COMMAND ...
 *     list [--all] [--json]  one line per terminal, aligned columns
 *     show SID [--json]      one terminal, one field a line
 *     close SID              exit 0 if closed, 1 if there was none
 *     health [--json]        ok or degraded (exit 1), and why
 *     stats [--json]         every counter of MSG_STATS
 *     prune --before DAYS|YYYY-MM-DD [--db PATH]
 *                            remove older audit events (ptydctl_prune.c)
 *     audit verify [--db PATH] [--anchors FILE|-] [--json]
 *                            check the audit log's hash chain against
 *                            its anchors (ptydctl_audit.c)
 *     upgrade [--timeout S]  SIGUSR2 to the keeper: ptyd replaced, shells
 *                            kept; exit 1 if the old one goes on serving,
 *                            2 without a keeper, 3 no outcome in time
 *     shutdown [--timeout S] SIGTERM to the keeper: the shells end; waits
 *                            until it is gone
 *     service [--timeout S]  the main process of the thin ptyd.service:
 *                            SIGTERM a shutdown, SIGUSR1 or SIGHUP an
 *                            upgrade (ptydctl_keeper.c)
 *     version
 *     start SID [--rows N] [--cols N] [--workspace DIR] [--restart]
 *     input SID DATA         DATA with \n \r \t \e \\ \xHH escapes
 *     resize SID ROWS COLS
 *     attach SID [--pos N] [--frames]
 *                            raw output to stdout until the shell ends;
 *                            --frames prints one line per frame instead
 *
 * Exit status: 0 ok, 1 a refusal from ptyd (not running, limits...) or
 * health degraded, 2 usage or connection errors, 3 a timeout (upgrade,
 * shutdown).  attach exits with 0 after MSG_EXIT.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "config.h"
#include "frame.h"
#include "proto.h"
#include "ptydctl.h"
#include "util.h"

#define CTL_TIMEOUT_MS 10000

static struct config *ctl_cfg; /* socket, db, state_dir */
static const char    *ctl_socket;
static const char *ctl_owner = "";
static int	   ctl_all;
static int	   ctl_json;
static uint8_t	   ctl_buf[PROTO_HDR_LEN + PROTO_MAX_PAYLOAD];

static const char ctl_synopsis[] =
    "ptydctl [--socket PATH] [--owner NAME] list [--all] [--json]\n"
    "       ptydctl [--socket PATH] [--owner NAME] show SID [--json]\n"
    "       ptydctl [--socket PATH] [--owner NAME] close SID\n"
    "       ptydctl [--socket PATH] health [--json]\n"
    "       ptydctl [--socket PATH] stats [--json]\n"
    "       ptydctl [--db PATH] prune [--before DAYS|YYYY-MM-DD]\n"
    "       ptydctl [--db PATH] audit verify [--anchors FILE|-] [--json]\n"
    "       ptydctl [--socket PATH] upgrade [--timeout SECONDS] [--json]\n"
    "       ptydctl [--socket PATH] shutdown [--timeout SECONDS]\n"
    "       ptydctl [--socket PATH] service [--timeout SECONDS]\n"
    "       ptydctl version\n"
    "       ptydctl [--socket PATH] [--owner NAME] start SID [--rows N]\n"
    "               [--cols N] [--workspace DIR] [--restart]\n"
    "       ptydctl [--socket PATH] [--owner NAME] input SID DATA\n"
    "       ptydctl [--socket PATH] [--owner NAME] resize SID ROWS COLS\n"
    "       ptydctl [--socket PATH] [--owner NAME] attach SID [--pos N]\n"
    "               [--frames]\n"
    "       ptydctl [--socket PATH] [--owner NAME] recordings [--all] "
    "[--json]\n"
    "       ptydctl [--socket PATH] play ID [--speed X] [--idle-limit S]\n"
    "       ptydctl --pools [--pool-dir DIR] COMMAND ...  (root: every "
    "account of ptyd-pool)\n";

void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr, "usage: %s", ctl_synopsis);
	exit(2);
}

void __attribute__((noreturn)) die(const char *what)
{
	fprintf(stderr, "ptydctl: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* The audit log's actor for what ptydctl does: user@ptydctl. */
const char *
ctl_actor(void)
{
	static char    actor[PROTO_ACTOR_MAX + 1];
	struct passwd *pw;

	if (actor[0] == '\0') {
		/* One thread: getpwuid's static result is ours alone. */
		/* cppcheck-suppress getpwuidCalled */
		pw = getpwuid(getuid());
		if (pw != NULL)
			snprintf(actor, sizeof(actor), "%s@ptydctl",
			    pw->pw_name);
		else
			snprintf(actor, sizeof(actor), "%lu@ptydctl",
			    (unsigned long)getuid());
	}
	return (actor);
}

static void
ctl_encode(struct frame_out *fo, uint16_t type, const void *msg)
{
	frame_out_init(fo);
	if (msg_encode(fo, type, msg) == -1)
		die("encoding the request");
}

/* Print a MSG_ERROR and exit 1; any other unexpected frame exits 2. */
static void __attribute__((noreturn)) ctl_refused(const struct frame_hdr *h)
{
	struct msg_error e;

	if (h->type == MSG_ERROR &&
	    msg_decode(h->type, ctl_buf + PROTO_HDR_LEN, h->len, &e) == 0) {
		fprintf(stderr, "ptydctl: error %u: %s\n", e.code, e.message);
		exit(1);
	}
	fprintf(stderr, "ptydctl: unexpected reply %s\n", msg_name(h->type));
	exit(2);
}

static void
ctl_call(const struct frame_out *fo, struct frame_hdr *h, uint16_t want,
    void *msg)
{
	if (client_call(ctl_socket, fo, h, ctl_buf, sizeof(ctl_buf),
		client_now_ms() + CTL_TIMEOUT_MS) == -1)
		die(ctl_socket);
	if (h->type != want)
		ctl_refused(h);
	if (msg != NULL &&
	    msg_decode(h->type, ctl_buf + PROTO_HDR_LEN, h->len, msg) == -1)
		die("decoding the reply");
}

static void
ctl_time(int64_t us)
{
	if (us < 0)
		printf("-");
	else
		printf("%" PRId64 ".%03" PRId64, us / 1000000,
		    (us % 1000000) / 1000);
}

/* A JSON string: quotes, backslash and control characters escaped. */
void
ctl_json_str(const char *s)
{
	putchar('"');
	for (; *s != '\0'; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", (unsigned char)*s);
		else
			putchar(*s);
	}
	putchar('"');
}

/* Seconds (JSON number) from wall microseconds; null if never. */
static void
ctl_json_time(const char *key, int64_t us, const char *sep)
{
	printf("\"%s\": ", key);
	if (us < 0)
		printf("null");
	else
		printf("%.3f", (double)us / 1e6);
	printf("%s", sep);
}

/* "12s", "3m", "2h", "5d" since us (wall); "-" if never. */
static const char *
ctl_ago(int64_t us, char *buf, size_t size)
{
	struct timespec ts;
	int64_t		s;

	if (us < 0)
		return ("-");
	clock_gettime(CLOCK_REALTIME, &ts);
	s = ((int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 - us) / 1000000;
	if (s < 0)
		s = 0;
	if (s < 120)
		snprintf(buf, size, "%" PRId64 "s", s);
	else if (s < 7200)
		snprintf(buf, size, "%" PRId64 "m", s / 60);
	else if (s < 172800)
		snprintf(buf, size, "%" PRId64 "h", s / 3600);
	else
		snprintf(buf, size, "%" PRId64 "d", s / 86400);
	return (buf);
}

/* Every MSG_LIST_ITEM of one MSG_LIST (all owners, or ctl_owner's). */
static struct msg_list_item *
ctl_fetch_list(int all, size_t *np)
{
	struct msg_list	      m;
	struct msg_list_item *items = NULL, *grown;
	struct frame_out      fo;
	struct frame_hdr      h;
	int64_t		      deadline = client_now_ms() + CTL_TIMEOUT_MS;
	size_t		      n = 0;
	int		      fd;

	memset(&m, 0, sizeof(m));
	m.all_owners = (uint8_t)all;
	snprintf(m.owner, sizeof(m.owner), "%s", ctl_owner);
	ctl_encode(&fo, MSG_LIST, &m);
	if ((fd = client_connect(ctl_socket, deadline)) == -1)
		die(ctl_socket);
	if (client_send(fd, &fo, deadline) == -1)
		die("send");
	for (;;) {
		if (client_recv(fd, &h, ctl_buf, sizeof(ctl_buf), deadline) ==
		    -1)
			die("recv");
		if (h.type == MSG_LIST_END)
			break;
		if (h.type != MSG_LIST_ITEM)
			ctl_refused(&h);
		if ((grown = reallocarray(items, n + 1, sizeof(*items))) ==
		    NULL) {
			free(items);
			die("memory");
		}
		items = grown;
		if (msg_decode(h.type, ctl_buf + PROTO_HDR_LEN, h.len,
			&items[n++]) == -1)
			die("decoding the reply");
	}
	close(fd);
	frame_out_free(&fo);
	*np = n;
	return (items);
}

static const char *
ctl_state(const struct msg_list_item *it)
{
	return (it->running ? "running" : "ended");
}

static void
ctl_item_json(const struct msg_list_item *it)
{
	printf("{\"session_id\": ");
	ctl_json_str(it->sid);
	printf(", \"owner\": ");
	ctl_json_str(it->owner);
	printf(", \"pid\": %d, \"workspace\": ", it->pid);
	ctl_json_str(it->workspace);
	printf(", \"rows\": %u, \"cols\": %u, \"running\": %s, "
	       "\"exit_code\": ",
	    it->rows, it->cols, it->running ? "true" : "false");
	if (it->has_exit_code)
		printf("%d", it->exit_code);
	else
		printf("null");
	printf(", \"subscribers\": %u, ", it->subscribers);
	ctl_json_time("unwatched_since", it->unwatched_since_us, ", ");
	ctl_json_time("last_activity", it->last_activity_us, ", ");
	ctl_json_time("started_at", it->started_at_us, "}");
}

/* Widen w to fit one row of the list. */
static void
ctl_list_row(const char *const *col, int *w, int ncol)
{
	int i, n;

	for (i = 0; i < ncol; i++) {
		n = (int)strlen(col[i]);
		if (w[i] < n)
			w[i] = n;
	}
}

#define CTL_NCOL 9

static void
ctl_list_cols(const struct msg_list_item *it, char bufs[][32], const char **col)
{
	col[0] = it->sid;
	col[1] = it->owner[0] != '\0' ? it->owner : "-";
	snprintf(bufs[0], 32, "%d", it->pid);
	col[2] = bufs[0];
	col[3] = ctl_state(it);
	if (it->has_exit_code)
		snprintf(bufs[1], 32, "%d", it->exit_code);
	else
		snprintf(bufs[1], 32, "-");
	col[4] = bufs[1];
	snprintf(bufs[2], 32, "%u", it->subscribers);
	col[5] = bufs[2];
	col[6] = ctl_ago(it->unwatched_since_us, bufs[3], 32);
	col[7] = ctl_ago(it->last_activity_us, bufs[4], 32);
	col[8] = it->workspace;
}

static int
ctl_list(int argc, char **argv)
{
	static const char *const head[CTL_NCOL] = { "SESSION", "OWNER", "PID",
		"STATE", "EXIT", "VIEWERS", "UNWATCHED", "QUIET", "WORKSPACE" };
	struct msg_list_item	*items;
	const char		*col[CTL_NCOL];
	char			 bufs[5][32];
	int			 w[CTL_NCOL] = { 0 }, pass, i;
	size_t			 n, j;

	(void)argc;
	(void)argv;
	items = ctl_fetch_list(ctl_all, &n);
	if (ctl_json) {
		printf("{\"terminals\": [");
		for (j = 0; j < n; j++) {
			printf(j > 0 ? ", " : "");
			ctl_item_json(&items[j]);
		}
		printf("]}\n");
		free(items);
		return (0);
	}
	/* Pass 0 measures the columns, pass 1 prints them. */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; pass == 1 && i < CTL_NCOL; i++)
			printf("%-*s%s", i < CTL_NCOL - 1 ? w[i] : 0, head[i],
			    i < CTL_NCOL - 1 ? "  " : "\n");
		ctl_list_row(head, w, CTL_NCOL);
		for (j = 0; j < n; j++) {
			ctl_list_cols(&items[j], bufs, col);
			ctl_list_row(col, w, CTL_NCOL);
			for (i = 0; pass == 1 && i < CTL_NCOL; i++)
				printf("%-*s%s", i < CTL_NCOL - 1 ? w[i] : 0,
				    col[i], i < CTL_NCOL - 1 ? "  " : "\n");
		}
	}
	free(items);
	return (0);
}

static int
ctl_show(int argc, char **argv)
{
	struct msg_list_item *items, *it = NULL;
	size_t		      n, j;

	(void)argc;
	items = ctl_fetch_list(0, &n);
	for (j = 0; j < n; j++)
		if (strcmp(items[j].sid, argv[1]) == 0)
			it = &items[j];
	if (it == NULL) {
		fprintf(stderr, "ptydctl: no terminal %s (owner \"%s\")\n",
		    argv[1], ctl_owner);
		free(items);
		return (1);
	}
	if (ctl_json) {
		ctl_item_json(it);
		printf("\n");
	} else {
		printf("session_id       %s\nowner            %s\n"
		       "pid              %d\nstate            %s\n"
		       "size             %ux%u\nsubscribers      %u\n",
		    it->sid, it->owner, it->pid, ctl_state(it), it->rows,
		    it->cols, it->subscribers);
		printf("exit_code        ");
		it->has_exit_code ? printf("%d\n", it->exit_code) :
				    printf("-\n");
		printf("unwatched_since  ");
		ctl_time(it->unwatched_since_us);
		printf("\nlast_activity    ");
		ctl_time(it->last_activity_us);
		printf("\nstarted_at       ");
		ctl_time(it->started_at_us);
		printf("\nworkspace        %s\n", it->workspace);
	}
	free(items);
	return (0);
}

static int
ctl_close(int argc, char **argv)
{
	const char	      *sid = argv[1];
	struct msg_close       m;
	struct msg_close_reply r;
	struct frame_out       fo;
	struct frame_hdr       h;

	(void)argc;
	memset(&m, 0, sizeof(m));
	snprintf(m.owner, sizeof(m.owner), "%s", ctl_owner);
	snprintf(m.sid, sizeof(m.sid), "%s", sid);
	snprintf(m.actor, sizeof(m.actor), "%s", ctl_actor());
	ctl_encode(&fo, MSG_CLOSE, &m);
	ctl_call(&fo, &h, MSG_CLOSE_REPLY, &r);
	printf("closed: %s\n", r.closed ? "yes" : "no");
	frame_out_free(&fo);
	return (r.closed ? 0 : 1);
}

static void
ctl_fetch_stats(struct msg_stats_reply *r)
{
	struct frame_out fo;
	struct frame_hdr h;

	ctl_encode(&fo, MSG_STATS, NULL);
	ctl_call(&fo, &h, MSG_STATS_REPLY, r);
	frame_out_free(&fo);
}

/* MSG_STATS_REPLY's fields, in order, for stats (both outputs). */
#define CTL_U64(f) \
	{ \
#f, offsetof(struct msg_stats_reply, f), 8 \
	}
#define CTL_U32(f) \
	{ \
#f, offsetof(struct msg_stats_reply, f), 4 \
	}
static const struct {
	const char *name;
	size_t	    off;
	size_t	    size;
} ctl_stat_fields[] = {
	CTL_U32(terminals),
	CTL_U32(running),
	CTL_U32(ending),
	CTL_U32(draining),
	CTL_U32(exited),
	CTL_U32(viewers),
	CTL_U64(db_errors),
	CTL_U64(bytes_in),
	CTL_U64(bytes_out),
	CTL_U64(inputs),
	CTL_U64(starts),
	CTL_U64(closes),
	CTL_U64(reaps),
	CTL_U64(evictions),
	CTL_U64(exits),
	CTL_U64(shutdowns),
	CTL_U64(lost),
	CTL_U64(reap_ticks),
	CTL_U64(reap_last_us),
	CTL_U64(reap_max_us),
	CTL_U64(flushes),
	CTL_U64(flush_last_us),
	CTL_U64(flush_max_us),
	CTL_U64(flush_last_rows),
	CTL_U64(flush_max_rows),
	CTL_U32(generation),
	CTL_U32(upgrades),
	CTL_U32(takeovers),
	CTL_U64(audit_lines_sent),
	CTL_U64(audit_lines_lost),
};

static int
ctl_stats(int argc, char **argv)
{
	struct msg_stats_reply r;
	uint64_t	       v;
	uint32_t	       v32;
	size_t		       i;

	(void)argc;
	(void)argv;
	ctl_fetch_stats(&r);
	printf(ctl_json ?
		"{\"pid\": %d, \"keeper_pid\": %d, \"uptime\": %.3f,"
		" \"db_failing\": %s, \"db_lag\": %.3f" :
		"pid          %d\nkeeper_pid   %d\nuptime       %.3f\n"
		"db_failing   %s\ndb_lag       %.3f\n",
	    r.pid, r.keeper_pid, (double)r.uptime_us / 1e6,
	    r.db_failing ? "true" : "false", (double)r.db_lag_us / 1e6);
	for (i = 0; i < sizeof(ctl_stat_fields) / sizeof(ctl_stat_fields[0]);
	     i++) {
		if (ctl_stat_fields[i].size == 4) {
			memcpy(&v32, (char *)&r + ctl_stat_fields[i].off, 4);
			v = v32;
		} else
			memcpy(&v, (char *)&r + ctl_stat_fields[i].off, 8);
		printf(ctl_json ? ", \"%s\": %" PRIu64 : "%-12s %" PRIu64 "\n",
		    ctl_stat_fields[i].name, v);
	}
	/* The last upgrade's outcome (docs/proposals/keeper.md 4). */
	if (ctl_json) {
		printf(", \"upgrade_failed\": %s, \"upgrade_reason\": ",
		    r.upgrade_failed ? "true" : "false");
		ctl_json_str(r.upgrade_reason);
		printf("}\n");
	} else
		printf("upgrade_failed %s\nupgrade_reason %s\n",
		    r.upgrade_failed ? "true" : "false",
		    r.upgrade_reason[0] != '\0' ? r.upgrade_reason : "-");
	return (0);
}

/* As GET /api/terminal/health: ok, or degraded (exit 1) while the
 * database fails. */
static int
ctl_health(int argc, char **argv)
{
	struct msg_stats_reply r;
	const char	      *status;

	(void)argc;
	(void)argv;
	ctl_fetch_stats(&r);
	status = r.db_failing ? "degraded" : "ok";
	if (ctl_json)
		printf(
		    "{\"status\": \"%s\", \"ok\": %s, \"db_errors\": %" PRIu64
		    ", \"db_failing\": %s, \"db_lag\": %.3f, \"pid\": %d,"
		    " \"keeper_pid\": %d, \"generation\": %u,"
		    " \"uptime\": %.3f, \"terminals\": %u, \"viewers\": %u}\n",
		    status, r.db_failing ? "false" : "true", r.db_errors,
		    r.db_failing ? "true" : "false", (double)r.db_lag_us / 1e6,
		    r.pid, r.keeper_pid, r.generation,
		    (double)r.uptime_us / 1e6, r.terminals, r.viewers);
	else
		printf("%s%s\npid          %d\nkeeper_pid   %d\n"
		       "db_errors    %" PRIu64 "\ndb_lag       %.3f\n"
		       "terminals    %u\nviewers      %u\n",
		    status, r.db_failing ? ": the database refuses writes" : "",
		    r.pid, r.keeper_pid, r.db_errors, (double)r.db_lag_us / 1e6,
		    r.terminals, r.viewers);
	return (r.db_failing ? 1 : 0);
}

static int
ctl_version(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("ptydctl %s (protocol %d)\n", PACKAGE_VERSION, PROTO_VERSION);
	return (0);
}

static unsigned int
ctl_uint(const char *s, unsigned int max)
{
	char	     *end;
	unsigned long v;

	errno = 0;
	/* Callers pass optarg of a required_argument option, which getopt
	 * always sets, or an argv word; never NULL. */
	/* NOLINTNEXTLINE(clang-analyzer-core.NonNullParamChecker) */
	v = strtoul(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v > max)
		usage();
	return ((unsigned int)v);
}

static int
ctl_start(int argc, char **argv)
{
	static const struct option opts[] = { { "rows", required_argument, NULL,
						  'r' },
		{ "cols", required_argument, NULL, 'c' },
		{ "workspace", required_argument, NULL, 'w' },
		{ "restart", no_argument, NULL, 'R' }, { NULL, 0, NULL, 0 } };
	struct msg_start	   m;
	struct msg_started	   r;
	struct frame_out	   fo;
	struct frame_hdr	   h;
	int			   ch;

	memset(&m, 0, sizeof(m));
	optind = 0;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'r':
			m.rows = (uint16_t)ctl_uint(optarg, 65535);
			break;
		case 'c':
			m.cols = (uint16_t)ctl_uint(optarg, 65535);
			break;
		case 'w':
			snprintf(m.workspace, sizeof(m.workspace), "%s",
			    optarg);
			break;
		case 'R':
			m.restart = 1;
			break;
		default:
			usage();
		}
	}
	if (optind + 1 != argc)
		usage();
	snprintf(m.owner, sizeof(m.owner), "%s", ctl_owner);
	snprintf(m.sid, sizeof(m.sid), "%s", argv[optind]);
	snprintf(m.actor, sizeof(m.actor), "%s", ctl_actor());
	ctl_encode(&fo, MSG_START, &m);
	ctl_call(&fo, &h, MSG_STARTED, &r);
	printf("pid\t%d\nworkspace\t%s\nreused\t%u\n", r.pid, r.workspace,
	    r.reused);
	frame_out_free(&fo);
	return (0);
}

/* Decode the escapes; returns the byte count. */
static size_t
ctl_unescape(const char *s, uint8_t *out, size_t max)
{
	size_t n = 0;

	for (; *s != '\0' && n < max; s++) {
		if (*s != '\\' || s[1] == '\0') {
			out[n++] = (uint8_t)*s;
			continue;
		}
		s++;
		switch (*s) {
		case 'n':
			out[n++] = '\n';
			break;
		case 'r':
			out[n++] = '\r';
			break;
		case 't':
			out[n++] = '\t';
			break;
		case 'e':
			out[n++] = 0x1b;
			break;
		case 'x':
			if (util_hexval(s[1]) >= 0 && util_hexval(s[2]) >= 0) {
				out[n++] = (uint8_t)(util_hexval(s[1]) * 16 +
				    util_hexval(s[2]));
				s += 2;
			} else
				out[n++] = 'x';
			break;
		default:
			out[n++] = (uint8_t)*s;
			break;
		}
	}
	return (n);
}

static int
ctl_input(int argc, char **argv)
{
	static uint8_t	      bytes[PROTO_INPUT_MAX];
	struct msg_input      m;
	struct msg_input_done d;
	struct frame_out      fo;
	struct frame_hdr      h;

	(void)argc;
	memset(&m, 0, sizeof(m));
	snprintf(m.owner, sizeof(m.owner), "%s", ctl_owner);
	snprintf(m.sid, sizeof(m.sid), "%s", argv[1]);
	snprintf(m.actor, sizeof(m.actor), "%s", ctl_actor());
	m.len = ctl_unescape(argv[2], bytes, sizeof(bytes));
	m.data = bytes;
	ctl_encode(&fo, MSG_INPUT, &m);
	ctl_call(&fo, &h, MSG_INPUT_DONE, &d);
	frame_out_free(&fo);
	return (0);
}

static int
ctl_resize(int argc, char **argv)
{
	struct msg_resize m;
	struct frame_out  fo;
	struct frame_hdr  h;

	(void)argc;
	memset(&m, 0, sizeof(m));
	snprintf(m.owner, sizeof(m.owner), "%s", ctl_owner);
	snprintf(m.sid, sizeof(m.sid), "%s", argv[1]);
	m.rows = (uint16_t)ctl_uint(argv[2], 65535);
	m.cols = (uint16_t)ctl_uint(argv[3], 65535);
	ctl_encode(&fo, MSG_RESIZE, &m);
	ctl_call(&fo, &h, MSG_OK, NULL);
	frame_out_free(&fo);
	return (0);
}

static void
ctl_write_all(const uint8_t *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		w = write(STDOUT_FILENO, p, n);
		if (w == -1 && errno == EINTR)
			continue;
		if (w <= 0)
			die("stdout");
		p += w;
		n -= (size_t)w;
	}
}

/* attach's options into m and *frames; SID last. */
static void
ctl_attach_opts(int argc, char **argv, struct msg_attach *m, int *frames)
{
	static const struct option opts[] = { { "pos", required_argument, NULL,
						  'p' },
		{ "frames", no_argument, NULL, 'F' }, { NULL, 0, NULL, 0 } };
	char			  *end;
	int			   ch;

	memset(m, 0, sizeof(*m));
	optind = 0;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'p':
			errno = 0;
			/* --pos is required_argument: optarg is set. */
			/* NOLINTNEXTLINE(clang-analyzer-core.NonNull*) */
			m->pos = strtoull(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || end == optarg)
				usage();
			m->has_pos = 1;
			break;
		case 'F':
			*frames = 1;
			break;
		default:
			usage();
		}
	}
	if (optind + 1 != argc)
		usage();
	snprintf(m->owner, sizeof(m->owner), "%s", ctl_owner);
	snprintf(m->sid, sizeof(m->sid), "%s", argv[optind]);
	snprintf(m->actor, sizeof(m->actor), "%s", ctl_actor());
}

static void
ctl_attach_exit(const struct msg_exit *me, int frames)
{
	FILE *f = frames ? stdout : stderr;

	fprintf(f, frames ? "exit %s " : "ptydctl: exit %s ", me->reason);
	if (me->has_exit_code)
		fprintf(f, "%d", me->exit_code);
	else
		fprintf(f, "null");
	if (frames)
		fprintf(f, " %" PRIu64, me->pos);
	fprintf(f, "\n");
}

/* One stream frame in ctl_buf; 1 after MSG_EXIT. */
static int
ctl_attach_frame(const struct frame_hdr *h, int frames)
{
	const uint8_t *payload = ctl_buf + PROTO_HDR_LEN;
	union {
		struct msg_attached a;
		struct msg_output   o;
		struct msg_gap	    g;
		struct msg_exit	    e;
	} m;

	if (h->type != MSG_ATTACHED && h->type != MSG_OUTPUT &&
	    h->type != MSG_GAP && h->type != MSG_EXIT)
		ctl_refused(h);
	if (msg_decode(h->type, payload, h->len, &m) == -1)
		die("decode");
	switch (h->type) {
	case MSG_ATTACHED:
		if (frames)
			printf("attached %" PRIu64 "\n", m.a.base);
		return (0);
	case MSG_OUTPUT:
		if (frames)
			printf("output %" PRIu64 " %zu\n", m.o.end, m.o.len);
		else
			ctl_write_all(m.o.data, m.o.len);
		return (0);
	case MSG_GAP:
		if (frames)
			printf("gap %" PRIu64 " %" PRIu64 "\n", m.g.lost,
			    m.g.pos);
		return (0);
	default:
		ctl_attach_exit(&m.e, frames);
		return (1);
	}
}

static int
ctl_attach(int argc, char **argv)
{
	struct msg_attach m;
	struct frame_out  fo;
	struct frame_hdr  h;
	int		  fd, frames = 0;

	ctl_attach_opts(argc, argv, &m, &frames);
	ctl_encode(&fo, MSG_ATTACH, &m);
	if ((fd = client_connect(ctl_socket,
		 client_now_ms() + CTL_TIMEOUT_MS)) == -1)
		die(ctl_socket);
	if (client_send(fd, &fo, client_now_ms() + CTL_TIMEOUT_MS) == -1)
		die("send");
	frame_out_free(&fo);
	setvbuf(stdout, NULL, _IONBF, 0);
	for (;;) {
		if (client_recv(fd, &h, ctl_buf, sizeof(ctl_buf), -1) == -1) {
			if (errno == ECONNRESET) {
				fprintf(stderr, "ptydctl: stream ended\n");
				return (1);
			}
			die("recv");
		}
		if (ctl_attach_frame(&h, frames)) {
			close(fd);
			return (0);
		}
	}
}

#define CTL_OPT_OWNER	 0x100
#define CTL_OPT_POOLS	 0x101
#define CTL_OPT_POOL_DIR 0x102

#ifndef PTYD_SYSCONFDIR
#define PTYD_SYSCONFDIR "/etc"
#endif
static int	   ctl_pools_on; /* --pools */
static const char *ctl_pool_dir = PTYD_SYSCONFDIR "/ptyd/pool.d";

static void
ctl_option_cb(void *arg, int val, const char *optarg)
{
	(void)arg;
	if (val == CTL_OPT_OWNER)
		ctl_owner = optarg;
	else if (val == CTL_OPT_POOLS)
		ctl_pools_on = 1;
	else if (val == CTL_OPT_POOL_DIR)
		ctl_pool_dir = optarg;
}

/* socket, db and state_dir as ptyd finds them (lib/config.c); exits for
 * --help, --version, --print-config and a bad setting. */
static void
ctl_configure(int *argc, char ***argv)
{
	static const struct config_extra extra[] = {
		{ "owner", required_argument, CTL_OPT_OWNER, "NAME",
		    "act for this owner (also after the command)" },
		{ "pools", no_argument, CTL_OPT_POOLS, NULL,
		    "root: run the command as every account of ptyd-pool" },
		{ "pool-dir", required_argument, CTL_OPT_POOL_DIR, "DIR",
		    "ptyd-pool's folder (" PTYD_SYSCONFDIR "/ptyd/pool.d)" },
		{ NULL, 0, 0, NULL, NULL },
	};
	struct config_args a = { ctl_synopsis, NULL, extra, ctl_option_cb, NULL,
		1 };
	int		   rv, first = 1;

	ctl_cfg = config_new(CONFIG_CTL, "ptydctl");
	if ((rv = config_load(ctl_cfg, *argc, *argv, &a, &first)) != -1)
		exit(rv);
	if (config_print_requested(ctl_cfg)) {
		config_print(ctl_cfg, stdout);
		exit(fflush(stdout) == 0 ? 0 : 1);
	}
	ctl_socket = config_str(ctl_cfg, CONFIG_SOCKET);
	*argc -= first;
	*argv += first;
}

/*
 * The commands: name, operands after the name (min, max; -1: the command
 * parses its own options), whether it talks to ptyd (needs the socket).
 */
static const struct ctl_cmd {
	const char *name;
	int	    min;
	int	    max;
	int	    socket;
	int (*run)(int, char **);
} ctl_cmds[] = {
	{ "list", 0, 0, 1, ctl_list },
	{ "show", 1, 1, 1, ctl_show },
	{ "close", 1, 1, 1, ctl_close },
	{ "health", 0, 0, 1, ctl_health },
	{ "stats", 0, 0, 1, ctl_stats },
	{ "prune", -1, -1, 0, ctl_prune },
	{ "audit", -1, -1, 0, ctl_audit },
	{ "upgrade", -1, -1, 1, ctl_upgrade },
	{ "shutdown", -1, -1, 1, ctl_shutdown },
	{ "service", -1, -1, 1, ctl_service },
	{ "version", 0, 0, 0, ctl_version },
	{ "start", -1, -1, 1, ctl_start },
	{ "input", 2, 2, 1, ctl_input },
	{ "resize", 3, 3, 1, ctl_resize },
	{ "attach", -1, -1, 1, ctl_attach },
	{ "recordings", 0, 0, 1, ctl_recordings },
	{ "play", -1, -1, 1, ctl_play },
};

/* Flags that may also follow the command: --owner NAME, --all, --json
 * (ptydctl close SID --owner X).  Removed from argv. */
static void
ctl_flags(int *argcp, char **argv)
{
	int argc = *argcp, i, take;

	for (i = 1; i < argc; i++) {
		take = 0;
		if (strcmp(argv[i], "--owner") == 0 && i + 1 < argc) {
			ctl_owner = argv[i + 1];
			take = 2;
		} else if (strcmp(argv[i], "--all") == 0) {
			ctl_all = 1;
			take = 1;
		} else if (strcmp(argv[i], "--json") == 0) {
			ctl_json = 1;
			take = 1;
		}
		if (take > 0) {
			memmove(&argv[i], &argv[i + take],
			    (size_t)(argc - i - take + 1) * sizeof(*argv));
			argc -= take;
			i--;
		}
	}
	*argcp = argc;
}

const char *
ctl_socket_path(void)
{
	return (ctl_socket);
}

const char *
ctl_db(void)
{
	return (config_str(ctl_cfg, CONFIG_DB));
}

const char *
ctl_audit_anchor(void)
{
	return (config_str(ctl_cfg, CONFIG_AUDIT_ANCHOR));
}

const char *
ctl_audit_log(void)
{
	return (config_str(ctl_cfg, CONFIG_AUDIT_LOG));
}

int
ctl_want_json(void)
{
	return (ctl_json);
}

int
ctl_all_owners(void)
{
	return (ctl_all);
}

const char *
ctl_owner_name(void)
{
	return (ctl_owner);
}

/* Run the command argv[0]. */
static int
ctl_dispatch(int argc, char **argv)
{
	const struct ctl_cmd *c = NULL;
	size_t		      i;

	if (argc < 1)
		usage();
	ctl_flags(&argc, argv);
	for (i = 0; i < sizeof(ctl_cmds) / sizeof(ctl_cmds[0]); i++)
		if (strcmp(argv[0], ctl_cmds[i].name) == 0)
			c = &ctl_cmds[i];
	if (c == NULL ||
	    (c->min >= 0 && (argc - 1 < c->min || argc - 1 > c->max)))
		usage();
	return (c->run(argc, argv));
}

int
main(int argc, char **argv)
{
	/* Options before the command only: the command's own follow it. */
	ctl_configure(&argc, &argv);
	if (ctl_pools_on)
		return (ctl_pools(ctl_pool_dir, argc, argv));
	return (ctl_dispatch(argc, argv));
}
