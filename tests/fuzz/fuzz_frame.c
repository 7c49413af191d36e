/*
 * fuzz_frame.c -- fuzz target for the frame decoder (lib/frame.c).
 *
 * The input is read as a stream of frames, the way ptyd reads a hostile
 * client: each header is validated before its payload is looked at, and a
 * payload is decoded as the message its header names.  Whatever decodes must
 * encode again to the very same bytes (the codec has one layout, so decode
 * is the inverse of encode); anything else aborts.  Built with libFuzzer by
 * `make fuzz` (clang), and run over a deterministic corpus by `make check`
 * through fuzz_main.c, so every build exercises the same property.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* Big enough for any message struct (msg_list_item and msg_start are the
 * largest); aligned for the 64-bit fields. */
union msg_any {
	struct msg_start	start;
	struct msg_input	input;
	struct msg_resize	resize;
	struct msg_close	close;
	struct msg_attach	attach;
	struct msg_list		list;
	struct msg_error	error;
	struct msg_started	started;
	struct msg_close_reply	close_reply;
	struct msg_list_item	list_item;
	struct msg_list_end	list_end;
	struct msg_stats_reply	stats_reply;
	struct msg_attached	attached;
	struct msg_output	output;
	struct msg_gap		gap;
	struct msg_exit		exit;
};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static union msg_any	m;
	static struct frame_out	fo;
	struct frame_hdr	h;
	const uint8_t		*payload;

	while (size >= PROTO_HDR_LEN) {
		if (frame_hdr_decode(data, &h) == -1)
			return (0);	/* ptyd drops the connection here */
		if (h.len > size - PROTO_HDR_LEN)
			return (0);	/* truncated: a reader waits for more */
		payload = data + PROTO_HDR_LEN;
		memset(&m, 0, sizeof(m));
		if (msg_decode(h.type, payload, h.len, &m) == 0) {
			if (msg_encode(&fo, h.type, &m) != 0)
				abort();
			if (fo.len != PROTO_HDR_LEN + h.len ||
			    memcmp(fo.buf, data, 2) != 0 ||
			    memcmp(fo.buf + PROTO_HDR_LEN, payload, h.len) != 0)
				abort();
		}
		data += PROTO_HDR_LEN + h.len;
		size -= PROTO_HDR_LEN + h.len;
	}
	return (0);
}
