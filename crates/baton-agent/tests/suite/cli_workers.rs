//! Coding-agent CLIs as workers, for real: Claude Code, Codex and pi installed from npm (by
//! `.ci/run`, into `target/agent-clis`), driven against the scripted loopback model of
//! baton-test-support. Plus the bounds, checked with a stand-in program that never exits.
//!
//! `BATON_TEST_CLI_DIR` names the npm prefix holding `node_modules/.bin/{claude,codex,pi}`;
//! with `BATON_TEST_CLI_REQUIRED=1` (CI) a missing CLI fails the test, otherwise it is skipped
//! with a notice naming the install command.

use baton_agent::definition::{self, AgentDef, Source};
use baton_agent::outcome::{Outcome, Status};
use baton_agent::runner::{Budget, Mode};
use baton_agent::sandbox::Sandbox;
use baton_agent::worker::cli::{Backend, Cli, CliSettings, CliWorker, Secret, stream_path};
use baton_agent::worker::{Job, Worker};
use baton_agent::workspace::Workspace;
use baton_core::budget::BudgetLimits;
use baton_llm::Usage;
use baton_llm::pricing::{Price, cost_usd};
use baton_test_support::MockServer;
use baton_test_support::scripted::{
    self, ANTHROPIC_CACHE, ANTHROPIC_USAGE, CHAT_CACHED, CHAT_USAGE, FILE_TEXT, HELLO,
    RESPONSES_CACHED, RESPONSES_USAGE,
};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const MARKER: &str = "BATON-APPENDED-MARKER-7f3a";

/// The installed program of `cli`, or `None` (after a skip notice) when it is not installed and
/// not required.
pub fn installed(cli: Cli) -> Option<PathBuf> {
    let dir = std::env::var_os("BATON_TEST_CLI_DIR").map(PathBuf::from);
    let program = dir
        .as_ref()
        .map(|d| d.join("node_modules/.bin").join(cli.program()))
        .filter(|p| p.is_file());
    if program.is_none() {
        let (pkg, version) = cli.package();
        let msg = format!(
            "{cli} is not installed under $BATON_TEST_CLI_DIR ({}); install it with `npm install --prefix target/agent-clis {pkg}@{version}` (or run .ci/run) and set BATON_TEST_CLI_DIR=target/agent-clis",
            dir.map_or_else(|| "unset".to_owned(), |d| d.display().to_string())
        );
        assert!(
            std::env::var("BATON_TEST_CLI_REQUIRED").as_deref() != Ok("1"),
            "BATON_TEST_CLI_REQUIRED=1 but {msg}"
        );
        eprintln!("SKIPPED: {msg}");
    }
    program
}

pub fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=Baton Test",
            "-c",
            "user.email=test@example.com",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A git repository with one commit and baton's state directory ignored.
pub fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".baton")).unwrap();
    std::fs::write(dir.path().join(".baton/.gitignore"), "*\n").unwrap();
    std::fs::write(dir.path().join("README.md"), "# test\n").unwrap();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "init"]);
    dir
}

pub fn agent(role: &str) -> AgentDef {
    let text = format!(
        "---\nname: {role}\ndescription: test agent\nrole: {role}\nmodel: script/test\ntools: [read_file, write_file, run_command]\n---\nYou are a test agent. {MARKER}\n"
    );
    definition::parse("test.md", &text, Source::Bundled).unwrap()
}

pub fn worker(root: &Path, backend: &str, program: PathBuf, settings: CliSettings) -> CliWorker {
    let root = std::fs::canonicalize(root).unwrap();
    let sandbox = Arc::new(Sandbox::new(&root, &Sandbox::default_deny()).unwrap());
    CliWorker {
        backend: Backend::parse(backend).unwrap().unwrap(),
        program,
        settings,
        policy_hook: None,
        allow_commands: vec!["ls".into(), "cat".into()],
        state_dir: root.join(".baton/cli"),
        workspace: Arc::new(Workspace::new(&root, sandbox, Vec::new())),
        transcript_dir: Some(root.join(".baton/runs/test")),
        mode: Mode::Yolo,
        budget: Arc::new(Budget::new(BudgetLimits::default())),
        price: None,
        default_max_turns: 10,
        default_timeout: Duration::from_secs(120),
        cancel: CancellationToken::new(),
        on_event: None,
        on_call: None,
    }
}

pub async fn run(w: &CliWorker, role: &str, task: &str) -> Outcome {
    w.run(&Job {
        agent: agent(role),
        task: task.to_owned(),
    })
    .await
}

/// The mock model and the settings that point `cli` at it.
async fn mock(cli: Cli, root: &Path) -> (MockServer, CliSettings) {
    let server = MockServer::start().await;
    server.respond_with(scripted::responder(&std::fs::canonicalize(root).unwrap()));
    let base_url = match cli {
        Cli::ClaudeCode => server.url(),
        _ => format!("{}/v1", server.url()),
    };
    let settings = CliSettings {
        base_url: Some(base_url),
        api: (cli == Cli::Pi).then(|| "openai-completions".to_owned()),
        api_key: Some(Secret::new("sk-dummy-not-a-real-key")),
        max_retries: 0,
        stall_timeout: Duration::from_secs(20),
        grace: Duration::from_secs(2),
        ..CliSettings::default()
    };
    (server, settings)
}

fn backend(cli: Cli) -> &'static str {
    match cli {
        Cli::ClaudeCode => "claude-code/claude-sonnet-4-5",
        Cli::Codex => "codex/gpt-5.5",
        Cli::Pi => "pi/mock/mock-model",
    }
}

/// The usage the mock served on `cli`'s wire, per call, as baton counts it: uncached input,
/// cache reads and cache writes apart (Anthropic reports them so; OpenAI's input includes the
/// cached tokens).
fn per_call(cli: Cli) -> Usage {
    let (input, output, read, write) = match cli {
        Cli::ClaudeCode => (
            ANTHROPIC_USAGE.0,
            ANTHROPIC_USAGE.1,
            ANTHROPIC_CACHE.0,
            ANTHROPIC_CACHE.1,
        ),
        Cli::Codex => (
            RESPONSES_USAGE.0 - RESPONSES_CACHED,
            RESPONSES_USAGE.1,
            RESPONSES_CACHED,
            0,
        ),
        Cli::Pi => (CHAT_USAGE.0 - CHAT_CACHED, CHAT_USAGE.1, CHAT_CACHED, 0),
    };
    Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: read,
        cache_write_tokens: write,
    }
}

fn model_calls(server: &MockServer) -> u64 {
    server
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && !r.path.contains("count_tokens"))
        .count() as u64
}

async fn plain_answer(cli: Cli) {
    let Some(program) = installed(cli) else {
        return;
    };
    let dir = repo();
    let (server, settings) = mock(cli, dir.path()).await;
    let mut w = worker(dir.path(), backend(cli), program, settings);
    let price = Price::new(3.0, 15.0);
    w.price = Some(price);
    let out = run(&w, "developer", "say hi").await;
    assert_eq!(out.status, Status::Completed, "{out:?}");
    assert!(out.summary.contains(HELLO), "{out:?}");
    assert!(out.files_changed.is_empty(), "{out:?}");
    let requests = server.requests();
    assert!(
        requests.iter().any(|r| r.raw_body.contains(MARKER)),
        "the appended system prompt never reached the server"
    );
    assert!(
        !requests.iter().any(|r| r.raw_body.contains("sk-dummy")),
        "the key travels in headers only"
    );
    let calls = model_calls(&server);
    let each = per_call(cli);
    assert!(calls >= 1);
    // The CLI's own cache figures, counted once: uncached, read and written apart.
    assert_eq!(
        out.usage,
        Usage {
            input_tokens: each.input_tokens * calls,
            output_tokens: each.output_tokens * calls,
            cache_read_tokens: each.cache_read_tokens * calls,
            cache_write_tokens: each.cache_write_tokens * calls,
        },
        "{out:?}"
    );
    // Priced as baton prices a native call: each kind of token at its own rate.
    assert!(
        (out.cost_usd - cost_usd(&out.usage, &price)).abs() < 1e-12,
        "{out:?}"
    );
    // The raw stream is kept beside the transcript.
    let transcript = out.transcript.clone().unwrap();
    assert!(
        std::fs::read_to_string(stream_path(&transcript))
            .unwrap()
            .lines()
            .count()
            >= 2
    );
    let text = std::fs::read_to_string(&transcript).unwrap();
    assert!(
        !text.contains("sk-dummy-not-a-real-key"),
        "a key reached the transcript"
    );
    // The CLI's home (sessions, caches, state) is gone with the run.
    let homes: Vec<_> = std::fs::read_dir(dir.path().join(".baton/cli"))
        .unwrap()
        .collect();
    assert!(homes.is_empty(), "{homes:?}");
}

async fn write_lands(cli: Cli) {
    let Some(program) = installed(cli) else {
        return;
    };
    let dir = repo();
    let (_server, settings) = mock(cli, dir.path()).await;
    let w = worker(dir.path(), backend(cli), program, settings);
    let out = run(&w, "developer", "Please WRITE the file").await;
    assert_eq!(out.status, Status::Completed, "{out:?}");
    let written = std::fs::read_to_string(dir.path().join("mock.txt")).unwrap();
    assert_eq!(written.trim(), FILE_TEXT.trim());
    assert_eq!(out.files_changed, vec!["mock.txt".to_owned()], "{out:?}");
    assert!(out.turns >= 2, "{out:?}");
}

async fn failing_command(cli: Cli) {
    let Some(program) = installed(cli) else {
        return;
    };
    let dir = repo();
    let (server, settings) = mock(cli, dir.path()).await;
    let w = worker(dir.path(), backend(cli), program, settings);
    let out = run(&w, "developer", "FAIL: run it").await;
    // A failing command is the agent's business: the run completes, and the model was told.
    assert_eq!(out.status, Status::Completed, "{out:?}");
    assert!(out.summary.starts_with("DONE:"), "{out:?}");
    let last = server.requests().last().unwrap().raw_body.clone();
    assert!(
        last.contains("definitely-missing-dir"),
        "the failure never reached the model"
    );
}

async fn unreachable_server(cli: Cli) {
    let Some(program) = installed(cli) else {
        return;
    };
    let dir = repo();
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = match cli {
        Cli::ClaudeCode => format!("http://127.0.0.1:{port}"),
        _ => format!("http://127.0.0.1:{port}/v1"),
    };
    let settings = CliSettings {
        base_url: Some(url),
        api: (cli == Cli::Pi).then(|| "openai-completions".to_owned()),
        api_key: Some(Secret::new("dummy")),
        max_retries: 0,
        stall_timeout: Duration::from_secs(30),
        grace: Duration::from_secs(2),
        ..CliSettings::default()
    };
    let mut w = worker(dir.path(), backend(cli), program, settings);
    w.default_timeout = Duration::from_secs(60);
    let out = run(&w, "developer", "say hi").await;
    assert_eq!(out.status, Status::Failed, "{out:?}");
    let why = out.reason.unwrap();
    assert!(
        why.contains("error") || why.contains("unreachable") || why.contains("Connection"),
        "{why}"
    );
}

async fn read_only_cannot_write(cli: Cli) {
    let Some(program) = installed(cli) else {
        return;
    };
    let dir = repo();
    let (_server, settings) = mock(cli, dir.path()).await;
    let w = worker(dir.path(), backend(cli), program, settings);
    let out = run(&w, "reviewer", "Please WRITE the file").await;
    assert!(
        !dir.path().join("mock.txt").exists(),
        "a read-only role wrote: {out:?}"
    );
    assert!(out.files_changed.is_empty(), "{out:?}");
}

macro_rules! per_cli {
    ($name:ident, $cli:expr) => {
        mod $name {
            use super::*;
            #[tokio::test]
            async fn plain_answer_with_system_prompt_and_usage() {
                super::plain_answer($cli).await
            }
            #[tokio::test]
            async fn a_write_lands_in_the_workspace() {
                super::write_lands($cli).await
            }
            #[tokio::test]
            async fn a_failing_command_is_reported_to_the_model() {
                super::failing_command($cli).await
            }
            #[tokio::test]
            async fn an_unreachable_server_fails_with_the_reason() {
                super::unreachable_server($cli).await
            }
            #[tokio::test]
            async fn a_read_only_role_cannot_write() {
                super::read_only_cannot_write($cli).await
            }
        }
    };
}

per_cli!(claude_code, Cli::ClaudeCode);
per_cli!(codex, Cli::Codex);
per_cli!(pi, Cli::Pi);

// ---- a repository's own configuration for the CLI ----

const PROJECT_MARKER: &str = "REPO-CONFIG-MARKER-5d1c";

/// Writes `files` (relative path, content; `{root}` stands for the repository) and commits them.
fn plant(root: &Path, files: &[(&str, &str)]) {
    let abs = std::fs::canonicalize(root).unwrap().display().to_string();
    for (path, content) in files {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content.replace("{root}", &abs)).unwrap();
    }
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "repository config"]);
}

/// pi merges `.pi/settings.json` over baton's settings and takes `.pi/SYSTEM.md` as its system
/// prompt, with no flag to stop it: baton refuses the run before pi starts.
#[tokio::test]
async fn pi_refuses_a_repository_holding_its_project_settings() {
    let Some(program) = installed(Cli::Pi) else {
        return;
    };
    let dir = repo();
    plant(
        dir.path(),
        &[(
            ".pi/settings.json",
            r#"{"shellCommandPrefix": "touch prefix-ran"}"#,
        )],
    );
    let (server, settings) = mock(Cli::Pi, dir.path()).await;
    let w = worker(dir.path(), backend(Cli::Pi), program, settings);
    let out = run(&w, "developer", "FAIL: run it").await;
    assert_eq!(out.status, Status::Failed, "{out:?}");
    let why = out.reason.clone().unwrap();
    assert!(why.contains("`.pi/settings.json`"), "{why}");
    assert!(why.contains("project_config = \"allow\""), "{why}");
    assert_eq!(model_calls(&server), 0, "pi was started");
    assert!(!dir.path().join("prefix-ran").exists());
    // The refusal is in the transcript like any outcome.
    let text = std::fs::read_to_string(out.transcript.unwrap()).unwrap();
    assert!(text.contains(".pi/settings.json"));

    // The system prompt file alone is refused too.
    let dir = repo();
    plant(dir.path(), &[(".pi/SYSTEM.md", PROJECT_MARKER)]);
    let (server, settings) = mock(Cli::Pi, dir.path()).await;
    let w = worker(
        dir.path(),
        backend(Cli::Pi),
        installed(Cli::Pi).unwrap(),
        settings,
    );
    let out = run(&w, "developer", "say hi").await;
    assert_eq!(out.status, Status::Failed, "{out:?}");
    assert!(out.reason.unwrap().contains("`.pi/SYSTEM.md`"));
    assert_eq!(model_calls(&server), 0, "pi was started");
}

/// With the user's permission the same files are loaded, which is why they are refused by
/// default: the command prefix runs before the bash tool's command, the system prompt is the
/// repository's.
#[tokio::test]
async fn pi_loads_the_repository_settings_when_the_user_allows_them() {
    let Some(program) = installed(Cli::Pi) else {
        return;
    };
    let dir = repo();
    plant(
        dir.path(),
        &[
            (
                ".pi/settings.json",
                r#"{"shellCommandPrefix": "touch prefix-ran"}"#,
            ),
            (".pi/SYSTEM.md", PROJECT_MARKER),
        ],
    );
    let (server, mut settings) = mock(Cli::Pi, dir.path()).await;
    settings.project_config = baton_agent::worker::cli::ProjectConfig::Allow;
    let w = worker(dir.path(), backend(Cli::Pi), program, settings);
    let out = run(&w, "developer", "FAIL: run it").await;
    assert_eq!(out.status, Status::Completed, "{out:?}");
    assert!(
        dir.path().join("prefix-ran").exists(),
        "the repository's command prefix did not run"
    );
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.raw_body.contains(PROJECT_MARKER)),
        "the repository's system prompt never reached the model"
    );
}

/// The project configuration of Claude Code and Codex, and the rest of pi's, is shut out by the
/// flags baton passes: a repository full of it changes nothing (no marker reaches the model, no hook, MCP server or
/// notifier runs).
async fn repository_config_has_no_effect(cli: Cli) {
    let Some(program) = installed(cli) else {
        return;
    };
    let dir = repo();
    let hook = r#"{"type": "command", "command": "touch {root}/hook-ran"}"#;
    let claude_settings = format!(
        r#"{{"hooks": {{"SessionStart": [{{"hooks": [{hook}]}}], "UserPromptSubmit": [{{"hooks": [{hook}]}}], "PreToolUse": [{{"matcher": "*", "hooks": [{hook}]}}]}}, "env": {{"X": "{PROJECT_MARKER}"}}, "permissions": {{"allow": ["Bash(*)"]}}}}"#
    );
    let skill =
        format!("---\nname: marker\ndescription: {PROJECT_MARKER}\n---\n{PROJECT_MARKER}\n");
    let files: Vec<(&str, String)> = match cli {
        Cli::ClaudeCode => vec![
            ("CLAUDE.md", PROJECT_MARKER.to_owned()),
            ("CLAUDE.local.md", PROJECT_MARKER.to_owned()),
            (".claude/settings.json", claude_settings.clone()),
            (".claude/settings.local.json", claude_settings),
            (
                ".mcp.json",
                r#"{"mcpServers": {"m": {"command": "touch", "args": ["{root}/mcp-ran"]}}}"#
                    .to_owned(),
            ),
            (".claude/agents/marker.md", skill.clone()),
            (".claude/commands/marker.md", skill.clone()),
            (".claude/skills/marker/SKILL.md", skill),
        ],
        Cli::Codex => vec![
            ("AGENTS.md", PROJECT_MARKER.to_owned()),
            ("instructions.md", PROJECT_MARKER.to_owned()),
            (
                ".codex/config.toml",
                format!(
                    "model_instructions_file = \"{{root}}/instructions.md\"\nnotify = [\"touch\", \"{{root}}/notify-ran\"]\nsandbox_mode = \"danger-full-access\"\n[mcp_servers.m]\ncommand = \"touch\"\nargs = [\"{{root}}/mcp-ran\"]\n[shell_environment_policy]\nset = {{ X = \"{PROJECT_MARKER}\" }}\n"
                ),
            ),
            (
                ".codex/hooks.json",
                format!(r#"{{"hooks": {{"SessionStart": [{{"hooks": [{hook}]}}]}}}}"#),
            ),
            (".agents/skills/marker/SKILL.md", skill.clone()),
            (".codex/skills/marker/SKILL.md", skill),
        ],
        // What flags switch off; `.pi/settings.json` and `.pi/SYSTEM.md` are refused (above).
        Cli::Pi => vec![
            ("AGENTS.md", PROJECT_MARKER.to_owned()),
            ("CLAUDE.md", PROJECT_MARKER.to_owned()),
            (".pi/APPEND_SYSTEM.md", PROJECT_MARKER.to_owned()),
            (
                ".pi/extensions/mark.ts",
                "import { writeFileSync } from \"node:fs\";\nwriteFileSync(\"{root}/hook-ran\", \"\");\nexport default function () {}\n".to_owned(),
            ),
            (".pi/skills/marker/SKILL.md", skill.clone()),
            (".pi/prompts/marker.md", skill),
        ],
    };
    let files: Vec<(&str, &str)> = files.iter().map(|(p, c)| (*p, c.as_str())).collect();
    plant(dir.path(), &files);
    let (server, settings) = mock(cli, dir.path()).await;
    let w = worker(dir.path(), backend(cli), program, settings);
    let out = run(&w, "developer", "FAIL: run it").await;
    assert_eq!(out.status, Status::Completed, "{out:?}");
    let requests = server.requests();
    assert!(!requests.is_empty());
    let leaked = requests.iter().find_map(|r| {
        let b = &r.raw_body;
        let i = b.find(PROJECT_MARKER)?;
        let before: Vec<char> = b[..i].chars().rev().take(300).collect();
        Some(before.into_iter().rev().collect::<String>())
    });
    assert!(
        leaked.is_none(),
        "the repository's configuration reached the model, after: {leaked:?}"
    );
    for ran in ["hook-ran", "mcp-ran", "notify-ran"] {
        assert!(
            !dir.path().join(ran).exists(),
            "the repository's configuration ran `{ran}`"
        );
    }
}

#[tokio::test]
async fn claude_code_ignores_the_repository_configuration() {
    repository_config_has_no_effect(Cli::ClaudeCode).await
}

#[tokio::test]
async fn codex_ignores_the_repository_configuration() {
    repository_config_has_no_effect(Cli::Codex).await
}

#[tokio::test]
async fn pi_ignores_the_rest_of_the_repository_configuration() {
    repository_config_has_no_effect(Cli::Pi).await
}

// ---- bounds, with a stand-in program ----

/// A program that prints `lines`, starts a grandchild that records its pid, and never exits.
fn stand_in(dir: &Path, lines: &[&str]) -> PathBuf {
    let path = dir.join("fake-cli.sh");
    let mut script = String::from("#!/bin/sh\n");
    for l in lines {
        script.push_str(&format!("printf '%s\\n' '{l}'\n"));
    }
    script.push_str(&format!(
        "sleep 300 & echo $! > '{}'\nwhile true; do sleep 1; done\n",
        dir.join("grandchild.pid").display()
    ));
    std::fs::write(&path, script).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    path
}

fn gone(pid: &str) -> bool {
    // A killed process disappears, or stays a zombie until its new parent reaps it.
    for _ in 0..100 {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(stat)
                if stat
                    .rsplit(')')
                    .next()
                    .is_some_and(|s| s.trim_start().starts_with('Z')) =>
            {
                return true;
            }
            Ok(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    false
}

const INIT: &str = r#"{"type":"system","subtype":"init","session_id":"s"}"#;
const TEXT: &str = r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"working on it"}],"usage":{"input_tokens":5000,"output_tokens":1}}}"#;

#[tokio::test]
async fn a_cli_that_never_exits_is_killed_at_the_timeout_with_its_children() {
    let dir = repo();
    let bin = tempfile::tempdir().unwrap();
    let program = stand_in(bin.path(), &[INIT, TEXT]);
    let mut w = worker(
        dir.path(),
        "claude-code/x",
        program,
        CliSettings {
            grace: Duration::from_millis(300),
            ..CliSettings::default()
        },
    );
    w.default_timeout = Duration::from_secs(2);
    let out = run(&w, "developer", "work forever").await;
    assert_eq!(out.status, Status::TimedOut, "{out:?}");
    assert!(
        out.reason.as_deref().unwrap().contains("within 2 s"),
        "{out:?}"
    );
    assert_eq!(out.summary, "working on it", "the partial answer is kept");
    let pid = std::fs::read_to_string(bin.path().join("grandchild.pid")).unwrap();
    assert!(gone(pid.trim()), "the grandchild {pid} survived");
    let raw = std::fs::read_to_string(stream_path(out.transcript.as_ref().unwrap())).unwrap();
    assert!(
        raw.contains("working on it"),
        "the partial stream was not kept"
    );
}

#[tokio::test]
async fn silence_past_the_stall_timeout_ends_the_run() {
    let dir = repo();
    let bin = tempfile::tempdir().unwrap();
    let program = stand_in(bin.path(), &[INIT]);
    let w = worker(
        dir.path(),
        "claude-code/x",
        program,
        CliSettings {
            stall_timeout: Duration::from_secs(1),
            grace: Duration::from_millis(300),
            ..CliSettings::default()
        },
    );
    let out = run(&w, "developer", "stall").await;
    assert_eq!(out.status, Status::TimedOut, "{out:?}");
    assert!(out.reason.unwrap().contains("stall timeout"));
}

#[tokio::test]
async fn turns_past_the_limit_stop_the_run() {
    let dir = repo();
    let bin = tempfile::tempdir().unwrap();
    let turns: Vec<String> = (0..5)
        .map(|n| format!(r#"{{"type":"assistant","message":{{"id":"m{n}","content":[{{"type":"tool_use","id":"t{n}","name":"Bash","input":{{}}}}]}}}}"#))
        .collect();
    let lines: Vec<&str> = turns.iter().map(String::as_str).collect();
    let program = stand_in(bin.path(), &lines);
    let mut w = worker(
        dir.path(),
        "claude-code/x",
        program,
        CliSettings {
            grace: Duration::from_millis(300),
            ..CliSettings::default()
        },
    );
    w.default_max_turns = 3;
    let out = run(&w, "developer", "loop").await;
    assert_eq!(out.status, Status::Failed, "{out:?}");
    assert!(out.reason.unwrap().contains("max_turns (3)"));
}

#[tokio::test]
async fn crossing_the_hard_budget_mid_run_cancels_it() {
    let dir = repo();
    let bin = tempfile::tempdir().unwrap();
    let program = stand_in(bin.path(), &[INIT, TEXT]);
    let mut w = worker(
        dir.path(),
        "claude-code/x",
        program,
        CliSettings {
            grace: Duration::from_millis(300),
            ..CliSettings::default()
        },
    );
    w.budget = Arc::new(Budget::new(BudgetLimits {
        max_input_tokens: Some(1000),
        ..BudgetLimits::default()
    }));
    let out = run(&w, "developer", "spend").await;
    assert_eq!(out.status, Status::Cancelled, "{out:?}");
    assert!(out.reason.unwrap().starts_with("budget:"));
    assert_eq!(out.usage.input_tokens, 5000, "what was spent is accounted");
}

#[tokio::test]
async fn cancellation_stops_the_cli() {
    let dir = repo();
    let bin = tempfile::tempdir().unwrap();
    let program = stand_in(bin.path(), &[INIT]);
    let w = worker(
        dir.path(),
        "claude-code/x",
        program,
        CliSettings {
            grace: Duration::from_millis(300),
            ..CliSettings::default()
        },
    );
    let cancel = w.cancel.clone();
    let (out, ()) = tokio::join!(run(&w, "developer", "wait"), async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    assert_eq!(out.status, Status::Cancelled, "{out:?}");
}

#[tokio::test]
async fn a_missing_program_fails_with_its_path() {
    let dir = repo();
    let w = worker(
        dir.path(),
        "codex/x",
        PathBuf::from("/nonexistent/codex"),
        CliSettings::default(),
    );
    let out = run(&w, "developer", "hi").await;
    assert_eq!(out.status, Status::Failed);
    assert!(out.reason.unwrap().contains("/nonexistent/codex"));
}

/// Live processes (not zombies) whose working directory is `root`.
fn processes_in(root: &Path) -> Vec<String> {
    let root = std::fs::canonicalize(root).unwrap();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let pid = e.file_name().to_string_lossy().into_owned();
        if !pid.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| {
                s.rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z'))
            })
            .unwrap_or(true);
        if !zombie && std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|c| c == root) {
            out.push(pid);
        }
    }
    out
}

#[tokio::test]
async fn a_real_cli_waiting_forever_on_its_model_is_killed_at_the_agent_timeout() {
    let Some(program) = installed(Cli::ClaudeCode) else {
        return;
    };
    let dir = repo();
    // The check below sees a process working in the directory.
    let mut probe = Command::new("sleep")
        .arg("30")
        .current_dir(dir.path())
        .spawn()
        .unwrap();
    assert_eq!(processes_in(dir.path()), vec![probe.id().to_string()]);
    probe.kill().unwrap();
    probe.wait().unwrap();
    let (server, settings) = mock(Cli::ClaudeCode, dir.path()).await;
    // The model starts its answer and then only keeps the connection alive.
    server.enqueue(
        baton_test_support::MockResponse::sse(vec![(
            0,
            baton_test_support::anthropic_stream::message_start(Default::default()),
        )])
        .trickle(200, "event: ping\ndata: {\"type\": \"ping\"}\n\n"),
    );
    let mut w = worker(dir.path(), backend(Cli::ClaudeCode), program, settings);
    w.default_timeout = Duration::from_secs(6);
    let out = run(&w, "developer", "say hi").await;
    assert_eq!(out.status, Status::TimedOut, "{out:?}");
    assert!(
        out.reason.as_deref().unwrap().contains("within 6 s"),
        "{out:?}"
    );
    let raw = std::fs::read_to_string(stream_path(out.transcript.as_ref().unwrap())).unwrap();
    assert!(
        raw.contains("\"subtype\":\"init\""),
        "the partial stream was not kept"
    );
    let mut left = processes_in(dir.path());
    for _ in 0..50 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        left = processes_in(dir.path());
    }
    assert!(left.is_empty(), "still running in the workspace: {left:?}");
}
