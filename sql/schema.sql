-- schema.sql -- ptyd's SQLite mirror of its terminals, and the audit log.
-- Built into ptyd (ptyd/schema.c), run whole at every open inside ptyd's
-- transaction, after the migrations in ptyd/store.c: so idempotent, no
-- BEGIN.  `sqlite3 new.db < sql/schema.sql` makes the same database (not
-- over an older user_version).  ptyd sets WAL.  Times: Unix seconds, REAL;
-- views add readable UTC (_utc).  One C string (ptyd/schema.c).

-- One row per incarnation (a restart is a new id), upserted by ptyd.
CREATE TABLE IF NOT EXISTS terminals (
	id		INTEGER PRIMARY KEY,
	session_id	TEXT NOT NULL,
	owner		TEXT,	-- REMOTE_USER, '' for local use
	pid		INTEGER,
	workspace	TEXT,
	rows		INTEGER,
	cols		INTEGER,
	started_at	REAL NOT NULL,
	last_activity	REAL,	-- last output or input
	subscribers	INTEGER NOT NULL DEFAULT 0,
	unwatched_since	REAL,	-- NULL while watched
	-- All but running are final.  exited: the shell ended by itself.
	-- lost: ptyd died while it ran (set by the next ptyd).  ORs, not IN:
	-- an IN list builds a temporary index at every insert.
	state		TEXT NOT NULL CHECK (state = 'running' OR
			    state = 'exited' OR state = 'closed' OR
			    state = 'reaped' OR state = 'evicted' OR
			    state = 'shutdown' OR state = 'lost'),
	ended_at	REAL,
	exit_code	INTEGER,	-- or minus the killing signal
	end_reason	TEXT,
	bytes_in	INTEGER NOT NULL DEFAULT 0,
	bytes_out	INTEGER NOT NULL DEFAULT 0
);

-- Append-only (old rows may be pruned, never changed).  kind is one of
-- these (ptyd/termstate.c's names; tests/unit/test_termstate.c checks
-- the two lists agree):
-- kinds: start attach detach resize input close exit reap evict shutdown
-- kinds: lost gap screen takeover upgrade
-- kinds: upgrade_failed dropped recreated chain tamper prune
-- kinds: record record_end recording_removed
-- input is one per request (detail "N bytes"); close is a close or a
-- restart; lost: running when an earlier ptyd stopped; screen: an
-- attach=screen whose screen was drawn only in part, the rest replayed;
-- takeover, upgrade: a terminal adopted
-- from the ptyd before (DESIGN 10).  ptyd's own, about no terminal:
-- upgrade_failed, dropped (detail: how many events it could not keep),
-- recreated (file deleted under it), chain (where the hash chain
-- starts), tamper (the chain's head was not what ptyd wrote), prune
-- (ptydctl prune).  record: a recording starts (detail "recording=ID
-- part=P"); record_end: it ended (its state, bytes, the cut's reason);
-- recording_removed: retention deleted its file.  terminal_id is no
-- foreign key: events outlive pruned rows.
--
-- The hash chain (DESIGN 7, ptyd/chain.c): id is the row's seq, one more
-- than the row before; hash is the SHA-256 (hex) of every field of the
-- row and of prev, the hash of the row before (64 zeros at a chain's
-- start).  Rows from before schema 5 have neither.  The triggers below
-- keep honest tools honest; against someone who can write the file, the
-- chain and its anchors in the system log are the evidence:
-- `ptydctl audit verify`.
CREATE TABLE IF NOT EXISTS terminal_events (
	id		INTEGER PRIMARY KEY AUTOINCREMENT,
	at		REAL NOT NULL,
	session_id	TEXT,
	terminal_id	INTEGER,
	kind		TEXT NOT NULL,
	actor		TEXT,	-- user@address where known
	detail		TEXT,
	prev		TEXT,	-- the hash of the row before (hex)
	hash		TEXT	-- this row's (hex)
);

CREATE TRIGGER IF NOT EXISTS terminal_events_append_only
BEFORE UPDATE ON terminal_events
BEGIN
	SELECT RAISE(ABORT, 'terminal_events is append-only');
END;

-- Pruning: `ptydctl prune` inserts a permit, deletes the events before
-- it (up to a seq: every row at or below it but prune events), logs a
-- prune event chained onto the last row (its detail names the seq and
-- hash the chain went through) and deletes the permit, in one
-- transaction, so a permit is never seen outside it.  A DELETE without a
-- permit, of an event at or after its cutoff, or of a prune event, is
-- refused.
CREATE TABLE IF NOT EXISTS prune_permit (
	before		REAL NOT NULL	-- events with at < before may go
);
CREATE TRIGGER IF NOT EXISTS terminal_events_no_delete
BEFORE DELETE ON terminal_events
WHEN OLD.kind = 'prune' OR NOT EXISTS
	(SELECT 1 FROM prune_permit WHERE OLD.at < before)
BEGIN
	SELECT RAISE(ABORT,
	    'terminal_events is append-only: see ptydctl prune');
END;

-- An INSERT naming an existing id (REPLACE INTO, INSERT OR REPLACE) would
-- delete that event without the delete trigger firing (recursive triggers
-- are off): refused.  ptyd never names an id.
CREATE TRIGGER IF NOT EXISTS terminal_events_no_replace
BEFORE INSERT ON terminal_events
WHEN NEW.id IS NOT NULL AND EXISTS
	(SELECT 1 FROM terminal_events WHERE id = NEW.id)
BEGIN
	SELECT RAISE(ABORT, 'terminal_events is append-only');
END;

-- One row per recording (DESIGN 4): a terminal's output as asciicast v2
-- in <state_dir>/recordings/<file>, written by ptyd-recorder, the row by
-- ptyd (write-behind, like terminals).  part: 1, then 2, 3... when a
-- take-over or a recorder's restart starts the terminal's next file.
-- sha256 (hex) of the whole file once it ended; bytes: its size.  cut:
-- it ended early (cut_reason: behind, disk, takeover, recorder);
-- removed: retention deleted the file (the row stays).
CREATE TABLE IF NOT EXISTS recordings (
	id		INTEGER PRIMARY KEY,
	terminal_id	INTEGER NOT NULL,
	session_id	TEXT NOT NULL,
	owner		TEXT,
	part		INTEGER NOT NULL,
	file		TEXT NOT NULL,	-- relative to <state_dir>/recordings
	started_at	REAL NOT NULL,
	ended_at	REAL,
	bytes		INTEGER NOT NULL DEFAULT 0,
	sha256		TEXT,
	state		TEXT NOT NULL CHECK (state = 'recording' OR
			    state = 'finished' OR state = 'cut' OR
			    state = 'removed'),
	cut_reason	TEXT,
	cols		INTEGER,
	rows		INTEGER
);
CREATE INDEX IF NOT EXISTS recordings_owner_started
	ON recordings (owner, started_at);

-- Used by the views and by sql/audit.sql.
CREATE INDEX IF NOT EXISTS terminals_state_ended
	ON terminals (state, ended_at);
CREATE INDEX IF NOT EXISTS terminals_owner_started
	ON terminals (owner, started_at);
CREATE INDEX IF NOT EXISTS terminals_session_started
	ON terminals (session_id, started_at);
CREATE INDEX IF NOT EXISTS terminal_events_terminal
	ON terminal_events (terminal_id, id);
CREATE INDEX IF NOT EXISTS terminal_events_kind_at
	ON terminal_events (kind, at);

-- Running shells.  quiet_seconds: since the last output or input.
CREATE VIEW IF NOT EXISTS live_terminals AS
SELECT	id, session_id, owner, pid, workspace, rows, cols, subscribers,
	started_at, datetime(started_at, 'unixepoch') AS started_utc,
	last_activity,
	datetime(last_activity, 'unixepoch') AS last_activity_utc,
	unwatched_since,
	datetime(unwatched_since, 'unixepoch') AS unwatched_since_utc,
	round((julianday('now') - 2440587.5) * 86400 - last_activity, 1)
	    AS quiet_seconds,
	bytes_in, bytes_out
FROM terminals
WHERE state = 'running';

-- Running shells nobody watches.  idle_seconds: since the last viewer
-- left (or birth): what the reaper compares with --idle-grace.
CREATE VIEW IF NOT EXISTS idle_terminals AS
SELECT	id, session_id, owner, pid, workspace,
	started_at, datetime(started_at, 'unixepoch') AS started_utc,
	unwatched_since,
	datetime(unwatched_since, 'unixepoch') AS unwatched_since_utc,
	round((julianday('now') - 2440587.5) * 86400 - unwatched_since, 1)
	    AS idle_seconds,
	last_activity,
	datetime(last_activity, 'unixepoch') AS last_activity_utc,
	round((julianday('now') - 2440587.5) * 86400 - last_activity, 1)
	    AS quiet_seconds
FROM terminals
WHERE state = 'running' AND unwatched_since IS NOT NULL;

-- The audit log with readable times, oldest first.
CREATE VIEW IF NOT EXISTS events AS
SELECT	id, at, datetime(at, 'unixepoch') AS at_utc, session_id,
	terminal_id, kind, actor, detail
FROM terminal_events;

PRAGMA user_version = 6;
