/*
 * ptydctl_rec.c -- `ptydctl recordings`, `ptydctl play`, and the
 * recordings' part of `ptydctl prune` (DESIGN 4).
 *
 * Owns: the list of recordings as ptyd gives it (a table, or --json with
 * the HTTP API's fields), playing one to stdout at its own pace (the
 * file's descriptor from ptyd; a finished one's SHA-256 checked before a
 * byte is written, so a file changed since it was written is refused),
 * and asking ptyd to apply retention now.  Does not own: the files, the
 * rows, or retention's choice (ptyd/record.c).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <nettle/sha2.h>

#include "client.h"
#include "frame.h"
#include "ptydctl.h"

#define CTL_REC_TIMEOUT_MS 10000
#define CTL_REC_LINE_MAX   (16 * 1024 * 1024)

static uint8_t ctl_rec_buf[PROTO_HDR_LEN + PROTO_MAX_PAYLOAD];

static const char *const ctl_rec_states[] = {
	[PROTO_REC_RECORDING] = "recording",
	[PROTO_REC_FINISHED] = "finished",
	[PROTO_REC_CUT] = "cut",
	[PROTO_REC_REMOVED] = "removed",
};

static const char *
ctl_rec_state(uint8_t s)
{
	return (s <= PROTO_REC_REMOVED ? ctl_rec_states[s] : "?");
}

/* A MSG_ERROR's words, exit 1; anything else unexpected exits 2. */
static void __attribute__((noreturn)) ctl_rec_refused(const struct frame_hdr *h)
{
	struct msg_error e;

	if (h->type == MSG_ERROR &&
	    msg_decode(h->type, ctl_rec_buf + PROTO_HDR_LEN, h->len, &e) == 0) {
		fprintf(stderr, "ptydctl: error %u: %s\n", e.code, e.message);
		exit(1);
	}
	fprintf(stderr, "ptydctl: unexpected reply %s\n", msg_name(h->type));
	exit(2);
}

/* Every row ptyd lets us see (all owners, or owner's), newest first. */
static struct msg_rec_item *
ctl_rec_fetch(int all, const char *owner, size_t *np)
{
	struct msg_recordings m;
	struct msg_rec_item  *items = NULL, *grown;
	struct frame_out      fo;
	struct frame_hdr      h;
	int64_t		      deadline = client_now_ms() + CTL_REC_TIMEOUT_MS;
	size_t		      n = 0;
	int		      fd;

	memset(&m, 0, sizeof(m));
	m.all_owners = (uint8_t)all;
	snprintf(m.owner, sizeof(m.owner), "%s", owner);
	frame_out_init(&fo);
	if (msg_encode(&fo, MSG_RECORDINGS, &m) == -1)
		die("encoding the request");
	if ((fd = client_connect(ctl_socket_path(), deadline)) == -1)
		die(ctl_socket_path());
	if (client_send(fd, &fo, deadline) == -1)
		die("send");
	for (;;) {
		if (client_recv(fd, &h, ctl_rec_buf, sizeof(ctl_rec_buf),
			deadline) == -1)
			die("recv");
		if (h.type == MSG_REC_END)
			break;
		if (h.type != MSG_REC_ITEM)
			ctl_rec_refused(&h);
		if ((grown = reallocarray(items, n + 1, sizeof(*items))) ==
		    NULL)
			die("memory");
		items = grown;
		if (msg_decode(h.type, ctl_rec_buf + PROTO_HDR_LEN, h.len,
			&items[n++]) == -1)
			die("decoding the reply");
	}
	close(fd);
	frame_out_free(&fo);
	*np = n;
	return (items);
}

static void
ctl_rec_time(const char *key, int64_t us)
{
	printf("\"%s\": ", key);
	if (us < 0)
		printf("null");
	else
		printf("%.3f", (double)us / 1e6);
}

static void
ctl_rec_json(const struct msg_rec_item *it)
{
	printf("{\"id\": %" PRId64 ", \"session_id\": ", it->id);
	ctl_json_str(it->sid);
	printf(", \"owner\": ");
	ctl_json_str(it->owner);
	printf(", \"part\": %u, ", it->part);
	ctl_rec_time("started_at", it->started_at_us);
	printf(", ");
	ctl_rec_time("ended_at", it->ended_at_us);
	printf(", \"bytes\": %" PRIu64 ", \"state\": \"%s\", \"cut_reason\": ",
	    it->bytes, ctl_rec_state(it->state));
	if (it->cut_reason[0] != '\0')
		ctl_json_str(it->cut_reason);
	else
		printf("null");
	printf(", \"sha256\": ");
	if (it->sha256[0] != '\0')
		ctl_json_str(it->sha256);
	else
		printf("null");
	printf(", \"cols\": %u, \"rows\": %u}", it->cols, it->rows);
}

static void
ctl_rec_row(const struct msg_rec_item *it)
{
	char	  when[32];
	time_t	  t = (time_t)(it->started_at_us / 1000000);
	struct tm tm;

	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", gmtime_r(&t, &tm));
	printf("%-6" PRId64 "  %-20s  %-12s  %4u  %s  %10" PRIu64
	       "  %-9s  %s\n",
	    it->id, it->sid, it->owner[0] != '\0' ? it->owner : "-", it->part,
	    when, it->bytes, ctl_rec_state(it->state),
	    it->cut_reason[0] != '\0' ? it->cut_reason : "-");
}

int
ctl_recordings(int argc, char **argv)
{
	struct msg_rec_item *items;
	size_t		     n, i;

	(void)argc;
	(void)argv;
	items = ctl_rec_fetch(ctl_all_owners(), ctl_owner_name(), &n);
	if (ctl_want_json()) {
		printf("{\"recordings\": [");
		for (i = 0; i < n; i++) {
			printf(i > 0 ? ", " : "");
			ctl_rec_json(&items[i]);
		}
		printf("]}\n");
	} else {
		printf("%-6s  %-20s  %-12s  %4s  %-19s  %10s  %-9s  %s\n", "ID",
		    "SESSION", "OWNER", "PART", "STARTED (UTC)", "BYTES",
		    "STATE", "CUT");
		for (i = 0; i < n; i++)
			ctl_rec_row(&items[i]);
	}
	free(items);
	return (0);
}

/* ---- play -------------------------------------------------------------- */

/* The file of recording id from ptyd, and its size when opened. */
static int
ctl_rec_open(int64_t id, uint64_t *size)
{
	struct msg_recording m;
	struct msg_rec_file  mf;
	struct frame_out     fo;
	struct frame_hdr     h;
	int64_t		     deadline = client_now_ms() + CTL_REC_TIMEOUT_MS;
	int		     fd, file;

	memset(&m, 0, sizeof(m));
	m.all_owners = 1;
	m.id = id;
	frame_out_init(&fo);
	if (msg_encode(&fo, MSG_RECORDING, &m) == -1)
		die("encoding the request");
	if ((fd = client_connect(ctl_socket_path(), deadline)) == -1)
		die(ctl_socket_path());
	if (client_send(fd, &fo, deadline) == -1 ||
	    client_recv_fd(fd, &h, ctl_rec_buf, sizeof(ctl_rec_buf), deadline,
		&file) == -1)
		die("recv");
	close(fd);
	frame_out_free(&fo);
	if (h.type != MSG_REC_FILE || file == -1)
		ctl_rec_refused(&h);
	if (msg_decode(h.type, ctl_rec_buf + PROTO_HDR_LEN, h.len, &mf) == -1)
		die("decoding the reply");
	*size = mf.size;
	return (file);
}

/* The file's first size bytes, read whole (they are checked before any
 * is played, and a recording is text of a bounded size). */
static char *
ctl_rec_slurp(int fd, uint64_t size)
{
	char	*p;
	uint64_t off = 0;
	ssize_t	 n;

	if ((p = malloc(size + 1)) == NULL)
		die("memory");
	while (off < size) {
		n = read(fd, p + off, size - off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			die("reading the recording");
		off += (uint64_t)n;
	}
	p[size] = '\0';
	return (p);
}

static int
ctl_rec_sha_ok(const char *p, uint64_t size, const char *want)
{
	static const char hex[] = "0123456789abcdef";
	struct sha256_ctx ctx;
	uint8_t		  d[SHA256_DIGEST_SIZE];
	char		  got[2 * SHA256_DIGEST_SIZE + 1];
	size_t		  i;

	sha256_init(&ctx);
	sha256_update(&ctx, (size_t)size, (const uint8_t *)p);
	sha256_digest(&ctx, sizeof(d), d);
	for (i = 0; i < sizeof(d); i++) {
		got[2 * i] = hex[d[i] >> 4];
		got[2 * i + 1] = hex[d[i] & 0xf];
	}
	got[sizeof(got) - 1] = '\0';
	return (strcmp(got, want) == 0);
}

static void
ctl_rec_sleep(double s)
{
	struct timespec ts;

	if (s <= 0)
		return;
	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* Each `o` event's text to stdout at the recording's pace. */
static void
ctl_rec_play(char *p, double speed, double idle)
{
	char	   *line, *next;
	json_t	   *ev;
	double	    t, last = 0;
	const char *code;

	next = strchr(p, '\n'); /* the header line */
	for (line = next != NULL ? next + 1 : NULL; line != NULL && *line;
	     line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		ev = json_loads(line, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		if (ev == NULL || !json_is_array(ev) ||
		    json_array_size(ev) < 3 ||
		    !json_is_number(json_array_get(ev, 0)) ||
		    (code = json_string_value(json_array_get(ev, 1))) == NULL ||
		    !json_is_string(json_array_get(ev, 2))) {
			json_decref(ev);
			continue;
		}
		t = json_number_value(json_array_get(ev, 0));
		if (strcmp(code, "o") == 0) {
			ctl_rec_sleep(t - last > idle ? idle / speed :
							(t - last) / speed);
			last = t;
			if (fwrite(json_string_value(json_array_get(ev, 2)), 1,
				json_string_length(json_array_get(ev, 2)),
				stdout) == 0 ||
			    fflush(stdout) == EOF) {
				json_decref(ev);
				die("stdout");
			}
		}
		json_decref(ev);
	}
}

int
ctl_play(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "speed", required_argument, NULL, 's' },
		{ "idle-limit", required_argument, NULL, 'i' },
		{ NULL, 0, NULL, 0 },
	};
	struct msg_rec_item *items, *it = NULL;
	double		     speed = 1, idle = 1e9;
	uint64_t	     size;
	int64_t		     id;
	size_t		     n, i;
	char		    *p, *end;
	int		     ch, fd;

	optind = 0;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (ch == 's' && (speed = strtod(optarg, &end)) > 0 && !*end)
			continue;
		if (ch == 'i' && (idle = strtod(optarg, &end)) >= 0 && !*end)
			continue;
		usage();
	}
	if (optind != argc - 1)
		usage();
	id = strtoll(argv[optind], &end, 10);
	if (*end != '\0' || id <= 0)
		usage();
	items = ctl_rec_fetch(1, "", &n);
	for (i = 0; i < n && it == NULL; i++)
		if (items[i].id == id)
			it = &items[i];
	fd = ctl_rec_open(id, &size);
	p = ctl_rec_slurp(fd, size);
	close(fd);
	/* Every ended recording with a hash (a finished one always has
	 * one; one cut by a crash has none) is checked before it plays. */
	if (it != NULL && it->state != PROTO_REC_RECORDING &&
	    it->sha256[0] != '\0' && !ctl_rec_sha_ok(p, size, it->sha256)) {
		fprintf(stderr,
		    "ptydctl: play: recording %" PRId64 ": its SHA-256 is not"
		    " the one written when it ended: the file was changed;"
		    " not played\n",
		    id);
		exit(1);
	}
	ctl_rec_play(p, speed, idle);
	free(p);
	free(items);
	return (0);
}

/* ---- prune ------------------------------------------------------------- */

int
ctl_prune_recordings(void)
{
	struct msg_rec_pruned mp;
	struct frame_out      fo;
	struct frame_hdr      h;

	frame_out_init(&fo);
	if (msg_encode(&fo, MSG_REC_PRUNE, NULL) == -1)
		die("encoding the request");
	if (client_call(ctl_socket_path(), &fo, &h, ctl_rec_buf,
		sizeof(ctl_rec_buf),
		client_now_ms() + CTL_REC_TIMEOUT_MS) == -1) {
		frame_out_free(&fo);
		if (errno == ENOENT || errno == ECONNREFUSED) {
			printf("recordings: ptyd is not running; it applies"
			       " retention when it starts\n");
			return (0);
		}
		die(ctl_socket_path());
	}
	frame_out_free(&fo);
	if (h.type != MSG_REC_PRUNED)
		ctl_rec_refused(&h);
	if (msg_decode(h.type, ctl_rec_buf + PROTO_HDR_LEN, h.len, &mp) == -1)
		die("decoding the reply");
	printf("removed %u recordings (%" PRIu64 " bytes)\n", mp.removed,
	    mp.bytes);
	return (0);
}
