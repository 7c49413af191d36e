/*
 * test_contract.c -- the rules both programs apply, written once
 * (lib/contract.c): the token rule of session_id and input_id, the
 * size clamp, and the one table of answers (DESIGN 2's errors).
 */
#include <criterion/criterion.h>

#include <regex.h>
#include <stdio.h>
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

/* The one table of answers: every row has a status the contract knows
 * and a message, every 429 and 503 says when to come back and nothing
 * else does, and no message names a path. */
Test(contract, every_answer_has_a_status_and_a_message)
{
	static const int known[] = { 400, 403, 404, 405, 413, 415, 429, 500,
		503 };
	const struct contract_error *e;
	unsigned int		     a, i;
	int			     ok;

	for (a = 0; a < CONTRACT_NANSWERS; a++) {
		e = contract_answer((enum contract_answer)a);
		for (i = 0, ok = 0; i < sizeof(known) / sizeof(known[0]); i++)
			ok |= e->status == known[i];
		cr_expect(ok, "answer %u: status %d", a, e->status);
		cr_assert_not_null(e->message, "answer %u", a);
		cr_expect(e->message[0] != '\0', "answer %u", a);
		/* a path starts a word ("application/json" is none) */
		cr_expect(e->message[0] != '/' &&
			strstr(e->message, " /") == NULL &&
			strstr(e->message, "(/") == NULL,
		    "answer %u", a);
		cr_expect_eq(e->retry_after != 0,
		    e->status == 429 || e->status == 503, "answer %u", a);
		if (e->retry_after != 0)
			cr_expect_eq(e->retry_after, CONTRACT_RETRY_AFTER);
	}
	cr_expect_eq(contract_answer(CONTRACT_NANSWERS),
	    contract_answer(CONTRACT_A_INTERNAL), "out of range: internal");
	cr_expect_eq(contract_answer(CONTRACT_A_METHOD)->status, 405);
	cr_expect_eq(contract_answer(CONTRACT_A_NOT_JSON)->status, 415);
}

/* One spelling per message: two answers that say the same are one. */
Test(contract, one_spelling_per_message)
{
	unsigned int a, b;

	for (a = 0; a < CONTRACT_NANSWERS; a++)
		for (b = a + 1; b < CONTRACT_NANSWERS; b++)
			cr_expect_str_neq(contract_answer(
					      (enum contract_answer)a)
					      ->message,
			    contract_answer((enum contract_answer)b)->message,
			    "answers %u and %u", a, b);
}

/* ptyd's codes: each has its answer; only 400, 413 and the shell's
 * failures pass ptyd's words on. */
Test(contract, every_ptyd_code_has_its_answer)
{
	const struct contract_error *e;
	unsigned int		     code;

	for (code = 0; code <= 20; code++) {
		e = contract_error_of(code);
		cr_assert_not_null(e);
		/* A share's refusals are 403 and ptyd's: only ptyd
		 * knows the share (DESIGN 6). */
		cr_expect((e->status != 403 ||
			      (code >= PROTO_ERR_SHARE_INVALID &&
				  code <= PROTO_ERR_ANONYMOUS)) &&
			e->status != 405 && e->status != 415,
		    "code %u is ptyd's, not a check of the front's", code);
		if (e->ptyd_words)
			cr_expect(e->status == 400 || e->status == 413 ||
			    code == PROTO_ERR_SPAWN ||
			    code == PROTO_ERR_EXHAUSTED);
	}
	cr_expect_eq(contract_answer_of(PROTO_ERR_BAD_REQUEST),
	    CONTRACT_A_BAD_REQUEST);
	cr_expect_eq(contract_error_of(PROTO_ERR_SPAWN)->status, 500);
	cr_expect_eq(contract_error_of(PROTO_ERR_EXHAUSTED)->status, 503);
	cr_expect_eq(contract_error_of(2)->status, 404);
	cr_expect_eq(contract_error_of(9)->status, 429, "terminal limit");
	cr_expect_eq(contract_answer_of(0), CONTRACT_A_INTERNAL);
	cr_expect_eq(contract_answer_of(99), CONTRACT_A_INTERNAL, "unknown");
}

/* DESIGN 2's table of errors lists every answer as the table has it:
 * "| status | `message` | yes|no |". */
Test(contract, design_lists_every_answer)
{
	char	     line[2048], want[1024];
	FILE	    *f;
	unsigned int a;
	int	     found[CONTRACT_NANSWERS] = { 0 };

	f = fopen(PTYD_SRCDIR "/docs/DESIGN.md", "r");
	cr_assert_not_null(f, "docs/DESIGN.md");
	while (fgets(line, sizeof(line), f) != NULL) {
		for (a = 0; a < CONTRACT_NANSWERS; a++) {
			const struct contract_error *e = contract_answer(
			    (enum contract_answer)a);

			snprintf(want, sizeof(want), "| %d | `%s` | %s |",
			    e->status, e->message,
			    e->retry_after != 0 ? "yes" : "no");
			if (strstr(line, want) == line)
				found[a] = 1;
		}
	}
	fclose(f);
	for (a = 0; a < CONTRACT_NANSWERS; a++)
		cr_expect(found[a], "DESIGN 2 lacks | %d | `%s` |",
		    contract_answer((enum contract_answer)a)->status,
		    contract_answer((enum contract_answer)a)->message);
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
