//! BMad's files that git ignores, and the worktrees of stories in parallel.
//!
//! Many projects ignore BMad's output folder (`_bmad-output/` in `.gitignore`), or all markdown
//! (a global `excludesFile` with `*.md`). The sprint still needs those files: the planning
//! documents agents read, the sprint file, and each story's file, which holds its status. Git
//! never carries an ignored file: a worktree made from a commit does not have it, and a merge
//! does not bring it back. So baton carries them itself:
//!
//! - **into** a story's worktree when it is made or re-attached: the ignored files of the
//!   planning folder, the story folder and the sprint file that the worktree lacks;
//! - **back** to the project before the worktree is removed: the story's own file always (it is
//!   the story's), and any other ignored file of those folders the project lacks or the story
//!   changed while the project's copy stayed as it was carried in.
//!
//! Worked one at a time (in the project's own tree) these files are simply written in place;
//! they are never committed, since git ignores them, and [`ignored_notice`] says so once a run.

use crate::ctx::{RunCtx, StoryCtx};
use baton_agent::workspace::{Workspace, content_hash};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What was carried into a story's worktree: root-relative paths and their content then.
pub type Carried = BTreeMap<String, Option<u64>>;

/// The BMad paths whose ignored files a story needs, relative to the project root: the
/// planning folder, the story folder and the sprint file (a folder that is the root itself is
/// left out: its ignored files are build output, not BMad's).
fn bmad_paths(run: &RunCtx, sprint_file: &Path) -> Vec<String> {
    let s = &run.settings;
    let mut out = Vec::new();
    for p in [&s.planning_dir, &s.stories_dir, &sprint_file.to_path_buf()] {
        if let Ok(rel) = p.strip_prefix(&s.root) {
            let rel = rel.to_string_lossy().replace('\\', "/");
            if !rel.is_empty() && !out.contains(&rel) {
                out.push(rel);
            }
        }
    }
    out
}

/// The files under `paths` (root-relative) that git ignores in `ws`'s tree, root-relative.
async fn ignored_in(ws: &Workspace, paths: &[String]) -> Vec<String> {
    if paths.is_empty() {
        return Vec::new();
    }
    let mut args = vec![
        "ls-files",
        "--others",
        "--ignored",
        "--exclude-standard",
        "-z",
        "--",
    ];
    args.extend(paths.iter().map(String::as_str));
    ws.git()
        .run_with(&args, &["--literal-pathspecs"])
        .await
        .map(|out| {
            out.split('\0')
                .filter(|p| !p.is_empty() && !p.ends_with('/'))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn copy(from: &Path, to: &Path) -> std::io::Result<()> {
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let bytes = baton_store::bounded::read(from, 1 << 30)?;
    baton_store::atomic::replace_durable(to, &bytes)
        .map(|_| ())
        .map_err(std::io::Error::other)
}

fn sprint_file(run: &RunCtx) -> PathBuf {
    run.with_ledger(|l| Ok(l.doc().path().to_path_buf()))
        .unwrap_or_default()
}

/// Copies the ignored BMad files of the project that `tree` lacks into it; returns what was
/// carried, with its content.
pub async fn carry_in(run: &RunCtx, tree: &Workspace) -> Carried {
    let paths = bmad_paths(run, &sprint_file(run));
    let mut carried = Carried::new();
    for rel in ignored_in(run.workspace(), &paths).await {
        let to = tree.root().join(&rel);
        if to.exists() {
            continue;
        }
        let from = run.settings.root.join(&rel);
        if copy(&from, &to).is_ok() {
            carried.insert(rel, content_hash(&from));
        }
    }
    carried
}

/// Copies the story's ignored BMad files from its worktree back to the project: its own story
/// file always, any other the project lacks, and any the story changed while the project's copy
/// stayed as it was carried in (`carried`). Returns what could not be brought back because
/// the project's copy changed too, for a notice.
pub async fn carry_out(ctx: &StoryCtx, carried: &Carried) -> Vec<String> {
    let run = &ctx.run;
    let tree = ctx.workspace();
    let own = ctx.rel(&ctx.story_path());
    let paths = bmad_paths(run, &sprint_file(run));
    let sprint = run.rel(&sprint_file(run));
    let mut left = Vec::new();
    for rel in ignored_in(tree, &paths).await {
        // The orchestrator writes the project's sprint file; the worktree's is a copy.
        if rel == sprint {
            continue;
        }
        let from = tree.root().join(&rel);
        let to = run.settings.root.join(&rel);
        let bring = if rel == own || !to.exists() {
            true
        } else {
            let now = content_hash(&from);
            let main = content_hash(&to);
            match carried.get(&rel) {
                _ if now == main => false,
                Some(was) if *was == main => now != *was,
                Some(_) => {
                    left.push(rel.clone());
                    false
                }
                // Not carried in (a run killed before): the project's copy stays.
                None => false,
            }
        };
        if bring && copy(&from, &to).is_err() {
            left.push(rel);
        }
    }
    left
}

/// A notice when git ignores the story files (or the sprint file): they are written in place,
/// not committed, and (stories in parallel) carried between worktrees and the project.
pub async fn ignored_notice(run: &RunCtx) -> Option<String> {
    let s = &run.settings;
    let sprint = sprint_file(run);
    // A story file as the scrum master would write it (a tracked one is committed anyway).
    let key = s
        .stories
        .as_ref()
        .and_then(|k| k.first().cloned())
        .unwrap_or_else(|| "1-1-story".to_owned());
    let probes: Vec<(String, &str)> = vec![
        (
            run.rel(&s.stories_dir.join(format!("{key}.md"))),
            "story files",
        ),
        (run.rel(&sprint), "the sprint file"),
    ];
    let git = run.workspace().git();
    let mut ignored = Vec::new();
    let mut rule = String::new();
    for (rel, what) in &probes {
        if rel.is_empty() {
            continue;
        }
        if let Ok(out) = git.run(&["check-ignore", "-v", "--", rel]).await {
            ignored.push(*what);
            if rule.is_empty() {
                // `source:line:pattern<TAB>path`
                rule = out.split('\t').next().unwrap_or_default().to_owned();
            }
        }
    }
    if ignored.is_empty() {
        return None;
    }
    let folder = run.rel(&s.stories_dir);
    Some(format!(
        "git ignores {} (`{rule}`): baton writes them in place under `{folder}` and never commits \
         them{}",
        ignored.join(" and "),
        if s.parallel > 1 {
            "; each story's file is carried from its worktree back to the project"
        } else {
            ""
        }
    ))
}
