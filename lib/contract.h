/*
 * contract.h -- the rules of DESIGN 2 that ptyd and ptyd.fcgi both apply,
 * written once: what an id may be, the sizes a terminal may have, and
 * the limits of a request.
 *
 * Owns: the token rule (session_id, input_id), the size range, defaults
 * and clamp, the input and body limits, and the one table of what each
 * error answers (status, message, Retry-After).  Does not own: the wire layout
 * (proto.h, whose field limits match these) or how either program answers
 * a request that breaks them.
 */
#ifndef PTYD_CONTRACT_H
#define PTYD_CONTRACT_H

#include <stddef.h>

#define CONTRACT_SID_MAX      128 /* session_id: 1..128 tokens */
#define CONTRACT_INPUT_ID_MAX 64  /* input_id: 1..64 tokens */
#define CONTRACT_ROWS_MIN     2
#define CONTRACT_ROWS_MAX     500
#define CONTRACT_ROWS_DEFAULT 24
#define CONTRACT_COLS_MIN     10
#define CONTRACT_COLS_MAX     1000
#define CONTRACT_COLS_DEFAULT 80
#define CONTRACT_INPUT_CHARS  8192	  /* code points per input */
#define CONTRACT_BODY_MAX     (64 * 1024) /* request body bytes */
#define CONTRACT_RETRY_AFTER  1		  /* seconds, every 429 and 503 */

/* The HTTP answer to one error (DESIGN 2): status, message (no paths, no
 * internals; NULL: ptyd's own message, else "bad request"), and whether
 * Retry-After goes with it (every 429 and 503). */
struct contract_error {
	int	    status;
	const char *message;
	int	    retry_after; /* seconds, 0: none */
};

/* ptyd's MSG_ERROR code (PROTO_ERR_*); an unknown one is a 500. */
const struct contract_error *contract_error_of(unsigned int proto_code);

/* What ptyd.fcgi answers when the exchange with ptyd itself failed. */
enum contract_fail {
	CONTRACT_FAIL_NOT_RUNNING,   /* no socket, refused */
	CONTRACT_FAIL_NOT_ANSWERING, /* timed out, cut */
	CONTRACT_FAIL_INTERNAL,
};
const struct contract_error *contract_failure(enum contract_fail);

/* The punctuation a token may hold besides letters and digits; '-' goes
 * last, so the set reads the same inside a regular expression's [ ]. */
#define CONTRACT_TOKEN_PUNCT "._:-"

/* 1 if s is 1..max characters of [A-Za-z0-9._:-]. */
int contract_token_valid(const char *s, size_t max);
/* The same rule as a regular expression (JavaScript's and POSIX ERE's
 * syntax), for the page.  0, or -1 if size is too small. */
int contract_token_pattern(char *buf, size_t size, size_t max);
int contract_sid_valid(const char *s);
int contract_input_id_valid(const char *s);

/*
 * Clamp a size into range.  0 means "not given": the default on start,
 * unchanged (left 0) otherwise.
 */
void contract_clamp(unsigned int *rows, unsigned int *cols, int start);

/*
 * Why a terminal ended: the "reason" of the terminal_closed event (DESIGN
 * 3), which ptyd sends in MSG_EXIT and ptyd.fcgi passes on.
 */
enum contract_reason {
	CONTRACT_REASON_EXIT,	   /* the shell ended by itself */
	CONTRACT_REASON_CLOSED,	   /* DELETE */
	CONTRACT_REASON_RESTARTED, /* a start with restart */
	CONTRACT_REASON_REAPED,	   /* idle past the grace */
	CONTRACT_REASON_EVICTED,   /* the cap needed its place */
	CONTRACT_REASON_SHUTDOWN,  /* ptyd stopped */
	CONTRACT_NREASONS
};
/* The wire name ("exit", "closed", ...); NULL if out of range. */
const char *contract_reason_name(enum contract_reason);
/* 1 if name is a reason's wire name. */
int contract_reason_valid(const char *name);

/* The API's endpoints (DESIGN 2: /api/terminal/NAME), named once: ptyd.fcgi's
 * routes and its metrics' labels are these. */
enum contract_endpoint {
	CONTRACT_EP_START,
	CONTRACT_EP_INPUT,
	CONTRACT_EP_RESIZE,
	CONTRACT_EP_CLOSE,
	CONTRACT_EP_OUTPUT,
	CONTRACT_EP_LIST,
	CONTRACT_EP_HEALTH,
	CONTRACT_EP_METRICS,
	CONTRACT_EP_LIMITS,
	CONTRACT_NENDPOINTS
};
/* Its NAME; NULL if out of range. */
const char *contract_endpoint_name(enum contract_endpoint);

#endif /* PTYD_CONTRACT_H */
