//! Helpers shared by the suites: clients pointed at the mock server, a recording sink, a hang
//! guard, and a provider switch so one test body can run against both wire formats.

use baton_llm::anthropic::AnthropicClient;
use baton_llm::openai::OpenAiClient;
use baton_llm::retry::RetryPolicy;
use baton_llm::{ChatRequest, ChatResponse, LlmError, Message, ModelClient, StreamEvent, ToolSpec};
use baton_test_support::{MockResponse, MockServer, anthropic_stream, openai_stream};
use serde_json::json;
use std::future::Future;
use std::ops::ControlFlow;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The API key the clients send; tests assert it never leaks.
pub const KEY: &str = "sk-test-7b1e5c0ffee";

/// Retries with tiny delays, so tests stay fast whatever the attempt count.
pub fn fast_policy() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 4,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
        max_retry_after: Duration::from_millis(20),
        timeout: Duration::from_secs(60),
        max_answer_bytes: baton_llm::retry::DEFAULT_MAX_ANSWER_BYTES,
    }
}

/// Fails the test if `future` hangs (a safety net, not a timing assertion).
pub async fn guard<F: Future>(future: F) -> F::Output {
    match tokio::time::timeout(Duration::from_secs(60), future).await {
        Ok(output) => output,
        Err(_) => panic!("the operation hung for 60 s"),
    }
}

/// The two HTTP wire formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    OpenAi,
    Anthropic,
}

pub const BOTH: [Wire; 2] = [Wire::OpenAi, Wire::Anthropic];

impl Wire {
    pub fn client(self, server: &MockServer, policy: RetryPolicy) -> Box<dyn ModelClient> {
        self.client_at(&server.url(), policy)
    }

    /// A client for the server at `url` (`http://host:port`).
    pub fn client_at(self, url: &str, policy: RetryPolicy) -> Box<dyn ModelClient> {
        match self {
            Wire::OpenAi => Box::new(
                OpenAiClient::new("openai", format!("{url}/v1"), Some(KEY.into()))
                    .expect("client")
                    .with_retry_policy(policy),
            ),
            Wire::Anthropic => Box::new(
                AnthropicClient::new("anthropic", url, Some(KEY.into()))
                    .expect("client")
                    .with_retry_policy(policy),
            ),
        }
    }

    /// Events of [`Wire::text_events`] before the first text delta.
    pub fn preamble(self) -> usize {
        match self {
            // the `role` chunk
            Wire::OpenAi => 1,
            // message_start, content_block_start, ping
            Wire::Anthropic => 3,
        }
    }

    pub fn text_events(self, parts: &[&str]) -> Vec<String> {
        match self {
            Wire::OpenAi => openai_stream::text_events(parts, None),
            Wire::Anthropic => {
                anthropic_stream::text_events(parts, anthropic_stream::Usage::default())
            }
        }
    }

    pub fn text(self, parts: &[&str]) -> MockResponse {
        MockResponse::sse_events(self.text_events(parts))
    }

    /// A text stream that sends `parts` and then keeps the connection open, trickling keep-alive
    /// comments (or pings) without ever completing.
    pub fn endless(self, parts: &[&str]) -> MockResponse {
        let events = self.text_events(parts);
        // Keep the preamble and the text deltas, cut before the closing events.
        let keep = self.preamble() + parts.len();
        let keep_alive = match self {
            Wire::OpenAi => ": keep-alive\n\n".to_owned(),
            Wire::Anthropic => anthropic_stream::ping(),
        };
        MockResponse::sse_events(events[..keep].to_vec()).trickle(5, &keep_alive)
    }

    pub fn error(self, status: u16, message: &str) -> MockResponse {
        let body = match self {
            Wire::OpenAi => openai_stream::error_body("invalid_request_error", message),
            Wire::Anthropic => anthropic_stream::error_body("invalid_request_error", message),
        };
        MockResponse::json(status, &body)
    }
}

pub fn user_request(text: &str) -> ChatRequest {
    ChatRequest {
        model: "test-model".into(),
        system: "You are terse.".into(),
        messages: vec![Message::User { text: text.into() }],
        tools: vec![read_tool()],
        max_tokens: None,
        temperature: None,
        agent: "scout".into(),
        unit: None,
    }
}

pub fn read_tool() -> ToolSpec {
    ToolSpec {
        name: "read_file".into(),
        description: "Reads a file".into(),
        parameters: json!({
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        }),
    }
}

/// Runs one call, recording every event.
pub async fn run(
    client: &dyn ModelClient,
    request: &ChatRequest,
) -> (Result<ChatResponse, LlmError>, Vec<StreamEvent>) {
    let cancel = CancellationToken::new();
    run_with(client, request, &cancel, |_| ControlFlow::Continue(())).await
}

/// Runs one call with a custom sink decision, recording every event.
pub async fn run_with(
    client: &dyn ModelClient,
    request: &ChatRequest,
    cancel: &CancellationToken,
    mut decide: impl FnMut(&StreamEvent) -> ControlFlow<String> + Send,
) -> (Result<ChatResponse, LlmError>, Vec<StreamEvent>) {
    let mut events = Vec::new();
    let mut sink = |event: &StreamEvent| {
        events.push(event.clone());
        decide(event)
    };
    let result = guard(client.chat(request, &mut sink, cancel)).await;
    (result, events)
}

pub fn text_deltas(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

pub fn retries(events: &[StreamEvent]) -> Vec<u32> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Retrying { attempt, .. } => Some(*attempt),
            _ => None,
        })
        .collect()
}
