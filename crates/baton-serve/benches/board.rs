//! Benchmarks of the web board's two limits.
//!
//! - `board_page`: the server's work for `GET /` on a sprint of 100, 1,000 and 10,000 stories
//!   (10,000 = 100 epics × 100 stories): the sprint file loaded from disk (page cache), the
//!   journal read (a real SQLite file holding one run, its spend and 500 events), the view built
//!   and the HTML rendered. The goal is 200 ms for 10,000 stories. (The HTTP framing around it is
//!   not measured: it is the same for every page and does not grow with the board.)
//! - `board_json`: the same view as its JSON twin.
//! - `sse_fanout`: one event published to 1 and to 50 connected clients, each client's stream
//!   polled until it has the event, with allocations counted. Each event is turned into its SSE
//!   text once and shared: the bytes allocated per event do not grow with the number of
//!   clients, and the ring of fixed size means a slow client costs no memory (it is dropped).
//!
//! Run with `cargo bench -p baton-serve --bench board`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use baton_serve::feed::{self, Feed, Frame};
use baton_serve::render::{self, Renderer};
use baton_serve::{AnswerRefused, Answered, Host, InFlight, Journal, Project, StageCommit, views};
use baton_store::journal::{
    CostEntry, CostLedger, JournalError, RunEvents, RunLog, RunRecord, SqliteJournal, StoredEvent,
};
use futures_util::StreamExt;
use std::path::PathBuf;
use std::sync::Arc;

#[global_allocator]
static ALLOC: divan::AllocProfiler = divan::AllocProfiler::system();

fn main() {
    divan::main();
}

struct BenchHost {
    journal: Option<PathBuf>,
}

impl Host for BenchHost {
    fn journal(&self) -> Result<Option<Box<dyn Journal>>, JournalError> {
        match &self.journal {
            Some(p) => Ok(Some(Box::new(SqliteJournal::open(p)?))),
            None => Ok(None),
        }
    }
    fn in_flight(&self) -> Vec<InFlight> {
        Vec::new()
    }
    fn stage_commits(&self, _key: &str) -> Vec<StageCommit> {
        Vec::new()
    }
    fn answer(&self, id: i64, _choice: &str) -> Result<Answered, AnswerRefused> {
        Err(AnswerRefused::Unknown(id))
    }
}

const STATUSES: [&str; 6] = [
    "backlog",
    "ready-for-dev",
    "in-progress",
    "review",
    "done",
    "review # baton: e2e-verify",
];

/// A project with a sprint of `epics` × `per_epic` stories and a journal.
fn project(epics: usize, per_epic: usize) -> (tempfile::TempDir, Project, BenchHost) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let mut text = String::from(
        "generated: 11-26-2026 10:00\nlast_updated: 11-26-2026 10:00\nproject: bench\n\
         project_key: NOKEY\ntracking_system: file-system\nstory_location: stories\n\n\
         development_status:\n",
    );
    for e in 1..=epics {
        text.push_str(&format!("  epic-{e}: in-progress\n"));
        for s in 1..=per_epic {
            let status = STATUSES[(e + s) % STATUSES.len()];
            text.push_str(&format!("  {e}-{s}-story-number-{s}: {status}\n"));
        }
        text.push_str(&format!("  epic-{e}-retrospective: optional\n\n"));
    }
    let sprint_file = root.join("sprint-status.yaml");
    std::fs::write(&sprint_file, text).unwrap();
    let db = root.join(".baton/baton.db");
    let mut j = SqliteJournal::open(&db).unwrap();
    j.begin_run(&RunRecord {
        id: "sprint-1".into(),
        kind: "sprint".into(),
        started_at: "2026-11-26T10:00:00Z".into(),
        ended_at: None,
        status: "running".into(),
        reason: None,
    })
    .unwrap();
    j.record_cost(&CostEntry {
        run_id: Some("sprint-1".into()),
        step_id: None,
        at: "2026-11-26T10:00:01Z".into(),
        model: "script/bench".into(),
        input_tokens: 1000,
        output_tokens: 100,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        cost_usd: 0.5,
        estimated: false,
    })
    .unwrap();
    for i in 0..500 {
        let scope = format!(
            r#"{{"agent":{{"unit":{{"story":"1-{}-story-number-1"}},"agent":"developer"}}}}"#,
            i % 10
        );
        j.append_event(
            "sprint-1",
            "2026-11-26T10:00:02Z",
            &scope,
            r#"{"event":"turn","agent":"developer","turn":1}"#,
        )
        .unwrap();
    }
    drop(j);
    let project = Project {
        root: root.clone(),
        sprint_file,
        stories_dir: root.join("stories"),
        planning_dir: root.join("planning"),
        warn_usd: Some(5.0),
        hard_usd: Some(10.0),
    };
    (dir, project, BenchHost { journal: Some(db) })
}

fn sized(n: usize) -> (usize, usize) {
    match n {
        100 => (10, 10),
        1_000 => (32, 32),
        _ => (100, 100),
    }
}

#[divan::bench(args = [100, 1_000, 10_000], sample_count = 20)]
fn board_page(bencher: divan::Bencher, stories: usize) {
    let (e, s) = sized(stories);
    let (_dir, project, host) = project(e, s);
    let renderer = Renderer::new().unwrap();
    bencher.bench_local(|| {
        let board = views::board(&project, &host).unwrap();
        let frame = render::Frame {
            page: &board,
            nav: "board",
            title: "Board",
            csrf: "x",
            read_only: false,
            seq: board.seq,
            notice: None,
        };
        renderer.render("board.html", &frame).unwrap()
    });
}

#[divan::bench(args = [10_000], sample_count = 20)]
fn board_json(bencher: divan::Bencher, stories: usize) {
    let (e, s) = sized(stories);
    let (_dir, project, host) = project(e, s);
    bencher.bench_local(|| serde_json::to_vec(&views::board(&project, &host).unwrap()).unwrap());
}

fn event(seq: i64) -> StoredEvent {
    StoredEvent {
        seq,
        run_id: "sprint-1".into(),
        at: "2026-11-26T10:00:02Z".into(),
        scope: r#"{"agent":{"unit":{"story":"1-1-a"},"agent":"developer"}}"#.into(),
        body: r#"{"event":"usage","agent":"developer","input_tokens":1200,"output_tokens":80,"cost_usd":0.0123}"#.into(),
    }
}

#[divan::bench(args = [1, 50], sample_count = 50)]
fn sse_fanout(bencher: divan::Bencher, clients: usize) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let feed = Feed::new(256);
    let host: Arc<dyn Host> = Arc::new(BenchHost { journal: None });
    let mut streams: Vec<_> = (0..clients)
        .map(|_| Box::pin(feed::stream(Arc::clone(&host), feed.subscribe(), 0)))
        .collect();
    // Each stream first says how long to wait before reconnecting.
    rt.block_on(async {
        for s in &mut streams {
            s.next().await.unwrap().unwrap();
        }
    });
    let mut seq = 0;
    bencher.bench_local(|| {
        seq += 1;
        feed.publish(Arc::new(Frame::of(&event(seq))));
        rt.block_on(async {
            for s in &mut streams {
                let bytes = s.next().await.unwrap().unwrap();
                assert!(bytes.starts_with(b"id: "));
            }
        });
    });
}
