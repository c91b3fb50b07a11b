//! The embedded SQLite journal backend, [`SqliteJournal`].
//!
//! This module owns the connection settings (WAL, `synchronous=NORMAL`, foreign keys, a 30 s busy
//! timeout so that many baton processes can write the same `.baton/baton.db` at once) and the
//! write protocol's durability choices: every write is one `BEGIN IMMEDIATE` transaction (taking
//! the write lock up front, so a concurrent writer waits in the busy handler instead of failing
//! with `SQLITE_BUSY` on a lock upgrade); `record_pending`, `mark_abandoned`, `answer_escalation`
//! and the guards' settings and allowances commit with a full fsync (`synchronous=FULL`), every
//! other write with `synchronous=NORMAL` (no fsync in WAL mode; it becomes durable with the next
//! full commit, and a process killed before that loses nothing: see [`super`]). A durable agent
//! step therefore costs one journal fsync, and a run event none. Every SQLite error is reported
//! as [`JournalError::Sqlite`] naming the database file (`:memory:` for in-memory journals).
//!
//! The mapping between each record family and its rows lives in one submodule per family, with
//! that family's trait implementation and tests; the schema is in [`super::migrations`].

use super::JournalError;
use super::migrations;
use super::sqlite_err;
use rusqlite::{Connection, Transaction, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::time::Duration;

mod board;
mod costs;
mod escalations;
#[cfg(test)]
mod fixtures;
mod guard;
mod run_events;
mod runs;
mod sdd;
mod status;

/// How long a writer waits for another process's write lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// The path reported for in-memory journals.
const MEMORY_PATH: &str = ":memory:";

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

    pub(super) fn err(&self) -> impl Fn(rusqlite::Error) -> JournalError + '_ {
        |e| sqlite_err(&self.path, e)
    }

    pub(super) fn corrupt(&self, table: &'static str, detail: String) -> JournalError {
        JournalError::Corrupt {
            path: self.path.clone(),
            table,
            detail,
        }
    }

    /// Runs `f` in one `BEGIN IMMEDIATE` transaction and commits it.
    pub(super) fn write<T>(
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
    pub(super) fn write_durable<T>(
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

    /// Sets `synchronous`. Not through a cached statement: SQLite applies this pragma when the
    /// statement is prepared, so running a cached one again would change nothing.
    pub(super) fn set_synchronous(&self, full: bool) -> Result<(), JournalError> {
        let level = if full { "FULL" } else { "NORMAL" };
        self.conn
            .pragma_update(None, "synchronous", level)
            .map_err(self.err())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::StatusEvents;
    use fixtures::event;
    use std::sync::{Arc, Barrier};

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
}
