//! Benchmarks of recall: what one agent step pays to be reminded of what the team learned.
//!
//! The store holds N memories (100, 1,000 and 10,000) in a file on disk: four in five scoped to
//! file globs spread over 500 directories (`src/m<i>/**`), the rest project-wide or scoped to
//! one of 20 epics, texts of a dozen words. Each iteration is what a step does: the candidates
//! whose scope fits a unit touching three files (`SqliteMemory::candidates`, with the full-text
//! match of the unit's words), the ranking and cut to a 300-token budget (`recall::select`), the
//! section of the task (`recall::render`) and the record of what was recalled
//! (`record_recall`, a commit with `synchronous=NORMAL`).
//!
//! - `recall`: that whole step, on disk.
//! - `candidates`: only the store's part.
//! - `remember`: storing one new memory into a store of N (curation lookup, insert, FTS index,
//!   the scope's count for the cap, log).
//!
//! Run with `cargo bench -p baton-store --bench memory`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use baton_core::memory::recall::{self, Query};
use baton_core::memory::{Draft, Kind, Scope, Source};
use baton_store::memory::{MemoryStore, RecallRecord, SqliteMemory};

fn main() {
    divan::main();
}

const SIZES: [usize; 3] = [100, 1_000, 10_000];

fn store(n: usize) -> (tempfile::TempDir, SqliteMemory) {
    let dir = tempfile::tempdir().unwrap();
    let mut m = SqliteMemory::open(&dir.path().join("memory.db"), 100_000, 0).unwrap();
    for i in 0..n {
        let kind = [Kind::ProblemSolution, Kind::Pattern, Kind::Decision][i % 3];
        let mut d = Draft::new(
            kind,
            Source::ReviewFinding,
            format!(
                "Lesson {i}: the handler in module {} must validate input {} before it touches the pool",
                i % 97,
                i % 13
            ),
        );
        d.scope = match i % 5 {
            0 => Scope {
                epic: Some((i % 20).to_string()),
                globs: vec![],
            },
            1 if i % 10 == 1 => Scope::project(),
            _ => Scope::files(vec![format!("src/m{}/**", i % 500)]),
        };
        m.remember(d, i64::try_from(i).unwrap()).unwrap();
    }
    (dir, m)
}

fn query() -> Query {
    Query {
        files: vec![
            "src/m7/handler.rs".into(),
            "src/m7/pool.rs".into(),
            "src/lib.rs".into(),
        ],
        epic: Some("3".into()),
        stage: "dev".into(),
        reviewer: false,
        budget_tokens: 300,
    }
}

#[divan::bench(args = SIZES, sample_count = 50)]
fn recall(bencher: divan::Bencher, n: usize) {
    let (_dir, mut m) = store(n);
    let q = query();
    bencher.bench_local(|| {
        let c = m
            .candidates(&q, "handler pool validate", 1_000_000)
            .unwrap();
        let chosen = recall::select(c, &q);
        let section = recall::render(&chosen, false);
        m.record_recall(&RecallRecord {
            run_id: "r".into(),
            unit: "3-1-x".into(),
            stage: "dev".into(),
            memories: chosen.iter().map(|c| c.memory.id).collect(),
            at: 1,
        })
        .unwrap();
        section
    });
}

#[divan::bench(args = SIZES, sample_count = 50)]
fn candidates(bencher: divan::Bencher, n: usize) {
    let (_dir, m) = store(n);
    let q = query();
    bencher.bench_local(|| {
        m.candidates(&q, "handler pool validate", 1_000_000)
            .unwrap()
    });
}

#[divan::bench(args = SIZES, sample_count = 50)]
fn remember(bencher: divan::Bencher, n: usize) {
    let (_dir, mut m) = store(n);
    let mut i = 0u64;
    bencher.bench_local(|| {
        i += 1;
        m.remember(
            Draft::new(
                Kind::Preference,
                Source::HumanFeedback,
                format!("new preference {i}"),
            ),
            1,
        )
        .unwrap()
    });
}
