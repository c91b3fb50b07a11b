//! The pipeline's shared locks on GitHub: implementation seats and per-issue locks, both git
//! references created through the git database API.
//!
//! Creating a reference is GitHub's compare-and-swap: of two callers creating
//! `refs/baton/seats/1`, exactly one succeeds and the other gets 422. So the cap on issues
//! implementing at once is a set of seats `refs/baton/seats/1..=N`, each pointing at a commit
//! object whose message names the issue holding it; two PM passes running at once can never
//! both take the last seat, which a count read and then written could. A pass also locks each
//! issue it works on (`refs/baton/locks/<N>`) for the time it works on it, so two passes never
//! act on one issue at once; a lock older than [`STALE_SECS`] belongs to a killed pass and is
//! taken over. Everything here is read back from GitHub, so a run on another machine (an
//! Actions runner) sees the same seats.

use baton_github::{Forge, ForgeError};
use std::collections::BTreeMap;

const SEATS: &str = "baton/seats/";
const LOCKS: &str = "baton/locks/";
/// A lock this old (seconds) was left by a pass that died.
pub const STALE_SECS: i64 = 600;

/// A refused compare-and-swap: the reference exists.
fn taken(e: &ForgeError) -> bool {
    matches!(
        e,
        ForgeError::Rejected {
            status: 422 | 409,
            ..
        }
    )
}

/// The issue a seat commit's message names (`baton seat for #12`).
fn holder(message: &str) -> Option<u64> {
    message
        .lines()
        .next()?
        .strip_prefix("baton seat for #")?
        .trim()
        .parse()
        .ok()
}

/// The seats as GitHub has them.
pub struct Seats {
    cap: u32,
    tree: String,
    /// Seat number → (issue, the commit the reference points at).
    held: BTreeMap<u32, (u64, String)>,
}

impl Seats {
    /// Reads the seats; `tree` is the tree seat and lock commits are written with (any tree
    /// of the repository: the base branch's).
    pub async fn load(forge: &dyn Forge, cap: u32, tree: String) -> Result<Seats, ForgeError> {
        let mut seats = Seats {
            cap,
            tree,
            held: BTreeMap::new(),
        };
        for r in forge.matching_refs(SEATS).await? {
            let Some(k) = r
                .name
                .rsplit('/')
                .next()
                .and_then(|k| k.parse::<u32>().ok())
            else {
                continue;
            };
            let commit = forge.get_commit(&r.object.sha).await?;
            if let Some(issue) = holder(&commit.message) {
                seats.held.insert(k, (issue, r.object.sha));
            }
        }
        Ok(seats)
    }

    /// Reads the seats again (after an issue's lock is taken, so what the decision uses is
    /// GitHub's now); a seat commit already known is not fetched again.
    pub async fn reload(&mut self, forge: &dyn Forge) -> Result<(), ForgeError> {
        let mut held = BTreeMap::new();
        for r in forge.matching_refs(SEATS).await? {
            let Some(k) = r
                .name
                .rsplit('/')
                .next()
                .and_then(|k| k.parse::<u32>().ok())
            else {
                continue;
            };
            let known = self
                .held
                .values()
                .find(|(_, sha)| *sha == r.object.sha)
                .map(|(i, _)| *i);
            let issue = match known {
                Some(i) => Some(i),
                None => holder(&forge.get_commit(&r.object.sha).await?.message),
            };
            if let Some(issue) = issue {
                held.insert(k, (issue, r.object.sha));
            }
        }
        self.held = held;
        Ok(())
    }

    /// The seat `issue` holds.
    pub fn of(&self, issue: u64) -> Option<u32> {
        self.held
            .iter()
            .find(|(_, (i, _))| *i == issue)
            .map(|(k, _)| *k)
    }

    /// Whether a seat may be free for `issue` (taking it is what decides).
    pub fn may_take(&self, issue: u64) -> bool {
        self.of(issue).is_some() || (self.held.len() as u64) < u64::from(self.cap)
    }

    /// Issues holding seats.
    pub fn holders(&self) -> Vec<u64> {
        self.held.values().map(|(i, _)| *i).collect()
    }

    /// Takes a seat for `issue` (or finds the one it holds); `None` when every seat is taken.
    pub async fn take(&mut self, forge: &dyn Forge, issue: u64) -> Result<Option<u32>, ForgeError> {
        if let Some(k) = self.of(issue) {
            return Ok(Some(k));
        }
        let mut commit: Option<String> = None;
        for k in 1..=self.cap {
            if self.held.contains_key(&k) {
                continue;
            }
            let sha = match &commit {
                Some(sha) => sha.clone(),
                None => {
                    let message = format!("baton seat for #{issue}");
                    let c = forge.create_commit(&message, &self.tree, &[]).await?;
                    commit = Some(c.sha.clone());
                    c.sha
                }
            };
            match forge.create_ref(&format!("refs/{SEATS}{k}"), &sha).await {
                Ok(_) => {
                    self.held.insert(k, (issue, sha));
                    return Ok(Some(k));
                }
                Err(e) if taken(&e) => {
                    // Another pass took it: learn for whom, and try the next.
                    if let Ok(r) = forge.get_ref(&format!("{SEATS}{k}")).await
                        && let Ok(c) = forge.get_commit(&r.object.sha).await
                        && let Some(other) = holder(&c.message)
                    {
                        self.held.insert(k, (other, r.object.sha));
                    } else {
                        self.held.insert(k, (0, String::new()));
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    /// Gives back the seat `issue` holds, if the reference still points at its commit.
    pub async fn release(
        &mut self,
        forge: &dyn Forge,
        issue: u64,
    ) -> Result<Option<u32>, ForgeError> {
        let Some(k) = self.of(issue) else {
            return Ok(None);
        };
        let name = format!("{SEATS}{k}");
        let ours = self.held.get(&k).map(|(_, sha)| sha.clone());
        match forge.get_ref(&name).await {
            Ok(r) if Some(&r.object.sha) == ours.as_ref() => match forge.delete_ref(&name).await {
                Ok(()) | Err(ForgeError::NotFound { .. }) => {}
                Err(e) if taken(&e) => {}
                Err(e) => return Err(e),
            },
            Ok(_) | Err(ForgeError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
        self.held.remove(&k);
        Ok(Some(k))
    }
}

/// A pass's lock on an issue.
pub struct Lock {
    name: String,
}

/// Locks `issue` for this pass; `None` when another live pass holds it. `now` is GitHub's time.
pub async fn lock(
    forge: &dyn Forge,
    tree: &str,
    issue: u64,
    run: &str,
    now: jiff::Timestamp,
) -> Result<Option<Lock>, ForgeError> {
    let name = format!("{LOCKS}{issue}");
    let message = format!("baton pm lock for #{issue} (run {run})");
    let commit = forge.create_commit(&message, tree, &[]).await?;
    for _ in 0..2 {
        match forge.create_ref(&format!("refs/{name}"), &commit.sha).await {
            Ok(_) => return Ok(Some(Lock { name })),
            Err(e) if taken(&e) => {
                let held = match forge.get_ref(&name).await {
                    Ok(r) => r,
                    Err(ForgeError::NotFound { .. }) => continue,
                    Err(e) => return Err(e),
                };
                let c = forge.get_commit(&held.object.sha).await?;
                if now.as_second() - c.author.date.as_second() < STALE_SECS {
                    return Ok(None);
                }
                // Left by a pass that died: take it over.
                match forge.delete_ref(&name).await {
                    Ok(()) | Err(ForgeError::NotFound { .. }) => {}
                    Err(e) if taken(&e) => {}
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// Lets go of a lock (a lock already gone is fine).
pub async fn unlock(forge: &dyn Forge, lock: Lock) -> Result<(), ForgeError> {
    match forge.delete_ref(&lock.name).await {
        Ok(()) | Err(ForgeError::NotFound { .. }) => Ok(()),
        Err(e) if taken(&e) => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seat_commit_names_its_holder() {
        assert_eq!(holder("baton seat for #12"), Some(12));
        assert_eq!(holder("baton seat for #x"), None);
        assert_eq!(holder("Initial commit"), None);
    }
}
