/*
 * listen.h -- the daemon's Unix socket: its directory, the socket itself,
 * peer credentials and accept.
 *
 * Owns: the listening fd, the socket path (unlinked at close), the fd
 * reserve for EMFILE.  Does not own: the connections it accepts
 * (conn_create takes each fd).
 */
#ifndef PTYD_LISTEN_H
#define PTYD_LISTEN_H

/* Bind and listen (before daemonizing, so a parent can wait for us and
 * then connect).  0, or -1 with the reason logged. */
int listen_open(const char *path);
/* Start accepting in the loop. */
int listen_start(void);
/* The listening descriptor (-1: none), for the keeper. */
int listen_fd_get(void);
/* Serve a socket the keeper holds (its path is not ours to unlink). */
void listen_adopt(int fd);
/* Stop accepting (1: connections wait in the backlog) or go on (0). */
void listen_pause(int pause);
/* Stop accepting, close and unlink the socket. */
void listen_close(void);

/* The directory and stale-socket checks (exposed for tests). */
int listen_check_dir(const char *dir, int create);

#endif /* PTYD_LISTEN_H */
