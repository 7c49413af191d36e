/*
 * contract.c -- the rules both programs apply (contract.h).
 */
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

/* Indexed by PROTO_ERR_*: the one place an error's answer is decided. */
static const struct contract_error contract_errors[] = {
	[0] = { 500, "internal error", 0 },
	[PROTO_ERR_BAD_REQUEST] = { 400, NULL, 0 },
	[PROTO_ERR_NOT_RUNNING] = { 404, "terminal not running", 0 },
	[PROTO_ERR_TOO_LARGE] = { 413, NULL, 0 },
	[PROTO_ERR_VIEWER_LIMIT] = { 429, "too many viewers for this terminal",
	    CONTRACT_RETRY_AFTER },
	[PROTO_ERR_INPUT_FULL] = { 429,
	    "terminal is not reading its input; "
	    "retry later",
	    CONTRACT_RETRY_AFTER },
	[PROTO_ERR_INTERNAL] = { 500, "internal error", 0 },
	[PROTO_ERR_VERSION] = { 500, "internal error", 0 },
	[PROTO_ERR_SHUTDOWN] = { 503, "ptyd is shutting down; retry later",
	    CONTRACT_RETRY_AFTER },
	[PROTO_ERR_TERM_LIMIT] = { 429,
	    "terminal limit reached: every "
	    "terminal is another user's; retry later",
	    CONTRACT_RETRY_AFTER },
	/* ptyd's words ("could not start the shell: no such file or
	 * directory"): the operator can act on them, and they hold no path. */
	[PROTO_ERR_SPAWN] = { 500, NULL, 0 },
	/* ptyd's words again ("no pty available: ..."): a limit of the
	 * system, not of ptyd's caps, and it may clear (issue 17). */
	[PROTO_ERR_EXHAUSTED] = { 503, NULL, CONTRACT_RETRY_AFTER },
};

static const struct contract_error contract_failures[] = {
	[CONTRACT_FAIL_NOT_RUNNING] = { 503, "ptyd is not running",
	    CONTRACT_RETRY_AFTER },
	[CONTRACT_FAIL_NOT_ANSWERING] = { 503, "ptyd is not answering",
	    CONTRACT_RETRY_AFTER },
	[CONTRACT_FAIL_INTERNAL] = { 500, "internal error", 0 },
};

const struct contract_error *
contract_error_of(unsigned int code)
{
	if (code >= sizeof(contract_errors) / sizeof(contract_errors[0]))
		code = 0;
	return (&contract_errors[code]);
}

const struct contract_error *
contract_failure(enum contract_fail f)
{
	if ((unsigned int)f >=
	    sizeof(contract_failures) / sizeof(contract_failures[0]))
		f = CONTRACT_FAIL_INTERNAL;
	return (&contract_failures[f]);
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
};

const char *
contract_endpoint_name(enum contract_endpoint e)
{
	return ((unsigned int)e < CONTRACT_NENDPOINTS ? contract_endpoints[e] :
							 NULL);
}
