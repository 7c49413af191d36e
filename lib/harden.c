/*
 * harden.c -- non-dumpable daemons and a wiped environment (harden.h).
 */
#include <sys/prctl.h>

#include <stdlib.h>
#include <string.h>

#include "harden.h"

extern char **environ;

static const char *const harden_names[] = { "PATH", "HOME", "USER", "LOGNAME",
	"SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR", NULL };
static const char *const harden_shell_prefixes[] = { "LC_", "XDG_", NULL };
static const char *const harden_daemon_prefixes[] = { "LC_", "XDG_", "PTYD_",
	NULL };

const struct harden_allow harden_shell_env = { harden_names,
	harden_shell_prefixes };
const struct harden_allow harden_daemon_env = { harden_names,
	harden_daemon_prefixes };

int
harden_env_allowed(const struct harden_allow *a, const char *entry)
{
	const char *eq = strchr(entry, '=');
	size_t	    len, i, plen;

	if (eq == NULL || eq == entry)
		return (0);
	len = (size_t)(eq - entry);
	for (i = 0; a->names != NULL && a->names[i] != NULL; i++)
		if (strlen(a->names[i]) == len &&
		    strncmp(entry, a->names[i], len) == 0)
			return (1);
	for (i = 0; a->prefixes != NULL && a->prefixes[i] != NULL; i++) {
		plen = strlen(a->prefixes[i]);
		if (len > plen && strncmp(entry, a->prefixes[i], plen) == 0)
			return (1);
	}
	return (0);
}

int
harden_nodump(void)
{
	return (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0));
}

/* The environment harden_env made: the process's for its whole life.
 * Held here too (external, so no optimiser drops it), so that it stays
 * reachable, and no leak checker calls it lost, once setenv, growing
 * the environment, moves environ to a copy of its own. */
char **harden_kept;

void
harden_env(const struct harden_allow *a)
{
	char **old = environ, **keep, *copy;
	size_t n, i, j;

	if (old == NULL)
		return;
	for (n = 0; old[n] != NULL; n++)
		;
	/* Out of memory this early: keep nothing rather than everything. */
	if ((keep = calloc(n + 1, sizeof(*keep))) == NULL) {
		for (i = 0; i < n; i++)
			memset(old[i], 0, strlen(old[i]));
		environ = NULL;
		return;
	}
	for (i = j = 0; i < n; i++) {
		if (harden_env_allowed(a, old[i]) &&
		    (copy = strdup(old[i])) != NULL)
			keep[j++] = copy;
		/* The original bytes, allowed or not: /proc/PID/environ
		 * reads exactly these. */
		memset(old[i], 0, strlen(old[i]));
	}
	environ = harden_kept = keep;
}

char **
harden_env_filter(const struct harden_allow *a)
{
	char **out;
	size_t n, i, j;

	for (n = 0; environ != NULL && environ[n] != NULL; n++)
		;
	if ((out = calloc(n + 1, sizeof(*out))) == NULL)
		return (NULL);
	for (i = j = 0; i < n; i++)
		if (harden_env_allowed(a, environ[i]))
			out[j++] = environ[i];
	return (out);
}
