/*
 * test_frame.c -- the frame codec (lib/frame.c): round trips of every
 * message, and the checks that keep a hostile or broken peer from making a
 * reader allocate, over-read or act on a malformed frame.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <string.h>

#include "frame.h"

static struct frame_out	fo;

static void
setup(void)
{
	frame_out_init(&fo);
}

static void
teardown(void)
{
	frame_out_free(&fo);
}

TestSuite(frame, .init = setup, .fini = teardown);

/* Encode msg, check the header, and decode the payload into out. */
static void
round_trip(uint16_t type, const void *msg, void *out)
{
	struct frame_hdr	h;

	cr_assert_eq(msg_encode(&fo, type, msg), 0, "encode %s", msg_name(type));
	cr_assert_eq(frame_hdr_decode(fo.buf, &h), 0);
	cr_assert_eq(h.type, type);
	cr_assert_eq(h.version, PROTO_VERSION);
	cr_assert_eq(h.len, fo.len - PROTO_HDR_LEN);
	cr_assert_eq(msg_decode(type, fo.buf + PROTO_HDR_LEN, h.len, out), 0);
}

Test(frame, start_round_trip_keeps_every_field)
{
	struct msg_start	in, out;

	memset(&in, 0, sizeof(in));
	memset(&out, 0x55, sizeof(out));
	strcpy(in.owner, "alice");
	strcpy(in.sid, "tab-1:x.y");
	strcpy(in.workspace, "/home/alice/src");
	in.rows = 50;
	in.cols = 0xfffe;
	in.restart = 1;
	strcpy(in.actor, "alice@127.0.0.1");
	round_trip(MSG_START, &in, &out);
	cr_assert_str_eq(out.owner, "alice");
	cr_assert_str_eq(out.sid, "tab-1:x.y");
	cr_assert_str_eq(out.workspace, "/home/alice/src");
	cr_assert_eq(out.rows, 50);
	cr_assert_eq(out.cols, 0xfffe);
	cr_assert_eq(out.restart, 1);
	cr_assert_str_eq(out.actor, "alice@127.0.0.1");
}

Test(frame, empty_strings_round_trip)
{
	struct msg_start	in, out;

	memset(&in, 0, sizeof(in));
	memset(&out, 0x55, sizeof(out));
	strcpy(in.sid, "a");
	round_trip(MSG_START, &in, &out);
	cr_assert_str_eq(out.owner, "");
	cr_assert_str_eq(out.workspace, "");
	cr_assert_str_eq(out.actor, "");
}

Test(frame, input_bytes_point_into_payload_and_may_hold_nul)
{
	static const uint8_t	data[] = { 'l', 's', 0, '\r', 0xff };
	struct msg_input	in, out;

	memset(&in, 0, sizeof(in));
	strcpy(in.sid, "s");
	strcpy(in.input_id, "page-1:42");
	in.data = data;
	in.len = sizeof(data);
	round_trip(MSG_INPUT, &in, &out);
	cr_assert_str_eq(out.input_id, "page-1:42");
	cr_assert_eq(out.len, sizeof(data));
	cr_assert_eq(memcmp(out.data, data, sizeof(data)), 0);
	cr_assert(out.data > fo.buf && out.data < fo.buf + fo.len);
}

Test(frame, signed_and_64_bit_fields_survive)
{
	struct msg_list_item	in, out;
	struct msg_exit		ein, eout;

	memset(&in, 0, sizeof(in));
	strcpy(in.sid, "s");
	in.pid = 4242;
	in.exit_code = -9;
	in.unwatched_since_us = -1;
	in.last_activity_us = INT64_C(1796230000123456);
	in.started_at_us = INT64_MAX;
	in.subscribers = 0xffffffffu;
	round_trip(MSG_LIST_ITEM, &in, &out);
	cr_assert_eq(out.pid, 4242);
	cr_assert_eq(out.exit_code, -9);
	cr_assert_eq(out.unwatched_since_us, -1);
	cr_assert_eq(out.last_activity_us, INT64_C(1796230000123456));
	cr_assert_eq(out.started_at_us, INT64_MAX);
	cr_assert_eq(out.subscribers, 0xffffffffu);

	memset(&ein, 0, sizeof(ein));
	ein.has_exit_code = 1;
	ein.exit_code = INT32_MIN;
	strcpy(ein.reason, "restarted");
	ein.pos = UINT64_MAX;
	round_trip(MSG_EXIT, &ein, &eout);
	cr_assert_eq(eout.exit_code, INT32_MIN);
	cr_assert_str_eq(eout.reason, "restarted");
	cr_assert_eq(eout.pos, UINT64_MAX);
}

Test(frame, messages_without_fields_encode_to_a_bare_header)
{
	struct frame_hdr	h;

	cr_assert_eq(msg_encode(&fo, MSG_STATS, NULL), 0);
	cr_assert_eq(fo.len, PROTO_HDR_LEN);
	cr_assert_eq(frame_hdr_decode(fo.buf, &h), 0);
	cr_assert_eq(h.len, 0);
	cr_assert_eq(msg_decode(MSG_OK, fo.buf + PROTO_HDR_LEN, 0, NULL), 0);
}

Test(frame, output_prefix_matches_the_generic_encoder)
{
	static const uint8_t	data[] = "hello";
	struct msg_output	in, out;
	uint8_t			prefix[FRAME_OUTPUT_PREFIX];

	in.end = UINT64_C(1796230000000000005);
	in.data = data;
	in.len = 5;
	round_trip(MSG_OUTPUT, &in, &out);
	cr_assert_eq(out.end, in.end);
	cr_assert_eq(out.len, 5);
	cr_assert_eq(memcmp(out.data, "hello", 5), 0);
	frame_output_prefix(prefix, in.end, 5);
	cr_assert_eq(memcmp(prefix, fo.buf, FRAME_OUTPUT_PREFIX), 0);
}

Test(frame, every_truncation_of_a_payload_is_malformed)
{
	struct msg_attach	in, out;
	size_t			n, len;

	memset(&in, 0, sizeof(in));
	strcpy(in.owner, "bob");
	strcpy(in.sid, "abc");
	in.has_pos = 1;
	in.pos = 77;
	strcpy(in.actor, "bob@::1");
	cr_assert_eq(msg_encode(&fo, MSG_ATTACH, &in), 0);
	len = fo.len - PROTO_HDR_LEN;
	for (n = 0; n < len; n++) {
		errno = 0;
		cr_assert_eq(msg_decode(MSG_ATTACH, fo.buf + PROTO_HDR_LEN, n,
		    &out), -1, "truncated to %zu of %zu decoded", n, len);
		cr_assert_eq(errno, EBADMSG);
	}
}

Test(frame, trailing_bytes_are_malformed)
{
	struct msg_close_reply	in = { 1 }, out;
	uint8_t			buf[2] = { 1, 0 };

	cr_assert_eq(msg_encode(&fo, MSG_CLOSE_REPLY, &in), 0);
	cr_assert_eq(msg_decode(MSG_CLOSE_REPLY, buf, 1, &out), 0);
	cr_assert_eq(msg_decode(MSG_CLOSE_REPLY, buf, 2, &out), -1);
	cr_assert_eq(errno, EBADMSG);
}

Test(frame, text_over_its_limit_is_refused_both_ways)
{
	struct msg_close	in, out;
	uint8_t			payload[4 + PROTO_SID_MAX + 1 + 16];

	/* Encoding: a sid one byte over the limit (no NUL within limit+1). */
	memset(&in, 0, sizeof(in));
	memset(in.sid, 'a', sizeof(in.sid));
	errno = 0;
	cr_assert_eq(msg_encode(&fo, MSG_CLOSE, &in), -1);
	cr_assert_eq(errno, EINVAL);

	/* Decoding: owner "" then a sid length of PROTO_SID_MAX + 1. */
	memset(payload, 'a', sizeof(payload));
	memset(payload, 0, 4);
	payload[4] = 0;
	payload[5] = 0;
	payload[6] = 0;
	payload[7] = PROTO_SID_MAX + 1;
	cr_assert_eq(msg_decode(MSG_CLOSE, payload, sizeof(payload), &out), -1);
	cr_assert_eq(errno, EBADMSG);
}

Test(frame, string_length_past_the_payload_is_refused_without_reading_it)
{
	struct msg_list	out;
	/* all_owners, then an owner claiming 4 GiB with 2 bytes present. */
	uint8_t		payload[] = { 0, 0xff, 0xff, 0xff, 0xff, 'x', 'y' };

	cr_assert_eq(msg_decode(MSG_LIST, payload, sizeof(payload), &out), -1);
	cr_assert_eq(errno, EBADMSG);
}

Test(frame, nul_inside_text_is_malformed)
{
	struct msg_list	out;
	uint8_t		payload[] = { 0, 0, 0, 0, 3, 'a', 0, 'b' };

	cr_assert_eq(msg_decode(MSG_LIST, payload, sizeof(payload), &out), -1);
	cr_assert_eq(errno, EBADMSG);
}

Test(frame, empty_output_is_malformed)
{
	struct msg_output	in = { 1, NULL, 0 }, out;
	uint8_t			payload[8] = { 0 };

	cr_assert_eq(msg_encode(&fo, MSG_OUTPUT, &in), -1);
	cr_assert_eq(msg_decode(MSG_OUTPUT, payload, 8, &out), -1);
}

Test(frame, oversized_header_is_refused_before_any_allocation)
{
	struct frame_hdr	h;
	uint8_t			buf[PROTO_HDR_LEN];

	frame_hdr_encode(buf, MSG_INPUT, PROTO_MAX_PAYLOAD);
	cr_assert_eq(frame_hdr_decode(buf, &h), 0);
	frame_hdr_encode(buf, MSG_INPUT, PROTO_MAX_PAYLOAD + 1);
	errno = 0;
	cr_assert_eq(frame_hdr_decode(buf, &h), -1);
	cr_assert_eq(errno, EMSGSIZE);
	cr_assert_eq(h.len, PROTO_MAX_PAYLOAD + 1);
}

Test(frame, bad_version_is_reported_with_the_header_filled)
{
	struct frame_hdr	h;
	uint8_t			buf[PROTO_HDR_LEN];

	frame_hdr_encode(buf, MSG_START, 10);
	buf[2] = PROTO_VERSION + 1;
	errno = 0;
	cr_assert_eq(frame_hdr_decode(buf, &h), -1);
	cr_assert_eq(errno, EPROTO);
	cr_assert_eq(h.type, MSG_START);
	cr_assert_eq(h.version, PROTO_VERSION + 1);
}

Test(frame, header_is_big_endian_on_the_wire)
{
	uint8_t	buf[PROTO_HDR_LEN];

	frame_hdr_encode(buf, 0x0102, 0x01020304);
	cr_assert_eq(buf[0], 0x01);
	cr_assert_eq(buf[1], 0x02);
	cr_assert_eq(buf[2], PROTO_VERSION);
	cr_assert_eq(buf[3], 0);
	cr_assert_eq(buf[4], 0x01);
	cr_assert_eq(buf[7], 0x04);
}

Test(frame, unknown_type_is_refused)
{
	uint8_t	b = 0;

	cr_assert_eq(msg_encode(&fo, 0x0999, &b), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_eq(msg_decode(0x0999, &b, 0, &b), -1);
	cr_assert_eq(errno, EINVAL);
	cr_assert_str_eq(msg_name(0x0999), "unknown");
	cr_assert_str_eq(msg_name(MSG_ATTACH), "MSG_ATTACH");
}

Test(frame, input_over_the_protocol_limit_is_refused)
{
	static uint8_t		big[PROTO_INPUT_MAX + 1];
	struct msg_input	in;

	memset(&in, 0, sizeof(in));
	strcpy(in.sid, "s");
	in.data = big;
	in.len = sizeof(big);
	cr_assert_eq(msg_encode(&fo, MSG_INPUT, &in), -1);
	in.len = PROTO_INPUT_MAX;
	cr_assert_eq(msg_encode(&fo, MSG_INPUT, &in), 0);
}

Test(frame, input_id_of_64_bytes_fits_and_a_reply_says_duplicate)
{
	struct msg_input	in, out;
	struct msg_input_done	din, dout;

	memset(&in, 0, sizeof(in));
	strcpy(in.sid, "s");
	memset(in.input_id, 'a', PROTO_INPUT_ID_MAX);
	round_trip(MSG_INPUT, &in, &out);
	cr_assert_eq(strlen(out.input_id), PROTO_INPUT_ID_MAX, "64 bytes fit");
	din.duplicate = 1;
	round_trip(MSG_INPUT_DONE, &din, &dout);
	cr_assert_eq(dout.duplicate, 1);
}
