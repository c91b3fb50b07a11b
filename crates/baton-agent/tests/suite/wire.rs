//! The loop against a local server speaking the real OpenAI and Anthropic streaming formats:
//! a tool round trip on each provider, and a hard budget crossed mid-stream.

use baton_agent::definition::{self, AgentDef, Source};
use baton_agent::guard::GuardChain;
use baton_agent::outcome::Status;
use baton_agent::runner::{Budget, Mode, Runner};
use baton_agent::sandbox::Sandbox;
use baton_agent::tools::{CommandPolicy, ToolContext, Toolbox};
use baton_agent::workspace::Workspace;
use baton_core::budget::BudgetLimits;
use baton_llm::anthropic::AnthropicClient;
use baton_llm::openai::OpenAiClient;
use baton_llm::pricing::Price;
use baton_llm::{ModelClient, ModelSpec};
use baton_test_support::{MockServer, anthropic_stream, openai_stream};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn scout() -> AgentDef {
    let text = "---\nname: scout\ndescription: t\nrole: scout\nmodel: x/y\ntools: [read_file]\n---\nExplore.\n";
    definition::parse("scout.md", text, Source::Bundled).unwrap()
}

fn runner(
    root: &Path,
    client: Arc<dyn ModelClient>,
    spec: &str,
    limits: BudgetLimits,
    price: Option<Price>,
) -> Runner {
    let sandbox = Arc::new(Sandbox::new(root, &Sandbox::default_deny()).unwrap());
    let workspace = Arc::new(Workspace::new(root, sandbox.clone(), Vec::new()));
    Runner {
        client,
        model: ModelSpec::parse(spec).unwrap(),
        price,
        mode: Mode::Yolo,
        budget: Arc::new(Budget::new(limits)),
        tools: Toolbox::standard().select(&["read_file".into()]).unwrap(),
        guards: GuardChain::standard(true),
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
        on_event: None,
        on_call: None,
    }
}

#[tokio::test]
async fn openai_tool_round_trip_reaches_a_final_answer() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "the tests are in tests/").unwrap();
    let server = MockServer::start().await;
    let usage = |p, c| {
        Some(openai_stream::Usage {
            prompt_tokens: p,
            completion_tokens: c,
            cached_tokens: 0,
        })
    };
    server.enqueue(openai_stream::tool_calls(
        "",
        &[("call_1", "read_file", r#"{"path":"notes.txt"}"#)],
        3,
        usage(100, 10),
    ));
    server.enqueue(openai_stream::text(
        &["They are ", "in tests/."],
        usage(150, 8),
    ));
    let client = OpenAiClient::new("local", server.url(), None).unwrap();
    let out = runner(
        dir.path(),
        Arc::new(client),
        "local/m",
        BudgetLimits::default(),
        None,
    )
    .run(&scout(), "where are the tests?")
    .await;
    assert_eq!(out.status, Status::Completed, "{out:?}");
    assert_eq!(out.summary, "They are in tests/.");
    assert_eq!(out.usage.input_tokens, 250);
    assert_eq!(out.usage.output_tokens, 18);
    // The second request carried the tool result answering the call.
    let second = &server.requests()[1].body;
    let msgs = second["messages"].as_array().unwrap();
    let tool = msgs.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool["tool_call_id"], "call_1");
    assert!(
        tool["content"]
            .as_str()
            .unwrap()
            .contains("the tests are in tests/")
    );
}

#[tokio::test]
async fn anthropic_tool_round_trip_reaches_a_final_answer() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "tests/ holds them").unwrap();
    let server = MockServer::start().await;
    let usage = |i, o| anthropic_stream::Usage {
        input_tokens: i,
        output_tokens: o,
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: 0,
    };
    server.enqueue(anthropic_stream::tool_use(
        "Reading.",
        &[("toolu_1", "read_file", r#"{"path":"notes.txt"}"#)],
        2,
        usage(90, 12),
    ));
    server.enqueue(anthropic_stream::text(&["In tests/."], usage(140, 4)));
    let client = AnthropicClient::new("anthropic", server.url(), Some("k".into())).unwrap();
    let out = runner(
        dir.path(),
        Arc::new(client),
        "anthropic/m",
        BudgetLimits::default(),
        None,
    )
    .run(&scout(), "where?")
    .await;
    assert_eq!(out.status, Status::Completed, "{out:?}");
    assert_eq!(out.turns, 2);
    let second = &server.requests()[1].body;
    let last = second["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "user");
    assert_eq!(last["content"][0]["type"], "tool_result");
    assert_eq!(last["content"][0]["tool_use_id"], "toolu_1");
}

#[tokio::test]
async fn a_hard_budget_crossed_mid_stream_aborts_and_cancels() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start().await;
    // A long answer streamed slowly; at $1000 per million output tokens, about 40 characters
    // (10 tokens) cross a $0.01 budget long before the stream would end.
    let words: Vec<String> = (0..400).map(|i| format!("word{i} ")).collect();
    let parts: Vec<&str> = words.iter().map(String::as_str).collect();
    server.enqueue(openai_stream::text(&parts, None).delay_each(5));
    let client = OpenAiClient::new("local", server.url(), None).unwrap();
    let limits = BudgetLimits {
        hard_usd: Some(0.01),
        ..BudgetLimits::default()
    };
    let price = Price::new(0.0, 1000.0);
    let out = runner(dir.path(), Arc::new(client), "local/m", limits, Some(price))
        .run(&scout(), "talk")
        .await;
    assert_eq!(out.status, Status::Cancelled, "{out:?}");
    assert!(
        out.reason
            .as_deref()
            .unwrap_or_default()
            .starts_with("budget"),
        "{out:?}"
    );
    server.wait_for_disconnects(1).await;
    assert!(
        out.summary.starts_with("word0"),
        "partial work is kept: {:?}",
        out.summary
    );
    assert!(!out.summary.contains("word399"));
}
