//! `baton sprint` in the repositories people really have, sequentially and with `--parallel 2`:
//! `.baton` in the root `.gitignore` (three spellings), BMad's output folder ignored, a global
//! `excludesFile` ignoring `*.md`, `commit.gpgsign=true` without a working gpg, a fresh clone, a
//! shallow clone and a `git worktree` of a repository where baton ran, a dirty tree with and
//! without `--allow-dirty`, the project in `apps/x/` of a larger repository, a `master` branch, a
//! submodule, a CRLF sprint file, and a path with spaces and non-ASCII letters.
//!
//! Each setup is built by one function (the fixture template) for each mode and driven through
//! two stories of two epics (so `--parallel 2` runs them side by side) by the script provider,
//! with the cheap test command of `sprint.rs`. Every run checks the same things: each stage is
//! committed under its own message, no story or sprint file is lost, nothing outside the project
//! is created or committed, the user's own changes are untouched and in no commit, and `git
//! status` shows nothing of baton's state. Every git (the suite's and baton's) reads a global
//! configuration of the setup's own (`GIT_CONFIG_GLOBAL`), never the machine's.

use super::common::{BATON, utc_stamp};
use super::sprint::{K1, K3, STORIES, Script, events_and_report, run_guarded, short};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::SystemTime;

/// The two stories every setup runs: one per epic, so two run at once with `--parallel 2`.
const KEYS: [&str; 2] = [K1, K3];

/// The sprint file, relative to the project.
const SPRINT: &str = "_bmad-output/implementation-artifacts/sprint-status.yaml";

/// How a sprint is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Sequential,
    Parallel,
}

impl Mode {
    fn args(self) -> &'static [&'static str] {
        match self {
            Mode::Sequential => &[],
            Mode::Parallel => &["--parallel", "2"],
        }
    }
}

/// A repository built for one run.
struct Repo {
    /// Everything of the setup: the repository, its origin, the global git configuration.
    _tmp: tempfile::TempDir,
    /// The setup's directory (the parent of the repository, where nothing may appear).
    base: PathBuf,
    /// The repository's top.
    top: PathBuf,
    /// The project (`top`, or a directory in it).
    project: PathBuf,
    /// The global git configuration every git of the run reads.
    global: PathBuf,
    /// The user's own uncommitted changes, relative to `top`, with their content.
    own: BTreeMap<String, Vec<u8>>,
    /// Pass `--allow-dirty`.
    allow_dirty: bool,
    /// A repository this one was cloned from (never changed by the run).
    origin: Option<PathBuf>,
}

impl Repo {
    /// An empty setup directory with an empty global configuration.
    fn setup_dir() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let tmp = tempfile::tempdir().expect("a temp dir");
        let base = tmp.path().to_path_buf();
        let global = base.join("gitconfig");
        fs::write(&global, "").expect("global config");
        (tmp, base, global)
    }

    fn git(&self, dir: &Path, args: &[&str]) -> String {
        git_with(&self.global, dir, args)
    }

    /// The project's path inside the repository (`apps/x/`, or empty).
    fn prefix(&self) -> String {
        let rel = self.project.strip_prefix(&self.top).expect("inside");
        let rel = rel.to_string_lossy().replace('\\', "/");
        if rel.is_empty() {
            rel
        } else {
            format!("{rel}/")
        }
    }
}

/// Runs git in `dir` with an identity and the setup's global configuration; panics on failure.
fn git_with(global: &Path, dir: &Path, args: &[&str]) -> String {
    let out = git_command(global, dir)
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {} in {} failed: {}",
        args.join(" "),
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn git_command(global: &Path, dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "protocol.file.allow=always",
        ])
        .env("GIT_CONFIG_GLOBAL", global)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(Stdio::null());
    cmd
}

/// The script every setup replays: both stories straight through.
fn script() -> Script {
    Script::new().straight(K1).straight(K3)
}

/// Writes the project's files into `dir` (baton.toml, the sprint file, a source file, a
/// README), with the sprint file's line ends `eol`.
fn write_project(dir: &Path, eol: &str) {
    let now = utc_stamp(SystemTime::now());
    let sprint = format!(
        "# the sprint of a user's repository\ngenerated: {now}\nlast_updated: {now}\n\
         project: e2e\nproject_key: NOKEY\ntracking_system: file-system\n\
         story_location: {STORIES}\n\ndevelopment_status:\n  epic-1: backlog\n  {K1}: backlog\n  \
         epic-1-retrospective: optional\n\n  epic-2: backlog\n  {K3}: backlog\n  \
         epic-2-retrospective: optional\n"
    )
    .replace('\n', eol);
    for (rel, text) in [
        (
            "baton.toml",
            "[sprint]\ntest_command = [\"cat\", \"tests-pass\"]\n\n[agents]\nmodel = \"script/t\"\n"
                .to_owned(),
        ),
        (SPRINT, sprint),
        (
            "_bmad-output/planning-artifacts/epics.md",
            "# Epics\n\n## Epic 1\n\n## Epic 2\n".to_owned(),
        ),
        ("src/lib.txt", "the product\n".to_owned()),
        ("README.md", "# the product\n".to_owned()),
    ] {
        let path = dir.join(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(&path, text).expect("write");
    }
}

/// Writes the script where the script provider finds it (after the first commit: `.baton/` is
/// the machine's, never committed).
fn install_script(project: &Path) {
    let text = serde_json::to_string_pretty(&serde_json::json!({ "turns": script().turns }))
        .expect("JSON");
    let path = project.join(".baton/scripts/t.yaml");
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(path, text).expect("write script");
}

/// A repository at `base/name` holding the project at its top, on `branch`, with `extra`
/// files (path, text) written before the first commit.
fn plain(name: &str, branch: &str, extra: &[(&str, &str)]) -> Repo {
    let (tmp, base, global) = Repo::setup_dir();
    let top = base.join(name);
    fs::create_dir_all(&top).expect("mkdir");
    write_project(&top, "\n");
    for (rel, text) in extra {
        let path = top.join(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, text).expect("write");
    }
    git_with(&global, &top, &["init", "-q", "-b", branch]);
    git_with(&global, &top, &["add", "-A"]);
    git_with(&global, &top, &["commit", "-q", "-m", "init"]);
    install_script(&top);
    Repo {
        _tmp: tmp,
        base,
        project: top.clone(),
        top,
        global,
        own: BTreeMap::new(),
        allow_dirty: false,
        origin: None,
    }
}

/// A repository where baton ran (`baton.toml` and the sprint file committed, `.baton/` with its
/// `.gitignore`, never committed), at `base/origin`.
fn origin(base: &Path, global: &Path) -> PathBuf {
    let origin = base.join("origin");
    fs::create_dir_all(&origin).expect("mkdir");
    write_project(&origin, "\n");
    fs::create_dir_all(origin.join(".baton")).expect("mkdir");
    fs::write(origin.join(".baton/.gitignore"), "*\n").expect("write");
    git_with(global, &origin, &["init", "-q", "-b", "main"]);
    git_with(global, &origin, &["add", "-A"]);
    git_with(global, &origin, &["commit", "-q", "-m", "init"]);
    git_with(
        global,
        &origin,
        &["commit", "-q", "--allow-empty", "-m", "two"],
    );
    origin
}

/// A teammate's checkout of a repository where baton ran: `how` makes it from the origin.
fn checkout_of(how: &str) -> Repo {
    let (tmp, base, global) = Repo::setup_dir();
    let origin = origin(&base, &global);
    let top = base.join("mine");
    let url = format!("file://{}", origin.display());
    let top_s = top.to_string_lossy().into_owned();
    match how {
        "clone" => {
            git_with(&global, &base, &["clone", "-q", &url, &top_s]);
        }
        "shallow" => {
            git_with(
                &global,
                &base,
                &["clone", "-q", "--depth", "1", &url, &top_s],
            );
        }
        _ => {
            git_with(&global, &origin, &["worktree", "add", "-q", &top_s]);
        }
    }
    assert!(!top.join(".baton").exists(), "the checkout has `.baton/`");
    install_script(&top);
    Repo {
        _tmp: tmp,
        base,
        project: top.clone(),
        top,
        global,
        own: BTreeMap::new(),
        allow_dirty: false,
        origin: Some(origin),
    }
}

/// The setups, by name.
fn setup(name: &str) -> Repo {
    match name {
        "dot-baton-slash" => plain("p", "main", &[(".gitignore", ".baton/\n")]),
        "slash-dot-baton" => plain("p", "main", &[(".gitignore", "/.baton\n")]),
        "dot-baton" => plain("p", "main", &[(".gitignore", ".baton\n")]),
        "bmad-output-ignored" => plain("p", "main", &[(".gitignore", "_bmad-output/\n")]),
        "global-excludes-md" => {
            let repo = plain("p", "main", &[]);
            let excludes = repo.base.join("global-ignore");
            fs::write(&excludes, "*.md\n").expect("write");
            fs::write(
                &repo.global,
                format!("[core]\n\texcludesFile = {}\n", excludes.display()),
            )
            .expect("write");
            repo
        }
        "gpgsign" => {
            let repo = plain("p", "main", &[]);
            fs::write(
                &repo.global,
                "[commit]\n\tgpgsign = true\n[gpg]\n\tprogram = /nonexistent/gpg\n",
            )
            .expect("write");
            repo
        }
        "clone" | "shallow" | "worktree" => checkout_of(name),
        "dirty" | "dirty-allowed" => {
            let mut repo = plain("p", "main", &[]);
            fs::write(repo.top.join("README.md"), "# the product, my edit\n").expect("write");
            fs::write(repo.top.join("notes.txt"), "my notes\n").expect("write");
            repo.own = [
                ("README.md", "# the product, my edit\n"),
                ("notes.txt", "my notes\n"),
            ]
            .into_iter()
            .map(|(p, t)| (p.to_owned(), t.as_bytes().to_vec()))
            .collect();
            repo.allow_dirty = name == "dirty-allowed";
            repo
        }
        "subdirectory" => {
            let (tmp, base, global) = Repo::setup_dir();
            let top = base.join("mono");
            let project = top.join("apps/x");
            fs::create_dir_all(&project).expect("mkdir");
            write_project(&project, "\n");
            for (rel, text) in [
                ("README.md", "# the monorepo\n"),
                ("src/lib.txt", "the root's own file\n"),
                ("apps/y/src/lib.txt", "a sibling app\n"),
                ("tests-pass", "not the project's\n"),
            ] {
                let path = top.join(rel);
                fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
                fs::write(path, text).expect("write");
            }
            git_with(&global, &top, &["init", "-q", "-b", "main"]);
            git_with(&global, &top, &["add", "-A"]);
            git_with(&global, &top, &["commit", "-q", "-m", "init"]);
            install_script(&project);
            Repo {
                _tmp: tmp,
                base,
                top,
                project,
                global,
                own: BTreeMap::new(),
                allow_dirty: false,
                origin: None,
            }
        }
        "master" => plain("p", "master", &[]),
        "submodule" => {
            let (tmp, base, global) = Repo::setup_dir();
            let lib = base.join("lib");
            fs::create_dir_all(&lib).expect("mkdir");
            fs::write(lib.join("lib.txt"), "a library\n").expect("write");
            git_with(&global, &lib, &["init", "-q", "-b", "main"]);
            git_with(&global, &lib, &["add", "-A"]);
            git_with(&global, &lib, &["commit", "-q", "-m", "lib"]);
            let top = base.join("p");
            fs::create_dir_all(&top).expect("mkdir");
            write_project(&top, "\n");
            git_with(&global, &top, &["init", "-q", "-b", "main"]);
            let url = format!("file://{}", lib.display());
            git_with(
                &global,
                &top,
                &["submodule", "add", "-q", &url, "vendor/lib"],
            );
            git_with(&global, &top, &["add", "-A"]);
            git_with(&global, &top, &["commit", "-q", "-m", "init"]);
            install_script(&top);
            Repo {
                _tmp: tmp,
                base,
                project: top.clone(),
                top,
                global,
                own: BTreeMap::new(),
                allow_dirty: false,
                origin: None,
            }
        }
        "crlf" => {
            let repo = plain("p", "main", &[]);
            write_project(&repo.top, "\r\n");
            repo.git(
                &repo.top,
                &["add", "-A", "--", "_bmad-output", "baton.toml"],
            );
            repo.git(&repo.top, &["commit", "-q", "-m", "CRLF sprint file"]);
            repo
        }
        "odd-path" => plain("my prj ü", "main", &[]),
        other => panic!("no setup `{other}`"),
    }
}

/// Every file under `dir` (`.git` left out, and `skip` if given) with its bytes.
fn files_under(dir: &Path, skip: Option<&Path>) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            if e.file_name() == ".git" || Some(path.as_path()) == skip {
                continue;
            }
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                stack.push(path);
            } else {
                out.insert(path, fs::read(e.path()).unwrap_or_default());
            }
        }
    }
    out
}

/// Runs `baton sprint` in `repo` as `mode`, checks everything, and returns how it ended.
fn sprint(repo: &Repo, mode: Mode) -> (Value, Vec<Value>, super::common::Run) {
    let mut args = vec!["sprint", "--yolo", "--json"];
    args.extend_from_slice(mode.args());
    let stories = KEYS.join(",");
    args.extend(["--stories", stories.as_str()]);
    if repo.allow_dirty {
        args.push("--allow-dirty");
    }
    let mut cmd = Command::new(BATON);
    cmd.arg("-C")
        .arg(&repo.project)
        .args(&args)
        .env("TZ", "UTC")
        .env_remove("BATON_PROJECT")
        .env(
            "BATON_CONFIG_DIR",
            repo.project.join(".baton/no-user-config"),
        )
        .env("GIT_CONFIG_GLOBAL", &repo.global)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .current_dir(&repo.base)
        .stdin(Stdio::null());
    let run = run_guarded(cmd, &args);
    if run.code != Some(0) {
        return (Value::Null, Vec::new(), run);
    }
    let (events, report) = events_and_report(&run);
    (report, events, run)
}

/// Runs setup `name` in `mode` and checks what every run must hold.
fn check(name: &str, mode: Mode) {
    let repo = setup(name);
    let ctx = format!("{name}, {mode:?}");
    let initial = repo
        .git(&repo.top, &["rev-parse", "HEAD"])
        .trim()
        .to_owned();
    let origin_head = repo
        .origin
        .as_ref()
        .map(|o| repo.git(o, &["rev-parse", "HEAD"]));
    // Outside the project: the setup's directory, and the rest of the repository.
    let outside_before = files_under(&repo.base, Some(&repo.project));
    let (report, events, run) = sprint(&repo, mode);

    // The user's own changes: untouched, whatever the run did.
    for (rel, bytes) in &repo.own {
        let now = fs::read(repo.top.join(rel)).unwrap_or_default();
        assert_eq!(&now, bytes, "{ctx}: `{rel}` changed\n{}", run.describe());
    }
    if !repo.own.is_empty() && !repo.allow_dirty {
        // Refused, naming the files, with nothing done.
        assert_eq!(run.code, Some(1), "{ctx}\n{}", run.describe());
        for rel in repo.own.keys() {
            assert!(
                run.stderr.contains(rel.as_str()),
                "{ctx}\n{}",
                run.describe()
            );
        }
        assert_eq!(
            repo.git(&repo.top, &["rev-parse", "HEAD"]).trim(),
            initial,
            "{ctx}"
        );
        return;
    }
    assert_eq!(run.code, Some(0), "{ctx}\n{}", run.describe());
    assert_eq!(
        report["end"], "completed",
        "{ctx}: {report:#}\n{}",
        run.stderr
    );
    assert_eq!(report["completed"], 2, "{ctx}: {report:#}");
    let failed: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "commit_failed")
        .collect();
    assert!(failed.is_empty(), "{ctx}: {failed:?}");
    // Said once, never silently: story files git ignores, the user's changes kept.
    let notices: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "notice")
        .filter_map(|e| e["message"].as_str())
        .collect();
    let said = |what: &str| notices.iter().filter(|n| n.contains(what)).count();
    let ignores = matches!(name, "bmad-output-ignored" | "global-excludes-md");
    assert_eq!(
        said("git ignores story files"),
        usize::from(ignores),
        "{ctx}: {notices:?}"
    );
    assert_eq!(
        said("your uncommitted changes"),
        usize::from(repo.allow_dirty),
        "{ctx}: {notices:?}"
    );

    // Every stage committed under its own message, in order, story by story.
    let range = format!("{initial}..HEAD");
    let log = repo.git(&repo.top, &["log", "--reverse", "--format=%s", &range]);
    for key in KEYS {
        let prefix = format!("story({}): ", short(key));
        let own: Vec<&str> = log.lines().filter(|l| l.starts_with(&prefix)).collect();
        let expected: Vec<String> = ["create", "dev", "review passed"]
            .iter()
            .map(|w| format!("{prefix}{w}"))
            .collect();
        assert_eq!(own, expected, "{ctx}: commits of {key}\n{log}");
    }
    for subject in log.lines() {
        assert!(
            subject.starts_with("story(") || subject.starts_with("sprint: "),
            "{ctx}: a commit baton did not make a stage of: {subject}"
        );
    }
    // What was committed: inside the project, never baton's state, never the user's changes.
    let prefix = repo.prefix();
    let committed = repo.git(
        &repo.top,
        &["diff", "--name-only", "-z", "--no-renames", &range],
    );
    let committed: Vec<&str> = committed.split('\0').filter(|p| !p.is_empty()).collect();
    assert!(!committed.is_empty(), "{ctx}: nothing committed");
    for path in &committed {
        assert!(
            path.starts_with(&prefix),
            "{ctx}: `{path}` is outside the project"
        );
        assert!(
            !path.contains(".baton"),
            "{ctx}: baton's state `{path}` committed"
        );
        assert!(
            !repo.own.contains_key(*path),
            "{ctx}: the user's `{path}` committed"
        );
    }
    assert!(
        committed.contains(&format!("{prefix}src/{K1}.rs").as_str()),
        "{ctx}: {committed:?}"
    );

    // No story or sprint file lost: both done, in the project.
    for key in KEYS {
        let story = repo.project.join(format!("{STORIES}/{key}.md"));
        let text = fs::read_to_string(&story)
            .unwrap_or_else(|e| panic!("{ctx}: story file of {key} lost: {e}"));
        assert!(
            text.lines().any(|l| l.trim() == "Status: done"),
            "{ctx}: {key}:\n{text}"
        );
        assert!(
            repo.project.join(format!("src/{key}.rs")).is_file(),
            "{ctx}"
        );
    }
    let sprint_text = fs::read_to_string(repo.project.join(SPRINT)).expect("the sprint file");
    for key in KEYS {
        assert!(
            sprint_text.contains(&format!("{key}: done")),
            "{ctx}: {key} is not done in\n{sprint_text}"
        );
    }
    if name == "crlf" {
        assert!(
            sprint_text.matches("\r\n").count() == sprint_text.matches('\n').count(),
            "{ctx}: the sprint file's line ends changed:\n{sprint_text:?}"
        );
    }

    // `git status`: nothing of baton's, nothing left over; only the user's own changes.
    let status = repo.git(
        &repo.top,
        &[
            "status",
            "--porcelain",
            "-z",
            "--untracked-files=all",
            "--ignore-submodules=none",
        ],
    );
    let listed: Vec<String> = status
        .split('\0')
        .filter(|r| r.len() > 3)
        .map(|r| r[3..].to_owned())
        .collect();
    let own: Vec<String> = repo.own.keys().cloned().collect();
    assert_eq!(listed, own, "{ctx}: git status shows\n{status}");
    assert!(
        repo.project.join(".baton/.gitignore").is_file(),
        "{ctx}: `.baton/` does not ignore itself"
    );
    let worktrees = repo.git(&repo.top, &["worktree", "list", "--porcelain"]);
    assert!(
        !worktrees.contains(".baton/worktrees"),
        "{ctx}: {worktrees}"
    );

    // Nothing outside the project created or changed.
    let outside_after = files_under(&repo.base, Some(&repo.project));
    let changed: Vec<&PathBuf> = outside_after
        .iter()
        .filter(|(p, b)| outside_before.get(*p) != Some(*b))
        .map(|(p, _)| p)
        .chain(
            outside_before
                .keys()
                .filter(|p| !outside_after.contains_key(*p)),
        )
        .collect();
    // The origin of a `git worktree` holds the checkout's metadata; its files do not change.
    assert!(
        changed.is_empty(),
        "{ctx}: changed outside the project: {changed:?}"
    );
    if let (Some(o), Some(head)) = (&repo.origin, origin_head) {
        assert_eq!(
            repo.git(o, &["rev-parse", "HEAD"]),
            head,
            "{ctx}: the origin moved"
        );
    }
}

/// Runs `name` sequentially and with `--parallel 2`, side by side.
fn both(name: &str) {
    std::thread::scope(|s| {
        let seq = s.spawn(|| check(name, Mode::Sequential));
        let par = s.spawn(|| check(name, Mode::Parallel));
        let (a, b) = (seq.join(), par.join());
        if let Err(e) = a {
            std::panic::resume_unwind(e);
        }
        if let Err(e) = b {
            std::panic::resume_unwind(e);
        }
    });
}

#[test]
fn dot_baton_slash_in_the_root_gitignore() {
    both("dot-baton-slash");
}

#[test]
fn slash_dot_baton_in_the_root_gitignore() {
    both("slash-dot-baton");
}

#[test]
fn dot_baton_in_the_root_gitignore() {
    both("dot-baton");
}

#[test]
fn bmad_output_ignored() {
    both("bmad-output-ignored");
}

#[test]
fn a_global_excludes_file_ignoring_markdown() {
    both("global-excludes-md");
}

#[test]
fn commit_signing_asked_for_without_a_working_gpg() {
    both("gpgsign");
}

#[test]
fn a_fresh_clone_of_a_repository_where_baton_ran() {
    both("clone");
}

#[test]
fn a_shallow_clone_of_a_repository_where_baton_ran() {
    both("shallow");
}

#[test]
fn a_git_worktree_of_a_repository_where_baton_ran() {
    both("worktree");
}

#[test]
fn a_dirty_tree_is_refused_with_its_files_named() {
    both("dirty");
}

#[test]
fn a_dirty_tree_with_allow_dirty_keeps_the_users_changes_out_of_every_commit() {
    both("dirty-allowed");
}

#[test]
fn a_project_in_a_subdirectory_of_a_larger_repository() {
    both("subdirectory");
}

#[test]
fn a_master_branch() {
    both("master");
}

#[test]
fn a_repository_with_a_submodule() {
    both("submodule");
}

#[test]
fn a_crlf_sprint_file() {
    both("crlf");
}

#[test]
fn a_path_with_spaces_and_non_ascii_letters() {
    both("odd-path");
}

/// A developer who also rewrites the user's `README.md`, which held their own uncommitted edit.
fn script_touching_the_readme() -> Script {
    use super::sprint::{call, pass_verdict, re};
    Script::new()
        .create(K1)
        .turn(
            "developer",
            &re(&format!("Implement story `{K1}` (mode: dev)")),
            "Red first: the test, then the code.",
            vec![
                call(
                    "write_file",
                    serde_json::json!({ "path": format!("src/{K1}.rs"), "content": "// it\n" }),
                ),
                call(
                    "write_file",
                    serde_json::json!({ "path": "README.md", "content": "# rewritten\n" }),
                ),
                call(
                    "write_file",
                    serde_json::json!({ "path": "tests-pass", "content": "ok\n" }),
                ),
            ],
        )
        .turn(
            "developer",
            &re(&format!("to `src/{K1}.rs`")),
            "Implemented. All tests pass.",
            vec![],
        )
        .review(K1, 1, &pass_verdict("fine"))
}

#[test]
fn a_stage_that_changes_the_users_own_file_stops_its_story_with_the_reason() {
    for mode in [Mode::Sequential, Mode::Parallel] {
        let repo = setup("dirty-allowed");
        let text = serde_json::to_string_pretty(
            &serde_json::json!({ "turns": script_touching_the_readme().turns }),
        )
        .expect("JSON");
        fs::write(repo.project.join(".baton/scripts/t.yaml"), text).expect("script");
        let initial = repo
            .git(&repo.top, &["rev-parse", "HEAD"])
            .trim()
            .to_owned();
        let mut args = vec![
            "sprint",
            "--yolo",
            "--json",
            "--allow-dirty",
            "--stories",
            K1,
        ];
        args.extend_from_slice(mode.args());
        let mut cmd = Command::new(BATON);
        cmd.arg("-C")
            .arg(&repo.project)
            .args(&args)
            .env("TZ", "UTC")
            .env_remove("BATON_PROJECT")
            .env(
                "BATON_CONFIG_DIR",
                repo.project.join(".baton/no-user-config"),
            )
            .env("GIT_CONFIG_GLOBAL", &repo.global)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdin(Stdio::null());
        let run = run_guarded(cmd, &args).expect_code(1);
        let (events, report) = events_and_report(&run);
        let ctx = format!("{mode:?}\n{}", run.describe());
        assert_eq!(report["end"], "failed", "{ctx}");
        let story = &report["stories"][0];
        assert_eq!(story["final_status"], "needs-intervention", "{ctx}");
        let why = story["error"].as_str().unwrap_or_default();
        match mode {
            // The stage's commit is refused: it would carry the user's edit.
            Mode::Sequential => {
                assert!(
                    why.contains("story(1-1): dev") && why.contains("`README.md`"),
                    "{ctx}: {why}"
                );
                assert!(
                    events.iter().any(|e| e["event"] == "commit_failed"),
                    "{ctx}"
                );
            }
            // The story's worktree never held the user's edit; the merge into their tree is
            // refused instead, and their edit is as they left it, the branch kept.
            Mode::Parallel => {
                assert!(why.contains("README.md"), "{ctx}: {why}");
                assert_eq!(story["branch"], "baton/1-1-alpha", "{ctx}");
                assert_eq!(
                    fs::read_to_string(repo.top.join("README.md")).expect("readme"),
                    "# the product, my edit\n",
                    "{ctx}"
                );
            }
        }
        // Neither the user's edit nor the agent's rewrite of it is in any commit.
        let range = format!("{initial}..HEAD");
        let committed = repo.git(&repo.top, &["log", "--name-only", "--format=", &range]);
        assert!(!committed.contains("README.md"), "{ctx}: {committed}");
        assert!(!committed.contains("notes.txt"), "{ctx}: {committed}");
        assert_eq!(
            fs::read_to_string(repo.top.join("notes.txt")).expect("notes"),
            "my notes\n",
            "{ctx}"
        );
    }
}

/// `baton doctor --offline --json` in `repo`'s project: its problems.
fn doctor_problems(repo: &Repo) -> Vec<String> {
    let args = ["doctor", "--offline", "--json"];
    let mut cmd = Command::new(BATON);
    cmd.arg("-C")
        .arg(&repo.project)
        .args(args)
        .env(
            "BATON_CONFIG_DIR",
            repo.project.join(".baton/no-user-config"),
        )
        .env("GIT_CONFIG_GLOBAL", &repo.global)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(Stdio::null());
    let run = run_guarded(cmd, &args);
    let report: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e})\n{}", run.describe()));
    report["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .filter_map(|p| p.as_str().map(str::to_owned))
        .collect()
}

#[test]
fn doctor_reports_a_baton_directory_git_would_commit() {
    // A clone: `.baton/` made by hand (the script), without its `.gitignore`.
    let repo = setup("clone");
    let state = |problems: &[String]| {
        problems
            .iter()
            .filter(|p| p.contains("git would commit baton's state"))
            .cloned()
            .collect::<Vec<_>>()
    };
    let found = state(&doctor_problems(&repo));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("`.baton/`"), "{found:?}");
    // Doctor writes nothing: the directory still lacks its `.gitignore`.
    assert!(!repo.project.join(".baton/.gitignore").exists());
    // Any command that keeps state writes it; then nothing is reported.
    let args = ["status"];
    let mut cmd = Command::new(BATON);
    cmd.arg("-C")
        .arg(&repo.project)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", &repo.global)
        .stdin(Stdio::null());
    run_guarded(cmd, &args).expect_code(0);
    assert!(repo.project.join(".baton/.gitignore").is_file());
    assert_eq!(state(&doctor_problems(&repo)), Vec::<String>::new());
    // A file under `.baton/` that was committed is named, ignored or not.
    repo.git(&repo.project, &["add", "-f", ".baton/scripts/t.yaml"]);
    repo.git(&repo.project, &["commit", "-q", "-m", "oops"]);
    let found = state(&doctor_problems(&repo));
    assert!(
        found.len() == 1 && found[0].contains(".baton/scripts/t.yaml"),
        "{found:?}"
    );
}
