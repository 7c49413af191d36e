/*
 * test_safetext.c -- an account's text made safe for root's log and
 * terminal (lib/safetext.c): what stays, what becomes '?', byte by byte.
 */
#include <criterion/criterion.h>

#include <string.h>

#include "safetext.h"

static void
expect_safe(const char *in, size_t len, const char *want)
{
	char   out[256];
	size_t n;

	n = safetext(out, in, len);
	cr_expect_eq(n, strlen(want), "length of %s", want);
	cr_expect_str_eq(out, want);
}

Test(safetext, printable_ascii_and_utf8_stay)
{
	expect_safe("ptyd: listening", 15, "ptyd: listening");
	expect_safe("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14,
	    "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
}

Test(safetext, c0_c1_and_del_become_question_marks)
{
	/* ESC, CR, BEL, DEL; raw 0x9b (CSI to 8-bit terminals); U+009B. */
	expect_safe("\x1b[2J\r\a\x7f", 7, "?[2J???");
	expect_safe("\x9b"
		    "31m",
	    4, "?31m");
	expect_safe("\xc2\x9b"
		    "31m",
	    5, "??31m");
	expect_safe("a\0b", 3, "a?b");
}

Test(safetext, direction_overrides_and_malformed_utf8_become_question_marks)
{
	expect_safe("\xe2\x80\xae"
		    "txt",
	    6, "???txt"); /* U+202E */
	expect_safe("\xe2\x81\xa6"
		    "x",
	    4, "???x");				    /* U+2066 */
	expect_safe("\xc0\xaf", 2, "??");	    /* overlong '/' */
	expect_safe("\xed\xa0\x80", 3, "???");	    /* a surrogate */
	expect_safe("\xf4\x90\x80\x80", 4, "????"); /* past U+10FFFF */
	expect_safe("\xe2\x82", 2, "??");	    /* cut short */
	expect_safe("\x80\xbf", 2, "??");	    /* lone continuations */
}
