//! The cost ledger in SQLite: the `cost_ledger` table and its sums.

use super::SqliteJournal;
use crate::journal::{CostEntry, CostLedger, JournalError};
use rusqlite::params;

/// A token count as SQLite's signed 64-bit integer (counts beyond `i64::MAX` are refused).
fn tokens(count: u64) -> rusqlite::Result<i64> {
    i64::try_from(count).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
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
}
