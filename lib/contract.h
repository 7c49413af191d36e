/*
 * contract.h -- the rules of DESIGN 2 that ptyd and ptyd.fcgi both apply,
 * written once: what an id may be, the sizes a terminal may have, and
 * the limits of a request.
 *
 * Owns: the token rule (session_id, input_id), the size range, defaults
 * and clamp, the input and body limits, and the one table of every error
 * answer ptyd.fcgi gives (status, message, Retry-After), its own and
 * those for ptyd's codes.  Does not own: the wire layout (proto.h, whose
 * field limits are these: asserted in contract.c) or writing an answer
 * (fcgi/http.c).
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

/*
 * Every answer but a success, ptyd.fcgi's own and those it gives for
 * what ptyd said: the one table of DESIGN 2's errors.  A call site names
 * the answer; the status, the message and Retry-After are the table's.
 */
enum contract_answer {
	/* The request, in the contract's order of checks. */
	CONTRACT_A_GATE,	    /* 403: neither authenticated nor ours */
	CONTRACT_A_NO_ENDPOINT,	    /* 404 */
	CONTRACT_A_METHOD,	    /* 405, with Allow */
	CONTRACT_A_HOST,	    /* 403: DNS rebinding */
	CONTRACT_A_CROSS_ORIGIN,    /* 403: CSRF */
	CONTRACT_A_METRICS_DENIED,  /* 403: not the operator */
	CONTRACT_A_BODY_TOO_LARGE,  /* 413 */
	CONTRACT_A_BODY_UNREADABLE, /* 400 */
	CONTRACT_A_NOT_JSON,	    /* 415 */
	CONTRACT_A_USER_TOO_LONG,   /* 400 */
	CONTRACT_A_JSON_MALFORMED,  /* 400 */
	CONTRACT_A_JSON_NOT_OBJECT, /* 400 */
	CONTRACT_A_SID_MISSING,	    /* 400 */
	CONTRACT_A_SID_NOT_STRING,  /* 400 */
	CONTRACT_A_SID_INVALID,	    /* 400 */
	CONTRACT_A_SID_DIFFER,	    /* 400: query and body */
	CONTRACT_A_ROWS,	    /* 400 */
	CONTRACT_A_COLS,	    /* 400 */
	CONTRACT_A_RESTART,	    /* 400 */
	CONTRACT_A_WORKSPACE,	    /* 400: not a text */
	CONTRACT_A_DATA_MISSING,    /* 400 */
	CONTRACT_A_DATA_NOT_STRING, /* 400 */
	CONTRACT_A_INPUT_ID,	    /* 400 */
	CONTRACT_A_INPUT_TOO_LARGE, /* 413: over CONTRACT_INPUT_CHARS */
	CONTRACT_A_ENCODING,	    /* 400: the stream's encoding= */
	CONTRACT_A_HEARTBEAT,	    /* 400: heartbeat= */
	CONTRACT_A_ATTACH,	    /* 400: attach=, replay= */
	CONTRACT_A_ATTACH_DISAGREE, /* 400: attach=screen, replay=raw */
	/* ptyd said so (MSG_ERROR, contract_answer_of). */
	CONTRACT_A_BAD_REQUEST,	  /* 400, in ptyd's words */
	CONTRACT_A_NOT_RUNNING,	  /* 404 */
	CONTRACT_A_TOO_LARGE,	  /* 413, in ptyd's words */
	CONTRACT_A_VIEWER_LIMIT,  /* 429 */
	CONTRACT_A_INPUT_FULL,	  /* 429 */
	CONTRACT_A_TERM_LIMIT,	  /* 429 */
	CONTRACT_A_SPAWN,	  /* 500, in ptyd's words */
	CONTRACT_A_EXHAUSTED,	  /* 503, in ptyd's words */
	CONTRACT_A_SHUTTING_DOWN, /* 503 */
	/* The exchange with ptyd failed. */
	CONTRACT_A_PTYD_NOT_RUNNING,   /* 503: no socket, refused */
	CONTRACT_A_PTYD_NOT_ANSWERING, /* 503: timed out, cut */
	/* The rest. */
	CONTRACT_A_DEGRADED, /* 503: health, whose body says why */
	CONTRACT_A_SETTINGS, /* 500: a CGI run without its settings */
	CONTRACT_A_INTERNAL, /* 500 */
	/* Recordings (DESIGN 4). */
	CONTRACT_A_RECORD,		/* 400: start's record= */
	CONTRACT_A_RECORDING_ID,	/* 400: recording?id= */
	CONTRACT_A_RECORDING_NOT_FOUND, /* 404: unknown or another's */
	CONTRACT_NANSWERS
};

/* What one answer is: status, message (no paths, no internals), whether
 * Retry-After goes with it (every 429 and 503), and whether ptyd's own
 * words, when it gave some, stand in for the message (they say what was
 * wrong, or why the shell could not start, and hold no path). */
struct contract_error {
	int	    status;
	const char *message;
	int	    retry_after; /* seconds, 0: none */
	int	    ptyd_words;
};

/* The answer's row; CONTRACT_A_INTERNAL's if out of range. */
const struct contract_error *contract_answer(enum contract_answer);
/* The answer to ptyd's MSG_ERROR code (PROTO_ERR_*); an unknown one is
 * CONTRACT_A_INTERNAL. */
enum contract_answer contract_answer_of(unsigned int proto_code);
/* The two in one: the row for ptyd's code. */
const struct contract_error *contract_error_of(unsigned int proto_code);

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
	CONTRACT_EP_RECORDINGS,
	CONTRACT_EP_RECORDING,
	CONTRACT_NENDPOINTS
};
/* Its NAME; NULL if out of range. */
const char *contract_endpoint_name(enum contract_endpoint);

#endif /* PTYD_CONTRACT_H */
