//! The dashboard's read-only queries in SQLite ([`BoardViews`]): plain `SELECT`s over `runs`,
//! `steps` and `cost_ledger`, served by the tables' existing keys and index.

use super::SqliteJournal;
use crate::journal::board::{BoardViews, Spend};
use crate::journal::{CostLedger, JournalError, RunRecord, StoredEvent, UsageOf};
use rusqlite::params;

impl BoardViews for SqliteJournal {
    fn recent_runs(&self, limit: usize) -> Result<Vec<RunRecord>, JournalError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, kind, started_at, ended_at, status, reason FROM runs
                 ORDER BY started_at DESC, id DESC LIMIT ?1",
            )
            .map_err(self.err())?;
        let rows = stmt
            .query_map(params![limit], |row| {
                Ok(RunRecord {
                    id: row.get(0)?,
                    kind: row.get(1)?,
                    started_at: row.get(2)?,
                    ended_at: row.get(3)?,
                    status: row.get(4)?,
                    reason: row.get(5)?,
                })
            })
            .map_err(self.err())?;
        rows.collect::<Result<_, _>>().map_err(self.err())
    }

    fn run_spend(&self, run_id: &str) -> Result<Spend, JournalError> {
        self.usage(UsageOf::Run(run_id))
    }

    fn story_events(&self, key: &str, limit: usize) -> Result<Vec<StoredEvent>, JournalError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        // The scope is the engine's JSON: `{"unit":{"story":K}}` or
        // `{"agent":{"unit":{"story":K},"agent":A}}`.
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT seq, run_id, at, scope, body FROM (
                     SELECT seq, run_id, at, scope, body FROM run_events
                     WHERE json_valid(scope)
                       AND (json_extract(scope, '$.unit.story') = ?1
                            OR json_extract(scope, '$.agent.unit.story') = ?1)
                     ORDER BY seq DESC LIMIT ?2)
                 ORDER BY seq",
            )
            .map_err(self.err())?;
        let rows = stmt
            .query_map(params![key, limit], |row| {
                Ok(StoredEvent {
                    seq: row.get(0)?,
                    run_id: row.get(1)?,
                    at: row.get(2)?,
                    scope: row.get(3)?,
                    body: row.get(4)?,
                })
            })
            .map_err(self.err())?;
        rows.collect::<Result<_, _>>().map_err(self.err())
    }
}

#[cfg(test)]
mod tests {
    use crate::journal::board::BoardViews;
    use crate::journal::{CostEntry, CostLedger, RunEvents, RunLog, RunRecord, SqliteJournal};

    #[test]
    fn runs_newest_first_their_spend_and_a_storys_events() {
        let mut j = SqliteJournal::open_in_memory().unwrap();
        for (id, at) in [
            ("r1", "2026-01-01T00:00:00Z"),
            ("r2", "2026-01-02T00:00:00Z"),
        ] {
            j.begin_run(&RunRecord {
                id: id.into(),
                kind: "sprint".into(),
                started_at: at.into(),
                ended_at: None,
                status: "running".into(),
                reason: None,
            })
            .unwrap();
        }
        for usd in [0.25, 0.5] {
            j.record_cost(&CostEntry {
                run_id: Some("r2".into()),
                step_id: None,
                at: "t".into(),
                model: "script/demo".into(),
                input_tokens: 10,
                output_tokens: 2,
                cache_read_tokens: 30,
                cache_write_tokens: 5,
                cost_usd: usd,
                estimated: false,
            })
            .unwrap();
        }
        for (scope, body) in [
            (r#"{"unit":{"story":"1-1-a"}}"#, r#"{"event":"stage"}"#),
            ("\"run\"", r#"{"event":"notice"}"#),
            (
                r#"{"agent":{"unit":{"story":"1-1-a"},"agent":"dev"}}"#,
                r#"{"event":"turn"}"#,
            ),
            (r#"{"unit":{"story":"1-1-ab"}}"#, r#"{"event":"stage"}"#),
            ("not json", "{}"),
            (
                r#"{"agent":{"unit":{"story":"1-1-a"},"agent":"dev"}}"#,
                r#"{"event":"usage"}"#,
            ),
        ] {
            j.append_event("r2", "t", scope, body).unwrap();
        }
        let runs: Vec<String> = j
            .recent_runs(5)
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(runs, ["r2", "r1"]);
        assert_eq!(j.recent_runs(1).unwrap().len(), 1);
        let r2 = j.run_spend("r2").unwrap();
        // Input counts every input token, the cache's included.
        assert_eq!(
            (r2.input_tokens, r2.output_tokens, r2.cost_usd),
            (90, 4, 0.75)
        );
        assert_eq!((r2.cache_read_tokens, r2.cache_write_tokens), (60, 10));
        assert_eq!(j.run_spend("r1").unwrap().cost_usd, 0.0);
        let seqs: Vec<i64> = j
            .story_events("1-1-a", 10)
            .unwrap()
            .iter()
            .map(|e| e.seq)
            .collect();
        assert_eq!(seqs, [1, 3, 6]);
        let newest: Vec<i64> = j
            .story_events("1-1-a", 2)
            .unwrap()
            .iter()
            .map(|e| e.seq)
            .collect();
        assert_eq!(newest, [3, 6]);
    }
}
