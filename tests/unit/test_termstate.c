/*
 * test_termstate.c -- a terminal's life as a state machine
 * (ptyd/termstate.c, term_set_state in ptyd/termlife.c): the table walked row
 * by row, every pair that is not in it refused, every reason named as
 * DESIGN 3 and 7 name it, and each legal transition applied to a terminal
 * with the timer and the reason the table promises; the database's state
 * names and the audit log's event kinds named alike in C and in
 * sql/schema.sql and sql/audit.sql.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ev.h"
#include "ptyd.h"
#include "term.h"
#include "termstate.h"

#define S	PTYD_SEC

static const struct {
	enum term_state		from, to;
	enum term_timer_use	timer;
} legal[] = {
	{ TERM_RUNNING, TERM_ENDING, TERM_TIMER_KILL },
	{ TERM_RUNNING, TERM_DRAINING, TERM_TIMER_DRAIN },
	{ TERM_RUNNING, TERM_EXITED, TERM_TIMER_LINGER },
	{ TERM_ENDING, TERM_DRAINING, TERM_TIMER_DRAIN },
	{ TERM_ENDING, TERM_EXITED, TERM_TIMER_LINGER },
	{ TERM_DRAINING, TERM_EXITED, TERM_TIMER_LINGER },
};
#define NLEGAL	(sizeof(legal) / sizeof(legal[0]))

Test(termstate, the_table_holds_exactly_the_legal_transitions)
{
	const struct term_transition	*tr;
	size_t				 i;
	int				 from, to, want;

	for (from = 0; from < TERM_NSTATES; from++) {
		for (to = 0; to < TERM_NSTATES; to++) {
			want = -1;
			for (i = 0; i < NLEGAL; i++)
				if ((int)legal[i].from == from &&
				    (int)legal[i].to == to)
					want = (int)i;
			tr = term_transition_find(from, to);
			if (want == -1) {
				cr_expect_null(tr, "%s -> %s must not exist",
				    term_state_name(from), term_state_name(to));
				continue;
			}
			cr_assert_not_null(tr, "%s -> %s",
			    term_state_name(from), term_state_name(to));
			cr_expect_eq(tr->timer, legal[want].timer, "%s -> %s",
			    term_state_name(from), term_state_name(to));
			cr_expect(tr->why != NULL && tr->why[0] != '\0');
		}
	}
	/* Nothing leaves EXITED, nothing returns to RUNNING. */
	for (to = 0; to < TERM_NSTATES; to++) {
		cr_expect_null(term_transition_find(TERM_EXITED, to));
		cr_expect_null(term_transition_find(to, TERM_RUNNING));
	}
}

Test(termstate, every_reason_has_its_wire_audit_and_database_names)
{
	static const struct {
		enum term_reason	 r;
		const char		*wire, *audit, *db;
	} want[] = {
		{ TERM_R_EXIT, "exit", "exit", "exited" },
		{ TERM_R_CLOSED, "closed", "close", "closed" },
		{ TERM_R_RESTARTED, "restarted", "close", "closed" },
		{ TERM_R_REAPED, "reaped", "reap", "reaped" },
		{ TERM_R_EVICTED, "evicted", "evict", "evicted" },
		{ TERM_R_SHUTDOWN, "shutdown", "shutdown", "shutdown" },
	};
	size_t	i;

	cr_expect_null(term_reason_wire(TERM_R_NONE));
	cr_expect_eq(term_reason_audit(TERM_R_NONE), TERM_NEVENTS, "none");
	cr_expect_str_eq(term_dbstate_name(term_reason_db(TERM_R_NONE)),
	    "running");
	cr_assert_eq(sizeof(want) / sizeof(want[0]), TERM_NREASONS - 1);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		cr_expect_str_eq(term_reason_wire(want[i].r), want[i].wire);
		cr_expect_str_eq(term_event_name(term_reason_audit(want[i].r)),
		    want[i].audit);
		cr_expect_str_eq(term_dbstate_name(term_reason_db(want[i].r)),
		    want[i].db);
	}
	cr_expect_str_eq(term_state_name(TERM_DRAINING), "draining");
}

/* The whole of a file of the source tree, NUL-terminated. */
static char *
slurp(const char *rel)
{
	char  path[4096];
	FILE *f;
	char *s;
	long  n;

	snprintf(path, sizeof(path), "%s/%s", PTYD_SRCDIR, rel);
	f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	cr_assert_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	rewind(f);
	s = malloc((size_t)n + 1);
	cr_assert_not_null(s);
	cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
	s[n] = '\0';
	fclose(f);
	return (s);
}

static int
ident_char(char c)
{
	return ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '_');
}

/* Is name one of the n names table gives (NULL past the end)? */
static int
named(const char *(*table)(int), int n, const char *name, size_t len)
{
	const char *s;
	int	    i;

	for (i = 0; i < n; i++)
		if ((s = table(i)) != NULL && strlen(s) == len &&
		    strncmp(s, name, len) == 0)
			return (1);
	return (0);
}

static const char *
dbstate_at(int i)
{
	return (term_dbstate_name((enum term_dbstate)i));
}

static const char *
event_at(int i)
{
	return (term_event_name((enum term_event)i));
}

/*
 * Every literal the SQL compares column col with ("col = 'x'", "col <>
 * 'x'", "col IN ('x', 'y')", also "t.col") is one of the table's names.
 * Returns how many it found; seen[i] is set for each name met.
 */
static int
sql_literals(const char *sql, const char *file, const char *col,
    const char *(*table)(int), int n, int *seen)
{
	const char *p = sql, *q, *e;
	size_t	    cl = strlen(col);
	int	    found = 0, i, list;

	while ((p = strstr(p, col)) != NULL) {
		q = p + cl;
		if ((p > sql && ident_char(p[-1])) || ident_char(*q)) {
			p = q;
			continue;
		}
		while (*q == ' ' || *q == '\t' || *q == '\n')
			q++;
		list = strncmp(q, "IN", 2) == 0 && !ident_char(q[2]);
		if (list)
			q += 2;
		else if (*q == '=')
			q += 1;
		else if (strncmp(q, "<>", 2) == 0)
			q += 2;
		else {
			p = q;
			continue;
		}
		for (;;) {
			while (*q == ' ' || *q == '\t' || *q == '\n' ||
			    *q == '(' || *q == ',')
				q++;
			if (*q != '\'' || (e = strchr(q + 1, '\'')) == NULL)
				break;
			cr_expect(named(table, n, q + 1, (size_t)(e - q - 1)),
			    "%s: %s '%.*s' is no name of ptyd/termstate.c's",
			    file, col, (int)(e - q - 1), q + 1);
			for (i = 0; i < n; i++)
				if (strlen(table(i)) == (size_t)(e - q - 1) &&
				    strncmp(table(i), q + 1,
					(size_t)(e - q - 1)) == 0)
					seen[i] = 1;
			found++;
			q = e + 1;
			if (!list)
				break;
		}
		p = q;
	}
	return (found);
}

/*
 * Regression: the names of the database's states and of the audit log's
 * event kinds were strings repeated in termstate.c, store.c, stats.c and
 * the callers, and schema.sql's list of kinds had fallen behind (screen,
 * takeover, upgrade, upgrade_failed, tamper were missing).  The CHECK on
 * terminals.state holds exactly the C names; the list of kinds above
 * terminal_events (its "-- kinds:" lines) holds exactly the C names; and
 * whatever schema.sql and audit.sql compare state or kind with is a name.
 */
Test(termstate, schema_names_every_state_and_kind_as_c_does)
{
	char	   *schema = slurp("sql/schema.sql");
	char	   *audit = slurp("sql/audit.sql");
	const char *check, *end, *p, *w;
	int	    dbseen[TERM_NDBSTATES] = { 0 };
	int	    evseen[TERM_NEVENTS] = { 0 };
	int	    other[TERM_NEVENTS] = { 0 };
	char	    line[512];
	int	    i;
	size_t	    len;

	/* The CHECK on terminals.state, both ways. */
	check = strstr(schema, "CHECK (state");
	cr_assert_not_null(check, "schema.sql: terminals.state's CHECK");
	end = strstr(check, "),");
	cr_assert_not_null(end);
	len = (size_t)(end - check);
	cr_assert_lt(len, sizeof(line));
	memcpy(line, check, len);
	line[len] = '\0';
	cr_expect_gt(sql_literals(line, "schema.sql's CHECK", "state",
			 dbstate_at, TERM_NDBSTATES, dbseen),
	    0);
	for (i = 0; i < TERM_NDBSTATES; i++)
		cr_expect(dbseen[i], "state %s is not in schema.sql's CHECK",
		    term_dbstate_name((enum term_dbstate)i));

	/* The list of kinds, both ways. */
	for (p = schema; (p = strstr(p, "\n-- kinds:")) != NULL;) {
		p += strlen("\n-- kinds:");
		while (*p != '\n' && *p != '\0') {
			while (*p == ' ')
				p++;
			for (w = p; ident_char(*p); p++)
				;
			if (p == w)
				break;
			cr_expect(named(event_at, TERM_NEVENTS, w,
				      (size_t)(p - w)),
			    "schema.sql lists kind %.*s, "
			    "which ptyd/termstate.c does not",
			    (int)(p - w), w);
			for (i = 0; i < TERM_NEVENTS; i++)
				if (strlen(term_event_name(i)) ==
					(size_t)(p - w) &&
				    strncmp(term_event_name(i), w,
					(size_t)(p - w)) == 0)
					evseen[i] = 1;
		}
	}
	for (i = 0; i < TERM_NEVENTS; i++)
		cr_expect(evseen[i], "kind %s is not in schema.sql's list",
		    term_event_name((enum term_event)i));

	/* What the SQL compares with: names, one way. */
	memset(dbseen, 0, sizeof(dbseen));
	sql_literals(schema, "schema.sql", "kind", event_at, TERM_NEVENTS,
	    other);
	cr_expect_gt(sql_literals(audit, "audit.sql", "state", dbstate_at,
			 TERM_NDBSTATES, dbseen),
	    0);
	cr_expect_gt(sql_literals(audit, "audit.sql", "kind", event_at,
			 TERM_NEVENTS, other),
	    0);
	free(schema);
	free(audit);
}

static void
setup(void)
{
	term_init(NULL);
	ptyd_conf.linger = 60 * S;
	ptyd_conf.ring_size = 4096;
}

TestSuite(termstate_apply, .init = setup);

/* A terminal in state from, registered or not, with no process. */
static struct term *
at(enum term_state from, int registered)
{
	struct term	*t;

	t = term_new("", "a", "/tmp", 24, 80, 1000, 0);
	if (registered)
		term_register(t);
	t->state = from;	/* the test's own set-up, not a transition */
	return (t);
}

Test(termstate_apply, each_legal_transition_sets_state_reason_and_timer)
{
	struct term	*t;
	size_t		 i;
	int		 reg;

	for (i = 0; i < NLEGAL; i++) {
		for (reg = 0; reg <= 1; reg++) {
			t = at(legal[i].from, reg);
			term_set_state(t, legal[i].to, TERM_R_CLOSED, S);
			cr_expect_eq(t->state, legal[i].to);
			cr_expect_eq(t->reason, TERM_R_CLOSED);
			cr_expect_eq(term_db_state(t), TERM_DB_CLOSED);
			switch (legal[i].timer) {
			case TERM_TIMER_KILL:
				cr_expect_eq(t->timer.when,
				    S + PTYD_KILL_DELAY / PTYD_HUP_TRIES);
				break;
			case TERM_TIMER_DRAIN:
				cr_expect_eq(t->timer.when,
				    S + PTYD_DRAIN_DEADLINE);
				break;
			case TERM_TIMER_LINGER:
				cr_expect_eq(ev_timer_pending(&t->timer), reg,
				    "a linger only while registered");
				if (reg)
					cr_expect_eq(t->timer.when, S + 60 * S);
				break;
			case TERM_TIMER_STOP:
				cr_expect_not(ev_timer_pending(&t->timer));
				break;
			}
			ev_timer_stop(&t->timer);
			if (t->registered)
				term_unregister(t);
		}
	}
}

Test(termstate_apply, no_reason_keeps_the_one_it_has)
{
	struct term	*t = at(TERM_RUNNING, 1);

	term_set_state(t, TERM_ENDING, TERM_R_REAPED, S);
	term_set_state(t, TERM_DRAINING, TERM_R_NONE, 2 * S);
	cr_expect_eq(t->reason, TERM_R_REAPED, "draining keeps why it ends");
	cr_expect_eq(term_db_state(t), TERM_DB_REAPED);
}

Test(termstate_apply, an_illegal_transition_is_fatal, .exit_code = 1)
{
	struct term	*t = at(TERM_EXITED, 0);

	term_set_state(t, TERM_RUNNING, TERM_R_NONE, S);
}
