/*
 * test_record.c -- retention's choice (ptyd/recretain.c, rec_retention):
 * by age first, then the oldest removable ones until the total fits,
 * never a recording still being written, and nothing when all fits.
 */
#include <criterion/criterion.h>

#include "record.h"

#define DAY 86400.0

Test(retention, nothing_goes_when_all_is_young_and_fits)
{
	struct rec_item it[] = { { 1, 100 * DAY, 10 }, { 1, 101 * DAY, 10 } };
	int		why[2];

	cr_expect_eq(rec_retention(it, 2, 102 * DAY, 30 * 86400, 100, why), 0);
	cr_expect_eq(why[0], REC_KEEP);
	cr_expect_eq(why[1], REC_KEEP);
}

Test(retention, older_than_max_age_goes_whatever_the_size)
{
	struct rec_item it[] = { { 1, 10 * DAY, 10 }, { 1, 50 * DAY, 10 },
		{ 1, 99 * DAY, 10 } };
	int		why[3];

	cr_expect_eq(rec_retention(it, 3, 100 * DAY, 30 * 86400, 1000, why), 2);
	cr_expect_eq(why[0], REC_AGE);
	cr_expect_eq(why[1], REC_AGE);
	cr_expect_eq(why[2], REC_KEEP);
}

Test(retention, over_max_bytes_the_oldest_go_first_until_it_fits)
{
	struct rec_item it[] = { { 1, 1 * DAY, 400 }, { 1, 2 * DAY, 300 },
		{ 1, 3 * DAY, 300 }, { 1, 4 * DAY, 300 } };
	int		why[4];

	/* 1300 bytes, 800 allowed: the first two go (600 left). */
	cr_expect_eq(rec_retention(it, 4, 5 * DAY, 30 * 86400, 800, why), 2);
	cr_expect_eq(why[0], REC_SIZE);
	cr_expect_eq(why[1], REC_SIZE);
	cr_expect_eq(why[2], REC_KEEP);
	cr_expect_eq(why[3], REC_KEEP);
}

Test(retention, a_recording_being_written_is_never_removed_but_counts)
{
	struct rec_item it[] = { { 0, 1 * DAY, 500 }, { 1, 2 * DAY, 300 },
		{ 1, 3 * DAY, 300 } };
	int		why[3];

	/* Old and big, but still recording: the next oldest go instead. */
	cr_expect_eq(rec_retention(it, 3, 90 * DAY, 30 * 86400, 600, why), 2);
	cr_expect_eq(why[0], REC_KEEP);
	cr_expect_eq(why[1], REC_AGE);
	cr_expect_eq(why[2], REC_AGE);
	cr_expect_eq(rec_retention(it, 3, 4 * DAY, 30 * 86400, 900, why), 1);
	cr_expect_eq(why[0], REC_KEEP);
	cr_expect_eq(why[1], REC_SIZE);
	cr_expect_eq(why[2], REC_KEEP);
}

Test(retention, age_goes_first_then_size_counts_what_is_left)
{
	struct rec_item it[] = { { 1, 1 * DAY, 1000 }, { 1, 40 * DAY, 300 },
		{ 1, 41 * DAY, 300 } };
	int		why[3];

	/* The old one (by age) alone brings the total under the bound. */
	cr_expect_eq(rec_retention(it, 3, 42 * DAY, 30 * 86400, 600, why), 1);
	cr_expect_eq(why[0], REC_AGE);
	cr_expect_eq(why[1], REC_KEEP);
	cr_expect_eq(why[2], REC_KEEP);
}
