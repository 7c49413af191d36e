/*
 * test_account.c -- HOME, USER, LOGNAME and SHELL from the password
 * database (lib/account.c), and that they pass the shells' allowlist.
 * Each test runs in its own process (Criterion forks), so changing its
 * environment is safe.
 */
#include <criterion/criterion.h>

#include <sys/stat.h>

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "account.h"
#include "harden.h"

static struct passwd *
me(void)
{
	struct passwd *pw = getpwuid(getuid());

	if (pw == NULL)
		cr_skip_test("no password entry for uid %u", (unsigned)getuid());
	return (pw);
}

Test(account, another_accounts_environment_is_replaced)
{
	struct passwd *pw = me();
	const char    *shell;

	/* What su or spawn-fcgi -u leave: another account's names, a HOME
	 * that is not ours (missing here), no SHELL. */
	setenv("HOME", "/nonexistent/ptyd-test-home", 1);
	setenv("USER", "someone-else", 1);
	unsetenv("LOGNAME");
	unsetenv("SHELL");
	cr_assert_eq(account_fix_env(), 0);
	cr_expect_str_eq(getenv("HOME"), pw->pw_dir);
	cr_expect_str_eq(getenv("USER"), pw->pw_name);
	cr_expect_str_eq(getenv("LOGNAME"), pw->pw_name);
	shell = pw->pw_shell != NULL && *pw->pw_shell != '\0' ? pw->pw_shell :
								 "/bin/sh";
	cr_expect_str_eq(getenv("SHELL"), shell);
	/* And they reach a shell. */
	cr_expect(harden_env_allowed(&harden_shell_env, "HOME=/x"));
	cr_expect(harden_env_allowed(&harden_shell_env, "SHELL=/x"));
}

Test(account, a_home_of_our_own_and_a_runnable_shell_are_kept)
{
	char tmpl[] = "/tmp/ptyd-account-XXXXXX";

	me();
	cr_assert_not_null(mkdtemp(tmpl));
	setenv("HOME", tmpl, 1);
	setenv("SHELL", "/bin/sh", 1);
	cr_assert_eq(account_fix_env(), 0);
	cr_expect_str_eq(getenv("HOME"), tmpl);
	cr_expect_str_eq(getenv("SHELL"), "/bin/sh");
	rmdir(tmpl);
}

Test(account, a_relative_or_unrunnable_shell_is_replaced)
{
	me();
	setenv("SHELL", "sh", 1);
	cr_assert_eq(account_fix_env(), 0);
	cr_expect_str_neq(getenv("SHELL"), "sh");
	setenv("SHELL", "/etc/passwd", 1);
	cr_assert_eq(account_fix_env(), 0);
	cr_expect_str_neq(getenv("SHELL"), "/etc/passwd");
}
