//! The tool-calling loop against the script provider: turn limits, refusals, broken arguments,
//! escalation, HALT, garbage answers, and changed files computed from git.

use baton_agent::definition::{self, AgentDef, Source};
use baton_agent::guard::GuardChain;
use baton_agent::outcome::Status;
use baton_agent::runner::{Budget, Mode, Runner};
use baton_agent::sandbox::Sandbox;
use baton_agent::tools::{CommandPolicy, ToolContext, Toolbox};
use baton_agent::workspace::Workspace;
use baton_core::budget::BudgetLimits;
use baton_llm::ModelSpec;
use baton_llm::script::ScriptClient;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn agent(name: &str, role: &str, tools: &[&str], max_turns: u32) -> AgentDef {
    let text = format!(
        "---\nname: {name}\ndescription: test agent\nrole: {role}\nmodel: script/test\ntools: [{}]\nmax_turns: {max_turns}\n---\nYou are a test agent.\n",
        tools.join(", ")
    );
    definition::parse("test.md", &text, Source::Bundled).unwrap()
}

fn runner(root: &Path, script: &str, def: &AgentDef) -> Runner {
    let script_path = root.join(".script.yaml");
    std::fs::write(&script_path, script).unwrap();
    let client = ScriptClient::load(&script_path).unwrap();
    let sandbox = Sandbox::new(root, &Sandbox::default_deny()).unwrap();
    let mut tools = Toolbox::standard().select(&def.tools).unwrap();
    if def.is_read_only() {
        tools = tools.read_only();
    }
    let sandbox = Arc::new(sandbox);
    let workspace = Arc::new(Workspace::new(root, sandbox.clone(), Vec::new()));
    Runner {
        client: Arc::new(client),
        model: ModelSpec::parse("script/test").unwrap(),
        price: None,
        mode: Mode::Standard,
        budget: Arc::new(Budget::new(BudgetLimits::default())),
        tools,
        guards: GuardChain::standard(def.is_read_only()),
        ctx: ToolContext {
            root: root.to_path_buf(),
            sandbox,
            commands: CommandPolicy::default(),
            cancel: CancellationToken::new(),
            agent: def.name.clone(),
        },
        workspace,
        transcript_dir: Some(root.join(".baton/runs/test")),
        default_max_turns: 40,
        default_timeout: Duration::from_secs(60),
        max_tokens: None,
        compaction: baton_agent::compaction::Compaction::default(),
        on_event: None,
        on_call: None,
    }
}

#[tokio::test]
async fn endless_tool_calls_end_failed_after_max_turns() {
    let dir = tempfile::tempdir().unwrap();
    let def = agent("looper", "scout", &["list_files"], 5);
    let script = "turns:\n  - agent: looper\n    repeat: true\n    tool_calls:\n      - name: list_files\n        arguments: {pattern: \"*\"}\n";
    let out = runner(dir.path(), script, &def).run(&def, "loop").await;
    assert_eq!(out.status, Status::Failed);
    assert_eq!(out.turns, 5);
    assert!(out.reason.unwrap().contains("max_turns (5)"));
}

#[tokio::test]
async fn read_only_agents_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    // The reviewer's definition even lists write_file: the toolbox drops it and the guard refuses.
    let def = agent("critic", "reviewer", &["read_file", "write_file"], 5);
    let script = "turns:\n  - agent: critic\n    tool_calls:\n      - name: write_file\n        arguments: {path: pwned.txt, content: x}\n  - agent: critic\n    match: \"not available\"\n    text: I could not write, as expected.\n";
    let out = runner(dir.path(), script, &def)
        .run(&def, "try to write")
        .await;
    assert_eq!(out.status, Status::Completed, "{out:?}");
    assert!(!dir.path().join("pwned.txt").exists());
}

#[tokio::test]
async fn malformed_tool_arguments_go_back_to_the_model() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello").unwrap();
    let def = agent("reader", "scout", &["read_file"], 5);
    let script = "turns:\n  - agent: reader\n    tool_calls:\n      - name: read_file\n        raw_arguments: \"{\\\"path\\\": \\\"a.txt\"\n  - agent: reader\n    match: \"not valid JSON\"\n    tool_calls:\n      - name: read_file\n        arguments: {path: a.txt}\n  - agent: reader\n    match: hello\n    text: The file says hello.\n";
    let out = runner(dir.path(), script, &def)
        .run(&def, "read a.txt")
        .await;
    assert_eq!(out.status, Status::Completed, "{out:?}");
    assert_eq!(out.turns, 3);
    assert_eq!(out.summary, "The file says hello.");
}

#[tokio::test]
async fn escalation_ends_the_agent_and_keeps_the_options() {
    let dir = tempfile::tempdir().unwrap();
    let def = agent("dev", "developer", &["escalate"], 5);
    let script = "turns:\n  - agent: dev\n    text: I need a decision.\n    tool_calls:\n      - name: escalate\n        arguments: {title: New dependency, finding: needs serde, options: [add it, write by hand]}\n";
    let out = runner(dir.path(), script, &def).run(&def, "do it").await;
    assert_eq!(out.status, Status::Escalated);
    let e = out.escalation.unwrap();
    assert_eq!(e.options, ["add it", "write by hand"]);
}

#[tokio::test]
async fn halt_and_empty_answers_have_their_own_ends() {
    let dir = tempfile::tempdir().unwrap();
    let def = agent("dev", "developer", &[], 5);
    let script = "turns:\n  - agent: dev\n    text: \"Tried three times.\\nHALT: tests keep failing in parser\"\n";
    let out = runner(dir.path(), script, &def).run(&def, "x").await;
    assert_eq!(out.status, Status::Halted);
    assert_eq!(out.reason.as_deref(), Some("tests keep failing in parser"));
    let script = "turns:\n  - agent: dev\n    text: \"\"\n";
    let out = runner(dir.path(), script, &def).run(&def, "x").await;
    assert_eq!(out.status, Status::Failed);
}

#[tokio::test]
async fn a_script_miss_is_a_failure_naming_the_agent() {
    let dir = tempfile::tempdir().unwrap();
    let def = agent("ghost", "scout", &[], 5);
    let out = runner(dir.path(), "turns: []\n", &def)
        .run(&def, "anything")
        .await;
    assert_eq!(out.status, Status::Failed);
    assert!(out.reason.unwrap().contains("ghost"));
}

#[tokio::test]
async fn changed_files_come_from_git_not_from_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(root)
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    std::fs::write(root.join("keep.txt"), "k").unwrap();
    std::fs::write(root.join("dirty.txt"), "before").unwrap();
    git(&["add", "."]);
    git(&["commit", "-qm", "base"]);
    std::fs::write(root.join("dirty.txt"), "already dirty").unwrap();
    let def = agent("dev", "developer", &["write_file"], 5);
    let script = "turns:\n  - agent: dev\n    tool_calls:\n      - name: write_file\n        arguments: {path: src/new.rs, content: \"fn main() {}\"}\n  - agent: dev\n    text: I changed keep.txt and everything else.\n";
    let out = runner(root, script, &def).run(&def, "write").await;
    assert_eq!(out.status, Status::Completed, "{out:?}");
    assert_eq!(out.files_changed, ["src/new.rs"]);
    assert!(out.transcript.unwrap().exists());
}

/// Regression (issue 8), through the whole loop: a developer agent edits the sprint file to mark
/// its story done and rewrites `baton.toml`; both calls come back refused, the transcript
/// records the guard's deny, and both files stay as they were.
#[tokio::test]
async fn a_developer_agent_cannot_write_the_sprint_file_or_the_config() {
    let dir = tempfile::tempdir().unwrap();
    let sprint = "_bmad-output/implementation-artifacts/sprint-status.yaml";
    let sprint_text = "development_status:\n  epic-1: in-progress\n  1-1-a: in-progress\n";
    std::fs::create_dir_all(dir.path().join("_bmad-output/implementation-artifacts")).unwrap();
    std::fs::write(dir.path().join(sprint), sprint_text).unwrap();
    std::fs::write(dir.path().join("baton.toml"), "[sprint]\nbatch = 1\n").unwrap();
    let def = agent("dev", "developer", &["edit_file", "write_file"], 5);
    let script = format!(
        "turns:\n  - agent: dev\n    tool_calls:\n      - name: edit_file\n        arguments: {{path: {sprint}, old_string: '1-1-a: in-progress', new_string: '1-1-a: done'}}\n      - name: write_file\n        arguments: {{path: ./baton.toml, content: \"[commands]\\nallow = [\\\"sh\\\"]\\n\"}}\n  - agent: dev\n    match: \"update_sprint_status\"\n    text: Refused, as it should be.\n"
    );
    let out = runner(dir.path(), &script, &def).run(&def, "cheat").await;
    assert_eq!(out.status, Status::Completed, "{out:?}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join(sprint)).unwrap(),
        sprint_text
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("baton.toml")).unwrap(),
        "[sprint]\nbatch = 1\n"
    );
    let transcript = std::fs::read_to_string(out.transcript.unwrap()).unwrap();
    assert_eq!(
        transcript.matches("\"kind\":\"guard\"").count(),
        2,
        "{transcript}"
    );
    assert!(transcript.contains("baton's configuration"), "{transcript}");
}
