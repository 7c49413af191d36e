/*
 * ptydctl.c -- the operator's and the tests' client for ptyd.
 *
 * Owns: the command line and the printing of replies.  Does not own the
 * protocol (lib/proto.h, lib/frame.c) or the socket I/O (lib/client.c).
 *
 *   ptydctl [--socket PATH] [--owner NAME] COMMAND ...
 *     list [--all]           one tab-separated line per terminal
 *     close SID              exit 0 if closed, 1 if there was none
 *     stats
 *     start SID [--rows N] [--cols N] [--workspace DIR] [--restart]
 *     input SID DATA         DATA with \n \r \t \e \\ \xHH escapes
 *     resize SID ROWS COLS
 *     attach SID [--pos N] [--frames]
 *                            raw output to stdout until the shell ends;
 *                            --frames prints one line per frame instead
 *
 * Exit status: 0 ok, 1 a refusal from ptyd (not running, limits...),
 * 2 usage or connection errors.  attach exits with 0 after MSG_EXIT.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "config.h"
#include "frame.h"
#include "proto.h"

#define CTL_TIMEOUT_MS 10000

static struct config *ctl_cfg; /* socket, db, state_dir */
static const char    *ctl_socket;
static const char *ctl_owner = "";
static uint8_t	   ctl_buf[PROTO_HDR_LEN + PROTO_MAX_PAYLOAD];

static const char ctl_synopsis[] =
    "ptydctl [--socket PATH] [--owner NAME] list [--all]\n"
    "       ptydctl [--socket PATH] [--owner NAME] close SID\n"
    "       ptydctl [--socket PATH] stats\n"
    "       ptydctl [--socket PATH] [--owner NAME] start SID [--rows N]\n"
    "               [--cols N] [--workspace DIR] [--restart]\n"
    "       ptydctl [--socket PATH] [--owner NAME] input SID DATA\n"
    "       ptydctl [--socket PATH] [--owner NAME] resize SID ROWS COLS\n"
    "       ptydctl [--socket PATH] [--owner NAME] attach SID [--pos N]\n"
    "               [--frames]\n";

static void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr, "usage: %s", ctl_synopsis);
	exit(2);
}

static void __attribute__((noreturn)) die(const char *what)
{
	fprintf(stderr, "ptydctl: %s: %s\n", what, strerror(errno));
	exit(2);
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

static int
ctl_list(int all)
{
	struct msg_list	     m;
	struct msg_list_item it;
	struct frame_out     fo;
	struct frame_hdr     h;
	int64_t		     deadline = client_now_ms() + CTL_TIMEOUT_MS;
	int		     fd;

	memset(&m, 0, sizeof(m));
	m.all_owners = (uint8_t)all;
	snprintf(m.owner, sizeof(m.owner), "%s", ctl_owner);
	ctl_encode(&fo, MSG_LIST, &m);
	if ((fd = client_connect(ctl_socket, deadline)) == -1)
		die(ctl_socket);
	if (client_send(fd, &fo, deadline) == -1)
		die("send");
	printf("session_id\towner\tpid\trunning\texit_code\tsubscribers\t"
	       "unwatched_since\tlast_activity\tstarted_at\tworkspace\n");
	for (;;) {
		if (client_recv(fd, &h, ctl_buf, sizeof(ctl_buf), deadline) ==
		    -1)
			die("recv");
		if (h.type == MSG_LIST_END)
			break;
		if (h.type != MSG_LIST_ITEM)
			ctl_refused(&h);
		if (msg_decode(h.type, ctl_buf + PROTO_HDR_LEN, h.len, &it) ==
		    -1)
			die("decoding the reply");
		printf("%s\t%s\t%d\t%d\t", it.sid, it.owner, it.pid,
		    it.running);
		if (it.has_exit_code)
			printf("%d", it.exit_code);
		else
			printf("-");
		printf("\t%u\t", it.subscribers);
		ctl_time(it.unwatched_since_us);
		printf("\t");
		ctl_time(it.last_activity_us);
		printf("\t");
		ctl_time(it.started_at_us);
		printf("\t%s\n", it.workspace);
	}
	close(fd);
	frame_out_free(&fo);
	return (0);
}

static int
ctl_close(const char *sid)
{
	struct msg_close       m;
	struct msg_close_reply r;
	struct frame_out       fo;
	struct frame_hdr       h;

	memset(&m, 0, sizeof(m));
	snprintf(m.owner, sizeof(m.owner), "%s", ctl_owner);
	snprintf(m.sid, sizeof(m.sid), "%s", sid);
	snprintf(m.actor, sizeof(m.actor), "ptydctl");
	ctl_encode(&fo, MSG_CLOSE, &m);
	ctl_call(&fo, &h, MSG_CLOSE_REPLY, &r);
	printf("closed: %s\n", r.closed ? "yes" : "no");
	frame_out_free(&fo);
	return (r.closed ? 0 : 1);
}

static int
ctl_stats(void)
{
	struct msg_stats_reply r;
	struct frame_out       fo;
	struct frame_hdr       h;

	ctl_encode(&fo, MSG_STATS, NULL);
	ctl_call(&fo, &h, MSG_STATS_REPLY, &r);
	printf("pid\t%d\nuptime\t", r.pid);
	ctl_time(r.uptime_us);
	printf("\nterminals\t%u\nexited\t%u\nviewers\t%u\ndb_errors\t%" PRIu64
	       "\n",
	    r.terminals, r.exited, r.viewers, r.db_errors);
	frame_out_free(&fo);
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
	snprintf(m.actor, sizeof(m.actor), "ptydctl");
	ctl_encode(&fo, MSG_START, &m);
	ctl_call(&fo, &h, MSG_STARTED, &r);
	printf("pid\t%d\nworkspace\t%s\nreused\t%u\n", r.pid, r.workspace,
	    r.reused);
	frame_out_free(&fo);
	return (0);
}

static int
ctl_hex(int c)
{
	if (c >= '0' && c <= '9')
		return (c - '0');
	if (c >= 'a' && c <= 'f')
		return (c - 'a' + 10);
	if (c >= 'A' && c <= 'F')
		return (c - 'A' + 10);
	return (-1);
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
			if (ctl_hex(s[1]) >= 0 && ctl_hex(s[2]) >= 0) {
				out[n++] = (uint8_t)(ctl_hex(s[1]) * 16 +
				    ctl_hex(s[2]));
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
ctl_input(const char *sid, const char *data)
{
	static uint8_t	      bytes[PROTO_INPUT_MAX];
	struct msg_input      m;
	struct msg_input_done d;
	struct frame_out      fo;
	struct frame_hdr      h;

	memset(&m, 0, sizeof(m));
	snprintf(m.owner, sizeof(m.owner), "%s", ctl_owner);
	snprintf(m.sid, sizeof(m.sid), "%s", sid);
	m.len = ctl_unescape(data, bytes, sizeof(bytes));
	m.data = bytes;
	ctl_encode(&fo, MSG_INPUT, &m);
	ctl_call(&fo, &h, MSG_INPUT_DONE, &d);
	frame_out_free(&fo);
	return (0);
}

static int
ctl_resize(const char *sid, const char *rows, const char *cols)
{
	struct msg_resize m;
	struct frame_out  fo;
	struct frame_hdr  h;

	memset(&m, 0, sizeof(m));
	snprintf(m.owner, sizeof(m.owner), "%s", ctl_owner);
	snprintf(m.sid, sizeof(m.sid), "%s", sid);
	m.rows = (uint16_t)ctl_uint(rows, 65535);
	m.cols = (uint16_t)ctl_uint(cols, 65535);
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

static int
ctl_attach(int argc, char **argv)
{
	static const struct option opts[] = { { "pos", required_argument, NULL,
						  'p' },
		{ "frames", no_argument, NULL, 'F' }, { NULL, 0, NULL, 0 } };
	struct msg_attach	   m;
	struct msg_attached	   ma;
	struct msg_output	   mo;
	struct msg_gap		   mg;
	struct msg_exit		   me;
	struct frame_out	   fo;
	struct frame_hdr	   h;
	const uint8_t		  *payload = ctl_buf + PROTO_HDR_LEN;
	char			  *end;
	int			   ch, fd, frames = 0;

	memset(&m, 0, sizeof(m));
	optind = 0;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'p':
			errno = 0;
			/* --pos is required_argument: optarg is set. */
			/* NOLINTNEXTLINE(clang-analyzer-core.NonNull*) */
			m.pos = strtoull(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || end == optarg)
				usage();
			m.has_pos = 1;
			break;
		case 'F':
			frames = 1;
			break;
		default:
			usage();
		}
	}
	if (optind + 1 != argc)
		usage();
	snprintf(m.owner, sizeof(m.owner), "%s", ctl_owner);
	snprintf(m.sid, sizeof(m.sid), "%s", argv[optind]);
	snprintf(m.actor, sizeof(m.actor), "ptydctl");
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
		switch (h.type) {
		case MSG_ATTACHED:
			if (msg_decode(h.type, payload, h.len, &ma) == -1)
				die("decode");
			if (frames)
				printf("attached %" PRIu64 "\n", ma.base);
			break;
		case MSG_OUTPUT:
			if (msg_decode(h.type, payload, h.len, &mo) == -1)
				die("decode");
			if (frames)
				printf("output %" PRIu64 " %zu\n", mo.end,
				    mo.len);
			else
				ctl_write_all(mo.data, mo.len);
			break;
		case MSG_GAP:
			if (msg_decode(h.type, payload, h.len, &mg) == -1)
				die("decode");
			if (frames)
				printf("gap %" PRIu64 " %" PRIu64 "\n", mg.lost,
				    mg.pos);
			break;
		case MSG_EXIT:
			if (msg_decode(h.type, payload, h.len, &me) == -1)
				die("decode");
			if (frames) {
				printf("exit %s ", me.reason);
				if (me.has_exit_code)
					printf("%d", me.exit_code);
				else
					printf("null");
				printf(" %" PRIu64 "\n", me.pos);
			} else {
				fprintf(stderr, "ptydctl: exit %s ", me.reason);
				if (me.has_exit_code)
					fprintf(stderr, "%d\n", me.exit_code);
				else
					fprintf(stderr, "null\n");
			}
			close(fd);
			return (0);
		default:
			ctl_refused(&h);
		}
	}
}

#define CTL_OPT_OWNER 0x100

static void
ctl_option_cb(void *arg, int val, const char *optarg)
{
	(void)arg;
	if (val == CTL_OPT_OWNER)
		ctl_owner = optarg;
}

/* socket, db and state_dir as ptyd finds them (lib/config.c); exits for
 * --help, --version, --print-config and a bad setting. */
static void
ctl_configure(int *argc, char ***argv)
{
	static const struct config_extra extra[] = {
		{ "owner", required_argument, CTL_OPT_OWNER, "NAME",
		    "act for this owner (also after the command)" },
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

int
main(int argc, char **argv)
{
	const char *cmd;
	int	    i, all = 0;

	/* Options before the command only: the command's own follow it. */
	ctl_configure(&argc, &argv);
	if (argc < 1)
		usage();
	/* --owner may also follow the command (ptydctl close SID --owner X). */
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--owner") == 0 && i + 1 < argc) {
			ctl_owner = argv[i + 1];
			memmove(&argv[i], &argv[i + 2],
			    (size_t)(argc - i - 1) * sizeof(*argv));
			argc -= 2;
			i--;
		} else if (strcmp(argv[i], "--all") == 0) {
			all = 1;
			memmove(&argv[i], &argv[i + 1],
			    (size_t)(argc - i) * sizeof(*argv));
			argc--;
			i--;
		}
	}
	cmd = argv[0];
	if (strcmp(cmd, "list") == 0 && argc == 1)
		return (ctl_list(all));
	if (strcmp(cmd, "close") == 0 && argc == 2)
		return (ctl_close(argv[1]));
	if (strcmp(cmd, "stats") == 0 && argc == 1)
		return (ctl_stats());
	if (strcmp(cmd, "start") == 0)
		return (ctl_start(argc, argv));
	if (strcmp(cmd, "input") == 0 && argc == 3)
		return (ctl_input(argv[1], argv[2]));
	if (strcmp(cmd, "resize") == 0 && argc == 4)
		return (ctl_resize(argv[1], argv[2], argv[3]));
	if (strcmp(cmd, "attach") == 0)
		return (ctl_attach(argc, argv));
	usage();
}
