//! The one way baton runs git: hardened, scrubbed, bounded, and patient with locks.
//!
//! Every git process baton starts on a project goes through [`Git::run`]. It runs the `git` CLI
//! directly (no shell) in the workspace root with `LC_ALL=C`, no terminal prompts, no optional
//! locks, the provider key variables removed from its environment, and configuration an agent
//! could have planted in the repository switched off for baton's own calls: hooks
//! (`core.hooksPath=/dev/null`), fsmonitor, pagers, and automatic garbage collection or
//! maintenance (which a commit would otherwise start). Each git runs in a process group of its
//! own, so a terminal's Ctrl-C (which reaches baton, and baton decides what it means) never
//! kills a stage commit half way. A call that meets an index or HEAD lock waits while a live git
//! process may hold it; a lock left by a killed git (no git process is running in the
//! repository, `holds_repository`) is removed, once, and reported.
//!
//! A stage commit stages only what belongs to the stage ([`Git::commit_paths`]): the paths git's
//! own status lists under the work tree, named one by one (literally, through standard input),
//! so that an ignore rule, a path outside the project or a change the user made before the run
//! can never make the commit fail or ride along. Nothing is ever named by a pattern such as
//! `:(exclude).baton`: git refuses a pathspec that names an ignored path.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Longest any one git call may take.
const GIT_TIMEOUT: Duration = Duration::from_secs(120);
/// Longest a call waits for a lock held by a live git process.
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// Configuration every call runs with. Commits are baton's own: unsigned (a signing key or
/// agent the user set up for their commits is not asked, so `commit.gpgSign=true` without a
/// working gpg never fails a stage) and without the repository's hooks.
const HARDENED: [&str; 11] = [
    "--no-pager",
    "-c",
    "core.quotepath=off",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "gc.auto=0",
    "-c",
    "maintenance.auto=false",
    "-c",
    "commit.gpgSign=false",
];

/// Switches fsmonitor off, unless the user runs git's own daemon (see [`Git::fsmonitor_off`]).
const NO_FSMONITOR: [&str; 2] = ["-c", "core.fsmonitor=false"];

/// Why a git call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GitError {
    /// git is not installed.
    #[error("git is not installed (not found on PATH)")]
    NotInstalled,
    /// git could not be started.
    #[error("cannot run git: {0}")]
    Spawn(String),
    /// The call took too long.
    #[error("git {0} timed out")]
    TimedOut(String),
    /// git exited non-zero.
    #[error("git {command} failed: {stderr}")]
    Failed {
        /// The subcommand.
        command: String,
        /// What git said.
        stderr: String,
    },
    /// A lock stayed held by a live git process.
    #[error("`{0}` is held by another git process; try again when it has finished")]
    Locked(String),
    /// A stage changed files that held the user's own uncommitted changes before the run:
    /// committing them would carry the user's work, and leaving them out would split the stage.
    #[error(
        "{} changed since the run started and held your own uncommitted changes before it; \
         baton commits neither your changes nor a stage mixed with them: look at the file(s), \
         commit or set aside what is yours, then put the story back",
        list_paths(.0)
    )]
    TouchesUserChanges(Vec<String>),
}

/// `a`, `b` (and N more), backquoted, for messages.
fn list_paths(paths: &[String]) -> String {
    let shown: Vec<String> = paths.iter().take(5).map(|p| format!("`{p}`")).collect();
    let more = paths.len().saturating_sub(5);
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// Runs git in one work tree. Cheap to clone; clones share the call counter.
#[derive(Debug, Clone)]
pub struct Git {
    root: PathBuf,
    env_remove: Arc<Vec<String>>,
    calls: Arc<AtomicU64>,
    /// Held by every call that changes the repository's shared metadata (commits, branches,
    /// worktrees, fast-forwards): shared by the runners of one repository's work trees.
    meta: Arc<tokio::sync::Mutex<()>>,
    /// Whether calls switch fsmonitor off, asked once per repository.
    fsmonitor_off: Arc<tokio::sync::OnceCell<bool>>,
}

impl Git {
    /// A runner for the work tree at `root` that removes `env_remove` from git's environment.
    pub fn new(root: &Path, env_remove: Vec<String>) -> Git {
        Git {
            root: root.to_path_buf(),
            env_remove: Arc::new(env_remove),
            calls: Arc::new(AtomicU64::new(0)),
            meta: Arc::new(tokio::sync::Mutex::new(())),
            fsmonitor_off: Arc::new(tokio::sync::OnceCell::new()),
        }
    }

    /// A runner for another work tree of the same repository (a worktree at `root`): it shares
    /// this runner's call counter and its metadata lock, so that commits, branch and worktree
    /// changes of every tree go one at a time.
    pub fn for_tree(&self, root: &Path) -> Git {
        Git {
            root: root.to_path_buf(),
            env_remove: self.env_remove.clone(),
            calls: self.calls.clone(),
            meta: self.meta.clone(),
            fsmonitor_off: self.fsmonitor_off.clone(),
        }
    }

    /// Runs `git <args>` (with `-c` settings `config`) holding the repository's metadata lock.
    pub async fn run_serial(&self, args: &[&str], config: &[&str]) -> Result<String, GitError> {
        let _held = self.meta.lock().await;
        self.run_with(args, config).await
    }

    /// Holds the repository's metadata lock (commits, branches, worktrees) until dropped.
    pub async fn meta_lock(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.meta.lock().await
    }

    /// The work tree.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Variables removed from git's environment.
    pub fn env_remove(&self) -> &[String] {
        &self.env_remove
    }

    /// How many git processes this runner (and its clones) started.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Runs `git <args>` and returns its stdout.
    pub async fn run(&self, args: &[&str]) -> Result<String, GitError> {
        self.run_with(args, &[]).await
    }

    /// Runs `git <args>` with extra `-c` settings placed before the subcommand.
    pub async fn run_with(&self, args: &[&str], config: &[&str]) -> Result<String, GitError> {
        self.run_input(args, config, None).await
    }

    /// Runs `git <args>` (with `config` before the subcommand) with `input` on its standard
    /// input (`None`: none).
    pub(super) async fn run_input(
        &self,
        args: &[&str],
        config: &[&str],
        input: Option<&[u8]>,
    ) -> Result<String, GitError> {
        let fsmonitor_off = self.fsmonitor_off().await;
        let mut waited = Duration::ZERO;
        let mut cleared = false;
        loop {
            match self.once(args, config, input, fsmonitor_off).await {
                Err(GitError::Failed { stderr, command }) if stderr.contains(".lock") => {
                    let Some(lock) = lock_path(&stderr) else {
                        return Err(GitError::Failed { command, stderr });
                    };
                    if !cleared && lock_is_ours(&lock) && !git_running_in(&self.root, &lock) {
                        // Left by a killed git: nobody will release it.
                        cleared = true;
                        let _ = std::fs::remove_file(&lock);
                        continue;
                    }
                    if waited >= LOCK_WAIT {
                        return Err(GitError::Locked(lock.display().to_string()));
                    }
                    let pause = Duration::from_millis(50);
                    tokio::time::sleep(pause).await;
                    waited += pause;
                }
                other => return other,
            }
        }
    }

    /// Whether baton's calls switch fsmonitor off: always, unless the user turned on git's own
    /// file system monitor (`core.fsmonitor=true`, the built-in daemon), whose answers make a
    /// status of a large tree cheap. A hook program (`core.fsmonitor=<path>`) stays off: it is
    /// a program anyone who can write the repository's configuration could have named.
    async fn fsmonitor_off(&self) -> bool {
        *self
            .fsmonitor_off
            .get_or_init(|| async {
                let mut cmd = self.command(&[], &["config", "--type=bool", "core.fsmonitor"]);
                cmd.stdin(Stdio::null());
                match tokio::time::timeout(GIT_TIMEOUT, cmd.output()).await {
                    Ok(Ok(o)) => !(o.status.success() && o.stdout.trim_ascii() == b"true"),
                    _ => true,
                }
            })
            .await
    }

    /// `git -C root <hardened> <config> <args>` with baton's environment.
    fn command(&self, config: &[&str], args: &[&str]) -> tokio::process::Command {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let mut cmd = tokio::process::Command::new("git");
        cmd.arg("-C")
            .arg(&self.root)
            .args(HARDENED)
            .args(config)
            .args(args)
            .env("LC_ALL", "C")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_OPTIONAL_LOCKS", "0")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // Apart from the terminal's process group: Ctrl-C is baton's to act on, and a commit in
        // flight finishes before the run ends `cancelled`.
        #[cfg(unix)]
        cmd.process_group(0);
        for var in self.env_remove.iter() {
            cmd.env_remove(var);
        }
        cmd
    }

    async fn once(
        &self,
        args: &[&str],
        config: &[&str],
        input: Option<&[u8]>,
        fsmonitor_off: bool,
    ) -> Result<String, GitError> {
        let mut all_config: Vec<&str> = Vec::with_capacity(config.len() + 2);
        if fsmonitor_off {
            all_config.extend(NO_FSMONITOR);
        }
        all_config.extend_from_slice(config);
        let mut cmd = self.command(&all_config, args);
        cmd.stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        let command = args.first().copied().unwrap_or_default().to_owned();
        let output = match tokio::time::timeout(GIT_TIMEOUT, output_of(cmd, input)).await {
            Err(_) => return Err(GitError::TimedOut(command)),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(GitError::NotInstalled);
            }
            Ok(Err(e)) => return Err(GitError::Spawn(e.to_string())),
            Ok(Ok(o)) => o,
        };
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).into_owned())
        } else {
            Err(GitError::Failed {
                command,
                stderr: failure_reason(&output),
            })
        }
    }

    /// Whether the root is inside a git work tree.
    pub async fn is_repo(&self) -> bool {
        self.run(&["rev-parse", "--is-inside-work-tree"])
            .await
            .is_ok_and(|o| o.trim() == "true")
    }

    /// The current commit, if there is one.
    pub async fn head(&self) -> Option<String> {
        self.run(&["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])
            .await
            .ok()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
    }

    /// HEAD's subject line, if there is a commit.
    pub async fn head_subject(&self) -> Option<String> {
        self.run(&["log", "-1", "--format=%s"])
            .await
            .ok()
            .map(|s| s.trim().to_owned())
    }

    /// The root's path inside its repository (`app/` for a subdirectory, else empty).
    pub async fn prefix(&self) -> Result<String, GitError> {
        Ok(self
            .run(&["rev-parse", "--show-prefix"])
            .await?
            .trim()
            .to_owned())
    }

    /// HEAD (if any) and the changed or untracked files under the root (relative to it), in one
    /// call. `prefix` is the root's [`Git::prefix`]. Only the root's own directory is looked at
    /// (`-- .`), so the call grows with the project, not with the repository around it; ignored
    /// paths are git's to leave out, as its rules say.
    pub async fn status(&self, prefix: &str) -> Result<Status, GitError> {
        let out = self
            .run(&[
                "status",
                "--porcelain=v2",
                "--branch",
                "-z",
                "--untracked-files=all",
                "--no-renames",
                "--ignore-submodules=dirty",
                "--",
                ".",
            ])
            .await?;
        Ok(Status::parse(&out, prefix))
    }

    /// [`Git::status`] of `paths` only (root-relative, named literally): what git says of those
    /// files, at the cost of those files, whatever the size of the tree around them.
    pub async fn status_of(&self, prefix: &str, paths: &[String]) -> Result<Status, GitError> {
        if paths.is_empty() {
            // No pathspec would be the whole tree.
            return Ok(Status::default());
        }
        let mut args = vec![
            "status",
            "--porcelain=v2",
            "--branch",
            "-z",
            "--untracked-files=all",
            "--no-renames",
            "--ignore-submodules=dirty",
            "--",
        ];
        args.extend(paths.iter().map(String::as_str));
        let out = self.run_with(&args, &["--literal-pathspecs"]).await?;
        Ok(Status::parse(&out, prefix))
    }
}

/// baton's own state (`.baton/`) and temp files of interrupted writes: never an agent's work,
/// never committed, whatever the ignore rules say.
pub fn is_baton_state(path: &str) -> bool {
    path == ".baton" || path.starts_with(".baton/") || path.contains(".baton-tmp-")
}

/// Runs `cmd` to its end with `input` written to its standard input (then closed).
async fn output_of(
    mut cmd: tokio::process::Command,
    input: Option<&[u8]>,
) -> std::io::Result<std::process::Output> {
    let Some(input) = input else {
        return cmd.output().await;
    };
    use tokio::io::AsyncWriteExt;
    let mut child = cmd.spawn()?;
    let mut stdin = child.stdin.take();
    let write = async {
        if let Some(s) = stdin.as_mut() {
            // git may exit before it has read everything (a failure): its answer says why.
            let _ = s.write_all(input).await;
        }
        drop(stdin.take());
    };
    let (_, out) = tokio::join!(write, child.wait_with_output());
    out
}

/// What `git status --porcelain=v2 --branch` says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Status {
    /// The current commit (`None` before the first commit).
    pub head: Option<String>,
    /// Changed or untracked files, relative to the root, sorted.
    pub files: Vec<String>,
    /// Those of `files` whose change is (partly) staged in the index, or conflicted.
    pub staged: Vec<String>,
}

impl Status {
    fn parse(out: &str, prefix: &str) -> Status {
        let mut head = None;
        let mut files = Vec::new();
        let mut staged = Vec::new();
        for record in out.split('\0').filter(|r| !r.is_empty()) {
            if let Some(oid) = record.strip_prefix("# branch.oid ") {
                head = (oid != "(initial)").then(|| oid.to_owned());
                continue;
            }
            let (path, in_index) = match record.as_bytes().first() {
                // `1 XY sub mH mI mW hH hI path`: eight fields before the path; X is the index.
                Some(b'1') => (
                    record.splitn(9, ' ').nth(8),
                    record.as_bytes().get(2).is_some_and(|x| *x != b'.'),
                ),
                // `u XY sub m1 m2 m3 mW h1 h2 h3 path`: ten fields before it.
                Some(b'u') => (record.splitn(11, ' ').nth(10), true),
                Some(b'?') => (record.strip_prefix("? "), false),
                _ => (None, false),
            };
            if let Some(p) = path.and_then(|p| p.strip_prefix(prefix))
                && !p.is_empty()
            {
                files.push(p.to_owned());
                if in_index {
                    staged.push(p.to_owned());
                }
            }
        }
        files.sort();
        files.dedup();
        staged.sort();
        staged.dedup();
        Status {
            head,
            files,
            staged,
        }
    }
}

/// The lock file named in git's complaint (`Unable to create '/x/.git/index.lock': File exists`).
fn lock_path(stderr: &str) -> Option<PathBuf> {
    // Quoted pieces alternate with unquoted ones: every odd piece is quoted.
    stderr
        .split('\'')
        .skip(1)
        .step_by(2)
        .map(PathBuf::from)
        .find(|path| {
            path.file_name()
                .is_some_and(|n| n.to_string_lossy().ends_with(".lock"))
                && path.components().any(|c| c.as_os_str() == ".git")
        })
}

/// What a failed git said: its stderr, else its stdout, else how it ended (an exit status
/// without a message, or the signal that killed it), so a failure never reads as empty.
fn failure_reason(output: &std::process::Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
    if !stderr.is_empty() {
        return stderr;
    }
    let stdout = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if !stdout.is_empty() {
        return stdout;
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = output.status.signal() {
            let name = match sig {
                1 => " (SIGHUP)",
                2 => " (SIGINT)",
                3 => " (SIGQUIT)",
                9 => " (SIGKILL)",
                15 => " (SIGTERM)",
                _ => "",
            };
            return format!("killed by signal {sig}{name}, without a message");
        }
    }
    match output.status.code() {
        Some(code) => format!("exited with status {code}, without a message"),
        None => "ended without an exit status or a message".to_owned(),
    }
}

/// Whether the lock file was made by a process of this user. Only then can every process that
/// may hold it be inspected in `/proc` (another user's processes cannot be), so a lock another
/// user made is never removed, only waited for.
fn lock_is_ours(lock: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(lock), std::fs::metadata("/proc/self")) {
            (Ok(l), Ok(me)) => l.uid() == me.uid(),
            // Gone already (nothing to remove), or no `/proc` (then nothing is removed anyway).
            _ => true,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = lock;
        true
    }
}

/// One process as `/proc` shows it, for [`holds_repository`]. `None` fields could not be read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct ProcessView {
    /// Its command name (`comm`).
    comm: String,
    /// Its working directory.
    cwd: Option<PathBuf>,
    /// Its arguments.
    args: Vec<String>,
    /// `GIT_DIR` and `GIT_WORK_TREE` from its environment (readable for the user's own
    /// processes only).
    env_dirs: Vec<String>,
}

/// Whether the process `p` is a git working in one of `places` (canonical directories: the
/// workspace root and the work tree that holds the lock): its working directory is inside one,
/// or its `-C`, `--git-dir` or `--work-tree` argument or its `GIT_DIR` / `GIT_WORK_TREE` names a
/// path inside one (relative ones against its working directory, when that is known). A working
/// directory that merely contains a place (`/`, a home directory) does not count, and neither
/// does a process whose working directory could not be read unless its arguments name a place:
/// an unreadable `/proc` entry is another user's process (which cannot have made a lock that
/// [`lock_is_ours`] accepts) or one that has just exited.
fn holds_repository(p: &ProcessView, places: &[PathBuf]) -> bool {
    if p.comm != "git" && !p.comm.starts_with("git-") {
        return false;
    }
    let inside = |path: &Path| places.iter().any(|place| path.starts_with(place));
    if p.cwd.as_deref().is_some_and(inside) {
        return true;
    }
    let resolve = |raw: &str| -> Option<PathBuf> {
        let path = Path::new(raw);
        if path.is_absolute() {
            Some(lexical(path))
        } else {
            p.cwd.as_ref().map(|cwd| lexical(&cwd.join(path)))
        }
    };
    let mut named: Vec<&str> = p.env_dirs.iter().map(String::as_str).collect();
    let mut args = p.args.iter().skip(1);
    while let Some(a) = args.next() {
        if a == "-C" || a == "--git-dir" || a == "--work-tree" {
            if let Some(v) = args.next() {
                named.push(v);
            }
        } else if let Some(v) = a
            .strip_prefix("--git-dir=")
            .or_else(|| a.strip_prefix("--work-tree="))
        {
            named.push(v);
        } else if !a.starts_with('-') {
            // The subcommand: what follows are its own arguments.
            break;
        }
    }
    named.into_iter().filter_map(resolve).any(|p| inside(&p))
}

/// `path` with `.` and `..` components folded (no file system access).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The work tree holding `lock` (`/x` for `/x/.git/index.lock`).
fn work_tree_of(lock: &Path) -> Option<PathBuf> {
    lock.ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == ".git"))
        .and_then(Path::parent)
        .map(Path::to_path_buf)
}

/// Whether a git process is running in the repository of `root` that holds `lock` (Linux: read
/// from `/proc`, see [`holds_repository`]; elsewhere assume one may be, so locks are waited for,
/// never removed).
fn git_running_in(root: &Path, lock: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return true;
    };
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let mut places = vec![canonical(root)];
    if let Some(tree) = work_tree_of(lock) {
        places.push(canonical(&tree));
    }
    let me = std::process::id().to_string();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str() else { continue };
        if pid == me || !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(comm) = std::fs::read_to_string(e.path().join("comm")) else {
            continue;
        };
        let comm = comm.trim().to_owned();
        if comm != "git" && !comm.starts_with("git-") {
            continue;
        }
        let nul_separated = |file: &str| -> Vec<String> {
            std::fs::read(e.path().join(file))
                .map(|b| {
                    b.split(|&c| c == 0)
                        .filter(|s| !s.is_empty())
                        .map(|s| String::from_utf8_lossy(s).into_owned())
                        .collect()
                })
                .unwrap_or_default()
        };
        let view = ProcessView {
            comm,
            cwd: std::fs::read_link(e.path().join("cwd")).ok(),
            args: nul_separated("cmdline"),
            env_dirs: nul_separated("environ")
                .into_iter()
                .filter_map(|v| {
                    v.strip_prefix("GIT_DIR=")
                        .or_else(|| v.strip_prefix("GIT_WORK_TREE="))
                        .map(str::to_owned)
                })
                .collect(),
        };
        if holds_repository(&view, &places) {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_v2_gives_head_and_files_under_the_prefix() {
        let out = "# branch.oid 0123abcd\0# branch.head main\0\
                   1 .M N... 100644 100644 100644 aaa bbb app/src/a.rs\0\
                   ? app/new file.txt\0? other/x\0\
                   u UU N... 100644 100644 100644 100644 a b c app/conflict.rs\0";
        let s = Status::parse(out, "app/");
        assert_eq!(s.head.as_deref(), Some("0123abcd"));
        assert_eq!(s.files, ["conflict.rs", "new file.txt", "src/a.rs"]);
        // Only a change in the index (X) or a conflict is staged; a work-tree change is not.
        assert_eq!(s.staged, ["conflict.rs"]);
        let staged = Status::parse("1 M. N... 100644 100644 100644 a b x.rs\0", "");
        assert_eq!(staged.staged, ["x.rs"]);
        let fresh = Status::parse("# branch.oid (initial)\0? a\0", "");
        assert_eq!(fresh.head, None);
        assert_eq!(fresh.files, ["a"]);
    }

    #[test]
    fn lock_paths_are_read_from_git_complaints() {
        let e = "fatal: Unable to create '/p/.git/index.lock': File exists.\n\nAnother git process";
        assert_eq!(lock_path(e), Some(PathBuf::from("/p/.git/index.lock")));
        assert_eq!(lock_path("error: 'src/a.lock' is odd"), None);
        let head =
            "fatal: cannot lock ref 'HEAD': Unable to create '/p/.git/HEAD.lock': File exists.";
        assert_eq!(lock_path(head), Some(PathBuf::from("/p/.git/HEAD.lock")));
        assert_eq!(lock_path("no quotes"), None);
    }

    fn git_at(cwd: Option<&str>, args: &[&str]) -> ProcessView {
        ProcessView {
            comm: "git".into(),
            cwd: cwd.map(PathBuf::from),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env_dirs: Vec::new(),
        }
    }

    #[test]
    fn only_a_git_working_inside_the_repository_holds_it() {
        let places = [PathBuf::from("/srv/p/app"), PathBuf::from("/srv/p")];
        // Inside the work tree, or in a subdirectory of it.
        assert!(holds_repository(
            &git_at(Some("/srv/p"), &["git", "status"]),
            &places
        ));
        assert!(holds_repository(
            &git_at(Some("/srv/p/app/src"), &["git"]),
            &places
        ));
        // A working directory that merely contains the repository does not count: `/`, a
        // home directory, a sibling with a common prefix.
        for cwd in ["/", "/srv", "/home/other", "/srv/p2"] {
            assert!(
                !holds_repository(&git_at(Some(cwd), &["git", "status"]), &places),
                "{cwd}"
            );
        }
        // A git started elsewhere that names the repository.
        assert!(holds_repository(
            &git_at(Some("/"), &["git", "-C", "/srv/p", "commit"]),
            &places
        ));
        assert!(holds_repository(
            &git_at(Some("/tmp"), &["git", "--git-dir=/srv/p/.git", "add", "-A"]),
            &places
        ));
        assert!(holds_repository(
            &git_at(Some("/srv"), &["git", "-C", "p/app", "add"]),
            &places
        ));
        assert!(!holds_repository(
            &git_at(Some("/srv"), &["git", "-C", "p/../q", "add"]),
            &places
        ));
        // Arguments of the subcommand are not git's own.
        assert!(!holds_repository(
            &git_at(Some("/tmp"), &["git", "log", "-C", "/srv/p"]),
            &places
        ));
        // GIT_DIR from its environment.
        let mut env = git_at(Some("/tmp"), &["git", "commit"]);
        env.env_dirs = vec!["/srv/p/.git".into()];
        assert!(holds_repository(&env, &places));
        // An unreadable entry (another user's process, or one that just exited) counts only if
        // its arguments name the repository by an absolute path.
        assert!(!holds_repository(&git_at(None, &[]), &places));
        assert!(!holds_repository(
            &git_at(None, &["git", "-C", "p", "add"]),
            &places
        ));
        assert!(holds_repository(
            &git_at(None, &["git", "-C", "/srv/p", "add"]),
            &places
        ));
        // Programs that are not git, whatever their name starts with.
        let mut gitk = git_at(Some("/srv/p"), &["gitk"]);
        gitk.comm = "gitk".into();
        assert!(!holds_repository(&gitk, &places));
        let mut helper = git_at(Some("/srv/p"), &["git-remote-https"]);
        helper.comm = "git-remote-http".into();
        assert!(holds_repository(&helper, &places));
    }

    #[test]
    fn the_work_tree_of_a_lock_is_the_parent_of_its_git_directory() {
        assert_eq!(
            work_tree_of(Path::new("/p/.git/index.lock")),
            Some(PathBuf::from("/p"))
        );
        assert_eq!(
            work_tree_of(Path::new("/p/.git/worktrees/w/index.lock")),
            Some(PathBuf::from("/p"))
        );
        assert_eq!(work_tree_of(Path::new("/p/index.lock")), None);
    }

    #[cfg(unix)]
    #[test]
    fn a_failure_without_a_message_says_how_git_ended() {
        use std::os::unix::process::ExitStatusExt;
        let output = |raw: i32, stderr: &str, stdout: &str| std::process::Output {
            status: std::process::ExitStatus::from_raw(raw),
            stdout: stdout.as_bytes().to_vec(),
            stderr: stderr.as_bytes().to_vec(),
        };
        assert_eq!(
            failure_reason(&output(2, "", "")),
            "killed by signal 2 (SIGINT), without a message"
        );
        assert_eq!(
            failure_reason(&output(1 << 8, "", "")),
            "exited with status 1, without a message"
        );
        assert_eq!(
            failure_reason(&output(1 << 8, "", "nothing to commit")),
            "nothing to commit"
        );
        assert_eq!(
            failure_reason(&output(128 << 8, " fatal: x \n", "y")),
            "fatal: x"
        );
        let e = GitError::Failed {
            command: "commit".into(),
            stderr: failure_reason(&output(15, "", "")),
        };
        assert_eq!(
            e.to_string(),
            "git commit failed: killed by signal 15 (SIGTERM), without a message"
        );
    }

    #[tokio::test]
    async fn a_git_working_elsewhere_does_not_keep_a_stale_lock() {
        // Another git on the machine, working in `/` (an ancestor of every repository): it
        // reads its stdin until we close it.
        let mut other = std::process::Command::new("git")
            .args(["hash-object", "--stdin"])
            .current_dir("/")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let (dir, git) = repo();
        std::fs::write(dir.path().join("a.txt"), "a").unwrap();
        std::fs::write(dir.path().join(".git/index.lock"), "").unwrap();
        let committed = git.commit_all("past a stale lock").await;
        drop(other.stdin.take());
        let _ = other.wait();
        assert!(committed.unwrap().is_some());
        assert!(!dir.path().join(".git/index.lock").exists());
    }

    #[test]
    fn a_lock_made_by_this_user_is_ours() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("index.lock");
        std::fs::write(&lock, "").unwrap();
        assert!(lock_is_ours(&lock));
    }

    fn repo() -> (tempfile::TempDir, Git) {
        let dir = tempfile::tempdir().unwrap();
        let git = Git::new(dir.path(), Vec::new());
        std::process::Command::new("git")
            .args(["init", "-q", "-b", "main"])
            .current_dir(dir.path())
            .status()
            .unwrap();
        (dir, git)
    }

    #[tokio::test]
    async fn commits_report_their_id_and_nothing_to_commit_is_none() {
        let (dir, git) = repo();
        std::fs::write(dir.path().join("a.txt"), "a").unwrap();
        std::fs::create_dir_all(dir.path().join(".baton")).unwrap();
        std::fs::write(dir.path().join(".baton/state"), "x").unwrap();
        let id = git.commit_all("first").await.unwrap().unwrap();
        let head = git.head().await.unwrap();
        assert!(head.starts_with(&id), "{head} vs {id}");
        assert_eq!(git.commit_all("again").await.unwrap(), None);
        let status = git.status("").await.unwrap();
        assert_eq!(status.head.as_deref(), Some(head.as_str()));
        // baton's own state is never committed.
        assert_eq!(status.files, [".baton/state"]);
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn an_fsmonitor_hook_program_never_runs_and_signing_is_never_asked() {
        use std::os::unix::fs::PermissionsExt;
        let (dir, git) = repo();
        let marker = dir.path().join("hook-ran");
        let hook = dir.path().join("monitor.sh");
        std::fs::write(&hook, format!("#!/bin/sh\ntouch '{}'\n", marker.display())).unwrap();
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        let config = |k: &str, v: &str| {
            std::process::Command::new("git")
                .args(["config", k, v])
                .current_dir(dir.path())
                .status()
                .unwrap()
        };
        config("core.fsmonitor", &hook.display().to_string());
        // Signing asked for, with a program that cannot sign.
        config("commit.gpgsign", "true");
        config("gpg.program", "/nonexistent/gpg");
        std::fs::write(dir.path().join("a.txt"), "a").unwrap();
        git.status("").await.unwrap();
        assert!(git.commit_all("unsigned").await.unwrap().is_some());
        assert!(!marker.exists(), "the fsmonitor hook ran");
    }

    #[tokio::test]
    async fn a_stale_lock_left_by_a_killed_git_is_cleared_and_hooks_never_run() {
        let (dir, git) = repo();
        std::fs::write(dir.path().join("a.txt"), "a").unwrap();
        let hooks = dir.path().join(".git/hooks");
        std::fs::create_dir_all(&hooks).unwrap();
        let marker = dir.path().join("hook-ran");
        let hook = hooks.join("pre-commit");
        std::fs::write(
            &hook,
            format!("#!/bin/sh\ntouch '{}'\nexit 1\n", marker.display()),
        )
        .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::write(dir.path().join(".git/index.lock"), "").unwrap();
        assert!(git.commit_all("with a stale lock").await.unwrap().is_some());
        assert!(!dir.path().join(".git/index.lock").exists());
        assert!(
            !marker.exists(),
            "a repository hook ran during baton's commit"
        );
    }
}
