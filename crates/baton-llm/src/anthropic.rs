//! The Anthropic Messages API client.
//!
//! `POST {base_url}/v1/messages` with `stream: true`. The system prompt is the top-level
//! `system`, as a text block; the conversation is folded into turns the API accepts (the
//! crate's `conversation` module): roles alternate from `user`, assistant turns are `text` and
//! `tool_use` blocks, and the results of an assistant turn's calls open the very next user
//! message as `tool_result` blocks, any text after them. Prompt-cache breakpoints go on the
//! tools, the system text and the end of the conversation ([`crate::cache::mark_anthropic`]),
//! unless the provider's `cache` is `off`. The stream is named SSE events:
//! `message_start` (input and cache usage), `content_block_start/delta/stop` per block
//! (`input_json_delta` fragments are concatenated and parsed at the block's stop),
//! `message_delta` (stop reason, cumulative output tokens), `message_stop`; `ping` and unknown
//! events are ignored, an `error` event ends the attempt (`overloaded_error` and `api_error` are
//! retried).

use crate::cache::{self, PromptCache};
use crate::client::{BoxFuture, ModelClient, StreamSink};
use crate::conversation::{self, Turn, WireCall};
use crate::error::LlmError;
use crate::retry::Endpoint;
use crate::retry::{Failure, Flow, HttpCall, RetryPolicy, StreamDecoder, emit};
use crate::sse::SseEvent;
use crate::types::{ChatRequest, ChatResponse, StopReason, StreamEvent, ToolCall, Usage};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use tokio_util::sync::CancellationToken;

/// The API version header value this client speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Output token limit sent when the request sets none (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// A client for the Anthropic Messages API (or a server speaking it).
#[derive(Debug)]
pub struct AnthropicClient {
    ep: Endpoint,
    cache: PromptCache,
}

impl AnthropicClient {
    /// A client for the provider called `name` (used in messages) at `base_url` (e.g.
    /// `https://api.anthropic.com`); `api_key` is sent as `x-api-key` when given.
    pub fn new(
        name: impl Into<String>,
        base_url: impl Into<String>,
        api_key: Option<String>,
    ) -> Result<AnthropicClient, LlmError> {
        Ok(AnthropicClient {
            ep: Endpoint::new(name.into(), base_url.into(), api_key)?,
            cache: PromptCache::default(),
        })
    }

    /// Chooses the prompt-cache breakpoints' lifetime, or none (default: five minutes).
    pub fn with_cache(mut self, cache: PromptCache) -> AnthropicClient {
        self.cache = cache;
        self
    }

    /// Replaces the retry policy (attempts, backoff, timeout).
    pub fn with_retry_policy(mut self, policy: RetryPolicy) -> AnthropicClient {
        self.ep.policy = policy;
        self
    }

    fn request(&self, body: &Value) -> reqwest::RequestBuilder {
        let mut request = self
            .ep
            .http
            .post(format!("{}/v1/messages", self.ep.base_url))
            .header("anthropic-version", ANTHROPIC_VERSION)
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .json(body);
        if let Some(key) = &self.ep.api_key {
            request = request.header("x-api-key", key);
        }
        request
    }
}

impl ModelClient for AnthropicClient {
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
        sink: &'a mut StreamSink<'_>,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(async move {
            let body = request_body(request, self.cache);
            let call = HttpCall {
                provider: &self.ep.name,
                policy: &self.ep.policy,
                secret: self.ep.api_key.as_deref(),
                build: || self.request(&body),
                decoder: || AnthropicDecoder::new(&self.ep.name),
            };
            call.run(sink, cancel).await
        })
    }
}

/// The JSON body of a streamed Messages request: the conversation folded into turns the API
/// accepts ([`conversation::turns`]), `system` as a text block, with `cache` breakpoints where
/// the prefix is long enough to be cached ([`cache::mark_anthropic`]).
pub(crate) fn request_body(request: &ChatRequest, cache: PromptCache) -> Value {
    let messages: Vec<Value> = conversation::turns(&request.messages)
        .iter()
        .map(message)
        .collect();
    let mut body = Map::new();
    body.insert("model".into(), request.model.as_str().into());
    body.insert(
        "max_tokens".into(),
        request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS).into(),
    );
    if !request.system.is_empty() {
        body.insert(
            "system".into(),
            json!([{"type": "text", "text": request.system}]),
        );
    }
    body.insert("messages".into(), messages.into());
    if !request.tools.is_empty() {
        let tools = request.tools.iter().map(|tool| {
            json!({
                "name": tool.name,
                "description": tool.description,
                "input_schema": tool.parameters,
            })
        });
        body.insert("tools".into(), tools.collect());
    }
    if let Some(temperature) = request.temperature {
        body.insert("temperature".into(), f64::from(temperature).into());
    }
    body.insert("stream".into(), true.into());
    let mut body = Value::Object(body);
    cache::mark_anthropic(&mut body, cache);
    body
}

/// One turn as a Messages API message: a user turn's results before its texts, an assistant
/// turn's text before its `tool_use` blocks.
fn message(turn: &Turn<'_>) -> Value {
    match turn {
        Turn::User { results, texts } => {
            let results = results.iter().map(|r| {
                json!({
                    "type": "tool_result",
                    "tool_use_id": r.id,
                    "content": r.content,
                    "is_error": r.is_error,
                })
            });
            let texts = texts.iter().map(|t| json!({"type": "text", "text": t}));
            json!({"role": "user", "content": results.chain(texts).collect::<Vec<_>>()})
        }
        Turn::Assistant { text, calls } => {
            let mut blocks = Vec::with_capacity(calls.len() + 1);
            if !text.is_empty() {
                blocks.push(json!({"type": "text", "text": text}));
            }
            for WireCall { id, call } in calls {
                let input = match &call.arguments {
                    Ok(value @ Value::Object(_)) => value.clone(),
                    _ => Value::Object(Map::new()),
                };
                blocks.push(json!({
                    "type": "tool_use", "id": id, "name": call.name, "input": input,
                }));
            }
            json!({"role": "assistant", "content": blocks})
        }
    }
}

#[derive(Debug)]
enum Block {
    Text,
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
    Other,
}

/// Assembles a response from Messages stream events.
#[derive(Debug)]
struct AnthropicDecoder {
    provider: String,
    blocks: BTreeMap<u64, Block>,
    text: String,
    tool_calls: Vec<ToolCall>,
    usage: Usage,
    stop_reason: Option<String>,
}

impl AnthropicDecoder {
    fn new(provider: &str) -> AnthropicDecoder {
        AnthropicDecoder {
            provider: provider.to_owned(),
            blocks: BTreeMap::new(),
            text: String::new(),
            tool_calls: Vec::new(),
            usage: Usage::default(),
            stop_reason: None,
        }
    }

    /// Reads the usage fields present in `usage` (message_start has all, message_delta has the
    /// cumulative output count and, in newer API versions, the input counts again).
    fn update_usage(&mut self, usage: &Value, sink: &mut StreamSink<'_>) -> Result<(), Failure> {
        if !usage.is_object() {
            return Ok(());
        }
        let fields = [
            ("input_tokens", &mut self.usage.input_tokens),
            ("output_tokens", &mut self.usage.output_tokens),
            ("cache_read_input_tokens", &mut self.usage.cache_read_tokens),
            (
                "cache_creation_input_tokens",
                &mut self.usage.cache_write_tokens,
            ),
        ];
        for (key, slot) in fields {
            if let Some(n) = usage[key].as_u64() {
                *slot = n;
            }
        }
        emit(sink, StreamEvent::Usage(self.usage))
    }

    fn error_event(&self, data: &Value) -> Failure {
        let kind = data["error"]["type"].as_str().unwrap_or("unknown_error");
        let status = match kind {
            "invalid_request_error" => 400,
            "authentication_error" => 401,
            "permission_error" => 403,
            "not_found_error" => 404,
            "request_too_large" => 413,
            "rate_limit_error" => 429,
            "overloaded_error" => 529,
            _ => 500,
        };
        let error = LlmError::Http {
            provider: self.provider.clone(),
            status,
            body: data.to_string(),
        };
        if crate::retry::is_retryable_status(status) {
            Failure::Retry {
                error,
                retry_after: None,
            }
        } else {
            Failure::Fatal(error)
        }
    }
}

impl StreamDecoder for AnthropicDecoder {
    fn on_event(&mut self, event: SseEvent, sink: &mut StreamSink<'_>) -> Result<Flow, Failure> {
        let data: Value = match serde_json::from_str(&event.data) {
            Ok(data) => data,
            Err(e) => {
                let detail = format!("invalid event JSON ({e}): {}", event.data);
                return Err(Failure::protocol(&self.provider, detail));
            }
        };
        let name = event
            .event
            .as_deref()
            .or_else(|| data["type"].as_str())
            .unwrap_or("");
        let index = data["index"].as_u64().unwrap_or(0);
        match name {
            "message_start" => self.update_usage(&data["message"]["usage"], sink)?,
            "content_block_start" => {
                let block = &data["content_block"];
                match block["type"].as_str() {
                    Some("text") => {
                        self.blocks.insert(index, Block::Text);
                        if let Some(text) = block["text"].as_str().filter(|t| !t.is_empty()) {
                            self.text.push_str(text);
                            emit(sink, StreamEvent::TextDelta(text.to_owned()))?;
                        }
                    }
                    Some("tool_use") => {
                        let id = block["id"].as_str().unwrap_or("").to_owned();
                        let name = block["name"].as_str().unwrap_or("").to_owned();
                        let started = StreamEvent::ToolCallStarted {
                            id: id.clone(),
                            name: name.clone(),
                        };
                        let json = String::new();
                        self.blocks.insert(index, Block::ToolUse { id, name, json });
                        emit(sink, started)?;
                    }
                    _ => {
                        self.blocks.insert(index, Block::Other);
                    }
                }
            }
            "content_block_delta" => {
                let delta = &data["delta"];
                match (delta["type"].as_str(), self.blocks.get_mut(&index)) {
                    (Some("text_delta"), _) => {
                        if let Some(text) = delta["text"].as_str().filter(|t| !t.is_empty()) {
                            self.text.push_str(text);
                            emit(sink, StreamEvent::TextDelta(text.to_owned()))?;
                        }
                    }
                    (Some("input_json_delta"), Some(Block::ToolUse { json, .. })) => {
                        let fragment = delta["partial_json"].as_str().unwrap_or("");
                        json.push_str(fragment);
                        if !fragment.is_empty() {
                            emit(sink, StreamEvent::ToolArgumentsDelta(fragment.to_owned()))?;
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                if let Some(Block::ToolUse { id, name, json }) = self.blocks.remove(&index) {
                    self.tool_calls.push(ToolCall::new(id, name, json));
                }
            }
            "message_delta" => {
                if let Some(reason) = data["delta"]["stop_reason"].as_str() {
                    self.stop_reason = Some(reason.to_owned());
                }
                self.update_usage(&data["usage"], sink)?;
            }
            "message_stop" => return Ok(Flow::Done),
            "error" => return Err(self.error_event(&data)),
            _ => {}
        }
        Ok(Flow::Continue)
    }

    fn finish(self, ended_by_provider: bool) -> Result<ChatResponse, Failure> {
        if !ended_by_provider && self.stop_reason.is_none() {
            return Err(Failure::dropped(
                &self.provider,
                "the stream ended before `message_stop`",
            ));
        }
        let stop = match self.stop_reason.as_deref() {
            Some("end_turn") | None => StopReason::EndTurn,
            Some("tool_use") => StopReason::ToolUse,
            Some("max_tokens") => StopReason::MaxTokens,
            Some(other) => StopReason::Other(other.to_owned()),
        };
        Ok(ChatResponse {
            text: self.text,
            tool_calls: self.tool_calls,
            usage: self.usage,
            stop,
        })
    }

    fn partial(&self) -> ChatResponse {
        let mut tool_calls = self.tool_calls.clone();
        for block in self.blocks.values() {
            if let Block::ToolUse { id, name, json } = block {
                tool_calls.push(ToolCall::new(id.clone(), name.clone(), json.clone()));
            }
        }
        ChatResponse {
            text: self.text.clone(),
            tool_calls,
            usage: self.usage,
            stop: StopReason::Other("aborted".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Message, ToolSpec};

    fn result(id: &str, content: &str, is_error: bool) -> Message {
        Message::ToolResult {
            call_id: id.into(),
            name: "read".into(),
            content: content.into(),
            is_error,
        }
    }

    #[test]
    fn body_has_the_messages_shape() {
        let request = ChatRequest {
            model: "claude-x".into(),
            system: "be brief".into(),
            messages: vec![
                Message::User { text: "hi".into() },
                Message::Assistant {
                    text: "Reading.".into(),
                    tool_calls: vec![
                        ToolCall::new("t1", "read", r#"{"path":"a"}"#),
                        ToolCall::new("t2", "read", "{broken"),
                    ],
                },
                result("t1", "A", false),
                result("t2", "bad arguments", true),
                Message::User {
                    text: "go on".into(),
                },
            ],
            tools: vec![ToolSpec {
                name: "read".into(),
                description: "reads".into(),
                parameters: json!({"type": "object"}),
            }],
            max_tokens: None,
            temperature: Some(0.5),
            agent: "scout".into(),
            unit: None,
        };
        let body = request_body(&request, PromptCache::default());
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "be brief"}])
        );
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        assert_eq!(body["temperature"], 0.5);
        let messages = body["messages"].as_array().map(Vec::len);
        assert_eq!(messages, Some(3));
        assert_eq!(
            body["messages"][1]["content"][1],
            json!({"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"}})
        );
        assert_eq!(body["messages"][1]["content"][2]["input"], json!({}));
        assert_eq!(
            body["messages"][2],
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "A", "is_error": false},
                {"type": "tool_result", "tool_use_id": "t2", "content": "bad arguments", "is_error": true},
                {"type": "text", "text": "go on"},
            ]})
        );
        assert_eq!(
            body["tools"][0],
            json!({"name": "read", "description": "reads", "input_schema": {"type": "object"}})
        );
    }

    /// user task → call → result → call → result → two parallel calls → both results → final
    /// text: roles alternate, each result answers the assistant turn just before it.
    #[test]
    fn a_multi_turn_tool_conversation_alternates_and_pairs_every_call() {
        let call = |id: &str, path: &str| {
            ToolCall::new(id, "read_file", format!(r#"{{"path":"{path}"}}"#))
        };
        let request = ChatRequest {
            model: "claude-x".into(),
            system: "sys".into(),
            messages: vec![
                Message::User {
                    text: "task".into(),
                },
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![call("toolu_1", "a")],
                },
                result("toolu_1", "A", false),
                Message::Assistant {
                    text: "Next.".into(),
                    tool_calls: vec![call("toolu_2", "b")],
                },
                result("toolu_2", "B", false),
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![call("toolu_3", "c"), call("toolu_4", "d")],
                },
                result("toolu_3", "C", false),
                result("toolu_4", "no such file", true),
                Message::Assistant {
                    text: "Done.".into(),
                    tool_calls: Vec::new(),
                },
            ],
            tools: Vec::new(),
            max_tokens: None,
            temperature: None,
            agent: "developer".into(),
            unit: None,
        };
        let use_ = |id: &str, path: &str| json!({"type": "tool_use", "id": id, "name": "read_file", "input": {"path": path}});
        let res = |id: &str, content: &str, is_error: bool| json!({"type": "tool_result", "tool_use_id": id, "content": content, "is_error": is_error});
        assert_eq!(
            request_body(&request, PromptCache::default())["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "task"}]},
                {"role": "assistant", "content": [use_("toolu_1", "a")]},
                {"role": "user", "content": [res("toolu_1", "A", false)]},
                {"role": "assistant", "content": [{"type": "text", "text": "Next."}, use_("toolu_2", "b")]},
                {"role": "user", "content": [res("toolu_2", "B", false)]},
                {"role": "assistant", "content": [use_("toolu_3", "c"), use_("toolu_4", "d")]},
                {"role": "user", "content": [res("toolu_3", "C", false), res("toolu_4", "no such file", true)]},
                {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
            ])
        );
    }

    #[test]
    fn error_events_are_classified() {
        let d = AnthropicDecoder::new("anthropic");
        let overloaded = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
        assert!(matches!(d.error_event(&overloaded), Failure::Retry { .. }));
        let invalid =
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "no"}});
        assert!(matches!(
            d.error_event(&invalid),
            Failure::Fatal(LlmError::Http { status: 400, .. })
        ));
    }
}
