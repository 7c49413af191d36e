/*
 * recwire.h -- the link between ptyd and ptyd-recorder (DESIGN 4): one
 * SOCK_SEQPACKET pair, one message a datagram.
 *
 * Owns: the message numbers and their layout.  Every message starts with
 * a 16-byte header, integers in network byte order, written and read byte
 * by byte (recwire_put, recwire_get): u8 type, three zero bytes, u32
 * payload length, u64 the recording's id; then the payload.  Messages
 * naming a time carry it first in the payload, as u64 microseconds since
 * the recording began.  Does not own: sending (ptyd/record.c) or the
 * files (recorder/recorder.c).
 *
 * ptyd -> recorder:
 *	REC_OPEN	u16 cols, u16 rows, i64 timestamp (Unix seconds),
 *			then the file's name (at most REC_NAME_MAX bytes)
 *	REC_OUT		u64 t, then output bytes as the pty gave them
 *	REC_RESIZE	u64 t, u16 cols, u16 rows
 *	REC_INPUT	u64 t, then input bytes (only with record_input)
 *	REC_CLOSE	u64 t, then the cut's reason ("": finished)
 * recorder -> ptyd:
 *	REC_END		u8 state (REC_END_*), u64 bytes, 32 bytes SHA-256
 *			(zeros when unknown), then the cut's reason
 */
#ifndef PTYD_RECWIRE_H
#define PTYD_RECWIRE_H

#include <stddef.h>
#include <stdint.h>

#define REC_HDR_LEN    16
#define REC_CHUNK      (32 * 1024) /* output bytes in one REC_OUT at most */
#define REC_MSG_MAX    (REC_HDR_LEN + 8 + REC_CHUNK)
#define REC_NAME_MAX   64
#define REC_REASON_MAX 32
#define REC_SOCK_FD    3 /* the recorder's end of the pair */
#define REC_DIR_FD     4 /* <state_dir>/recordings, opened by ptyd */

enum rec_type {
	REC_OPEN = 1,
	REC_OUT = 2,
	REC_RESIZE = 3,
	REC_INPUT = 4,
	REC_CLOSE = 5,
	REC_END = 6,
};

enum {
	REC_END_FINISHED = 1,
	REC_END_CUT = 2,
};

static inline void
recwire_put(uint8_t *p, uint64_t v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

static inline uint64_t
recwire_get(const uint8_t *p, size_t n)
{
	uint64_t v = 0;
	size_t	 i;

	for (i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return (v);
}

/* The header of a message of type with len bytes of payload. */
static inline void
recwire_hdr(uint8_t *h, enum rec_type type, uint32_t len, int64_t id)
{
	h[0] = (uint8_t)type;
	h[1] = h[2] = h[3] = 0;
	recwire_put(h + 4, len, 4);
	recwire_put(h + 8, (uint64_t)id, 8);
}

#endif /* PTYD_RECWIRE_H */
