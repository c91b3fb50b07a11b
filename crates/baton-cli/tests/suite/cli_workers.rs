//! Coding-agent CLIs under baton's rules, with the real Claude Code (installed by `.ci/run`,
//! see baton-agent's `cli_workers` tests for `BATON_TEST_CLI_DIR` and `BATON_TEST_CLI_REQUIRED`)
//! and the scripted loopback model: baton's policy hook refuses writes to the sprint file and
//! outside the workspace inside the CLI, and a sprint story runs end to end with the developer
//! on Claude Code and the reviewer on the script provider. With the real pi: a repository's
//! `.pi/settings.json` stops the pi developer unless the trusted project allows it.

use super::common::{Project, SPRINT_REL};
use super::sprint::{K1, Script, Toml, baton, pass_verdict, sprint_json, sprint_project, statuses};
use baton_agent::definition::{self, Source};
use baton_agent::outcome::Status;
use baton_agent::runner::{Budget, Mode};
use baton_agent::sandbox::Sandbox;
use baton_agent::worker::cli::{Backend, Cli, CliSettings, CliWorker, Secret, stream_path};
use baton_agent::worker::{Job, Worker};
use baton_agent::workspace::Workspace;
use baton_test_support::MockServer;
use baton_test_support::scripted;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The installed Claude Code, or `None` after a skip notice (a failure when required).
pub(super) fn claude() -> Option<PathBuf> {
    installed(Cli::ClaudeCode)
}

/// The installed `cli`, or `None` after a skip notice (a failure when
/// `BATON_TEST_CLI_REQUIRED=1`).
pub(super) fn installed(cli: Cli) -> Option<PathBuf> {
    let dir = std::env::var_os("BATON_TEST_CLI_DIR").map(PathBuf::from);
    let program = dir
        .as_ref()
        .map(|d| d.join("node_modules/.bin").join(cli.program()))
        .filter(|p| p.is_file());
    if program.is_none() {
        let (pkg, version) = cli.package();
        let msg = format!(
            "{cli} is not installed under $BATON_TEST_CLI_DIR; install it with `npm install --prefix target/agent-clis {pkg}@{version}` (or run .ci/run) and set BATON_TEST_CLI_DIR=target/agent-clis"
        );
        assert!(
            std::env::var("BATON_TEST_CLI_REQUIRED").as_deref() != Ok("1"),
            "BATON_TEST_CLI_REQUIRED=1 but {msg}"
        );
        eprintln!("SKIPPED: {msg}");
    }
    program
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn worker(root: &Path, program: PathBuf, url: String) -> CliWorker {
    let sandbox = Arc::new(Sandbox::new(root, &Sandbox::default_deny()).unwrap());
    CliWorker {
        backend: Backend::parse("claude-code/claude-sonnet-4-5")
            .unwrap()
            .unwrap(),
        program,
        settings: CliSettings {
            base_url: Some(url),
            api_key: Some(Secret::new("sk-dummy")),
            max_retries: 0,
            stall_timeout: Duration::from_secs(60),
            ..CliSettings::default()
        },
        policy_hook: Some(format!(
            "{} -C {} guard --policy",
            quote(env!("CARGO_BIN_EXE_baton")),
            quote(&root.display().to_string())
        )),
        allow_commands: vec!["ls".into()],
        state_dir: root.join(".baton/cli"),
        workspace: Arc::new(Workspace::new(root, sandbox, Vec::new())),
        transcript_dir: Some(root.join(".baton/runs/t")),
        mode: Mode::Yolo,
        budget: Arc::new(Budget::new(Default::default())),
        price: None,
        default_max_turns: 10,
        default_timeout: Duration::from_secs(120),
        cancel: CancellationToken::new(),
        on_event: None,
        on_call: None,
    }
}

fn developer() -> baton_agent::AgentDef {
    definition::parse(
        "dev.md",
        "---\nname: developer\ndescription: d\nrole: developer\nmodel: script/t\n---\nYou develop.\n",
        Source::Bundled,
    )
    .unwrap()
}

/// The CLI run's raw stream shows baton's hook refusing the write to `target`, and nothing
/// changed.
fn assert_refused_by_the_hook(out: &baton_agent::outcome::Outcome, target: &Path) {
    let raw = std::fs::read_to_string(stream_path(out.transcript.as_ref().unwrap())).unwrap();
    assert!(
        raw.contains("PreToolUse:Write") && raw.contains("baton policy:"),
        "no refusal by baton's hook in the stream for {}:\n{raw}",
        target.display()
    );
    assert!(out.files_changed.is_empty(), "{out:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_policy_hook_refuses_the_sprint_file_and_paths_outside_the_workspace() {
    let Some(program) = claude() else { return };
    let p = Project::with_sprint("development_status:\n  epic-1: backlog\n  1-1-a: backlog\n");
    p.write(".baton/.gitignore", "*\n");
    super::sprint::git_init(&p);
    let root = std::fs::canonicalize(p.root()).unwrap();
    let outside = tempfile::tempdir().unwrap();
    let outside_file = outside.path().join("outside.txt");
    let sprint_before = p.read_sprint();
    for (target, verb) in [
        (root.join(SPRINT_REL), "READ-THEN-WRITE"),
        (outside_file.clone(), "WRITE"),
    ] {
        let server = MockServer::start().await;
        server.respond_with(scripted::responder(&root));
        let w = worker(&root, program.clone(), server.url());
        let task = format!("Please {verb}:{}", target.display());
        let out = w
            .run(&Job {
                agent: developer(),
                task,
            })
            .await;
        let raw = std::fs::read_to_string(stream_path(out.transcript.as_ref().unwrap())).unwrap();
        let shown: Vec<&str> = raw
            .lines()
            .filter(|l| !l.contains("\"subtype\":\"init\""))
            .collect();
        assert_eq!(
            out.status,
            Status::Completed,
            "{out:?}\n{}",
            shown.join("\n")
        );
        assert_refused_by_the_hook(&out, &target);
    }
    assert_eq!(
        p.read_sprint(),
        sprint_before,
        "the sprint file was written"
    );
    assert!(
        !outside_file.exists(),
        "a file outside the workspace was written"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_story_runs_end_to_end_with_the_developer_on_claude_code() {
    let Some(program) = claude() else { return };
    let server = MockServer::start().await;
    let script =
        Script::new()
            .create(K1)
            .review(K1, 1, &pass_verdict("the CLI developer's work is fine"));
    let tail = format!(
        "[agents.roles]\ndeveloper = \"claude-code/claude-sonnet-4-5\"\n\n[cli.claude-code]\nprogram = {:?}\nbase_url = {:?}\napi_key_env = \"PATH\"\nmax_retries = 0\n",
        program.display().to_string(),
        server.url()
    );
    let p = sprint_project(
        Toml {
            tail: &tail,
            ..Toml::default()
        },
        &script,
    );
    let root = std::fs::canonicalize(p.root()).unwrap();
    // The developer (the only agent on the model server) writes the file the tests look for.
    server.respond_with(scripted::responder_as(&root, "WRITE:tests-pass"));
    baton(&p, &["trust"]).expect_code(0);
    let (_, report, run) = sprint_json(&p, &["--yolo", "--stories", K1], 0);
    assert_eq!(report["end"], "completed", "{report:#}\n{}", run.describe());
    assert_eq!(statuses(&p)[K1], "done");
    assert!(p.root().join("tests-pass").exists());
    let requests = server.requests();
    assert!(!requests.is_empty(), "Claude Code never called the model");
    assert!(
        requests[0].raw_body.contains("Implement story"),
        "the developer's task did not reach Claude Code"
    );
    // The raw stream of the CLI run sits beside the native transcripts.
    let runs = p.root().join(".baton/runs");
    let streams: Vec<PathBuf> = walk(&runs)
        .into_iter()
        .filter(|f| f.to_string_lossy().ends_with(".stream.jsonl"))
        .collect();
    assert_eq!(streams.len(), 1, "{streams:?}");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = e.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn the_policy_hook_holds_bash_to_the_command_allowlist() {
    let Some(program) = claude() else { return };
    let p = Project::with_sprint("development_status:\n  epic-1: backlog\n  1-1-a: backlog\n");
    p.write(".baton/.gitignore", "*\n");
    // An untrusted project may shorten the allowlist: `ls` is off it.
    p.write("baton.toml", "[commands]\nallow = [\"cargo\"]\n");
    super::sprint::git_init(&p);
    let root = std::fs::canonicalize(p.root()).unwrap();
    let server = MockServer::start().await;
    server.respond_with(scripted::responder(&root));
    let w = worker(&root, program, server.url());
    let out = w
        .run(&Job {
            agent: developer(),
            task: "FAIL: run it".into(),
        })
        .await;
    let raw = std::fs::read_to_string(stream_path(out.transcript.as_ref().unwrap())).unwrap();
    assert!(
        raw.contains("PreToolUse:Bash") && raw.contains("`ls` is not on the command allowlist"),
        "{raw}"
    );
    let last = server.requests().last().unwrap().raw_body.clone();
    assert!(!last.contains("cannot access"), "`ls` ran");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_policy_hook_applies_the_test_first_guard() {
    let Some(program) = claude() else { return };
    let p = Project::with_sprint("development_status:\n  epic-1: backlog\n  1-1-a: backlog\n");
    p.write(".baton/.gitignore", "*\n");
    // An untrusted project may turn the guard on.
    p.write("baton.toml", "[tdd]\nmode = \"tdd\"\n");
    p.write("src/lib.rs", "pub fn a() {}\n");
    super::sprint::git_init(&p);
    let root = std::fs::canonicalize(p.root()).unwrap();
    let server = MockServer::start().await;
    server.respond_with(scripted::responder(&root));
    let w = worker(&root, program, server.url());
    let out = w
        .run(&Job {
            agent: developer(),
            task: "Please WRITE:src/feature.rs".into(),
        })
        .await;
    let raw = std::fs::read_to_string(stream_path(out.transcript.as_ref().unwrap())).unwrap();
    assert!(
        raw.contains("PreToolUse:Write") && raw.contains("test-first guard"),
        "{raw}"
    );
    assert!(
        !root.join("src/feature.rs").exists(),
        "code was written before a failing test"
    );
}

#[test]
fn doctor_reports_each_cli_without_printing_the_key() {
    let p = Project::with_sprint("development_status:\n  epic-1: backlog\n  1-1-a: backlog\n");
    p.write(".baton/.gitignore", "*\n");
    p.write("bin/fake-codex", "#!/bin/sh\necho 'codex-cli 0.169.0'\n");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            p.root().join("bin/fake-codex"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
    }
    p.write(
        "baton.toml",
        "[agents.roles]\ndeveloper = \"codex/gpt-5.5\"\n\n[cli.codex]\nprogram = \"bin/fake-codex\"\napi_key_env = \"BATON_TEST_CODEX_KEY\"\n",
    );
    super::sprint::git_init(&p);
    baton(&p, &["trust"]).expect_code(0);
    let mut cmd = super::sprint::command(&p, &["doctor", "--offline", "--json"]);
    cmd.env("BATON_TEST_CODEX_KEY", "sekret-value-123");
    let run = super::sprint::run_guarded(cmd, &["doctor"]);
    assert!(!run.stdout.contains("sekret-value-123") && !run.stderr.contains("sekret-value-123"));
    let report: serde_json::Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}\n{}", run.describe()));
    let codex = report["clis"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["name"] == "codex"))
        .unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(codex["installed"], true, "{codex:#}");
    assert_eq!(codex["version"], "codex-cli 0.169.0");
    assert_eq!(codex["credentials"], "set (from BATON_TEST_CODEX_KEY)");
    assert_eq!(codex["used_by"], serde_json::json!(["developer"]));
    let flags = codex["flags"].as_str().unwrap();
    assert!(
        flags.contains("-s workspace-write") && flags.contains("--ignore-user-config"),
        "{flags}"
    );
    // Untrusted, the same file runs nothing on the CLI and points it nowhere.
    baton(&p, &["trust", "--revoke"]).expect_code(0);
    let run = baton(&p, &["doctor", "--offline", "--json"]);
    let report: serde_json::Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}\n{}", run.describe()));
    let used: Vec<&serde_json::Value> = report["clis"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| !c["used_by"].as_array().unwrap().is_empty())
        .collect();
    assert!(used.is_empty(), "{report:#}");
}

/// The installed pi, or `None` after a skip notice (a failure when required).
fn pi() -> Option<PathBuf> {
    installed(Cli::Pi)
}

/// A trusted project with the developer on pi and a repository `.pi/settings.json` committed.
fn pi_project(program: &Path, url: &str, allow: bool) -> Project {
    let script =
        Script::new()
            .create(K1)
            .review(K1, 1, &pass_verdict("the CLI developer's work is fine"));
    let tail = format!(
        "[agents.roles]\ndeveloper = \"pi/mock/mock-model\"\n\n[cli.pi]\nprogram = {:?}\nbase_url = \"{url}/v1\"\napi = \"openai-completions\"\napi_key_env = \"PATH\"\nmax_retries = 0\n{}",
        program.display().to_string(),
        if allow {
            "project_config = \"allow\"\n"
        } else {
            ""
        }
    );
    let p = sprint_project(
        Toml {
            tail: &tail,
            ..Toml::default()
        },
        &script,
    );
    p.write(".pi/settings.json", "{\"shellCommandPrefix\": \"true\"}\n");
    super::sprint::git(p.root(), &["add", "-A"]);
    super::sprint::git(p.root(), &["commit", "-q", "-m", "pi settings"]);
    baton(&p, &["trust"]).expect_code(0);
    p
}

#[tokio::test(flavor = "multi_thread")]
async fn a_repository_pi_settings_file_stops_the_pi_developer_unless_the_project_allows_it() {
    let Some(program) = pi() else { return };
    // Refused: the developer fails before pi starts, naming the file.
    let server = MockServer::start().await;
    let p = pi_project(&program, &server.url(), false);
    let root = std::fs::canonicalize(p.root()).unwrap();
    server.respond_with(scripted::responder_as(&root, "WRITE:tests-pass"));
    let run = baton(&p, &["sprint", "--yolo", "--stories", K1, "--json"]);
    assert_ne!(statuses(&p)[K1], "done", "{}", run.describe());
    assert!(!p.root().join("tests-pass").exists());
    assert!(server.requests().is_empty(), "pi was started");
    assert!(
        run.stdout.contains(".pi/settings.json") && run.stdout.contains("project_config"),
        "{}",
        run.describe()
    );

    // Allowed by the trusted project's own configuration: the story is done.
    let server = MockServer::start().await;
    let p = pi_project(&program, &server.url(), true);
    let root = std::fs::canonicalize(p.root()).unwrap();
    server.respond_with(scripted::responder_as(&root, "WRITE:tests-pass"));
    let (_, report, run) = sprint_json(&p, &["--yolo", "--stories", K1], 0);
    assert_eq!(report["end"], "completed", "{report:#}\n{}", run.describe());
    assert_eq!(statuses(&p)[K1], "done");
    assert!(!server.requests().is_empty(), "pi never called the model");
}

/// A Claude Code developer working in the story worktree `tree` of the project at `root`, with
/// the policy hook told its tree, as `baton sprint --parallel` runs it.
fn tree_worker(root: &Path, tree: &Workspace, server: &MockServer, program: PathBuf) -> CliWorker {
    server.respond_with(scripted::responder(tree.root()));
    let mut w = worker(root, program, server.url());
    w.workspace = Arc::new(Workspace::new(
        tree.root(),
        tree.sandbox().clone(),
        Vec::new(),
    ));
    w.policy_hook = Some(format!(
        "{} -C {} guard --policy --tree {}",
        quote(env!("CARGO_BIN_EXE_baton")),
        quote(&root.display().to_string()),
        quote(&tree.root().display().to_string())
    ));
    w
}

#[tokio::test(flavor = "multi_thread")]
async fn in_a_story_worktree_the_policy_hook_refuses_the_sprint_file_baton_toml_and_baton_state() {
    let Some(program) = claude() else { return };
    let p = Project::with_sprint("development_status:\n  epic-1: backlog\n  1-1-a: backlog\n");
    p.write(".baton/.gitignore", "*\n");
    p.write("baton.toml", "[sprint]\nparallel = 2\n");
    super::sprint::git_init(&p);
    let root = std::fs::canonicalize(p.root()).unwrap();
    // The story's worktree, as `baton sprint --parallel` makes it.
    let sandbox = Arc::new(Sandbox::new(&root, &Sandbox::default_deny()).unwrap());
    let main = Workspace::new(&root, sandbox, Vec::new());
    let tree_dir = root.join(".baton/worktrees/1-1-a");
    let tree = main.worktree("baton/1-1-a", &tree_dir).await.unwrap();
    let sprint_before = p.read_sprint();
    let tree_sprint = tree_dir.join(SPRINT_REL);
    let tree_sprint_before = std::fs::read_to_string(&tree_sprint).unwrap();
    for (target, verb) in [
        (tree_sprint.clone(), "READ-THEN-WRITE"),
        // Out of the worktree, into the main tree.
        (root.join("from-the-worktree.txt"), "WRITE"),
        (tree_dir.join("baton.toml"), "READ-THEN-WRITE"),
        (tree_dir.join(".baton/state.db"), "WRITE"),
    ] {
        let server = MockServer::start().await;
        let w = tree_worker(&root, &tree, &server, program.clone());
        let task = format!("Please {verb}:{}", target.display());
        let out = w
            .run(&Job {
                agent: developer(),
                task,
            })
            .await;
        assert_refused_by_the_hook(&out, &target);
    }
    assert_eq!(
        p.read_sprint(),
        sprint_before,
        "the main sprint file was written"
    );
    assert_eq!(
        std::fs::read_to_string(&tree_sprint).unwrap(),
        tree_sprint_before,
        "the worktree's sprint file was written"
    );
    assert!(!tree_dir.join(".baton/state.db").exists());
    assert!(!root.join("from-the-worktree.txt").exists());
    // The story's own files in its worktree are the agent's to write.
    let server = MockServer::start().await;
    server.respond_with(scripted::responder(&tree_dir));
    let mut w = worker(&root, program.clone(), server.url());
    w.workspace = Arc::new(Workspace::new(
        &tree_dir,
        tree.sandbox().clone(),
        Vec::new(),
    ));
    w.policy_hook = Some(format!(
        "{} -C {} guard --policy --tree {}",
        quote(env!("CARGO_BIN_EXE_baton")),
        quote(&root.display().to_string()),
        quote(&tree_dir.display().to_string())
    ));
    let own = tree_dir.join("story-work.txt");
    let out = w
        .run(&Job {
            agent: developer(),
            task: format!("Please WRITE:{}", own.display()),
        })
        .await;
    assert!(
        own.exists(),
        "the agent could not write its own file: {out:?}"
    );
    assert_eq!(
        std::fs::read_to_string(tree_dir.join("baton.toml")).unwrap(),
        "[sprint]\nparallel = 2\n"
    );
}
