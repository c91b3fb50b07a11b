//! The run event log in SQLite: the `run_events` table, whose `AUTOINCREMENT` key numbers the
//! events (never reused, even across processes sharing the file).
//!
//! An append is one `BEGIN IMMEDIATE` transaction committed with `synchronous=NORMAL`: in WAL
//! mode SQLite then writes the frames to the WAL without an fsync, and they become durable with
//! the next synchronous commit (or checkpoint). So an event costs no fsync of its own.

use super::SqliteJournal;
use crate::journal::{JournalError, RunEvents, StoredEvent};
use baton_core::secrets::redact;
use rusqlite::params;

impl RunEvents for SqliteJournal {
    fn append_event(
        &mut self,
        run_id: &str,
        at: &str,
        scope_json: &str,
        body_json: &str,
    ) -> Result<i64, JournalError> {
        let (scope_json, body_json) = (redact(scope_json), redact(body_json));
        self.write(|tx| {
            tx.prepare_cached(
                "INSERT INTO run_events (run_id, at, scope, body) VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(params![run_id, at, scope_json, body_json])?;
            Ok(tx.last_insert_rowid())
        })
    }

    fn events_after(&self, seq: i64, limit: usize) -> Result<Vec<StoredEvent>, JournalError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT seq, run_id, at, scope, body FROM run_events
                 WHERE seq > ?1 ORDER BY seq LIMIT ?2",
            )
            .map_err(self.err())?;
        let rows = stmt
            .query_map(params![seq, limit], |r| {
                Ok(StoredEvent {
                    seq: r.get(0)?,
                    run_id: r.get(1)?,
                    at: r.get(2)?,
                    scope: r.get(3)?,
                    body: r.get(4)?,
                })
            })
            .map_err(self.err())?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.err())
    }

    fn last_event_seq(&self) -> Result<i64, JournalError> {
        self.conn
            .query_row("SELECT COALESCE(MAX(seq), 0) FROM run_events", [], |r| {
                r.get(0)
            })
            .map_err(self.err())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::StatusEvents;
    use crate::journal::sqlite::fixtures::event;

    fn append(j: &mut SqliteJournal, run: &str, n: u32) -> i64 {
        j.append_event(
            run,
            "2025-01-01T00:00:00Z",
            r#"{"unit":{"story":"1-1-a"}}"#,
            &format!(r#"{{"progress":{n}}}"#),
        )
        .unwrap()
    }

    #[test]
    fn events_are_numbered_from_one_and_read_back_in_pages() {
        let mut j = SqliteJournal::open_in_memory().unwrap();
        assert_eq!(j.last_event_seq().unwrap(), 0);
        assert!(j.events_after(0, 10).unwrap().is_empty());
        let seqs: Vec<i64> = (0..5).map(|n| append(&mut j, "r1", n)).collect();
        assert_eq!(seqs, [1, 2, 3, 4, 5]);
        assert_eq!(j.last_event_seq().unwrap(), 5);

        let first = j.events_after(0, 2).unwrap();
        assert_eq!(
            first,
            vec![
                StoredEvent {
                    seq: 1,
                    run_id: "r1".into(),
                    at: "2025-01-01T00:00:00Z".into(),
                    scope: r#"{"unit":{"story":"1-1-a"}}"#.into(),
                    body: r#"{"progress":0}"#.into(),
                },
                StoredEvent {
                    seq: 2,
                    body: r#"{"progress":1}"#.into(),
                    ..first[0].clone()
                },
            ]
        );
        let rest = j.events_after(2, 100).unwrap();
        assert_eq!(rest.iter().map(|e| e.seq).collect::<Vec<_>>(), [3, 4, 5]);
        assert!(j.events_after(5, 100).unwrap().is_empty());
        assert!(j.events_after(0, 0).unwrap().is_empty());
        assert_eq!(j.events_after(0, usize::MAX).unwrap().len(), 5);
    }

    #[test]
    fn a_late_reader_catches_up_then_follows_another_writer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".baton/baton.db");
        let mut writer = SqliteJournal::open(&path).unwrap();
        for n in 0..3 {
            append(&mut writer, "r1", n);
        }
        // Another process opens the journal later: it reads what it missed...
        let reader = SqliteJournal::open(&path).unwrap();
        let missed = reader.events_after(0, 100).unwrap();
        assert_eq!(missed.len(), 3);
        let mut cursor = missed.last().map_or(0, |e| e.seq);
        // ...then follows from its cursor as the writer goes on.
        append(&mut writer, "r1", 3);
        let mut second = SqliteJournal::open(&path).unwrap();
        let other_run = append(&mut second, "r2", 0);
        append(&mut writer, "r1", 4);
        let next = reader.events_after(cursor, 100).unwrap();
        assert_eq!(
            next.iter()
                .map(|e| (e.seq, e.run_id.as_str()))
                .collect::<Vec<_>>(),
            [(4, "r1"), (other_run, "r2"), (6, "r1")]
        );
        cursor = next.last().map_or(cursor, |e| e.seq);
        assert_eq!(cursor, reader.last_event_seq().unwrap());
    }

    #[test]
    fn numbers_are_never_reused_and_appends_leave_synchronous_normal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("baton.db");
        let mut j = SqliteJournal::open(&path).unwrap();
        append(&mut j, "r1", 0);
        let last = append(&mut j, "r1", 1);
        // Even if rows were removed by hand, a later event gets a larger number.
        j.conn.execute("DELETE FROM run_events", []).unwrap();
        drop(j);
        let mut j = SqliteJournal::open(&path).unwrap();
        assert!(append(&mut j, "r1", 2) > last);
        // A durable status write in between leaves the connection at NORMAL for events.
        j.record_pending(&[event("a", None, "backlog")]).unwrap();
        append(&mut j, "r1", 3);
        let sync: i64 = j
            .conn
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .unwrap();
        assert_eq!(sync, 1, "NORMAL");
    }
}
