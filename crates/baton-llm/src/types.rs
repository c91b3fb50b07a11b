//! The provider-neutral conversation: messages, tool calls, usage, requests and responses.

use serde::{Deserialize, Serialize};

/// A `provider/model` string, split at the first `/` (`openrouter/anthropic/claude-x` is
/// provider `openrouter`, model `anthropic/claude-x`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ModelSpec {
    /// Provider name as configured in `baton.toml` (`openai`, `anthropic`, `ollama`, `script`…).
    pub provider: String,
    /// Model id as the provider knows it.
    pub model: String,
}

impl ModelSpec {
    /// Parses `provider/model`; `None` if either part is empty or there is no `/`.
    pub fn parse(s: &str) -> Option<ModelSpec> {
        let (provider, model) = s.split_once('/')?;
        if provider.is_empty() || model.is_empty() {
            return None;
        }
        Some(ModelSpec {
            provider: provider.to_owned(),
            model: model.to_owned(),
        })
    }
}

impl std::fmt::Display for ModelSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.provider, self.model)
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Tool name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of its arguments (an object schema).
    pub parameters: serde_json::Value,
}

/// A tool call made by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "ToolCallWire")]
pub struct ToolCall {
    /// The provider's call id (answered by a [`Message::ToolResult`] with the same id).
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments as the model sent them (concatenated from stream fragments).
    pub raw_arguments: String,
    /// Parsed arguments; `Err` holds the JSON error when the model sent invalid JSON, which the
    /// caller returns to the model as a tool error.
    #[serde(skip)]
    pub arguments: Result<serde_json::Value, String>,
}

/// A [`ToolCall`] as serialized: `arguments` is re-parsed from `raw_arguments` on the way in.
#[derive(Deserialize)]
struct ToolCallWire {
    id: String,
    name: String,
    raw_arguments: String,
}

impl From<ToolCallWire> for ToolCall {
    fn from(wire: ToolCallWire) -> ToolCall {
        ToolCall::new(wire.id, wire.name, wire.raw_arguments)
    }
}

impl ToolCall {
    /// Builds a call, parsing `raw_arguments` (empty text counts as `{}`).
    pub fn new(id: impl Into<String>, name: impl Into<String>, raw: impl Into<String>) -> ToolCall {
        let raw_arguments = raw.into();
        let arguments = if raw_arguments.trim().is_empty() {
            Ok(serde_json::Value::Object(Default::default()))
        } else {
            serde_json::from_str(&raw_arguments).map_err(|e| e.to_string())
        };
        ToolCall {
            id: id.into(),
            name: name.into(),
            raw_arguments,
            arguments,
        }
    }
}

/// One message of the conversation (the system prompt travels separately).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// The user's (or orchestrator's) words.
    User {
        /// Text.
        text: String,
    },
    /// The model's answer: text and/or tool calls.
    Assistant {
        /// Text (may be empty).
        text: String,
        /// Tool calls, in order.
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call.
    ToolResult {
        /// The call answered.
        call_id: String,
        /// The tool's name.
        name: String,
        /// The result text.
        content: String,
        /// Whether the tool failed or was refused.
        is_error: bool,
    },
}

/// Token usage of one model call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens, cache reads and writes excluded.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the provider's prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the provider's prompt cache.
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Adds another call's usage.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }

    /// All input tokens (plain + cache read + cache write).
    pub fn total_input(&self) -> u64 {
        self.input_tokens + self.cache_read_tokens + self.cache_write_tokens
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// A final answer.
    EndTurn,
    /// It wants tool results.
    ToolUse,
    /// It hit the output token limit.
    MaxTokens,
    /// Anything else the provider said.
    Other(String),
}

/// A request for one model turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatRequest {
    /// The model id (without the provider prefix).
    pub model: String,
    /// The system prompt.
    pub system: String,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// Tools offered.
    pub tools: Vec<ToolSpec>,
    /// Output token limit (providers that require one get a default).
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// The agent asking (used by the script provider to pick turns; not sent over HTTP as
    /// such).
    pub agent: String,
    /// What the conversation works on (a story, a plan task, or the agent's task itself), if
    /// the caller says: with `agent`, it keys the provider's prompt cache where the provider
    /// takes a key (a hash of it is sent, never the text).
    pub unit: Option<String>,
}

/// The model's complete turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatResponse {
    /// Text of the answer (may be empty when there are tool calls).
    pub text: String,
    /// Tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Usage reported by the provider (zero where it reported none).
    pub usage: Usage,
    /// Why it stopped.
    pub stop: StopReason,
}

/// Progress while a response streams in.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// A fragment of answer text.
    TextDelta(String),
    /// A tool call began (its arguments follow as fragments).
    ToolCallStarted {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// A fragment of a tool call's arguments.
    ToolArgumentsDelta(String),
    /// Usage known so far (cumulative for this call).
    Usage(Usage),
    /// The call is being retried after a failure (earlier deltas are void).
    Retrying {
        /// Attempt number about to start (2 = first retry).
        attempt: u32,
        /// Why.
        reason: String,
    },
}
