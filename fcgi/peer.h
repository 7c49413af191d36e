/*
 * peer.h -- which Unix account owns the HTTP client's socket (DESIGN 6,
 * "Local means this account").
 *
 * Owns: finding the TCP socket on this host whose local end is the HTTP
 * client's address and port and whose remote end is the server's, and
 * reading its owner's uid: from the kernel's socket diagnostics (netlink
 * NETLINK_SOCK_DIAG, an exact lookup by the four-tuple), else from
 * /proc/net/tcp and tcp6.  Does not own: deciding whether that uid may in
 * (handlers.c compares it with the account and root) or parsing addresses
 * (gate.c).
 *
 * A client on another host has no such socket here: not found, so not
 * local.  Neither is a client behind a proxy (the socket is the proxy's),
 * which is why the gate only asks this for a raw peer without forwarded
 * headers.
 */
#ifndef FRONT_PEER_H
#define FRONT_PEER_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include "gate.h"

/* One end pair of a TCP connection, the client's view. */
struct peer_key {
	struct gate_ip local;  /* the client: REMOTE_ADDR */
	uint16_t       lport;  /* REMOTE_PORT */
	struct gate_ip remote; /* the server: SERVER_ADDR */
	uint16_t       rport;  /* SERVER_PORT */
};

/*
 * Fill key from the four CGI values.  0, or -1 if any is missing or
 * malformed.
 */
int peer_key_parse(struct peer_key *, const char *remote_addr,
    const char *remote_port, const char *server_addr, const char *server_port);

/*
 * The uid owning the client's socket.  0 with *uid, or -1: not found on
 * this host, or found without an owner (errno ENOENT), or the lookup
 * failed (errno set).  A socket without an owner is one no file refers to
 * any more (TIME_WAIT, NEW_SYN_RECV, orphaned): the kernel reports uid 0
 * for it, and a client can make its own socket one by closing it right
 * after sending its request.
 */
int peer_uid(const struct peer_key *, uid_t *uid);

/*
 * One line of /proc/net/tcp or tcp6 (header lines give -1).  0 with the
 * line's key and uid filled in, or -1.  Exposed for the unit tests.
 */
int peer_proc_line(const char *line, struct peer_key *, uid_t *uid);

/* The same lookup through /proc only (the fallback), for the tests. */
int peer_uid_proc(const struct peer_key *, uid_t *uid);

#endif /* FRONT_PEER_H */
