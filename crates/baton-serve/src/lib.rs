//! baton's web board (`baton serve`): the sprint, the runs, their costs and the escalations, in a
//! browser, live.
//!
//! The server reads what every other front end reads: the sprint file and the journal. It follows
//! the journal's run event log by polling its sequence number ([`feed`]), so it shows a run that
//! another process drives, and a finished one, the same way; a browser that reconnects with
//! `Last-Event-ID` catches up from the journal. Pages are rendered on the server ([`render`]) with
//! one small embedded script for the live parts, and every page answers with its JSON twin under
//! `Accept: application/json` ([`pages`]). Stored events are read as the typed events of
//! `baton-protocol` ([`views::typed`]), never by field name. Nothing here writes anything but a
//! human's answer to an escalation, and that goes through `baton answer`'s own code
//! ([`Host::answer`]), which writes the answer's event to the log every open board follows.
//! Access rules (loopback, the token, CSRF, origins, read-only) live in [`security`].
//!
//! The binary wires it: it resolves the configuration into a [`Project`], implements [`Host`] over
//! its journal, git and `baton answer`, binds the listener and calls [`serve`].

pub mod feed;
pub mod pages;
pub mod render;
pub mod security;
pub mod views;

use axum::Router;
use axum::routing::{get, post};
use baton_store::journal::board::BoardViews;
use baton_store::journal::{JournalError, Store};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The journal as the board reads it: every record family and the dashboard's own views.
pub trait Journal: Store + BoardViews {}
impl<T: Store + BoardViews + ?Sized> Journal for T {}

/// The project the board shows, as plain resolved values.
#[derive(Debug, Clone)]
pub struct Project {
    /// The project root.
    pub root: PathBuf,
    /// The sprint file.
    pub sprint_file: PathBuf,
    /// The story files' folder.
    pub stories_dir: PathBuf,
    /// The planning artifacts' folder: the only place plan documents are read from.
    pub planning_dir: PathBuf,
    /// `[budget] warn_usd`.
    pub warn_usd: Option<f64>,
    /// `[budget] hard_usd`.
    pub hard_usd: Option<f64>,
}

/// A story in flight in its own worktree (`baton sprint --parallel`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InFlight {
    /// The story.
    pub key: String,
    /// Its branch.
    pub branch: String,
    /// Its worktree, relative to the project.
    pub worktree: String,
    /// Where it stands on its way into the base (`worktree`, `queued`, `rebasing`, …).
    pub phase: Option<String>,
    /// Its place in the merge lane (1: next).
    pub lane_place: Option<usize>,
}

/// A stage commit of a story (`story(1-2): dev`), with what it changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StageCommit {
    /// The commit id.
    pub id: String,
    /// Its subject.
    pub subject: String,
    /// Its diff (possibly cut short).
    pub diff: String,
}

/// What one step of a unit was reminded of by the team's memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Recall {
    /// The kind of step (`dev`, `review`, …).
    pub stage: String,
    /// When (RFC 3339).
    pub at: String,
    /// The memories put in its task, in order.
    pub memories: Vec<RecalledMemory>,
}

/// A memory as a recall showed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecalledMemory {
    /// Its id (`m12`).
    pub id: i64,
    /// Its kind (`problem-solution`, …).
    pub kind: String,
    /// Its text (`None`: forgotten since).
    pub text: Option<String>,
}

/// An escalation answered from the board.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Answered {
    /// The escalation.
    pub id: i64,
    /// The stored choice.
    pub choice: String,
    /// Its label.
    pub label: String,
    /// The command that acts on it (`baton sprint`).
    pub next: String,
}

/// Why an answer was not recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerRefused {
    /// No escalation has this id.
    #[error("no escalation #{0}")]
    Unknown(i64),
    /// It was answered already (a stale page).
    #[error("escalation #{id} was already answered: {label}")]
    AlreadyAnswered {
        /// The escalation.
        id: i64,
        /// The answer's label.
        label: String,
    },
    /// The choice is not one of its options.
    #[error("{0}")]
    NotAnOption(String),
    /// The journal could not be read or written.
    #[error("{0}")]
    Failed(String),
}

/// What the board needs from the binary: the journal, git, and `baton answer`.
pub trait Host: Send + Sync + 'static {
    /// A fresh connection to the project's journal; `None` while there is none (the board never
    /// creates one).
    fn journal(&self) -> Result<Option<Box<dyn Journal>>, JournalError>;
    /// The stories in flight in worktrees of their own.
    fn in_flight(&self) -> Vec<InFlight>;
    /// The stage commits of story `key`, oldest first.
    fn stage_commits(&self, key: &str) -> Vec<StageCommit>;
    /// Records `choice` (a number, id or label) for escalation `id`, exactly as `baton answer`.
    fn answer(&self, id: i64, choice: &str) -> Result<Answered, AnswerRefused>;
    /// Remembers the reason given with an answer as a decision for later work (nothing where
    /// the memory is off or not loaded). The answer stands whatever becomes of it.
    fn remember_answer(&self, answered: &Answered, why: &str) {
        let _ = (answered, why);
    }
    /// What the steps of unit `key` were reminded of by the team's memory, oldest first (none
    /// where the memory is off or not loaded).
    fn recalls(&self, key: &str) -> Vec<Recall> {
        let _ = key;
        Vec::new()
    }
}

/// How the board is served.
#[derive(Debug, Clone)]
pub struct Options {
    /// Refuse every answer.
    pub read_only: bool,
    /// How often the journal is polled for new events.
    pub poll: Duration,
    /// How many events a client may fall behind before it is dropped (it catches up from the
    /// journal when it reconnects).
    pub client_queue: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            read_only: false,
            poll: Duration::from_millis(200),
            client_queue: 256,
        }
    }
}

/// Everything a request handler reads.
pub struct AppState {
    /// The project.
    pub project: Project,
    /// The binary's side.
    pub host: Arc<dyn Host>,
    /// Access rules.
    pub gate: security::Gate,
    /// The templates.
    pub render: render::Renderer,
    /// The live event feed.
    pub feed: Arc<feed::Feed>,
}

/// The board's routes over `state`.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/", get(pages::board))
        .route("/story/{key}", get(pages::story))
        .route("/runs", get(pages::runs))
        .route("/escalations", get(pages::escalations))
        .route("/escalations/{id}/answer", post(pages::answer))
        .route("/plan", get(pages::plan))
        .route("/plan/{doc}", get(pages::plan_doc))
        .route("/events", get(feed::events))
        .route("/assets/board.js", get(pages::script))
        .route("/assets/board.css", get(pages::style))
        .fallback(pages::not_found)
        .layer(axum::middleware::map_response(hardened))
        .with_state(state)
}

/// Headers every answer carries: no framing, no sniffing, no referrer to other sites (a `?token=`
/// link must not leak; `no-referrer` would also turn the `Origin` of the board's own forms into
/// `null`), and only the board's own script and style.
async fn hardened(mut response: axum::response::Response) -> axum::response::Response {
    use axum::http::{HeaderValue, header};
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
             frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
        ),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

/// Builds the state and starts following the journal (on the current tokio runtime).
pub fn start(
    project: Project,
    host: Arc<dyn Host>,
    gate: security::Gate,
    options: &Options,
) -> Result<Arc<AppState>, minijinja::Error> {
    let feed = feed::Feed::new(options.client_queue);
    feed::spawn_follower(
        Arc::clone(&feed),
        Arc::clone(&host),
        project.sprint_file.clone(),
        options.poll,
    );
    Ok(Arc::new(AppState {
        project,
        host,
        gate,
        render: render::Renderer::new()?,
        feed,
    }))
}

/// Serves the board on `listener` until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<AppState>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await
}

#[cfg(test)]
mod tests {
    /// Where, in code that is not a test, the board would read JSON by field name: indexing
    /// with a string (`body["input_tokens"]`) or holding an untyped JSON value at all.
    fn untyped_reads(code: &str) -> Vec<String> {
        let mut found = Vec::new();
        for (n, line) in code.lines().enumerate() {
            let bytes = line.as_bytes();
            let indexed = bytes.windows(2).enumerate().any(|(i, w)| {
                w == b"[\"" && i > 0 && {
                    let before = bytes[i - 1];
                    before.is_ascii_alphanumeric() || matches!(before, b'_' | b')' | b']')
                }
            });
            let untyped = [
                "serde_json::Value",
                "serde_json::Map",
                "Value>(",
                "as_object()",
            ]
            .iter()
            .any(|t| line.contains(t));
            if indexed || untyped {
                found.push(format!("{}: {}", n + 1, line.trim()));
            }
        }
        found
    }

    #[test]
    fn the_detector_finds_reads_by_field_name() {
        assert_eq!(
            untyped_reads("let n = body[\"input_tokens\"].as_u64();").len(),
            1
        );
        assert_eq!(untyped_reads("let v: serde_json::Value = x;").len(), 1);
        assert_eq!(untyped_reads("x = f(a)[\"k\"];").len(), 1);
        assert!(untyped_reads("let ok = [\"127.0.0.1\", \"localhost\"];").is_empty());
    }

    /// The board reads events only as the protocol's types: no file of it, outside its tests,
    /// reads JSON by field name, so a renamed event field breaks its build, not its pages.
    #[test]
    fn the_board_reads_no_event_field_by_name() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut dirs = vec![src];
        let mut offenders = Vec::new();
        let mut files = 0;
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                if path.extension().is_none_or(|e| e != "rs") {
                    continue;
                }
                files += 1;
                let text = std::fs::read_to_string(&path).unwrap();
                // Tests may inspect what the board sends as plain JSON.
                let code = text.split("#[cfg(test)]").next().unwrap_or_default();
                for hit in untyped_reads(code) {
                    offenders.push(format!("{}:{hit}", path.display()));
                }
            }
        }
        assert!(files >= 10, "only {files} source files found");
        assert!(offenders.is_empty(), "{offenders:#?}");
    }
}
