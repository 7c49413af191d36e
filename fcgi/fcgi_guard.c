/*
 * fcgi_guard.c -- the FastCGI records that open a connection are valid
 * before libfcgi sees them (fcgi_guard.h).
 *
 * The check is strict where nginx, Apache and lighttpd are plain: version
 * 1; one BEGIN_REQUEST (id not 0, body of 8 bytes);
 * then PARAMS records of that id, whose contents concatenated are whole
 * name-value pairs, ended by an empty PARAMS record.  Anything else before
 * that end (STDIN, ABORT, another id, a second BEGIN, management records
 * such as GET_VALUES) is refused: no web server sends it, and libfcgi's
 * handling of it is where the asserts are (and, for GET_VALUES, a leak of
 * each request's parameters that the fuzzer found: fuzz_fcgi.c).
 * Every length is bounded by FCGI_GUARD_MAX, so no sum can overflow.
 */
#include <sys/socket.h>

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "fcgi_guard.h"
#include "flog.h"

#define FG_HDR			8
#define FG_VERSION		1
#define FG_BEGIN_REQUEST	1
#define FG_PARAMS		4

/* Name-value pairs, fed in pieces (a pair may span PARAMS records). */
struct fg_pairs {
	int		phase;		/* 0 name length, 1 value length, 2 body */
	uint8_t		lb[4];		/* the length being read */
	unsigned int	lbn;
	uint32_t	nlen;
	uint64_t	skip;		/* body bytes still to pass */
};

/* Feed n bytes.  0, or -1 with *why. */
static int
fg_pairs_feed(struct fg_pairs *p, const uint8_t *b, size_t n,
    const char **why)
{
	uint32_t	v;
	size_t		i = 0, take;

	while (i < n) {
		if (p->phase == 2) {
			take = n - i < p->skip ? n - i : (size_t)p->skip;
			i += take;
			p->skip -= take;
			if (p->skip == 0)
				p->phase = 0;
			continue;
		}
		p->lb[p->lbn++] = b[i++];
		if (p->lbn == 1 && (p->lb[0] & 0x80) == 0)
			v = p->lb[0];
		else if (p->lbn == 4)
			v = ((uint32_t)(p->lb[0] & 0x7f) << 24) |
			    ((uint32_t)p->lb[1] << 16) |
			    ((uint32_t)p->lb[2] << 8) | p->lb[3];
		else
			continue;
		p->lbn = 0;
		if (v > FCGI_GUARD_MAX) {
			*why = "a parameter's length is past the limit";
			return (-1);
		}
		if (p->phase == 0) {
			p->nlen = v;
			p->phase = 1;
		} else {
			p->skip = (uint64_t)p->nlen + v;
			p->phase = p->skip > 0 ? 2 : 0;
		}
	}
	return (0);
}

static int
fg_pairs_whole(const struct fg_pairs *p)
{
	return (p->phase == 0 && p->lbn == 0);
}

enum fcgi_guard
fcgi_guard_check(const uint8_t *buf, size_t len, const char **why)
{
	struct fg_pairs	 params;
	size_t		 pos = 0, clen, plen;
	unsigned int	 type, id, reqid = 0;
	int		 begun = 0;

	*why = "";
	memset(&params, 0, sizeof(params));
	while (len - pos >= FG_HDR) {
		type = buf[pos + 1];
		id = (unsigned int)buf[pos + 2] << 8 | buf[pos + 3];
		clen = (size_t)buf[pos + 4] << 8 | buf[pos + 5];
		plen = buf[pos + 6];
		if (buf[pos] != FG_VERSION) {
			*why = "not FastCGI version 1";
			return (FCGI_GUARD_BAD);
		}
		if (pos + FG_HDR + clen + plen > FCGI_GUARD_MAX) {
			*why = "the parameters are too large";
			return (FCGI_GUARD_BAD);
		}
		switch (type) {
		case FG_BEGIN_REQUEST:
			if (begun || id == 0 || clen != 8) {
				*why = "a bad BEGIN_REQUEST";
				return (FCGI_GUARD_BAD);
			}
			break;
		case FG_PARAMS:
			if (!begun || id != reqid) {
				*why = "PARAMS without its BEGIN_REQUEST";
				return (FCGI_GUARD_BAD);
			}
			break;
		default:
			*why = "a record before the parameters ended";
			return (FCGI_GUARD_BAD);
		}
		if (len - pos - FG_HDR < clen + plen)
			return (FCGI_GUARD_MORE);
		switch (type) {
		case FG_BEGIN_REQUEST:
			begun = 1;
			reqid = id;
			break;
		case FG_PARAMS:
			if (clen == 0) {
				if (!fg_pairs_whole(&params)) {
					*why = "the parameters end in a "
					    "cut pair";
					return (FCGI_GUARD_BAD);
				}
				return (FCGI_GUARD_OK);
			}
			if (fg_pairs_feed(&params, buf + pos + FG_HDR, clen,
			    why) == -1)
				return (FCGI_GUARD_BAD);
			break;
		}
		pos += FG_HDR + clen + plen;
	}
	if (len >= FCGI_GUARD_MAX) {
		*why = "the parameters are too large";
		return (FCGI_GUARD_BAD);
	}
	return (FCGI_GUARD_MORE);
}

static void
fg_nap(int64_t ms)
{
	struct timespec	ts;

	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

int
fcgi_guard_peek(int fd, int64_t deadline_ms, const char **why)
{
	uint8_t		 small[4096], *big = NULL, *buf = small;
	size_t		 cap = sizeof(small);
	ssize_t		 n, last = -1;
	struct pollfd	 pfd;
	int64_t		 left, nap = 1;
	int		 rv = -1, hup = 0;

	for (;;) {
		n = recv(fd, buf, cap, MSG_PEEK | MSG_DONTWAIT);
		if (n == 0) {
			*why = "closed before its parameters ended";
			break;
		}
		if (n == -1 && errno != EAGAIN && errno != EINTR) {
			*why = "unreadable";
			break;
		}
		if (n > 0) {
			switch (fcgi_guard_check(buf, (size_t)n, why)) {
			case FCGI_GUARD_OK:
				rv = 0;
				goto out;
			case FCGI_GUARD_BAD:
				goto out;
			case FCGI_GUARD_MORE:
				break;
			}
			if ((size_t)n == cap && big == NULL) {
				if ((big = malloc(FCGI_GUARD_MAX)) == NULL) {
					*why = "out of memory";
					goto out;
				}
				buf = big;
				cap = FCGI_GUARD_MAX;
				continue;
			}
		}
		if ((left = deadline_ms - client_now_ms()) <= 0) {
			*why = "too slow to send its parameters";
			break;
		}
		if (n <= 0) {
			/* Nothing yet: wait for the first bytes. */
			pfd.fd = fd;
			pfd.events = POLLIN;
			if (poll(&pfd, 1, left > 1000 ? 1000 : (int)left) == -1 &&
			    errno != EINTR) {
				*why = "unreadable";
				break;
			}
			continue;
		}
		/*
		 * Part of the parameters is here.  poll() would report the
		 * bytes already peeked at as readable again, so wait for the
		 * rest with short naps (web servers send the parameters in one
		 * or two writes: this is rare, and bounded by the deadline).
		 * A peer that has shut down its side sends nothing more, and
		 * recv(MSG_PEEK) shows no EOF while its bytes are unread: ask
		 * poll for the hangup itself.
		 */
		if (n == last && !hup) {
			pfd.fd = fd;
			pfd.events = POLLRDHUP;
			pfd.revents = 0;
			/* Look once more: bytes may have come with the hangup. */
			if (poll(&pfd, 1, 0) == 1 &&
			    (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
				hup = 1;
				continue;
			}
		} else if (n == last) {
			*why = "closed before its parameters ended";
			break;
		}
		nap = n == last ? (nap < 64 ? nap * 2 : 64) : 1;
		last = n;
		fg_nap(nap < left ? nap : left);
	}
out:
	free(big);
	return (rv);
}

void
fcgi_guard_log(const char *why)
{
	static int64_t		next_ms;
	static unsigned long	refused;
	unsigned long		n;
	int64_t			now = client_now_ms(), due;

	n = __atomic_add_fetch(&refused, 1, __ATOMIC_RELAXED);
	due = __atomic_load_n(&next_ms, __ATOMIC_RELAXED);
	if (now >= due && __atomic_compare_exchange_n(&next_ms, &due,
	    now + 10000, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		flog_warnx("refused a FastCGI connection: %s (%lu refused "
		    "since start)", why, n);
}
