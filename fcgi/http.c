/*
 * http.c -- request I/O for FastCGI and CGI, responses, and request-line
 * parsing (http.h).
 *
 * Owns: every byte ptyd.fcgi writes to the web server, and how a FastCGI
 * connection ends.  libfcgi's FCGX_Finish_r closes the connection through
 * OS_Close, which half-closes and then waits up to two seconds (poll, with
 * LIBFCGI_OS_CLOSE_POLL_TIMEOUT) for the web server to close first, so that
 * unread request data cannot turn into a reset.  That wait holds a worker
 * for as long as nginx takes to close, and up to 2 s when it does not.  We
 * read the request to its end ourselves (req_drain), so nothing is left
 * unread, end the streams with FCGX_FClose (which writes END_REQUEST), free
 * libfcgi's request with close = 0, and close the socket at once.
 *
 * The output stream does not go through libfcgi at all: libfcgi copies
 * into an 8 KiB buffer and writes one record per fill, a system call (and
 * an nginx wakeup) per 8 KiB.  req_send writes the STDOUT records itself,
 * headers in an iovec beside content that stays in the stream's buffer.
 */
#include <sys/socket.h>
#include <sys/uio.h>

#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "buf.h"
#include "front.h"
#include "http.h"
#include "json.h"
#include "util.h"

#define HTTP_RECORD_HDR	  8 /* FCGI_Header */
#define HTTP_SEND_RECORDS 8 /* records per sendmsg */

/* How much of an over-long body we read and drop so that nginx is never
 * cut off while still sending it (which it reports as a 502). */
#define HTTP_DRAIN_MAX (4 * 1024 * 1024)

void
req_init_fcgi(struct req *r, const struct front_conf *conf, FCGX_Request *q,
    int stop_fd)
{
	memset(r, 0, sizeof(*r));
	r->conf = conf;
	r->fcgx = q;
	r->in_fd = -1;
	r->out_fd = -1;
	r->stop_fd = stop_fd;
}

void
req_will_last(struct req *r)
{
	void (*cb)(void *) = r->last_cb;

	r->last_cb = NULL;
	if (cb != NULL)
		cb(r->last_arg);
}

void
req_init_cgi(struct req *r, const struct front_conf *conf)
{
	const char   *cl;
	char	     *end;
	unsigned long v;

	memset(r, 0, sizeof(*r));
	r->conf = conf;
	r->in_fd = 0;
	r->out_fd = 1;
	r->stop_fd = -1;
	/* CGI: exactly CONTENT_LENGTH bytes of body, never read past it. */
	if ((cl = getenv("CONTENT_LENGTH")) != NULL && cl[0] != '\0') {
		errno = 0;
		v = strtoul(cl, &end, 10);
		if (errno == 0 && *end == '\0' && isdigit((unsigned char)*cl))
			r->cgi_left = v;
	}
	if (r->cgi_left == 0)
		r->in_eof = 1;
}

const char *
req_param(struct req *r, const char *name)
{
	if (r->fcgx != NULL)
		return (FCGX_GetParam(name, r->fcgx->envp));
	return (getenv(name));
}

const char *
req_param_once(struct req *r, const char *name)
{
	char *const *env = r->fcgx != NULL ? r->fcgx->envp : environ;
	size_t	     nlen = strlen(name);
	const char  *v = NULL;

	for (; env != NULL && *env != NULL; env++) {
		if (strncmp(*env, name, nlen) != 0 || (*env)[nlen] != '=')
			continue;
		if (v != NULL)
			return ("");
		v = *env + nlen + 1;
	}
	return (v);
}

ssize_t
req_read(struct req *r, void *buf, size_t len)
{
	ssize_t n;
	int	got;

	if (r->in_eof || len == 0)
		return (0);
	if (r->fcgx != NULL) {
		got = FCGX_GetStr(buf, len > INT32_MAX ? INT32_MAX : (int)len,
		    r->fcgx->in);
		if (got > 0)
			return (got);
		if (FCGX_HasSeenEOF(r->fcgx->in) == EOF &&
		    FCGX_GetError(r->fcgx->in) == 0) {
			r->in_eof = 1;
			return (0);
		}
		errno = ECONNRESET;
		return (-1);
	}
	if (len > r->cgi_left)
		len = r->cgi_left;
	for (;;) {
		n = read(r->in_fd, buf, len);
		if (n == -1 && errno == EINTR)
			continue;
		break;
	}
	if (n == 0) {
		/* The server promised more than it sent. */
		errno = ECONNRESET;
		return (-1);
	}
	if (n > 0 && (r->cgi_left -= (size_t)n) == 0)
		r->in_eof = 1;
	return (n);
}

int
req_drain(struct req *r, size_t max)
{
	char	scratch[4096];
	size_t	total = 0;
	ssize_t n;

	while (!r->in_eof) {
		if (total >= max)
			return (-1);
		if ((n = req_read(r, scratch, sizeof(scratch))) == -1)
			return (-1);
		total += (size_t)n;
	}
	return (0);
}

int
req_write(struct req *r, const void *data, size_t len)
{
	const char *p = data;
	ssize_t	    n;

	if (r->out_failed)
		return (-1);
	if (r->fcgx != NULL) {
		while (len > 0) {
			n = len > INT32_MAX ? INT32_MAX : (ssize_t)len;
			if (FCGX_PutStr(p, (int)n, r->fcgx->out) != (int)n)
				goto fail;
			p += n;
			len -= (size_t)n;
		}
		return (0);
	}
	while (len > 0) {
		n = write(r->out_fd, p, len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			goto fail;
		p += n;
		len -= (size_t)n;
	}
	return (0);
fail:
	r->out_failed = 1;
	return (-1);
}

/* Header of a STDOUT record of len content bytes, without padding. */
static void
http_record_hdr(uint8_t *h, int id, size_t len)
{
	h[0] = 1; /* FCGI_VERSION_1 */
	h[1] = 6; /* FCGI_STDOUT */
	h[2] = (uint8_t)(id >> 8);
	h[3] = (uint8_t)id;
	h[4] = (uint8_t)(len >> 8);
	h[5] = (uint8_t)len;
	h[6] = 0;
	h[7] = 0;
}

/* One sendmsg of req_send: the rest of the record in flight, then new
 * records, their content never copied. */
struct req_batch {
	struct iovec iov[2 * HTTP_SEND_RECORDS + 2];
	uint8_t	     hdr[HTTP_SEND_RECORDS][HTTP_RECORD_HDR];
	size_t	     rlen[HTTP_SEND_RECORDS];
	size_t	     cur; /* bytes of data finishing the record in flight */
	int	     niov, nrec;
};

static void
req_batch_build(struct req *r, struct req_batch *b, const uint8_t *p,
    size_t len)
{
	size_t off = 0, n;

	b->niov = b->nrec = 0;
	b->cur = 0;
	if (r->rec_left > 0) {
		if (r->rec_hdr_off < HTTP_RECORD_HDR) {
			b->iov[b->niov].iov_base = r->rec_hdr + r->rec_hdr_off;
			b->iov[b->niov++].iov_len = HTTP_RECORD_HDR -
			    r->rec_hdr_off;
		}
		off = b->cur = r->rec_left < len ? r->rec_left : len;
		b->iov[b->niov].iov_base = (void *)(uintptr_t)p;
		b->iov[b->niov++].iov_len = b->cur;
	}
	while (off < len && b->nrec < HTTP_SEND_RECORDS) {
		n = len - off < HTTP_RECORD_MAX ? len - off : HTTP_RECORD_MAX;
		http_record_hdr(b->hdr[b->nrec], r->fcgx->requestId, n);
		b->rlen[b->nrec] = n;
		b->iov[b->niov].iov_base = b->hdr[b->nrec];
		b->iov[b->niov++].iov_len = HTTP_RECORD_HDR;
		b->iov[b->niov].iov_base = (void *)(uintptr_t)(p + off);
		b->iov[b->niov++].iov_len = n;
		off += n;
		b->nrec++;
	}
}

/* n bytes of the batch went, in iov order: the record in flight is
 * where they stopped.  Returns the bytes of data that went. */
static size_t
req_batch_sent(struct req *r, const struct req_batch *b, size_t n)
{
	size_t take, taken = 0;
	int    i;

	if (r->rec_left > 0) {
		take = HTTP_RECORD_HDR - r->rec_hdr_off;
		if (n < take) {
			r->rec_hdr_off += n;
			return (0);
		}
		n -= take;
		r->rec_hdr_off = HTTP_RECORD_HDR;
		take = n < b->cur ? n : b->cur;
		r->rec_left -= take;
		taken += take;
		n -= take;
		if (r->rec_left > 0)
			return (taken);
	}
	for (i = 0; i < b->nrec && n > 0; i++) {
		memcpy(r->rec_hdr, b->hdr[i], HTTP_RECORD_HDR);
		r->rec_left = b->rlen[i];
		if (n < HTTP_RECORD_HDR) {
			r->rec_hdr_off = n;
			break;
		}
		n -= HTTP_RECORD_HDR;
		r->rec_hdr_off = HTTP_RECORD_HDR;
		take = n < b->rlen[i] ? n : b->rlen[i];
		r->rec_left -= take;
		taken += take;
		n -= take;
	}
	return (taken);
}

ssize_t
req_send(struct req *r, const void *data, size_t len)
{
	struct req_batch b;
	struct msghdr	 msg;
	ssize_t		 w;
	size_t		 offered;
	int		 i;

	if (r->out_failed)
		return (-1);
	if (r->fcgx == NULL)
		return (req_write(r, data, len) == -1 ? -1 : (ssize_t)len);
	r->out_short = 0;
	if (len == 0)
		return (0);
	req_batch_build(r, &b, data, len);
	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = b.iov;
	msg.msg_iovlen = (size_t)b.niov;
	for (i = 0, offered = 0; i < b.niov; i++)
		offered += b.iov[i].iov_len;
	/* MSG_DONTWAIT: libfcgi needs the descriptor itself blocking. */
	do
		w = sendmsg(r->fcgx->ipcFd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (w == -1 && errno == EINTR);
	if (w == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		r->out_short = 1;
		return (0);
	}
	/* A non-blocking stream socket takes less only when it is full. */
	if (w >= 0 && (size_t)w < offered)
		r->out_short = 1;
	if (w == -1) {
		r->out_failed = 1;
		return (-1);
	}
	return ((ssize_t)req_batch_sent(r, &b, (size_t)w));
}

int
req_send_end(struct req *r, size_t *off)
{
	/* An empty STDOUT (the stream's end), then END_REQUEST: appStatus
	 * 0, FCGI_REQUEST_COMPLETE. */
	uint8_t rec[3 * HTTP_RECORD_HDR];
	ssize_t w;

	if (r->rec_left != 0 || r->out_failed)
		return (-1);
	http_record_hdr(rec, r->fcgx->requestId, 0);
	memcpy(rec + HTTP_RECORD_HDR, rec, HTTP_RECORD_HDR);
	rec[HTTP_RECORD_HDR + 1] = 3; /* FCGI_END_REQUEST */
	rec[HTTP_RECORD_HDR + 5] = HTTP_RECORD_HDR;
	memset(rec + 2 * HTTP_RECORD_HDR, 0, HTTP_RECORD_HDR);
	while (*off < sizeof(rec)) {
		w = send(r->fcgx->ipcFd, rec + *off, sizeof(rec) - *off,
		    MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w == -1 && errno == EINTR)
			continue;
		if (w == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return (0);
		if (w <= 0) {
			r->out_failed = 1;
			return (-1);
		}
		*off += (size_t)w;
	}
	return (1);
}

int
req_conn_fd(struct req *r)
{
	return (r->fcgx != NULL ? r->fcgx->ipcFd : r->out_fd);
}

int
req_kept(const struct req *r)
{
	return (r->fcgx != NULL && r->fcgx->keepConnection);
}

int
req_finish_fcgi(struct req *r)
{
	FCGX_Request *q = r->fcgx;
	char	      scratch[512];
	ssize_t	      n;
	int	      fd, drained, keep, ended = 0;

	if (r->handed) {
		q->ipcFd = -1;
		FCGX_Free(q, 0);
		return (-1);
	}
	drained = req_drain(r, HTTP_DRAIN_MAX) == 0;
	/*
	 * err then out: the last stream closed carries FCGI_END_REQUEST, in
	 * one write with whatever response libfcgi still holds.  Not after
	 * a record of req_send's cut short (the client went, or shutdown):
	 * the end records would be read as its content; closing ends the
	 * response instead.  Nor for a response abandoned because the web
	 * server takes nothing: the write could wait for its send timeout.
	 */
	if (r->rec_left == 0 && !r->abandon) {
		ended = FCGX_FClose(q->err) == 0;
		ended = FCGX_FClose(q->out) == 0 && ended;
	}
	/* libfcgi set keepConnection from BEGIN_REQUEST's flags. */
	keep = req_kept(r) && ended && drained && !r->out_failed && !r->no_keep;
	fd = q->ipcFd;
	q->ipcFd = -1;
	FCGX_Free(q, 0);
	if (fd == -1 || keep)
		return (fd);
	if (!drained || r->no_keep) {
		/*
		 * Data may still be on its way, or be here unread (no_keep:
		 * the web server's next request); half-close so the web server
		 * sees our response end, take what is already here, and close
		 * without waiting for it: no reset that could cut it short.
		 */
		shutdown(fd, SHUT_WR);
		do
			n = recv(fd, scratch, sizeof(scratch), MSG_DONTWAIT);
		while (n > 0);
	}
	close(fd);
	return (-1);
}

const char *
http_reason(int status)
{
	switch (status) {
	case 200:
		return ("OK");
	case 400:
		return ("Bad Request");
	case 403:
		return ("Forbidden");
	case 404:
		return ("Not Found");
	case 405:
		return ("Method Not Allowed");
	case 413:
		return ("Payload Too Large");
	case 415:
		return ("Unsupported Media Type");
	case 429:
		return ("Too Many Requests");
	case 500:
		return ("Internal Server Error");
	case 503:
		return ("Service Unavailable");
	}
	return ("Unknown");
}

/* A source of frame-ancestors other than a keyword: scheme:, a host with
 * its scheme, port and path, a wildcard label; no character that could
 * end the source, the directive or the header. */
static int
http_frame_source_ok(const char *s, size_t len)
{
	size_t i;

	if (len == 0)
		return (0);
	for (i = 0; i < len; i++) {
		if (!isalnum((unsigned char)s[i]) &&
		    strchr("-._~:/*[]%+", s[i]) == NULL)
			return (0);
	}
	return (1);
}

int
http_frame_headers(const char *ancestors, char *out, size_t size,
    const char **cause)
{
	const char *p = ancestors, *xfo = "";
	char	    list[512];
	size_t	    len, used = 0, n = 0, none = 0, self = 0;
	int	    rv;

	*cause = "frame_ancestors: 'self', 'none', or origins separated by "
		 "spaces (https://portal.example.com)";
	if (ancestors == NULL)
		return (-1);
	/* The sources, one space between each. */
	for (; *(p += strspn(p, " ")) != '\0'; p += len) {
		len = strcspn(p, " ");
		if (len == 6 && strncmp(p, "'none'", 6) == 0)
			none++;
		else if (len == 6 && strncmp(p, "'self'", 6) == 0)
			self++;
		else if (!http_frame_source_ok(p, len))
			return (-1);
		if (used + len + 2 > sizeof(list)) {
			*cause = "frame_ancestors: too long";
			return (-1);
		}
		if (n++ > 0)
			list[used++] = ' ';
		memcpy(list + used, p, len);
		used += len;
	}
	list[used] = '\0';
	/* 'none' stands alone, or it would say nothing at all. */
	if (n == 0 || (none > 0 && n > 1))
		return (-1);
	if (none > 0)
		xfo = "X-Frame-Options: DENY\r\n";
	else if (self == n)
		xfo = "X-Frame-Options: SAMEORIGIN\r\n";
	rv = snprintf(out, size,
	    "Content-Security-Policy: frame-ancestors %s; default-src 'none'"
	    "\r\n%s",
	    list, xfo);
	if (rv < 0 || (size_t)rv >= size) {
		*cause = "frame_ancestors: too long";
		return (-1);
	}
	return (0);
}

/* A response's header lines up to the blank line, into b. */
static void
http_head(struct buf *b, const struct req *r, int status, const char *ctype,
    const char *cache, const char *extra, uint64_t len)
{
	buf_adds(b, "Status: ");
	buf_addu64(b, (uint64_t)status);
	buf_addc(b, ' ');
	buf_adds(b, http_reason(status));
	buf_adds(b, "\r\nContent-Type: ");
	buf_adds(b, ctype);
	buf_adds(b, "\r\nCache-Control: ");
	buf_adds(b, cache);
	buf_adds(b, "\r\n");
	buf_adds(b,
	    r->conf != NULL ? r->conf->frame_headers : HTTP_FRAME_DEFAULT);
	if (extra != NULL)
		buf_adds(b, extra);
	buf_adds(b, "Content-Length: ");
	buf_addu64(b, len);
	buf_adds(b, "\r\n\r\n");
}

/* Write what b holds as the response's start. */
static int
http_send(struct req *r, int status, struct buf *b)
{
	int rv;

	r->responded = 1;
	r->status = status;
	rv = b->failed ? -1 : req_write(r, b->p, b->len);
	buf_free(b);
	return (rv);
}

int
http_respond(struct req *r, int status, const char *ctype, const char *cache,
    const char *extra, const char *body, size_t len)
{
	struct buf b;

	buf_init(&b, len + 4096);
	http_head(&b, r, status, ctype, cache, extra, len);
	buf_add(&b, body, len);
	return (http_send(r, status, &b));
}

int
http_respond_head(struct req *r, int status, const char *ctype,
    const char *cache, uint64_t len)
{
	struct buf b;

	buf_init(&b, 4096);
	http_head(&b, r, status, ctype, cache, NULL, len);
	return (http_send(r, status, &b));
}

/* The row's Retry-After, as a header line, into extra ("" if none). */
static void
http_retry_after(const struct contract_error *e, char *extra, size_t size)
{
	extra[0] = '\0';
	if (e->retry_after > 0)
		snprintf(extra, size, "Retry-After: %d\r\n", e->retry_after);
}

int
http_json(struct req *r, int status, json_t *obj, const char *extra)
{
	char *s;
	int   rv;

	if (obj == NULL || (s = json_dump(obj)) == NULL)
		return (http_answer(r, CONTRACT_A_INTERNAL));
	rv = http_respond(r, status, HTTP_JSON_TYPE, "no-store", extra, s,
	    strlen(s));
	free(s);
	return (rv);
}

int
http_answer_json(struct req *r, enum contract_answer a, json_t *obj)
{
	const struct contract_error *e = contract_answer(a);
	char			     extra[64];

	http_retry_after(e, extra, sizeof(extra));
	return (http_json(r, e->status, obj, extra));
}

int
http_answer_with(struct req *r, enum contract_answer a, const char *words,
    const char *extra)
{
	const struct contract_error *e = contract_answer(a);
	const char		    *msg = e->message;
	struct buf		     body;
	char			     retry[64], hdrs[256];
	int			     rv;

	if (e->ptyd_words && words != NULL && words[0] != '\0')
		msg = words;
	http_retry_after(e, retry, sizeof(retry));
	snprintf(hdrs, sizeof(hdrs), "%s%s", retry, extra != NULL ? extra : "");
	buf_init(&body, 4096);
	buf_adds(&body, "{\"error\": \"");
	json_escape(&body, msg, strlen(msg));
	buf_adds(&body, "\"}");
	if (body.failed)
		rv = a == CONTRACT_A_INTERNAL ?
		    -1 :
		    http_answer(r, CONTRACT_A_INTERNAL);
	else
		rv = http_respond(r, e->status, HTTP_JSON_TYPE, "no-store",
		    hdrs, body.p, body.len);
	buf_free(&body);
	return (rv);
}

int
http_answer(struct req *r, enum contract_answer a)
{
	return (http_answer_with(r, a, NULL, NULL));
}

/* The last segment of path's first end bytes, trailing slashes ignored. */
static void
http_segment(const char *path, size_t end, char *out, size_t size)
{
	size_t start, len;

	while (end > 0 && path[end - 1] == '/')
		end--;
	start = end;
	while (start > 0 && path[start - 1] != '/')
		start--;
	len = end - start;
	if (len >= size)
		return;
	memcpy(out, path + start, len);
	out[len] = '\0';
}

void
http_last_segment(const char *path, char *out, size_t size)
{
	out[0] = '\0';
	if (path != NULL)
		http_segment(path, strcspn(path, "?#"), out, size);
}

/*
 * PATH_INFO and DOCUMENT_URI are decoded and hold no query: a '?' or '#'
 * in them was sent escaped (output%3F), and is part of the segment, as it
 * was for the web server's locations.  Cutting there would route to the
 * stream a path that missed the stream's own location.
 */
void
http_endpoint(struct req *r, char *out, size_t size)
{
	const char *p;

	out[0] = '\0';
	if (((p = req_param(r, "PATH_INFO")) != NULL && p[0] != '\0') ||
	    ((p = req_param(r, "DOCUMENT_URI")) != NULL && p[0] != '\0'))
		http_segment(p, strlen(p), out, size);
	else
		http_last_segment(req_param(r, "REQUEST_URI"), out, size);
}

int
http_query_get(const char *query, const char *name, char *out, size_t size)
{
	const char *p, *end, *eq;
	size_t	    nlen = strlen(name), o;
	int	    hi, lo;

	if (query == NULL)
		return (0);
	for (p = query; *p != '\0'; p = *end == '&' ? end + 1 : end) {
		end = p + strcspn(p, "&");
		eq = memchr(p, '=', (size_t)(end - p));
		if ((eq != NULL ? (size_t)(eq - p) : (size_t)(end - p)) !=
			nlen ||
		    strncmp(p, name, nlen) != 0)
			continue;
		o = 0;
		for (p = eq != NULL ? eq + 1 : end; p < end; p++) {
			if (o + 1 >= size)
				return (-1);
			if (*p == '+')
				out[o++] = ' ';
			else if (*p == '%') {
				if (end - p < 3 ||
				    (hi = util_hexval(p[1])) < 0 ||
				    (lo = util_hexval(p[2])) < 0 ||
				    (hi == 0 && lo == 0))
					return (-1);
				out[o++] = (char)(hi << 4 | lo);
				p += 2;
			} else
				out[o++] = *p;
		}
		out[o] = '\0';
		return (1);
	}
	return (0);
}

int
http_is_json(const char *ct)
{
	static const char type[] = "application/json";
	size_t		  len = sizeof(type) - 1;

	if (ct == NULL)
		return (0);
	while (*ct == ' ' || *ct == '\t')
		ct++;
	if (strncasecmp(ct, type, len) != 0)
		return (0);
	ct += len;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	return (*ct == '\0' || *ct == ';');
}
