/*
 * http.h -- one HTTP request as ptyd.fcgi sees it, whether it came over
 * FastCGI or as plain CGI: params, body, response, and the small parsers
 * for the request line's parts (endpoint, query, content type).
 *
 * Owns: reading params and the body within their bounds, writing status,
 * headers and bodies, and finishing a FastCGI request without libfcgi's
 * two-second close linger.  Does not own: what an endpoint does
 * (handlers.c, stream.c) or the gate (gate.c).
 */
#ifndef FRONT_HTTP_H
#define FRONT_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <fcgiapp.h>
#include <jansson.h>

#include "contract.h"

struct front_conf;

/*
 * Content bytes in one STDOUT record of the stream.  nginx reads an
 * unbuffered response through one buffer of fastcgi_buffer_size (64k in
 * nginx/ptyd-location.conf); a record and its header fit in it whole.
 */
#define HTTP_RECORD_MAX (32 * 1024)

struct req {
	const struct front_conf *conf;
	FCGX_Request		*fcgx;	     /* NULL: plain CGI */
	int			 in_fd;	     /* CGI: request body */
	int			 out_fd;     /* CGI: response */
	int			 stop_fd;    /* readable on shutdown, or -1 */
	size_t			 cgi_left;   /* CGI: CONTENT_LENGTH left */
	int			 status;     /* http_respond's, for metrics */
	/*
	 * Bits: a stream holds a copy of its request for its whole life
	 * (10,000 idle viewers, docs/scaling.md).  One thread at a time
	 * writes a request: its own until the loop takes a copy.
	 */
	unsigned in_eof : 1;	 /* the body has been read to EOF */
	unsigned out_failed : 1; /* a write failed: client gone */
	unsigned out_short : 1;	 /* req_send's last took less than offered */
	unsigned abandon : 1;	 /* close without ending it */
	unsigned no_keep : 1;	 /* end it, then close: not kept */
	unsigned responded : 1;	 /* a status line was written */
	unsigned handed : 1;	 /* the stream loop took it all */
	/* Called once by req_will_last (the server's thread pool). */
	void (*last_cb)(void *);
	void *last_arg;
	/* FastCGI STDOUT records written by req_send, not by libfcgi. */
	uint8_t rec_hdr[8];  /* the record in flight */
	size_t	rec_hdr_off; /* bytes of rec_hdr sent */
	size_t	rec_left;    /* its content still to send */
};

/* A request over FastCGI (params already read by FCGX_Accept_r). */
void req_init_fcgi(struct req *, const struct front_conf *, FCGX_Request *,
    int stop_fd);

/*
 * Say that this request will last (an output stream): the server lets
 * another thread accept connections now instead of after its hand-off
 * delay.  A no-op for CGI and after the first call.
 */
void req_will_last(struct req *);
/* The one request of a CGI process: environment, fd 0 and fd 1. */
void req_init_cgi(struct req *, const struct front_conf *);

/* A param (FastCGI) or environment variable (CGI); NULL if unset. */
const char *req_param(struct req *, const char *);
/*
 * A param that must come once: its value, NULL when absent, or "" when it
 * came more than once.  A request header repeated, or spelled two ways
 * (X-Forwarded-For and X_Forwarded_For both make HTTP_X_FORWARDED_FOR),
 * can reach us as several params, or several environment entries in CGI,
 * in an order that need not be the order on the wire (lighttpd puts the
 * lines of one name together where the first was); req_param, like
 * getenv, sees only the first, which may be the one the client wrote.
 * More than one value of what must be trusted is no value.
 */
const char *req_param_once(struct req *, const char *);

/* Read body bytes: >0, 0 at EOF, -1 on error (ETIMEDOUT, ECONNRESET). */
ssize_t req_read(struct req *, void *, size_t);
/* Read and drop what is left of the body, at most max bytes.  0 when the
 * body ended, -1 if it did not (too long, or an error). */
int req_drain(struct req *, size_t max);

/*
 * Write all of data; -1 marks the request out_failed.  Over FastCGI the
 * bytes wait in libfcgi's buffer and go out when it fills or when the
 * request finishes, in the same write as the end records.
 */
int req_write(struct req *, const void *, size_t);

/*
 * The stream's writer: as much of data[0..len) as the web server takes
 * now, without blocking.  Over FastCGI it writes STDOUT records itself
 * (header and content, HTTP_RECORD_MAX content bytes at most) with one
 * sendmsg straight from the caller's buffer; a record cut short stays in
 * flight, so the caller passes the same bytes again, from the first one
 * not taken, possibly with more after them.  CGI writes block until all
 * is written.  Returns the bytes of data taken (0: the connection is
 * full, poll it for POLLOUT), or -1 when the client has gone.  out_short
 * says whether the connection took less than it was offered (it is full
 * now: no second send to learn EAGAIN).  Do not mix
 * with req_write in one response.
 */
ssize_t req_send(struct req *, const void *, size_t);
/*
 * End a FastCGI response written with req_send, without blocking: an
 * empty STDOUT record and END_REQUEST, from byte *off of those records on
 * (start at 0).  1 when all went, 0 when the connection is full (poll for
 * POLLOUT and call again), -1 when the client has gone or a record of
 * req_send's was cut short (then only closing ends the response).
 */
int req_send_end(struct req *, size_t *off);
/* The descriptor whose hangup means the client has gone (FastCGI
 * connection, or CGI stdout). */
int req_conn_fd(struct req *);
/* The web server keeps the connection for its next request
 * (FCGI_KEEP_CONN). */
int req_kept(const struct req *);

/*
 * Finish a FastCGI request: drain the body, end the streams (libfcgi writes
 * FCGI_END_REQUEST; not when abandon is set), free libfcgi's state without
 * letting it close the connection, and close it ourselves at once (see
 * http.c for why).  Returns the connection instead of closing it when the
 * web server asked to keep it (FCGI_KEEP_CONN) and the request ended
 * cleanly: body read to its end, END_REQUEST written whole.  -1 otherwise.
 * A request handed to the stream loop (handed) only has libfcgi's state
 * freed: the loop owns the connection and its end.
 */
int req_finish_fcgi(struct req *);

const char *http_reason(int status);

/*
 * The frame rule (DESIGN 6) as header lines, each ending "\r\n", into out:
 * Content-Security-Policy with frame-ancestors and default-src 'none' (an
 * answer of ours loads nothing), and X-Frame-Options for browsers that
 * know no CSP where it says the same ('self': SAMEORIGIN, 'none': DENY;
 * none when other origins may frame).  ancestors is the frame_ancestors
 * setting: 'self', 'none', or sources separated by spaces ('self',
 * scheme:, scheme://host[:port][/path], *.host); nothing that could end
 * the directive or the header (";", ",", quotes, controls).  0, or -1
 * with *cause set.
 */
int http_frame_headers(const char *ancestors, char *out, size_t size,
    const char **cause);
/* The rule's default (lib/config.c's frame_ancestors), for an answer
 * before the settings are read. */
#define HTTP_FRAME_DEFAULT_ANCESTORS "'self'"
#define HTTP_FRAME_DEFAULT \
	"Content-Security-Policy: frame-ancestors 'self'; default-src " \
	"'none'\r\nX-Frame-Options: SAMEORIGIN\r\n"

/* A whole response: status, Content-Type, Cache-Control, the frame rule,
 * optional extra header lines (each ending "\r\n"), Content-Length,
 * body. */
int http_respond(struct req *, int status, const char *ctype, const char *cache,
    const char *extra, const char *body, size_t len);
#define HTTP_JSON_TYPE "application/json; charset=utf-8"
/* http_respond's header lines alone, for a body of len bytes the caller
 * then writes with req_write (a recording's file, DESIGN 4). */
int http_respond_head(struct req *, int status, const char *ctype,
    const char *cache, uint64_t len);

/* JSON response with Cache-Control: no-store (a success: 200). */
int http_json(struct req *, int status, json_t *obj, const char *extra);
/*
 * An error answer, all of it from its row of lib/contract.c's table:
 * status, {"error": message}, Retry-After.  Nothing else writes one.
 */
int http_answer(struct req *, enum contract_answer);
/* The same, where ptyd's own words (a row with ptyd_words; NULL or "":
 * none) stand in for the message, and extra header lines (each ending
 * "\r\n", or NULL) go with it. */
int http_answer_with(struct req *, enum contract_answer, const char *words,
    const char *extra);
/* An answer whose body is not an error (health's degraded): the row's
 * status and Retry-After, obj as the body. */
int http_answer_json(struct req *, enum contract_answer, json_t *obj);

/* The last path segment of PATH_INFO, else DOCUMENT_URI (both decoded:
 * a '?' or '#' there is part of it), else REQUEST_URI without its query;
 * trailing slashes ignored.  "" if none. */
void http_endpoint(struct req *, char *out, size_t size);
/* The last segment of a path as sent (REQUEST_URI: cut at '?' or '#'). */
void http_last_segment(const char *path, char *out, size_t size);

/*
 * Look name up in a query string (first occurrence), percent-decoding the
 * value into out.  1 found, 0 absent, -1 malformed or too long.
 */
int http_query_get(const char *query, const char *name, char *out, size_t size);

/* 1 if the media type is application/json (parameters allowed). */
int http_is_json(const char *content_type);

#endif /* FRONT_HTTP_H */
