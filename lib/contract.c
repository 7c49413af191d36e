/*
 * contract.c -- the rules both programs apply (contract.h).
 */
#include "contract.h"

int
contract_token_valid(const char *s, size_t max)
{
	size_t	n;

	for (n = 0; s[n] != '\0'; n++) {
		if (n >= max)
			return (0);
		if (!((s[n] >= 'a' && s[n] <= 'z') ||
		    (s[n] >= 'A' && s[n] <= 'Z') ||
		    (s[n] >= '0' && s[n] <= '9') ||
		    s[n] == '.' || s[n] == '_' || s[n] == ':' || s[n] == '-'))
			return (0);
	}
	return (n > 0);
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
