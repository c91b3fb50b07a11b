//! `baton status`: the board, its counts, the next action, and validation.

use crate::cli::StatusArgs;
use crate::commands::Code;
use anyhow::Result;
use baton_core::key::KeyKind;
use baton_core::meter::Meter;
use baton_core::next::{BlockedStory, NextAction, blocked_stories, next_action};
use baton_core::status::Status;
use baton_core::status::StatusValue;
use baton_core::validate::{self, Options, Problem, ProblemKind, Severity};
use baton_store::ledger::Now;
use baton_store::sprint_file::{LoadError, SprintDoc, diagnose};
use baton_store::story_file;
use comfy_table::{Table, presets::NOTHING};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// Version of the `--json` schema (docs/status-json.md).
const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Serialize)]
struct Row {
    key: String,
    kind: &'static str,
    epic: Option<baton_core::key::EpicId>,
    status: String,
    file_status: Option<String>,
    extended: bool,
    line: usize,
    /// The story file's own status, when it has a file that states one.
    #[serde(skip_serializing_if = "Option::is_none")]
    story_file_status: Option<String>,
    /// What the story's agents used, over every run (the journal's cost ledger), when they used
    /// anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<Meter>,
}

#[derive(Debug, Serialize)]
struct Board {
    schema_version: u32,
    file: String,
    project: Option<String>,
    last_updated: Option<String>,
    valid: bool,
    entries: Vec<Row>,
    counts: BTreeMap<&'static str, BTreeMap<String, usize>>,
    next: NextAction,
    /// Stories that need a human, with the command that puts each back.
    blocked: Vec<BlockedView>,
    /// Stories in their own worktrees (parallel runs), with their place on the way to the base.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    in_flight: Vec<super::in_flight::InFlight>,
    /// What the sprint's runs used (the journal's cost ledger), once baton has run one.
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<Meter>,
    problems: Vec<Problem>,
}

#[derive(Debug, Serialize)]
struct BlockedView {
    #[serde(flatten)]
    story: BlockedStory,
    command: String,
}

fn syntax_problem(err: &LoadError) -> Problem {
    let line = match err {
        LoadError::Syntax { line, .. } => Some(*line),
        _ => None,
    };
    Problem {
        severity: Severity::Error,
        kind: ProblemKind::Syntax,
        line,
        key: None,
        message: match err {
            LoadError::Syntax { message, .. } => message.clone(),
            other => other.to_string(),
        },
    }
}

/// Runs `baton status`.
pub fn run(root: &Path, args: &StatusArgs) -> Result<Code> {
    let cfg = crate::project::config(root)?;
    crate::project::require_sprint(&cfg)?;
    let file = cfg.sprint_status.display().to_string();
    crate::project::require_bmad_sprint(&cfg)?;
    let doc = match SprintDoc::load(&cfg.sprint_status) {
        Ok(doc) => doc,
        Err(err) if args.validate => {
            // Report every entry baton cannot handle, not just the first.
            let text = std::fs::read(&cfg.sprint_status).unwrap_or_default();
            let mut all: Vec<Problem> =
                diagnose(&cfg.sprint_status, &String::from_utf8_lossy(&text))
                    .iter()
                    .map(syntax_problem)
                    .collect();
            if all.is_empty() {
                all.push(syntax_problem(&err));
            }
            if args.json {
                let out = serde_json::json!({
                    "schema_version": SCHEMA_VERSION, "file": file, "valid": false, "problems": all,
                });
                println!("{}", serde_json::to_string_pretty(&out)?);
            } else {
                print_problems(&file, &all);
            }
            return Ok(Code::Error);
        }
        Err(err) => return Err(err.into()),
    };
    // A journal means baton has written here before: settle anything a killed process left
    // pending, then compare the journal with the file.
    let mut disagreements = Vec::new();
    let doc = if cfg.journal_path().exists() {
        let ledger = crate::project::ledger(&cfg)?;
        disagreements = ledger.audit()?;
        ledger.doc().clone()
    } else {
        doc
    };
    // A finer state the file lost (BMad's sprint planning rewrites the file without baton's
    // `# baton:` comments): the journal still knows it, and the board shows it.
    let (finer, sprint_with_finer) = finer_states(&cfg, doc.sprint(), &disagreements)?;
    let sprint = sprint_with_finer.as_ref().unwrap_or(doc.sprint());
    let mut problems = validate::validate(
        sprint,
        &Options {
            today: Some(Now::system().stamp),
            stale_days: i64::from(cfg.stale_days),
        },
    );
    {
        for d in disagreements {
            let line = sprint.get(&d.key).map(|e| e.line);
            if finer.contains(&d.key) {
                problems.push(Problem {
                    severity: Severity::Warning,
                    kind: ProblemKind::JournalMismatch,
                    line,
                    key: Some(d.key.clone()),
                    message: format!(
                        "`{}` is `{}` in the file, which lost its `# baton: {}` comment (BMad's sprint planning drops it); the journal's `{}` is shown and acted on",
                        d.key,
                        d.file.as_deref().unwrap_or("(missing)"),
                        d.journal,
                        d.journal
                    ),
                });
                continue;
            }
            problems.push(Problem {
                severity: Severity::Warning,
                kind: ProblemKind::JournalMismatch,
                line,
                key: Some(d.key.clone()),
                message: format!(
                    "`{}` is `{}` in the file but `{}` in the journal: changed outside baton",
                    d.key,
                    d.file.as_deref().unwrap_or("(missing)"),
                    d.journal
                ),
            });
        }
    }
    let story_statuses = story_statuses(&cfg.stories, sprint);
    for e in sprint.unique() {
        let Some((path, story)) = story_statuses.get(e.key.as_str()) else {
            continue;
        };
        let kind = e.key.kind();
        let file_value = e.value.clone();
        let story_value = StatusValue::parse(story, kind).0;
        if story_value == file_value {
            continue;
        }
        let rank = |v: &StatusValue| v.known().and_then(|s| s.rank(kind));
        let ahead = matches!((rank(&story_value), rank(&file_value)), (Some(a), Some(b)) if a > b);
        let key = e.key.as_str();
        let message = if ahead {
            format!(
                "`{key}`: the story file `{}` says `{story}`, ahead of the sprint file's `{file_value}`; baton lowers neither (`baton set {key} {story}` if that is true)",
                path.display()
            )
        } else {
            format!(
                "`{key}`: the story file `{}` says `{story}` but the sprint file says `{file_value}`",
                path.display()
            )
        };
        problems.push(Problem {
            severity: Severity::Warning,
            kind: ProblemKind::StoryFileMismatch,
            line: Some(e.line),
            key: Some(key.to_owned()),
            message,
        });
    }
    problems.sort_by_key(|p| (p.line.unwrap_or(0), p.severity));
    let valid = !validate::has_errors(&problems);

    let (sprint_usage, story_usage) = usage(&cfg)?;
    let rows: Vec<Row> = sprint
        .entries
        .iter()
        .map(|e| Row {
            key: e.key.as_str().to_owned(),
            kind: e.key.kind().name(),
            epic: e.key.kind().epic(),
            status: e.effective().as_str().to_owned(),
            file_status: e.raw.clone(),
            extended: e.extended.is_some(),
            line: e.line,
            story_file_status: story_statuses.get(e.key.as_str()).map(|(_, s)| s.clone()),
            usage: matches!(e.key.kind(), KeyKind::Story { .. })
                .then(|| story_usage.get(e.key.as_str()).copied())
                .flatten(),
        })
        .collect();
    let mut counts: BTreeMap<&'static str, BTreeMap<String, usize>> = BTreeMap::new();
    for e in sprint.unique() {
        let group = match e.key.kind() {
            KeyKind::Epic { .. } => "epics",
            KeyKind::Story { .. } => "stories",
            KeyKind::Retrospective { .. } => "retrospectives",
            _ => continue,
        };
        *counts
            .entry(group)
            .or_default()
            .entry(e.effective().as_str().to_owned())
            .or_default() += 1;
    }
    let board = Board {
        schema_version: SCHEMA_VERSION,
        file: file.clone(),
        project: sprint.field("project").map(str::to_owned),
        last_updated: sprint.field("last_updated").map(str::to_owned),
        valid,
        entries: rows,
        counts,
        next: next_action(sprint),
        blocked: blocked_stories(sprint)
            .into_iter()
            .map(|story| BlockedView {
                command: story.command(),
                story,
            })
            .collect(),
        in_flight: super::in_flight::list(&cfg.root, || crate::project::journal(&cfg).ok()),
        usage: sprint_usage,
        problems,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&board)?);
    } else if args.validate {
        print_problems(&file, &board.problems);
        if board.valid {
            println!("`{file}` is valid ({} entries)", board.entries.len());
        }
    } else {
        print_board(&board);
    }
    Ok(if args.validate && !board.valid {
        Code::Error
    } else {
        Code::Ok
    })
}

/// What the sprint's runs used, and each key's steps, from the journal's cost ledger; nothing
/// before baton has journaled anything here (the journal is never created just to be read).
fn usage(cfg: &crate::config::Config) -> Result<(Option<Meter>, BTreeMap<String, Meter>)> {
    use baton_store::journal::{CostLedger, UsageOf};
    if !cfg.journal_path().exists() {
        return Ok((None, BTreeMap::new()));
    }
    let journal = crate::project::journal(cfg)?;
    let sprint = journal.usage(UsageOf::RunKind("sprint"))?;
    let by_key = journal.usage_by_key(None)?;
    Ok(((!sprint.is_empty()).then_some(sprint), by_key))
}

/// The stories whose journal holds a finer state (`needs-intervention`, `story-doc-review`, …)
/// that the file shows only as its canonical status, without the `# baton:` comment that would
/// say so; and the sprint with those states put back (`None` when there is none).
fn finer_states(
    cfg: &crate::config::Config,
    sprint: &baton_core::Sprint,
    disagreements: &[baton_store::ledger::Disagreement],
) -> Result<(Vec<String>, Option<baton_core::Sprint>)> {
    use baton_store::journal::{EventFilter, StatusEvents};
    let mut found: Vec<(String, Status)> = Vec::new();
    if disagreements.is_empty() {
        return Ok((Vec::new(), None));
    }
    let journal = crate::project::journal(cfg)?;
    for d in disagreements {
        let Some(state) = Status::parse(&d.journal).filter(|s| s.is_extended()) else {
            continue;
        };
        let Some(entry) = sprint.get(&d.key).filter(|e| e.extended.is_none()) else {
            continue;
        };
        let last = journal.events(&EventFilter {
            key: Some(d.key.clone()),
            all_states: false,
            limit: Some(1),
        })?;
        // The canonical status the state stands on: its projection, or for a parked story the
        // status it was parked from.
        let base = state
            .projection()
            .map(|s| s.as_str().to_owned())
            .or_else(|| {
                last.last()
                    .and_then(|e| e.from.as_deref())
                    .and_then(Status::parse)
                    .map(|s| s.projection().unwrap_or(s).as_str().to_owned())
            });
        if base.as_deref() == Some(entry.effective().as_str()) {
            found.push((d.key.clone(), state));
        }
    }
    if found.is_empty() {
        return Ok((Vec::new(), None));
    }
    let mut entries = sprint.entries.clone();
    for e in &mut entries {
        if let Some((_, s)) = found.iter().find(|(k, _)| k == e.key.as_str()) {
            e.extended = Some(*s);
        }
    }
    let with = baton_core::Sprint::new(
        sprint.fields.clone(),
        sprint.development_status_line,
        entries,
    );
    Ok((found.into_iter().map(|(k, _)| k).collect(), Some(with)))
}

/// `key → (story file, its status)` of every story that has a file stating a status.
fn story_statuses(
    dir: &Path,
    sprint: &baton_core::Sprint,
) -> HashMap<String, (std::path::PathBuf, String)> {
    let files = story_file::index(dir);
    let mut out = HashMap::new();
    for e in sprint.unique() {
        if !matches!(e.key.kind(), KeyKind::Story { .. }) {
            continue;
        }
        let Some(path) = files.get(e.key.as_str()) else {
            continue;
        };
        if let Ok(Some(s)) = story_file::read_status_at(path)
            && !s.value.is_empty()
        {
            out.insert(e.key.as_str().to_owned(), (path.clone(), s.value));
        }
    }
    out
}

fn print_problems(file: &str, problems: &[Problem]) {
    for p in problems {
        let sev = match p.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        match p.line {
            Some(l) => println!("{file}:{l}: {sev}: {}", p.message),
            None => println!("{file}: {sev}: {}", p.message),
        }
    }
    let errors = problems
        .iter()
        .filter(|p| p.severity == Severity::Error)
        .count();
    if errors > 0 {
        println!("{errors} error(s), {} warning(s)", problems.len() - errors);
    }
}

fn print_board(board: &Board) {
    println!("sprint file: {}", board.file);
    println!(
        "{}{}",
        board.project.as_deref().unwrap_or("sprint"),
        board
            .last_updated
            .as_deref()
            .map(|s| format!(" (updated {s})"))
            .unwrap_or_default()
    );
    let mut table = Table::new();
    table.load_style(NOTHING);
    // The usage column only once a story has used something.
    let metered = board.entries.iter().any(|r| r.usage.is_some());
    let mut header = vec!["key", "status", "note"];
    if metered {
        header.push("tokens and cost");
    }
    table.set_header(header);
    for r in &board.entries {
        let indent = if r.kind == "epic" || r.kind == "opaque" {
            ""
        } else {
            "  "
        };
        let story_differs = r.story_file_status.as_deref().is_some_and(|s| {
            Some(s) != r.file_status.as_deref() && Some(s) != Some(r.status.as_str())
        });
        let note = if story_differs {
            format!(
                "story file: {}",
                r.story_file_status.as_deref().unwrap_or("-")
            )
        } else if r.extended {
            format!("file: {}", r.file_status.as_deref().unwrap_or("-"))
        } else if r.file_status.as_deref().is_some_and(|f| f != r.status) {
            format!("file: {} (legacy)", r.file_status.as_deref().unwrap_or("-"))
        } else {
            match r.kind {
                "opaque" => "kept as is".to_owned(),
                "malformed" => "malformed key".to_owned(),
                _ => match Status::parse(&r.status) {
                    Some(_) => String::new(),
                    None => "not managed by baton".to_owned(),
                },
            }
        };
        let mut row = vec![format!("{indent}{}", r.key), r.status.clone(), note];
        if metered {
            row.push(r.usage.map(|u| u.describe()).unwrap_or_default());
        }
        table.add_row(row);
    }
    println!("{table}");
    for (group, counts) in &board.counts {
        let parts: Vec<String> = counts.iter().map(|(s, n)| format!("{s} {n}")).collect();
        println!("{group}: {}", parts.join(", "));
    }
    if let Some(u) = &board.usage {
        println!("used by the sprint's runs: {}", u.describe());
    }
    let next = match &board.next {
        NextAction::ContinueDev(k) => format!("continue development of `{k}`"),
        NextAction::CodeReview(k) => format!("review `{k}`"),
        NextAction::Verify(k) => format!("verify `{k}` end to end"),
        NextAction::StoryReview(k) => format!("review the story document of `{k}`"),
        NextAction::ReviseStory(k) => format!("revise the story document of `{k}`"),
        NextAction::StartDev(k) => format!("start development of `{k}`"),
        NextAction::CreateStory(k) => format!("create the story file of `{k}`"),
        NextAction::Retrospective(k) => format!("hold the retrospective `{k}`"),
        NextAction::AllDone => "everything is done".to_owned(),
        NextAction::NothingPlanned => "nothing is planned yet: add epics and stories to the \
            sprint file (BMad's sprint-planning workflow writes them; `baton plan` will), then \
            `baton sprint`"
            .to_owned(),
        NextAction::Blocked => format!(
            "nothing can be picked: {} {} a human (below)",
            super::team::plural(board.blocked.len() as u64, "story", "stories"),
            if board.blocked.len() == 1 {
                "needs"
            } else {
                "need"
            }
        ),
    };
    println!("next: {next}");
    if !board.in_flight.is_empty() {
        println!("in flight (each in its own worktree):");
        for f in &board.in_flight {
            let phase = match (f.phase.as_deref(), f.lane_place) {
                (Some("queued"), Some(n)) => format!("waiting in the merge lane (place {n})"),
                (Some("worktree") | None, _) => "working".to_owned(),
                (Some("conflict"), _) => "in a merge fix round".to_owned(),
                (Some("testing"), _) => "tests on the updated branch".to_owned(),
                (Some("kept"), _) => "kept: not merged".to_owned(),
                (Some(p), _) => p.to_owned(),
            };
            println!("  {}: {phase} · {} · {}", f.key, f.branch, f.worktree);
        }
    }
    if !board.blocked.is_empty() {
        println!(
            "blocked: look at each story's transcripts (.baton/runs/) and `baton escalations --all`, \
             then put it back and run `baton sprint`:"
        );
        for b in &board.blocked {
            println!("  {} ({}): {}", b.story.key, b.story.status, b.command);
        }
    }
    // A state taken from the journal because the file lost its marker: say so.
    for p in &board.problems {
        let restored = board.entries.iter().any(|r| {
            r.extended && p.key.as_deref() == Some(r.key.as_str()) && r.file_status.is_some()
        });
        if p.kind == ProblemKind::JournalMismatch && restored {
            println!("note: {}", p.message);
        }
    }
    let errors = board
        .problems
        .iter()
        .filter(|p| p.severity == Severity::Error)
        .count();
    if errors > 0 {
        println!("{errors} problem(s) in the file: `baton status --validate` lists them");
    }
}
