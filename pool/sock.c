/*
 * sock.c -- an account's FastCGI socket, made by the master as root and
 * handed to its ptyd.fcgi as fd 0 (as systemd's socket units and
 * spawn-fcgi do).
 *
 * Owns: the socket's folder check, the bind, its owner, group and mode,
 * and its removal.  Why the master and not ptyd.fcgi: the folder can be
 * root's, so no account can remove or replace another's socket (or its
 * own, to take a name nginx trusts); the group can be the web server's,
 * which the account is not in; the mode is right before anyone can
 * connect (bound 0600 under umask 0177, then chown, chmod, listen); and
 * the socket outlives a restart of ptyd.fcgi, so nginx's connections
 * wait in its backlog instead of failing.  Does not own who may connect
 * beyond the mode (ptyd.fcgi's gate).
 */
#include <sys/fsuid.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pool.h"
#include "util.h"

/*
 * The socket's folder, and every folder above it, must be root's and
 * written by no one else: the bind, chown and chmod below name a path,
 * and a folder on it that an account could rename or write would let it
 * point the path at a file of root's.  A sticky folder (/tmp) above is
 * fine (no one may rename root's folder in it), but not as the socket's
 * own: the socket is the account's once chowned, and in a sticky folder
 * its owner may unlink it and put a socket or a link of its own in its
 * place, under the name nginx trusts.  A missing folder is made 0755.
 * 0, or -1 (logged).
 */
static int
sock_folder(const struct pool_acct *a)
{
	char	    dir[PATH_MAX], failed[PATH_MAX];
	char	   *slash;
	struct stat st;
	int	    own = 1; /* the socket's own folder */

	if (util_mkparents(a->listen, 0755, failed, sizeof(failed)) == -1) {
		plog_warn("%s: listen: cannot make %s", a->name, failed);
		return (-1);
	}
	snprintf(dir, sizeof(dir), "%s", a->listen);
	while ((slash = strrchr(dir, '/')) != NULL) {
		slash[slash == dir ? 1 : 0] = '\0';
		if (lstat(dir, &st) == -1) {
			plog_warn("%s: listen: %s", a->name, dir);
			return (-1);
		}
		if (!S_ISDIR(st.st_mode) || st.st_uid != 0 ||
		    ((st.st_mode & 022) != 0 &&
			((st.st_mode & S_ISVTX) == 0 || own))) {
			plog_warnx("%s: listen: %s must be a folder of root's "
				   "that no one else may write",
			    a->name, dir);
			return (-1);
		}
		if (slash == dir)
			break;
		own = 0;
	}
	return (0);
}

int
sock_open(struct pool_acct *a)
{
	struct sockaddr_un sun;
	struct stat	   st;
	mode_t		   old;
	int		   fd = -1;

	if (a->listen_fd != -1)
		return (0);
	if (sock_folder(a) == -1)
		return (-1);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", a->listen);
	/* Replace a socket left by an earlier run, never another file. */
	if (lstat(a->listen, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			plog_warnx("%s: listen: %s is not a socket", a->name,
			    a->listen);
			return (-1);
		}
		(void)unlink(a->listen);
	}
	/* The socket's inode (what /proc/PID/fd/0 shows) is the owner's,
	 * not root's: nothing root made is left in the account's hands. */
	(void)setfsuid(a->sock_uid);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	(void)setfsuid(0);
	if (fd == -1) {
		plog_warn("%s: socket", a->name);
		return (-1);
	}
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		umask(old);
		plog_warn("%s: bind %s", a->name, a->listen);
		goto fail;
	}
	umask(old);
	/* Neither follows a link, should the socket have become one. */
	if (lchown(a->listen, a->sock_uid, a->sock_gid) == -1 ||
	    fchmodat(AT_FDCWD, a->listen, a->sock_mode, AT_SYMLINK_NOFOLLOW) ==
		-1 ||
	    listen(fd, SOMAXCONN) == -1) {
		plog_warn("%s: listen on %s", a->name, a->listen);
		(void)unlink(a->listen);
		goto fail;
	}
	a->listen_fd = fd;
	return (0);
fail:
	close(fd);
	return (-1);
}

void
sock_close(struct pool_acct *a)
{
	struct stat st;

	if (a->listen_fd == -1)
		return;
	close(a->listen_fd);
	a->listen_fd = -1;
	if (lstat(a->listen, &st) == 0 && S_ISSOCK(st.st_mode))
		(void)unlink(a->listen);
}
