/*
 * test_contract.c -- the rules both programs apply, written once
 * (lib/contract.c): the token rule of session_id and input_id, and the
 * size clamp.
 */
#include <criterion/criterion.h>

#include <regex.h>
#include <string.h>

#include "contract.h"
#include "proto.h"

Test(contract, tokens)
{
	char	long_id[CONTRACT_SID_MAX + 2];

	cr_expect(contract_sid_valid("a"));
	cr_expect(contract_sid_valid("tab-1:x.y_Z9"));
	cr_expect_not(contract_sid_valid(""));
	cr_expect_not(contract_sid_valid("a b"));
	cr_expect_not(contract_sid_valid("a/b"));
	cr_expect_not(contract_sid_valid("\xc3\xa9"));
	memset(long_id, 'x', sizeof(long_id));
	long_id[CONTRACT_SID_MAX] = '\0';
	cr_expect(contract_sid_valid(long_id), "128 fit");
	long_id[CONTRACT_SID_MAX] = 'x';
	long_id[CONTRACT_SID_MAX + 1] = '\0';
	cr_expect_not(contract_sid_valid(long_id), "129 do not");
	long_id[CONTRACT_INPUT_ID_MAX] = '\0';
	cr_expect(contract_input_id_valid(long_id), "64 fit");
	long_id[CONTRACT_INPUT_ID_MAX] = 'x';
	long_id[CONTRACT_INPUT_ID_MAX + 1] = '\0';
	cr_expect_not(contract_input_id_valid(long_id), "65 do not");
}

Test(contract, clamp)
{
	unsigned int	r, c;

	r = 0, c = 0;
	contract_clamp(&r, &c, 1);
	cr_expect(r == 24 && c == 80, "defaults on start");
	r = 0, c = 0;
	contract_clamp(&r, &c, 0);
	cr_expect(r == 0 && c == 0, "unchanged on resize");
	r = 1, c = 9;
	contract_clamp(&r, &c, 0);
	cr_expect(r == 2 && c == 10);
	r = 501, c = 1001;
	contract_clamp(&r, &c, 1);
	cr_expect(r == 500 && c == 1000);
	r = 30, c = 100;
	contract_clamp(&r, &c, 1);
	cr_expect(r == 30 && c == 100);
}

/* The one table of errors: every code ptyd sends has an answer, every 429
 * and 503 says when to come back, and no message names a path. */
Test(contract, every_error_has_its_answer)
{
	static const int		 known[] = { 400, 404, 413, 429, 500, 503 };
	const struct contract_error	*e;
	unsigned int			 code, i;
	int				 ok;

	for (code = 0; code <= 20; code++) {
		e = contract_error_of(code);
		cr_assert_not_null(e);
		for (i = 0, ok = 0; i < sizeof(known) / sizeof(known[0]); i++)
			ok |= e->status == known[i];
		cr_expect(ok, "code %u: status %d", code, e->status);
		cr_expect_eq(e->retry_after != 0,
		    e->status == 429 || e->status == 503, "code %u", code);
		if (e->message != NULL)
			cr_expect_null(strchr(e->message, '/'), "code %u", code);
		else
			/* ptyd's words: what was wrong, or why the shell
			 * could not start (never a path). */
			cr_expect(e->status == 400 || e->status == 413 ||
			    code == PROTO_ERR_SPAWN ||
			    code == PROTO_ERR_EXHAUSTED);
	}
	cr_expect_eq(contract_error_of(PROTO_ERR_SPAWN)->status, 500);
	cr_expect_eq(contract_error_of(PROTO_ERR_EXHAUSTED)->status, 503);
	cr_expect_eq(contract_error_of(2)->status, 404);
	cr_expect_eq(contract_error_of(9)->status, 429, "terminal limit");
	cr_expect_eq(contract_error_of(99)->status, 500, "unknown: internal");
	for (i = 0; i <= CONTRACT_FAIL_INTERNAL; i++) {
		e = contract_failure((enum contract_fail)i);
		cr_expect_eq(e->retry_after != 0, e->status == 503);
	}
}

/* The reasons a terminal ends with: named once, in DESIGN's words, and
 * nothing else passes for one. */
Test(contract, reasons)
{
	static const char *const design[] = { "exit", "closed", "restarted",
		"reaped", "evicted", "shutdown" };
	unsigned int i;

	cr_assert_eq(CONTRACT_NREASONS, sizeof(design) / sizeof(design[0]));
	for (i = 0; i < CONTRACT_NREASONS; i++) {
		cr_expect_str_eq(contract_reason_name(i), design[i]);
		cr_expect(contract_reason_valid(design[i]));
	}
	cr_expect_null(contract_reason_name(CONTRACT_NREASONS));
	cr_expect_not(contract_reason_valid(""));
	cr_expect_not(contract_reason_valid("still running"));
	cr_expect_not(contract_reason_valid("Exit"));
}

/* The page's copy of the id rule is generated from the rule itself: the
 * pattern (as POSIX ERE, the same syntax as JavaScript's here) accepts
 * exactly what contract_token_valid accepts. */
Test(contract, token_pattern_is_the_rule)
{
	static const char *const probe[] = { "a", "A-z_0.9:x", "", "a b",
		"a/b", "é", "-", "a\n", "abcdefgh", "abcdefghi", "x]y", "x[y",
		"^a", "a$" };
	char	pat[64];
	regex_t re;
	size_t	i;

	cr_assert_eq(contract_token_pattern(pat, sizeof(pat), 8), 0);
	cr_assert_eq(regcomp(&re, pat, REG_EXTENDED | REG_NOSUB), 0, "%s",
	    pat);
	for (i = 0; i < sizeof(probe) / sizeof(probe[0]); i++)
		cr_expect_eq(regexec(&re, probe[i], 0, NULL, 0) == 0,
		    contract_token_valid(probe[i], 8) != 0, "%s on \"%s\"", pat,
		    probe[i]);
	regfree(&re);
	cr_expect_eq(contract_token_pattern(pat, 8, 128), -1, "too small");
}
