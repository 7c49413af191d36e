/*
 * test_config.c -- the settings of the three programs (lib/config.c): the
 * file syntax and its errors with line numbers, quoting, list keys, keys
 * of another program, the precedence default < file < environment <
 * command line with each value's origin, the paths derived from
 * state_dir, the checks on values, --print-config, and that the table's
 * defaults are ptyd's (ptyd/term.c).  Each test runs in its own process
 * (Criterion forks), so setting its environment is safe.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>

#include <sys/stat.h>

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "ptyd.h"

static char dir[] = "/tmp/ptyd-config-XXXXXX";

static void
setup(void)
{
	static const char *const env[] = { "PTYD_CONFIG", "PTYD_IDLE_GRACE",
		"PTYD_SOCKET", "PTYD_DB", "PTYD_STATE_DIR", "PTYD_SHELL_ARG",
		"PTYD_AUTH", "PTYD_LOG", "PTYD_PIDFILE", NULL };
	size_t			 i;

	for (i = 0; env[i] != NULL; i++)
		unsetenv(env[i]);
	cr_assert_not_null(mkdtemp(dir));
}

static void
teardown(void)
{
	char cmd[PATH_MAX];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	(void)system(cmd);
}

TestSuite(config, .init = setup, .fini = teardown);

/* Write text to dir/name; returns the path (static buffer). */
static const char *
write_file(const char *name, const char *text)
{
	static char path[PATH_MAX];
	FILE	   *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	cr_assert_not_null(fp = fopen(path, "w"));
	fputs(text, fp);
	fclose(fp);
	return (path);
}

static struct config *
new_config(unsigned int prog)
{
	struct config *c = config_new(prog, "test");

	config_set_home(c, dir);
	return (c);
}

/* config_load with argv (NULL-terminated); the exit status or -1. */
static int
load(struct config *c, const char **argv)
{
	static const struct config_args a = { "test [options]", NULL, NULL,
		NULL, NULL, 0 };
	int				argc;

	for (argc = 0; argv[argc] != NULL; argc++)
		;
	return (config_load(c, argc, (char **)argv, &a, NULL));
}

static void
expect_error(unsigned int prog, const char *text, const char *want)
{
	struct config *c = new_config(prog);
	const char    *path = write_file("bad.conf", text);
	char	       full[PATH_MAX + 200];

	snprintf(full, sizeof(full), "%s:%s", path, want);
	cr_expect_eq(config_file(c, path, CONFIG_USER, 1), -1, "%s", text);
	cr_expect_str_eq(config_error(c), full);
	config_free(c);
}

Test(config, file_comments_blanks_whitespace_and_quotes)
{
	struct config *c = new_config(CONFIG_PTYD);
	const char    *path;
	char	       origin[PATH_MAX + 16];

	path = write_file("ptyd.conf",
	    "# a comment\n"
	    "\n"
	    "   \t# an indented comment\n"
	    "  idle_grace\t=   60  \n"
	    "log_level=debug\r\n"
	    "shell_arg = \"-c  # not a comment\"\n"
	    "shell_arg = \"say \\\"hi\\\" \\\\ bye\"\n"
	    "pidfile = \"\"\n");
	cr_assert_eq(config_file(c, path, CONFIG_USER, 1), 0, "%s",
	    config_error(c));
	cr_expect_eq(config_us(c, CONFIG_IDLE_GRACE), 60 * 1000000LL);
	snprintf(origin, sizeof(origin), "%s:4", path);
	cr_expect_str_eq(config_origin(c, CONFIG_IDLE_GRACE), origin);
	cr_expect_eq(config_level(c, CONFIG_IDLE_GRACE), CONFIG_USER);
	cr_expect_str_eq(config_str(c, CONFIG_LOG_LEVEL), "debug");
	cr_expect_eq(config_num(c, CONFIG_LOG_LEVEL), 0);
	size_t	     n;
	char *const *args = config_list(c, CONFIG_SHELL_ARG, &n);
	cr_assert_eq(n, 2);
	cr_expect_str_eq(args[0], "-c  # not a comment");
	cr_expect_str_eq(args[1], "say \"hi\" \\ bye");
	cr_expect_str_eq(config_str(c, CONFIG_PIDFILE), "");
	config_free(c);
}

Test(config, file_errors_name_the_file_and_line)
{
	expect_error(CONFIG_PTYD, "# ok\n\nfoo = 1\n", "3: unknown key 'foo'");
	expect_error(CONFIG_PTYD, "idle_grace 5\n", "1: want 'key = value'");
	expect_error(CONFIG_PTYD, "= 5\n", "1: a value without a key");
	expect_error(CONFIG_PTYD, "\nidle_grace = soon\n",
	    "2: idle_grace: 'soon': want seconds from 0 to 1e+09");
	expect_error(CONFIG_PTYD, "shell_arg = \"open\n",
	    "1: unterminated quote");
	expect_error(CONFIG_PTYD, "shell_arg = \"a\\nb\"\n",
	    "1: a backslash may only escape \" or \\");
	expect_error(CONFIG_PTYD, "shell_arg = \"a\" b\n",
	    "1: text after the closing quote");
	expect_error(CONFIG_FCGI, "x=1\nauth = nobody\n", "1: unknown key 'x'");
	expect_error(CONFIG_FCGI, "auth = nobody\n",
	    "1: auth: 'nobody': want one of none|front");
	/* Even a key of another program must be a key. */
	expect_error(CONFIG_CTL, "idle_grace = 1\nidle_grce = 1\n",
	    "2: unknown key 'idle_grce'");
}

Test(config, missing_files)
{
	struct config *c = new_config(CONFIG_PTYD);
	char	       path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/none.conf", dir);
	cr_expect_eq(config_file(c, path, CONFIG_SYSTEM, 0), 0,
	    "an absent system or account file is no error");
	cr_expect_eq(config_file(c, path, CONFIG_USER, 1), -1);
	cr_expect(strstr(config_error(c), "No such file") != NULL, "%s",
	    config_error(c));
	cr_expect_eq(config_file(c, dir, CONFIG_USER, 1), -1,
	    "a directory is not a file");
	config_free(c);
}

Test(config, another_programs_keys_are_accepted_and_ignored)
{
	struct config *c = new_config(CONFIG_CTL);
	const char    *path;

	path = write_file("ptyd.conf",
	    "idle_grace = not-checked-here\n"
	    "auth = front\nsocket = /s/ptyd.sock\n");
	cr_assert_eq(config_file(c, path, CONFIG_USER, 1), 0, "%s",
	    config_error(c));
	cr_expect_str_eq(config_str(c, CONFIG_SOCKET), "/s/ptyd.sock");
	cr_expect_eq(config_level(c, CONFIG_IDLE_GRACE), CONFIG_DEFAULT);
	config_free(c);
}

Test(config, lists_accumulate_in_a_layer_and_a_higher_layer_replaces)
{
	struct config *c = new_config(CONFIG_PTYD);
	const char    *sys, *user;
	char *const   *l;
	size_t	       n;

	sys = write_file("sys.conf",
	    "workspace_root = /a\nworkspace_root = /b\n"
	    "shell_arg = -l\n");
	cr_assert_eq(config_file(c, sys, CONFIG_SYSTEM, 1), 0);
	l = config_list(c, CONFIG_WORKSPACE_ROOT, &n);
	cr_assert_eq(n, 2);
	cr_expect_str_eq(l[0], "/a");
	cr_expect_str_eq(l[1], "/b");
	user = write_file("user.conf",
	    "workspace_root = /c\nshell_arg = \"\"\n");
	cr_assert_eq(config_file(c, user, CONFIG_USER, 1), 0);
	l = config_list(c, CONFIG_WORKSPACE_ROOT, &n);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(l[0], "/c");
	config_list(c, CONFIG_SHELL_ARG, &n);
	cr_expect_eq(n, 0, "\"\" empties a list");
	/* Scalars: the last wins within a layer; a lower layer never. */
	cr_assert_eq(config_set(c, CONFIG_LINGER, "5", CONFIG_USER, "u:1"), 0);
	cr_assert_eq(config_set(c, CONFIG_LINGER, "6", CONFIG_USER, "u:2"), 0);
	cr_assert_eq(config_set(c, CONFIG_LINGER, "7", CONFIG_SYSTEM, "s:1"),
	    0);
	cr_expect_eq(config_us(c, CONFIG_LINGER), 6000000);
	cr_expect_str_eq(config_origin(c, CONFIG_LINGER), "u:2");
	config_free(c);
}

/* default < file < environment < command line, whatever the order. */
Test(config, precedence_and_origins)
{
	struct config *c;
	const char    *path, *argv[8];
	char	       origin[PATH_MAX + 16];

	path = write_file("p.conf",
	    "idle_grace = 10\nlinger = 11\n"
	    "stall_timeout = 12\n");
	snprintf(origin, sizeof(origin), "%s:2", path);
	setenv("PTYD_IDLE_GRACE", "20", 1);
	setenv("PTYD_LINGER", "21", 1);
	setenv("PTYD_MAX_VIEWERS", "", 1); /* empty: not set */
	c = new_config(CONFIG_PTYD);
	argv[0] = "test";
	argv[1] = "--idle-grace";
	argv[2] = "30";
	argv[3] = "--config";
	argv[4] = path;
	argv[5] = NULL;
	cr_assert_eq(load(c, argv), -1, "%s", config_error(c));
	cr_expect_eq(config_us(c, CONFIG_IDLE_GRACE), 30000000);
	cr_expect_str_eq(config_origin(c, CONFIG_IDLE_GRACE), "command line");
	cr_expect_eq(config_us(c, CONFIG_LINGER), 21000000);
	cr_expect_str_eq(config_origin(c, CONFIG_LINGER), "env PTYD_LINGER");
	cr_expect_eq(config_us(c, CONFIG_STALL_TIMEOUT), 12000000);
	snprintf(origin, sizeof(origin), "%s:3", path);
	cr_expect_str_eq(config_origin(c, CONFIG_STALL_TIMEOUT), origin);
	cr_expect_eq(config_us(c, CONFIG_REAP_INTERVAL), 60000000);
	cr_expect_str_eq(config_origin(c, CONFIG_REAP_INTERVAL), "default");
	cr_expect_eq(config_num(c, CONFIG_MAX_VIEWERS), 32);
	cr_expect_str_eq(config_file_given(c), path);
	config_free(c);
}

Test(config, account_file_over_system_file_and_ptyd_config_replaces_both)
{
	struct config *c;
	const char    *argv[] = { "test", NULL };
	const char    *other;
	char	       path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/.config", dir);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/.config/ptyd", dir);
	cr_assert_eq(mkdir(path, 0700), 0);
	write_file(".config/ptyd/ptyd.conf", "linger = 3\n");
	c = new_config(CONFIG_PTYD);
	cr_assert_eq(load(c, argv), -1, "%s", config_error(c));
	cr_expect_eq(config_us(c, CONFIG_LINGER), 3000000);
	snprintf(path, sizeof(path), "%s/.config/ptyd/ptyd.conf:1", dir);
	cr_expect_str_eq(config_origin(c, CONFIG_LINGER), path);
	cr_expect_null(config_file_given(c));
	config_free(c);

	other = write_file("other.conf", "idle_grace = 4\n");
	setenv("PTYD_CONFIG", other, 1);
	c = new_config(CONFIG_PTYD);
	cr_assert_eq(load(c, argv), -1, "%s", config_error(c));
	cr_expect_eq(config_us(c, CONFIG_IDLE_GRACE), 4000000);
	cr_expect_eq(config_level(c, CONFIG_LINGER), CONFIG_DEFAULT,
	    "PTYD_CONFIG replaces the account's file");
	cr_expect_str_eq(config_file_given(c), other);
	config_free(c);
}

Test(config, a_given_file_must_exist_and_a_bad_one_stops_the_program)
{
	struct config *c = new_config(CONFIG_PTYD);
	const char    *argv[] = { "test", "--config", "/nonexistent/p.conf",
		   NULL };
	const char    *bad[] = { "test", "--config", NULL, NULL };

	cr_expect_eq(load(c, argv), 1);
	config_free(c);
	bad[2] = write_file("bad.conf", "nope = 1\n");
	c = new_config(CONFIG_PTYD);
	cr_expect_eq(load(c, bad), 1);
	cr_expect(strstr(config_error(c), "bad.conf:1: unknown key 'nope'"));
	config_free(c);
}

Test(config, command_line_help_version_and_wrong_options)
{
	const char    *help[] = { "test", "--help", NULL };
	const char    *version[] = { "test", "--version", NULL };
	const char    *wrong[] = { "test", "--no-such-option", NULL };
	const char    *operand[] = { "test", "stray", NULL };
	const char    *badval[] = { "test", "--max-terminals", "0", NULL };
	const char    *fcgi_only[] = { "test", "--listen", "/x", NULL };
	struct config *c;

	cr_redirect_stdout();
	cr_redirect_stderr();
	c = new_config(CONFIG_PTYD);
	cr_expect_eq(load(c, help), 0);
	config_free(c);
	c = new_config(CONFIG_PTYD);
	cr_expect_eq(load(c, version), 0);
	config_free(c);
	c = new_config(CONFIG_PTYD);
	cr_expect_eq(load(c, wrong), 2);
	config_free(c);
	c = new_config(CONFIG_PTYD);
	cr_expect_eq(load(c, operand), 2);
	config_free(c);
	c = new_config(CONFIG_PTYD);
	cr_expect_eq(load(c, badval), 2);
	cr_expect_str_eq(config_error(c),
	    "--max-terminals: '0': want 1 to 1000000");
	config_free(c);
	c = new_config(CONFIG_PTYD);
	cr_expect_eq(load(c, fcgi_only), 2, "ptyd has no --listen");
	config_free(c);
}

Test(config, old_option_names_keep_working)
{
	const char    *fcgi[] = { "test", "--ptyd-socket", "/r/p.sock",
		   "--no-autostart", "--socket-mode", "0660", NULL };
	const char    *ptyd[] = { "test", "-v", NULL };
	struct config *c;

	c = new_config(CONFIG_FCGI);
	cr_assert_eq(load(c, fcgi), -1, "%s", config_error(c));
	cr_expect_str_eq(config_str(c, CONFIG_SOCKET), "/r/p.sock");
	cr_expect_eq(config_num(c, CONFIG_AUTOSTART), 0);
	cr_expect_eq(config_num(c, CONFIG_SOCKET_MODE), 0660);
	config_free(c);
	c = new_config(CONFIG_PTYD);
	cr_assert_eq(load(c, ptyd), -1, "%s", config_error(c));
	cr_expect_str_eq(config_str(c, CONFIG_LOG_LEVEL), "debug");
	config_free(c);
}

Test(config, paths_derive_from_state_dir_and_home_not_the_environment)
{
	struct config *c;
	const char    *argv[] = { "test", NULL };
	const char    *state[] = { "test", "--state-dir", "/srv/st", "--db",
		   "~/my.db", NULL };
	char	       want[PATH_MAX];

	setenv("HOME", "/somewhere/else", 1);
	setenv("XDG_RUNTIME_DIR", "/run/user/1", 1);
	c = new_config(CONFIG_PTYD);
	cr_assert_eq(load(c, argv), -1, "%s", config_error(c));
	snprintf(want, sizeof(want), "%s/.local/state/ptyd", dir);
	cr_expect_str_eq(config_str(c, CONFIG_STATE_DIR), want);
	snprintf(want, sizeof(want), "%s/.local/state/ptyd/ptyd.sock", dir);
	cr_expect_str_eq(config_str(c, CONFIG_SOCKET), want);
	config_free(c);

	c = new_config(CONFIG_PTYD);
	cr_assert_eq(load(c, state), -1, "%s", config_error(c));
	snprintf(want, sizeof(want), "%s/my.db", dir);
	cr_expect_str_eq(config_str(c, CONFIG_DB), want, "~ is home");
	cr_expect_str_eq(config_str(c, CONFIG_SOCKET), "/srv/st/ptyd.sock");
	cr_expect_str_eq(config_str(c, CONFIG_LOG), "/srv/st/ptyd.log");
	cr_expect_str_eq(config_str(c, CONFIG_PIDFILE), "/srv/st/ptyd.pid");
	cr_expect_str_eq(config_origin(c, CONFIG_SOCKET), "default");
	config_free(c);

	/* The default is the password database's home: config_new's. */
	c = config_new(CONFIG_CTL, "test");
	cr_assert_eq(load(c, argv), -1, "%s", config_error(c));
	cr_expect_null(strstr(config_str(c, CONFIG_STATE_DIR), "/somewhere"));
	cr_expect_null(strstr(config_str(c, CONFIG_SOCKET), "/run/user"));
	config_free(c);
}

Test(config, relative_paths_are_made_absolute)
{
	struct config *c = new_config(CONFIG_PTYD);
	char	       cwd[PATH_MAX], want[PATH_MAX + 16];

	cr_assert_not_null(getcwd(cwd, sizeof(cwd)));
	cr_assert_eq(config_set(c, CONFIG_DB, "x/p.db", CONFIG_CLI, "cl"), 0);
	snprintf(want, sizeof(want), "%s/x/p.db", cwd);
	cr_expect_str_eq(config_str(c, CONFIG_DB), want);
	cr_assert_eq(config_set(c, CONFIG_LOG, "syslog", CONFIG_CLI, "cl"), 0);
	cr_expect_str_eq(config_str(c, CONFIG_LOG), "syslog", "a bare word");
	cr_expect_eq(config_set(c, CONFIG_DB, "", CONFIG_CLI, "cl"), -1);
	config_free(c);
}

Test(config, a_socket_path_too_long_is_refused_naming_the_key)
{
	struct config *c = new_config(CONFIG_FCGI);
	char	       longdir[200];

	memset(longdir, 'd', sizeof(longdir));
	longdir[0] = '/';
	longdir[sizeof(longdir) - 1] = '\0';
	cr_assert_eq(config_set(c, CONFIG_STATE_DIR, longdir, CONFIG_ENV,
			 "env PTYD_STATE_DIR"),
	    0);
	cr_expect_eq(config_derive(c), -1);
	cr_expect(strncmp(config_error(c), "socket: ", 8) == 0, "%s",
	    config_error(c));
	config_free(c);
}

Test(config, no_home_and_no_state_dir_is_an_error)
{
	struct config *c = new_config(CONFIG_CTL);

	config_set_home(c, NULL);
	cr_expect_eq(config_derive(c), -1);
	cr_expect(strstr(config_error(c), "set state_dir") != NULL);
	config_free(c);
}

Test(config, value_checks)
{
	static const struct {
		enum config_key k;
		const char     *v;
		int		ok;
		long long	num;
	} cases[] = {
		{ CONFIG_IDLE_GRACE, "1.5", 1, 1500000 },
		{ CONFIG_IDLE_GRACE, "0", 1, 0 },
		{ CONFIG_IDLE_GRACE, ".25", 1, 250000 },
		{ CONFIG_IDLE_GRACE, "-1", 0, 0 },
		{ CONFIG_IDLE_GRACE, "1e3", 0, 0 },
		{ CONFIG_IDLE_GRACE, "1.2.3", 0, 0 },
		{ CONFIG_IDLE_GRACE, ".", 0, 0 },
		{ CONFIG_IDLE_GRACE, "inf", 0, 0 },
		{ CONFIG_REAP_INTERVAL, "0.5", 0, 0 },
		{ CONFIG_STALL_TIMEOUT, "0.1", 1, 100000 },
		{ CONFIG_STALL_TIMEOUT, "0.05", 0, 0 },
		{ CONFIG_MAX_TERMINALS, "1000000", 1, 1000000 },
		{ CONFIG_MAX_TERMINALS, "1000001", 0, 0 },
		{ CONFIG_MAX_TERMINALS, "+5", 0, 0 },
		{ CONFIG_MAX_TERMINALS, "5k", 0, 0 },
		{ CONFIG_RING_SIZE, "64k", 1, 65536 },
		{ CONFIG_RING_SIZE, "2M", 1, 2097152 },
		{ CONFIG_RING_SIZE, "1023", 0, 0 },
		{ CONFIG_RING_SIZE, "99999999999999999999", 0, 0 },
		{ CONFIG_INPUT_LIMIT, "1k", 0, 0 },
		{ CONFIG_SHELL_UMASK, "0027", 1, 027 },
		{ CONFIG_SHELL_UMASK, "8", 0, 0 },
		{ CONFIG_SHELL_UMASK, "1777", 0, 0 },
		{ CONFIG_SOCKET_MODE, "0640", 1, 0640 },
		{ CONFIG_SOCKET_MODE, "0666", 0, 0 },
		{ CONFIG_SOCKET_MODE, "0060", 0, 0 },
		{ CONFIG_AUTOSTART, "off", 1, 0 },
		{ CONFIG_AUTOSTART, "true", 1, 1 },
		{ CONFIG_AUTOSTART, "maybe", 0, 0 },
		{ CONFIG_ALLOW_REMOTE, "1", 1, 1 },
		{ CONFIG_LOCAL, "address", 1, 1 },
		{ CONFIG_LOCAL, "addr", 0, 0 },
		{ CONFIG_HEARTBEAT, "0", 0, 0 },
		{ CONFIG_HEARTBEAT, "86401", 0, 0 },
		{ CONFIG_PROCESSES, "257", 0, 0 },
	};
	struct config *c = new_config(CONFIG_PTYD | CONFIG_FCGI);
	size_t	       i;
	int	       r;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r = config_set(c, cases[i].k, cases[i].v, CONFIG_CLI, "cl");
		cr_expect_eq(r, cases[i].ok ? 0 : -1, "%s = %s",
		    config_key_name(cases[i].k), cases[i].v);
		if (cases[i].ok && r == 0)
			cr_expect_eq(config_num(c, cases[i].k),
			    (unsigned long long)cases[i].num, "%s = %s",
			    config_key_name(cases[i].k), cases[i].v);
	}
	config_set_range(c, CONFIG_MAX_THREADS, 2, 10);
	cr_expect_eq(config_set(c, CONFIG_MAX_THREADS, "11", CONFIG_CLI, "c"),
	    -1, "a program narrows a range");
	config_free(c);
}

Test(config, print_shows_every_key_its_value_and_origin)
{
	struct config *c = new_config(CONFIG_PTYD);
	const char    *argv[] = { "test", "--linger", "7", "--shell-arg", "-l",
		   "--shell-arg", "two words", "--print-config", NULL };
	char	      *out = NULL;
	size_t	       len = 0;
	FILE	      *fp;
	size_t	       k, lines = 0;

	setenv("PTYD_IDLE_GRACE", "1.5", 1);
	cr_assert_eq(load(c, argv), -1, "%s", config_error(c));
	cr_expect(config_print_requested(c));
	cr_assert_not_null(fp = open_memstream(&out, &len));
	config_print(c, fp);
	fclose(fp);
	cr_expect(strstr(out, "idle_grace = 1.5  # env PTYD_IDLE_GRACE\n"));
	cr_expect(strstr(out, "linger = 7  # command line\n"));
	cr_expect(strstr(out, "reap_interval = 60  # default\n"));
	cr_expect(strstr(out,
	    "shell_arg = -l  # command line\n"
	    "shell_arg = \"two words\"  # command line\n"));
	cr_expect(strstr(out, "shell = \"\"  # default\n"), "%s", out);
	cr_expect_null(strstr(out, "allow_remote ="), "not a key of ptyd");
	/* ptyd's caps depend on it (issue 29: fair by default). */
	cr_expect(strstr(out, "auth = none  # default\n"), "%s", out);
	for (k = 0; k < len; k++)
		lines += out[k] == '\n';
	/* 27 keys (the shares' four with them), the recordings' four, 2
	 * shell_args */
	cr_expect_eq(lines, 32, "%s", out);
	free(out);
	config_free(c);
}

/* The table's defaults are ptyd's own (ptyd/term.c), which the unit
 * tests of ptyd run with. */
Test(config, table_defaults_are_ptyds)
{
	struct config *c = new_config(CONFIG_PTYD);

	cr_expect_eq(config_us(c, CONFIG_IDLE_GRACE), ptyd_conf.idle_grace);
	cr_expect_eq(config_us(c, CONFIG_REAP_INTERVAL),
	    ptyd_conf.reap_interval);
	cr_expect_eq(config_us(c, CONFIG_LINGER), ptyd_conf.linger);
	cr_expect_eq(config_us(c, CONFIG_STALL_TIMEOUT),
	    ptyd_conf.stall_timeout);
	cr_expect_eq(config_num(c, CONFIG_MAX_TERMINALS),
	    ptyd_conf.max_terminals);
	cr_expect_eq(config_num(c, CONFIG_MAX_VIEWERS), ptyd_conf.max_viewers);
	cr_expect_eq(config_num(c, CONFIG_RING_SIZE), ptyd_conf.ring_size);
	cr_expect_eq(config_num(c, CONFIG_INPUT_LIMIT), ptyd_conf.input_limit);
	cr_expect_eq(config_num(c, CONFIG_SHARE_ANONYMOUS),
	    (unsigned long long)ptyd_conf.share_anonymous);
	cr_expect_eq(config_us(c, CONFIG_SHARE_MAX_TTL),
	    ptyd_conf.share_max_ttl);
	cr_expect_eq(config_us(c, CONFIG_SHARE_MIN_TTL),
	    ptyd_conf.share_min_ttl);
	cr_expect_eq(config_num(c, CONFIG_MAX_SHARES), ptyd_conf.max_shares);
	config_free(c);
}
