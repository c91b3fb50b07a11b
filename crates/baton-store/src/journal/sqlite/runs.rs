//! Runs and steps in SQLite: the `runs` and `steps` tables (a step needs its run: foreign key).

use super::SqliteJournal;
use crate::journal::{INTERRUPTED, JournalError, RunHold, RunLog, RunRecord, StepRecord};
use rusqlite::{OptionalExtension, Row, params};

/// Columns of `steps`, in the order [`raw_step`] reads them.
const STEP_COLUMNS: &str =
    "id, run_id, key, stage, attempt, input_hash, outcome, started_at, ended_at, detail";

impl SqliteJournal {
    /// The liveness lock of run `id` (`live/<id>.lock` beside the database), `None` for a
    /// journal in memory.
    fn run_lock(&self, id: &str) -> Option<std::path::PathBuf> {
        if self.path() == std::path::Path::new(super::MEMORY_PATH) {
            return None;
        }
        let name: String = id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let dir = self.path().parent().unwrap_or(std::path::Path::new("."));
        Some(dir.join("live").join(format!("{name}.lock")))
    }

    fn lock_err(path: &std::path::Path) -> impl Fn(std::io::Error) -> JournalError + '_ {
        move |source| JournalError::RunLock {
            path: path.to_path_buf(),
            source,
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

impl RunLog for SqliteJournal {
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
                params![id, at, status, baton_core::secrets::redact(reason)],
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
                    step.detail.as_deref().map(baton_core::secrets::redact)
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
                params![id, at, outcome, detail.map(baton_core::secrets::redact)],
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

    fn runs_of_kind(&self, kind: &str, n: usize) -> Result<Vec<RunRecord>, JournalError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, kind, started_at, ended_at, status, reason FROM runs
                 WHERE kind = ?1 ORDER BY started_at DESC, rowid DESC LIMIT ?2",
            )
            .map_err(self.err())?;
        let limit = i64::try_from(n).unwrap_or(i64::MAX);
        stmt.query_map(params![kind, limit], run_from_row)
            .map_err(self.err())?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.err())
    }

    fn unfinished_runs(&self) -> Result<Vec<RunRecord>, JournalError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, kind, started_at, ended_at, status, reason FROM runs
                 WHERE ended_at IS NULL ORDER BY started_at, rowid",
            )
            .map_err(self.err())?;
        stmt.query_map([], run_from_row)
            .map_err(self.err())?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.err())
    }

    fn hold_run(&self, id: &str) -> Result<RunHold, JournalError> {
        match self.run_lock(id) {
            Some(path) => RunHold::take(&path).map_err(Self::lock_err(&path)),
            None => Ok(RunHold::none()),
        }
    }

    fn run_is_held(&self, id: &str) -> Result<bool, JournalError> {
        match self.run_lock(id) {
            Some(path) => RunHold::is_held(&path).map_err(Self::lock_err(&path)),
            // A journal in memory is this process's own: its runs are alive.
            None => Ok(true),
        }
    }

    fn close_interrupted(
        &mut self,
        id: &str,
        at: &str,
        reason: &str,
    ) -> Result<bool, JournalError> {
        let closed = self.write(|tx| {
            Ok(tx.execute(
                "UPDATE runs SET ended_at = ?2, status = ?3, reason = ?4
                 WHERE id = ?1 AND ended_at IS NULL",
                params![id, at, INTERRUPTED, baton_core::secrets::redact(reason)],
            )? > 0)
        })?;
        if let Some(path) = self.run_lock(id) {
            // The lock file of a run nobody holds any more.
            let _ = std::fs::remove_file(path);
        }
        Ok(closed)
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::JournalError;
    use crate::journal::sqlite::fixtures::{run, step};

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
}
