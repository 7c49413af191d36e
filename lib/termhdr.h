/*
 * termhdr.h -- the first TERMHDR_SIZE bytes of a terminal's memfd: what a
 * ptyd that takes over needs to know of a terminal the last one ran
 * (DESIGN 10).  The ring of output follows it in the same memfd.
 *
 * Owns: the layout and its version rule.  Fields are only ever appended;
 * `layout` is the writer's version, `min_reader` the oldest reader that
 * may still make sense of it, so a binary reads any header whose
 * min_reader is at most its own TERMHDR_LAYOUT (one version up or down
 * across an upgrade and back).  Every field has one writer, ptyd, and
 * the positions are 64-bit values stored with release order after the
 * bytes they cover: a ptyd killed at any instant leaves a header that
 * says exactly which bytes of the ring are output (the in-flight record,
 * ptyd/termio.c).  Enumerations are stored as the numbers termstate.h
 * gives them, which are part of this layout and never renumbered.
 *
 * Does not own: mapping it (ptyd/termmem.c) or what is done with it.
 */
#ifndef TERMHDR_H
#define TERMHDR_H

#include <stdatomic.h>
#include <stdint.h>

#define TERMHDR_MAGIC	   "PTYDTRM1"
#define TERMHDR_LAYOUT	   4
#define TERMHDR_MIN_READER 1
#define TERMHDR_SIZE	   16384
#define TERMHDR_STR_OWNER  257	/* PROTO_OWNER_MAX + 1 */
#define TERMHDR_STR_SID	   129	/* PROTO_SID_MAX + 1 */
#define TERMHDR_STR_WS	   4096 /* PATH_MAX */
#define TERMHDR_SHARES	   32	/* max_shares at most */

/* Flags: what the old process knew that is not a state. */
#define TERMHDR_F_SPOKE	 0x1 /* the shell has written */
#define TERMHDR_F_KILLED 0x2 /* SIGKILL sent */
#define TERMHDR_F_HUP	 0x4 /* the slave side is gone */
#define TERMHDR_F_REG	 0x8 /* registered (attachable by its id) */
#define TERMHDR_F_REAPED 0x10 /* its end was told (exit_code is set) */
/* Recorded: the next ptyd starts its next part (DESIGN 4); a reader
 * that knows no recordings ignores it. */
#define TERMHDR_F_RECORD 0x20

/*
 * Layout 3: one live share of the terminal (ptyd/share.c, DESIGN 6), so
 * that a ptyd taking over goes on with the shares as with the terminal.
 * id is written last (with release order) and cleared first: a slot
 * whose id is 0 is free, whatever the rest holds.  Times are
 * CLOCK_MONOTONIC us, like started_at.  The token's hash only, never the
 * token.
 */
struct termhdr_share {
	_Atomic uint32_t id;
	uint32_t	 role; /* PROTO_ROLE_* */
	int64_t		 created_at;
	int64_t		 expires_at;
	uint8_t		 hash[32];
	uint32_t	 has_user;
	char		 user[TERMHDR_STR_OWNER];
};

struct termhdr {
	char	 magic[8];
	uint32_t layout;
	uint32_t min_reader;
	uint64_t ring_size; /* bytes of ring after the header */
	int64_t	 id;
	int64_t	 pid;
	uint64_t tty;  /* the slave's dev_t */
	uint64_t base; /* first position of this incarnation */

	/* The read protocol (ptyd/termio.c). */
	_Atomic uint64_t end;	       /* position after the last byte */
	_Atomic uint64_t inflight_pos; /* where a read in progress lands */
	_Atomic uint64_t inflight_len; /* its exact length; 0: none */
	volatile uint8_t ctrl;	       /* the read's packet byte: 0xff
					  until the kernel writes it */
	uint8_t		 pad0[7];

	/* Written at each change (mirror_mark). */
	uint32_t rows;
	uint32_t cols;
	uint32_t state;	 /* enum term_state */
	uint32_t reason; /* enum term_reason */
	uint32_t flags;	 /* TERMHDR_F_* */
	int32_t	 exit_code;
	int64_t	 started_at; /* CLOCK_MONOTONIC us: valid in any process */
	int64_t	 last_activity;
	int64_t	 unwatched_since;
	uint64_t bytes_in;
	uint64_t bytes_out;

	/* Written once, at spawn. */
	char owner[TERMHDR_STR_OWNER];
	char sid[TERMHDR_STR_SID];
	char workspace[TERMHDR_STR_WS];

	/* Layout 2.  The oldest position a viewer still needed (0: none):
	 * a ptyd taking over reads no further than a ring past it until
	 * the viewers are back, as their backpressure held this one.  Zero
	 * in a layout-1 header (the memfd's pages start zeroed). */
	uint64_t hold;

	/* Layout 3.  The live shares (all free in an older header). */
	struct termhdr_share shares[TERMHDR_SHARES];

	/* Layout 4.  How many viewers the hold waits for (those attached,
	 * and those a take-over still waited for), and the hold they were
	 * counted with: a reader of layout 3 writes hold alone, so the count
	 * goes with hold only while hold_of equals it (0 in an older
	 * header: not known). */
	uint32_t hold_views;
	uint32_t pad1;
	uint64_t hold_of;
};

_Static_assert(sizeof(struct termhdr) <= TERMHDR_SIZE,
    "struct termhdr outgrew its pages");

#endif /* TERMHDR_H */
