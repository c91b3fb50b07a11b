//! `run_git_diff`, and the git queries the runner uses to learn what an agent changed.
//!
//! Everything runs the `git` CLI through the workspace's hardened runner
//! ([`crate::workspace::git::Git`]: no shell, `LC_ALL=C`, no prompts, no optional locks, no
//! repository hooks, pagers or external diff programs). The
//! default base is the merge-base of `HEAD` with `main`, else `master`, else `origin/HEAD`, else
//! `HEAD` itself; the diff is taken against the working tree (`git diff <base>`), so uncommitted
//! work is seen, and untracked files are appended (with their content when they are text).
//! Paths are shown relative to the root (`--relative`), so a project inside a larger repository
//! sees its own files only. Files matching the sandbox's deny patterns are excluded from the diff
//! so secrets do not leak through it.

use super::{BoxFuture, Tool, ToolContext, ToolResult};
use crate::sandbox::{Access, Sandbox};
use crate::workspace::git::Git;
use baton_llm::ToolSpec;
use serde_json::{Value, json};
use std::path::Path;

/// Characters of diff returned at most; the rest is cut with a marker.
pub const DIFF_LIMIT_CHARS: usize = 50_000;
/// Bases tried, in order, when none is given.
const DEFAULT_BRANCHES: [&str; 3] = ["main", "master", "origin/HEAD"];
/// Git's empty tree (the base of a repository without commits).
const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
/// Untracked files larger than this are listed without content.
const UNTRACKED_CONTENT_MAX_BYTES: u64 = 256 * 1024;

/// `run_git_diff {base?, paths?, stat_only?}`.
pub struct RunGitDiff;

/// Runs `git -C root <args>` through the workspace's hardened runner and returns stdout, or a
/// message with git's stderr.
async fn git(root: &Path, args: &[&str]) -> Result<String, String> {
    Git::new(root, Vec::new())
        .run(args)
        .await
        .map_err(|e| e.to_string())
}

/// Fails with a clear message unless `root` is inside a git work tree.
async fn ensure_repo(root: &Path) -> Result<(), String> {
    match git(root, &["rev-parse", "--is-inside-work-tree"]).await {
        Ok(out) if out.trim() == "true" => Ok(()),
        Ok(_) => Err(format!(
            "`{}` is not inside a git work tree",
            root.display()
        )),
        Err(e) if e.contains("not installed") => Err(e),
        Err(_) => Err(format!("`{}` is not a git repository", root.display())),
    }
}

/// The current commit, if the root is a repository with one.
pub async fn head(root: &Path) -> Option<String> {
    git(root, &["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])
        .await
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// The base to diff against: `(description, commit)`.
async fn resolve_base(root: &Path, base: Option<&str>) -> Result<(String, String), String> {
    if let Some(base) = base {
        let base = base.trim();
        if base.is_empty() || base.starts_with('-') || base.contains('\0') {
            return Err(format!("`{base}` is not a valid revision"));
        }
        let spec = format!("{base}^{{commit}}");
        return match git(root, &["rev-parse", "--verify", "--quiet", &spec]).await {
            Ok(sha) => Ok((format!("`{base}`"), sha.trim().to_owned())),
            Err(_) => Err(format!("unknown revision `{base}`")),
        };
    }
    let Some(head_sha) = head(root).await else {
        return Ok((
            "the empty tree (no commits yet)".to_owned(),
            EMPTY_TREE.to_owned(),
        ));
    };
    for branch in DEFAULT_BRANCHES {
        if let Ok(sha) = git(root, &["merge-base", "HEAD", branch]).await {
            let sha = sha.trim().to_owned();
            if !sha.is_empty() {
                return Ok((format!("the merge-base of HEAD and {branch}"), sha));
            }
        }
    }
    Ok((
        "HEAD (no main, master or origin/HEAD branch)".to_owned(),
        head_sha,
    ))
}

fn split_nul(s: &str) -> impl Iterator<Item = String> + '_ {
    s.split('\0').filter(|p| !p.is_empty()).map(str::to_owned)
}

/// `root`'s path inside its repository (`app/` when the project is a subdirectory, else empty).
pub async fn prefix(root: &Path) -> Result<String, String> {
    Ok(git(root, &["rev-parse", "--show-prefix"])
        .await?
        .trim()
        .to_owned())
}

/// Files changed against HEAD plus untracked ones, relative to `root` (whose [`prefix`] is
/// given), in one git call: the cheap form of [`changed_files`] when the base is HEAD. Files
/// outside `root` are left out. Fails outside a repository.
pub async fn status_files(root: &Path, prefix: &str) -> Result<Vec<String>, String> {
    let out = git(
        root,
        &[
            "status",
            "--porcelain",
            "-z",
            "--untracked-files=all",
            "--no-renames",
            "--",
            ".",
        ],
    )
    .await?;
    // Porcelain paths are relative to the repository's top level.
    let mut files: Vec<String> = split_nul(&out)
        .filter_map(|record| {
            record
                .get(3..)
                .and_then(|p| p.strip_prefix(prefix))
                .map(str::to_owned)
        })
        .filter(|p| !p.is_empty())
        .collect();
    files.sort();
    files.dedup();
    Ok(files)
}

/// Files changed against `base` (default: the merge-base with main/master/origin/HEAD, or HEAD):
/// tracked changes, committed or not (including deletions and both sides of renames), plus
/// untracked files that are not ignored; root-relative, sorted and deduplicated.
pub async fn changed_files(root: &Path, base: Option<&str>) -> Result<Vec<String>, String> {
    ensure_repo(root).await?;
    let (_, sha) = resolve_base(root, base).await?;
    let tracked = git(
        root,
        &[
            "diff",
            "--no-ext-diff",
            "--name-only",
            "-z",
            "--no-renames",
            "--relative",
            &sha,
            "--",
        ],
    )
    .await?;
    let untracked = git(root, &["ls-files", "--others", "--exclude-standard", "-z"]).await?;
    let mut files: Vec<String> = split_nul(&tracked).chain(split_nul(&untracked)).collect();
    files.sort();
    files.dedup();
    Ok(files)
}

/// Pathspecs for git: the requested paths (or the whole root) minus the deny patterns.
fn pathspecs(sandbox: &Sandbox, paths: &[String]) -> Vec<String> {
    let mut specs: Vec<String> = if paths.is_empty() {
        vec![".".to_owned()]
    } else {
        paths.iter().map(|p| format!(":(literal){p}")).collect()
    };
    for pattern in sandbox.deny_patterns() {
        let pattern = pattern.trim_start_matches('/');
        if !pattern.starts_with("**/") {
            specs.push(format!(":(exclude,glob)**/{pattern}"));
        }
        specs.push(format!(":(exclude,glob){pattern}"));
    }
    specs
}

/// Cuts `text` after `limit` characters, with a marker.
fn truncate_chars(text: &mut String, limit: usize) {
    if let Some((cut, _)) = text.char_indices().nth(limit) {
        let rest = text[cut..].chars().count();
        text.truncate(cut);
        text.push_str(&format!(
            "\n[… diff truncated: {rest} more characters not shown; pass `paths` or \
             `stat_only: true` to narrow …]"
        ));
    }
}

impl Tool for RunGitDiff {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "run_git_diff".to_owned(),
            description: format!(
                "Show what changed in the project: `git diff` of the working tree (committed and \
                 uncommitted changes) against a base, plus untracked files. The default base is \
                 the merge-base of HEAD with main (or master). Output is cut at {DIFF_LIMIT_CHARS} \
                 characters."
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "base": {
                        "type": "string",
                        "description": "Revision to compare against (branch, tag or commit); default: merge-base with main/master."
                    },
                    "paths": {
                        "type": "array", "items": {"type": "string"},
                        "description": "Only these files or directories (relative to the project root)."
                    },
                    "stat_only": {
                        "type": "boolean",
                        "description": "Only a summary of changed files and line counts (default false)."
                    }
                },
                "required": [],
                "additionalProperties": false
            }),
        }
    }

    fn writes(&self) -> bool {
        false
    }

    fn path_args(&self) -> &'static [&'static str] {
        &["paths"]
    }

    fn call<'a>(&'a self, args: &'a Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            tokio::select! {
                r = git_diff(args, ctx) => match r {
                    Ok(r) | Err(r) => r,
                },
                () = ctx.cancel.cancelled() => ToolResult::error("cancelled"),
            }
        })
    }
}

async fn git_diff(args: &Value, ctx: &ToolContext) -> Result<ToolResult, ToolResult> {
    let base = match args.get("base") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.trim().is_empty() => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => return Err(ToolResult::error("`base` must be a string")),
    };
    let stat_only = match args.get("stat_only") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(ToolResult::error("`stat_only` must be true or false")),
    };
    let mut paths = Vec::new();
    match args.get("paths") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for item in items {
                let Some(p) = item.as_str() else {
                    return Err(ToolResult::error("`paths` must be an array of strings"));
                };
                let abs = ctx
                    .sandbox
                    .resolve(p, Access::Read)
                    .map_err(|r| ToolResult::error(r.to_string()))?;
                paths.push(ctx.sandbox.relative(&abs));
            }
        }
        Some(_) => return Err(ToolResult::error("`paths` must be an array of strings")),
    }
    let root = ctx.sandbox.root();
    ensure_repo(root).await.map_err(ToolResult::error)?;
    let (description, sha) = resolve_base(root, base).await.map_err(ToolResult::error)?;
    let specs = pathspecs(&ctx.sandbox, &paths);

    let mut diff_args: Vec<&str> = vec!["diff", "--no-color", "--no-ext-diff", "--relative"];
    if stat_only {
        diff_args.push("--stat");
    }
    diff_args.push(&sha);
    diff_args.push("--");
    diff_args.extend(specs.iter().map(String::as_str));
    let diff = git(root, &diff_args).await.map_err(ToolResult::error)?;

    let mut ls_args: Vec<&str> = vec!["ls-files", "--others", "--exclude-standard", "-z", "--"];
    ls_args.extend(specs.iter().map(String::as_str));
    let untracked = git(root, &ls_args).await.map_err(ToolResult::error)?;
    let untracked: Vec<String> = split_nul(&untracked).collect();

    let short = &sha[..sha.len().min(12)];
    let mut out = format!("diff against {description} ({short})\n");
    if diff.trim().is_empty() && untracked.is_empty() {
        out.push_str("no changes");
        return Ok(ToolResult::ok(out));
    }
    out.push_str(&diff);
    for file in &untracked {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        if stat_only || out.chars().count() > DIFF_LIMIT_CHARS {
            out.push_str(&format!("untracked: {file}\n"));
            continue;
        }
        out.push_str(&untracked_entry(&ctx.sandbox, file).await);
    }
    truncate_chars(&mut out, DIFF_LIMIT_CHARS);
    Ok(ToolResult::ok(out))
}

/// `untracked: path` followed by the file's lines as additions, when it is small text.
async fn untracked_entry(sandbox: &Sandbox, file: &str) -> String {
    let abs = match sandbox.resolve(file, Access::Read) {
        Ok(abs) => abs,
        Err(r) => return format!("untracked: {file} (content not shown: {})\n", r.reason),
    };
    let size = tokio::fs::metadata(&abs)
        .await
        .map(|m| m.len())
        .unwrap_or(0);
    if size > UNTRACKED_CONTENT_MAX_BYTES {
        return format!("untracked: {file} ({size} bytes; use read_file to see it)\n");
    }
    let Ok(bytes) = baton_store::bounded::read(&abs, UNTRACKED_CONTENT_MAX_BYTES) else {
        return format!("untracked: {file}\n");
    };
    if super::fs::looks_binary(&bytes) {
        return format!("untracked: {file} (binary, {size} bytes)\n");
    }
    let text = String::from_utf8_lossy(&bytes);
    let mut entry = format!(
        "untracked: {file} (new file, {} lines)\n",
        text.lines().count()
    );
    for line in text.lines() {
        entry.push('+');
        entry.push_str(line);
        entry.push('\n');
    }
    entry
}
