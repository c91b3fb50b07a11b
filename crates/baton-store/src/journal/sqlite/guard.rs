//! The guards' state in SQLite (`guard_settings`, `guard_log`, `guard_allowances`; see
//! [`crate::journal::GuardState`]). The methods are inherent on [`SqliteJournal`], as the guards
//! and the binary call them today, and [`GuardState`] forwards to them.

use super::{SqliteJournal, sqlite_err};
use crate::journal::{Allowance, GuardRecord, GuardState, JournalError, NewGuardRecord};
use rusqlite::{OptionalExtension, params};

fn now() -> String {
    jiff::Timestamp::now().to_string()
}

impl SqliteJournal {
    /// A guard setting (`None` if never set).
    ///
    /// # Errors
    ///
    /// [`JournalError::Sqlite`] if it cannot be read.
    pub fn guard_setting(&self, name: &str) -> Result<Option<String>, JournalError> {
        self.conn
            .query_row(
                "SELECT value FROM guard_settings WHERE name = ?1",
                params![name],
                |r| r.get(0),
            )
            .optional()
            .map_err(self.err())
    }

    /// Sets a guard setting.
    ///
    /// # Errors
    ///
    /// [`JournalError::Sqlite`] if it cannot be written.
    pub fn set_guard_setting(&mut self, name: &str, value: &str) -> Result<(), JournalError> {
        let at = now();
        self.write_durable(|tx| {
            tx.execute(
                "INSERT INTO guard_settings (name, value, set_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT(name) DO UPDATE SET value = excluded.value, set_at = excluded.set_at",
                params![name, value, at],
            )?;
            Ok(())
        })
    }

    /// Appends a guard log entry; returns its id.
    ///
    /// # Errors
    ///
    /// [`JournalError::Sqlite`] if it cannot be written.
    pub fn record_guard(&mut self, r: &NewGuardRecord) -> Result<i64, JournalError> {
        let at = now();
        self.write(|tx| {
            tx.execute(
                "INSERT INTO guard_log (scope, at, guard, kind, tool, path, detail, exit_code)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    r.scope,
                    at,
                    r.guard,
                    r.kind,
                    r.tool,
                    r.path,
                    baton_core::secrets::redact(&r.detail),
                    r.exit_code
                ],
            )?;
            Ok(tx.last_insert_rowid())
        })
    }

    /// The id of the newest entry of `kind` in `scope` (for `path` if given).
    ///
    /// # Errors
    ///
    /// [`JournalError::Sqlite`] if it cannot be read.
    pub fn last_guard_record(
        &self,
        scope: &str,
        kind: &str,
        path: Option<&str>,
    ) -> Result<Option<i64>, JournalError> {
        let id: Option<i64> = match path {
            Some(p) => self.conn.query_row(
                "SELECT MAX(id) FROM guard_log WHERE scope = ?1 AND kind = ?2 AND path = ?3",
                params![scope, kind, p],
                |r| r.get(0),
            ),
            None => self.conn.query_row(
                "SELECT MAX(id) FROM guard_log WHERE scope = ?1 AND kind = ?2",
                params![scope, kind],
                |r| r.get(0),
            ),
        }
        .map_err(self.err())?;
        Ok(id)
    }

    /// Guard log entries, oldest first: all scopes, or one; the newest `limit` if given.
    ///
    /// # Errors
    ///
    /// [`JournalError::Sqlite`] if they cannot be read.
    pub fn guard_records(
        &self,
        scope: Option<&str>,
        limit: Option<usize>,
    ) -> Result<Vec<GuardRecord>, JournalError> {
        let limit = limit.map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX));
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, scope, at, guard, kind, tool, path, detail, exit_code FROM (
                   SELECT * FROM guard_log WHERE (?1 IS NULL OR scope = ?1)
                   ORDER BY id DESC LIMIT ?2) ORDER BY id",
            )
            .map_err(self.err())?;
        let rows = stmt
            .query_map(params![scope, limit], |r| {
                Ok(GuardRecord {
                    id: r.get(0)?,
                    scope: r.get(1)?,
                    at: r.get(2)?,
                    guard: r.get(3)?,
                    kind: r.get(4)?,
                    tool: r.get(5)?,
                    path: r.get(6)?,
                    detail: r.get(7)?,
                    exit_code: r.get(8)?,
                })
            })
            .map_err(self.err())?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.err())?;
        Ok(rows)
    }

    /// Grants a one-time allowance of `kind`; returns its id.
    ///
    /// # Errors
    ///
    /// [`JournalError::Sqlite`] if it cannot be written.
    pub fn grant_allowance(&mut self, kind: &str, reason: &str) -> Result<i64, JournalError> {
        let at = now();
        self.write_durable(|tx| {
            tx.execute(
                "INSERT INTO guard_allowances (kind, reason, granted_at) VALUES (?1, ?2, ?3)",
                params![kind, reason, at],
            )?;
            Ok(tx.last_insert_rowid())
        })
    }

    /// Uses the oldest unused allowance of `kind` granted within the last `max_age` (and not in
    /// the future), recording `by` (the call) as its user, in one transaction: two callers
    /// never use the same grant. `None` if there is none. Older grants are never used, so a
    /// journal shipped inside a cloned repository cannot carry allowances into your runs.
    ///
    /// # Errors
    ///
    /// [`JournalError::Sqlite`] if it cannot be written.
    pub fn consume_allowance(
        &mut self,
        kind: &str,
        by: &str,
        max_age: std::time::Duration,
    ) -> Result<Option<Allowance>, JournalError> {
        let now_ts = jiff::Timestamp::now();
        let at = now_ts.to_string();
        let fresh = |granted: &str| {
            granted
                .parse::<jiff::Timestamp>()
                .is_ok_and(|g| g <= now_ts && now_ts.duration_since(g).unsigned_abs() <= max_age)
        };
        self.write_durable(|tx| {
            let mut stmt = tx.prepare(
                "SELECT id, reason, granted_at FROM guard_allowances
                 WHERE kind = ?1 AND consumed_at IS NULL ORDER BY id",
            )?;
            let open = stmt
                .query_map(params![kind], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                    ))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            drop(stmt);
            let Some((id, reason, granted_at)) = open.into_iter().find(|(_, _, g)| fresh(g)) else {
                return Ok(None);
            };
            tx.execute(
                "UPDATE guard_allowances SET consumed_at = ?1, consumed_by = ?2 WHERE id = ?3",
                params![at, by, id],
            )?;
            Ok(Some(Allowance {
                id,
                kind: kind.to_owned(),
                reason,
                granted_at,
                consumed_at: Some(at.clone()),
                consumed_by: Some(by.to_owned()),
            }))
        })
    }

    /// Every allowance, oldest first.
    ///
    /// # Errors
    ///
    /// [`JournalError::Sqlite`] if they cannot be read.
    pub fn allowances(&self) -> Result<Vec<Allowance>, JournalError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, kind, reason, granted_at, consumed_at, consumed_by
                 FROM guard_allowances ORDER BY id",
            )
            .map_err(self.err())?;
        let rows = stmt
            .query_map([], |r| {
                Ok(Allowance {
                    id: r.get(0)?,
                    kind: r.get(1)?,
                    reason: r.get(2)?,
                    granted_at: r.get(3)?,
                    consumed_at: r.get(4)?,
                    consumed_by: r.get(5)?,
                })
            })
            .map_err(self.err())?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(|e| sqlite_err(self.path(), e))?;
        Ok(rows)
    }
}

impl GuardState for SqliteJournal {
    fn guard_setting(&self, name: &str) -> Result<Option<String>, JournalError> {
        SqliteJournal::guard_setting(self, name)
    }
    fn set_guard_setting(&mut self, name: &str, value: &str) -> Result<(), JournalError> {
        SqliteJournal::set_guard_setting(self, name, value)
    }
    fn record_guard(&mut self, record: &NewGuardRecord) -> Result<i64, JournalError> {
        SqliteJournal::record_guard(self, record)
    }
    fn last_guard_record(
        &self,
        scope: &str,
        kind: &str,
        path: Option<&str>,
    ) -> Result<Option<i64>, JournalError> {
        SqliteJournal::last_guard_record(self, scope, kind, path)
    }
    fn guard_records(
        &self,
        scope: Option<&str>,
        limit: Option<usize>,
    ) -> Result<Vec<GuardRecord>, JournalError> {
        SqliteJournal::guard_records(self, scope, limit)
    }
    fn grant_allowance(&mut self, kind: &str, reason: &str) -> Result<i64, JournalError> {
        SqliteJournal::grant_allowance(self, kind, reason)
    }
    fn consume_allowance(
        &mut self,
        kind: &str,
        by: &str,
        max_age: std::time::Duration,
    ) -> Result<Option<Allowance>, JournalError> {
        SqliteJournal::consume_allowance(self, kind, by, max_age)
    }
    fn allowances(&self) -> Result<Vec<Allowance>, JournalError> {
        SqliteJournal::allowances(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(scope: &str, kind: &str, path: &str) -> NewGuardRecord {
        NewGuardRecord {
            scope: scope.into(),
            guard: "tdd".into(),
            kind: kind.into(),
            path: path.into(),
            ..NewGuardRecord::default()
        }
    }

    #[test]
    fn settings_round_trip_and_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("baton.db");
        {
            let mut j = SqliteJournal::open(&path).unwrap();
            assert_eq!(j.guard_setting("tdd.mode").unwrap(), None);
            j.set_guard_setting("tdd.mode", "tdd").unwrap();
            j.set_guard_setting("tdd.mode", "atdd").unwrap();
            j.record_guard(&rec("native", "test-run", "")).unwrap();
        }
        let j = SqliteJournal::open(&path).unwrap();
        assert_eq!(
            j.guard_setting("tdd.mode").unwrap().as_deref(),
            Some("atdd")
        );
        assert!(
            j.last_guard_record("native", "test-run", None)
                .unwrap()
                .is_some()
        );
    }

    #[test]
    fn log_entries_are_scoped_and_ordered() {
        let mut j = SqliteJournal::open_in_memory().unwrap();
        let a = j
            .record_guard(&rec("native", "test-write", "tests/a.rs"))
            .unwrap();
        let b = j.record_guard(&rec("claude:s1", "test-run", "")).unwrap();
        assert!(b > a);
        assert_eq!(
            j.last_guard_record("native", "test-run", None).unwrap(),
            None
        );
        assert_eq!(
            j.last_guard_record("native", "test-write", Some("tests/a.rs"))
                .unwrap(),
            Some(a)
        );
        assert_eq!(
            j.last_guard_record("native", "test-write", Some("tests/b.rs"))
                .unwrap(),
            None
        );
        assert_eq!(j.guard_records(Some("claude:s1"), None).unwrap().len(), 1);
        let last = j.guard_records(None, Some(1)).unwrap();
        assert_eq!(last.len(), 1);
        assert_eq!(last[0].id, b);
    }

    const HOUR: std::time::Duration = std::time::Duration::from_secs(3600);

    #[test]
    fn old_or_future_grants_are_never_used() {
        let mut j = SqliteJournal::open_in_memory().unwrap();
        j.conn
            .execute_batch(
                "INSERT INTO guard_allowances (kind, reason, granted_at) VALUES
                 ('bash-write', 'shipped', '2020-01-01T00:00:00Z'),
                 ('bash-write', 'forged', '2999-01-01T00:00:00Z'),
                 ('bash-write', 'garbage', 'yesterday');",
            )
            .unwrap();
        assert_eq!(j.consume_allowance("bash-write", "x", HOUR).unwrap(), None);
        j.grant_allowance("bash-write", "mine").unwrap();
        let used = j
            .consume_allowance("bash-write", "x", HOUR)
            .unwrap()
            .unwrap();
        assert_eq!(used.reason, "mine");
    }

    #[test]
    fn an_allowance_is_used_exactly_once() {
        let mut j = SqliteJournal::open_in_memory().unwrap();
        assert_eq!(j.consume_allowance("bash-write", "x", HOUR).unwrap(), None);
        j.grant_allowance("bash-write", "regenerate the bindings")
            .unwrap();
        let used = j
            .consume_allowance("bash-write", "sed -i src/a.rs", HOUR)
            .unwrap()
            .unwrap();
        assert_eq!(used.reason, "regenerate the bindings");
        assert_eq!(
            j.consume_allowance("bash-write", "again", HOUR).unwrap(),
            None
        );
        let all = j.allowances().unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].consumed_by.as_deref(), Some("sed -i src/a.rs"));
    }
}
