/*
 * fcgi_guard.c -- the FastCGI records of a request, checked before libfcgi
 * parses them (fcgi_guard.h).
 *
 * Owns: deciding whether libfcgi may read a connection.  libfcgi (2.4.2)
 * trusts its input: ReadParams mallocs nameLen + valueLen + 2, an int sum
 * of two 31-bit lengths that overflows, and its Malloc asserts that malloc
 * succeeded, so one name-value pair aborts the worker process and every
 * stream on it; a GET_VALUES management record (request id 0), read
 * whenever one arrives, even in the middle of STDIN, sprintf's a reply per
 * known name into a 64-byte stack buffer, which repeated names overflow.
 * nginx never sends either, but anything that can connect to the socket
 * can.  So before FCGX_Accept_r, guard_conn peeks (MSG_PEEK: nothing is
 * consumed, libfcgi reads the same bytes afterwards) until the request is
 * whole -- BEGIN_REQUEST for a responder, PARAMS to its empty record, STDIN
 * to its empty record, one request id, nothing else -- and every
 * name-value pair fits within the PARAMS stream and GUARD_PARAMS_MAX.
 * Where libfcgi departs from the specification we refuse what it would
 * read differently from us: padding after BEGIN_REQUEST or after the
 * empty PARAMS record, which it reads as a record header.  After
 * the empty STDIN record libfcgi parses nothing more (bytes it read past
 * it are dropped with the request), and a web server that keeps the
 * connection (FCGI_KEEP_CONN) sends its next request only after our
 * END_REQUEST, to be checked here in turn: libfcgi never parses a byte
 * that was not checked here.
 *
 * Does not own: what the parameters mean (http.c, gate.c), or the socket
 * once checked (pool.c hands it to libfcgi).
 *
 * nginx writes a request in one writev, so usually one recv finds it whole.
 * A request still arriving leaves bytes queued, and poll would report the
 * socket readable at once; we sleep briefly instead (waking for hang-up or
 * shutdown), at most GUARD_PEEKS_MAX times, and peek again.
 */
#include <sys/socket.h>
#include <sys/types.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fcgi_guard.h"
#include "flog.h"

#define GUARD_HDR	    8 /* FCGI_Header */
#define GUARD_VERSION	    1
#define GUARD_BEGIN_REQUEST 1
#define GUARD_PARAMS	    4
#define GUARD_STDIN	    5
#define GUARD_RESPONDER	    1
#define GUARD_KEEP_CONN	    1

/* What a request fits in most of the time: a keystroke is about 1 KiB. */
#define GUARD_SMALL (16 * 1024)
/* The first and the longest sleep while a request arrives. */
#define GUARD_WAIT_MIN_US 50
#define GUARD_WAIT_MAX_US 10000
/* One log line per this long, counting the connections closed between. */
#define GUARD_LOG_MS 10000

enum guard_phase {
	PHASE_BEGIN,
	PHASE_PARAMS,
	PHASE_STDIN
};

enum guard_pair_state {
	PAIR_NAME_LEN,
	PAIR_VALUE_LEN,
	PAIR_NAME,
	PAIR_VALUE
};

/* Where the name-value pair parser is, across PARAMS records. */
struct guard_pairs {
	enum guard_pair_state st;
	int		      nb;  /* bytes left of a 4-byte length */
	uint32_t	      len; /* the length being read */
	uint32_t	      nlen;
	uint32_t	      vlen;
	uint32_t	      left; /* bytes left of the name or value */
};

static pthread_mutex_t guard_log_mtx = PTHREAD_MUTEX_INITIALIZER;
static int64_t	       guard_logged = INT64_MIN / 2;
static unsigned long   guard_quiet;

/*
 * A length's last byte has been read: check it.  A pair longer than the
 * whole PARAMS stream may be can never be valid, and keeps nameLen +
 * valueLen + 2 (libfcgi's int) far below 2^31.
 */
static int
guard_pair_len(struct guard_pairs *g, const char **cause)
{
	if (g->st == PAIR_NAME_LEN) {
		if (g->len == 0) {
			*cause = "empty parameter name";
			return (-1);
		}
		g->nlen = g->len;
		g->st = PAIR_VALUE_LEN;
		return (0);
	}
	g->vlen = g->len;
	if (g->nlen > GUARD_PARAMS_MAX || g->vlen > GUARD_PARAMS_MAX ||
	    g->nlen + g->vlen > GUARD_PARAMS_MAX) {
		*cause = "parameter longer than the PARAMS stream";
		return (-1);
	}
	g->st = PAIR_NAME;
	g->left = g->nlen;
	return (0);
}

/* A name's bytes: "A=B" as a name would shadow parameter A. */
static int
guard_name(const uint8_t *c, size_t n, const char **cause)
{
	const uint64_t ones = 0x0101010101010101ULL;
	const uint64_t highs = 0x8080808080808080ULL;
	uint64_t       v, e;

	/* Eight bytes at a time: a byte is 0 or '=' iff the word, or the
	 * word xor "========", has a zero byte.  Every keystroke's ~30
	 * names pass here; memchr's call costs more than a name. */
	for (; n >= 8; n -= 8, c += 8) {
		memcpy(&v, c, 8);
		e = v ^ (ones * '=');
		if ((((v - ones) & ~v) | ((e - ones) & ~e)) & highs)
			break;
	}
	while (n-- > 0) {
		if (*c == '=' || *c == '\0') {
			*cause = "'=' or NUL in a parameter name";
			return (-1);
		}
		c++;
	}
	return (0);
}

/*
 * The usual case: a whole pair, lengths and all, within this record.  The
 * length of the pair consumed (0 when it is not all here: the byte-wise
 * parser takes it), or -1.
 */
static ssize_t
guard_pair_whole(struct guard_pairs *g, const uint8_t *c, size_t n,
    const char **cause)
{
	size_t	 off = 0;
	uint32_t len[2];
	int	 i;

	for (i = 0; i < 2; i++) {
		if (off < n && (c[off] & 0x80) == 0)
			len[i] = c[off++];
		else if (off + 4 <= n) {
			len[i] = ((uint32_t)(c[off] & 0x7f) << 24) |
			    ((uint32_t)c[off + 1] << 16) |
			    ((uint32_t)c[off + 2] << 8) | c[off + 3];
			off += 4;
		} else
			return (0);
	}
	g->st = PAIR_NAME_LEN;
	g->len = len[0];
	if (guard_pair_len(g, cause) == -1)
		return (-1);
	g->len = len[1];
	if (guard_pair_len(g, cause) == -1)
		return (-1);
	if ((size_t)g->nlen + g->vlen > n - off) {
		g->st = PAIR_NAME_LEN; /* not all here */
		return (0);
	}
	if (guard_name(c + off, g->nlen, cause) == -1)
		return (-1);
	g->st = PAIR_NAME_LEN;
	return ((ssize_t)(off + g->nlen + g->vlen));
}

/* Feed one PARAMS record's content to the pair parser. */
static int
guard_pairs_feed(struct guard_pairs *g, const uint8_t *c, size_t n,
    const char **cause)
{
	size_t	m;
	ssize_t w;
	uint8_t b;

	while (n > 0) {
		if (g->st == PAIR_NAME_LEN && g->nb == 0) {
			if ((w = guard_pair_whole(g, c, n, cause)) == -1)
				return (-1);
			if (w > 0) {
				c += w;
				n -= (size_t)w;
				continue;
			}
		}
		switch (g->st) {
		case PAIR_NAME_LEN:
		case PAIR_VALUE_LEN:
			b = *c++;
			n--;
			if (g->nb == 0 && (b & 0x80) != 0) {
				g->len = b & 0x7f;
				g->nb = 3;
				break;
			}
			if (g->nb == 0)
				g->len = b;
			else {
				g->len = (g->len << 8) | b;
				if (--g->nb > 0)
					break;
			}
			if (guard_pair_len(g, cause) == -1)
				return (-1);
			break;
		case PAIR_NAME:
			m = n < g->left ? n : g->left;
			if (guard_name(c, m, cause) == -1)
				return (-1);
			c += m;
			n -= m;
			g->left -= (uint32_t)m;
			if (g->left == 0) {
				g->st = PAIR_VALUE;
				g->left = g->vlen;
			}
			break;
		case PAIR_VALUE:
			m = n < g->left ? n : g->left;
			c += m;
			n -= m;
			g->left -= (uint32_t)m;
			break;
		}
		if (g->st == PAIR_VALUE && g->left == 0)
			g->st = PAIR_NAME_LEN;
	}
	return (0);
}

/* A record's header, before its body is here: the version, the sizes,
 * and the type and id the phase allows.  NULL if fine, else the cause. */
static const char *
guard_head(const uint8_t *h, size_t end, enum guard_phase phase,
    unsigned rid)
{
	unsigned type = h[1], id = ((unsigned)h[2] << 8) | h[3];
	size_t	 clen = ((size_t)h[4] << 8) | h[5];

	if (h[0] != GUARD_VERSION)
		return ("not FastCGI version 1");
	if (phase != PHASE_STDIN && end > GUARD_PARAMS_MAX)
		return ("params too large");
	if (end > GUARD_MAX)
		return ("request too large");
	if (phase == PHASE_BEGIN) {
		if (type != GUARD_BEGIN_REQUEST)
			return ("first record not BEGIN_REQUEST");
		if (id == 0)
			return ("request id 0");
		if (clen != 8)
			return ("BEGIN_REQUEST body not 8 bytes");
		/* FCGX_Accept_r's SetReaderType forgets the padding of
		 * BEGIN_REQUEST and of the empty PARAMS record and reads it
		 * as the next record: what we checked would not be what
		 * libfcgi parses. */
		if (h[6] != 0)
			return ("padding after BEGIN_REQUEST");
		return (NULL);
	}
	/* Management records (id 0), other requests, ABORT_REQUEST, DATA,
	 * a second BEGIN_REQUEST. */
	if (id != rid)
		return ("record of another request id");
	if (type != (phase == PHASE_PARAMS ? GUARD_PARAMS : GUARD_STDIN))
		return ("record of an unexpected type");
	return (NULL);
}

/* A whole record h, its header checked: what it means in the phase.
 * GUARD_BAD (*why set), GUARD_OK (the end of STDIN: the request is
 * whole), or GUARD_MORE. */
static int
guard_body(struct guard_pairs *g, const uint8_t *h, enum guard_phase *phase,
    unsigned *rid, const char **why)
{
	size_t clen = ((size_t)h[4] << 8) | h[5];

	switch (*phase) {
	case PHASE_BEGIN:
		if ((((unsigned)h[8] << 8) | h[9]) != GUARD_RESPONDER)
			*why = "role not RESPONDER";
		else if ((h[10] & ~GUARD_KEEP_CONN) != 0)
			*why = "unknown BEGIN_REQUEST flags";
		else {
			*rid = ((unsigned)h[2] << 8) | h[3];
			*phase = PHASE_PARAMS;
			return (GUARD_MORE);
		}
		return (GUARD_BAD);
	case PHASE_PARAMS:
		if (clen != 0)
			return (guard_pairs_feed(g, h + GUARD_HDR, clen, why) ==
				    -1 ?
				GUARD_BAD :
				GUARD_MORE);
		if (h[6] != 0)
			*why = "padding after the end of PARAMS";
		else if (g->st != PAIR_NAME_LEN || g->nb != 0)
			*why = "parameter cut short by the end of PARAMS";
		else {
			*phase = PHASE_STDIN;
			return (GUARD_MORE);
		}
		return (GUARD_BAD);
	case PHASE_STDIN:
		return (clen == 0 ? GUARD_OK : GUARD_MORE);
	}
	return (GUARD_BAD);
}

int
guard_check(const uint8_t *p, size_t len, const char **cause)
{
	return (guard_check_end(p, len, cause, NULL));
}

int
guard_check_end(const uint8_t *p, size_t len, const char **cause, size_t *endp)
{
	struct guard_pairs g;
	enum guard_phase   phase = PHASE_BEGIN;
	const uint8_t	  *h;
	const char	  *why = NULL;
	size_t		   off = 0, end;
	unsigned	   rid = 0;
	int		   rv = GUARD_MORE;

	memset(&g, 0, sizeof(g));
	g.st = PAIR_NAME_LEN;
	while (rv == GUARD_MORE && len - off >= GUARD_HDR) {
		h = p + off;
		end = off + GUARD_HDR + (((size_t)h[4] << 8) | h[5]) + h[6];
		if ((why = guard_head(h, end, phase, rid)) != NULL)
			rv = GUARD_BAD;
		else if (end > len)
			break; /* not all here yet */
		else
			rv = guard_body(&g, h, &phase, &rid, &why);
		off = end;
	}
	if (rv == GUARD_BAD && cause != NULL)
		*cause = why;
	if (rv == GUARD_OK && endp != NULL)
		*endp = off;
	return (rv);
}

static int64_t
guard_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

/* One line per GUARD_LOG_MS, however many connections are closed. */
static void
guard_log(const char *cause)
{
	int64_t now = guard_now_ms();

	pthread_mutex_lock(&guard_log_mtx);
	if (now - guard_logged >= GUARD_LOG_MS) {
		flog_warnx("fastcgi connection closed unread: %s "
			   "(%lu more since the last such line)",
		    cause, guard_quiet);
		guard_logged = now;
		guard_quiet = 0;
	} else
		guard_quiet++;
	pthread_mutex_unlock(&guard_log_mtx);
}

/* What guard_conn has peeked at so far. */
struct guard_peek {
	uint8_t	 small[GUARD_SMALL];
	uint8_t *buf, *big; /* small, or big once it filled */
	size_t	 cap, have;
	int	 peeks, hup;
	long	 wait_us; /* the next sleep while a prefix is queued */
};

/*
 * Peek at what is queued (got: recv's result) and judge it.  1 when a
 * whole valid request is queued, -1 to refuse it (*cause set, or NULL
 * for nothing worth logging), 0 to wait for more.
 */
static int
guard_peek_once(int fd, struct guard_peek *gp, ssize_t *got,
    const char **cause)
{
	size_t end;
	int    v;

	do
		*got = recv(fd, gp->buf, gp->cap, MSG_PEEK | MSG_DONTWAIT);
	while (*got == -1 && errno == EINTR);
	if (*got == -1 && errno != EAGAIN && errno != EWOULDBLOCK)
		*cause = "recv failed";
	else if (*got == 0)
		*cause = "closed before a whole request";
	else if (*got > 0 && (size_t)*got > gp->have) {
		gp->have = (size_t)*got;
		v = guard_check_end(gp->buf, gp->have, cause, &end);
		if (v == GUARD_OK && end < gp->have) {
			*cause = "a second request behind the first";
			return (-1);
		}
		if (v != GUARD_MORE)
			return (v == GUARD_OK ? 1 : -1);
		if (gp->have == gp->cap) {
			/* guard_check refuses anything past GUARD_MAX, so
			 * this happens once at most; peek again, whole. */
			if (gp->big != NULL ||
			    (gp->big = malloc(GUARD_MAX)) == NULL) {
				*cause = "no memory for the request";
				return (-1);
			}
			gp->buf = gp->big;
			gp->cap = GUARD_MAX;
			gp->have = 0;
			return (guard_peek_once(fd, gp, got, cause));
		}
		if (++gp->peeks <= GUARD_PEEKS_MAX)
			return (0);
		*cause = "request sent in too many pieces";
	} else if (*got > 0 && gp->hup)
		*cause = "closed in the middle of a request";
	else
		return (0);
	return (-1);
}

/* Wait for more of the request (got: the last peek's result), for
 * shutdown, or for the deadline.  0 to peek again, -1 to give up. */
static int
guard_wait(int fd, int stop_fd, struct guard_peek *gp, ssize_t got,
    int64_t deadline, const char **cause)
{
	struct pollfd	pfd[2];
	struct timespec ts;
	int64_t		now;
	int		n;

	if ((now = guard_now_ms()) >= deadline) {
		*cause = "request too slow";
		return (-1);
	}
	pfd[0].fd = fd;
	pfd[0].revents = 0;
	pfd[1].fd = stop_fd;
	pfd[1].events = POLLIN;
	pfd[1].revents = 0;
	if (got == -1) {
		/* Nothing queued: readable means something came. */
		pfd[0].events = POLLIN;
		n = poll(pfd, 2, (int)(deadline - now));
	} else {
		/* A prefix is queued, so the socket stays readable: sleep,
		 * waking only for hang-up or shutdown. */
		pfd[0].events = POLLRDHUP;
		ts.tv_sec = 0;
		ts.tv_nsec = gp->wait_us * 1000;
		n = ppoll(pfd, 2, &ts, NULL);
		gp->wait_us *= 2;
		if (gp->wait_us > GUARD_WAIT_MAX_US)
			gp->wait_us = GUARD_WAIT_MAX_US;
	}
	if (n == -1 && errno != EINTR) {
		*cause = "poll failed";
		return (-1);
	}
	if (pfd[1].revents != 0) {
		*cause = NULL; /* shutting down: not news */
		return (-1);
	}
	/* One more peek sees all that was sent before it. */
	if (pfd[0].revents & (POLLRDHUP | POLLHUP | POLLERR))
		gp->hup = 1;
	return (0);
}

int
guard_conn(int fd, int stop_fd, int timeout_ms)
{
	struct guard_peek gp;
	const char	 *cause = NULL;
	int64_t		  deadline;
	ssize_t		  got;
	int		  v;

	memset(&gp, 0, sizeof(gp));
	gp.buf = gp.small;
	gp.cap = sizeof(gp.small);
	gp.wait_us = GUARD_WAIT_MIN_US;
	deadline = guard_now_ms() + timeout_ms;
	while ((v = guard_peek_once(fd, &gp, &got, &cause)) == 0)
		if (guard_wait(fd, stop_fd, &gp, got, deadline, &cause) == -1) {
			v = -1;
			break;
		}
	if (v == -1 && cause != NULL)
		guard_log(cause);
	free(gp.big);
	return (v == 1 ? 0 : -1);
}
