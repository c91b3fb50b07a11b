//! The loop against a local server speaking the real OpenAI and Anthropic streaming formats:
//! a tool round trip on each provider, and a hard budget crossed mid-stream.

use baton_agent::definition::{self, AgentDef, Source};
use baton_agent::guard::GuardChain;
use baton_agent::outcome::Status;
use baton_agent::runner::{AgentEvent, Budget, CallRecord, Mode, Runner};
use baton_agent::sandbox::Sandbox;
use baton_agent::tools::{CommandPolicy, ToolContext, Toolbox};
use baton_agent::workspace::Workspace;
use baton_core::budget::BudgetLimits;
use baton_llm::anthropic::AnthropicClient;
use baton_llm::openai::OpenAiClient;
use baton_llm::pricing::Price;
use baton_llm::registry::ToolChoice;
use baton_llm::{ModelClient, ModelSpec};
use baton_test_support::{MockResponse, MockServer, anthropic_stream, captures, openai_stream};
use serde_json::json;
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
        max_tokens: None,
        compaction: baton_agent::compaction::Compaction::default(),
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

/// What a runner reported, shared with the test.
type Log<T> = Arc<std::sync::Mutex<Vec<T>>>;

fn events_and_calls(r: &mut Runner) -> (Log<AgentEvent>, Log<CallRecord>) {
    let events = Arc::new(std::sync::Mutex::new(Vec::new()));
    let calls = Arc::new(std::sync::Mutex::new(Vec::new()));
    let e = events.clone();
    r.on_event = Some(Arc::new(move |ev: &AgentEvent| {
        e.lock().unwrap().push(ev.clone())
    }));
    let c = calls.clone();
    r.on_call = Some(Arc::new(move |rec: &CallRecord| {
        c.lock().unwrap().push(rec.clone())
    }));
    (events, calls)
}

fn local(server: &MockServer) -> Arc<dyn ModelClient> {
    Arc::new(OpenAiClient::new("pyserver", server.url(), None).unwrap())
}

#[tokio::test]
async fn a_stream_without_usage_is_estimated_flagged_and_warned_once_per_provider() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start().await;
    server.enqueue(captures::replay(captures::PYSERVER_PLAIN));
    server.enqueue(captures::replay(captures::PYSERVER_PLAIN));
    let budget = Arc::new(Budget::new(BudgetLimits::default()));
    let mut outs = Vec::new();
    let mut all_events = Vec::new();
    let mut all_calls = Vec::new();
    for _ in 0..2 {
        let mut r = runner(
            dir.path(),
            local(&server),
            "pyserver/smollm2",
            BudgetLimits::default(),
            None,
        );
        r.budget = budget.clone();
        let (events, calls) = events_and_calls(&mut r);
        outs.push(r.run(&scout(), "say hi").await);
        all_events.extend(events.lock().unwrap().clone());
        all_calls.extend(calls.lock().unwrap().clone());
    }
    for out in &outs {
        assert_eq!(out.status, Status::Completed, "{out:?}");
        assert_eq!(out.summary, "\u{1f609}\n");
        assert!(out.usage_estimated, "{out:?}");
        assert!(out.usage.input_tokens > 0, "the prompt is estimated too");
        assert!(out.usage.output_tokens >= 1);
    }
    assert_eq!(all_calls.len(), 2);
    assert!(all_calls.iter().all(|c| c.estimated));
    let warnings = all_events
        .iter()
        .filter(
            |e| matches!(e, AgentEvent::UsageEstimated { provider, .. } if provider == "pyserver"),
        )
        .count();
    assert_eq!(warnings, 1, "{all_events:?}");
    // The budget counted the estimate: token limits can trigger.
    assert_eq!(
        budget.spent().output_tokens,
        outs[0].usage.output_tokens * 2
    );
}

#[tokio::test]
async fn a_stream_with_usage_is_not_estimated() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start().await;
    server.enqueue(captures::replay(captures::CPPSERVER_TOOLS_AUTO));
    let out = runner(
        dir.path(),
        local(&server),
        "llamacpp/q",
        BudgetLimits::default(),
        None,
    )
    .run(&scout(), "weather?")
    .await;
    assert_eq!(out.status, Status::Completed, "{out:?}");
    assert!(!out.usage_estimated);
    assert_eq!((out.usage.input_tokens, out.usage.output_tokens), (175, 29));
}

#[tokio::test]
async fn an_empty_200_is_its_own_error_and_not_retried() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start().await;
    server.enqueue(captures::empty_200());
    server.enqueue(captures::empty_200());
    let out = runner(
        dir.path(),
        local(&server),
        "pyserver/m",
        BudgetLimits::default(),
        None,
    )
    .run(&scout(), "weather?")
    .await;
    assert_eq!(out.status, Status::Failed, "{out:?}");
    let reason = out.reason.unwrap_or_default();
    assert!(reason.contains("200 OK with an empty body"), "{reason}");
    assert!(!reason.contains("connection failed"), "{reason}");
    assert_eq!(server.requests().len(), 1, "an empty answer is not retried");
}

#[tokio::test]
async fn a_looping_model_stops_at_the_output_cap_with_its_partial_text_kept() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start().await;
    let mut events: Vec<String> = (0..60)
        .map(|_| openai_stream::chunk(json!({"content": "again and "}), None))
        .collect();
    events.push(openai_stream::chunk(json!({}), Some("length")));
    events.push(openai_stream::done());
    server.enqueue(MockResponse::sse_events(events));
    let mut r = runner(
        dir.path(),
        local(&server),
        "pyserver/m",
        BudgetLimits::default(),
        None,
    );
    r.max_tokens = Some(150);
    let (events, _) = events_and_calls(&mut r);
    let out = r.run(&scout(), "loop").await;
    assert_eq!(server.requests()[0].body["max_tokens"], 150);
    assert_eq!(out.status, Status::Failed, "{out:?}");
    let reason = out.reason.clone().unwrap_or_default();
    assert!(reason.contains("output cap (150 tokens)"), "{reason}");
    assert!(out.summary.starts_with("again and again"), "{out:?}");
    assert_eq!(out.summary.len(), 600);
    assert!(out.usage_estimated && out.usage.output_tokens == 150);
    // Progress was reported while the answer streamed.
    let progress: Vec<u64> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Streaming { output_tokens, .. } => Some(*output_tokens),
            _ => None,
        })
        .collect();
    assert_eq!(progress, vec![50, 100, 150]);
}

#[tokio::test]
async fn cancellation_mid_stream_keeps_the_partial_text_and_its_usage() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start().await;
    let events: Vec<String> = (0..30)
        .map(|_| openai_stream::chunk(json!({"content": "0123456789"}), None))
        .collect();
    server.enqueue(MockResponse::sse_events(events).trickle(20, ": waiting\n\n"));
    let mut r = runner(
        dir.path(),
        local(&server),
        "pyserver/m",
        BudgetLimits::default(),
        None,
    );
    let cancel = r.ctx.cancel.clone();
    r.on_event = Some(Arc::new(move |e: &AgentEvent| {
        if let AgentEvent::Streaming { output_tokens, .. } = e
            && *output_tokens >= 50
        {
            cancel.cancel();
        }
    }));
    let out = r.run(&scout(), "count").await;
    assert_eq!(out.status, Status::Cancelled, "{out:?}");
    assert!(out.summary.starts_with("0123456789"), "{out:?}");
    assert!(out.usage.output_tokens >= 50, "{out:?}");
    assert!(out.usage_estimated);
}

#[tokio::test]
async fn a_timeout_mid_stream_keeps_the_partial_text_and_its_usage() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start().await;
    let events = vec![openai_stream::chunk(
        json!({"content": "thinking about it"}),
        None,
    )];
    server.enqueue(MockResponse::sse_events(events).trickle(20, ": waiting\n\n"));
    let mut r = runner(
        dir.path(),
        local(&server),
        "pyserver/m",
        BudgetLimits::default(),
        None,
    );
    r.default_timeout = Duration::from_secs(1);
    let out = r.run(&scout(), "think").await;
    assert_eq!(out.status, Status::TimedOut, "{out:?}");
    assert_eq!(out.summary, "thinking about it");
    assert!(
        out.usage.output_tokens > 0 && out.usage_estimated,
        "{out:?}"
    );
}

#[tokio::test]
async fn an_agent_that_needs_tools_and_calls_none_fails_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start().await;
    server.enqueue(captures::replay(captures::CPPSERVER_TOOLS_AUTO));
    let client = OpenAiClient::new("llamacpp", server.url(), None)
        .unwrap()
        .with_tool_choice(Some(ToolChoice::Required));
    let mut r = runner(
        dir.path(),
        Arc::new(client),
        "llamacpp/q",
        BudgetLimits::default(),
        None,
    );
    r.tools = Toolbox::standard()
        .select(&["read_file".into(), "write_file".into()])
        .unwrap();
    r.guards = GuardChain::standard(false);
    let out = r.run(&scout(), "write the weather to w.txt").await;
    assert_eq!(server.requests()[0].body["tool_choice"], "required");
    assert_eq!(out.status, Status::Failed, "{out:?}");
    let reason = out.reason.unwrap_or_default();
    assert!(reason.contains("made no tool call"), "{reason}");
    assert!(reason.contains("write_file"), "{reason}");
}

#[tokio::test]
async fn a_dispatch_projected_past_the_limits_is_warned_about_then_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start().await;
    let usage = openai_stream::Usage {
        prompt_tokens: 0,
        completion_tokens: 10,
        cached_tokens: 0,
    };
    for _ in 0..3 {
        server.enqueue(openai_stream::text(&["ok"], Some(usage)));
    }
    // Each run costs $0.01: the second is projected past the warning line, the third past the
    // hard limit.
    let budget = Arc::new(Budget::new(BudgetLimits {
        warn_usd: Some(0.015),
        hard_usd: Some(0.025),
        ..BudgetLimits::default()
    }));
    let mut outs = Vec::new();
    let mut warnings = Vec::new();
    for _ in 0..3 {
        let client = OpenAiClient::new("local", server.url(), None).unwrap();
        let mut r = runner(
            dir.path(),
            Arc::new(client),
            "local/m",
            BudgetLimits::default(),
            Some(Price::new(0.0, 1000.0)),
        );
        r.budget = budget.clone();
        let (events, _) = events_and_calls(&mut r);
        outs.push(r.run(&scout(), "say ok").await);
        warnings.push(
            events
                .lock()
                .unwrap()
                .iter()
                .filter_map(|e| match e {
                    AgentEvent::BudgetWarning { message, .. } => Some(message.clone()),
                    _ => None,
                })
                .collect::<Vec<_>>(),
        );
    }
    assert_eq!(outs[0].status, Status::Completed);
    assert!(warnings[0].is_empty(), "{warnings:?}");
    assert_eq!(outs[1].status, Status::Completed);
    assert!(
        warnings[1]
            .first()
            .is_some_and(|w| w.contains("past the warning line")),
        "{warnings:?}"
    );
    assert_eq!(outs[2].status, Status::Cancelled);
    assert_eq!(outs[2].turns, 0, "refused before any model call");
    let reason = outs[2].reason.as_deref().unwrap_or_default();
    assert!(
        reason.starts_with("budget: the next `scout` run") && reason.contains("not dispatched"),
        "{reason}"
    );
    assert_eq!(server.requests().len(), 2);
}
