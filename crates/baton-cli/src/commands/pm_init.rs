//! `baton pm init`: writes the GitHub Actions workflows that run the pipeline
//! (`baton-core::pipeline::actions` makes their text) under the project's root, and says what
//! to set up on GitHub next. A file that is already there with other text (edited by hand, or
//! written by another version) is never replaced without `--force`; nothing is written unless
//! every file can be, so a refusal leaves the project as it was. A file that already holds
//! exactly this text is kept, so running it again changes nothing.

use crate::cli::PmInitArgs;
use crate::commands::Code;
use anyhow::{Context, Result, bail};
use baton_core::pipeline::Phase;
use baton_core::pipeline::actions::{self, Options, PROVIDER_SECRETS, TOKEN_SECRET, WorkflowFile};
use std::path::Path;

/// What happens to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    /// Not there yet.
    Write,
    /// There with exactly this text.
    Keep,
    /// There with other text, and `--force` given.
    Replace,
}

/// The options the workflows are written from: the roles and the owner of `[pipeline]`.
fn options(root: &Path, args: &PmInitArgs) -> Result<(Options, Settings)> {
    let cfg = crate::project::config(root)?;
    let settings = Settings {
        login: cfg.pipeline.login.clone(),
        owner: cfg.pipeline.owner.clone(),
        base: cfg.pipeline.base.clone(),
    };
    Ok((
        Options {
            schedule: args.schedule.clone(),
            roles: super::pm::roles_of(&cfg.pipeline)?.all(),
            owner: cfg.pipeline.owner.clone(),
            ..Options::default()
        },
        settings,
    ))
}

/// What `[pipeline]` holds of the settings the first pass needs.
struct Settings {
    login: Option<String>,
    owner: Option<String>,
    base: Option<String>,
}

/// Runs `baton pm init`.
pub fn init(root: &Path, args: &PmInitArgs) -> Result<Code> {
    let (opts, settings) = options(root, args)?;
    let files = actions::workflows(&opts)?;
    let mut plans = Vec::with_capacity(files.len());
    for file in &files {
        plans.push(plan(root, file, args.force)?);
    }
    for (file, plan) in files.iter().zip(&plans) {
        let path = root.join(file.path);
        match plan {
            Plan::Keep => println!("  kept     {} (already as written)", file.path),
            Plan::Write | Plan::Replace => {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir)
                        .with_context(|| format!("cannot create `{}`", dir.display()))?;
                }
                std::fs::write(&path, &file.text)
                    .with_context(|| format!("cannot write `{}`", path.display()))?;
                let verb = if *plan == Plan::Write {
                    "wrote"
                } else {
                    "replaced"
                };
                println!("  {verb:<8} {}", file.path);
            }
        }
    }
    if plans.iter().all(|p| *p == Plan::Keep) {
        println!("nothing changed");
    }
    if !at_repository_top(root) {
        println!(
            "note: `{}` is not the top of a git repository; GitHub runs only the workflows in \
             `.github/workflows/` at the repository's top",
            root.display()
        );
    }
    next_steps(&opts, &settings);
    Ok(Code::Ok)
}

/// What to do with `file`: refuses one that differs, unless forced.
fn plan(root: &Path, file: &WorkflowFile, force: bool) -> Result<Plan> {
    let path = root.join(file.path);
    match std::fs::read(&path) {
        Ok(old) if old == file.text.as_bytes() => Ok(Plan::Keep),
        Ok(_) if force => Ok(Plan::Replace),
        Ok(_) => bail!(
            "`{}` exists and differs from what `baton pm init` writes: nothing was written. \
             Keep your edits, or run `baton pm init --force` to replace it",
            file.path
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Plan::Write),
        Err(e) => Err(e).with_context(|| format!("cannot read `{}`", path.display())),
    }
}

/// Whether `root` holds the repository's `.git` (a directory, or a worktree's file), or is
/// in no repository at all (then there is nothing to say yet).
fn at_repository_top(root: &Path) -> bool {
    root.join(".git").exists() || !root.ancestors().skip(1).any(|d| d.join(".git").exists())
}

/// `value` as set, or what to set.
fn shown(value: Option<&str>, unset: &str) -> String {
    value.map_or_else(|| unset.to_owned(), |v| format!("now `{v}`"))
}

fn next_steps(opts: &Options, settings: &Settings) {
    let labels = opts
        .roles
        .iter()
        .map(|r| format!("agent/{r}"))
        .collect::<Vec<_>>()
        .join(", ");
    let first = Phase::Triage.label();
    let last = Phase::Done.label();
    println!(
        "next:\n\
         \x20 1. Add the repository secret {TOKEN_SECRET}: a fine-grained token (or a GitHub App's)\n\
         \x20    for this repository with Issues, Pull requests and Contents: read and write;\n\
         \x20    Checks, Commit statuses and Metadata: read. Without it the workflows use the run's\n\
         \x20    GITHUB_TOKEN, whose labels start no workflow: the specialists would run only on\n\
         \x20    labels a person adds.\n\
         \x20 2. Add the secret of the model provider your baton.toml uses ({providers}).\n\
         \x20 3. Allow auto-merge (Settings > General) and protect the default branch with your\n\
         \x20    required checks and a required review: the PM publishes a pull request, with\n\
         \x20    auto-merge, only once CI is green and the review approved.\n\
         \x20 4. Set BATON_GIT in both files to the repository you install baton from.\n\
         \x20 5. In baton.toml, under [pipeline], set what the first pass needs:\n\
         \x20    login = the account the token posts as ({login}):\n\
         \x20            `github-actions[bot]` for the run's GITHUB_TOKEN, `NAME[bot]` for a\n\
         \x20            GitHub App, your user for a personal token; the first pass stops\n\
         \x20            until it matches;\n\
         \x20    owner = who is asked to decide ({owner});\n\
         \x20    base  = the branch pull requests merge into ({base}).\n\
         \x20 6. Commit and push `.github/workflows/`. The first pass creates the labels it routes\n\
         \x20    with ({labels})\n\
         \x20    and the status labels ({first} … {last}).",
        providers = PROVIDER_SECRETS.join(", "),
        login = shown(
            settings.login.as_deref(),
            "not set: `github-actions[bot]` is assumed"
        ),
        owner = shown(settings.owner.as_deref(), "not set: the repository's owner"),
        base = shown(settings.base.as_deref(), "not set: `main`"),
    );
}
