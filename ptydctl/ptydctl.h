/*
 * ptydctl.h -- what ptydctl's files share: the usage and error exits, the
 * audit actor, and the commands that live outside ptydctl.c.
 *
 * Owns: nothing but these declarations.  Does not own: the command table
 * (ptydctl.c).
 */
#ifndef PTYDCTL_H
#define PTYDCTL_H

/* Usage to stderr, exit 2. */
void __attribute__((noreturn)) usage(void);
/* "ptydctl: what: strerror(errno)", exit 2. */
void __attribute__((noreturn)) die(const char *what);
/* user@ptydctl: who did it, for the audit log. */
const char *ctl_actor(void);
/* ptyd's socket as the settings name it (lib/config.c). */
const char *ctl_socket_path(void);
/* The database as ptyd finds it (the db setting, lib/config.c). */
const char *ctl_db(void);

/* The audit_anchor setting: where prune sends its anchors. */
const char *ctl_audit_anchor(void);
const char *ctl_audit_log(void);
/* --json was given. */
int ctl_want_json(void);
/* s as a JSON string, quotes included, to stdout. */
void ctl_json_str(const char *s);

/* --all was given; the --owner NAME ("" if none). */
int	    ctl_all_owners(void);
const char *ctl_owner_name(void);

/* recordings [--json], play ID [--speed X] [--idle-limit S], and
 * retention now, for prune (ptydctl_rec.c). */
int ctl_recordings(int argc, char **argv);
int ctl_play(int argc, char **argv);
int ctl_prune_recordings(void);

/* prune [--before DAYS|YYYY-MM-DD] [--db PATH] (ptydctl_prune.c). */
int ctl_prune(int argc, char **argv);
/* audit verify [--db PATH] [--anchors FILE|-] (ptydctl_audit.c). */
int ctl_audit(int argc, char **argv);

/* upgrade [--timeout S]: SIGUSR2 to the keeper, its outcome
 * (ptydctl_keeper.c). */
int ctl_upgrade(int argc, char **argv);
/* shutdown [--timeout S]: SIGTERM to the keeper, until it is gone. */
int ctl_shutdown(int argc, char **argv);
/* service [--timeout S]: the main process of the thin ptyd.service. */
int ctl_service(int argc, char **argv);

/* --pools: COMMAND as every account of ptyd-pool's folder dir, for root
 * (ptydctl_pools.c). */
int ctl_pools(const char *dir, int argc, char **argv);

#endif /* PTYDCTL_H */
