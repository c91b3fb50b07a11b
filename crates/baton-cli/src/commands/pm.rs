//! `baton pm`: the GitHub pipeline's set-up from the command line. `baton pm import` opens one
//! issue per story of the sprint file, with the story file as its body and the `status/*` label
//! of the phase the story is in (docs/github.md).
//!
//! Exactly once: each issue carries a hidden marker `<!-- baton:story KEY -->`, and every
//! issue of the repository (open or closed) is read for it before anything is opened, so a
//! rerun after a kill, a 5xx or a rate limit never opens a story twice. The client never
//! repeats a POST. The token comes from the environment (`GITHUB_TOKEN`), is sent only to the
//! API, and is never printed.

use crate::cli::{PmAgentArgs, PmArgs, PmCommand, PmImportArgs, PmPassArgs};
use crate::commands::Code;
use crate::render;
use anyhow::{Context, Result, bail};
use baton_core::key::KeyKind;
use baton_core::pipeline::Phase;
use baton_core::pipeline::decide::{Limits, Roles};
use baton_core::pipeline::event::{self, Scope};
use baton_engine::run::{JournalHandle, RunKind, RunSpec};
use baton_engine::workflows::pm::turn::{PmTurn, TurnReport};
use baton_engine::workflows::pm::{PassReport, Pipeline, PmPass};
use baton_github::{Forge, GitHub, MergeMethod, NewIssue, NewLabel, Token};
use baton_store::journal::SqliteJournal;
use std::io::Write as _;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The environment variable holding the token.
pub const TOKEN_ENV: &str = "GITHUB_TOKEN";
/// The environment variable naming `owner/name` (set by GitHub Actions).
pub const REPOSITORY_ENV: &str = "GITHUB_REPOSITORY";
/// The environment variable holding the REST API's base (set by GitHub Actions).
pub const API_ENV: &str = "GITHUB_API_URL";

/// Runs `baton pm …`.
pub fn run(root: &Path, args: &PmArgs) -> Result<Code> {
    match &args.command {
        Some(PmCommand::Import(a)) => import(root, a),
        Some(PmCommand::Init(a)) => super::pm_init::init(root, a),
        Some(PmCommand::Agent(a)) => agent(root, a),
        None => pass(root, &args.pass),
    }
}

/// The repository `OWNER/NAME` the arguments or the environment name.
fn repo_name(repo: Option<&str>) -> Result<String> {
    match repo {
        Some(r) => Ok(r.to_owned()),
        None => std::env::var(REPOSITORY_ENV).map_err(|_| {
            anyhow::anyhow!("no repository: give `--repo OWNER/NAME` or set {REPOSITORY_ENV}")
        }),
    }
}

/// The roles `[pipeline]` names, with the protocol's defaults.
pub fn roles_of(raw: &baton_config::raw::RawPipeline) -> Result<Roles> {
    let d = Roles::default();
    let roles = Roles {
        analyst: raw.analyst.clone().unwrap_or(d.analyst),
        architect: raw.architect.clone().unwrap_or(d.architect),
        implementer: raw.implementer.clone().unwrap_or(d.implementer),
        reviewer: raw.reviewer.clone().unwrap_or(d.reviewer),
    };
    for r in roles.all() {
        if r.is_empty()
            || !r
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            bail!(
                "baton.toml: [pipeline] role `{r}` must be letters, digits, `-` or `_` (it names the label `agent/{r}`)"
            );
        }
    }
    Ok(roles)
}

/// The pipeline's settings: `[pipeline]`, the protocol's defaults, the Actions run's link.
fn pipeline(cfg: &crate::config::Config, repo: &str) -> Result<Pipeline> {
    let raw = &cfg.pipeline;
    let roles = roles_of(raw)?;
    let dl = Limits::default();
    let limits = Limits {
        round_trips: raw.round_trips.unwrap_or(dl.round_trips).max(1),
        silence: raw.silence_hours.map_or(dl.silence, |h| h as i64 * 3600),
        remind_after: raw
            .remind_hours
            .map_or(dl.remind_after, |h| h as i64 * 3600),
    };
    let merge = match raw.merge_method.as_deref().unwrap_or("squash") {
        "merge" => MergeMethod::Merge,
        "squash" => MergeMethod::Squash,
        "rebase" => MergeMethod::Rebase,
        other => {
            bail!("baton.toml: [pipeline] merge_method `{other}`: use merge, squash or rebase")
        }
    };
    let seats = raw.max_implementing.unwrap_or(2);
    if seats == 0 {
        bail!("baton.toml: [pipeline] max_implementing must be at least 1");
    }
    let owner = match &raw.owner {
        Some(o) => o.trim_start_matches('@').to_owned(),
        None => repo.split_once('/').map_or(repo, |(o, _)| o).to_owned(),
    };
    let run_link = match (
        std::env::var("GITHUB_SERVER_URL"),
        std::env::var("GITHUB_RUN_ID"),
    ) {
        (Ok(server), Ok(id)) => Some((id.clone(), format!("{server}/{repo}/actions/runs/{id}"))),
        _ => None,
    };
    Ok(Pipeline {
        roles,
        limits,
        seats,
        owner,
        login: raw
            .login
            .clone()
            .unwrap_or_else(|| "github-actions[bot]".to_owned()),
        merge,
        intake_label: raw.intake_label.clone(),
        base: raw.base.clone().unwrap_or_else(|| "main".to_owned()),
        agents: raw.agents.clone().unwrap_or_default(),
        run_link,
        project: raw.project.map(|n| {
            (
                raw.project_owner
                    .clone()
                    .unwrap_or_else(|| repo.split_once('/').map_or(repo, |(o, _)| o).to_owned()),
                n,
                raw.project_field
                    .clone()
                    .unwrap_or_else(|| "Status".to_owned()),
            )
        }),
        repo: repo.to_owned(),
    })
}

/// What a pass looks at: these issues (`None`: every one), and the issues of these pulls.
type Looks = (Option<Vec<u64>>, Vec<u64>);

/// The issues the triggering event (GitHub Actions' `GITHUB_EVENT_NAME`/`GITHUB_EVENT_PATH`)
/// names; `Ok(None)` for a sweep; `Err` with the reason to do nothing.
fn event_scope() -> Result<std::result::Result<Looks, String>> {
    let (Ok(name), Ok(path)) = (
        std::env::var("GITHUB_EVENT_NAME"),
        std::env::var("GITHUB_EVENT_PATH"),
    ) else {
        return Ok(Ok((None, Vec::new())));
    };
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read the event payload {path} (GITHUB_EVENT_PATH)"))?;
    let trigger =
        event::scope(&name, &text).with_context(|| format!("the event payload {path}"))?;
    Ok(match trigger.scope {
        Scope::All => Ok((None, Vec::new())),
        Scope::Issues(v) => Ok((Some(v), Vec::new())),
        Scope::PullRequests(v) => Ok((None, v)),
        Scope::Ignore(why) => Err(why),
    })
}

fn journal_of(cfg: &crate::config::Config) -> Result<Arc<Mutex<SqliteJournal>>> {
    std::fs::create_dir_all(&cfg.state_dir)
        .with_context(|| format!("cannot create {}", cfg.state_dir.display()))?;
    Ok(Arc::new(Mutex::new(SqliteJournal::open(
        &cfg.journal_path(),
    )?)))
}

fn spec(root: &Path, cfg: &crate::config::Config, kind: &str) -> Result<(RunSpec, String)> {
    let journal = journal_of(cfg)?;
    let run_id = super::team::run_id(kind);
    let found = super::plumbing::discover_agents(root);
    let setup = super::team::build_setup(
        root,
        cfg,
        found.agents,
        baton_agent::runner::Mode::Standard,
        None,
        &run_id,
        super::team::sprint_ledger(cfg),
        journal.clone(),
        None,
    )?;
    Ok((
        RunSpec {
            id: run_id.clone(),
            kind: RunKind::Pm,
            setup: Arc::new(setup),
            journal: JournalHandle::Own(journal),
            escalations_log: cfg.state_dir.join("escalations.log"),
            interactive: false,
            event_log: super::plumbing::event_log(cfg),
        },
        run_id,
    ))
}

/// Appends `text` to the job summary when running in GitHub Actions.
fn job_summary(text: &str) {
    let Ok(path) = std::env::var("GITHUB_STEP_SUMMARY") else {
        return;
    };
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
    {
        let _ = f.write_all(baton_core::secrets::redact(text).as_bytes());
    }
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn pass_summary(r: &PassReport) -> String {
    let mut s =
        String::from("## PM pass\n\n| Issue | Phase | Did | Waits on |\n|---|---|---|---|\n");
    for i in &r.issues {
        s.push_str(&format!(
            "| #{} {} | {} → {} | {} | {} |\n",
            i.number,
            cell(&i.title),
            i.from,
            i.to,
            cell(&i.did.join("; ")),
            cell(i.waits.as_deref().unwrap_or(""))
        ));
    }
    for n in &r.notes {
        s.push_str(&format!("\n- {}", cell(n)));
    }
    if let Some(e) = &r.error {
        s.push_str(&format!("\n\n**Stopped:** {}", cell(e)));
    }
    s.push('\n');
    s
}

fn print_pass(r: &PassReport) {
    for i in &r.issues {
        let what = if i.did.is_empty() {
            i.waits.clone().unwrap_or_else(|| "nothing to do".into())
        } else {
            i.did.join("; ")
        };
        println!("  #{:<5} {:<18} {}", i.number, i.to, what);
    }
    for n in &r.notes {
        println!("  note: {n}");
    }
    println!(
        "pass {}: {} issue{} looked at",
        r.run,
        r.issues.len(),
        if r.issues.len() == 1 { "" } else { "s" }
    );
}

fn pass(root: &Path, args: &PmPassArgs) -> Result<Code> {
    let cfg = crate::project::config(root)?;
    let repo = repo_name(args.repo.as_deref())?;
    let p = pipeline(&cfg, &repo)?;
    let (only, pulls) = match args.issue {
        Some(n) => (Some(vec![n]), Vec::new()),
        None => match event_scope()? {
            Ok(s) => s,
            Err(why) => {
                println!("nothing to do: {why}");
                return Ok(Code::Ok);
            }
        },
    };
    let forge: Arc<dyn Forge> = Arc::new(client(Some(&repo))?);
    loop {
        let (spec, _) = spec(root, &cfg, "pm")?;
        let workflow = PmPass {
            forge: forge.clone(),
            pipeline: p.clone(),
            only: only.clone(),
            pulls: pulls.clone(),
            dry_run: args.dry_run,
        };
        let report = render::run(spec, workflow, render::Style::Quiet)?;
        job_summary(&pass_summary(&report));
        if args.json {
            println!(
                "{}",
                baton_core::secrets::redact(&serde_json::to_string_pretty(&report)?)
            );
        } else {
            print_pass(&report);
        }
        if let Some(e) = &report.error {
            if report.retry {
                eprintln!(
                    "error: {e}\nnothing is lost: run `baton pm` again; it looks for what this \
                     pass already did before doing anything"
                );
            } else {
                eprintln!("error: {e}");
            }
            if !args.watch {
                return Ok(Code::Error);
            }
        }
        if !args.watch {
            return Ok(Code::Ok);
        }
        std::thread::sleep(std::time::Duration::from_secs(args.interval.max(1)));
    }
}

fn agent(root: &Path, args: &PmAgentArgs) -> Result<Code> {
    let mut cfg = crate::project::config(root)?;
    // The turn commits and pushes the issue's branch itself; an agent with `git` could push to
    // any branch with the checkout's credentials, past the pull request and its review.
    cfg.commands
        .allow
        .retain(|c| !matches!(c.as_str(), "git" | "gh" | "curl" | "wget"));
    let repo = repo_name(args.repo.as_deref())?;
    let p = pipeline(&cfg, &repo)?;
    let role = args
        .role
        .strip_prefix("agent/")
        .unwrap_or(&args.role)
        .to_owned();
    let forge: Arc<dyn Forge> = Arc::new(client(Some(&repo))?);
    let (spec, _) = spec(root, &cfg, "pm-agent")?;
    let workflow = PmTurn {
        forge,
        pipeline: p,
        issue: args.issue,
        role,
        remote: args.remote.clone(),
    };
    let report: TurnReport = render::run(spec, workflow, render::Style::Quiet)?;
    job_summary(&format!(
        "## Agent run summary\n\n| Field | Value |\n|---|---|\n| Agent | {} |\n| Issue | #{} |\n| Outcome | {} |\n| Pull request | {} |\n| Actions taken | {} |\n",
        cell(&report.role),
        report.issue,
        cell(report.error.as_deref().unwrap_or(&report.outcome)),
        report.pull.map_or("none".to_owned(), |n| format!("#{n}")),
        cell(report.summary.lines().next().unwrap_or(""))
    ));
    if args.json {
        println!(
            "{}",
            baton_core::secrets::redact(&serde_json::to_string_pretty(&report)?)
        );
    } else if report.error.is_none() {
        println!(
            "#{} {}: {}{}{}",
            report.issue,
            report.role,
            report.outcome,
            if report.pushed { ", branch pushed" } else { "" },
            report
                .pull
                .map_or(String::new(), |n| format!(", pull request #{n}"))
        );
    }
    if let Some(e) = &report.error {
        eprintln!("error: {e}");
        return Ok(Code::Error);
    }
    Ok(Code::Ok)
}

/// The marker an imported story's issue carries.
pub fn marker(key: &str) -> String {
    format!("<!-- baton:story {key} -->")
}

/// The phase a story enters the pipeline in, by its sprint status; `None`: not imported.
fn phase_of(status: &str) -> Option<Phase> {
    match status {
        "done" => None,
        "backlog" | "drafted" => Some(Phase::NeedsStory),
        _ => Some(Phase::Ready),
    }
}

/// The client for the repository the arguments or the environment name.
fn client(repo: Option<&str>) -> Result<GitHub> {
    let repo = repo_name(repo)?;
    let Some((owner, name)) = repo.split_once('/') else {
        bail!("`{repo}` is not OWNER/NAME");
    };
    let token = std::env::var(TOKEN_ENV)
        .ok()
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| {
            anyhow::anyhow!(
                "no GitHub token: set {TOKEN_ENV} to a token for {repo} with Issues, Pull \
                 requests and Contents: read and write; Checks, Commit statuses and Metadata: \
                 read (a fine-grained token or a GitHub App's; see docs/github.md). In GitHub \
                 Actions, `${{{{ secrets.BATON_GITHUB_TOKEN }}}}`"
            )
        })?;
    baton_core::secrets::register([token.clone()]);
    let api = std::env::var(API_ENV).unwrap_or_else(|_| "https://api.github.com".to_owned());
    Ok(GitHub::new(&api, owner, name, Token::new(token))?)
}

/// A story's title: its file's first `# ` heading (without a leading `Story N.M:`), else its key.
fn title_of(key: &str, text: Option<&str>) -> String {
    let heading = text.and_then(|t| {
        t.lines()
            .find_map(|l| l.strip_prefix("# "))
            .map(|h| h.trim().to_owned())
    });
    match heading {
        Some(h) if !h.is_empty() => format!("{key}: {h}"),
        _ => key.to_owned(),
    }
}

fn import(root: &Path, args: &PmImportArgs) -> Result<Code> {
    let cfg = crate::project::config(root)?;
    crate::project::require_sprint(&cfg)?;
    let doc = baton_store::sprint_file::SprintDoc::load(&cfg.sprint_status)?;
    let mut stories = Vec::new();
    for e in &doc.sprint().entries {
        if !matches!(e.key.kind(), KeyKind::Story { .. }) {
            continue;
        }
        let status = e.raw.clone().unwrap_or_default();
        let Some(phase) = phase_of(&status) else {
            continue;
        };
        let key = e.key.to_string();
        let path = cfg.stories.join(format!("{key}.md"));
        let text = std::fs::read_to_string(&path).ok();
        stories.push((key, status, phase, text));
    }
    let gh = client(args.repo.as_deref())?;
    let rt = super::plumbing::runtime()?;
    rt.block_on(async {
        let existing = gh
            .list_all_issues()
            .await
            .context("cannot list the repository's issues")?;
        let mut labels: Vec<String> = gh
            .list_labels()
            .await
            .context("cannot list the repository's labels")?
            .into_iter()
            .map(|l| l.name)
            .collect();
        let (mut opened, mut kept) = (0, 0);
        for (key, status, phase, text) in &stories {
            if let Some(i) = existing.iter().find(|i| i.body.contains(&marker(key))) {
                println!("  kept     {key}: already #{} ({})", i.number, i.state);
                kept += 1;
                continue;
            }
            let label = phase.label();
            if args.dry_run {
                println!("  would open {key} ({status}) as {label}");
                opened += 1;
                continue;
            }
            if !labels.contains(&label) {
                gh.create_label(&NewLabel {
                    name: label.clone(),
                    color: "ededed".into(),
                    description: Some(format!("baton pipeline: {}", phase.title())),
                })
                .await
                .with_context(|| format!("cannot create the label `{label}`"))?;
                println!("  created  label {label}");
                labels.push(label.clone());
            }
            let body = format!(
                "{}\n{}",
                marker(key),
                text.clone().unwrap_or_else(|| format!(
                    "Story `{key}` has no story file yet (sprint status `{status}`)."
                ))
            );
            let issue = gh
                .create_issue(&NewIssue {
                    title: title_of(key, text.as_deref()),
                    body,
                    labels: vec![label.clone()],
                })
                .await
                .with_context(|| {
                    format!(
                        "cannot open the issue of {key}; run `baton pm import` again: it checks \
                         for the issue before opening one"
                    )
                })?;
            println!("  opened   {key} as #{} ({label})", issue.number);
            opened += 1;
        }
        println!(
            "{} {opened} issues, {kept} already there{}",
            if args.dry_run { "would open" } else { "opened" },
            if stories.is_empty() {
                "; the sprint has no story to import"
            } else {
                ""
            }
        );
        Ok(Code::Ok)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_story_enters_the_pipeline_by_its_status_and_is_titled_by_its_file() {
        assert_eq!(phase_of("backlog"), Some(Phase::NeedsStory));
        assert_eq!(phase_of("ready-for-dev"), Some(Phase::Ready));
        assert_eq!(phase_of("review"), Some(Phase::Ready));
        assert_eq!(phase_of("done"), None);
        assert_eq!(
            title_of("1-2-login", Some("# Story 1.2: Log in\n\nStatus: ready")),
            "1-2-login: Story 1.2: Log in"
        );
        assert_eq!(title_of("1-2-login", None), "1-2-login");
        assert_eq!(marker("1-2-login"), "<!-- baton:story 1-2-login -->");
    }
}
