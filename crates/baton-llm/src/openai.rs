//! The OpenAI-compatible chat completions client (OpenAI, Ollama, vLLM, llama.cpp, OpenRouter).
//!
//! `POST {base_url}/chat/completions` with `stream: true` and `stream_options.include_usage`, so
//! the last chunk (`choices: []`) carries the usage. Text arrives as `delta.content`; tool calls
//! as `delta.tool_calls[]` keyed by `index`, whose `id` and `name` come once and whose
//! `arguments` are fragments, concatenated and parsed only at the end — invalid JSON becomes
//! `ToolCall::arguments: Err`, never a failed call. `data: [DONE]` ends the stream; a body that
//! ends before both `[DONE]` and a `finish_reason` is a dropped connection and is retried.
//!
//! Two prompt-cache hints are sent only where the provider's settings say the server takes them
//! ([`crate::cache`]): `prompt_cache_key` (OpenAI's API) and `cache_prompt` (llama.cpp's server).
//! Servers that refuse parameters they do not know never see either.

use crate::cache;
use crate::client::{BoxFuture, ModelClient, StreamSink};
use crate::conversation::{self, Turn, WireCall};
use crate::error::LlmError;
use crate::retry::{Endpoint, HttpCall, RetryPolicy, emit};
use crate::retry::{Failure, Flow, StreamDecoder};
use crate::sse::SseEvent;
use crate::types::{ChatRequest, ChatResponse, StopReason, StreamEvent, ToolCall, Usage};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use tokio_util::sync::CancellationToken;

/// The `tool_choice` an OpenAI-compatible provider is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoice {
    /// The model decides whether to call a tool.
    Auto,
    /// The model must call a tool every turn.
    Required,
    /// The model must not call tools.
    None,
}

impl ToolChoice {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolChoice::Auto => "auto",
            ToolChoice::Required => "required",
            ToolChoice::None => "none",
        }
    }
}

/// A client for one OpenAI-compatible endpoint.
#[derive(Debug)]
pub struct OpenAiClient {
    ep: Endpoint,
    tool_choice: Option<ToolChoice>,
    cache_key: bool,
    cache_prompt: bool,
}

impl OpenAiClient {
    /// A client for the provider called `name` (used in messages) at `base_url` (e.g.
    /// `https://api.openai.com/v1`); `api_key` is sent as `Authorization: Bearer` when given.
    pub fn new(
        name: impl Into<String>,
        base_url: impl Into<String>,
        api_key: Option<String>,
    ) -> Result<OpenAiClient, LlmError> {
        Ok(OpenAiClient {
            ep: Endpoint::new(name.into(), base_url.into(), api_key)?,
            tool_choice: None,
            cache_key: false,
            cache_prompt: false,
        })
    }

    /// Replaces the retry policy (attempts, backoff, timeout).
    pub fn with_retry_policy(mut self, policy: RetryPolicy) -> OpenAiClient {
        self.ep.policy = policy;
        self
    }

    /// Sends `tool_choice` with every request that offers tools (`None`: the server's default).
    pub fn with_tool_choice(mut self, choice: Option<ToolChoice>) -> OpenAiClient {
        self.tool_choice = choice;
        self
    }

    /// Sends a `prompt_cache_key` (per agent and unit, [`cache::prompt_cache_key`]) with every
    /// request: only for servers that take it (OpenAI's API).
    pub fn with_cache_key(mut self, send: bool) -> OpenAiClient {
        self.cache_key = send;
        self
    }

    /// Sends `cache_prompt: true` with every request: only for llama.cpp's server.
    pub fn with_cache_prompt(mut self, send: bool) -> OpenAiClient {
        self.cache_prompt = send;
        self
    }

    /// The body of `request` as this client sends it: [`request_body`] and the provider's own
    /// parameters (`tool_choice`, the cache hints).
    pub(crate) fn body(&self, request: &ChatRequest) -> Value {
        let mut body = request_body(request);
        if let Some(map) = body.as_object_mut() {
            if let (Some(choice), false) = (self.tool_choice, request.tools.is_empty()) {
                map.insert("tool_choice".into(), choice.as_str().into());
            }
            if self.cache_key {
                let key = cache::prompt_cache_key(&request.agent, request.unit.as_deref());
                map.insert("prompt_cache_key".into(), key.into());
            }
            if self.cache_prompt {
                map.insert("cache_prompt".into(), true.into());
            }
        }
        body
    }

    fn request(&self, body: &Value) -> reqwest::RequestBuilder {
        let mut request = self
            .ep
            .http
            .post(format!("{}/chat/completions", self.ep.base_url))
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .json(body);
        if let Some(key) = &self.ep.api_key {
            request = request.bearer_auth(key);
        }
        request
    }
}

impl ModelClient for OpenAiClient {
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
        sink: &'a mut StreamSink<'_>,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(async move {
            let body = self.body(request);
            let call = HttpCall {
                provider: &self.ep.name,
                policy: &self.ep.policy,
                secret: self.ep.api_key.as_deref(),
                build: || self.request(&body),
                decoder: || OpenAiDecoder::new(&self.ep.name),
            };
            call.run(sink, cancel).await
        })
    }
}

/// The JSON body of a streamed chat completion request: the conversation folded into turns the
/// API accepts ([`conversation::turns`]), each assistant message with `tool_calls` followed by
/// one `tool` message per call, in call order.
pub(crate) fn request_body(request: &ChatRequest) -> Value {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system}));
    }
    for turn in conversation::turns(&request.messages) {
        match turn {
            Turn::User { results, texts } => {
                for r in results {
                    messages
                        .push(json!({"role": "tool", "tool_call_id": r.id, "content": r.content}));
                }
                if !texts.is_empty() {
                    messages.push(json!({"role": "user", "content": texts.join("\n\n")}));
                }
            }
            Turn::Assistant { text, calls } => {
                let mut m = Map::new();
                m.insert("role".into(), "assistant".into());
                let content = if text.is_empty() && !calls.is_empty() {
                    Value::Null
                } else {
                    Value::from(text)
                };
                m.insert("content".into(), content);
                if !calls.is_empty() {
                    let calls = calls.iter().map(|WireCall { id, call }| {
                        json!({
                            "id": id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": wire_arguments(call)},
                        })
                    });
                    m.insert("tool_calls".into(), calls.collect());
                }
                messages.push(Value::Object(m));
            }
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), request.model.as_str().into());
    body.insert("messages".into(), messages.into());
    if !request.tools.is_empty() {
        let tools = request.tools.iter().map(|tool| {
            json!({
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                },
            })
        });
        body.insert("tools".into(), tools.collect());
    }
    if let Some(max_tokens) = request.max_tokens {
        body.insert("max_tokens".into(), max_tokens.into());
    }
    if let Some(temperature) = request.temperature {
        body.insert("temperature".into(), f64::from(temperature).into());
    }
    body.insert("stream".into(), true.into());
    body.insert("stream_options".into(), json!({"include_usage": true}));
    Value::Object(body)
}

/// The arguments string sent back with an earlier call: what the model sent, or `{}` when that
/// was empty or not JSON (local servers parse it and reject the whole request otherwise; the
/// tool result already told the model its arguments were broken).
fn wire_arguments(call: &ToolCall) -> String {
    match &call.arguments {
        Ok(_) if !call.raw_arguments.trim().is_empty() => call.raw_arguments.clone(),
        _ => "{}".to_owned(),
    }
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Assembles a response from `chat.completion.chunk` events.
#[derive(Debug, Default)]
struct OpenAiDecoder {
    provider: String,
    text: String,
    calls: BTreeMap<u64, PartialCall>,
    usage: Usage,
    finish_reason: Option<String>,
}

impl OpenAiDecoder {
    fn new(provider: &str) -> OpenAiDecoder {
        OpenAiDecoder {
            provider: provider.to_owned(),
            ..OpenAiDecoder::default()
        }
    }

    fn tool_calls(&self) -> Vec<ToolCall> {
        self.calls
            .iter()
            .map(|(index, call)| {
                let id = if call.id.is_empty() {
                    format!("call_{index}")
                } else {
                    call.id.clone()
                };
                ToolCall::new(id, call.name.clone(), call.arguments.clone())
            })
            .collect()
    }

    fn on_tool_call_delta(
        &mut self,
        position: usize,
        delta: &Value,
        sink: &mut StreamSink<'_>,
    ) -> Result<(), Failure> {
        let id = delta["id"].as_str().filter(|s| !s.is_empty());
        let index = match delta["index"].as_u64() {
            Some(index) => index,
            // Servers that omit `index` send each call whole: a new id is a new call.
            None => match (id, self.calls.last_key_value()) {
                (Some(id), Some((last, call))) if call.id != id => last + 1,
                (_, Some((last, _))) => *last,
                (_, None) => position as u64,
            },
        };
        let function = &delta["function"];
        let is_new = !self.calls.contains_key(&index);
        let call = self.calls.entry(index).or_default();
        if let Some(id) = id {
            id.clone_into(&mut call.id);
        }
        if let Some(name) = function["name"].as_str().filter(|s| !s.is_empty())
            && call.name.is_empty()
        {
            name.clone_into(&mut call.name);
        }
        let started = is_new.then(|| StreamEvent::ToolCallStarted {
            id: call.id.clone(),
            name: call.name.clone(),
        });
        let fragment = function["arguments"].as_str().unwrap_or("");
        call.arguments.push_str(fragment);
        if let Some(event) = started {
            emit(sink, event)?;
        }
        if !fragment.is_empty() {
            emit(sink, StreamEvent::ToolArgumentsDelta(fragment.to_owned()))?;
        }
        Ok(())
    }
}

impl StreamDecoder for OpenAiDecoder {
    fn on_event(&mut self, event: SseEvent, sink: &mut StreamSink<'_>) -> Result<Flow, Failure> {
        let data = event.data.trim();
        if data == "[DONE]" {
            return Ok(Flow::Done);
        }
        if data.is_empty() {
            return Ok(Flow::Continue);
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            Failure::protocol(&self.provider, format!("invalid chunk JSON ({e}): {data}"))
        })?;
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            let message = error["message"]
                .as_str()
                .map_or_else(|| error.to_string(), str::to_owned);
            return Err(Failure::protocol(
                &self.provider,
                format!("error in stream: {message}"),
            ));
        }
        if let Some(choices) = chunk["choices"].as_array() {
            let choice = choices
                .iter()
                .find(|c| c["index"].as_u64().unwrap_or(0) == 0);
            if let Some(choice) = choice {
                let delta = &choice["delta"];
                for key in ["content", "refusal"] {
                    if let Some(text) = delta[key].as_str().filter(|t| !t.is_empty()) {
                        self.text.push_str(text);
                        emit(sink, StreamEvent::TextDelta(text.to_owned()))?;
                    }
                }
                if let Some(calls) = delta["tool_calls"].as_array() {
                    for (position, call) in calls.iter().enumerate() {
                        self.on_tool_call_delta(position, call, sink)?;
                    }
                }
                if let Some(reason) = choice["finish_reason"].as_str() {
                    self.finish_reason = Some(reason.to_owned());
                }
            }
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            let prompt = usage["prompt_tokens"].as_u64().unwrap_or(0);
            let cached = usage["prompt_tokens_details"]["cached_tokens"]
                .as_u64()
                .unwrap_or(0);
            self.usage = Usage {
                input_tokens: prompt.saturating_sub(cached),
                output_tokens: usage["completion_tokens"].as_u64().unwrap_or(0),
                cache_read_tokens: cached,
                cache_write_tokens: 0,
            };
            emit(sink, StreamEvent::Usage(self.usage))?;
        }
        Ok(Flow::Continue)
    }

    fn finish(self, ended_by_provider: bool) -> Result<ChatResponse, Failure> {
        if !ended_by_provider && self.finish_reason.is_none() {
            return Err(Failure::dropped(
                &self.provider,
                "the stream ended before `[DONE]` or a `finish_reason`",
            ));
        }
        let tool_calls = self.tool_calls();
        let stop = match self.finish_reason.as_deref() {
            Some("tool_calls" | "function_call") => StopReason::ToolUse,
            // Some local servers say `stop` after tool calls.
            Some("stop") | None if !tool_calls.is_empty() => StopReason::ToolUse,
            Some("stop") | None => StopReason::EndTurn,
            Some("length") => StopReason::MaxTokens,
            Some(other) => StopReason::Other(other.to_owned()),
        };
        Ok(ChatResponse {
            text: self.text,
            tool_calls,
            usage: self.usage,
            stop,
        })
    }

    fn partial(&self) -> ChatResponse {
        ChatResponse {
            text: self.text.clone(),
            tool_calls: self.tool_calls(),
            usage: self.usage,
            stop: StopReason::Other("aborted".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Message, ToolSpec};
    use std::ops::ControlFlow;

    fn feed(decoder: &mut OpenAiDecoder, data: &str) -> Vec<StreamEvent> {
        let mut events = Vec::new();
        let mut sink = |e: &StreamEvent| {
            events.push(e.clone());
            ControlFlow::Continue(())
        };
        let event = SseEvent {
            data: data.into(),
            ..SseEvent::default()
        };
        assert!(matches!(
            decoder.on_event(event, &mut sink),
            Ok(Flow::Continue | Flow::Done)
        ));
        events
    }

    /// user task → call → result → call → result → two parallel calls → both results → final
    /// text: each `tool` message follows the assistant message that named its id.
    #[test]
    fn a_multi_turn_tool_conversation_answers_every_call_in_place() {
        let call = |id: &str| ToolCall::new(id, "read_file", r#"{"path":"a"}"#);
        let result = |id: &str, content: &str| Message::ToolResult {
            call_id: id.into(),
            name: "read_file".into(),
            content: content.into(),
            is_error: false,
        };
        let request = ChatRequest {
            model: "m".into(),
            system: "sys".into(),
            messages: vec![
                Message::User {
                    text: "task".into(),
                },
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![call("c1")],
                },
                result("c1", "A"),
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![call("c2")],
                },
                result("c2", "B"),
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![call("c3"), call("c4")],
                },
                result("c4", "D"),
                result("c3", "C"),
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
        let asks = |ids: &[&str]| {
            let calls: Vec<Value> = ids
                .iter()
                .map(|id| json!({"id": id, "type": "function", "function": {"name": "read_file", "arguments": r#"{"path":"a"}"#}}))
                .collect();
            json!({"role": "assistant", "content": null, "tool_calls": calls})
        };
        let answer = |id: &str, content: &str| json!({"role": "tool", "tool_call_id": id, "content": content});
        assert_eq!(
            request_body(&request)["messages"],
            json!([
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "task"},
                asks(&["c1"]),
                answer("c1", "A"),
                asks(&["c2"]),
                answer("c2", "B"),
                asks(&["c3", "c4"]),
                answer("c3", "C"),
                answer("c4", "D"),
                {"role": "assistant", "content": "Done."},
            ])
        );
    }

    #[test]
    fn body_has_the_openai_shape() {
        let request = ChatRequest {
            model: "gpt-x".into(),
            system: "be brief".into(),
            messages: vec![
                Message::User { text: "hi".into() },
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![
                        ToolCall::new("c1", "read", r#"{"path":"a"}"#),
                        ToolCall::new("c2", "read", "{broken"),
                    ],
                },
                Message::ToolResult {
                    call_id: "c1".into(),
                    name: "read".into(),
                    content: "A".into(),
                    is_error: false,
                },
            ],
            tools: vec![ToolSpec {
                name: "read".into(),
                description: "reads".into(),
                parameters: json!({"type": "object"}),
            }],
            max_tokens: Some(100),
            temperature: None,
            agent: "scout".into(),
            unit: None,
        };
        let body = request_body(&request);
        assert_eq!(
            body["messages"][0],
            json!({"role": "system", "content": "be brief"})
        );
        assert_eq!(body["messages"][2]["content"], Value::Null);
        assert_eq!(
            body["messages"][2]["tool_calls"][0],
            json!({"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}})
        );
        assert_eq!(
            body["messages"][2]["tool_calls"][1]["function"]["arguments"],
            "{}"
        );
        assert_eq!(
            body["messages"][3],
            json!({"role": "tool", "tool_call_id": "c1", "content": "A"})
        );
        assert_eq!(
            body["tools"][0]["function"]["parameters"],
            json!({"type": "object"})
        );
        assert_eq!(body["max_tokens"], 100);
        assert!(body.get("temperature").is_none());
        assert!(body.get("agent").is_none());
    }

    #[test]
    fn calls_without_index_are_told_apart_by_id() {
        let mut d = OpenAiDecoder::new("test");
        feed(
            &mut d,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","function":{"name":"x","arguments":"{}"}},{"id":"b","function":{"name":"y","arguments":"{\"k\":1}"}}]},"finish_reason":null}]}"#,
        );
        feed(
            &mut d,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        );
        let response = d.finish(false).ok().map(|r| (r.stop, r.tool_calls.len()));
        assert_eq!(response, Some((StopReason::ToolUse, 2)));
    }

    #[test]
    fn a_stream_without_end_marker_or_finish_reason_is_dropped() {
        let mut d = OpenAiDecoder::new("test");
        let events = feed(
            &mut d,
            r#"{"choices":[{"index":0,"delta":{"content":"Hi"}}]}"#,
        );
        assert_eq!(events, vec![StreamEvent::TextDelta("Hi".into())]);
        assert!(matches!(d.finish(false), Err(Failure::Retry { .. })));
    }
}
