-- audit.sql -- ready, read-only queries over ptyd's mirror (schema.sql).
--
-- Every query here only reads, and each runs as it stands with
-- `sqlite3 -readonly`, while ptyd writes (WAL).  The database is
-- $XDG_STATE_HOME/ptyd/ptyd.db, else ~/.local/state/ptyd/ptyd.db, or
-- STATE/ptyd.db under scripts/ptyd-stack.
--
-- All of them:
--	sqlite3 -readonly -header -column DB < sql/audit.sql
-- One, by its name:
--	sed -n '/^-- name: idle_longest$/,/;$/p' sql/audit.sql |
--	    sqlite3 -readonly -header -column DB
-- Parameters (unset, they take the default shown in the query):
--	sqlite3 -readonly -header -column -cmd ".param set :user alice" \
--	    -cmd ".param set :days 30" DB < sql/audit.sql
-- or type the same .param lines at the sqlite3 prompt.
--
-- Run it as the account that runs ptyd.  While ptyd is stopped, another
-- user's sqlite3 (root's, say) leaves DB-wal and DB-shm owned by that
-- user, and ptyd cannot write through them until they are removed.
--
-- Times are Unix seconds (REAL) in the tables; the _utc columns are
-- readable.  "now" is (julianday('now') - 2440587.5) * 86400: Unix seconds
-- that any SQLite version computes.

-- name: connected_now
-- Who is connected now: running terminals with viewers, and the viewers
-- (user@address) whose attach events are not yet matched by a detach of
-- the same actor.
SELECT	t.owner, t.session_id, t.subscribers,
	(SELECT group_concat(who, ', ') FROM (
		SELECT coalesce(e.actor, '?') AS who
		FROM terminal_events AS e
		WHERE e.terminal_id = t.id AND e.kind IN ('attach', 'detach')
		GROUP BY who
		HAVING sum(e.kind = 'attach') > sum(e.kind = 'detach'))
	) AS viewers,
	t.pid, t.workspace,
	datetime(t.started_at, 'unixepoch') AS started_utc,
	round((julianday('now') - 2440587.5) * 86400 - t.last_activity)
	    AS quiet_seconds
FROM terminals AS t
WHERE t.state = 'running' AND t.subscribers > 0
ORDER BY t.owner, t.session_id;

-- name: idle_longest
-- Running terminals nobody watches, longest unwatched first: the reaper's
-- next victims once idle_seconds passes --idle-grace (default 900).
SELECT	owner, session_id, pid, idle_seconds, unwatched_since_utc,
	quiet_seconds, workspace
FROM idle_terminals
ORDER BY idle_seconds DESC
LIMIT 20;

-- name: reaped_last_day
-- What the reaper killed in the last 24 hours, how long each had been
-- unwatched when it went, and what the reaper logged.
SELECT	t.owner, t.session_id, t.pid,
	datetime(t.ended_at, 'unixepoch') AS reaped_utc,
	round(t.ended_at - t.unwatched_since) AS idle_seconds,
	e.detail AS reaper_detail
FROM terminals AS t
LEFT JOIN terminal_events AS e ON e.terminal_id = t.id AND e.kind = 'reap'
WHERE t.state = 'reaped'
  AND t.ended_at >= (julianday('now') - 2440587.5) * 86400 - 86400
ORDER BY t.ended_at DESC;

-- name: user_sessions
-- One user's terminals started in the last :days days (default 7), newest
-- first.  :user is REMOTE_USER; unset, '' (local, unauthenticated use).
SELECT	session_id, id, state,
	datetime(started_at, 'unixepoch') AS started_utc,
	datetime(ended_at, 'unixepoch') AS ended_utc,
	round(coalesce(ended_at, (julianday('now') - 2440587.5) * 86400)
	    - started_at) AS seconds,
	end_reason, exit_code, bytes_in, bytes_out, workspace
FROM terminals
WHERE owner = coalesce(:user, '')
  AND started_at >= (julianday('now') - 2440587.5) * 86400
      - 86400 * coalesce(:days, 7)
ORDER BY started_at DESC;

-- name: user_events
-- What that user did: every event of their terminals started in the last
-- :days days (default 7), in order.  Same parameters as user_sessions.
SELECT	datetime(e.at, 'unixepoch') AS at_utc, e.session_id, e.terminal_id,
	e.kind, e.actor, e.detail
FROM terminals AS t
JOIN terminal_events AS e ON e.terminal_id = t.id
WHERE t.owner = coalesce(:user, '')
  AND t.started_at >= (julianday('now') - 2440587.5) * 86400
      - 86400 * coalesce(:days, 7)
ORDER BY e.id;

-- name: session_history
-- Every incarnation of one session id (:sid; unset, none), newest first:
-- restarts, how each ended.
SELECT	id, owner, state, end_reason, exit_code,
	datetime(started_at, 'unixepoch') AS started_utc,
	datetime(ended_at, 'unixepoch') AS ended_utc
FROM terminals
WHERE session_id = :sid
ORDER BY started_at DESC;

-- name: ended_badly
-- Terminals that ended badly in the last :days days (default 7): lost
-- (ptyd died while they ran), evicted at the cap, a shell killed by a
-- signal on its own, one that ignored SIGHUP and had to be killed, one
-- still unreaped at shutdown, and shells that exited with a failure.
SELECT	owner, session_id, id, state, end_reason, exit_code,
	datetime(ended_at, 'unixepoch') AS ended_utc,
	CASE
	WHEN state = 'lost' THEN 'ptyd died while it ran'
	WHEN state = 'evicted' THEN 'evicted at the terminal cap'
	WHEN state = 'exited' AND exit_code < 0
	    THEN 'shell killed by signal ' || -exit_code
	WHEN state = 'exited' THEN 'shell exited with status ' || exit_code
	WHEN exit_code = -9 THEN 'ignored SIGHUP, killed'
	ELSE 'not reaped by the end of shutdown'
	END AS why
FROM terminals
WHERE ended_at >= (julianday('now') - 2440587.5) * 86400
      - 86400 * coalesce(:days, 7)
  AND (state IN ('lost', 'evicted')
       OR (state = 'exited' AND exit_code <> 0)
       OR (state IN ('closed', 'reaped', 'shutdown') AND exit_code = -9)
       OR (state = 'shutdown' AND exit_code IS NULL))
ORDER BY ended_at DESC;

-- name: mirror_gaps
-- Where the audit log itself has holes: events ptyd had to drop while the
-- database was unavailable, files deleted under it, and terminals an
-- earlier ptyd left behind when it died.
SELECT	datetime(at, 'unixepoch') AS at_utc, kind, session_id, terminal_id,
	detail
FROM terminal_events
WHERE kind IN ('dropped', 'recreated', 'lost')
ORDER BY at DESC
LIMIT 50;

-- name: input_by_actor
-- Who typed into what in the last :days days (default 1): input requests
-- and bytes per actor (user@address) and session.  One input event is
-- one accepted request; its detail is the byte count, never the text.
SELECT	actor, session_id, count(*) AS requests,
	sum(CAST(detail AS INTEGER)) AS bytes,
	datetime(min(at), 'unixepoch') AS first_utc,
	datetime(max(at), 'unixepoch') AS last_utc
FROM terminal_events
WHERE kind = 'input'
  AND at >= (julianday('now') - 2440587.5) * 86400
      - 86400 * coalesce(:days, 1)
GROUP BY actor, session_id
ORDER BY last_utc DESC;

-- name: prunes
-- Every prune of this log (ptydctl prune): when, who, how much went.
-- Prune events are never pruned themselves.
SELECT	at_utc, actor, detail
FROM events
WHERE kind = 'prune'
ORDER BY id DESC;

-- name: shares
-- Every share (DESIGN 6): whose terminal, which role, for whom (NULL:
-- anyone the web server admits), how long, how it ended, and how many
-- streams were opened through it (its join events).  Never a token.
SELECT	s.id AS share_id, s.owner, s.session_id, s.role,
	coalesce(s.user, '(anyone)') AS user,
	datetime(s.created_at, 'unixepoch') AS created_utc,
	datetime(s.expires_at, 'unixepoch') AS expires_utc,
	CASE WHEN s.revoked_at IS NOT NULL THEN 'revoked'
	     ELSE s.end_reason END AS ended,
	datetime(coalesce(s.revoked_at, s.ended_at), 'unixepoch')
	    AS ended_utc,
	(SELECT count(*) FROM terminal_events AS e
	 WHERE e.terminal_id = s.terminal_id AND e.kind = 'join'
	   AND e.detail LIKE 'share=' || s.id || ' %') AS joins
FROM shares AS s
ORDER BY s.id DESC;
