/*
 * test_conn.c -- ptyd/connstream.c's replay allowance: a rate after a burst.
 * Regression: (now - last) * rate overflowed int64 after 12.7 h without a
 * replay (the first replay on any host up that long): UBSan aborted
 * ptyd at the first attach, and an -O0 build left viewers waiting nine
 * hours for their replay.
 */
#include <criterion/criterion.h>

#include <stdint.h>

#include "conn.h"

#define HOUR	(3600LL * 1000000)
#define BURST	(2LL * 1024 * 1024)

Test(conn, replay_allowance_is_the_burst_after_any_long_quiet)
{
	conn_init(0);
	cr_expect_eq(conn_replay_allowance(13 * HOUR), BURST);
	cr_expect_eq(conn_replay_allowance(26 * HOUR), BURST);
	cr_expect_eq(conn_replay_allowance(26 * HOUR + 1), BURST, "capped");
	cr_expect_eq(conn_replay_allowance(1000 * 24 * HOUR), BURST);
}

Test(conn, replay_allowance_never_goes_backwards_in_time)
{
	conn_init(5 * HOUR);
	cr_expect_eq(conn_replay_allowance(HOUR), BURST, "an earlier now "
	    "changes nothing");
	cr_expect_eq(conn_replay_allowance(5 * HOUR + 10), BURST);
}
