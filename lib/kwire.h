/*
 * kwire.h -- the link between ptyd-keeper and the ptyd it runs (DESIGN 10).
 *
 * Owns: the messages, their layout and how one is sent and received with
 * the descriptors it carries.  Two SOCK_SEQPACKET pairs join the two
 * processes, so that a message is one datagram and a call never has to
 * pick its answer out of the keeper's own news:
 *
 *   fd 3, calls:  ptyd -> keeper; only KW_INPUT is answered (KW_INPUT_OK,
 *                 on the same socket, before anything else is sent on it).
 *   fd 4, events: keeper -> ptyd (welcome, terminals, exits, freeze...),
 *                 and nothing the other way.
 *
 * Every message is a struct kw_msg: a type, the terminal it is about, a
 * few numbers whose meaning the type gives, and a text or byte payload.
 * Fixed fields, host order: both ends run on one machine, and a binary
 * whose KW_PROTO differs is refused at KW_HELLO, never misread.  Does not
 * own: what either side does with a message (keeper/, ptyd/keeperlink.c).
 */
#ifndef KWIRE_H
#define KWIRE_H

#include <stddef.h>
#include <stdint.h>

#define KW_PROTO      1
#define KW_CALL_FD    3
#define KW_EVENT_FD   4
#define KW_ENV	      "PTYD_KEEPER" /* set in ptyd's environment: "1" */
#define KW_DATA_MAX   (32 * 1024)   /* input bytes or text in one message */
#define KW_FDS_MAX    2

enum kw_type {
	/* ptyd -> keeper, on the call socket. */
	KW_HELLO = 1,	/* a = KW_PROTO, b = TERMHDR_LAYOUT, c = reader version */
	KW_ADOPT,	/* id; a = pid; fds: master, memfd */
	KW_INPUT,	/* id; a = input limit, b = call number (the answer's
			   b); text = input_id, data = bytes */
	KW_SIGNAL,	/* id; a = signal, b = 1: the process group */
	KW_FORGET,	/* id: ptyd freed it; the keeper lets go */
	KW_READY,	/* adopted everything; waits for KW_GO */
	KW_FROZEN,	/* answer to KW_FREEZE: flushed, stopped */
	/* keeper -> ptyd, answer on the call socket. */
	KW_INPUT_OK,	/* a = enum kw_input */
	/* keeper -> ptyd, on the event socket. */
	KW_WELCOME,	/* a = enum kw_mode, b = generation, c = keeper pid;
			   d = upgrades, e = takeovers, f = 1: the last
			   upgrade failed; text = why; fds: listen, lock */
	KW_TERM,	/* id; a = pid, b = 1: exited, c = wait status;
			   fds: master, memfd */
	KW_TERMS_END,
	KW_EXITED,	/* id; c = wait status */
	KW_FREEZE,
	KW_THAW,	/* d = upgrades, f = 1; text = why the upgrade failed */
	KW_GO,
	KW_EXIT,
	KW_TYPE_MAX
};

enum kw_mode {
	KW_MODE_FRESH = 1, /* the first ptyd of this keeper */
	KW_MODE_CRASH,	   /* the last one died */
	KW_MODE_UPGRADE,   /* the last one is frozen, waiting for us */
};

enum kw_input {
	KW_IN_ACCEPTED = 0,
	KW_IN_DUPLICATE,
	KW_IN_FULL,
	KW_IN_GONE,
	KW_IN_SLOW, /* ptyd's own: the keeper did not answer in time */
};

struct kw_msg {
	uint32_t type;
	uint32_t textlen; /* text: [0, textlen) of buf */
	uint32_t datalen; /* data: [textlen, textlen + datalen) of buf */
	uint32_t pad;
	int64_t	 id;
	int64_t	 a, b, c, d, e, f;
	uint8_t	 buf[KW_DATA_MAX + 256];
};

/* A message of type with its numbers zeroed. */
void kw_init(struct kw_msg *, enum kw_type, int64_t id);
/* Set the text (at most 255 bytes, cut) or the data (at most KW_DATA_MAX). */
void kw_text(struct kw_msg *, const char *);
int  kw_data(struct kw_msg *, const void *, size_t);
/* The text as a C string into out (size > 0). */
void kw_get_text(const struct kw_msg *, char *out, size_t size);
const uint8_t *kw_get_data(const struct kw_msg *, size_t *len);

/*
 * Send m with nfds descriptors (each stays open here).  Blocks only as a
 * full socket buffer would (the peer reads at once).  0 or -1 (errno).
 */
int kw_send(int sock, const struct kw_msg *, const int *fds, int nfds);
/* With sendmsg's flags too (MSG_DONTWAIT). */
int kw_send_flags(int sock, const struct kw_msg *, const int *fds, int nfds,
    int flags);
/*
 * Receive one message: 1, 0 on EOF, -1 (errno; EAGAIN on a nonblocking
 * socket with nothing to read, EPROTO for a malformed message, whose
 * descriptors are closed).  Descriptors beyond *nfds are closed; *nfds
 * says how many came (CLOEXEC).
 */
int kw_recv(int sock, struct kw_msg *, int *fds, int *nfds);
/* kw_recv with a deadline in ms (poll first): 1, 0 on EOF, -1 (ETIMEDOUT). */
int kw_recv_wait(int sock, struct kw_msg *, int *fds, int *nfds, int ms);

const char *kw_type_name(uint32_t);

#endif /* KWIRE_H */
