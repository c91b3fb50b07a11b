//! The git side of a sprint: the run needs a repository, refuses a dirty tree unless asked, and
//! commits every completed stage so each step can be inspected and rolled back.

use std::path::Path;
use std::process::Stdio;
use tokio::process::Command;

/// Runs git, waiting (up to 10 s) while another git process holds the index lock: a process
/// killed mid-commit can leave its git child running for a moment after it died.
async fn git(root: &Path, args: &[&str]) -> Result<String, String> {
    let mut waited = std::time::Duration::ZERO;
    loop {
        match git_once(root, args).await {
            Err(e) if e.contains("index.lock") && waited < std::time::Duration::from_secs(10) => {
                let pause = std::time::Duration::from_millis(50);
                tokio::time::sleep(pause).await;
                waited += pause;
            }
            other => return other,
        }
    }
}

async fn git_once(root: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .env("LC_ALL", "C")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .output()
        .await
        .map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Whether `root` is inside a git work tree.
pub async fn is_repo(root: &Path) -> bool {
    git(root, &["rev-parse", "--is-inside-work-tree"])
        .await
        .is_ok_and(|o| o.trim() == "true")
}

/// Changed or untracked paths, baton's own state excluded (and temp files a killed baton
/// writer left, which the next run sweeps).
pub async fn dirty(root: &Path) -> Result<Vec<String>, String> {
    let out = git(root, &["status", "--porcelain", "--untracked-files=all"]).await?;
    Ok(out
        .lines()
        .filter_map(|l| l.get(3..))
        .map(str::to_owned)
        .filter(|p| !p.starts_with(".baton/") && !p.contains(".baton-tmp-"))
        .collect())
}

/// HEAD's subject line, if there is a commit.
pub async fn head_subject(root: &Path) -> Option<String> {
    git(root, &["log", "-1", "--format=%s"])
        .await
        .ok()
        .map(|s| s.trim().to_owned())
}

/// Commits everything (baton's `.baton/` is ignored by its own `.gitignore`) with `message`.
/// Returns the new commit, or `None` when there was nothing to commit.
pub async fn commit_all(root: &Path, message: &str) -> Result<Option<String>, String> {
    git(
        root,
        &[
            "add",
            "-A",
            "--",
            ".",
            ":(exclude).baton",
            ":(exclude,glob)**/.*.baton-tmp-*",
        ],
    )
    .await?;
    let staged = git(root, &["diff", "--cached", "--name-only"]).await?;
    if staged.trim().is_empty() {
        return Ok(None);
    }
    git(
        root,
        &[
            "-c",
            "user.name=baton",
            "-c",
            "user.email=baton@localhost",
            "commit",
            "-q",
            "--no-verify",
            "-m",
            message,
        ],
    )
    .await?;
    Ok(baton_agent::tools::git::head(root).await)
}
