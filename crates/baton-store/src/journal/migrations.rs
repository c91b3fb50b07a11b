//! Versioned schema migrations of the SQLite journal.
//!
//! The schema version is SQLite's `PRAGMA user_version`. [`MIGRATIONS`] is an embedded array of
//! SQL scripts: script `i` brings the database from version `i` to `i + 1`. [`migrate`] applies
//! the missing ones, each in its own `BEGIN IMMEDIATE` transaction together with the new
//! `user_version`, and re-reads the version inside that transaction, so any number of processes
//! may open (and migrate) a fresh database at once: whoever takes the write lock second finds the
//! work done and commits nothing. A database newer than [`LATEST`] is refused with
//! [`JournalError::TooNew`] rather than written to. Migrations are append-only: never edit a
//! script that has shipped, add a new one.

use super::JournalError;
use super::sqlite_err;
use rusqlite::{Connection, TransactionBehavior};
use std::path::Path;

/// Schema scripts; entry `i` migrates version `i` to version `i + 1`.
pub(super) const MIGRATIONS: &[&str] = &[
    // v0 → v1: the initial schema.
    r#"
CREATE TABLE runs (
    id          TEXT PRIMARY KEY NOT NULL,
    kind        TEXT NOT NULL,
    started_at  TEXT NOT NULL,
    ended_at    TEXT,
    status      TEXT NOT NULL,
    reason      TEXT
);

CREATE TABLE steps (
    id          INTEGER PRIMARY KEY,
    run_id      TEXT NOT NULL REFERENCES runs(id),
    key         TEXT,
    stage       TEXT NOT NULL,
    attempt     INTEGER NOT NULL,
    input_hash  TEXT NOT NULL,
    outcome     TEXT,
    started_at  TEXT NOT NULL,
    ended_at    TEXT
);
CREATE INDEX steps_run_id ON steps(run_id);

-- run_id is plain TEXT: plain CLI edits journal events without recording a run.
CREATE TABLE events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    grp         INTEGER NOT NULL,
    at          TEXT NOT NULL,
    actor       TEXT NOT NULL,
    key         TEXT NOT NULL,
    from_status TEXT NULL,
    to_status   TEXT NOT NULL,
    reason      TEXT NOT NULL DEFAULT '',
    forced      INTEGER NOT NULL DEFAULT 0,
    run_id      TEXT NULL,
    state       TEXT NOT NULL DEFAULT 'pending'
                CHECK (state IN ('pending', 'applied', 'abandoned'))
);
CREATE INDEX events_key ON events(key);
CREATE INDEX events_state ON events(state);

-- options: a JSON array of strings.
CREATE TABLE escalations (
    id          INTEGER PRIMARY KEY,
    run_id      TEXT,
    key         TEXT,
    title       TEXT NOT NULL,
    finding     TEXT NOT NULL,
    options     TEXT NOT NULL DEFAULT '[]',
    answer      TEXT,
    created_at  TEXT NOT NULL,
    answered_at TEXT
);

CREATE TABLE cost_ledger (
    id                 INTEGER PRIMARY KEY,
    run_id             TEXT,
    step_id            INTEGER,
    at                 TEXT NOT NULL,
    model              TEXT NOT NULL,
    input_tokens       INTEGER NOT NULL DEFAULT 0,
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd           REAL NOT NULL DEFAULT 0.0
);
CREATE INDEX cost_ledger_run_id ON cost_ledger(run_id);
"#,
    // v1 → v2: what kind of escalation (so the engine knows how to act on the answer), when the
    // answer was acted on, and per-story step lookups for resuming sprints.
    r#"
ALTER TABLE escalations ADD COLUMN kind TEXT NOT NULL DEFAULT 'agent';
ALTER TABLE escalations ADD COLUMN resolved_at TEXT;
CREATE INDEX steps_key ON steps(key);
CREATE INDEX escalations_key ON escalations(key);
"#,
    // v2 → v3: what a settled step leaves for later decisions (JSON), the step an escalation
    // followed, and the engine's own choices stored by stable id instead of their labels.
    r#"
ALTER TABLE steps ADD COLUMN detail TEXT;
ALTER TABLE escalations ADD COLUMN after_step INTEGER NOT NULL DEFAULT 0;
UPDATE escalations SET options = replace(options, '"another fix round"', '"another-round"')
    WHERE kind <> 'agent';
UPDATE escalations SET options = replace(options, '"re-run the review"', '"rerun-review"')
    WHERE kind <> 'agent';
UPDATE escalations SET options = replace(options, '"accept as is (mark done)"', '"accept"')
    WHERE kind <> 'agent';
UPDATE escalations SET options = replace(options, '"stop (needs-intervention)"', '"stop"')
    WHERE kind <> 'agent';
UPDATE escalations SET options = replace(options, '"confirm done"', '"confirm"')
    WHERE kind <> 'agent';
UPDATE escalations SET options = replace(options, '"send back for another round"', '"send-back"')
    WHERE kind <> 'agent';
UPDATE escalations SET answer = CASE answer
        WHEN 'another fix round' THEN 'another-round'
        WHEN 're-run the review' THEN 'rerun-review'
        WHEN 'accept as is (mark done)' THEN 'accept'
        WHEN 'stop (needs-intervention)' THEN 'stop'
        WHEN 'confirm done' THEN 'confirm'
        WHEN 'send back for another round' THEN 'send-back'
        ELSE answer END
    WHERE kind <> 'agent' AND answer IS NOT NULL;
UPDATE escalations SET after_step = COALESCE(
        (SELECT MAX(s.id) FROM steps s WHERE s.key = escalations.key), 0);
"#,
    // v3 → v4: whether a cost line was estimated from the text (the provider streamed no usage).
    r#"
ALTER TABLE cost_ledger ADD COLUMN estimated INTEGER NOT NULL DEFAULT 0;
"#,
    // v4 → v5: the guards' state (TDD guard mode, recorded test runs and test-file writes,
    // refusals, warnings, context-rule firings) and one-time allowances granted by the user.
    r#"
CREATE TABLE guard_settings (
    name        TEXT PRIMARY KEY NOT NULL,
    value       TEXT NOT NULL,
    set_at      TEXT NOT NULL
);

-- kind: test-run | test-write | deny | warn | allowance-used | rule
CREATE TABLE guard_log (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    scope       TEXT NOT NULL,
    at          TEXT NOT NULL,
    guard       TEXT NOT NULL,
    kind        TEXT NOT NULL,
    tool        TEXT NOT NULL DEFAULT '',
    path        TEXT NOT NULL DEFAULT '',
    detail      TEXT NOT NULL DEFAULT '',
    exit_code   INTEGER
);
CREATE INDEX guard_log_scope_kind ON guard_log(scope, kind);

CREATE TABLE guard_allowances (
    id          INTEGER PRIMARY KEY,
    kind        TEXT NOT NULL,
    reason      TEXT NOT NULL,
    granted_at  TEXT NOT NULL,
    consumed_at TEXT,
    consumed_by TEXT
);
"#,
    // v5 → v6: the tasks of plan files driven by `baton sdd`, with the state each was last
    // seen in (the steps and escalations of a task are keyed `sdd:<plan>#<task id>`).
    r#"
CREATE TABLE sdd_tasks (
    plan        TEXT NOT NULL,
    task_id     TEXT NOT NULL,
    position    INTEGER NOT NULL,
    title       TEXT NOT NULL,
    state       TEXT NOT NULL,
    run_id      TEXT,
    updated_at  TEXT NOT NULL,
    PRIMARY KEY (plan, task_id)
);
"#,
    // v6 → v7: the engine's scoped event stream, numbered by the journal (seq is never reused)
    // so that a late subscriber catches up from here; scope and body are the engine's JSON.
    r#"
CREATE TABLE run_events (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id      TEXT NOT NULL,
    at          TEXT NOT NULL,
    scope       TEXT NOT NULL,
    body        TEXT NOT NULL
);
"#,
];

/// The schema version this build writes and understands.
// The array is tiny, so the cast cannot wrap.
pub(super) const LATEST: i64 = MIGRATIONS.len() as i64;

/// Reads `PRAGMA user_version`.
pub(super) fn user_version(conn: &Connection, path: &Path) -> Result<i64, JournalError> {
    conn.query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(|e| sqlite_err(path, e))
}

/// Brings the database to [`LATEST`], returning the version found before migrating.
///
/// Safe to call concurrently from several connections (and processes) on the same file.
pub(super) fn migrate(conn: &mut Connection, path: &Path) -> Result<i64, JournalError> {
    let initial = user_version(conn, path)?;
    check_not_too_new(initial, path)?;
    // Fast path (every open after the first): nothing to do, no write lock taken.
    if initial == LATEST {
        return Ok(initial);
    }
    for (index, script) in MIGRATIONS.iter().enumerate() {
        // `index` < MIGRATIONS.len(), which fits in i64 (see LATEST).
        let from = index as i64;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| sqlite_err(path, e))?;
        // Re-check under the write lock: another opener may have migrated meanwhile.
        let current = user_version(&tx, path)?;
        check_not_too_new(current, path)?;
        if current != from {
            // Already past this step (or, if below, an earlier step is missing, which the loop
            // order makes impossible). Dropping `tx` rolls back the empty transaction.
            continue;
        }
        tx.execute_batch(script).map_err(|e| sqlite_err(path, e))?;
        tx.pragma_update(None, "user_version", from + 1)
            .map_err(|e| sqlite_err(path, e))?;
        tx.commit().map_err(|e| sqlite_err(path, e))?;
    }
    Ok(initial)
}

fn check_not_too_new(found: i64, path: &Path) -> Result<(), JournalError> {
    if found > LATEST {
        Err(JournalError::TooNew {
            path: path.to_path_buf(),
            found,
            supported: LATEST,
        })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables(conn: &Connection) -> Vec<String> {
        let mut stmt = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap();
        stmt.query_map([], |row| row.get::<_, String>(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn migrate_from_empty_reaches_latest_with_all_tables() {
        let mut conn = Connection::open_in_memory().unwrap();
        let path = Path::new(":memory:");
        assert_eq!(user_version(&conn, path).unwrap(), 0);
        assert_eq!(migrate(&mut conn, path).unwrap(), 0);
        assert_eq!(user_version(&conn, path).unwrap(), LATEST);
        assert_eq!(LATEST, 7);
        let names = tables(&conn);
        for table in [
            "cost_ledger",
            "escalations",
            "events",
            "guard_allowances",
            "guard_log",
            "guard_settings",
            "run_events",
            "runs",
            "sdd_tasks",
            "steps",
        ] {
            assert!(
                names.iter().any(|n| n == table),
                "{table} missing: {names:?}"
            );
        }
        let indexes: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events'")
            .unwrap()
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(indexes.contains(&"events_key".to_owned()), "{indexes:?}");
        assert!(indexes.contains(&"events_state".to_owned()), "{indexes:?}");
    }

    #[test]
    fn v3_stores_the_engine_choices_by_id_and_leaves_agent_options_alone() {
        let mut conn = Connection::open_in_memory().unwrap();
        let path = Path::new(":memory:");
        // A v2 database with answers stored as labels.
        for script in &MIGRATIONS[..2] {
            conn.execute_batch(script).unwrap();
        }
        conn.pragma_update(None, "user_version", 2).unwrap();
        conn.execute_batch(
            r#"
INSERT INTO runs (id, kind, started_at, status) VALUES ('r', 'sprint', 't', 'running');
INSERT INTO steps (run_id, key, stage, attempt, input_hash, started_at)
    VALUES ('r', '1-1-a', 'review', 1, '', 't');
INSERT INTO escalations (key, title, finding, options, answer, created_at, kind) VALUES
  ('1-1-a', 'x', 'y', '["another fix round","accept as is (mark done)","stop (needs-intervention)"]',
   'accept as is (mark done)', 't', 'max-review-rounds'),
  ('1-1-a', 'x', 'y', '["confirm done","send back for another round"]', NULL, 't', 'checkpoint'),
  ('1-2-b', 'x', 'y', '["accept as is (mark done)","stop"]', 'accept as is (mark done)', 't', 'agent');
"#,
        )
        .unwrap();
        migrate(&mut conn, path).unwrap();
        let rows: Vec<(String, Option<String>, i64)> = conn
            .prepare("SELECT options, answer, after_step FROM escalations ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            rows,
            vec![
                (
                    r#"["another-round","accept","stop"]"#.to_owned(),
                    Some("accept".to_owned()),
                    1
                ),
                (r#"["confirm","send-back"]"#.to_owned(), None, 1),
                (
                    r#"["accept as is (mark done)","stop"]"#.to_owned(),
                    Some("accept as is (mark done)".to_owned()),
                    0
                ),
            ]
        );
    }

    #[test]
    fn migrate_twice_is_a_no_op() {
        let mut conn = Connection::open_in_memory().unwrap();
        let path = Path::new(":memory:");
        migrate(&mut conn, path).unwrap();
        conn.execute(
            "INSERT INTO runs (id, kind, started_at, status)
             VALUES ('r', 'sprint', 't', 'running')",
            [],
        )
        .unwrap();
        assert_eq!(migrate(&mut conn, path).unwrap(), LATEST);
        assert_eq!(user_version(&conn, path).unwrap(), LATEST);
        let runs: i64 = conn
            .query_row("SELECT COUNT(*) FROM runs", [], |row| row.get(0))
            .unwrap();
        assert_eq!(runs, 1);
    }

    #[test]
    fn migrate_refuses_newer_schema() {
        let mut conn = Connection::open_in_memory().unwrap();
        let path = Path::new(":memory:");
        conn.pragma_update(None, "user_version", LATEST + 3)
            .unwrap();
        match migrate(&mut conn, path) {
            Err(JournalError::TooNew {
                found, supported, ..
            }) => {
                assert_eq!(found, LATEST + 3);
                assert_eq!(supported, LATEST);
            }
            other => panic!("expected TooNew, got {other:?}"),
        }
        assert!(tables(&conn).is_empty());
    }

    #[test]
    fn events_state_check_rejects_unknown_state() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn, Path::new(":memory:")).unwrap();
        let result = conn.execute(
            "INSERT INTO events (grp, at, actor, key, to_status, state)
             VALUES (1, 't', 'human', 'k', 'done', 'bogus')",
            [],
        );
        assert!(result.is_err());
    }
}
