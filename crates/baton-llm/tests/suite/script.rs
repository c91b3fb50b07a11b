//! The script provider: ordered consumption, `match`, `repeat`, broken arguments, hard misses and
//! load errors that name the file and line.

use super::common::{guard, run, run_with};
use baton_llm::script::ScriptClient;
use baton_llm::{ChatRequest, LlmError, Message, ModelClient, StopReason, StreamEvent, Usage};
use serde_json::json;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

fn write_script(yaml: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("demo.yaml");
    std::fs::write(&path, yaml).expect("write script");
    (dir, path)
}

fn ask(agent: &str, text: &str) -> ChatRequest {
    ChatRequest {
        model: "demo".into(),
        system: String::new(),
        messages: vec![Message::User { text: text.into() }],
        tools: vec![],
        max_tokens: None,
        temperature: None,
        agent: agent.into(),
        unit: None,
    }
}

fn with_results(agent: &str, results: &[&str]) -> ChatRequest {
    let mut request = ask(agent, "start");
    request.messages.push(Message::Assistant {
        text: String::new(),
        tool_calls: vec![],
    });
    for (i, content) in results.iter().enumerate() {
        request.messages.push(Message::ToolResult {
            call_id: format!("call_{i}"),
            name: "tool".into(),
            content: (*content).into(),
            is_error: false,
        });
    }
    request
}

async fn text_of(client: &ScriptClient, request: &ChatRequest) -> String {
    let (result, _) = run(client, request).await;
    result.expect("scripted answer").text
}

#[tokio::test]
async fn turns_are_consumed_in_file_order_per_agent() {
    let (_dir, path) = write_script(
        "turns:\n\
         - agent: scout\n  text: first\n\
         - agent: coder\n  text: coder one\n\
         - agent: scout\n  text: second\n",
    );
    let client = ScriptClient::load(&path).expect("valid script");
    assert_eq!(text_of(&client, &ask("scout", "a")).await, "first");
    assert_eq!(text_of(&client, &ask("scout", "b")).await, "second");
    assert_eq!(text_of(&client, &ask("coder", "c")).await, "coder one");
    assert!(client.unused_turns().is_empty());
    let (result, _) = run(&client, &ask("scout", "again")).await;
    assert!(
        matches!(result, Err(LlmError::NoScriptMatch { .. })),
        "{result:?}"
    );
}

#[tokio::test]
async fn match_picks_the_first_turn_whose_regex_matches_the_latest_input() {
    let (_dir, path) = write_script(
        r#"turns:
  - agent: scout
    match: "(?i)find the TESTS"
    text: tests
  - agent: scout
    match: "^PASS"
    text: passed
  - agent: scout
    text: anything
"#,
    );
    let client = ScriptClient::load(&path).expect("valid script");
    assert_eq!(
        text_of(&client, &ask("scout", "please find the tests")).await,
        "tests"
    );
    assert_eq!(
        text_of(&client, &with_results("scout", &["ok", "PASS 3"])).await,
        "anything"
    );
    assert_eq!(
        text_of(&client, &with_results("scout", &["PASS 3", "ok"])).await,
        "passed"
    );
    assert_eq!(
        client.unused_turns(),
        Vec::<String>::new(),
        "every turn was used once"
    );
}

#[tokio::test]
async fn repeat_turns_serve_any_number_of_requests() {
    let (_dir, path) = write_script(
        "turns:\n  - agent: reviewer\n    text: LGTM\n    repeat: true\n  - agent: reviewer\n    text: unreachable\n",
    );
    let client = ScriptClient::load(&path).expect("valid script");
    for _ in 0..3 {
        assert_eq!(text_of(&client, &ask("reviewer", "review")).await, "LGTM");
    }
    assert_eq!(client.unused_turns(), ["turn 2 (agent `reviewer`, line 5)"]);
}

#[tokio::test]
async fn tool_calls_get_sequential_ids_and_raw_arguments_may_be_broken() {
    let (_dir, path) = write_script(
        r#"turns:
  - agent: scout
    text: "Looking."
    tool_calls:
      - name: list_files
        arguments: {pattern: "**/*test*", limit: 5}
      - name: read_file
        raw_arguments: "{not json"
    usage: {input_tokens: 120, output_tokens: 30}
  - agent: scout
    tool_calls:
      - name: finish
"#,
    );
    let client = ScriptClient::load(&path).expect("valid script");
    let (result, events) = run(&client, &ask("scout", "go")).await;
    let response = result.expect("answer");
    assert_eq!(response.text, "Looking.");
    assert_eq!(response.stop, StopReason::ToolUse);
    let usage = Usage {
        input_tokens: 120,
        output_tokens: 30,
        ..Usage::default()
    };
    assert_eq!(response.usage, usage);
    let calls = &response.tool_calls;
    assert_eq!(
        (calls[0].id.as_str(), calls[0].name.as_str()),
        ("call_1", "list_files")
    );
    assert_eq!(
        calls[0].arguments,
        Ok(json!({"pattern": "**/*test*", "limit": 5}))
    );
    assert_eq!(calls[1].id, "call_2");
    assert_eq!(calls[1].raw_arguments, "{not json");
    assert!(calls[1].arguments.is_err());
    assert_eq!(events[0], StreamEvent::TextDelta("Looking.".into()));
    assert_eq!(events.last(), Some(&StreamEvent::Usage(usage)));

    let (result, _) = run(&client, &with_results("scout", &["files"])).await;
    let response = result.expect("answer");
    assert_eq!(response.tool_calls[0].id, "call_3");
    assert_eq!(response.tool_calls[0].arguments, Ok(json!({})));
    assert!(
        response.usage.input_tokens > 0,
        "usage is estimated when absent"
    );
}

#[tokio::test]
async fn a_request_no_turn_answers_names_the_agent_the_script_and_the_input() {
    let (_dir, path) = write_script("turns:\n  - agent: scout\n    match: tests\n    text: x\n");
    let client = ScriptClient::load(&path).expect("valid script");
    let (result, _) = run(&client, &ask("scout", "something else entirely")).await;
    let error = result.expect_err("no turn matches");
    let message = error.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("`scout`"), "{message}");
    assert!(message.contains("something else entirely"), "{message}");
    let (result, _) = run(&client, &ask("coder", &"long input ".repeat(100))).await;
    match result {
        Err(LlmError::NoScriptMatch { agent, input, .. }) => {
            assert_eq!(agent, "coder");
            assert!(
                input.len() < 400,
                "input not truncated: {} bytes",
                input.len()
            );
        }
        other => panic!("expected NoScriptMatch, got {other:?}"),
    }
}

#[test]
fn yaml_errors_name_the_file_and_line() {
    let (_dir, path) = write_script(
        "turns:\n  - agent: scout\n    text: fine\n  - agent: coder\n    tool_call: oops\n",
    );
    let message = ScriptClient::load(&path)
        .expect_err("unknown field")
        .to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("line 5"), "{message}");
    assert!(message.contains("tool_call"), "{message}");

    let (_dir, path) = write_script("turns:\n  - agent: [unclosed\n");
    let message = ScriptClient::load(&path)
        .expect_err("bad syntax")
        .to_string();
    assert!(message.contains("line "), "{message}");
}

#[test]
fn bad_regexes_and_double_arguments_name_the_line() {
    let (_dir, path) = write_script("turns:\n  - agent: scout\n    match: \"(unclosed\"\n");
    let message = ScriptClient::load(&path)
        .expect_err("bad regex")
        .to_string();
    assert!(message.contains("line 3"), "{message}");
    assert!(message.contains("`match`"), "{message}");

    let (_dir, path) = write_script(
        "turns:\n  - agent: scout\n    tool_calls:\n      - name: t\n        arguments: {}\n        raw_arguments: \"{}\"\n",
    );
    let message = ScriptClient::load(&path).expect_err("both").to_string();
    assert!(message.contains("line 4"), "{message}");
}

#[test]
fn a_missing_script_names_the_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("absent.yaml");
    let message = ScriptClient::load(&path).expect_err("missing").to_string();
    assert!(message.contains("absent.yaml"), "{message}");
}

#[tokio::test]
async fn the_sink_breaking_aborts_a_scripted_turn_with_the_partial_answer() {
    let client = ScriptClient::from_yaml(
        "turns:\n  - agent: a\n    text: partial\n    tool_calls:\n      - name: t\n",
        "inline.yaml",
    )
    .expect("valid script");
    let cancel = CancellationToken::new();
    let (result, _) = run_with(&client, &ask("a", "go"), &cancel, |event| match event {
        StreamEvent::ToolCallStarted { .. } => ControlFlow::Break("budget".into()),
        _ => ControlFlow::Continue(()),
    })
    .await;
    match result {
        Err(LlmError::Aborted { reason, partial }) => {
            assert_eq!(reason, "budget");
            assert_eq!(partial.text, "partial");
            assert_eq!(partial.tool_calls.len(), 1);
        }
        other => panic!("expected Aborted, got {other:?}"),
    }
}

#[tokio::test]
async fn cancellation_interrupts_a_delayed_turn() {
    let client = ScriptClient::from_yaml(
        "turns:\n  - agent: a\n    text: late\n    delay_ms: 3600000\n",
        "inline.yaml",
    )
    .expect("valid script");
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let request = ask("a", "go");
    let mut sink = |_: &StreamEvent| ControlFlow::Continue(());
    let call = client.chat(&request, &mut sink, &cancel);
    trigger.cancel();
    let result = guard(call).await;
    assert!(matches!(result, Err(LlmError::Cancelled)), "{result:?}");
}

#[tokio::test]
async fn parallel_agents_share_one_client() {
    let client = Arc::new(
        ScriptClient::from_yaml(
            "turns:\n  - agent: a\n    text: one\n  - agent: a\n    text: two\n  - agent: b\n    text: three\n",
            "inline.yaml",
        )
        .expect("valid script"),
    );
    let mut tasks = Vec::new();
    for agent in ["a", "a", "b"] {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            let (result, _) = run(&*client, &ask(agent, "go")).await;
            result.expect("answer").text
        }));
    }
    let mut texts = Vec::new();
    for task in tasks {
        texts.push(task.await.expect("task"));
    }
    texts.sort();
    assert_eq!(texts, ["one", "three", "two"]);
}
