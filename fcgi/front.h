/*
 * front.h -- the configuration of one ptyd.fcgi process, shared read-only
 * by every request it serves.
 *
 * Owns: the settings read once at start (command line and the process
 * environment; never from request params).  Does not own: per-request state
 * (struct req in http.h).
 */
#ifndef FRONT_FRONT_H
#define FRONT_FRONT_H

#include <sys/types.h>

#include <stdint.h>

#include "contract.h"
#include "gate.h"
#include "ptyd_client.h"

#define FRONT_BODY_MAX	  CONTRACT_BODY_MAX /* lib/contract.h */
#define FRONT_INPUT_CHARS CONTRACT_INPUT_CHARS
#define FRONT_CALL_MS	  5000 /* one exchange with ptyd */
/* The frame rule's header lines (http_frame_headers), NUL included. */
#define FRONT_FRAME_MAX 1024

struct front_conf {
	struct gate_conf gate;
	uid_t		 account_uid; /* ours: "local" means this */
	struct ptyd_conf ptyd;
	int64_t		 heartbeat_ms; /* --heartbeat, PTYD_HEARTBEAT */
	size_t		 stream_padding; /* CGI: bytes per stream write */
	const char	*pool; /* ptyd-pool's name for us (health, metrics) */
	/* Web users who may read every owner's recordings (DESIGN 4), a
	 * comma-separated list, or NULL. */
	const char *recordings_readers;
	/* Who may frame our answers (frame_ancestors, DESIGN 6), as the
	 * header lines every answer carries. */
	char frame_headers[FRONT_FRAME_MAX];
};

#endif /* FRONT_FRONT_H */
