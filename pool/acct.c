/*
 * acct.c -- one account file of the pool folder: its name, its settings
 * (read by lib/config.c, the table and checks ptyd and ptyd.fcgi use),
 * who it runs as, and what a new version of it changes.
 *
 * Owns: the rule for a pool's name (the file's, without ".conf"), the
 * two reads of a file (the pool's own keys first, to learn the account
 * whose home a "~" means; then every key, checked as ptyd and ptyd.fcgi
 * will check it), the password and group lookups, and the classes of
 * settings a reload compares (pool.h).  Does not own the processes
 * (proc.c) or the folder's walk (reload.c).
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "pool.h"

/* ptyd's paths: changing one moves its socket or its database, which
 * the keeper holds, so it takes a restart (the shells end). */
static const enum config_key acct_home_keys[] = { CONFIG_STATE_DIR, CONFIG_DB,
	CONFIG_SOCKET, CONFIG_PIDFILE, CONFIG_LOG };

const char *
kind_name(enum pool_kind k)
{
	return (k == POOL_PTYD ? "ptyd" : "ptyd.fcgi");
}

/*
 * "alice.conf" -> "alice": letters, digits, '.', '_' and '-', not
 * starting with '.', at most POOL_NAME_MAX.  0, or -1 for a file that
 * is not an account (an editor's backup, a dot file, README).
 */
int
acct_name_ok(const char *file, char *name, size_t size)
{
	size_t len = strlen(file), i;

	if (len <= 5 || strcmp(file + len - 5, ".conf") != 0)
		return (-1);
	len -= 5;
	if (len > POOL_NAME_MAX || len >= size || file[0] == '.' ||
	    file[0] == '-')
		return (-1);
	for (i = 0; i < len; i++)
		if (!isalnum((unsigned char)file[i]) && file[i] != '.' &&
		    file[i] != '_' && file[i] != '-')
			return (-1);
	memcpy(name, file, len);
	name[len] = '\0';
	return (0);
}

static char *
acct_strdup(const char *s)
{
	char *p;

	if ((p = strdup(s)) == NULL)
		plog_fatal("strdup");
	return (p);
}

void
acct_free(struct pool_acct *a)
{
	size_t i;

	if (a == NULL)
		return;
	free(a->path);
	free(a->user);
	free(a->home);
	free(a->shell);
	free(a->listen);
	free(a->lockfile);
	for (i = 0; i < POOL_NCLASSES; i++)
		free(a->text[i]);
	free(a);
}

static int
acct_is_home_key(enum config_key k)
{
	size_t i;

	for (i = 0; i < sizeof(acct_home_keys) / sizeof(acct_home_keys[0]); i++)
		if (acct_home_keys[i] == k)
			return (1);
	return (0);
}

/* Which class a key of the file belongs to, as a mask of classes. */
static unsigned int
acct_key_classes(enum config_key k)
{
	unsigned int progs = config_key_progs(k), m = 0;

	if (k == CONFIG_LISTEN || k == CONFIG_LISTEN_OWNER ||
	    k == CONFIG_LISTEN_GROUP || k == CONFIG_LISTEN_MODE)
		return (1u << POOL_C_SOCK);
	if (progs == CONFIG_POOL)
		return (1u << POOL_C_IDENT);
	if (acct_is_home_key(k))
		m |= 1u << POOL_C_HOME;
	else if (progs & CONFIG_PTYD)
		m |= 1u << POOL_C_PTYD;
	if (progs & CONFIG_FCGI)
		m |= 1u << POOL_C_FCGI;
	return (m);
}

/* "key=value\n" onto text. */
static void
acct_append(char **text, const char *key, const char *value)
{
	char *n;

	if (asprintf(&n, "%s%s=%s\n", *text != NULL ? *text : "", key, value) ==
	    -1)
		plog_fatal("asprintf");
	free(*text);
	*text = n;
}

/* Each class's text: every value the file set, key by key. */
static void
acct_classes(struct pool_acct *a, const struct config *c)
{
	char *const *v;
	char	     buf[256];
	unsigned int m;
	size_t	     k, i, n;
	int	     cl;

	for (k = 0; k < CONFIG_NKEYS; k++) {
		if (config_level(c, (enum config_key)k) == CONFIG_DEFAULT)
			continue;
		m = acct_key_classes((enum config_key)k);
		v = config_list(c, (enum config_key)k, &n);
		for (cl = 0; cl < POOL_NCLASSES; cl++)
			for (i = 0; (m & (1u << cl)) && i < n; i++)
				acct_append(&a->text[cl],
				    config_key_name((enum config_key)k), v[i]);
	}
	/* What the names stood for when the file was read. */
	snprintf(buf, sizeof(buf), "%lu:%lu", (unsigned long)a->uid,
	    (unsigned long)a->gid);
	acct_append(&a->text[POOL_C_IDENT], buf, a->home);
	snprintf(buf, sizeof(buf), "%lu:%lu:%04o", (unsigned long)a->sock_uid,
	    (unsigned long)a->sock_gid, (unsigned int)a->sock_mode);
	acct_append(&a->text[POOL_C_SOCK], buf, a->listen);
	for (cl = 0; cl < POOL_NCLASSES; cl++)
		if (a->text[cl] == NULL)
			a->text[cl] = acct_strdup("");
}

/* A user's uid, by name or number. */
static int
acct_uid(const char *s, uid_t *uid)
{
	struct passwd *pw;

	/* cppcheck-suppress getpwnamCalled -- one thread */
	if ((pw = getpwnam(s)) == NULL)
		return (-1);
	*uid = pw->pw_uid;
	return (0);
}

static int
acct_gid(const char *s, gid_t *gid)
{
	struct group *gr;

	/* cppcheck-suppress getgrnamCalled -- one thread */
	if ((gr = getgrnam(s)) == NULL)
		return (-1);
	*gid = gr->gr_gid;
	return (0);
}

/* user and group: who the account is.  0, or -1 with cause. */
static int
acct_who(struct pool_acct *a, const struct config *c, char *cause, size_t size)
{
	const char    *user = config_str(c, CONFIG_USER_NAME);
	const char    *group = config_str(c, CONFIG_GROUP_NAME);
	struct passwd *pw;

	if (user == NULL || *user == '\0') {
		snprintf(cause, size, "no user: whose account is it?");
		return (-1);
	}
	/* cppcheck-suppress getpwnamCalled -- one thread */
	if ((pw = getpwnam(user)) == NULL) {
		snprintf(cause, size, "user %s: no such user", user);
		return (-1);
	}
	a->uid = pw->pw_uid;
	a->gid = pw->pw_gid;
	a->user = acct_strdup(pw->pw_name);
	a->home = acct_strdup(
	    pw->pw_dir != NULL && pw->pw_dir[0] == '/' ? pw->pw_dir : "/");
	a->shell = acct_strdup(pw->pw_shell != NULL && *pw->pw_shell != '\0' ?
		pw->pw_shell :
		"/bin/sh");
	if (group != NULL && *group != '\0' && acct_gid(group, &a->gid) == -1) {
		snprintf(cause, size, "group %s: no such group", group);
		return (-1);
	}
	/* A pool never runs as root: that is what it is for. */
	if (a->uid == 0 || a->gid == 0) {
		snprintf(cause, size,
		    "user %s: a pool runs as root's uid or "
		    "gid never",
		    user);
		return (-1);
	}
	return (0);
}

/* listen and its owner, group and mode.  0, or -1 with cause. */
static int
acct_sock(struct pool_acct *a, const struct config *c, char *cause, size_t size)
{
	struct sockaddr_un sun;
	const char	  *listen = config_str(c, CONFIG_LISTEN);
	const char	  *owner = config_str(c, CONFIG_LISTEN_OWNER);
	const char	  *group = config_str(c, CONFIG_LISTEN_GROUP);

	if (listen == NULL || listen[0] != '/') {
		snprintf(cause, size,
		    "listen: want the FastCGI socket's absolute path");
		return (-1);
	}
	if (strlen(listen) >= sizeof(sun.sun_path)) {
		snprintf(cause, size,
		    "listen: longer than a socket path may be");
		return (-1);
	}
	a->listen = acct_strdup(listen);
	a->sock_uid = a->uid;
	a->sock_gid = a->gid;
	if (owner != NULL && *owner != '\0' &&
	    acct_uid(owner, &a->sock_uid) == -1) {
		snprintf(cause, size, "listen_owner %s: no such user", owner);
		return (-1);
	}
	if (group != NULL && *group != '\0' &&
	    acct_gid(group, &a->sock_gid) == -1) {
		snprintf(cause, size, "listen_group %s: no such group", group);
		return (-1);
	}
	a->sock_mode = (mode_t)config_num(c, CONFIG_LISTEN_MODE);
	return (0);
}

/* One read of the file, as the programs of progs read it, with "~" the
 * account's home (NULL: none yet, so "~" is refused). */
static struct config *
acct_read(const char *path, unsigned int progs, const char *home, char *cause,
    size_t size)
{
	struct config *c = config_new(progs, "ptyd-pool");

	config_set_home(c, home);
	if (config_file(c, path, CONFIG_USER, 1) == -1) {
		snprintf(cause, size, "%s", config_error(c));
		config_free(c);
		return (NULL);
	}
	return (c);
}

struct pool_acct *
acct_load(const char *dir, const char *name, char *cause, size_t size)
{
	struct pool_acct *a;
	struct config	 *c = NULL;
	size_t		  i;

	if ((a = calloc(1, sizeof(*a))) == NULL)
		plog_fatal("calloc");
	snprintf(a->name, sizeof(a->name), "%s", name);
	if (asprintf(&a->path, "%s/%s.conf", dir, name) == -1)
		plog_fatal("asprintf");
	a->listen_fd = -1;
	for (i = 0; i < POOL_NKINDS; i++)
		a->proc[i].out = a->proc[i].pidfd = -1;
	/* The pool's own keys first: whose home is "~" in the rest? */
	if ((c = acct_read(a->path, CONFIG_POOL, NULL, cause, size)) == NULL ||
	    acct_who(a, c, cause, size) == -1)
		goto fail;
	config_free(c);
	if ((c = acct_read(a->path, CONFIG_POOL | CONFIG_PTYD | CONFIG_FCGI,
		 a->home, cause, size)) == NULL ||
	    acct_sock(a, c, cause, size) == -1)
		goto fail;
	a->rlimit_files = config_level(c, CONFIG_RLIMIT_FILES) !=
		CONFIG_DEFAULT ?
	    config_num(c, CONFIG_RLIMIT_FILES) :
	    0;
	a->rlimit_nproc = config_level(c, CONFIG_RLIMIT_NPROC) !=
		CONFIG_DEFAULT ?
	    config_num(c, CONFIG_RLIMIT_NPROC) :
	    0;
	acct_classes(a, c);
	/* Where the keeper holds its lock (adopt.c). */
	if (config_derive(c) == -1) {
		snprintf(cause, size, "%s", config_error(c));
		goto fail;
	}
	if (asprintf(&a->lockfile, "%s.lock", config_str(c, CONFIG_DB)) == -1)
		plog_fatal("asprintf");
	config_free(c);
	return (a);
fail:
	config_free(c);
	acct_free(a);
	return (NULL);
}

/* The classes that differ between two reads of one file, as a mask. */
unsigned int
acct_diff(const struct pool_acct *old, const struct pool_acct *new)
{
	unsigned int m = 0;
	int	     cl;

	for (cl = 0; cl < POOL_NCLASSES; cl++)
		if (strcmp(old->text[cl], new->text[cl]) != 0)
			m |= 1u << cl;
	return (m);
}
