//! The Anthropic Messages client against the mock server: answers, tool use, usage, wire shape.

use super::common::{KEY, Wire, fast_policy, run, text_deltas, user_request};
use baton_llm::{LlmError, Message, StopReason, StreamEvent, ToolCall, Usage};
use baton_test_support::anthropic_stream::{self, Usage as WireUsage};
use baton_test_support::{MockResponse, MockServer};
use serde_json::json;

fn client(server: &MockServer) -> Box<dyn baton_llm::ModelClient> {
    Wire::Anthropic.client(server, fast_policy())
}

fn usage(input: u64, output: u64) -> WireUsage {
    WireUsage {
        input_tokens: input,
        output_tokens: output,
        ..WireUsage::default()
    }
}

#[tokio::test]
async fn text_answer_streams_deltas_and_usage() {
    let server = MockServer::start().await;
    server.enqueue(anthropic_stream::text(
        &["Hel", "lo, ", "wörld 🦀"],
        usage(25, 9),
    ));
    let (result, events) = run(&*client(&server), &user_request("hi")).await;
    let response = result.expect("answer");
    assert_eq!(response.text, "Hello, wörld 🦀");
    assert_eq!(text_deltas(&events), "Hello, wörld 🦀");
    assert_eq!(response.stop, StopReason::EndTurn);
    let expected = Usage {
        input_tokens: 25,
        output_tokens: 9,
        ..Usage::default()
    };
    assert_eq!(response.usage, expected);
    assert_eq!(events.last(), Some(&StreamEvent::Usage(expected)));
}

#[tokio::test]
async fn cache_tokens_are_accounted() {
    let server = MockServer::start().await;
    let wire = WireUsage {
        input_tokens: 12,
        output_tokens: 30,
        cache_read_input_tokens: 2000,
        cache_creation_input_tokens: 500,
    };
    server.enqueue(anthropic_stream::text(&["ok"], wire));
    let (result, _) = run(&*client(&server), &user_request("hi")).await;
    let usage = result.expect("answer").usage;
    assert_eq!(
        usage,
        Usage {
            input_tokens: 12,
            output_tokens: 30,
            cache_read_tokens: 2000,
            cache_write_tokens: 500,
        }
    );
    assert_eq!(usage.total_input(), 2512);
}

#[tokio::test]
async fn tool_input_split_across_many_deltas_is_joined() {
    let server = MockServer::start().await;
    let input = r#"{"path": "src/lib.rs", "note": "ünïcode ✓"}"#;
    server.enqueue(anthropic_stream::tool_use(
        "",
        &[("toolu_01", "read_file", input)],
        3,
        usage(5, 5),
    ));
    let (result, events) = run(&*client(&server), &user_request("read")).await;
    let response = result.expect("answer");
    assert_eq!(response.stop, StopReason::ToolUse);
    let call = &response.tool_calls[0];
    assert_eq!(
        (call.id.as_str(), call.name.as_str()),
        ("toolu_01", "read_file")
    );
    assert_eq!(call.raw_arguments, input);
    assert_eq!(
        call.arguments,
        Ok(json!({"path": "src/lib.rs", "note": "ünïcode ✓"}))
    );
    assert_eq!(
        events[1],
        StreamEvent::ToolCallStarted {
            id: "toolu_01".into(),
            name: "read_file".into()
        }
    );
    let fragments = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::ToolArgumentsDelta(_)))
        .count();
    assert!(fragments > 10, "expected many fragments, got {fragments}");
}

#[tokio::test]
async fn text_and_two_tool_uses_in_one_turn() {
    let server = MockServer::start().await;
    server.enqueue(anthropic_stream::tool_use(
        "Reading both.",
        &[
            ("toolu_1", "read_file", r#"{"path":"a.rs"}"#),
            ("toolu_2", "list_files", r#"{"pattern":"**/*.rs"}"#),
        ],
        4,
        usage(10, 20),
    ));
    let (result, _) = run(&*client(&server), &user_request("read")).await;
    let response = result.expect("answer");
    assert_eq!(response.text, "Reading both.");
    let calls: Vec<(&str, &str)> = response
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str()))
        .collect();
    assert_eq!(calls, [("toolu_1", "read_file"), ("toolu_2", "list_files")]);
    assert_eq!(
        response.tool_calls[1].arguments,
        Ok(json!({"pattern": "**/*.rs"}))
    );
    assert_eq!(response.usage.output_tokens, 20);
}

#[tokio::test]
async fn malformed_tool_input_yields_an_argument_error_not_a_failed_call() {
    let server = MockServer::start().await;
    server.enqueue(anthropic_stream::tool_use(
        "",
        &[("toolu_x", "read_file", r#"{"path": "a.rs"#)],
        4,
        usage(1, 1),
    ));
    let (result, _) = run(&*client(&server), &user_request("read")).await;
    let response = result.expect("the call itself succeeds");
    assert!(response.tool_calls[0].arguments.is_err());
    assert_eq!(response.tool_calls[0].raw_arguments, r#"{"path": "a.rs"#);
}

#[tokio::test]
async fn unknown_events_and_thinking_blocks_are_ignored() {
    let server = MockServer::start().await;
    let u = usage(3, 4);
    server.enqueue(MockResponse::sse_events(vec![
        anthropic_stream::message_start(u),
        anthropic_stream::event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "thinking", "thinking": ""}}),
        ),
        anthropic_stream::event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "thinking_delta", "thinking": "hmm"}}),
        ),
        anthropic_stream::block_stop(0),
        anthropic_stream::event("future_event", &json!({"type": "future_event"})),
        anthropic_stream::text_block_start(1),
        anthropic_stream::text_delta(1, "answer"),
        anthropic_stream::block_stop(1),
        anthropic_stream::message_delta("end_turn", 4),
        anthropic_stream::message_stop(),
    ]));
    let (result, _) = run(&*client(&server), &user_request("hi")).await;
    assert_eq!(result.expect("answer").text, "answer");
}

#[tokio::test]
async fn a_stream_cut_into_tiny_pieces_parses_the_same() {
    let server = MockServer::start().await;
    server.enqueue(
        anthropic_stream::tool_use("é🦀", &[("t", "read_file", r#"{"p":"ü"}"#)], 2, usage(1, 2))
            .rechunk(1),
    );
    let (result, _) = run(&*client(&server), &user_request("hi")).await;
    let response = result.expect("answer");
    assert_eq!(response.text, "é🦀");
    assert_eq!(response.tool_calls[0].arguments, Ok(json!({"p": "ü"})));
}

#[tokio::test]
async fn an_overloaded_error_event_is_retried() {
    let server = MockServer::start().await;
    server.enqueue(MockResponse::sse_events(vec![
        anthropic_stream::message_start(usage(1, 1)),
        anthropic_stream::error_event("overloaded_error", "Overloaded"),
    ]));
    server.enqueue(anthropic_stream::text(&["fine"], usage(1, 1)));
    let (result, events) = run(&*client(&server), &user_request("hi")).await;
    assert_eq!(result.expect("answer").text, "fine");
    assert_eq!(server.requests().len(), 2);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, StreamEvent::Retrying { attempt: 2, .. }))
    );
}

#[tokio::test]
async fn an_invalid_request_error_event_is_final() {
    let server = MockServer::start().await;
    server.enqueue(MockResponse::sse_events(vec![
        anthropic_stream::error_event("invalid_request_error", "bad thing"),
    ]));
    let (result, _) = run(&*client(&server), &user_request("hi")).await;
    match result {
        Err(LlmError::Http { status, body, .. }) => {
            assert_eq!(status, 400);
            assert!(body.contains("bad thing"), "{body}");
        }
        other => panic!("expected an HTTP error, got {other:?}"),
    }
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn request_body_has_the_messages_shape() {
    let server = MockServer::start().await;
    server.enqueue(anthropic_stream::text(&["done"], usage(1, 1)));
    let mut request = user_request("read two files");
    request.messages.push(Message::Assistant {
        text: "Reading.".into(),
        tool_calls: vec![
            ToolCall::new("toolu_1", "read_file", r#"{"path":"a.rs"}"#),
            ToolCall::new("toolu_2", "read_file", r#"{"path":"b.rs"}"#),
        ],
    });
    for (id, content, is_error) in [("toolu_1", "A", false), ("toolu_2", "no such file", true)] {
        request.messages.push(Message::ToolResult {
            call_id: id.into(),
            name: "read_file".into(),
            content: content.into(),
            is_error,
        });
    }
    let (result, _) = run(&*client(&server), &request).await;
    result.expect("answer");
    let requests = server.requests();
    let received = &requests[0];
    assert_eq!(received.path, "/v1/messages");
    assert_eq!(received.header("x-api-key"), Some(KEY));
    assert_eq!(received.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(received.header("content-type"), Some("application/json"));
    assert_eq!(received.header("authorization"), None);
    assert!(
        !received.raw_body.contains(KEY),
        "the key leaked into the body"
    );
    let body = &received.body;
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "You are terse."}])
    );
    assert_eq!(body["max_tokens"], 8192);
    assert_eq!(body["stream"], true);
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "read two files"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.rs"}},
                {"type": "tool_use", "id": "toolu_2", "name": "read_file", "input": {"path": "b.rs"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "A", "is_error": false},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "no such file", "is_error": true},
            ]},
        ])
    );
    assert_eq!(
        body["tools"],
        json!([{
            "name": "read_file",
            "description": "Reads a file",
            "input_schema": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        }])
    );
    assert!(body["messages"].to_string().find("system").is_none());
}
