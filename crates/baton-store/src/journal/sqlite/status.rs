//! Status events in SQLite: the `events` table, its *pending*/*applied*/*abandoned* states and
//! the filtered listing.

use super::SqliteJournal;
use crate::journal::{Event, EventFilter, EventState, JournalError, NewEvent, StatusEvents};
use rusqlite::types::Value;
use rusqlite::{Row, params};

/// Columns of `events`, in the order [`raw_event`] reads them.
const EVENT_COLUMNS: &str =
    "id, grp, at, actor, key, from_status, to_status, reason, forced, run_id, state";

impl SqliteJournal {
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

impl StatusEvents for SqliteJournal {
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
                    baton_core::secrets::redact(&event.reason),
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::sqlite::fixtures::{event, keys};
    use std::sync::{Arc, Barrier};

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
}
