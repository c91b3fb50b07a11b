//! Escalations in SQLite: the `escalations` table (options stored as a JSON array), answered
//! once, resolved once, listed whole or by key with the filter in SQL.

use super::{SqliteJournal, sqlite_err};
use crate::journal::{EscalationLog, EscalationRecord, JournalError};
use rusqlite::{Params, Row, params};

/// Columns of `escalations`, in the order [`raw_escalation`] reads them.
const ESCALATION_COLUMNS: &str = "id, run_id, key, title, finding, options, answer, created_at, answered_at, kind, resolved_at, after_step";

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

/// The query of one key's escalations (`?1`), oldest first, open ones only if `open_only`.
fn of_key_sql(open_only: bool) -> String {
    let open = if open_only { " AND answer IS NULL" } else { "" };
    format!("SELECT {ESCALATION_COLUMNS} FROM escalations WHERE key = ?1{open} ORDER BY id")
}

impl SqliteJournal {
    /// Runs a query selecting [`ESCALATION_COLUMNS`] and parses the rows' options.
    fn query_escalations(
        &self,
        sql: &str,
        args: impl Params,
    ) -> Result<Vec<EscalationRecord>, JournalError> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(self.err())?;
        let raws = stmt
            .query_map(args, raw_escalation)
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
}

impl EscalationLog for SqliteJournal {
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
                    baton_core::secrets::redact(&esc.title),
                    baton_core::secrets::redact(&esc.finding),
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
        let sql = if open_only {
            format!("SELECT {ESCALATION_COLUMNS} FROM escalations WHERE answer IS NULL ORDER BY id")
        } else {
            format!("SELECT {ESCALATION_COLUMNS} FROM escalations ORDER BY id")
        };
        self.query_escalations(&sql, [])
    }

    /// The key's escalations, oldest first, found through the `escalations_key` index.
    fn escalations_for_key(
        &self,
        key: &str,
        open_only: bool,
    ) -> Result<Vec<EscalationRecord>, JournalError> {
        self.query_escalations(&of_key_sql(open_only), [key])
    }

    fn escalation(&self, id: i64) -> Result<Option<EscalationRecord>, JournalError> {
        let sql = format!("SELECT {ESCALATION_COLUMNS} FROM escalations WHERE id = ?1");
        Ok(self.query_escalations(&sql, [id])?.pop())
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::sqlite::fixtures::escalation;
    use crate::journal::{RunLog, RunRecord, StepRecord};

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

    #[test]
    fn escalations_of_one_key_are_filtered_in_sql() {
        let mut j = SqliteJournal::open_in_memory().unwrap();
        let of = |key: Option<&str>, title: &str| EscalationRecord {
            key: key.map(str::to_owned),
            ..escalation(title)
        };
        let a1 = j.raise_escalation(&of(Some("1-1-a"), "a1")).unwrap();
        let b1 = j.raise_escalation(&of(Some("1-2-b"), "b1")).unwrap();
        let a2 = j.raise_escalation(&of(Some("1-1-a"), "a2")).unwrap();
        j.raise_escalation(&of(None, "keyless")).unwrap();
        let a3 = j.raise_escalation(&of(Some("1-1-a"), "a3")).unwrap();
        assert!(j.answer_escalation(a2, "retry", "t").unwrap());

        let ids = |v: Vec<EscalationRecord>| v.into_iter().map(|e| e.id).collect::<Vec<_>>();
        assert_eq!(
            ids(j.escalations_for_key("1-1-a", false).unwrap()),
            [a1, a2, a3]
        );
        assert_eq!(ids(j.escalations_for_key("1-1-a", true).unwrap()), [a1, a3]);
        assert_eq!(ids(j.escalations_for_key("1-2-b", false).unwrap()), [b1]);
        assert!(j.escalations_for_key("9-9-z", false).unwrap().is_empty());
        // The same records the whole listing holds, options parsed.
        let all = j.escalations(false).unwrap();
        let from_all: Vec<EscalationRecord> = all
            .into_iter()
            .filter(|e| e.key.as_deref() == Some("1-1-a"))
            .collect();
        assert_eq!(j.escalations_for_key("1-1-a", false).unwrap(), from_all);

        // SQLite answers through the key index, not by reading every escalation.
        for open_only in [false, true] {
            let plan: Vec<String> = j
                .conn
                .prepare(&format!("EXPLAIN QUERY PLAN {}", of_key_sql(open_only)))
                .unwrap()
                .query_map(["1-1-a"], |r| r.get::<_, String>(3))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            assert!(
                plan.iter()
                    .any(|d| d.contains("USING INDEX escalations_key")),
                "{plan:?}"
            );
        }
    }

    #[test]
    fn one_escalation_by_id() {
        let mut j = SqliteJournal::open_in_memory().unwrap();
        let first = j.raise_escalation(&escalation("first")).unwrap();
        let second = j.raise_escalation(&escalation("second")).unwrap();
        assert!(j.answer_escalation(second, "stop", "t2").unwrap());
        assert_eq!(
            j.escalation(first).unwrap(),
            Some(EscalationRecord {
                id: first,
                ..escalation("first")
            })
        );
        let got = j.escalation(second).unwrap().unwrap();
        assert_eq!(got.title, "second");
        assert_eq!(got.answer.as_deref(), Some("stop"));
        assert_eq!(j.escalation(4242).unwrap(), None);
        j.conn
            .execute(
                "UPDATE escalations SET options = 'not json' WHERE id = ?1",
                [first],
            )
            .unwrap();
        assert!(matches!(
            j.escalation(first),
            Err(JournalError::Corrupt {
                table: "escalations",
                ..
            })
        ));
        // A corrupt row of another escalation does not spoil this one.
        assert!(j.escalation(second).unwrap().is_some());
    }
}
