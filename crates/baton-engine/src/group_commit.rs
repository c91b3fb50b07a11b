//! Group commit of story transitions: moves of stories in flight at once that are ready at the
//! same moment share one journal commit and one sprint-file write.
//!
//! A story's move is queued, and the story lets the other stories in flight run up to their own
//! next wait ([`tokio::task::yield_now`]), or, with stories in parallel, waits a few
//! milliseconds for moves about to come; then whichever story gets there first hands every
//! queued move to [`baton_store::ledger::Ledger::transition_all`] in one call. Each move is still
//! checked against the transition table on its own, and a key moves at most once per commit, so
//! every transition is journaled exactly once and a kill at any instant recovers as for a single
//! move. A move whose story stops waiting (its timeout) before the batch is taken is withdrawn,
//! never made later behind its back. With one story in flight, a batch is one move.

use crate::error::EngineError;
use crate::sprint_tools::SharedLedger;
use baton_store::ledger::{Applied, Now, Request};
use std::sync::Mutex;
use tokio::sync::oneshot;

type Answer = Result<Vec<Applied>, EngineError>;

/// The moves waiting for the next commit.
#[derive(Default)]
pub struct Grouper {
    queue: Mutex<Vec<(u64, Request, oneshot::Sender<Answer>)>>,
    next_id: Mutex<u64>,
    window: std::time::Duration,
}

/// Withdraws a queued move whose caller stopped waiting before its batch was taken.
struct Withdraw<'a> {
    grouper: &'a Grouper,
    id: u64,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        if let Ok(mut q) = self.grouper.queue.lock() {
            q.retain(|(id, _, _)| *id != self.id);
        }
    }
}

impl Grouper {
    /// A grouper that waits up to `window` for other stories' moves before it commits (zero:
    /// only those already queued; a few milliseconds when stories run in parallel, whose moves
    /// after equally long model calls arrive within them).
    pub fn with_window(window: std::time::Duration) -> Grouper {
        Grouper {
            window,
            ..Grouper::default()
        }
    }

    /// Makes `req` durable, in one commit with the moves other stories queued meanwhile.
    pub async fn transition(
        &self,
        ledger: &SharedLedger,
        req: Request,
        now: impl Fn() -> Now,
    ) -> Answer {
        let (tx, rx) = oneshot::channel();
        let id = {
            let mut n = self.next_id.lock().map_err(|_| poisoned())?;
            *n += 1;
            *n
        };
        self.queue
            .lock()
            .map_err(|_| poisoned())?
            .push((id, req, tx));
        let withdraw = Withdraw { grouper: self, id };
        if self.window.is_zero() {
            tokio::task::yield_now().await;
        } else {
            tokio::time::sleep(self.window).await;
        }
        self.commit(ledger, &now());
        drop(withdraw);
        rx.await
            .unwrap_or_else(|_| Err(EngineError::NoLedger("a grouped move was dropped".into())))
    }

    /// Commits every queued move (nothing when another story already did).
    fn commit(&self, ledger: &SharedLedger, now: &Now) {
        let batch = match self.queue.lock() {
            Ok(mut q) => std::mem::take(&mut *q),
            Err(_) => return,
        };
        if batch.is_empty() {
            return;
        }
        let (reqs, answers): (Vec<Request>, Vec<oneshot::Sender<Answer>>) =
            batch.into_iter().map(|(_, r, tx)| (r, tx)).unzip();
        let results = match ledger.lock() {
            Ok(mut guard) => match guard.as_mut() {
                Ok(l) => l.transition_all(&reqs, now).map_err(|e| e.to_string()),
                Err(why) => Err(why.to_string()),
            },
            Err(_) => Err("the ledger lock is poisoned".to_owned()),
        };
        match results {
            Ok(results) => {
                for (tx, r) in answers.into_iter().zip(results) {
                    let _ = tx.send(r.map_err(EngineError::from));
                }
            }
            Err(why) => {
                for tx in answers {
                    let _ = tx.send(Err(EngineError::NoLedger(why.clone())));
                }
            }
        }
    }
}

fn poisoned() -> EngineError {
    EngineError::NoLedger("the transition queue's lock is poisoned".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sprint_tools::SharedLedger;
    use baton_core::actor::Actor;
    use baton_core::status::Status;
    use baton_store::journal::{BoxedStore, EventFilter, Journal, SqliteJournal};
    use baton_store::ledger::{Ledger, LedgerOptions};
    use std::future::Future;
    use std::sync::{Arc, Mutex};

    fn ledger(dir: &std::path::Path) -> SharedLedger {
        let sprint = dir.join("sprint-status.yaml");
        std::fs::write(
            &sprint,
            "development_status:\n  epic-1: in-progress\n  1-1-a: ready-for-dev\n  \
             1-2-b: ready-for-dev\n  1-3-c: ready-for-dev\n",
        )
        .unwrap();
        let journal: BoxedStore = Box::new(SqliteJournal::open(&dir.join("j.db")).unwrap());
        let opts = LedgerOptions {
            lock_path: dir.join("sprint.lock"),
            stories_dir: None,
            write_extended: false,
            auto_epic_done: true,
        };
        Arc::new(Mutex::new(
            Ok(Ledger::open(&sprint, journal, opts).unwrap()),
        ))
    }

    fn start(key: &str) -> Request {
        Request {
            key: key.to_owned(),
            to: Status::InProgress,
            actor: Actor::Developer,
            reason: "development starts".into(),
            note: None,
            force: false,
            run_id: None,
        }
    }

    fn groups(l: &SharedLedger) -> Vec<(String, i64)> {
        let guard = l.lock().unwrap();
        let l = guard.as_ref().unwrap();
        l.journal()
            .events(&EventFilter::default())
            .unwrap()
            .into_iter()
            .map(|e| (e.key, e.group))
            .collect()
    }

    #[tokio::test]
    async fn moves_ready_at_the_same_moment_share_one_commit() {
        let dir = tempfile::tempdir().unwrap();
        let l = ledger(dir.path());
        let g = Grouper::default();
        let (a, b) = tokio::join!(
            g.transition(&l, start("1-1-a"), Now::system),
            g.transition(&l, start("1-2-b"), Now::system)
        );
        assert_eq!(a.unwrap().len(), 1);
        assert_eq!(b.unwrap().len(), 1);
        // A move on its own is a commit of its own.
        g.transition(&l, start("1-3-c"), Now::system).await.unwrap();
        let got = groups(&l);
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(
            got[0].1, got[1].1,
            "the two moves at once were two commits: {got:?}"
        );
        assert_ne!(got[1].1, got[2].1, "{got:?}");
    }

    #[tokio::test]
    async fn a_move_whose_caller_stopped_waiting_is_withdrawn_not_made_later() {
        let dir = tempfile::tempdir().unwrap();
        let l = ledger(dir.path());
        let g = Grouper::default();
        {
            // Queued, then dropped before its batch was taken (a story's timeout).
            let mut fut = Box::pin(g.transition(&l, start("1-1-a"), Now::system));
            let waker = futures_util::task::noop_waker();
            let mut cx = std::task::Context::from_waker(&waker);
            assert!(fut.as_mut().poll(&mut cx).is_pending());
        }
        g.transition(&l, start("1-2-b"), Now::system).await.unwrap();
        let got = groups(&l);
        assert_eq!(
            got.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            ["1-2-b"]
        );
    }

    #[tokio::test]
    async fn a_refused_move_in_a_batch_leaves_the_others_made() {
        let dir = tempfile::tempdir().unwrap();
        let l = ledger(dir.path());
        let g = Grouper::default();
        let mut done = start("1-1-a");
        done.to = Status::Done; // ready-for-dev → done: not a legal move for a developer
        let (bad, good) = tokio::join!(
            g.transition(&l, done, Now::system),
            g.transition(&l, start("1-2-b"), Now::system)
        );
        assert!(bad.is_err());
        assert_eq!(good.unwrap().len(), 1);
    }
}
