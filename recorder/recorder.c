/*
 * recorder.c -- ptyd-recorder: writes ptyd's recordings (DESIGN 4).
 *
 * ptyd starts it (ptyd/record.c) with one end of a SOCK_SEQPACKET pair
 * as fd 3 and its recordings folder as fd 4, and sends what each
 * recorded terminal does (recwire.h).  Here every write may block on a
 * slow or full disk; ptyd never waits for it: that is why this is a
 * process of its own.
 *
 * Owns: the recording files (created under fd 4 only, by a name of
 * digits, O_EXCL|O_NOFOLLOW, 0600), their asciicast lines (cast.c),
 * their SHA-256 (nettle) over exactly the bytes in the file, and the
 * REC_END that tells ptyd each file's end.  A line is hashed once it is
 * written whole; a write that fails (ENOSPC, EDQUOT, EIO, EFBIG) is
 * undone (truncated to the last whole line), a `cut: disk` line written
 * where it still fits, and the file ended.  When ptyd goes (EOF), every
 * open file ends with `cut: takeover` and the recorder exits.  Does not
 * own: the rows, the policy or retention (ptyd).
 */
#include <sys/prctl.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nettle/sha2.h>

#include "buf.h"
#include "cast.h"
#include "harden.h"
#include "recwire.h"

#define RECORDER_LINE_MAX (8 * 1024 * 1024) /* one line's text at most */

struct recfile {
	TAILQ_ENTRY(recfile) entry;
	int64_t		  id;
	int		  fd;
	uint64_t	  bytes; /* whole lines written */
	uint64_t	  last_t;
	struct sha256_ctx sha;
	struct cast	  cast;
};
TAILQ_HEAD(recfiles, recfile);

static struct recfiles recorder_files = TAILQ_HEAD_INITIALIZER(recorder_files);
static struct buf      recorder_line;

static void __attribute__((format(printf, 1, 2)))
recorder_warnx(const char *fmt, ...)
{
	char	msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	dprintf(STDERR_FILENO, "ptyd-recorder: %s\n", msg);
}

static struct recfile *
recorder_find(int64_t id)
{
	struct recfile *f;

	TAILQ_FOREACH (f, &recorder_files, entry)
		if (f->id == id)
			return (f);
	return (NULL);
}

/* REC_END to ptyd.  Blocking: ptyd reads its end of the pair always. */
static void
recorder_tell(int64_t id, int state, uint64_t bytes, const uint8_t *sha,
    const char *reason)
{
	uint8_t m[REC_HDR_LEN + 1 + 8 + SHA256_DIGEST_SIZE + REC_REASON_MAX];
	size_t	rlen = strnlen(reason, REC_REASON_MAX), len;

	len = 1 + 8 + SHA256_DIGEST_SIZE + rlen;
	recwire_hdr(m, REC_END, (uint32_t)len, id);
	m[REC_HDR_LEN] = (uint8_t)state;
	recwire_put(m + REC_HDR_LEN + 1, bytes, 8);
	if (sha != NULL)
		memcpy(m + REC_HDR_LEN + 9, sha, SHA256_DIGEST_SIZE);
	else
		memset(m + REC_HDR_LEN + 9, 0, SHA256_DIGEST_SIZE);
	memcpy(m + REC_HDR_LEN + 9 + SHA256_DIGEST_SIZE, reason, rlen);
	while (send(REC_SOCK_FD, m, REC_HDR_LEN + len, MSG_NOSIGNAL) == -1 &&
	    errno == EINTR)
		;
}

/*
 * Write one whole line.  0, or -1: nothing of it stays (a piece written
 * is truncated away, so the file is whole lines and the hash is of it).
 */
static int
recorder_put(struct recfile *f, const struct buf *line)
{
	size_t	off = 0;
	ssize_t n;
	int	err;

	if (line->failed)
		return (-1);
	while (off < line->len) {
		n = write(f->fd, line->p + off, line->len - off);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		err = n == 0 ? ENOSPC : errno;
		if (off > 0 && ftruncate(f->fd, (off_t)f->bytes) == 0)
			(void)lseek(f->fd, (off_t)f->bytes, SEEK_SET);
		errno = err;
		return (-1);
	}
	sha256_update(&f->sha, line->len, (const uint8_t *)line->p);
	f->bytes += line->len;
	return (0);
}

/* The file's end: state and reason told to ptyd, the file closed. */
static void
recorder_end(struct recfile *f, const char *reason)
{
	uint8_t digest[SHA256_DIGEST_SIZE];

	if (reason[0] != '\0') {
		buf_reset(&recorder_line);
		if (cast_finish(&f->cast, &recorder_line, f->last_t) == 0 &&
		    cast_cut(&recorder_line, f->last_t, reason) == 0)
			(void)recorder_put(f, &recorder_line);
	}
	sha256_digest(&f->sha, sizeof(digest), digest);
	if (close(f->fd) == -1 && reason[0] == '\0')
		reason = "disk"; /* NFS and friends report late */
	recorder_tell(f->id, reason[0] == '\0' ? REC_END_FINISHED : REC_END_CUT,
	    f->bytes, digest, reason);
	TAILQ_REMOVE(&recorder_files, f, entry);
	cast_free(&f->cast);
	free(f);
}

/* A line to f, or its cut if the disk refuses it. */
static void
recorder_line_out(struct recfile *f)
{
	if (recorder_put(f, &recorder_line) == 0)
		return;
	recorder_warnx("recording %lld: %s: cut", (long long)f->id,
	    recorder_line.failed ? "line too long" : strerror(errno));
	recorder_end(f, "disk");
}

/* Only names ptyd makes: digits, '-', digits, ".cast". */
static int
recorder_name_ok(const char *s)
{
	size_t i = 0, a, b;

	for (a = i; s[i] >= '0' && s[i] <= '9'; i++)
		;
	if (i == a || s[i++] != '-')
		return (0);
	for (b = i; s[i] >= '0' && s[i] <= '9'; i++)
		;
	return (i > b && strcmp(s + i, ".cast") == 0);
}

static void
recorder_open(int64_t id, const uint8_t *p, size_t n)
{
	struct recfile *f;
	char		name[REC_NAME_MAX + 1];
	int		fd;

	if (n < 12 || n - 12 > REC_NAME_MAX || recorder_find(id) != NULL)
		return;
	memcpy(name, p + 12, n - 12);
	name[n - 12] = '\0';
	if (!recorder_name_ok(name)) {
		recorder_tell(id, REC_END_CUT, 0, NULL, "name");
		return;
	}
	fd = openat(REC_DIR_FD, name,
	    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd == -1) {
		recorder_warnx("%s: %s", name, strerror(errno));
		recorder_tell(id, REC_END_CUT, 0, NULL, "disk");
		return;
	}
	f = calloc(1, sizeof(*f));
	if (f == NULL) {
		close(fd);
		recorder_tell(id, REC_END_CUT, 0, NULL, "memory");
		return;
	}
	f->id = id;
	f->fd = fd;
	sha256_init(&f->sha);
	cast_init(&f->cast);
	TAILQ_INSERT_TAIL(&recorder_files, f, entry);
	buf_reset(&recorder_line);
	(void)cast_header(&recorder_line, (unsigned int)recwire_get(p, 2),
	    (unsigned int)recwire_get(p + 2, 2),
	    (int64_t)recwire_get(p + 4, 8));
	recorder_line_out(f);
}

/* One message of a recording that is open. */
static void
recorder_event(struct recfile *f, enum rec_type type, const uint8_t *p,
    size_t n)
{
	char reason[REC_REASON_MAX + 1];

	if (n < 8)
		return;
	f->last_t = recwire_get(p, 8);
	p += 8;
	n -= 8;
	buf_reset(&recorder_line);
	switch (type) {
	case REC_OUT:
		if (cast_output(&f->cast, &recorder_line, f->last_t, p, n) ==
			0 &&
		    recorder_line.len == 0)
			return;
		break;
	case REC_RESIZE:
		if (n < 4)
			return;
		(void)cast_resize(&recorder_line, f->last_t,
		    (unsigned int)recwire_get(p, 2),
		    (unsigned int)recwire_get(p + 2, 2));
		break;
	case REC_INPUT:
		(void)cast_input(&recorder_line, f->last_t, p, n);
		break;
	case REC_CLOSE:
		n = n > REC_REASON_MAX ? REC_REASON_MAX : n;
		memcpy(reason, p, n);
		reason[n] = '\0';
		if (reason[0] == '\0' &&
		    cast_finish(&f->cast, &recorder_line, f->last_t) == 0 &&
		    recorder_line.len > 0 &&
		    recorder_put(f, &recorder_line) == -1)
			snprintf(reason, sizeof(reason), "disk");
		recorder_end(f, reason);
		return;
	default:
		return;
	}
	recorder_line_out(f);
}

static void
recorder_message(const uint8_t *m, size_t n)
{
	struct recfile *f;
	int64_t		id;
	size_t		len;

	if (n < REC_HDR_LEN)
		return;
	len = (size_t)recwire_get(m + 4, 4);
	id = (int64_t)recwire_get(m + 8, 8);
	if (len != n - REC_HDR_LEN)
		return; /* malformed: ignored whole */
	if (m[0] == REC_OPEN) {
		recorder_open(id, m + REC_HDR_LEN, len);
		return;
	}
	/* A recording already ended here (a disk cut) takes nothing more. */
	if ((f = recorder_find(id)) != NULL)
		recorder_event(f, (enum rec_type)m[0], m + REC_HDR_LEN, len);
}

/* What ptyd's end must be before anything is read from it. */
static void
recorder_setup(void)
{
	struct stat st;

	if (fstat(REC_SOCK_FD, &st) == -1 || !S_ISSOCK(st.st_mode) ||
	    fstat(REC_DIR_FD, &st) == -1 || !S_ISDIR(st.st_mode)) {
		recorder_warnx("started without ptyd's descriptors");
		exit(2);
	}
	/* Nothing inherited beyond the two: ptyd's are CLOEXEC, but a
	 * careless parent's need not be. */
	(void)close_range(REC_DIR_FD + 1, ~0U, 0);
	(void)fcntl(REC_SOCK_FD, F_SETFD, FD_CLOEXEC);
	(void)fcntl(REC_DIR_FD, F_SETFD, FD_CLOEXEC);
	if (harden_nodump() == -1 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1) {
		recorder_warnx("hardening: %s", strerror(errno));
		exit(2);
	}
	/* EFBIG from write, not a signal; a gone ptyd is EOF, not one. */
	(void)signal(SIGXFSZ, SIG_IGN);
	(void)signal(SIGPIPE, SIG_IGN);
	umask(077);
	buf_init(&recorder_line, RECORDER_LINE_MAX);
}

int
main(int argc, char **argv)
{
	static uint8_t	m[REC_MSG_MAX + 1];
	struct recfile *f;
	ssize_t		n;

	(void)argc;
	(void)argv;
	harden_env(&harden_daemon_env);
	recorder_setup();
	for (;;) {
		n = recv(REC_SOCK_FD, m, sizeof(m), 0);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if ((size_t)n <= REC_MSG_MAX)
			recorder_message(m, (size_t)n);
	}
	/* ptyd is gone (a crash, an upgrade): the next one starts new
	 * parts; these end here, saying why. */
	while ((f = TAILQ_FIRST(&recorder_files)) != NULL)
		recorder_end(f, "takeover");
	buf_free(&recorder_line);
	return (0);
}
