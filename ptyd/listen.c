/*
 * listen.c -- the Unix socket ptyd.fcgi, ptydctl and the tests connect to.
 *
 * Owns: the socket directory checks, the listening fd, the accept path
 * with its SO_PEERCRED check, and the reserve fd that lets accept shed a
 * connection on EMFILE instead of spinning on it.  Does not own: what a
 * connection does (conn.c).
 *
 * The directory is the access control (DESIGN section 5): it must be ours
 * and 0700, so we create it that way and refuse one someone else made or
 * opened up.  A socket file left by a dead daemon is unlinked only after a
 * connect to it is refused, so two daemons never steal each other's path.
 */
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "ev.h"
#include "listen.h"
#include "log.h"
#include "util.h"

#define LISTEN_BACKLOG	  512
#define LISTEN_BACKOFF	  (100 * 1000)	   /* us after EMFILE */
#define LISTEN_EMFILE_LOG (10 * 1000000LL) /* one line per 10 s */

static int	       listen_fd = -1;
static int	       listen_reserve = -1;
static char	       listen_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static struct ev_io    listen_io;
static struct ev_timer listen_backoff;
static int64_t	       listen_emfile_logged = -LISTEN_EMFILE_LOG;
static uid_t	       listen_uid; /* ours: peers must match, or be root */

int
listen_check_dir(const char *dir, int create)
{
	struct stat st;

	if (lstat(dir, &st) == -1) {
		if (errno != ENOENT || !create) {
			log_warn("socket directory %s", dir);
			return (-1);
		}
		if (mkdir(dir, 0700) == -1 && errno != EEXIST) {
			log_warn("mkdir %s", dir);
			return (-1);
		}
		if (lstat(dir, &st) == -1) {
			log_warn("socket directory %s", dir);
			return (-1);
		}
	}
	if (!S_ISDIR(st.st_mode)) {
		log_warnx("socket directory %s: not a directory", dir);
		return (-1);
	}
	if (st.st_uid != getuid()) {
		log_warnx("socket directory %s: owned by uid %lu, not us", dir,
		    (unsigned long)st.st_uid);
		return (-1);
	}
	if ((st.st_mode & 077) != 0) {
		log_warnx("socket directory %s: mode %03o, must be 0700", dir,
		    (unsigned int)(st.st_mode & 0777));
		return (-1);
	}
	return (0);
}

/* mkdir -p for the parents (0700 when we create them), then check dir. */
static int
listen_make_dir(const char *dir)
{
	char failed[PATH_MAX];

	if (util_mkparents(dir, 0700, failed, sizeof(failed)) == -1) {
		log_warn("socket directory %s: mkdir %s", dir,
		    errno == ENAMETOOLONG ? "(too long)" : failed);
		return (-1);
	}
	return (listen_check_dir(dir, 1));
}

/* A socket already at path: refuse if a daemon answers, else unlink. */
static int
listen_stale(const struct sockaddr_un *sun)
{
	struct stat st;
	int	    fd, r;

	if (lstat(sun->sun_path, &st) == -1)
		return (errno == ENOENT ? 0 : -1);
	if (!S_ISSOCK(st.st_mode) || st.st_uid != getuid()) {
		log_warnx("%s exists and is not our socket", sun->sun_path);
		return (-1);
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return (-1);
	r = connect(fd, (const struct sockaddr *)sun, sizeof(*sun));
	close(fd);
	if (r == 0) {
		log_warnx("%s: another ptyd is running", sun->sun_path);
		return (-1);
	}
	if (errno != ECONNREFUSED) {
		log_warn("%s: probing the existing socket", sun->sun_path);
		return (-1);
	}
	if (unlink(sun->sun_path) == -1 && errno != ENOENT) {
		log_warn("unlink %s", sun->sun_path);
		return (-1);
	}
	log_info("removed stale socket %s", sun->sun_path);
	return (0);
}

int
listen_open(const char *path)
{
	struct sockaddr_un sun;
	char		   dir[sizeof(sun.sun_path)], *slash;
	mode_t		   old;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	/* dir is as long as sun_path, so this one check bounds both copies. */
	if (strlen(path) >= sizeof(sun.sun_path) || *path != '/') {
		log_warnx("socket path %s: must be absolute and short", path);
		return (-1);
	}
	strcpy(sun.sun_path, path);
	strcpy(dir, path);
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	if (listen_make_dir(dir) == -1)
		return (-1);
	if (listen_stale(&sun) == -1)
		return (-1);

	listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0);
	if (listen_fd == -1) {
		log_warn("socket");
		return (-1);
	}
	old = umask(0177);
	if (bind(listen_fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		umask(old);
		log_warn("bind %s", path);
		goto fail;
	}
	umask(old);
	strcpy(listen_path, path);
	if (chmod(path, 0600) == -1) {
		log_warn("chmod %s", path);
		goto fail;
	}
	if (listen(listen_fd, LISTEN_BACKLOG) == -1) {
		log_warn("listen %s", path);
		goto fail;
	}
	return (0);
fail:
	listen_close();
	return (-1);
}

int
listen_fd_get(void)
{
	return (listen_fd);
}

void
listen_adopt(int fd)
{
	/* The keeper's socket: its path is the keeper's too (never
	 * unlinked by us), it stays open while ptyd comes and goes. */
	listen_fd = fd;
	listen_path[0] = '\0';
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == -1)
		fatal("the keeper's socket");
}

static int
listen_reserve_open(void)
{
	if (listen_reserve == -1)
		listen_reserve = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return (listen_reserve);
}

static void
listen_backoff_cb(void *arg)
{
	(void)arg;
	if (listen_fd != -1)
		(void)ev_io_set(&listen_io, EPOLLIN);
}

static void
listen_accept_cb(int fd, uint32_t events, void *arg)
{
	struct ucred cred;
	socklen_t    len;
	int	     cfd, i;

	(void)events;
	(void)arg;
	/* Bounded, so a flood of connects cannot starve the terminals. */
	for (i = 0; i < 64; i++) {
		cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (cfd == -1) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE) {
				/*
				 * Out of fds: use the reserve to take the
				 * connection off the queue and close it (the
				 * client sees a reset, not a hang), then stop
				 * accepting for a moment instead of spinning.
				 */
				if (ev_now() - listen_emfile_logged >=
				    LISTEN_EMFILE_LOG) {
					log_warnx("accept: out of descriptors, "
						  "shedding connections");
					listen_emfile_logged = ev_now();
				}
				if (listen_reserve != -1) {
					close(listen_reserve);
					listen_reserve = -1;
					cfd = accept4(fd, NULL, NULL,
					    SOCK_CLOEXEC);
					if (cfd != -1)
						close(cfd);
					listen_reserve_open();
				}
				(void)ev_io_set(&listen_io, 0);
				ev_timer_at(&listen_backoff,
				    ev_now() + LISTEN_BACKOFF);
				return;
			}
			if (errno != EAGAIN)
				log_warn("accept");
			return;
		}
		len = sizeof(cred);
		if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) ==
			-1 ||
		    (cred.uid != listen_uid && cred.uid != 0)) {
			log_warnx("refused a connection from uid %ld",
			    len == sizeof(cred) ? (long)cred.uid : -1L);
			close(cfd);
			continue;
		}
		conn_create(cfd);
	}
}

int
listen_start(void)
{
	listen_uid = getuid();
	if (listen_reserve_open() == -1) {
		log_warn("open /dev/null");
		return (-1);
	}
	ev_timer_init(&listen_backoff, listen_backoff_cb, NULL);
	return (
	    ev_io_add(&listen_io, listen_fd, EPOLLIN, listen_accept_cb, NULL));
}

void
listen_pause(int pause)
{
	if (listen_fd == -1)
		return;
	if (pause)
		ev_io_del(&listen_io);
	else if (listen_io.fd == -1 &&
	    ev_io_add(&listen_io, listen_fd, EPOLLIN, listen_accept_cb, NULL) ==
		-1)
		log_warn("listen: epoll add");
}

void
listen_close(void)
{
	ev_timer_stop(&listen_backoff);
	ev_io_del(&listen_io);
	if (listen_fd != -1) {
		close(listen_fd);
		listen_fd = -1;
		if (listen_path[0] != '\0')
			(void)unlink(listen_path);
	}
	listen_path[0] = '\0';
	if (listen_reserve != -1)
		close(listen_reserve);
	listen_reserve = -1;
}
