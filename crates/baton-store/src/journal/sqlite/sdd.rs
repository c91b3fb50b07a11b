//! The plan tasks of `baton sdd` in SQLite (`sdd_tasks`; see [`crate::journal::SddTasks`]). The
//! methods are inherent on [`SqliteJournal`], as the binary calls them today, and [`SddTasks`]
//! forwards to them.

use super::SqliteJournal;
use crate::journal::{JournalError, SddTaskRecord, SddTasks};
use rusqlite::params;

impl SqliteJournal {
    /// Records a task's state (inserting the task the first time).
    ///
    /// # Errors
    ///
    /// [`JournalError::Sqlite`] if it cannot be written.
    pub fn record_sdd_task(&mut self, t: &SddTaskRecord) -> Result<(), JournalError> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO sdd_tasks (plan, task_id, position, title, state, run_id, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT(plan, task_id) DO UPDATE SET position = excluded.position,
                     title = excluded.title, state = excluded.state, run_id = excluded.run_id,
                     updated_at = excluded.updated_at",
                params![
                    t.plan,
                    t.task_id,
                    t.position,
                    t.title,
                    t.state,
                    t.run_id,
                    t.updated_at
                ],
            )?;
            Ok(())
        })
    }

    /// The tasks of `plan`, in plan order.
    ///
    /// # Errors
    ///
    /// [`JournalError::Sqlite`] if they cannot be read.
    pub fn sdd_tasks(&self, plan: &str) -> Result<Vec<SddTaskRecord>, JournalError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT plan, task_id, position, title, state, run_id, updated_at
                 FROM sdd_tasks WHERE plan = ?1 ORDER BY position, task_id",
            )
            .map_err(self.err())?;
        let rows = stmt
            .query_map(params![plan], |r| {
                Ok(SddTaskRecord {
                    plan: r.get(0)?,
                    task_id: r.get(1)?,
                    position: r.get(2)?,
                    title: r.get(3)?,
                    state: r.get(4)?,
                    run_id: r.get(5)?,
                    updated_at: r.get(6)?,
                })
            })
            .map_err(self.err())?;
        rows.collect::<Result<Vec<_>, _>>().map_err(self.err())
    }
}

impl SddTasks for SqliteJournal {
    fn record_sdd_task(&mut self, task: &SddTaskRecord) -> Result<(), JournalError> {
        SqliteJournal::record_sdd_task(self, task)
    }
    fn sdd_tasks(&self, plan: &str) -> Result<Vec<SddTaskRecord>, JournalError> {
        SqliteJournal::sdd_tasks(self, plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_is_inserted_then_updated_in_place() {
        let mut j = SqliteJournal::open_in_memory().unwrap();
        let mut t = SddTaskRecord {
            plan: "PLAN.md".into(),
            task_id: "2".into(),
            position: 2,
            title: "Print".into(),
            state: "pending".into(),
            run_id: Some("r1".into()),
            updated_at: "t1".into(),
        };
        j.record_sdd_task(&t).unwrap();
        let first = SddTaskRecord {
            task_id: "1".into(),
            position: 1,
            title: "Parse".into(),
            ..t.clone()
        };
        j.record_sdd_task(&first).unwrap();
        t.state = "reviewing".into();
        t.updated_at = "t2".into();
        j.record_sdd_task(&t).unwrap();
        let got = j.sdd_tasks("PLAN.md").unwrap();
        assert_eq!(got, vec![first, t]);
        assert!(j.sdd_tasks("OTHER.md").unwrap().is_empty());
    }
}
