//! Benchmarks of the sprint file and of one durable transition.
//!
//! Every benchmark runs on a generated sprint in BMad v6 layout (the v6.0.4 comment header,
//! metadata keys, `development_status` with epic, stories, retrospective and a blank line per
//! epic), sized by its argument: 10,000 stories (100 epics × 100 stories, ≈ 0.45 MB) and, to
//! see how a cost grows with the sprint, 1,000 (32 epics of up to 31) and 100 (10 × 10).
//!
//! - `load_validate`: `SprintDoc::parse` of the text already in memory (YAML parse, line scan,
//!   cross-check, model; from 32 KiB the YAML parse runs on a second thread beside the scan, so
//!   on a busy machine this measures less of a gain than on an idle one) plus
//!   `baton_core::validate::validate`.
//! - `load_file_validate`: the same through `SprintDoc::load` from a file (page cache, no disk
//!   read).
//! - `apply_one`: one status change in memory, `SprintDoc::apply` on a clone of the loaded
//!   document (the clone is made outside the measurement). Its work does not depend on the
//!   number of entries; what still grows with the file is the copy of the text (and, in a
//!   clone, the allocation of a buffer that a long-lived document reuses from its last edit).
//! - `durable_step`: one `Ledger::transition` on a file in a temporary directory with a real
//!   on-disk `SqliteJournal`, alternating one story between `in-progress` and `review` (developer,
//!   then reviewer) so that every iteration is a real transition, at 200, 1,000 and 5,000
//!   stories: the sizes a parallel run meets. The ledger keeps story files in a stories folder
//!   beside the sprint file holding one file per story, except the moving story's (it has none
//!   yet, so the step looks for it). This is the whole protocol: lock, refresh, reconcile, plan,
//!   edit, journal commit with `synchronous=FULL` (fsync), atomic replace of the sprint file
//!   (fsync + rename), mark applied, story-file lookup. It mostly measures the two fsyncs of the
//!   machine's disk. (`strace -f -e trace=fsync,fdatasync,unlink,renameat2` shows one `fsync`
//!   of the journal's WAL, one `fdatasync` of the new sprint file and one `renameat2` per step on
//!   the benchmark's thread, and the `unlink` of the replaced sprint file on the ledger's reaper
//!   thread, off the step's path.)
//! - `durable_step_tmpfs`: the same in `/dev/shm` (tmpfs, where fsync returns at once), which
//!   leaves the CPU part of the step: baton's own work is the same at every size (about 9,000
//!   instructions for the edit, plus SQLite's commits), and what grows with the file is the copy
//!   of its bytes into the new file, which an atomic replace cannot avoid (`write_bytes_tmpfs`
//!   is that floor for 10,000 stories), and the walk of the stories folder for a story without
//!   a file.
//! - `four::*`: four stories of four epics moved at the same moment (a parallel run), on a
//!   1,000-story sprint: `singles_*` as four `Ledger::transition`s (eight fsyncs), `grouped_*` as
//!   one `Ledger::transition_all` (one journal commit and one file write: two fsyncs), on disk
//!   and on tmpfs.
//! - `parts::*`: pieces of the durable step on the 10,000-story file, to see where its CPU time
//!   goes: the sprint lock, the on-disk version check, the journal's pending query, the epic
//!   follow-up of the plan, the journal commit, and the atomic file replace, on disk and on
//!   tmpfs; plus `scan_only`, the line scanner's share of a load (the rest is the YAML parse).
//! - `run_events::*`: the engine's event log: `append_event` of one progress event on disk (a
//!   commit with `synchronous=NORMAL` in WAL mode: no fsync, so it does not measure the disk
//!   the way `durable_step` does) and on tmpfs, and `events_after_100`, a late subscriber's page
//!   of 100 events read from a log of 10,000.
//!
//! Run with `cargo bench -p baton-store --bench sprint`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use baton_core::actor::Actor;
use baton_core::epic;
use baton_core::key::KeyKind;
use baton_core::stamp::Stamp;
use baton_core::status::{Status, StatusValue};
use baton_core::validate;
use baton_store::atomic;
use baton_store::journal::{Journal, NewEvent, RunEvents, SqliteJournal};
use baton_store::ledger::{Ledger, LedgerOptions, Now, Request};
use baton_store::lock::FileLock;
use baton_store::sprint_file::{Change, EditOptions, SprintDoc, scan};
use divan::Bencher;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    divan::main();
}

/// Sprint sizes: number of stories (about √n epics of √n stories each).
const SIZES: [usize; 3] = [100, 1_000, 10_000];

const HEADER: &str = "\
# generated: 01-02-2026 10:00
# project: bench
# project_key: NOKEY
# tracking_system: file-system
# story_location: _bmad-output/implementation-artifacts

# STATUS DEFINITIONS:
# ==================
# Epic Status:
#   - backlog: Epic not yet started
#   - in-progress: Epic actively being worked on
#   - done: All stories in epic completed
#
# Story Status:
#   - backlog: Story only exists in epic file
#   - ready-for-dev: Story file created in stories folder
#   - in-progress: Developer actively working on implementation
#   - review: Ready for code review (via Dev's code-review workflow)
#   - done: Story completed
#
# Retrospective Status:
#   - optional: Can be completed but not required
#   - done: Retrospective has been completed
#
# WORKFLOW NOTES:
# ===============
# - Epic transitions to 'in-progress' automatically when first story is created
# - Stories can be worked in parallel if team capacity allows
# - SM typically creates next story after previous one is 'done' to keep queue flowing
# - Dev moves story to 'review', then runs code-review (fresh context, different LLM recommended)

generated: 01-02-2026 10:00
last_updated: 01-03-2026 11:00
project: bench
project_key: NOKEY
tracking_system: file-system
story_location: _bmad-output/implementation-artifacts

development_status:
";

/// A sprint of `stories` stories (epics of `⌊√stories⌋` stories each, the last one possibly
/// shorter).
fn sprint_text(stories: usize) -> String {
    let per = stories.isqrt();
    let epics = stories.div_ceil(per);
    let mut out = String::with_capacity(stories * 40 + HEADER.len());
    out.push_str(HEADER);
    let cycle = ["done", "review", "in-progress", "ready-for-dev", "backlog"];
    for e in 1..=epics {
        if e > 1 {
            out.push('\n');
        }
        writeln!(out, "  epic-{e}: in-progress").unwrap();
        for s in 1..=per.min(stories - (e - 1) * per) {
            let status = cycle[(e + s) % cycle.len()];
            writeln!(out, "  {e}-{s}-story-number-{s}-of-epic-{e}: {status}").unwrap();
        }
        writeln!(out, "  epic-{e}-retrospective: optional").unwrap();
    }
    out
}

/// The story the edits and transitions move: in the middle of the file, `in-progress`.
fn moving_key(stories: usize) -> String {
    let per = stories.isqrt();
    let e = stories.div_ceil(per).div_ceil(2);
    // (e + s) % 5 == 2 makes it `in-progress` in `sprint_text`.
    let s = (0..5)
        .map(|d| per / 2 + d)
        .find(|s| (e + s) % 5 == 2)
        .unwrap();
    format!("{e}-{s}-story-number-{s}-of-epic-{e}")
}

fn stamp() -> Stamp {
    Stamp::new(2026, 11, 22, 9, 30).unwrap()
}

fn now() -> Now {
    Now {
        stamp: stamp(),
        rfc3339: "2026-11-22T09:30:00Z".into(),
    }
}

fn errors(doc: &SprintDoc) -> usize {
    validate::validate(doc.sprint(), &validate::Options::default())
        .iter()
        .filter(|p| p.severity == validate::Severity::Error)
        .count()
}

#[divan::bench(args = SIZES)]
fn load_validate(bencher: Bencher, stories: usize) {
    let text = sprint_text(stories);
    assert_eq!(
        errors(&SprintDoc::parse(Path::new("s.yaml"), text.clone()).unwrap()),
        0
    );
    bencher
        .with_inputs(|| text.clone())
        .bench_local_values(|text| {
            let doc = SprintDoc::parse(Path::new("sprint-status.yaml"), text).unwrap();
            validate::validate(doc.sprint(), &validate::Options::default())
        });
}

#[divan::bench(args = SIZES)]
fn load_file_validate(bencher: Bencher, stories: usize) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sprint-status.yaml");
    std::fs::write(&path, sprint_text(stories)).unwrap();
    bencher.bench_local(|| {
        let doc = SprintDoc::load(&path).unwrap();
        validate::validate(doc.sprint(), &validate::Options::default())
    });
}

#[divan::bench(args = SIZES)]
fn apply_one(bencher: Bencher, stories: usize) {
    let doc = SprintDoc::parse(Path::new("sprint-status.yaml"), sprint_text(stories)).unwrap();
    let change = [Change {
        key: moving_key(stories),
        to: Status::Review,
        reason: None,
        note: None,
    }];
    bencher.with_inputs(|| doc.clone()).bench_local_refs(|doc| {
        doc.apply(&change, stamp(), EditOptions::default()).unwrap();
    });
}

/// Sizes of the durable step: the sprint sizes a parallel run meets (each with a stories folder
/// of as many files).
const STEP_SIZES: [usize; 3] = [200, 1_000, 5_000];

/// A sprint file and its journal in `dir`, opened as a ledger that keeps story files in
/// `dir/stories`, which holds one file per story of the sprint except the stories
/// [`moving_keys`] names: those have no file yet, so every step of theirs looks for it.
fn ledger_in(dir: &Path, stories: usize) -> (Ledger<SqliteJournal>, PathBuf) {
    let path = dir.join("sprint-status.yaml");
    let text = sprint_text(stories);
    std::fs::write(&path, &text).unwrap();
    let sdir = dir.join("stories");
    std::fs::create_dir_all(&sdir).unwrap();
    let moving = moving_keys(stories);
    let doc = SprintDoc::parse(&path, text).unwrap();
    for e in &doc.sprint().entries {
        let key = e.key.as_str();
        if matches!(e.key.kind(), KeyKind::Story { .. }) && !moving.iter().any(|m| m == key) {
            let body = format!("# Story {key}\n\nStatus: {}\n", e.effective());
            std::fs::write(sdir.join(format!("{key}.md")), body).unwrap();
        }
    }
    let journal = SqliteJournal::open(&dir.join(".baton/baton.db")).unwrap();
    let opts = LedgerOptions {
        lock_path: dir.join(".baton/sprint.lock"),
        stories_dir: Some(sdir),
        write_extended: false,
        auto_epic_done: false,
    };
    (Ledger::open(&path, journal, opts).unwrap(), path)
}

/// Four `in-progress` stories of four different epics (the first is [`moving_key`]): the
/// stories a parallel run moves together.
fn moving_keys(stories: usize) -> Vec<String> {
    let per = stories.isqrt();
    let epics = stories.div_ceil(per);
    let first = moving_key(stories);
    let mut out = vec![first];
    let mid = epics.div_ceil(2);
    for e in (1..=epics).filter(|&e| e != mid).take(3) {
        // (e + s) % 5 == 2 makes it `in-progress` in `sprint_text`.
        let s = (1..=per).find(|s| (e + s) % 5 == 2).unwrap();
        out.push(format!("{e}-{s}-story-number-{s}-of-epic-{e}"));
    }
    out
}

/// The developer's move of `key` to `review` and the reviewer's move back to `in-progress`.
fn forth_and_back(key: &str) -> (Request, Request) {
    let forth = Request {
        key: key.to_owned(),
        to: Status::Review,
        actor: Actor::Developer,
        reason: "implementation complete".into(),
        note: None,
        force: false,
        run_id: None,
    };
    let back = Request {
        to: Status::InProgress,
        actor: Actor::Reviewer,
        reason: "changes requested".into(),
        ..forth.clone()
    };
    (forth, back)
}

/// Alternates one story between `in-progress` and `review`, one durable transition a call.
fn alternate(bencher: Bencher, dir: &Path, stories: usize) {
    let (mut ledger, _path) = ledger_in(dir, stories);
    let (forth, back) = forth_and_back(&moving_key(stories));
    let now = now();
    let mut flip = false;
    bencher.bench_local(|| {
        flip = !flip;
        let req = if flip { &forth } else { &back };
        let applied = ledger.transition(req, &now).unwrap();
        assert_eq!(applied.len(), 1);
    });
}

#[divan::bench(args = STEP_SIZES, sample_count = 30, sample_size = 1)]
fn durable_step(bencher: Bencher, stories: usize) {
    let dir = tempfile::tempdir().unwrap();
    alternate(bencher, dir.path(), stories);
}

/// A temporary directory on tmpfs when there is one (fsync is then free), else the default.
fn tmpfs_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    }
}

#[divan::bench(args = STEP_SIZES, sample_count = 100)]
fn durable_step_tmpfs(bencher: Bencher, stories: usize) {
    let dir = tmpfs_dir();
    alternate(bencher, dir.path(), stories);
}

/// Four stories of a parallel run moved at the same moment: one durable step each, as four
/// `Ledger::transition`s.
mod four {
    use super::*;

    const STORIES: usize = 1_000;

    fn singles(bencher: Bencher, dir: &Path) {
        let (mut ledger, _path) = ledger_in(dir, STORIES);
        let pairs: Vec<(Request, Request)> = moving_keys(STORIES)
            .iter()
            .map(|k| forth_and_back(k))
            .collect();
        let now = now();
        let mut flip = false;
        bencher.bench_local(|| {
            flip = !flip;
            for (forth, back) in &pairs {
                let req = if flip { forth } else { back };
                assert_eq!(ledger.transition(req, &now).unwrap().len(), 1);
            }
        });
    }

    /// On disk: eight fsyncs.
    #[divan::bench(sample_count = 30, sample_size = 1)]
    fn singles_disk(bencher: Bencher) {
        let dir = tempfile::tempdir().unwrap();
        singles(bencher, dir.path());
    }

    /// On tmpfs: the CPU part.
    #[divan::bench(sample_count = 100)]
    fn singles_tmpfs(bencher: Bencher) {
        let dir = tmpfs_dir();
        singles(bencher, dir.path());
    }

    fn grouped(bencher: Bencher, dir: &Path) {
        let (mut ledger, _path) = ledger_in(dir, STORIES);
        let (forth, back): (Vec<Request>, Vec<Request>) = moving_keys(STORIES)
            .iter()
            .map(|k| forth_and_back(k))
            .unzip();
        let now = now();
        let mut flip = false;
        bencher.bench_local(|| {
            flip = !flip;
            let reqs = if flip { &forth } else { &back };
            for r in ledger.transition_all(reqs, &now).unwrap() {
                assert_eq!(r.unwrap().len(), 1);
            }
        });
    }

    /// The same four as one `Ledger::transition_all`, on disk: two fsyncs.
    #[divan::bench(sample_count = 30, sample_size = 1)]
    fn grouped_disk(bencher: Bencher) {
        let dir = tempfile::tempdir().unwrap();
        grouped(bencher, dir.path());
    }

    /// On tmpfs.
    #[divan::bench(sample_count = 100)]
    fn grouped_tmpfs(bencher: Bencher) {
        let dir = tmpfs_dir();
        grouped(bencher, dir.path());
    }
}

/// Pieces of the durable step on the 10,000-story file.
mod parts {
    use super::*;

    const STORIES: usize = 10_000;

    fn event(key: &str) -> NewEvent {
        NewEvent {
            at: "2026-11-22T09:30:00Z".into(),
            actor: "developer".into(),
            key: key.into(),
            from: Some("in-progress".into()),
            to: "review".into(),
            reason: "implementation complete".into(),
            forced: false,
            run_id: None,
        }
    }

    /// The line scanner alone, the part of `load_validate` that is not the YAML parse (nor the
    /// model and validation).
    #[divan::bench]
    fn scan_only(bencher: Bencher) {
        let text = sprint_text(STORIES);
        bencher.bench_local(|| scan::scan(&text).unwrap());
    }

    /// Taking and releasing the sprint lock.
    #[divan::bench]
    fn lock(bencher: Bencher) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".baton/sprint.lock");
        bencher.bench_local(|| FileLock::acquire(&path).unwrap());
    }

    /// The compare-and-swap check: has the file changed on disk?
    #[divan::bench]
    fn changed_on_disk(bencher: Bencher) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sprint-status.yaml");
        std::fs::write(&path, sprint_text(STORIES)).unwrap();
        let doc = SprintDoc::load(&path).unwrap();
        bencher.bench_local(|| assert!(!doc.changed_on_disk()));
    }

    /// The reconciliation query run at the start of every step.
    #[divan::bench]
    fn journal_pending(bencher: Bencher) {
        let dir = tmpfs_dir();
        let mut journal = SqliteJournal::open(&dir.path().join("baton.db")).unwrap();
        for _ in 0..1000 {
            let ids = journal.record_pending(&[event("1-1-a")]).unwrap();
            journal.mark_applied(&ids).unwrap();
        }
        bencher.bench_local(|| journal.pending().unwrap());
    }

    /// `record_pending` (durable commit) + `mark_applied`, on disk.
    #[divan::bench(sample_count = 30, sample_size = 1)]
    fn journal_commit(bencher: Bencher) {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = SqliteJournal::open(&dir.path().join("baton.db")).unwrap();
        let events = [event("1-1-a")];
        bencher.bench_local(|| {
            let ids = journal.record_pending(&events).unwrap();
            journal.mark_applied(&ids).unwrap();
        });
    }

    /// The same on tmpfs: SQLite's CPU part.
    #[divan::bench(sample_count = 100)]
    fn journal_commit_tmpfs(bencher: Bencher) {
        let dir = tmpfs_dir();
        let mut journal = SqliteJournal::open(&dir.path().join("baton.db")).unwrap();
        let events = [event("1-1-a")];
        bencher.bench_local(|| {
            let ids = journal.record_pending(&events).unwrap();
            journal.mark_applied(&ids).unwrap();
        });
    }

    /// What `Ledger::plan` does besides the table lookup: the effective status of every story
    /// of the epic (`SprintDoc::stories_of`, indexed once per document) and `epic::follow`.
    #[divan::bench]
    fn plan_epic_follow(bencher: Bencher) {
        let doc = SprintDoc::parse(Path::new("sprint-status.yaml"), sprint_text(STORIES)).unwrap();
        let key = moving_key(STORIES);
        bencher.bench_local(|| {
            let sprint = doc.sprint();
            let entry = sprint.get(&key).unwrap();
            let KeyKind::Story { epic: n, .. } = entry.key.kind() else {
                unreachable!()
            };
            let epic = sprint.get(&format!("epic-{n}")).unwrap();
            let stories: Vec<StatusValue> = doc.stories_of(n).map(|s| s.effective()).collect();
            epic::follow(&epic.value, &stories, false, false)
        });
    }

    /// Writing the file's bytes over an existing file on tmpfs, without temp file or rename:
    /// the floor under `replace_file_tmpfs`.
    #[divan::bench]
    fn write_bytes_tmpfs(bencher: Bencher) {
        let dir = tmpfs_dir();
        let path = dir.path().join("sprint-status.yaml");
        let text = sprint_text(STORIES);
        bencher.bench_local(|| std::fs::write(&path, text.as_bytes()).unwrap());
    }

    /// Atomic replace of the 10,000-story file (temp file, fsync, rename), on disk.
    #[divan::bench(sample_count = 30, sample_size = 1)]
    fn replace_file(bencher: Bencher) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sprint-status.yaml");
        let text = sprint_text(STORIES);
        std::fs::write(&path, &text).unwrap();
        bencher.bench_local(|| atomic::replace(&path, text.as_bytes()).unwrap());
    }

    /// The same on tmpfs: copy and syscalls only.
    #[divan::bench(sample_count = 100)]
    fn replace_file_tmpfs(bencher: Bencher) {
        let dir = tmpfs_dir();
        let path = dir.path().join("sprint-status.yaml");
        let text = sprint_text(STORIES);
        std::fs::write(&path, &text).unwrap();
        bencher.bench_local(|| atomic::replace(&path, text.as_bytes()).unwrap());
    }
}

/// The engine's run event log.
mod run_events {
    use super::*;

    const SCOPE: &str = r#"{"unit":{"story":"3-7-checkout-flow"},"agent":"developer"}"#;
    const BODY: &str = r#"{"agent-progress":{"turn":12,"tool":"edit_file","path":"src/checkout/cart.rs","text":"Applying the discount before tax, as the story's second acceptance criterion asks."}}"#;

    fn append(journal: &mut SqliteJournal) -> i64 {
        journal
            .append_event("019a-run", "2026-11-22T09:30:00Z", SCOPE, BODY)
            .unwrap()
    }

    /// One event appended, on disk.
    #[divan::bench]
    fn append_event(bencher: Bencher) {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = SqliteJournal::open(&dir.path().join("baton.db")).unwrap();
        bencher.bench_local(|| append(&mut journal));
    }

    /// The same on tmpfs: SQLite's CPU part.
    #[divan::bench]
    fn append_event_tmpfs(bencher: Bencher) {
        let dir = tmpfs_dir();
        let mut journal = SqliteJournal::open(&dir.path().join("baton.db")).unwrap();
        bencher.bench_local(|| append(&mut journal));
    }

    /// A page of 100 events from the middle of a log of 10,000, on disk (page cache).
    #[divan::bench]
    fn events_after_100(bencher: Bencher) {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = SqliteJournal::open(&dir.path().join("baton.db")).unwrap();
        for _ in 0..10_000 {
            append(&mut journal);
        }
        bencher.bench_local(|| journal.events_after(5_000, 100).unwrap());
    }
}
