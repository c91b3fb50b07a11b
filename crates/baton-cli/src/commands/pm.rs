//! `baton pm`: the GitHub pipeline's set-up from the command line. `baton pm import` opens one
//! issue per story of the sprint file, with the story file as its body and the `status/*` label
//! of the phase the story is in (docs/github.md).
//!
//! Exactly once: each issue carries a hidden marker `<!-- baton:story KEY -->`, and every
//! issue of the repository (open or closed) is read for it before anything is opened, so a
//! rerun after a kill, a 5xx or a rate limit never opens a story twice. The client never
//! repeats a POST. The token comes from the environment (`GITHUB_TOKEN`), is sent only to the
//! API, and is never printed.

use crate::cli::{PmArgs, PmCommand, PmImportArgs};
use crate::commands::Code;
use anyhow::{Context, Result, bail};
use baton_core::key::KeyKind;
use baton_core::pipeline::Phase;
use baton_github::{Forge, GitHub, NewIssue, NewLabel, Token};
use std::path::Path;

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
        Some(PmCommand::Agent(_)) | None => bail!("not built yet"),
    }
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
    let repo = match repo {
        Some(r) => r.to_owned(),
        None => std::env::var(REPOSITORY_ENV).map_err(|_| {
            anyhow::anyhow!("no repository: give `--repo OWNER/NAME` or set {REPOSITORY_ENV}")
        })?,
    };
    let Some((owner, name)) = repo.split_once('/') else {
        bail!("`{repo}` is not OWNER/NAME");
    };
    let token = std::env::var(TOKEN_ENV)
        .ok()
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| {
            anyhow::anyhow!(
                "no GitHub token: set {TOKEN_ENV} to a token with `issues: write` on {repo} \
                 (in GitHub Actions, `${{{{ secrets.GITHUB_TOKEN }}}}`)"
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
