//! Context rules against a local server speaking the real OpenAI streaming format: what the
//! agent says in one turn decides which rule text the server receives in the next request.

use baton_agent::definition::{self, AgentDef, Source};
use baton_agent::guard::GuardChain;
use baton_agent::outcome::Status;
use baton_agent::rules::{self, ContextRules, Rule};
use baton_agent::runner::{Budget, Mode, Runner};
use baton_agent::sandbox::Sandbox;
use baton_agent::tools::{CommandPolicy, ToolContext, Toolbox};
use baton_agent::workspace::Workspace;
use baton_core::budget::BudgetLimits;
use baton_llm::ModelSpec;
use baton_llm::openai::OpenAiClient;
use baton_store::journal::SqliteJournal;
use baton_test_support::{MockServer, openai_stream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn scout() -> AgentDef {
    let text = "---\nname: scout\ndescription: t\nrole: scout\nmodel: x/y\ntools: [read_file]\n---\nExplore.\n";
    definition::parse("scout.md", text, Source::Bundled).unwrap()
}

fn runner(
    root: &Path,
    server: &MockServer,
    rules: Vec<Rule>,
    journal: Arc<Mutex<SqliteJournal>>,
) -> Runner {
    let sandbox = Arc::new(Sandbox::new(root, &Sandbox::default_deny()).unwrap());
    let workspace = Arc::new(Workspace::new(root, sandbox.clone(), Vec::new()));
    let mut guards = GuardChain::standard(true);
    guards.push_context(Box::new(ContextRules::new(
        rules,
        "scout",
        Some((journal, "native".into())),
    )));
    Runner {
        client: Arc::new(OpenAiClient::new("local", server.url(), None).unwrap()),
        model: ModelSpec::parse("local/m").unwrap(),
        price: None,
        mode: Mode::Yolo,
        budget: Arc::new(Budget::new(BudgetLimits::default())),
        tools: Toolbox::standard().select(&["read_file".into()]).unwrap(),
        guards,
        ctx: ToolContext {
            root: root.to_path_buf(),
            sandbox,
            commands: CommandPolicy::default(),
            cancel: CancellationToken::new(),
            agent: "scout".into(),
        },
        workspace,
        transcript_dir: None,
        default_max_turns: 10,
        default_timeout: Duration::from_secs(60),
        max_tokens: None,
        compaction: baton_agent::compaction::Compaction::default(),
        on_event: None,
        on_call: None,
    }
}

/// `turns` model turns each saying `said` and reading a file, then a final answer.
fn enqueue(server: &MockServer, said: &str, turns: usize) {
    for i in 0..turns {
        let id = format!("call_{i}");
        server.enqueue(openai_stream::tool_calls(
            said,
            &[(id.as_str(), "read_file", r#"{"path":"notes.txt"}"#)],
            3,
            None,
        ));
    }
    server.enqueue(openai_stream::text(&["Done."], None));
}

/// The text of every message of request `i`.
fn request_text(server: &MockServer, i: usize) -> String {
    server.requests()[i].body["messages"].to_string()
}

fn fired(j: &Arc<Mutex<SqliteJournal>>) -> Vec<String> {
    j.lock()
        .unwrap()
        .guard_records(None, None)
        .unwrap()
        .into_iter()
        .filter(|r| r.kind == "rule")
        .map(|r| r.detail)
        .collect()
}

#[tokio::test]
async fn the_test_first_rule_reaches_the_next_request_after_the_excuse() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "notes").unwrap();
    let server = MockServer::start().await;
    enqueue(&server, "This is simple enough to skip tests.", 1);
    let journal = Arc::new(Mutex::new(SqliteJournal::open_in_memory().unwrap()));
    let out = runner(dir.path(), &server, rules::bundled(), journal.clone())
        .run(&scout(), "add the flag")
        .await;
    assert_eq!(out.status, Status::Completed, "{out:?}");
    let body = rules::bundled()
        .into_iter()
        .find(|r| r.name == "test-first")
        .unwrap()
        .body;
    let first_line = body.lines().next().unwrap();
    assert!(!request_text(&server, 0).contains(first_line));
    let second = &server.requests()[1].body["messages"];
    let last = second.as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "user", "{second:#}");
    assert!(
        last["content"].as_str().unwrap().contains(first_line),
        "{last:#}"
    );
    assert_eq!(fired(&journal), ["test-first (agent scout, turn 2)"]);
}

fn rule(freq: &str) -> Rule {
    rules::parse(
        "r.md",
        &format!("---\nname: r\ntrigger: (?i)skip\nfrequency: '{freq}'\n---\nRULE-BODY-{freq}\n"),
    )
    .unwrap()
}

/// Which of the requests after the first carried the rule body.
async fn firings(freq: &str) -> Vec<usize> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "notes").unwrap();
    let server = MockServer::start().await;
    enqueue(&server, "Let me skip that.", 5);
    let journal = Arc::new(Mutex::new(SqliteJournal::open_in_memory().unwrap()));
    let out = runner(dir.path(), &server, vec![rule(freq)], journal)
        .run(&scout(), "go")
        .await;
    assert_eq!(out.status, Status::Completed, "{out:?}");
    let marker = format!("RULE-BODY-{freq}");
    let n = server.requests().len();
    assert_eq!(n, 6);
    // A rule message, once sent, stays in the history: count the new ones per request.
    let mut seen = 0;
    let mut at = Vec::new();
    for i in 0..n {
        let count = request_text(&server, i).matches(&marker).count();
        if count > seen {
            at.push(i + 1);
        }
        seen = count;
    }
    at
}

#[tokio::test]
async fn once_fires_once_and_cooldown_two_at_most_every_second_turn() {
    assert_eq!(firings("once").await, [2]);
    assert_eq!(firings("cooldown:2").await, [2, 4, 6]);
    assert_eq!(firings("per-turn").await, [2, 3, 4, 5, 6]);
}
