/*
 * test_harden.c -- the daemons' isolation (lib/harden.c): the allowlists,
 * the wipe of the environment block, and non-dumpable.  Each test runs in
 * its own process (Criterion forks), so wiping its environment is safe.
 */
#include <criterion/criterion.h>

#include <sys/prctl.h>

#include <stdlib.h>
#include <string.h>

#include "harden.h"

extern char	**environ;

Test(harden, daemon_list_keeps_settings_and_the_shell_list_not)
{
	static const char *const keep[] = {
		"PATH=/bin", "HOME=/h", "USER=u", "LOGNAME=u", "SHELL=/bin/sh",
		"LANG=C", "LANGUAGE=en", "TZ=UTC", "TMPDIR=/t", "LC_ALL=C",
		"XDG_RUNTIME_DIR=/run/u", "PTYD_AUTH=front",
	};
	static const char *const drop[] = {
		"AWS_SECRET_ACCESS_KEY=x", "PATHX=1", "PAT=1", "LC_=1",
		"XDG_=1", "PTYD_=1", "=x", "noequals", "HTTP_AUTHORIZATION=x",
		"ptyd_auth=front",
	};
	size_t	i;

	for (i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		cr_expect(harden_env_allowed(&harden_daemon_env, keep[i]), "%s",
		    keep[i]);
	for (i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
		cr_expect_not(harden_env_allowed(&harden_daemon_env, drop[i]),
		    "%s", drop[i]);
	cr_expect_not(harden_env_allowed(&harden_shell_env,
	    "PTYD_AUTH=front"), "a shell never sees the daemon's settings");
	cr_expect(harden_env_allowed(&harden_shell_env, "LC_CTYPE=C"));
}

Test(harden, wipe_keeps_the_allowed_and_zeroes_every_original_byte)
{
	static char	 secret[] = "AWS_SECRET_ACCESS_KEY=hunter2";
	static char	 path[] = "PATH=/usr/bin";
	static char	 setting[] = "PTYD_LOCAL=address";
	static char	*env[] = { secret, path, setting, NULL };

	environ = env;
	harden_env(&harden_daemon_env);
	cr_expect_null(getenv("AWS_SECRET_ACCESS_KEY"));
	cr_expect_str_eq(getenv("PATH"), "/usr/bin");
	cr_expect_str_eq(getenv("PTYD_LOCAL"), "address");
	cr_expect(getenv("PATH") != path + 5, "a copy, not the original");
	/* The bytes /proc/PID/environ reads. */
	cr_expect_eq(secret[0], '\0');
	cr_expect_eq(memchr(secret, 'h', sizeof(secret)), NULL);
	cr_expect_eq(memchr(path, '/', sizeof(path)), NULL);
	cr_expect_eq(memchr(setting, 'a', sizeof(setting)), NULL);
}

Test(harden, filter_for_a_child_leaves_environ_alone)
{
	static char	 secret[] = "HTTP_COOKIE=session=abc";
	static char	 home[] = "HOME=/h";
	static char	*env[] = { secret, home, NULL };
	char		**out;

	environ = env;
	out = harden_env_filter(&harden_daemon_env);
	cr_assert_not_null(out);
	cr_expect_str_eq(out[0], "HOME=/h");
	cr_expect_null(out[1]);
	cr_expect_str_eq(secret, "HTTP_COOKIE=session=abc");
	free(out);
}

Test(harden, nodump_makes_the_process_not_dumpable)
{
	cr_assert_eq(harden_nodump(), 0);
	cr_expect_eq(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 0);
}
