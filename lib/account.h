/*
 * account.h -- the account a daemon runs as, from the password database,
 * not from an environment another account may have left behind.
 *
 * Owns: making HOME, USER, LOGNAME and SHELL agree with getpwuid(getuid())
 * at start.  Does not own: which variables reach a shell (harden.c's
 * allowlist, which lets these four through) or the paths derived from
 * HOME (the settings).
 */
#ifndef PTYD_ACCOUNT_H
#define PTYD_ACCOUNT_H

/*
 * Called once, early, single-threaded (setenv).  A process started as
 * another account (spawn-fcgi -u, su without -, sudo -u) keeps that
 * account's HOME=/root, USER=root; its shells would then show the wrong
 * home.  Each variable is set from the password entry when:
 *   HOME     is missing, relative, not a directory, or not owned by us
 *            (a HOME of our own, a test's or a container's, is kept);
 *   USER,
 *   LOGNAME  is missing or another name;
 *   SHELL    is missing, relative or not an executable file.
 * 0, or -1 with nothing changed when the uid has no password entry.
 */
int account_fix_env(void);

#endif /* PTYD_ACCOUNT_H */
