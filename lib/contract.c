/*
 * contract.c -- the rules both programs apply (contract.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "contract.h"
#include "proto.h"

int
contract_token_valid(const char *s, size_t max)
{
	size_t n;

	for (n = 0; s[n] != '\0'; n++) {
		if (n >= max)
			return (0);
		if (!((s[n] >= 'a' && s[n] <= 'z') ||
			(s[n] >= 'A' && s[n] <= 'Z') ||
			(s[n] >= '0' && s[n] <= '9') ||
			strchr(CONTRACT_TOKEN_PUNCT, s[n]) != NULL))
			return (0);
	}
	return (n > 0);
}

int
contract_token_pattern(char *buf, size_t size, size_t max)
{
	int n;

	n = snprintf(buf, size, "^[A-Za-z0-9%s]{1,%zu}$",
	    CONTRACT_TOKEN_PUNCT, max);
	return (n < 0 || (size_t)n >= size ? -1 : 0);
}

int
contract_sid_valid(const char *s)
{
	return (contract_token_valid(s, CONTRACT_SID_MAX));
}

int
contract_input_id_valid(const char *s)
{
	return (contract_token_valid(s, CONTRACT_INPUT_ID_MAX));
}

void
contract_clamp(unsigned int *rows, unsigned int *cols, int start)
{
	if (*rows == 0 && start)
		*rows = CONTRACT_ROWS_DEFAULT;
	if (*cols == 0 && start)
		*cols = CONTRACT_COLS_DEFAULT;
	if (*rows != 0 && *rows < CONTRACT_ROWS_MIN)
		*rows = CONTRACT_ROWS_MIN;
	if (*rows > CONTRACT_ROWS_MAX)
		*rows = CONTRACT_ROWS_MAX;
	if (*cols != 0 && *cols < CONTRACT_COLS_MIN)
		*cols = CONTRACT_COLS_MIN;
	if (*cols > CONTRACT_COLS_MAX)
		*cols = CONTRACT_COLS_MAX;
}

/*
 * The front's limits are the wire's: a request the front lets through
 * must fit ptyd's frame, and one ptyd would take the front must not
 * refuse.
 */
_Static_assert(CONTRACT_SID_MAX == PROTO_SID_MAX, "session_id limits");
_Static_assert(CONTRACT_INPUT_ID_MAX == PROTO_INPUT_ID_MAX, "input_id limits");
_Static_assert(PROTO_INPUT_MAX / 4 == CONTRACT_INPUT_CHARS,
    "input: code points of UTF-8, at most 4 bytes each");
_Static_assert(CONTRACT_ROWS_MAX <= UINT16_MAX &&
	CONTRACT_COLS_MAX <= UINT16_MAX,
    "rows and cols are u16 on the wire");

#define RETRY CONTRACT_RETRY_AFTER

/* The one place an answer is decided (DESIGN 2's table of errors lists
 * every row, in its words: tests/unit/test_contract.c reads it). */
static const struct contract_error contract_answers[CONTRACT_NANSWERS] = {
	[CONTRACT_A_GATE] = { 403,
	    "forbidden: this request is neither authenticated nor from this "
	    "account on this host. Let the web server authenticate users "
	    "(passing the user as REMOTE_USER) and set auth = front, or set "
	    "allow_remote = yes for a deliberately exposed server; behind a "
	    "reverse proxy set trust_forwarded_for = yes and "
	    "trusted_proxy_cidrs (ptyd.conf(5); PTYD_AUTH, PTYD_ALLOW_REMOTE, "
	    "PTYD_TRUST_FORWARDED_FOR, PTYD_TRUSTED_PROXY_CIDRS)",
	    0, 0 },
	[CONTRACT_A_NO_ENDPOINT] = { 404, "unknown endpoint", 0, 0 },
	[CONTRACT_A_METHOD] = { 405, "method not allowed", 0, 0 },
	[CONTRACT_A_HOST] = { 403,
	    "forbidden: Host is not in PTYD_ALLOWED_HOSTS", 0, 0 },
	[CONTRACT_A_CROSS_ORIGIN] = { 403, "forbidden: cross-origin request", 0,
	    0 },
	[CONTRACT_A_METRICS_DENIED] = { 403,
	    "forbidden: metrics are the operator's: read them from an address "
	    "in metrics_allow, as a user in metrics_users (ptyd.conf(5); "
	    "PTYD_METRICS_ALLOW, PTYD_METRICS_USERS)",
	    0, 0 },
	[CONTRACT_A_BODY_TOO_LARGE] = { 413, "request body too large", 0, 0 },
	[CONTRACT_A_BODY_UNREADABLE] = { 400, "request body could not be read",
	    0, 0 },
	[CONTRACT_A_NOT_JSON] = { 415, "Content-Type must be application/json",
	    0, 0 },
	[CONTRACT_A_USER_TOO_LONG] = { 400, "user name too long", 0, 0 },
	[CONTRACT_A_JSON_MALFORMED] = { 400, "malformed JSON", 0, 0 },
	[CONTRACT_A_JSON_NOT_OBJECT] = { 400,
	    "request body must be a JSON object", 0, 0 },
	[CONTRACT_A_SID_MISSING] = { 400, "missing session_id", 0, 0 },
	[CONTRACT_A_SID_NOT_STRING] = { 400, "session_id must be a string", 0,
	    0 },
	[CONTRACT_A_SID_INVALID] = { 400, "invalid session_id", 0, 0 },
	[CONTRACT_A_SID_DIFFER] = { 400, "session_id in query and body differ",
	    0, 0 },
	[CONTRACT_A_ROWS] = { 400, "rows must be an integer", 0, 0 },
	[CONTRACT_A_COLS] = { 400, "cols must be an integer", 0, 0 },
	[CONTRACT_A_RESTART] = { 400, "restart must be a boolean", 0, 0 },
	[CONTRACT_A_WORKSPACE] = { 400, "workspace must be a path", 0, 0 },
	[CONTRACT_A_DATA_MISSING] = { 400, "missing data", 0, 0 },
	[CONTRACT_A_DATA_NOT_STRING] = { 400, "data must be a string", 0, 0 },
	[CONTRACT_A_INPUT_ID] = { 400, "invalid input_id", 0, 0 },
	[CONTRACT_A_INPUT_TOO_LARGE] = { 413, "input too large", 0, 0 },
	[CONTRACT_A_ENCODING] = { 400, "unsupported encoding", 0, 0 },
	[CONTRACT_A_HEARTBEAT] = { 400, "unsupported heartbeat", 0, 0 },
	[CONTRACT_A_ATTACH] = { 400, "unsupported attach or replay", 0, 0 },
	[CONTRACT_A_ATTACH_DISAGREE] = { 400,
	    "attach=screen and replay=raw disagree", 0, 0 },
	/* ptyd's words when it gives some ("invalid workspace", ...);
	 * these only when it gave none. */
	[CONTRACT_A_BAD_REQUEST] = { 400, "bad request", 0, 1 },
	[CONTRACT_A_NOT_RUNNING] = { 404, "terminal not running", 0, 0 },
	[CONTRACT_A_TOO_LARGE] = { 413, "too large", 0, 1 },
	[CONTRACT_A_VIEWER_LIMIT] = { 429, "too many viewers for this terminal",
	    RETRY, 0 },
	[CONTRACT_A_INPUT_FULL] = { 429,
	    "terminal is not reading its input; retry later", RETRY, 0 },
	[CONTRACT_A_TERM_LIMIT] = { 429,
	    "terminal limit reached: every terminal is another user's; "
	    "retry later",
	    RETRY, 0 },
	/* ptyd's words ("could not start the shell: no such file or
	 * directory"): the operator can act on them, and they hold no path. */
	[CONTRACT_A_SPAWN] = { 500, "could not start the shell", 0, 1 },
	/* ptyd's words again ("no pty available: ..."): a limit of the
	 * system, not of ptyd's caps, and it may clear (issue 17). */
	[CONTRACT_A_EXHAUSTED] = { 503,
	    "a system limit refused the shell; retry later", RETRY, 1 },
	[CONTRACT_A_SHUTTING_DOWN] = { 503,
	    "ptyd is shutting down; retry later", RETRY, 0 },
	[CONTRACT_A_PTYD_NOT_RUNNING] = { 503, "ptyd is not running", RETRY,
	    0 },
	[CONTRACT_A_PTYD_NOT_ANSWERING] = { 503, "ptyd is not answering", RETRY,
	    0 },
	/* Health's own body, its "status" this word (fcgi/handlers.c). */
	[CONTRACT_A_DEGRADED] = { 503, "degraded", RETRY, 0 },
	/* Why is in the web server's error log, never in the answer. */
	[CONTRACT_A_SETTINGS] = { 500,
	    "ptyd.fcgi cannot read its settings: see the web server's error "
	    "log",
	    0, 0 },
	[CONTRACT_A_INTERNAL] = { 500, "internal error", 0, 0 },
	/* Recordings (DESIGN 4).  Another owner's recording is not found:
	 * the answer does not tell that it exists. */
	[CONTRACT_A_RECORD] = { 400, "record must be a boolean", 0, 0 },
	[CONTRACT_A_RECORDING_ID] = { 400, "invalid recording id", 0, 0 },
	[CONTRACT_A_RECORDING_NOT_FOUND] = { 404, "recording not found", 0, 0 },
};

/* Indexed by PROTO_ERR_*: what each of ptyd's codes is answered with. */
static const enum contract_answer contract_proto[] = {
	[0] = CONTRACT_A_INTERNAL,
	[PROTO_ERR_BAD_REQUEST] = CONTRACT_A_BAD_REQUEST,
	[PROTO_ERR_NOT_RUNNING] = CONTRACT_A_NOT_RUNNING,
	[PROTO_ERR_TOO_LARGE] = CONTRACT_A_TOO_LARGE,
	[PROTO_ERR_VIEWER_LIMIT] = CONTRACT_A_VIEWER_LIMIT,
	[PROTO_ERR_INPUT_FULL] = CONTRACT_A_INPUT_FULL,
	[PROTO_ERR_INTERNAL] = CONTRACT_A_INTERNAL,
	[PROTO_ERR_VERSION] = CONTRACT_A_INTERNAL,
	[PROTO_ERR_SHUTDOWN] = CONTRACT_A_SHUTTING_DOWN,
	[PROTO_ERR_TERM_LIMIT] = CONTRACT_A_TERM_LIMIT,
	[PROTO_ERR_SPAWN] = CONTRACT_A_SPAWN,
	[PROTO_ERR_EXHAUSTED] = CONTRACT_A_EXHAUSTED,
	[PROTO_ERR_NOT_FOUND] = CONTRACT_A_RECORDING_NOT_FOUND,
};

const struct contract_error *
contract_answer(enum contract_answer a)
{
	if ((unsigned int)a >= CONTRACT_NANSWERS)
		a = CONTRACT_A_INTERNAL;
	return (&contract_answers[a]);
}

enum contract_answer
contract_answer_of(unsigned int code)
{
	if (code >= sizeof(contract_proto) / sizeof(contract_proto[0]))
		return (CONTRACT_A_INTERNAL);
	return (contract_proto[code]);
}

const struct contract_error *
contract_error_of(unsigned int code)
{
	return (contract_answer(contract_answer_of(code)));
}

static const char *const contract_reasons[CONTRACT_NREASONS] = {
	[CONTRACT_REASON_EXIT] = "exit",
	[CONTRACT_REASON_CLOSED] = "closed",
	[CONTRACT_REASON_RESTARTED] = "restarted",
	[CONTRACT_REASON_REAPED] = "reaped",
	[CONTRACT_REASON_EVICTED] = "evicted",
	[CONTRACT_REASON_SHUTDOWN] = "shutdown",
};

const char *
contract_reason_name(enum contract_reason r)
{
	return ((unsigned int)r < CONTRACT_NREASONS ? contract_reasons[r] :
						      NULL);
}

int
contract_reason_valid(const char *name)
{
	size_t i;

	for (i = 0; i < CONTRACT_NREASONS; i++)
		if (strcmp(contract_reasons[i], name) == 0)
			return (1);
	return (0);
}

static const char *const contract_endpoints[CONTRACT_NENDPOINTS] = {
	[CONTRACT_EP_START] = "start",
	[CONTRACT_EP_INPUT] = "input",
	[CONTRACT_EP_RESIZE] = "resize",
	[CONTRACT_EP_CLOSE] = "close",
	[CONTRACT_EP_OUTPUT] = "output",
	[CONTRACT_EP_LIST] = "list",
	[CONTRACT_EP_HEALTH] = "health",
	[CONTRACT_EP_METRICS] = "metrics",
	[CONTRACT_EP_LIMITS] = "limits",
	[CONTRACT_EP_RECORDINGS] = "recordings",
	[CONTRACT_EP_RECORDING] = "recording",
};

const char *
contract_endpoint_name(enum contract_endpoint e)
{
	return ((unsigned int)e < CONTRACT_NENDPOINTS ? contract_endpoints[e] :
							 NULL);
}
