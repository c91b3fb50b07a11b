//! `baton init`: config, state directory, sprint skeleton; greenfield or brownfield detection.
//!
//! The sprint file is looked for wherever BMad could have put it (the project's BMad config,
//! then BMad's default folders); `init` creates a skeleton only when none exists anywhere, and
//! writes the locations it found into the new `baton.toml`, with the test command the project's
//! own files propose ([`baton_config::test_command`]).

use crate::cli::InitArgs;
use crate::commands::Code;
use crate::config;
use anyhow::{Context, Result};
use baton_config::test_command::{self, Proposal};
use baton_store::locate::{self, Layout};
use serde::Serialize;
use std::fs;
use std::path::Path;

const SOURCE_EXTENSIONS: &[&str] = &[
    "rs", "py", "js", "jsx", "ts", "tsx", "go", "java", "kt", "scala", "c", "h", "cc", "cpp",
    "hpp", "cs", "rb", "php", "swift", "m", "ex", "exs", "erl", "hs", "ml", "clj", "dart", "lua",
    "sh", "vue", "svelte",
];
const SKIP_DIRS: &[&str] = &[
    ".git",
    ".baton",
    "node_modules",
    "target",
    "_bmad-output",
    "_bmad",
    ".venv",
    "venv",
    "dist",
    "build",
];
const MANIFESTS: &[&str] = &["package.json", "pyproject.toml", "Cargo.toml", "go.mod"];
const SOURCE_DIRS: &[&str] = &["src", "lib", "app"];

#[derive(Debug, Serialize)]
struct Report {
    root: String,
    project: String,
    kind: &'static str,
    signals: Vec<String>,
    paths: std::collections::BTreeMap<&'static str, String>,
    created: Vec<String>,
    kept: Vec<String>,
    found: Vec<String>,
    test_command: TestCommand,
}

/// The test command: what `baton.toml` says after `init`, and what the project's files propose.
#[derive(Debug, Serialize)]
struct TestCommand {
    /// `[sprint] test_command` as `baton.toml` now sets it (`None`: not set, or not applied
    /// until the project is trusted).
    command: Option<Vec<String>>,
    /// Whether `init` wrote it, into the `baton.toml` it created.
    written: bool,
    /// What the project's files propose first.
    proposal: Option<Proposal>,
    /// The program `init` added to `[commands] allow` for it.
    allowlist_added: Option<String>,
    /// Whether the command applies only once the project is trusted (`baton trust`).
    needs_trust: bool,
    /// The other commands the project's files propose, in precedence order.
    others: Vec<Proposal>,
}

/// The `baton.toml` template with `[paths]` set to what was found: the sprint file when a
/// BMad one exists, stories and planning folders when a BMad config or sprint file told where
/// they are. A project where nothing was found gets the plain template.
fn template_with_paths(root: &Path, layout: &Layout, tests: Option<&Proposal>) -> String {
    let text = paths_template(root, layout);
    match tests {
        Some(p) => baton_config::template::with_test_command(&text, p),
        None => text,
    }
}

fn paths_template(root: &Path, layout: &Layout) -> String {
    let rel = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();
    // A JSON string is a valid TOML basic string.
    let q = |p: &Path| serde_json::to_string(&rel(p)).unwrap_or_default();
    let sprint = layout
        .sprint_status
        .as_deref()
        .filter(|_| layout.sprint_is_bmad);
    if sprint.is_none() && layout.config.is_none() {
        return config::TEMPLATE.to_owned();
    }
    let mut text = config::TEMPLATE.to_owned();
    for (key, path) in [
        ("sprint_status", sprint),
        ("stories", Some(layout.stories.as_path())),
        ("planning", Some(layout.planning.as_path())),
    ] {
        let Some(path) = path else { continue };
        let Some(start) = text.find(&format!("# {key} = ")) else {
            continue;
        };
        let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
        text.replace_range(start..end, &format!("{key} = {}", q(path)));
    }
    text.replacen(
        "[paths]\n",
        "[paths]\n# Found by `baton init` from the project's BMad layout.\n",
        1,
    )
}

/// Detects an existing code base; returns the signals that matched.
pub(crate) fn brownfield_signals(root: &Path) -> Vec<String> {
    let mut signals = Vec::new();
    for d in SOURCE_DIRS {
        if root.join(d).is_dir() {
            signals.push(format!("directory `{d}/` exists"));
        }
    }
    for m in MANIFESTS {
        if root.join(m).is_file() {
            signals.push(format!("`{m}` exists"));
        }
    }
    let n = count_sources(root, 11);
    if n > 10 {
        signals.push("more than 10 source files".to_owned());
    }
    signals
}

pub(crate) fn count_sources(dir: &Path, stop_at: usize) -> usize {
    let mut count = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(read) = fs::read_dir(&d) else { continue };
        for entry in read.flatten() {
            let Ok(ft) = entry.file_type() else { continue };
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if ft.is_dir() {
                // Hidden directories hold tools' files (`.claude/skills/` where BMad installs
                // its skills' scripts, `.github/`, `.agents/`), never the project's source.
                if !SKIP_DIRS.contains(&name.as_ref()) && !name.starts_with('.') {
                    stack.push(entry.path());
                }
            } else if ft.is_file()
                && Path::new(name.as_ref())
                    .extension()
                    .is_some_and(|e| SOURCE_EXTENSIONS.contains(&e.to_string_lossy().as_ref()))
            {
                count += 1;
                if count >= stop_at {
                    return count;
                }
            }
        }
    }
    count
}

/// Whether the planning folder holds an epics document with at least one epic BMad would plan.
fn has_epics(cfg: &crate::config::Config, root: &Path) -> bool {
    baton_store::planning::load(&cfg.planning, root)
        .ok()
        .and_then(|l| l.epics)
        .is_some_and(|e| !e.plan.epics.is_empty())
}

/// Runs `baton init`.
pub fn run(root: &Path, args: &InitArgs) -> Result<Code> {
    let mut created = Vec::new();
    let mut kept = Vec::new();
    let signals = brownfield_signals(root);
    let toml_path = root.join(config::FILE_NAME);
    let layout = locate::locate(root);
    let mut proposals = test_command::detect(root).into_iter();
    let proposal = proposals.next();
    let written = !toml_path.exists();
    let cfg = if written {
        let text = template_with_paths(root, &layout, proposal.as_ref());
        baton_store::atomic::replace_durable(&toml_path, text.as_bytes())?;
        created.push(config::FILE_NAME.to_owned());
        // What an untrusted project's new file does not get yet, the report below says itself.
        let mut cfg = config::load_quietly(root)?;
        cfg.locate_unset();
        cfg
    } else {
        kept.push(config::FILE_NAME.to_owned());
        crate::project::located(root)?.0
    };
    let state = &cfg.state_dir;
    if state.is_dir() {
        kept.push(format!("{}/", config::STATE_DIR));
    } else {
        fs::create_dir_all(state)
            .with_context(|| format!("cannot create `{}`", state.display()))?;
        created.push(format!("{}/", config::STATE_DIR));
    }
    baton_store::state_dir::ensure(state)
        .with_context(|| format!("cannot write `{}`", state.join(".gitignore").display()))?;
    crate::project::journal(&cfg)?;
    let rel = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();
    let project = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "project".to_owned());
    let mut found = layout.notes.clone();
    let foreign = layout
        .sprint_status
        .as_ref()
        .filter(|_| !layout.sprint_is_bmad);
    let elsewhere = layout
        .sprint_status
        .as_ref()
        .filter(|p| layout.sprint_is_bmad && **p != cfg.sprint_status);
    if cfg.sprint_status.exists() {
        kept.push(rel(&cfg.sprint_status));
    } else if let Some(real) = elsewhere {
        // `baton.toml` points somewhere empty while BMad's sprint file is elsewhere: a second
        // file would split the plan in two.
        found.push(format!(
            "no sprint file created: `paths.sprint_status` in `{}` names `{}`, which does not exist, but BMad's sprint file is `{}`; point the setting at it",
            config::FILE_NAME,
            rel(&cfg.sprint_status),
            rel(real)
        ));
    } else if let Some(other) = foreign {
        // Another tool's file: a second, empty sprint file would only hide it. Say so instead.
        found.push(format!(
            "no sprint file created: `{}` is not a BMad sprint file; run BMad's sprint planning, or set `paths.sprint_status` in `{}`",
            rel(other),
            config::FILE_NAME
        ));
    } else if let Some(question) = baton_store::planning::load(&cfg.planning, root)
        .ok()
        .and_then(|l| super::sprint_plan::undecided(root, &l, "baton sprint-plan"))
    {
        found.push(format!("no sprint file created: {question}"));
    } else if has_epics(&cfg, root) {
        // The epics are there: the sprint file is planned from them, as `baton sprint-plan`
        // plans it (an empty `development_status` is one BMad's validate rejects).
        super::sprint_plan::plan(root, &cfg)?;
        created.push(rel(&cfg.sprint_status));
    } else {
        // No epics yet: no sprint file. One without stories is one BMad's validate rejects, and
        // BMad's sprint planning (or `baton sprint-plan`) writes it from the epics; the finding
        // that none was found (from the search above) says where.
        if let Some(line) = found
            .iter_mut()
            .find(|f| f.starts_with("no sprint file found"))
        {
            line.push_str(
                " from the epics once they exist (`baton plan`, then `baton sprint-plan`)",
            );
        }
    }
    let report = Report {
        root: root.display().to_string(),
        project,
        kind: if signals.is_empty() {
            "greenfield"
        } else {
            "brownfield"
        },
        signals,
        paths: [
            ("sprint_status", rel(&cfg.sprint_status)),
            ("stories", rel(&cfg.stories)),
            ("planning", rel(&cfg.planning)),
        ]
        .into_iter()
        .collect(),
        created,
        kept,
        found,
        test_command: TestCommand {
            command: cfg.sprint.test_command.clone(),
            written: written && proposal.is_some(),
            allowlist_added: proposal
                .as_ref()
                .filter(|_| written)
                .and_then(|p| p.program_off_the_allowlist())
                .map(str::to_owned),
            needs_trust: !cfg.trusted
                && cfg
                    .ignored
                    .iter()
                    .any(|l| l.starts_with("[sprint] test_command")),
            proposal,
            others: proposals.collect(),
        },
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(Code::Ok);
    }
    println!("baton initialised in `{}`", report.root);
    for c in &report.created {
        println!("  created  {c}");
    }
    for k in &report.kept {
        println!("  kept     {k} (already there)");
    }
    for f in &report.found {
        println!("  found    {f}");
    }
    print_test_command(&report.test_command);
    if report.signals.is_empty() {
        println!(
            "project: greenfield (no src/, lib/, app/, manifest, nor more than 10 source files)"
        );
    } else {
        println!("project: brownfield, because:");
        for s in &report.signals {
            println!("  - {s}");
        }
    }
    if report.created.is_empty() {
        println!("nothing changed");
    } else if cfg.sprint_status.is_file() {
        println!("next: `baton status` shows the board");
    } else {
        println!(
            "next: `baton plan \"your idea\"` plans the project and writes the sprint file (or `baton sprint-plan` from epics you have)"
        );
    }
    Ok(Code::Ok)
}

/// The test command's lines of the report.
fn print_test_command(t: &TestCommand) {
    let file = config::FILE_NAME;
    match (&t.command, &t.proposal) {
        (_, Some(p)) if t.written => println!(
            "test command: `{}`, written to `{file}`: {}",
            p.display(),
            p.reason
        ),
        (Some(c), _) => println!(
            "test command: `{}` (`[sprint] test_command` in `{file}`)",
            c.join(" ")
        ),
        (None, _) if t.needs_trust => println!(
            "test command: `[sprint] test_command` in `{file}` applies once you trust the project (`baton trust`)"
        ),
        (None, Some(p)) => println!(
            "test command: none in `{file}`; {}, so add `{}` under `[sprint]`",
            p.reason,
            p.setting()
        ),
        (None, None) => println!(
            "test command: none found (no Makefile `test` target, Python tests, `Cargo.toml`, `go.mod`, .NET solution, Gradle or Maven build, nor `package.json` test script); set `[sprint] test_command` in `{file}`, or stories are reviewed without the project's tests"
        ),
    }
    if let Some(program) = &t.allowlist_added {
        let trust = if t.needs_trust {
            "; both apply once you trust the project (`baton trust`)"
        } else {
            ""
        };
        println!(
            "  `{program}` is not on the default command allowlist: `{file}` adds it to `[commands] allow`, so agents can run the tests too{trust}"
        );
    }
    for o in &t.others {
        println!("  also fits: `{}` ({})", o.display(), o.reason);
    }
}
