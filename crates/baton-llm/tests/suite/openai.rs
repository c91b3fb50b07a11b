//! The OpenAI-compatible client against the mock server: answers, tool calls, usage, wire shape.

use super::common::{KEY, Wire, fast_policy, run, text_deltas, user_request};
use baton_llm::openai::OpenAiClient;
use baton_llm::{Message, StopReason, StreamEvent, ToolCall, Usage};
use baton_test_support::openai_stream::{self, Usage as WireUsage, chunk};
use baton_test_support::{MockResponse, MockServer};
use serde_json::json;

fn client(server: &MockServer) -> Box<dyn baton_llm::ModelClient> {
    Wire::OpenAi.client(server, fast_policy())
}

#[tokio::test]
async fn text_answer_streams_deltas_and_usage() {
    let server = MockServer::start().await;
    let usage = WireUsage {
        prompt_tokens: 42,
        completion_tokens: 7,
        cached_tokens: 0,
    };
    server.enqueue(openai_stream::text(
        &["Hel", "lo, ", "wörld 🦀"],
        Some(usage),
    ));
    let (result, events) = run(&*client(&server), &user_request("hi")).await;
    let response = result.expect("answer");
    assert_eq!(response.text, "Hello, wörld 🦀");
    assert_eq!(text_deltas(&events), "Hello, wörld 🦀");
    assert!(response.tool_calls.is_empty());
    assert_eq!(response.stop, StopReason::EndTurn);
    let expected = Usage {
        input_tokens: 42,
        output_tokens: 7,
        ..Usage::default()
    };
    assert_eq!(response.usage, expected);
    assert_eq!(events.last(), Some(&StreamEvent::Usage(expected)));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn cached_tokens_are_split_from_the_prompt_tokens() {
    let server = MockServer::start().await;
    let usage = WireUsage {
        prompt_tokens: 1000,
        completion_tokens: 50,
        cached_tokens: 800,
    };
    server.enqueue(openai_stream::text(&["ok"], Some(usage)));
    let (result, _) = run(&*client(&server), &user_request("hi")).await;
    let usage = result.expect("answer").usage;
    assert_eq!(
        usage,
        Usage {
            input_tokens: 200,
            output_tokens: 50,
            cache_read_tokens: 800,
            cache_write_tokens: 0,
        }
    );
    assert_eq!(usage.total_input(), 1000);
}

#[tokio::test]
async fn a_stream_without_usage_reports_zero_usage() {
    let server = MockServer::start().await;
    server.enqueue(openai_stream::text(&["ok"], None));
    let (result, _) = run(&*client(&server), &user_request("hi")).await;
    assert_eq!(result.expect("answer").usage, Usage::default());
}

#[tokio::test]
async fn tool_call_arguments_split_across_many_deltas_are_joined() {
    let server = MockServer::start().await;
    let arguments = r#"{"path": "src/lib.rs", "note": "ünïcode ✓"}"#;
    server.enqueue(openai_stream::tool_calls(
        "",
        &[("call_abc", "read_file", arguments)],
        3,
        None,
    ));
    let (result, events) = run(&*client(&server), &user_request("read it")).await;
    let response = result.expect("answer");
    assert_eq!(response.stop, StopReason::ToolUse);
    assert_eq!(response.tool_calls.len(), 1);
    let call = &response.tool_calls[0];
    assert_eq!(
        (call.id.as_str(), call.name.as_str()),
        ("call_abc", "read_file")
    );
    assert_eq!(call.raw_arguments, arguments);
    assert_eq!(
        call.arguments,
        Ok(json!({"path": "src/lib.rs", "note": "ünïcode ✓"}))
    );
    let fragments = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::ToolArgumentsDelta(_)))
        .count();
    assert!(fragments > 10, "expected many fragments, got {fragments}");
    assert_eq!(
        events[0],
        StreamEvent::ToolCallStarted {
            id: "call_abc".into(),
            name: "read_file".into()
        }
    );
}

#[tokio::test]
async fn two_tool_calls_in_one_turn_keep_their_order_and_text() {
    let server = MockServer::start().await;
    server.enqueue(openai_stream::tool_calls(
        "Reading both.",
        &[
            ("call_1", "read_file", r#"{"path":"a.rs"}"#),
            ("call_2", "list_files", r#"{"pattern":"**/*.rs"}"#),
        ],
        4,
        Some(WireUsage {
            prompt_tokens: 10,
            completion_tokens: 20,
            cached_tokens: 0,
        }),
    ));
    let (result, _) = run(&*client(&server), &user_request("read")).await;
    let response = result.expect("answer");
    assert_eq!(response.text, "Reading both.");
    let calls: Vec<(&str, &str)> = response
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str()))
        .collect();
    assert_eq!(calls, [("call_1", "read_file"), ("call_2", "list_files")]);
    assert_eq!(
        response.tool_calls[1].arguments,
        Ok(json!({"pattern": "**/*.rs"}))
    );
    assert_eq!(response.usage.output_tokens, 20);
}

#[tokio::test]
async fn interleaved_tool_call_deltas_are_assembled_by_index() {
    let server = MockServer::start().await;
    let call = |index: u64, fields: serde_json::Value| {
        let mut delta = json!({"index": index});
        if let (Some(d), Some(f)) = (delta.as_object_mut(), fields.as_object()) {
            d.extend(f.clone());
        }
        chunk(json!({"tool_calls": [delta]}), None)
    };
    server.enqueue(MockResponse::sse_events(vec![
        chunk(json!({"role": "assistant", "content": null}), None),
        call(0, json!({"id": "a", "type": "function", "function": {"name": "x", "arguments": ""}})),
        call(1, json!({"id": "b", "type": "function", "function": {"name": "y", "arguments": "{\"n\""}})),
        call(0, json!({"function": {"arguments": "{\"m\":"}})),
        call(1, json!({"function": {"arguments": ":2}"}})),
        call(0, json!({"function": {"arguments": "1}"}})),
        chunk(json!({}), Some("tool_calls")),
        openai_stream::done(),
    ]));
    let (result, _) = run(&*client(&server), &user_request("go")).await;
    let calls = result.expect("answer").tool_calls;
    assert_eq!(calls[0].arguments, Ok(json!({"m": 1})));
    assert_eq!(calls[1].arguments, Ok(json!({"n": 2})));
}

#[tokio::test]
async fn malformed_tool_arguments_yield_an_argument_error_not_a_failed_call() {
    let server = MockServer::start().await;
    server.enqueue(openai_stream::tool_calls(
        "",
        &[("call_x", "read_file", r#"{"path": "a.rs""#)],
        5,
        None,
    ));
    let (result, _) = run(&*client(&server), &user_request("read")).await;
    let response = result.expect("the call itself succeeds");
    let call = &response.tool_calls[0];
    assert_eq!(call.raw_arguments, r#"{"path": "a.rs""#);
    assert!(call.arguments.is_err(), "{:?}", call.arguments);
}

#[tokio::test]
async fn a_stream_cut_into_tiny_pieces_parses_the_same() {
    let server = MockServer::start().await;
    server.enqueue(openai_stream::text(&["naïve ", "🦀 ", "café"], None).rechunk(3));
    server.enqueue(
        openai_stream::tool_calls("", &[("c", "read_file", r#"{"path":"é"}"#)], 2, None).rechunk(1),
    );
    let (result, _) = run(&*client(&server), &user_request("hi")).await;
    assert_eq!(result.expect("answer").text, "naïve 🦀 café");
    let (result, _) = run(&*client(&server), &user_request("hi")).await;
    assert_eq!(
        result.expect("answer").tool_calls[0].arguments,
        Ok(json!({"path": "é"}))
    );
}

#[tokio::test]
async fn length_finish_reason_is_max_tokens() {
    let server = MockServer::start().await;
    server.enqueue(MockResponse::sse_events(vec![
        chunk(json!({"content": "trunc"}), None),
        chunk(json!({}), Some("length")),
        openai_stream::done(),
    ]));
    let (result, _) = run(&*client(&server), &user_request("hi")).await;
    assert_eq!(result.expect("answer").stop, StopReason::MaxTokens);
}

#[tokio::test]
async fn request_body_has_the_chat_completions_shape() {
    let server = MockServer::start().await;
    server.enqueue(openai_stream::text(&["done"], None));
    let mut request = user_request("read a.rs");
    request.max_tokens = Some(256);
    request.messages.push(Message::Assistant {
        text: "Reading.".into(),
        tool_calls: vec![ToolCall::new("call_1", "read_file", r#"{"path":"a.rs"}"#)],
    });
    request.messages.push(Message::ToolResult {
        call_id: "call_1".into(),
        name: "read_file".into(),
        content: "fn main() {}".into(),
        is_error: false,
    });
    let (result, _) = run(&*client(&server), &request).await;
    result.expect("answer");
    let requests = server.requests();
    let received = &requests[0];
    assert_eq!(received.method, "POST");
    assert_eq!(received.path, "/v1/chat/completions");
    assert_eq!(
        received.header("authorization"),
        Some(&*format!("Bearer {KEY}"))
    );
    assert!(
        !received.raw_body.contains(KEY),
        "the key leaked into the body"
    );
    let body = &received.body;
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["max_tokens"], 256);
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "read a.rs"},
            {"role": "assistant", "content": "Reading.", "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "read_file", "arguments": "{\"path\":\"a.rs\"}"}},
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "fn main() {}"},
        ])
    );
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {
            "name": "read_file",
            "description": "Reads a file",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        }}])
    );
    assert!(body.get("agent").is_none());
}

#[tokio::test]
async fn without_a_key_no_authorization_header_is_sent() {
    let server = MockServer::start().await;
    server.enqueue(openai_stream::text(&["hi"], None));
    let client = OpenAiClient::new("ollama", format!("{}/v1/", server.url()), None)
        .expect("client")
        .with_retry_policy(fast_policy());
    let (result, _) = run(&client, &user_request("hi")).await;
    result.expect("answer");
    let requests = server.requests();
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].header("authorization"), None);
}

#[tokio::test]
async fn an_error_object_in_the_stream_is_a_protocol_error() {
    let server = MockServer::start().await;
    server.enqueue(MockResponse::sse_events(vec![openai_stream::event(
        &json!({
            "error": {"message": "model crashed", "code": 502}
        }),
    )]));
    let (result, _) = run(&*client(&server), &user_request("hi")).await;
    match result {
        Err(baton_llm::LlmError::Protocol { detail, .. }) => {
            assert!(detail.contains("model crashed"), "{detail}")
        }
        other => panic!("expected a protocol error, got {other:?}"),
    }
}

#[tokio::test]
async fn captured_llama_cpp_python_streams_decode() {
    use baton_test_support::captures;
    let server = MockServer::start().await;
    server.enqueue(captures::replay(captures::PYSERVER_TOOLS_FORCED));
    server.enqueue(captures::replay(captures::PYSERVER_PLAIN));
    let c = client(&server);
    let (result, events) = run(&*c, &user_request("weather?")).await;
    let response = result.expect("answer");
    assert_eq!(response.stop, StopReason::ToolUse);
    assert_eq!(response.tool_calls.len(), 1, "{response:?}");
    assert_eq!(response.tool_calls[0].name, "get_weather");
    assert!(response.tool_calls[0].arguments.is_ok(), "{response:?}");
    assert_eq!(response.usage, Usage::default(), "no usage is streamed");
    assert!(!events.iter().any(|e| matches!(e, StreamEvent::Usage(_))));
    let (result, _) = run(&*c, &user_request("hi")).await;
    let response = result.expect("answer");
    assert_eq!(response.text, "\u{1f609}\n");
    assert_eq!(response.usage, Usage::default());
}

#[tokio::test]
async fn an_empty_200_is_its_own_error() {
    use baton_test_support::captures;
    let server = MockServer::start().await;
    server.enqueue(captures::empty_200());
    let (result, _) = run(&*client(&server), &user_request("weather?")).await;
    assert!(
        matches!(result, Err(baton_llm::LlmError::EmptyAnswer { .. })),
        "{result:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn the_tool_probe_accepts_a_forced_call_of_another_tool() {
    use baton_llm::probe::{ToolProbe, probe_tools};
    use baton_test_support::captures;
    let server = MockServer::start().await;
    server.enqueue(captures::replay(captures::PYSERVER_TOOLS_FORCED));
    let c = client(&server);
    let probe = probe_tools(&*c, "tiny").await.expect("answer");
    assert_eq!(probe, ToolProbe::Ok);
}
