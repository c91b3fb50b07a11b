//! The embedded SQLite journal backend, [`SqliteJournal`].
//!
//! This file owns the connection settings (WAL, `synchronous=NORMAL`, foreign keys, a 30 s busy
//! timeout so that many baton processes can write the same `.baton/baton.db` at once), the mapping
//! between the journal's record types and the rows of the schema defined in
//! [`super::migrations`], and the write protocol's durability choices: every write is one
//! `BEGIN IMMEDIATE` transaction (taking the write lock up front, so a concurrent writer waits in
//! the busy handler instead of failing with `SQLITE_BUSY` on a lock upgrade); `record_pending`,
//! `mark_abandoned` and `answer_escalation` commit with a full fsync (`synchronous=FULL`), every
//! other write with `synchronous=NORMAL` (no fsync in WAL mode; it becomes durable with the next
//! full commit, and a process killed before that loses nothing: see [`super::Journal`]). A
//! durable agent step therefore costs one journal fsync. Every SQLite error is reported as
//! [`JournalError::Sqlite`] naming the database file (`:memory:` for in-memory journals).

use super::migrations;
use super::{
    CostEntry, EscalationRecord, Event, EventFilter, EventState, Journal, JournalError, NewEvent,
    RunRecord, StepRecord,
};
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, Row, Transaction, TransactionBehavior, params};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a writer waits for another process's write lock before giving up.
#[path = "guard.rs"]
pub(super) mod guard;
#[path = "sdd.rs"]
pub(super) mod sdd;

const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// The path reported for in-memory journals.
const MEMORY_PATH: &str = ":memory:";

/// Columns of `events`, in the order [`raw_event`] reads them.
const EVENT_COLUMNS: &str =
    "id, grp, at, actor, key, from_status, to_status, reason, forced, run_id, state";

/// Columns of `steps`, in the order [`raw_step`] reads them.
const STEP_COLUMNS: &str =
    "id, run_id, key, stage, attempt, input_hash, outcome, started_at, ended_at, detail";

/// Columns of `escalations`, in the order [`raw_escalation`] reads them.
const ESCALATION_COLUMNS: &str = "id, run_id, key, title, finding, options, answer, created_at, answered_at, kind, resolved_at, after_step";

/// Wraps a SQLite error with the database path.
pub(super) fn sqlite_err(path: &Path, source: rusqlite::Error) -> JournalError {
    JournalError::Sqlite {
        path: path.to_path_buf(),
        source,
    }
}

/// The journal in a SQLite database (normally `.baton/baton.db`).
///
/// One value holds one connection; open one per process (or thread). Several processes may
/// open the same file concurrently: writes serialize on SQLite's write lock, waiting up to 30 s.
#[derive(Debug)]
pub struct SqliteJournal {
    conn: Connection,
    path: PathBuf,
}

impl SqliteJournal {
    /// Opens (creating if needed, with its parent directory) the journal at `path`, configures
    /// the connection and migrates the schema to the latest version.
    ///
    /// # Errors
    ///
    /// [`JournalError::TooNew`] if the database was written by a newer baton;
    /// [`JournalError::Sqlite`] if the directory or the database cannot be created, opened,
    /// configured or migrated.
    pub fn open(path: &Path) -> Result<Self, JournalError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
            && let Err(e) = std::fs::create_dir_all(parent)
        {
            return Err(sqlite_err(
                path,
                rusqlite::Error::SqliteFailure(
                    rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
                    Some(format!(
                        "cannot create directory `{}`: {e}",
                        parent.display()
                    )),
                ),
            ));
        }
        let conn = Connection::open(path).map_err(|e| sqlite_err(path, e))?;
        Self::setup(conn, path.to_path_buf())
    }

    /// Opens a fresh, private in-memory journal (for tests); its path reads `:memory:`.
    ///
    /// # Errors
    ///
    /// [`JournalError::Sqlite`] if SQLite cannot allocate or migrate it.
    pub fn open_in_memory() -> Result<Self, JournalError> {
        let path = PathBuf::from(MEMORY_PATH);
        let conn = Connection::open_in_memory().map_err(|e| sqlite_err(&path, e))?;
        Self::setup(conn, path)
    }

    /// The database file (`:memory:` for an in-memory journal).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the database (`PRAGMA user_version`).
    ///
    /// # Errors
    ///
    /// [`JournalError::Sqlite`] if it cannot be read.
    pub fn schema_version(&self) -> Result<i64, JournalError> {
        migrations::user_version(&self.conn, &self.path)
    }

    fn setup(mut conn: Connection, path: PathBuf) -> Result<Self, JournalError> {
        let err = |e| sqlite_err(&path, e);
        // First, so that everything after it (including the WAL switch) waits for other writers.
        conn.busy_timeout(BUSY_TIMEOUT).map_err(err)?;
        // Returns the resulting mode (`memory` for in-memory databases, which is fine).
        // Switching a fresh database to WAL needs an exclusive lock, and SQLite answers
        // SQLITE_BUSY there without calling the busy handler: retry for a bounded time.
        let started = std::time::Instant::now();
        let mut pause = std::time::Duration::from_millis(2);
        let _mode: String = loop {
            match conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0)) {
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == rusqlite::ErrorCode::DatabaseBusy
                        && started.elapsed() < BUSY_TIMEOUT =>
                {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(std::time::Duration::from_millis(100));
                }
                other => break other.map_err(err)?,
            }
        };
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(err)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(err)?;
        migrations::migrate(&mut conn, &path)?;
        Ok(Self { conn, path })
    }

    fn err(&self) -> impl Fn(rusqlite::Error) -> JournalError + '_ {
        |e| sqlite_err(&self.path, e)
    }

    fn corrupt(&self, table: &'static str, detail: String) -> JournalError {
        JournalError::Corrupt {
            path: self.path.clone(),
            table,
            detail,
        }
    }

    fn checked_step(&self, raw: RawStep) -> Result<StepRecord, JournalError> {
        let attempt = u32::try_from(raw.attempt).map_err(|_| {
            self.corrupt(
                "steps",
                format!("step {}: attempt {} out of range", raw.step.id, raw.attempt),
            )
        })?;
        Ok(StepRecord {
            attempt,
            ..raw.step
        })
    }

    /// Runs `f` in one `BEGIN IMMEDIATE` transaction and commits it.
    fn write<T>(
        &mut self,
        f: impl FnOnce(&Transaction<'_>) -> rusqlite::Result<T>,
    ) -> Result<T, JournalError> {
        let path = &self.path;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| sqlite_err(path, e))?;
        let value = f(&tx).map_err(|e| sqlite_err(path, e))?;
        tx.commit().map_err(|e| sqlite_err(path, e))?;
        Ok(value)
    }

    /// Like [`Self::write`], committed with `synchronous=FULL` (an fsync of the WAL, which also
    /// makes every earlier `NORMAL` commit durable).
    fn write_durable<T>(
        &mut self,
        f: impl FnOnce(&Transaction<'_>) -> rusqlite::Result<T>,
    ) -> Result<T, JournalError> {
        // The pragma is a no-op inside a transaction, so it brackets the transaction.
        self.set_synchronous(true)?;
        let result = self.write(f);
        let restored = self.set_synchronous(false);
        let value = result?;
        restored?;
        Ok(value)
    }

    /// Moves pending events among `ids` to `to`; others (unknown, applied, abandoned) are left.
    fn settle(&mut self, ids: &[i64], to: EventState) -> Result<(), JournalError> {
        self.write(|tx| {
            let mut stmt = tx.prepare_cached(
                "UPDATE events SET state = ?1 WHERE id = ?2 AND state = 'pending'",
            )?;
            for id in ids {
                stmt.execute(params![to.as_str(), id])?;
            }
            Ok(())
        })
    }

    /// Sets `synchronous`. Not through a cached statement: SQLite applies this pragma when the
    /// statement is prepared, so running a cached one again would change nothing.
    fn set_synchronous(&self, full: bool) -> Result<(), JournalError> {
        let level = if full { "FULL" } else { "NORMAL" };
        self.conn
            .pragma_update(None, "synchronous", level)
            .map_err(self.err())
    }

    fn query_events(&self, sql: &str, args: &[Value]) -> Result<Vec<Event>, JournalError> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(self.err())?;
        let raws = stmt
            .query_map(rusqlite::params_from_iter(args), raw_event)
            .map_err(self.err())?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.err())?;
        raws.into_iter()
            .map(|raw| {
                let state = parse_state(&raw.state).ok_or_else(|| {
                    self.corrupt(
                        "events",
                        format!("event {}: unknown state `{}`", raw.event.id, raw.state),
                    )
                })?;
                Ok(Event { state, ..raw.event })
            })
            .collect()
    }
}

/// An `events` row with its state not yet parsed.
struct RawEvent {
    event: Event,
    state: String,
}

fn raw_event(row: &Row<'_>) -> rusqlite::Result<RawEvent> {
    Ok(RawEvent {
        event: Event {
            id: row.get(0)?,
            group: row.get(1)?,
            at: row.get(2)?,
            actor: row.get(3)?,
            key: row.get(4)?,
            from: row.get(5)?,
            to: row.get(6)?,
            reason: row.get(7)?,
            forced: row.get::<_, i64>(8)? != 0,
            run_id: row.get(9)?,
            // Placeholder, replaced once `state` is parsed.
            state: EventState::Pending,
        },
        state: row.get(10)?,
    })
}

fn parse_state(s: &str) -> Option<EventState> {
    [
        EventState::Pending,
        EventState::Applied,
        EventState::Abandoned,
    ]
    .into_iter()
    .find(|state| state.as_str() == s)
}

/// A `steps` row with its attempt not yet range-checked.
struct RawStep {
    step: StepRecord,
    attempt: i64,
}

fn raw_step(row: &Row<'_>) -> rusqlite::Result<RawStep> {
    Ok(RawStep {
        step: StepRecord {
            id: row.get(0)?,
            run_id: row.get(1)?,
            key: row.get(2)?,
            stage: row.get(3)?,
            attempt: 0,
            input_hash: row.get(5)?,
            outcome: row.get(6)?,
            started_at: row.get(7)?,
            ended_at: row.get(8)?,
            detail: row.get(9)?,
        },
        attempt: row.get(4)?,
    })
}

/// An `escalations` row with its options not yet parsed.
struct RawEscalation {
    escalation: EscalationRecord,
    options: String,
}

fn raw_escalation(row: &Row<'_>) -> rusqlite::Result<RawEscalation> {
    Ok(RawEscalation {
        escalation: EscalationRecord {
            id: row.get(0)?,
            run_id: row.get(1)?,
            key: row.get(2)?,
            title: row.get(3)?,
            finding: row.get(4)?,
            options: Vec::new(),
            answer: row.get(6)?,
            created_at: row.get(7)?,
            answered_at: row.get(8)?,
            kind: row.get(9)?,
            resolved_at: row.get(10)?,
            after_step: row.get(11)?,
        },
        options: row.get(5)?,
    })
}

/// A token count as SQLite's signed 64-bit integer (counts beyond `i64::MAX` are refused).
fn tokens(count: u64) -> rusqlite::Result<i64> {
    i64::try_from(count).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}

fn run_from_row(row: &Row<'_>) -> rusqlite::Result<RunRecord> {
    Ok(RunRecord {
        id: row.get(0)?,
        kind: row.get(1)?,
        started_at: row.get(2)?,
        ended_at: row.get(3)?,
        status: row.get(4)?,
        reason: row.get(5)?,
    })
}

impl Journal for SqliteJournal {
    /// Inserts the events as `pending` in one `BEGIN IMMEDIATE` transaction committed with
    /// `synchronous=FULL`; their `group` is the id of the first. An empty slice writes nothing.
    /// (`mark_applied` writes straight to the database, so there is never an in-memory backlog
    /// of marks to flush here.)
    fn record_pending(&mut self, events: &[NewEvent]) -> Result<Vec<i64>, JournalError> {
        if events.is_empty() {
            return Ok(Vec::new());
        }
        self.write_durable(|tx| {
            let mut insert = tx.prepare_cached(
                "INSERT INTO events
                     (grp, at, actor, key, from_status, to_status, reason, forced, run_id, state)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 'pending')",
            )?;
            let mut ids = Vec::with_capacity(events.len());
            let mut group = None;
            for event in events {
                // The first row's id is its group, unknown until inserted: insert with 0, fix up.
                insert.execute(params![
                    group.unwrap_or(0_i64),
                    event.at,
                    event.actor,
                    event.key,
                    event.from,
                    event.to,
                    event.reason,
                    event.forced,
                    event.run_id,
                ])?;
                let id = tx.last_insert_rowid();
                if group.is_none() {
                    tx.prepare_cached("UPDATE events SET grp = ?1 WHERE id = ?1")?
                        .execute([id])?;
                    group = Some(id);
                }
                ids.push(id);
            }
            Ok(ids)
        })
    }

    /// Marks pending events among `ids` as applied; unknown ids and events already applied or
    /// abandoned are left as they are. Committed with `synchronous=NORMAL` (no fsync in WAL
    /// mode): a mark lost to a power cut is repaired by reconciliation.
    fn mark_applied(&mut self, ids: &[i64]) -> Result<(), JournalError> {
        if ids.is_empty() {
            return Ok(());
        }
        self.settle(ids, EventState::Applied)
    }

    /// Marks pending events among `ids` as abandoned (durably); others are left as they are.
    fn mark_abandoned(&mut self, ids: &[i64]) -> Result<(), JournalError> {
        if ids.is_empty() {
            return Ok(());
        }
        // Durable: a lost abandon could later be mistaken for an applied event.
        self.set_synchronous(true)?;
        let result = self.settle(ids, EventState::Abandoned);
        let restored = self.set_synchronous(false);
        result.and(restored)
    }

    fn pending(&self) -> Result<Vec<Event>, JournalError> {
        self.query_events(
            &format!("SELECT {EVENT_COLUMNS} FROM events WHERE state = 'pending' ORDER BY id"),
            &[],
        )
    }

    fn events(&self, filter: &EventFilter) -> Result<Vec<Event>, JournalError> {
        let mut conditions = Vec::new();
        let mut args = Vec::new();
        if !filter.all_states {
            conditions.push("state = 'applied'".to_owned());
        }
        if let Some(key) = &filter.key {
            args.push(Value::Text(key.clone()));
            conditions.push(format!("key = ?{}", args.len()));
        }
        let condition = if conditions.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", conditions.join(" AND "))
        };
        let sql = match filter.limit {
            None => format!("SELECT {EVENT_COLUMNS} FROM events {condition} ORDER BY id"),
            Some(limit) => {
                args.push(Value::Integer(i64::try_from(limit).unwrap_or(i64::MAX)));
                // The newest `limit`, then back to oldest first.
                format!(
                    "SELECT {EVENT_COLUMNS} FROM
                         (SELECT {EVENT_COLUMNS} FROM events {condition}
                          ORDER BY id DESC LIMIT ?{})
                     ORDER BY id",
                    args.len()
                )
            }
        };
        self.query_events(&sql, &args)
    }

    fn begin_run(&mut self, run: &RunRecord) -> Result<(), JournalError> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO runs (id, kind, started_at, ended_at, status, reason)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    run.id,
                    run.kind,
                    run.started_at,
                    run.ended_at,
                    run.status,
                    run.reason
                ],
            )?;
            Ok(())
        })
    }

    /// Sets the run's end time, status and reason. An unknown id changes nothing.
    fn end_run(
        &mut self,
        id: &str,
        at: &str,
        status: &str,
        reason: &str,
    ) -> Result<(), JournalError> {
        self.write(|tx| {
            tx.execute(
                "UPDATE runs SET ended_at = ?2, status = ?3, reason = ?4 WHERE id = ?1",
                params![id, at, status, reason],
            )?;
            Ok(())
        })
    }

    fn last_run(&self, kind: &str) -> Result<Option<RunRecord>, JournalError> {
        self.conn
            .query_row(
                "SELECT id, kind, started_at, ended_at, status, reason FROM runs
                 WHERE kind = ?1 ORDER BY started_at DESC, rowid DESC LIMIT 1",
                [kind],
                run_from_row,
            )
            .optional()
            .map_err(self.err())
    }

    fn run(&self, id: &str) -> Result<Option<RunRecord>, JournalError> {
        self.conn
            .query_row(
                "SELECT id, kind, started_at, ended_at, status, reason FROM runs WHERE id = ?1",
                [id],
                run_from_row,
            )
            .optional()
            .map_err(self.err())
    }

    /// Inserts the step (its `id` is ignored) and returns the new id. The run must have been
    /// recorded with `begin_run` (foreign key).
    fn begin_step(&mut self, step: &StepRecord) -> Result<i64, JournalError> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO steps
                     (run_id, key, stage, attempt, input_hash, outcome, started_at, ended_at,
                      detail)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    step.run_id,
                    step.key,
                    step.stage,
                    step.attempt,
                    step.input_hash,
                    step.outcome,
                    step.started_at,
                    step.ended_at,
                    step.detail
                ],
            )?;
            Ok(tx.last_insert_rowid())
        })
    }

    /// Sets the step's end time, outcome and (when given) detail. An unknown id changes
    /// nothing.
    fn end_step(
        &mut self,
        id: i64,
        at: &str,
        outcome: &str,
        detail: Option<&str>,
    ) -> Result<(), JournalError> {
        self.write(|tx| {
            tx.execute(
                "UPDATE steps SET ended_at = ?2, outcome = ?3, detail = COALESCE(?4, detail)
                 WHERE id = ?1",
                params![id, at, outcome, detail],
            )?;
            Ok(())
        })
    }

    fn steps(&self, run_id: &str) -> Result<Vec<StepRecord>, JournalError> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {STEP_COLUMNS} FROM steps WHERE run_id = ?1 ORDER BY id"
            ))
            .map_err(self.err())?;
        let raws = stmt
            .query_map([run_id], raw_step)
            .map_err(self.err())?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.err())?;
        raws.into_iter().map(|raw| self.checked_step(raw)).collect()
    }

    /// Inserts the escalation (its `id` is ignored; `options` stored as a JSON array) and
    /// returns the new id.
    fn raise_escalation(&mut self, esc: &EscalationRecord) -> Result<i64, JournalError> {
        let options = serde_json::to_string(&esc.options).map_err(|e| {
            sqlite_err(
                &self.path,
                rusqlite::Error::ToSqlConversionFailure(e.into()),
            )
        })?;
        self.write(|tx| {
            tx.execute(
                "INSERT INTO escalations
                     (run_id, key, title, finding, options, answer, created_at, answered_at, kind,
                      after_step)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    esc.run_id,
                    esc.key,
                    esc.title,
                    esc.finding,
                    options,
                    esc.answer,
                    esc.created_at,
                    esc.answered_at,
                    esc.kind,
                    esc.after_step
                ],
            )?;
            Ok(tx.last_insert_rowid())
        })
    }

    /// Records the answer if the escalation exists and is still open: returns `true` then, and
    /// `false` (changing nothing) if the id is unknown or the escalation was already answered —
    /// the first answer stands.
    fn answer_escalation(&mut self, id: i64, answer: &str, at: &str) -> Result<bool, JournalError> {
        self.write_durable(|tx| {
            let changed = tx.execute(
                "UPDATE escalations SET answer = ?2, answered_at = ?3
                 WHERE id = ?1 AND answer IS NULL",
                params![id, answer, at],
            )?;
            Ok(changed > 0)
        })
    }

    /// Escalations oldest first; only unanswered ones if `open_only`.
    fn escalations(&self, open_only: bool) -> Result<Vec<EscalationRecord>, JournalError> {
        let filter = if open_only {
            "WHERE answer IS NULL"
        } else {
            ""
        };
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {ESCALATION_COLUMNS} FROM escalations {filter} ORDER BY id"
            ))
            .map_err(self.err())?;
        let raws = stmt
            .query_map([], raw_escalation)
            .map_err(self.err())?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.err())?;
        raws.into_iter()
            .map(|raw| {
                let options = serde_json::from_str(&raw.options).map_err(|e| {
                    self.corrupt(
                        "escalations",
                        format!(
                            "escalation {}: options are not a JSON string array: {e}",
                            raw.escalation.id
                        ),
                    )
                })?;
                Ok(EscalationRecord {
                    options,
                    ..raw.escalation
                })
            })
            .collect()
    }

    fn resolve_escalation(&mut self, id: i64, at: &str) -> Result<(), JournalError> {
        self.write(|tx| {
            tx.execute(
                "UPDATE escalations SET resolved_at = ?2 WHERE id = ?1 AND resolved_at IS NULL",
                params![id, at],
            )?;
            Ok(())
        })
    }

    fn steps_for_key(&self, key: &str) -> Result<Vec<StepRecord>, JournalError> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {STEP_COLUMNS} FROM steps WHERE key = ?1 ORDER BY id"
            ))
            .map_err(self.err())?;
        let raws = stmt
            .query_map([key], raw_step)
            .map_err(self.err())?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.err())?;
        raws.into_iter().map(|raw| self.checked_step(raw)).collect()
    }

    fn record_cost(&mut self, entry: &CostEntry) -> Result<(), JournalError> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO cost_ledger
                     (run_id, step_id, at, model, input_tokens, output_tokens,
                      cache_read_tokens, cache_write_tokens, cost_usd, estimated)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    entry.run_id,
                    entry.step_id,
                    entry.at,
                    entry.model,
                    tokens(entry.input_tokens)?,
                    tokens(entry.output_tokens)?,
                    tokens(entry.cache_read_tokens)?,
                    tokens(entry.cache_write_tokens)?,
                    entry.cost_usd,
                    entry.estimated
                ],
            )?;
            Ok(())
        })
    }

    /// Sum of `cost_usd` over the run's entries (all entries if `None`); `0.0` when none.
    fn total_cost(&self, run_id: Option<&str>) -> Result<f64, JournalError> {
        let result = match run_id {
            Some(run_id) => self.conn.query_row(
                "SELECT COALESCE(SUM(cost_usd), 0.0) FROM cost_ledger WHERE run_id = ?1",
                [run_id],
                |row| row.get(0),
            ),
            None => self.conn.query_row(
                "SELECT COALESCE(SUM(cost_usd), 0.0) FROM cost_ledger",
                [],
                |row| row.get(0),
            ),
        };
        result.map_err(self.err())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Barrier};

    fn event(key: &str, from: Option<&str>, to: &str) -> NewEvent {
        NewEvent {
            at: "2025-01-01T00:00:00Z".to_owned(),
            actor: "human".to_owned(),
            key: key.to_owned(),
            from: from.map(str::to_owned),
            to: to.to_owned(),
            reason: "because".to_owned(),
            forced: false,
            run_id: None,
        }
    }

    fn run(id: &str) -> RunRecord {
        RunRecord {
            id: id.to_owned(),
            kind: "sprint".to_owned(),
            started_at: "2025-01-01T00:00:00Z".to_owned(),
            ended_at: None,
            status: "running".to_owned(),
            reason: None,
        }
    }

    fn step(run_id: &str, stage: &str, attempt: u32) -> StepRecord {
        StepRecord {
            id: 0,
            run_id: run_id.to_owned(),
            key: Some("1-1-login".to_owned()),
            stage: stage.to_owned(),
            attempt,
            input_hash: format!("hash-{stage}-{attempt}"),
            outcome: None,
            started_at: "2025-01-01T00:01:00Z".to_owned(),
            ended_at: None,
            detail: None,
        }
    }

    fn escalation(title: &str) -> EscalationRecord {
        EscalationRecord {
            id: 0,
            run_id: Some("r-none".to_owned()),
            key: Some("1-2-signup".to_owned()),
            title: title.to_owned(),
            finding: "tests fail on CI only".to_owned(),
            options: vec![
                "retry".to_owned(),
                "skip \"it\"".to_owned(),
                "stop".to_owned(),
            ],
            answer: None,
            created_at: "2025-01-01T00:02:00Z".to_owned(),
            answered_at: None,
            kind: "agent".to_owned(),
            resolved_at: None,
            after_step: 7,
        }
    }

    fn cost(run_id: Option<&str>, usd: f64) -> CostEntry {
        CostEntry {
            run_id: run_id.map(str::to_owned),
            step_id: Some(1),
            at: "2025-01-01T00:03:00Z".to_owned(),
            model: "anthropic/claude".to_owned(),
            input_tokens: 1000,
            output_tokens: 200,
            cache_read_tokens: 30,
            cache_write_tokens: 4,
            cost_usd: usd,
            estimated: false,
        }
    }

    fn keys(events: &[Event]) -> Vec<&str> {
        events.iter().map(|e| e.key.as_str()).collect()
    }

    #[test]
    fn open_creates_parent_dir_and_migrates_then_reopens() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/.baton/baton.db");
        let mut journal = SqliteJournal::open(&path).unwrap();
        assert_eq!(journal.path(), path);
        assert_eq!(journal.schema_version().unwrap(), migrations::LATEST);
        let mode: String = journal
            .conn
            .query_row("PRAGMA journal_mode", [], |row| row.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        let fk: i64 = journal
            .conn
            .query_row("PRAGMA foreign_keys", [], |row| row.get(0))
            .unwrap();
        assert_eq!(fk, 1);
        // synchronous: 1 = NORMAL between the durable commits.
        let sync: i64 = journal
            .conn
            .query_row("PRAGMA synchronous", [], |row| row.get(0))
            .unwrap();
        assert_eq!(sync, 1);
        let ids = journal
            .record_pending(&[event("a", None, "backlog")])
            .unwrap();
        drop(journal);

        let journal = SqliteJournal::open(&path).unwrap();
        assert_eq!(journal.schema_version().unwrap(), migrations::LATEST);
        let pending = journal.pending().unwrap();
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].id, ids[0]);
    }

    #[test]
    fn open_refuses_newer_schema() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("baton.db");
        drop(SqliteJournal::open(&path).unwrap());
        {
            let conn = Connection::open(&path).unwrap();
            conn.pragma_update(None, "user_version", migrations::LATEST + 1)
                .unwrap();
        }
        match SqliteJournal::open(&path) {
            Err(JournalError::TooNew {
                path: p,
                found,
                supported,
            }) => {
                assert_eq!(p, path);
                assert_eq!(found, migrations::LATEST + 1);
                assert_eq!(supported, migrations::LATEST);
            }
            other => panic!("expected TooNew, got {other:?}"),
        }
    }

    #[test]
    fn open_reports_path_on_failure() {
        let dir = tempfile::tempdir().unwrap();
        // A file where the parent directory should be.
        let blocker = dir.path().join("blocker");
        std::fs::write(&blocker, "x").unwrap();
        let path = blocker.join("baton.db");
        match SqliteJournal::open(&path) {
            Err(err @ JournalError::Sqlite { .. }) => {
                assert!(err.to_string().contains("baton.db"), "{err}");
            }
            other => panic!("expected a Sqlite error, got {other:?}"),
        }
    }

    #[test]
    fn in_memory_path_reads_memory() {
        let journal = SqliteJournal::open_in_memory().unwrap();
        assert_eq!(journal.path(), Path::new(":memory:"));
        assert_eq!(journal.schema_version().unwrap(), migrations::LATEST);
    }

    #[test]
    fn record_pending_round_trips_every_field() {
        let mut journal = SqliteJournal::open_in_memory().unwrap();
        let mut new = event("1-1-login", Some("ready-for-dev"), "in-progress");
        new.forced = true;
        new.run_id = Some("run-1".to_owned());
        let ids = journal.record_pending(std::slice::from_ref(&new)).unwrap();
        assert_eq!(ids.len(), 1);
        let pending = journal.pending().unwrap();
        assert_eq!(
            pending,
            vec![Event {
                id: ids[0],
                group: ids[0],
                at: new.at.clone(),
                actor: new.actor.clone(),
                key: new.key.clone(),
                from: new.from.clone(),
                to: new.to.clone(),
                reason: new.reason.clone(),
                forced: true,
                run_id: Some("run-1".to_owned()),
                state: EventState::Pending,
            }]
        );
        // Not applied yet: invisible to the default listing.
        assert!(journal.events(&EventFilter::default()).unwrap().is_empty());
    }

    #[test]
    fn record_pending_of_nothing_returns_nothing() {
        let mut journal = SqliteJournal::open_in_memory().unwrap();
        assert!(journal.record_pending(&[]).unwrap().is_empty());
        assert!(journal.pending().unwrap().is_empty());
    }

    #[test]
    fn events_of_one_call_share_the_first_id_as_group() {
        let mut journal = SqliteJournal::open_in_memory().unwrap();
        let first = journal
            .record_pending(&[
                event("a", None, "backlog"),
                event("b", None, "backlog"),
                event("c", None, "backlog"),
            ])
            .unwrap();
        let second = journal
            .record_pending(&[
                event("a", Some("backlog"), "ready-for-dev"),
                event("b", None, "x"),
            ])
            .unwrap();
        assert_eq!(first.len(), 3);
        assert_eq!(second.len(), 2);
        assert!(first.windows(2).all(|w| w[0] < w[1]));
        assert!(first[2] < second[0]);
        let pending = journal.pending().unwrap();
        assert_eq!(keys(&pending), ["a", "b", "c", "a", "b"]);
        let groups: Vec<i64> = pending.iter().map(|e| e.group).collect();
        assert_eq!(groups, [first[0], first[0], first[0], second[0], second[0]]);
        let ids: Vec<i64> = pending.iter().map(|e| e.id).collect();
        assert_eq!(ids, [first, second].concat());
    }

    #[test]
    fn pending_moves_to_applied_or_abandoned_once() {
        let mut journal = SqliteJournal::open_in_memory().unwrap();
        let ids = journal
            .record_pending(&[
                event("a", None, "backlog"),
                event("b", None, "backlog"),
                event("c", None, "backlog"),
            ])
            .unwrap();
        journal.mark_applied(&[ids[0], ids[2]]).unwrap();
        journal.mark_abandoned(&[ids[1]]).unwrap();
        assert!(journal.pending().unwrap().is_empty());

        let applied = journal.events(&EventFilter::default()).unwrap();
        assert_eq!(keys(&applied), ["a", "c"]);
        assert!(applied.iter().all(|e| e.state == EventState::Applied));

        // Abandoned never becomes applied, applied never becomes abandoned.
        journal.mark_applied(&[ids[1]]).unwrap();
        journal.mark_abandoned(&[ids[0]]).unwrap();
        // Unknown ids and empty slices are harmless.
        journal.mark_applied(&[9999]).unwrap();
        journal.mark_applied(&[]).unwrap();
        journal.mark_abandoned(&[]).unwrap();
        let all = journal
            .events(&EventFilter {
                all_states: true,
                ..EventFilter::default()
            })
            .unwrap();
        let states: Vec<EventState> = all.iter().map(|e| e.state).collect();
        assert_eq!(
            states,
            [
                EventState::Applied,
                EventState::Abandoned,
                EventState::Applied
            ]
        );
        // The durable writes restored synchronous=NORMAL (1).
        let sync: i64 = journal
            .conn
            .query_row("PRAGMA synchronous", [], |row| row.get(0))
            .unwrap();
        assert_eq!(sync, 1);
    }

    #[test]
    fn events_filter_by_key_state_and_limit() {
        let mut journal = SqliteJournal::open_in_memory().unwrap();
        let mut applied = Vec::new();
        for (i, key) in ["a", "b", "a", "c", "a", "b", "a"].into_iter().enumerate() {
            let ids = journal
                .record_pending(&[event(key, None, &format!("s{i}"))])
                .unwrap();
            applied.extend(ids);
        }
        let still_pending = journal.record_pending(&[event("a", None, "p")]).unwrap();
        let abandoned = journal.record_pending(&[event("a", None, "x")]).unwrap();
        journal.mark_applied(&applied).unwrap();
        journal.mark_abandoned(&abandoned).unwrap();

        let to = |events: Vec<Event>| events.into_iter().map(|e| e.to).collect::<Vec<_>>();
        let by_key = |key: &str, all_states: bool, limit: Option<usize>| EventFilter {
            key: Some(key.to_owned()),
            all_states,
            limit,
        };

        assert_eq!(
            to(journal.events(&EventFilter::default()).unwrap()),
            ["s0", "s1", "s2", "s3", "s4", "s5", "s6"]
        );
        assert_eq!(
            to(journal.events(&by_key("a", false, None)).unwrap()),
            ["s0", "s2", "s4", "s6"]
        );
        // The newest two, oldest first.
        assert_eq!(
            to(journal.events(&by_key("a", false, Some(2))).unwrap()),
            ["s4", "s6"]
        );
        assert_eq!(
            to(journal.events(&by_key("a", true, None)).unwrap()),
            ["s0", "s2", "s4", "s6", "p", "x"]
        );
        assert_eq!(
            to(journal.events(&by_key("a", true, Some(3))).unwrap()),
            ["s6", "p", "x"]
        );
        assert_eq!(
            to(journal
                .events(&EventFilter {
                    limit: Some(3),
                    ..EventFilter::default()
                })
                .unwrap()),
            ["s4", "s5", "s6"]
        );
        assert_eq!(
            journal
                .events(&by_key("a", false, Some(100)))
                .unwrap()
                .len(),
            4
        );
        assert!(
            journal
                .events(&by_key("a", false, Some(0)))
                .unwrap()
                .is_empty()
        );
        assert!(
            journal
                .events(&by_key("zzz", true, None))
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            journal
                .events(&EventFilter {
                    limit: Some(usize::MAX),
                    all_states: true,
                    key: None,
                })
                .unwrap()
                .len(),
            9
        );
        assert_eq!(still_pending.len(), 1);
        assert_eq!(journal.pending().unwrap()[0].id, still_pending[0]);
    }

    #[test]
    fn unknown_stored_state_is_corrupt() {
        let mut journal = SqliteJournal::open_in_memory().unwrap();
        let ids = journal
            .record_pending(&[event("a", None, "backlog")])
            .unwrap();
        journal
            .conn
            .pragma_update(None, "ignore_check_constraints", true)
            .unwrap();
        journal
            .conn
            .execute("UPDATE events SET state = 'bogus' WHERE id = ?1", [ids[0]])
            .unwrap();
        let all = EventFilter {
            all_states: true,
            ..EventFilter::default()
        };
        match journal.events(&all) {
            Err(JournalError::Corrupt { table, detail, .. }) => {
                assert_eq!(table, "events");
                assert!(detail.contains("bogus"), "{detail}");
            }
            other => panic!("expected Corrupt, got {other:?}"),
        }
    }

    #[test]
    fn run_round_trips_and_ends() {
        let mut journal = SqliteJournal::open_in_memory().unwrap();
        assert_eq!(journal.run("r1").unwrap(), None);
        journal.begin_run(&run("r1")).unwrap();
        journal.begin_run(&run("r2")).unwrap();
        assert_eq!(journal.run("r1").unwrap(), Some(run("r1")));
        journal
            .end_run("r1", "2025-01-01T01:00:00Z", "completed", "all done")
            .unwrap();
        assert_eq!(
            journal.run("r1").unwrap(),
            Some(RunRecord {
                ended_at: Some("2025-01-01T01:00:00Z".to_owned()),
                status: "completed".to_owned(),
                reason: Some("all done".to_owned()),
                ..run("r1")
            })
        );
        assert_eq!(journal.run("r2").unwrap(), Some(run("r2")));
        // Duplicate id is an error naming the database.
        assert!(matches!(
            journal.begin_run(&run("r1")),
            Err(JournalError::Sqlite { .. })
        ));
        // Ending an unknown run changes nothing.
        journal.end_run("nope", "t", "failed", "").unwrap();
        assert_eq!(journal.run("nope").unwrap(), None);
    }

    #[test]
    fn steps_round_trip_in_order_and_need_their_run() {
        let mut journal = SqliteJournal::open_in_memory().unwrap();
        journal.begin_run(&run("r1")).unwrap();
        journal.begin_run(&run("r2")).unwrap();
        let dev = journal.begin_step(&step("r1", "dev", 1)).unwrap();
        let other = journal.begin_step(&step("r2", "create", 1)).unwrap();
        let review = journal.begin_step(&step("r1", "review", 2)).unwrap();
        assert!(dev < other && other < review);
        journal
            .end_step(dev, "2025-01-01T00:30:00Z", "completed", Some("{}"))
            .unwrap();

        let steps = journal.steps("r1").unwrap();
        assert_eq!(
            steps,
            vec![
                StepRecord {
                    id: dev,
                    outcome: Some("completed".to_owned()),
                    ended_at: Some("2025-01-01T00:30:00Z".to_owned()),
                    detail: Some("{}".to_owned()),
                    ..step("r1", "dev", 1)
                },
                StepRecord {
                    id: review,
                    ..step("r1", "review", 2)
                },
            ]
        );
        assert_eq!(journal.steps("r2").unwrap().len(), 1);
        assert!(journal.steps("r3").unwrap().is_empty());
        // foreign_keys=ON: a step of an unrecorded run is refused.
        assert!(matches!(
            journal.begin_step(&step("r3", "dev", 1)),
            Err(JournalError::Sqlite { .. })
        ));
    }

    #[test]
    fn escalations_round_trip_and_answer_once() {
        let mut journal = SqliteJournal::open_in_memory().unwrap();
        // No run recorded for run_id: allowed (no foreign key).
        let first = journal.raise_escalation(&escalation("flaky")).unwrap();
        let second = journal.raise_escalation(&escalation("scope")).unwrap();
        assert_ne!(first, second);

        let open = journal.escalations(true).unwrap();
        assert_eq!(
            open,
            vec![
                EscalationRecord {
                    id: first,
                    ..escalation("flaky")
                },
                EscalationRecord {
                    id: second,
                    ..escalation("scope")
                },
            ]
        );

        assert!(
            journal
                .answer_escalation(first, "retry", "2025-01-01T00:05:00Z")
                .unwrap()
        );
        // Already answered: the first answer stands.
        assert!(
            !journal
                .answer_escalation(first, "stop", "2025-01-01T00:06:00Z")
                .unwrap()
        );
        // Unknown id.
        assert!(!journal.answer_escalation(4242, "stop", "t").unwrap());

        let open = journal.escalations(true).unwrap();
        assert_eq!(open.len(), 1);
        assert_eq!(open[0].id, second);
        let all = journal.escalations(false).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].answer.as_deref(), Some("retry"));
        assert_eq!(all[0].answered_at.as_deref(), Some("2025-01-01T00:05:00Z"));
        assert_eq!(all[0].options, escalation("x").options);
    }

    #[test]
    fn malformed_escalation_options_are_corrupt() {
        let mut journal = SqliteJournal::open_in_memory().unwrap();
        let id = journal.raise_escalation(&escalation("flaky")).unwrap();
        journal
            .conn
            .execute(
                "UPDATE escalations SET options = 'not json' WHERE id = ?1",
                [id],
            )
            .unwrap();
        assert!(matches!(
            journal.escalations(false),
            Err(JournalError::Corrupt {
                table: "escalations",
                ..
            })
        ));
    }

    #[test]
    fn cost_totals_per_run_and_overall() {
        let mut journal = SqliteJournal::open_in_memory().unwrap();
        assert_eq!(journal.total_cost(None).unwrap(), 0.0);
        assert_eq!(journal.total_cost(Some("r1")).unwrap(), 0.0);
        journal.record_cost(&cost(Some("r1"), 0.25)).unwrap();
        journal.record_cost(&cost(Some("r1"), 0.5)).unwrap();
        journal.record_cost(&cost(Some("r2"), 2.0)).unwrap();
        journal.record_cost(&cost(None, 0.125)).unwrap();
        assert_eq!(journal.total_cost(Some("r1")).unwrap(), 0.75);
        assert_eq!(journal.total_cost(Some("r2")).unwrap(), 2.0);
        assert_eq!(journal.total_cost(Some("r3")).unwrap(), 0.0);
        assert_eq!(journal.total_cost(None).unwrap(), 2.875);
        let row: (String, i64, i64, i64, i64, i64) = journal
            .conn
            .query_row(
                "SELECT model, step_id, input_tokens, output_tokens, cache_read_tokens,
                        cache_write_tokens FROM cost_ledger ORDER BY id LIMIT 1",
                [],
                |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                    ))
                },
            )
            .unwrap();
        assert_eq!(row, ("anthropic/claude".to_owned(), 1, 1000, 200, 30, 4));
        let estimated = CostEntry {
            estimated: true,
            ..cost(Some("r4"), 0.0)
        };
        journal.record_cost(&estimated).unwrap();
        let flags: Vec<i64> = journal
            .conn
            .prepare("SELECT estimated FROM cost_ledger ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(flags, vec![0, 0, 0, 0, 1], "estimated lines are flagged");
    }

    #[test]
    fn concurrent_openers_of_a_fresh_database_all_succeed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".baton/baton.db");
        let barrier = Arc::new(Barrier::new(8));
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let path = path.clone();
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || {
                    barrier.wait();
                    SqliteJournal::open(&path).map(|j| j.schema_version())
                })
            })
            .collect();
        for handle in handles {
            assert_eq!(handle.join().unwrap().unwrap().unwrap(), migrations::LATEST);
        }
    }

    #[test]
    fn concurrent_writers_on_one_file_all_succeed() {
        const THREADS: usize = 8;
        const EVENTS: usize = 100;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".baton/baton.db");
        let barrier = Arc::new(Barrier::new(THREADS));
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let path = path.clone();
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || -> Result<Vec<i64>, JournalError> {
                    barrier.wait();
                    // Each thread its own connection, as separate processes would have.
                    let mut journal = SqliteJournal::open(&path)?;
                    let mut ids = Vec::new();
                    for i in 0..EVENTS {
                        let new = event(&format!("t{t}-{i}"), None, "backlog");
                        let recorded = journal.record_pending(&[new])?;
                        journal.mark_applied(&recorded)?;
                        ids.extend(recorded);
                    }
                    Ok(ids)
                })
            })
            .collect();
        let mut all_ids = Vec::new();
        for handle in handles {
            let ids = handle.join().unwrap().unwrap();
            assert_eq!(ids.len(), EVENTS);
            all_ids.extend(ids);
        }
        all_ids.sort_unstable();
        all_ids.dedup();
        assert_eq!(all_ids.len(), THREADS * EVENTS);

        let journal = SqliteJournal::open(&path).unwrap();
        assert!(journal.pending().unwrap().is_empty());
        let applied = journal.events(&EventFilter::default()).unwrap();
        assert_eq!(applied.len(), THREADS * EVENTS);
        let mut ids: Vec<i64> = applied.iter().map(|e| e.id).collect();
        ids.sort_unstable();
        assert_eq!(ids, all_ids);
        assert!(applied.iter().all(|e| e.group == e.id));
    }

    #[test]
    fn escalations_resolve_once_and_steps_are_found_by_key() {
        let mut j = SqliteJournal::open_in_memory().unwrap();
        let id = j.raise_escalation(&escalation("rounds")).unwrap();
        assert!(
            j.answer_escalation(id, "retry", "2025-01-01T00:03:00Z")
                .unwrap()
        );
        j.resolve_escalation(id, "2025-01-01T00:04:00Z").unwrap();
        j.resolve_escalation(id, "2025-01-01T00:05:00Z").unwrap();
        let e = &j.escalations(false).unwrap()[0];
        assert_eq!(e.kind, "agent");
        assert_eq!(e.resolved_at.as_deref(), Some("2025-01-01T00:04:00Z"));
        j.begin_run(&RunRecord {
            id: "r1".into(),
            kind: "sprint".into(),
            started_at: "t".into(),
            ended_at: None,
            status: "running".into(),
            reason: None,
        })
        .unwrap();
        for (key, stage) in [("1-1-a", "dev"), ("1-2-b", "dev"), ("1-1-a", "review")] {
            j.begin_step(&StepRecord {
                id: 0,
                run_id: "r1".into(),
                key: Some(key.into()),
                stage: stage.into(),
                attempt: 1,
                input_hash: String::new(),
                outcome: None,
                started_at: "t".into(),
                ended_at: None,
                detail: None,
            })
            .unwrap();
        }
        let stages: Vec<String> = j
            .steps_for_key("1-1-a")
            .unwrap()
            .into_iter()
            .map(|s| s.stage)
            .collect();
        assert_eq!(stages, ["dev", "review"]);
    }
}
