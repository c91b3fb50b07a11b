//! The cost ledger in SQLite: the `cost_ledger` table and its sums.

use super::SqliteJournal;
use crate::journal::{CostEntry, CostLedger, JournalError, UsageOf};
use baton_core::meter::Meter;
use rusqlite::{Row, params};
use std::collections::BTreeMap;

/// A token count as SQLite's signed 64-bit integer (counts beyond `i64::MAX` are refused).
fn tokens(count: u64) -> rusqlite::Result<i64> {
    i64::try_from(count).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}

/// The sums every usage query selects, over the ledger aliased `c`, in this order.
const SUMS: &str = "COALESCE(SUM(c.input_tokens), 0), COALESCE(SUM(c.cache_read_tokens), 0),
     COALESCE(SUM(c.cache_write_tokens), 0), COALESCE(SUM(c.output_tokens), 0),
     COALESCE(SUM(c.cost_usd), 0.0)";

/// The meter of the sums selected from column `first` on ([`SUMS`]).
fn meter(row: &Row<'_>, first: usize) -> rusqlite::Result<Meter> {
    let count = |i: usize| -> rusqlite::Result<u64> {
        let v: i64 = row.get(first + i)?;
        Ok(u64::try_from(v).unwrap_or(0))
    };
    Ok(Meter::of_call(
        count(0)?,
        count(1)?,
        count(2)?,
        count(3)?,
        row.get(first + 4)?,
    ))
}

impl CostLedger for SqliteJournal {
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

    fn usage(&self, of: UsageOf<'_>) -> Result<Meter, JournalError> {
        let (filter, arg): (&str, Option<rusqlite::types::Value>) = match of {
            UsageOf::All => ("1", None),
            UsageOf::Run(run) => ("c.run_id = ?1", Some(run.to_owned().into())),
            UsageOf::RunKind(kind) => (
                "c.run_id IN (SELECT id FROM runs WHERE kind = ?1)",
                Some(kind.to_owned().into()),
            ),
            UsageOf::Step(step) => ("c.step_id = ?1", Some(step.into())),
            UsageOf::Key(key) => (
                "c.step_id IN (SELECT id FROM steps WHERE key = ?1)",
                Some(key.to_owned().into()),
            ),
        };
        let sql = format!("SELECT {SUMS} FROM cost_ledger c WHERE {filter}");
        let result = match arg {
            Some(arg) => self.conn.query_row(&sql, [arg], |row| meter(row, 0)),
            None => self.conn.query_row(&sql, [], |row| meter(row, 0)),
        };
        result.map_err(self.err())
    }

    fn usage_by_key(
        &self,
        run_kind: Option<&str>,
    ) -> Result<BTreeMap<String, Meter>, JournalError> {
        let sql = format!(
            "SELECT s.key, {SUMS} FROM cost_ledger c JOIN steps s ON s.id = c.step_id
             WHERE s.key IS NOT NULL
               AND (?1 IS NULL OR c.run_id IN (SELECT id FROM runs WHERE kind = ?1))
             GROUP BY s.key"
        );
        let mut stmt = self.conn.prepare_cached(&sql).map_err(self.err())?;
        let rows = stmt
            .query_map(params![run_kind], |row| {
                Ok((row.get::<_, String>(0)?, meter(row, 1)?))
            })
            .map_err(self.err())?;
        rows.collect::<Result<_, _>>().map_err(self.err())
    }

    fn usage_by_step(&self, key: &str) -> Result<BTreeMap<i64, Meter>, JournalError> {
        let sql = format!(
            "SELECT c.step_id, {SUMS} FROM cost_ledger c
             WHERE c.step_id IN (SELECT id FROM steps WHERE key = ?1)
             GROUP BY c.step_id"
        );
        let mut stmt = self.conn.prepare_cached(&sql).map_err(self.err())?;
        let rows = stmt
            .query_map(params![key], |row| {
                Ok((row.get::<_, i64>(0)?, meter(row, 1)?))
            })
            .map_err(self.err())?;
        rows.collect::<Result<_, _>>().map_err(self.err())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::sqlite::fixtures::cost;

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
    fn the_meter_sums_per_step_key_run_and_run_kind_with_the_cache_inside_the_input() {
        use crate::journal::{RunLog, RunRecord, StepRecord};
        use baton_core::meter::Meter;
        let mut j = SqliteJournal::open_in_memory().unwrap();
        for (id, kind) in [("s1", "sprint"), ("s2", "sprint"), ("t1", "team")] {
            j.begin_run(&RunRecord {
                id: id.into(),
                kind: kind.into(),
                started_at: "t".into(),
                ended_at: None,
                status: "running".into(),
                reason: None,
            })
            .unwrap();
        }
        let step = |j: &mut SqliteJournal, run: &str, key: &str| {
            j.begin_step(&StepRecord {
                id: 0,
                run_id: run.into(),
                key: Some(key.into()),
                stage: "dev".into(),
                attempt: 1,
                input_hash: String::new(),
                outcome: None,
                started_at: "t".into(),
                ended_at: None,
                detail: None,
            })
            .unwrap()
        };
        let a1 = step(&mut j, "s1", "1-1-a");
        let a2 = step(&mut j, "s2", "1-1-a");
        let b1 = step(&mut j, "s2", "1-2-b");
        let t1 = step(&mut j, "t1", "team:0");
        let line = |run: &str, step: Option<i64>, n: u64| CostEntry {
            run_id: Some(run.into()),
            step_id: step,
            at: "t".into(),
            model: "anthropic/claude-sonnet-4-5".into(),
            input_tokens: n,
            output_tokens: 1,
            cache_read_tokens: 10 * n,
            cache_write_tokens: 2 * n,
            cost_usd: 0.5,
            estimated: false,
        };
        for entry in [
            line("s1", Some(a1), 1),
            line("s1", Some(a1), 2),
            line("s2", Some(a2), 4),
            line("s2", Some(b1), 8),
            line("s2", None, 16),
            line("t1", Some(t1), 32),
        ] {
            j.record_cost(&entry).unwrap();
        }
        // n uncached, 10 n read, 2 n written: 13 n of input in all.
        let m = |n: u64, calls: u64| Meter::of_call(n, 10 * n, 2 * n, calls, 0.5 * calls as f64);
        assert_eq!(j.usage(UsageOf::Step(a1)).unwrap(), m(3, 2));
        assert_eq!(j.usage(UsageOf::Step(a1)).unwrap().input_tokens, 39);
        assert_eq!(j.usage(UsageOf::Key("1-1-a")).unwrap(), m(7, 3));
        assert_eq!(j.usage(UsageOf::Run("s2")).unwrap(), m(28, 3));
        assert_eq!(j.usage(UsageOf::RunKind("sprint")).unwrap(), m(31, 5));
        assert_eq!(j.usage(UsageOf::All).unwrap(), m(63, 6));
        assert_eq!(j.usage(UsageOf::Run("none")).unwrap(), Meter::default());
        let sprint = j.usage_by_key(Some("sprint")).unwrap();
        assert_eq!(
            sprint.into_iter().collect::<Vec<_>>(),
            [("1-1-a".to_owned(), m(7, 3)), ("1-2-b".to_owned(), m(8, 1))]
        );
        assert_eq!(j.usage_by_key(None).unwrap().len(), 3);
        let steps = j.usage_by_step("1-1-a").unwrap();
        assert_eq!(
            steps.into_iter().collect::<Vec<_>>(),
            [(a1, m(3, 2)), (a2, m(4, 1))]
        );
    }
}
