/*
 * account.c -- HOME, USER, LOGNAME and SHELL from the password database
 * (account.h).
 */
#include <sys/stat.h>

#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "account.h"

static int
account_home_ok(const char *home, uid_t uid)
{
	struct stat st;

	return (home != NULL && home[0] == '/' && stat(home, &st) == 0 &&
	    S_ISDIR(st.st_mode) && st.st_uid == uid);
}

static int
account_shell_ok(const char *shell)
{
	struct stat st;

	return (shell != NULL && shell[0] == '/' && stat(shell, &st) == 0 &&
	    S_ISREG(st.st_mode) && access(shell, X_OK) == 0);
}

static int
account_set(const char *name, const char *value)
{
	const char *cur = getenv(name);

	if (cur != NULL && strcmp(cur, value) == 0)
		return (0);
	return (setenv(name, value, 1));
}

int
account_fix_env(void)
{
	struct passwd *pw;
	uid_t	       uid = getuid();
	const char    *shell, *user = getenv("USER");
	int	       r = 0, another;

	/* Called before any thread exists. */
	/* cppcheck-suppress getpwuidCalled */
	if ((pw = getpwuid(uid)) == NULL || pw->pw_name == NULL ||
	    pw->pw_dir == NULL)
		return (-1);
	/* An environment made for another account (spawn-fcgi -u from
	 * root's shell, suexec): none of its account's values are ours. */
	another = user != NULL && strcmp(user, pw->pw_name) != 0;
	if (another || !account_home_ok(getenv("HOME"), uid))
		r |= account_set("HOME", pw->pw_dir);
	r |= account_set("USER", pw->pw_name);
	r |= account_set("LOGNAME", pw->pw_name);
	if (another || !account_shell_ok(getenv("SHELL"))) {
		shell = pw->pw_shell;
		if (shell == NULL || shell[0] == '\0')
			shell = "/bin/sh";
		r |= account_set("SHELL", shell);
	}
	return (r == 0 ? 0 : -1);
}
