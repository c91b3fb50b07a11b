//! Process groups: the children baton starts on a project's code run in a group of their own, so
//! a terminal's Ctrl-C reaches baton (which decides what it means) and a timeout or cancellation
//! kills the whole tree a command spawned, not just its first process.
//!
//! Long-lived workers (the coding-agent CLIs) must also not outlive baton when it is killed
//! outright (SIGKILL, a crash), since they go on editing the workspace. Two layers, neither
//! needing `unsafe`:
//!
//! - **A parent-death signal.** The worker is started through util-linux's
//!   `setpriv --pdeathsig KILL` ([`parent_death_wrapper`]), which sets the signal and then
//!   execs the program, so the CLI itself is killed the moment baton dies. (`setpriv` is in
//!   util-linux, which Debian and most distributions install everywhere; where it is missing or
//!   lacks the option, the worker starts without it and the second layer alone applies.) This
//!   was preferred over a supervising re-exec of baton: it adds no process that could itself be
//!   killed, works for every program embedding the library (tests, other front ends), not only
//!   the `baton` binary, and costs one exec. Its limits: the signal follows the death of the
//!   *thread* that spawned the worker (baton spawns from its runtime's threads, which live as
//!   long as the process), it reaches the CLI but not what the CLI started (still in its
//!   group), and baton killed in the instant between the spawn and `setpriv`'s `prctl` leaves
//!   the CLI unsignalled.
//! - **A record of each live group** ([`GroupRecord`]): a small file under the project's
//!   `.baton/` state with the group id, its leader's start time and baton's own pid and start
//!   time (against pid reuse), removed when the worker ends. A run's preflight ends every
//!   recorded group whose baton is gone ([`end_orphaned_groups`]: SIGTERM, then SIGKILL), so
//!   whatever the CLI left in its group never works alongside a resumed run.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

/// Kills the process group a child leads (Unix) when armed: on timeout, on cancellation, and when
/// dropped before the child was reaped. Disarm it once the child has exited and its output is
/// drained, so an unrelated group that reused the id is never signalled.
#[derive(Debug)]
pub struct GroupKiller {
    pgid: Option<u32>,
    armed: bool,
}

impl GroupKiller {
    /// A killer for the group led by `pgid` (a child spawned with `process_group(0)`).
    pub fn new(pgid: Option<u32>) -> GroupKiller {
        GroupKiller {
            pgid,
            armed: cfg!(unix),
        }
    }

    /// Stops watching: the group is gone.
    pub fn disarm(&mut self) {
        self.armed = false;
    }

    /// Sends SIGTERM to the whole group, asking it to stop; stays armed so a SIGKILL can follow
    /// after a grace period.
    pub fn terminate(&self) {
        if self.armed {
            self.signal("TERM");
        }
    }

    #[cfg_attr(not(unix), allow(unused_variables))]
    fn signal(&self, name: &str) {
        #[cfg(unix)]
        if let Some(pgid) = self.pgid {
            signal_group(pgid, name);
        }
    }

    /// Sends SIGKILL to the whole group, once.
    pub fn kill(&mut self) {
        if !self.armed {
            return;
        }
        self.signal("KILL");
        self.armed = false;
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `setpriv` when it is installed and takes `--pdeathsig` (checked once per process): start a
/// worker as `setpriv --pdeathsig KILL -- PROGRAM ARGS…` and it dies with baton.
pub fn parent_death_wrapper() -> Option<&'static Path> {
    static WRAPPER: OnceLock<Option<PathBuf>> = OnceLock::new();
    WRAPPER
        .get_or_init(|| {
            if !cfg!(target_os = "linux") {
                return None;
            }
            let path = std::env::var_os("PATH")?;
            let setpriv = std::env::split_paths(&path)
                .chain([PathBuf::from("/usr/bin"), PathBuf::from("/bin")])
                .map(|d| d.join("setpriv"))
                .find(|p| p.is_file())?;
            let works = std::process::Command::new(&setpriv)
                .args(["--pdeathsig", "KILL", "--", "true"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            works.then_some(setpriv)
        })
        .as_deref()
}

/// What `/proc/<pid>/stat` says about a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    /// Its process group.
    pgrp: u32,
    /// Its session.
    session: u32,
    /// When it started, in clock ticks after boot.
    start: u64,
    /// Exited, not yet reaped.
    zombie: bool,
}

impl Stat {
    /// Parses a `stat` line (the command name, in parentheses, may hold anything).
    fn parse(text: &str) -> Option<Stat> {
        let fields: Vec<&str> = text.rsplit_once(')')?.1.split_whitespace().collect();
        // After the name: state, ppid, pgrp, session, … starttime (the 20th).
        Some(Stat {
            zombie: *fields.first()? == "Z",
            pgrp: fields.get(2)?.parse().ok()?,
            session: fields.get(3)?.parse().ok()?,
            start: fields.get(19)?.parse().ok()?,
        })
    }

    fn of(pid: u32) -> Option<Stat> {
        Stat::parse(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
    }
}

/// What a record holds: the group, its leader's start time and session, the baton process
/// that started it, and the boot it was written in.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Recorded {
    pgid: u32,
    start: u64,
    session: u32,
    owner: u32,
    owner_start: u64,
    /// The kernel's random id of the boot (`/proc/sys/kernel/random/boot_id`). A record from
    /// another boot, or one a cloned repository brought in `.baton/`, cannot name it, so it never
    /// leads to a signal.
    boot: String,
}

/// This boot's id, `None` where the kernel does not say.
fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let id = id.trim();
    (!id.is_empty()).then(|| id.to_owned())
}

impl Recorded {
    fn line(&self) -> String {
        format!(
            "{} {} {} {} {} {}\n",
            self.pgid, self.start, self.session, self.owner, self.owner_start, self.boot
        )
    }

    fn parse(text: &str) -> Option<Recorded> {
        let mut words = text.split_whitespace();
        let mut next = || words.next()?.parse::<u64>().ok();
        let pgid = u32::try_from(next()?).ok()?;
        let start = next()?;
        let session = u32::try_from(next()?).ok()?;
        let owner = u32::try_from(next()?).ok()?;
        let owner_start = next()?;
        let boot = words.next()?.to_owned();
        Some(Recorded {
            pgid,
            start,
            session,
            owner,
            owner_start,
            boot,
        })
    }
}

/// The record of one live worker's process group (a file `<dir>/<pgid>`), removed when dropped
/// (and `dir` with it when it was the last).
/// Recording is best effort: a record that cannot be written leaves only the parent-death
/// signal to end the worker with baton.
#[derive(Debug)]
pub struct GroupRecord {
    path: Option<PathBuf>,
}

impl GroupRecord {
    /// Records the group led by `pgid` (a child spawned with `process_group(0)`) in `dir`.
    pub fn create(dir: &Path, pgid: Option<u32>) -> GroupRecord {
        let record = || -> Option<PathBuf> {
            let pgid = pgid?;
            let leader = Stat::of(pgid)?;
            let owner = std::process::id();
            let rec = Recorded {
                pgid,
                start: leader.start,
                session: leader.session,
                owner,
                owner_start: Stat::of(owner)?.start,
                boot: boot_id()?,
            };
            let path = dir.join(pgid.to_string());
            // Twice: another worker's record, dropped in between, may take the empty directory.
            for _ in 0..2 {
                std::fs::create_dir_all(dir).ok()?;
                if std::fs::write(&path, rec.line()).is_ok() {
                    return Some(path);
                }
            }
            None
        };
        GroupRecord { path: record() }
    }
}

impl Drop for GroupRecord {
    fn drop(&mut self) {
        if let Some(path) = self.path.take() {
            let _ = std::fs::remove_file(&path);
            // The directory goes with its last record (it fails while others remain).
            if let Some(dir) = path.parent() {
                let _ = std::fs::remove_dir(dir);
            }
        }
    }
}

/// The live members of the recorded group (empty when it is gone, or when its id now belongs
/// to another process: pid reuse).
fn members(rec: &Recorded) -> Vec<u32> {
    // While any process is in the group, its id cannot be given to a new process; so a live
    // process with that id that started at another time means the group has emptied.
    if let Some(leader) = Stat::of(rec.pgid)
        && leader.start != rec.start
    {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            Stat::of(*pid).is_some_and(|s| {
                s.pgrp == rec.pgid && s.session == rec.session && s.start >= rec.start && !s.zombie
            })
        })
        .collect()
}

/// Whether the baton process that recorded `rec` still runs (then its worker is its own).
fn owner_alive(rec: &Recorded) -> bool {
    Stat::of(rec.owner).is_some_and(|s| s.start == rec.owner_start && !s.zombie)
}

/// Sends signal `name` to process group `pgid`. No libc here (and no unsafe): `kill(1)` signals
/// the whole group, and returns at once.
fn signal_group(pgid: u32, name: &str) {
    let _ = std::process::Command::new("kill")
        .args(["-s", name, "--", &format!("-{pgid}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Ends every worker group recorded in `dir` whose baton process is gone: SIGTERM to the group,
/// SIGKILL to what is left after `grace`; then clears those records (and records of groups
/// already gone). Groups of a baton that still runs are left alone. Returns the ended groups.
pub async fn end_orphaned_groups(dir: &Path, grace: Duration) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut ended = Vec::new();
    let mut pending = Vec::new();
    let boot = boot_id();
    for e in entries.flatten() {
        let path = e.path();
        let Some(rec) = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| Recorded::parse(&t))
            .filter(|rec| boot.as_deref() == Some(rec.boot.as_str()))
        else {
            // Unreadable, or not of this boot: it names nothing baton may signal.
            let _ = std::fs::remove_file(&path);
            continue;
        };
        if owner_alive(&rec) {
            continue;
        }
        if !members(&rec).is_empty() {
            signal_group(rec.pgid, "TERM");
            ended.push(rec.pgid);
            pending.push(rec);
        }
        let _ = std::fs::remove_file(&path);
    }
    let step = Duration::from_millis(50);
    let mut waited = Duration::ZERO;
    while !pending.is_empty() {
        pending.retain(|rec| !members(rec).is_empty());
        if pending.is_empty() {
            break;
        }
        if waited >= grace {
            for rec in &pending {
                signal_group(rec.pgid, "KILL");
            }
            break;
        }
        tokio::time::sleep(step).await;
        waited += step;
    }
    let _ = std::fs::remove_dir(dir);
    ended
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_give_group_session_and_start_whatever_the_name() {
        let line =
            "4242 (node (x) y) S 1 4240 4100 0 -1 4194560 10 0 0 0 1 2 0 0 20 0 11 0 987654 1 2 3";
        let s = Stat::parse(line).unwrap();
        assert_eq!(
            s,
            Stat {
                pgrp: 4240,
                session: 4100,
                start: 987_654,
                zombie: false
            }
        );
        let z = "7 (sh) Z 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 55 0 0";
        assert!(Stat::parse(z).unwrap().zombie);
        assert_eq!(Stat::parse("garbage"), None);
    }

    #[test]
    fn records_read_back_what_was_written() {
        let rec = Recorded {
            pgid: 10,
            start: 20,
            session: 30,
            owner: 40,
            owner_start: 50,
            boot: "b-1".into(),
        };
        assert_eq!(Recorded::parse(&rec.line()), Some(rec));
        assert_eq!(Recorded::parse("1 2 3"), None);
        // A record without its boot (written before boots were recorded) names nothing.
        assert_eq!(Recorded::parse("10 20 30 40 50"), None);
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_group_whose_baton_is_gone_is_ended_and_a_live_batons_is_not() {
        use std::os::unix::process::{CommandExt, ExitStatusExt};
        let dir = tempfile::tempdir().unwrap();
        let spawn = || {
            std::process::Command::new("sh")
                .args(["-c", "sleep 300 & wait"])
                .process_group(0)
                .spawn()
                .unwrap()
        };
        let (mut mine, mut orphan) = (spawn(), spawn());
        // Both recorded by this process; the orphan's record then names a baton that is gone
        // (a pid that started at another time).
        let _live = GroupRecord::create(dir.path(), Some(mine.id()));
        let record = GroupRecord::create(dir.path(), Some(orphan.id()));
        let path = record.path.clone().unwrap();
        std::mem::forget(record);
        let mut rec = Recorded::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
        rec.owner_start += 1;
        std::fs::write(&path, rec.line()).unwrap();
        // The same record with another boot's id (a planted one, or one from before a reboot)
        // leads to no signal, and is cleared.
        let mut planted = rec.clone();
        planted.boot = "00000000-0000-0000-0000-000000000000".into();
        std::fs::write(&path, planted.line()).unwrap();
        assert!(
            end_orphaned_groups(dir.path(), Duration::from_secs(5))
                .await
                .is_empty()
        );
        assert!(
            orphan.try_wait().unwrap().is_none(),
            "a planted record ended a group"
        );
        assert!(!path.exists());
        std::fs::create_dir_all(dir.path()).unwrap();
        std::fs::write(&path, rec.line()).unwrap();
        let ended = end_orphaned_groups(dir.path(), Duration::from_secs(5)).await;
        assert_eq!(ended, [orphan.id()]);
        assert!(orphan.wait().unwrap().signal().is_some());
        assert!(!path.exists());
        assert!(
            mine.try_wait().unwrap().is_none(),
            "a live baton's worker was ended"
        );
        let _ = mine.kill();
        signal_group(mine.id(), "KILL");
        let _ = mine.wait();
    }
}
