//! `baton serve`: the web board. This module resolves the project into the board's plain values,
//! gives the board what only the binary has (the journal, git, the stories in flight, and
//! `baton answer`'s own code path), decides the access token, binds the listener and serves
//! until Ctrl-C.
//!
//! The token is taken from `BATON_SERVE_TOKEN` or generated, and printed once, inside the link
//! that opens the board; nothing logs it afterwards.

use super::in_flight;
use super::sprint::record_answer;
use crate::cli::ServeArgs;
use crate::commands::Code;
use crate::config::Config;
use anyhow::{Context, Result, bail};
use baton_agent::workspace::git::Git;
use baton_engine::answer::AnswerError;
use baton_serve::{
    AnswerRefused, Answered, Host, InFlight, Journal, Recall, RecalledMemory, StageCommit,
};
use baton_store::journal::{JournalError, SqliteJournal};
use std::io::Write as _;
use std::sync::Arc;

/// The shortest token accepted from the environment.
const MIN_TOKEN: usize = 16;
/// How many stage commits a story page shows, and how much of each diff.
const MAX_COMMITS: usize = 40;
const MAX_DIFF: usize = 64 * 1024;

/// The binary's side of the board.
struct CliHost {
    cfg: Config,
}

impl CliHost {
    fn block_on<T>(&self, f: impl Future<Output = T>) -> Option<T> {
        match tokio::runtime::Handle::try_current() {
            Ok(h) => Some(h.block_on(f)),
            Err(_) => tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()
                .map(|rt| rt.block_on(f)),
        }
    }
}

impl Host for CliHost {
    fn journal(&self) -> Result<Option<Box<dyn Journal>>, JournalError> {
        let path = self.cfg.journal_path();
        if !path.is_file() {
            return Ok(None);
        }
        Ok(Some(Box::new(SqliteJournal::open(&path)?)))
    }

    fn in_flight(&self) -> Vec<InFlight> {
        let path = self.cfg.journal_path();
        in_flight::list(&self.cfg.root, || {
            path.is_file()
                .then(|| SqliteJournal::open(&path).ok())
                .flatten()
        })
        .into_iter()
        .map(|f| InFlight {
            key: f.key,
            branch: f.branch,
            worktree: f.worktree,
            phase: f.phase,
            lane_place: f.lane_place,
        })
        .collect()
    }

    fn remember_answer(&self, answered: &Answered, why: &str) {
        // The same decision memory `baton answer --why` makes; the board asks no further
        // question, so a choice against the recommendation is not made a preference here.
        let Ok(journal) = crate::project::journal(&self.cfg) else {
            return;
        };
        let Ok(Some(escalation)) =
            baton_store::journal::EscalationLog::escalation(&journal, answered.id)
        else {
            return;
        };
        let _ = super::memory::learn_from_answer(
            &self.cfg.root,
            &escalation,
            &answered.label,
            None,
            Some(why),
            || false,
        );
    }

    fn recalls(&self, key: &str) -> Vec<Recall> {
        use baton_store::memory::MemoryStore as _;
        // Only a trusted project's memory is read, and only when there is one: the board never
        // creates it.
        let path = super::memory::db_path(&self.cfg);
        if !self.cfg.trusted || !self.cfg.memory.enabled.unwrap_or(true) || !path.is_file() {
            return Vec::new();
        }
        let Ok(store) = baton_store::memory::SqliteMemory::open_read_only(&path) else {
            return Vec::new();
        };
        store
            .recalls(key)
            .unwrap_or_default()
            .into_iter()
            .map(|r| Recall {
                stage: r.stage,
                at: jiff::Timestamp::from_second(r.at)
                    .map(|t| t.to_string())
                    .unwrap_or_default(),
                memories: r
                    .memories
                    .iter()
                    .map(|&id| {
                        let m = store.get(id).ok().flatten();
                        RecalledMemory {
                            id,
                            kind: m.as_ref().map(|m| m.kind.to_string()).unwrap_or_default(),
                            text: m.map(|m| m.text),
                        }
                    })
                    .collect(),
            })
            .collect()
    }

    fn stage_commits(&self, key: &str) -> Vec<StageCommit> {
        let git = Git::new(&self.cfg.root, Vec::new());
        // Stage commits name the story by its number (`story(1-2): dev` of `1-2-login`).
        let short = key.split('-').take(2).collect::<Vec<_>>().join("-");
        let grep = format!("story({short}):");
        self.block_on(async {
            let Ok(log) = git
                .run(&[
                    "log",
                    "--all",
                    "--reverse",
                    "--fixed-strings",
                    &format!("--grep={grep}"),
                    "--format=%H%x1f%s",
                ])
                .await
            else {
                return Vec::new();
            };
            let mut out = Vec::new();
            for line in log.lines().filter(|l| !l.is_empty()).take(MAX_COMMITS) {
                let Some((id, subject)) = line.split_once('\u{1f}') else {
                    continue;
                };
                if !subject.starts_with(&grep) {
                    continue;
                }
                let mut diff = git
                    .run(&["show", "--stat", "--patch", "--format=", "--no-color", id])
                    .await
                    .unwrap_or_default();
                if diff.len() > MAX_DIFF {
                    let mut cut = MAX_DIFF;
                    while !diff.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    diff.truncate(cut);
                    diff.push_str("\n… (cut short)\n");
                }
                out.push(StageCommit {
                    id: id.to_owned(),
                    subject: subject.to_owned(),
                    diff,
                });
            }
            out
        })
        .unwrap_or_default()
    }

    fn answer(&self, id: i64, choice: &str) -> Result<Answered, AnswerRefused> {
        match record_answer(&self.cfg, id, choice) {
            Ok(Ok(r)) => Ok(Answered {
                id: r.id,
                choice: r.choice,
                label: r.label,
                next: r.next,
            }),
            Ok(Err(AnswerError::Unknown(id))) => Err(AnswerRefused::Unknown(id)),
            Ok(Err(AnswerError::Already { id, label })) => {
                Err(AnswerRefused::AlreadyAnswered { id, label })
            }
            Ok(Err(AnswerError::NotAnOption(why))) => Err(AnswerRefused::NotAnOption(why)),
            Ok(Err(e @ AnswerError::Journal(_))) => Err(AnswerRefused::Failed(e.to_string())),
            Err(e) => Err(AnswerRefused::Failed(format!("{e:#}"))),
        }
    }
}

/// The access token: `BATON_SERVE_TOKEN`, else a new one. `true` when it was generated (and so
/// is printed).
fn token() -> Result<(String, bool)> {
    match std::env::var(crate::env::BATON_SERVE_TOKEN) {
        Ok(t) if !t.is_empty() => {
            if t.len() < MIN_TOKEN || !t.bytes().all(|b| b.is_ascii_graphic() && b != b';') {
                bail!(
                    "`{}` must be at least {MIN_TOKEN} printable characters without spaces or `;`; \
                     unset it to have `baton serve` generate one",
                    crate::env::BATON_SERVE_TOKEN
                );
            }
            Ok((t, false))
        }
        _ => Ok((
            baton_serve::security::random_token().context("cannot read random bytes")?,
            true,
        )),
    }
}

/// Runs `baton serve`.
pub fn run(root: &std::path::Path, args: &ServeArgs) -> Result<Code> {
    let cfg = crate::project::config(root)?;
    crate::project::require_sprint(&cfg)?;
    crate::project::require_bmad_sprint(&cfg)?;
    let (token, generated) = token()?;
    let project = baton_serve::Project {
        root: cfg.root.clone(),
        sprint_file: cfg.sprint_status.clone(),
        stories_dir: cfg.stories.clone(),
        planning_dir: cfg.planning.clone(),
        warn_usd: cfg.budget.warn_usd,
        hard_usd: cfg.budget.hard_usd,
    };
    let options = baton_serve::Options {
        read_only: args.read_only,
        ..baton_serve::Options::default()
    };
    let host: Arc<dyn Host> = Arc::new(CliHost { cfg });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("cannot listen on `{}`", args.listen))?;
        let local = listener.local_addr()?;
        let gate = baton_serve::security::Gate::new(local, token.clone(), args.read_only)
            .context("cannot read random bytes")?;
        let state = baton_serve::start(project, host, gate, &options)?;
        let base = format!("http://{local}/");
        let link = format!("{base}?token={token}");
        {
            let mut out = std::io::stdout().lock();
            if generated {
                writeln!(out, "board: {link}")?;
                writeln!(
                    out,
                    "the link holds this board's access token, shown only now; answering an \
                     escalation needs it{}",
                    if local.ip().is_loopback() {
                        ""
                    } else {
                        ", and so does every page on this address"
                    }
                )?;
            } else {
                writeln!(out, "board: {base}")?;
                writeln!(
                    out,
                    "the access token is the one in `{}`: open `{base}?token=…` once",
                    crate::env::BATON_SERVE_TOKEN
                )?;
            }
            if args.read_only {
                writeln!(
                    out,
                    "read-only: escalations are answered with `baton answer`"
                )?;
            }
            writeln!(out, "stop with Ctrl-C")?;
            out.flush()?;
        }
        if args.open {
            open_browser(if generated { &link } else { &base });
        }
        baton_serve::serve(listener, state, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .context("the board stopped")?;
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(Code::Ok)
}

/// Opens `url` in the desktop's browser, if there is one; a failure only says so.
fn open_browser(url: &str) {
    let opened = std::process::Command::new("xdg-open")
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if opened.is_err() {
        eprintln!("note: no browser could be opened (`xdg-open` is missing); open the link above");
    }
}
