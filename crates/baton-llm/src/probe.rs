//! Cheap probes of a provider, for `baton doctor`: is it reachable, which models does it list,
//! does it stream usage, does a one-shot tool call come back.
//!
//! Each probe is one request with no retries and a short timeout, so an unreachable server is
//! reported at once. The chat probes go through the provider's own [`ModelClient`], so they test
//! exactly the wire path agents use (the request body, `tool_choice`, the stream decoder).

use crate::client::ModelClient;
use crate::error::LlmError;
use crate::registry::{ANTHROPIC_BASE_URL, OPENAI_BASE_URL, ProviderConfig, ProviderKind};
use crate::retry::{RetryPolicy, http_client};
use crate::types::{ChatRequest, Message, StreamEvent, ToolSpec, Usage};
use serde::Serialize;
use std::ops::ControlFlow;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The retry policy of a probe: one attempt, `timeout` in all.
pub fn probe_policy(timeout: Duration) -> RetryPolicy {
    RetryPolicy {
        max_attempts: 1,
        timeout,
        ..RetryPolicy::default()
    }
}

/// The models a provider lists (`GET {base_url}/models`, `GET {base_url}/v1/models` for the
/// Anthropic kind), in the order it lists them.
pub async fn list_models(
    name: &str,
    config: &ProviderConfig,
    api_key: Option<&str>,
    timeout: Duration,
) -> Result<Vec<String>, LlmError> {
    let (url, anthropic) = match config.kind {
        ProviderKind::OpenAi => {
            let base = config.base_url.as_deref().unwrap_or(OPENAI_BASE_URL);
            (format!("{}/models", base.trim_end_matches('/')), false)
        }
        ProviderKind::Anthropic => {
            let base = config.base_url.as_deref().unwrap_or(ANTHROPIC_BASE_URL);
            (format!("{}/v1/models", base.trim_end_matches('/')), true)
        }
        ProviderKind::Script => return Ok(Vec::new()),
    };
    let http = http_client(name, &url)?;
    let mut request = http.get(&url).timeout(timeout);
    if let Some(key) = api_key {
        request = if anthropic {
            request
                .header("x-api-key", key)
                .header("anthropic-version", "2023-06-01")
        } else {
            request.bearer_auth(key)
        };
    }
    let connection = |detail: String| LlmError::Connection {
        provider: name.to_owned(),
        detail: match api_key {
            Some(key) if !key.is_empty() => detail.replace(key, "[redacted]"),
            _ => detail,
        },
    };
    let response = request
        .send()
        .await
        .map_err(|e| connection(crate::retry::error_chain(&e)))?;
    let status = response.status().as_u16();
    let text = response
        .text()
        .await
        .map_err(|e| connection(crate::retry::error_chain(&e)))?;
    if !(200..300).contains(&status) {
        let mut body: String = text.chars().take(300).collect();
        if let Some(key) = api_key.filter(|k| !k.is_empty()) {
            body = body.replace(key, "[redacted]");
        }
        return Err(LlmError::Http {
            provider: name.to_owned(),
            status,
            body,
        });
    }
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| LlmError::Protocol {
        provider: name.to_owned(),
        detail: format!("the model list is not JSON ({e})"),
    })?;
    // OpenAI and Anthropic: `data: [{id}]`; Ollama's native API: `models: [{name}]`.
    let entries = json["data"]
        .as_array()
        .or_else(|| json["models"].as_array())
        .cloned()
        .unwrap_or_default();
    Ok(entries
        .iter()
        .filter_map(|m| m["id"].as_str().or_else(|| m["name"].as_str()))
        .map(str::to_owned)
        .collect())
}

/// Whether the provider streamed usage for a short answer: `Ok(Some(usage))` when it did,
/// `Ok(None)` when the answer came without any.
pub async fn probe_usage(client: &dyn ModelClient, model: &str) -> Result<Option<Usage>, LlmError> {
    let request = ChatRequest {
        model: model.to_owned(),
        system: String::new(),
        messages: vec![Message::User {
            text: "Reply with the single word OK.".into(),
        }],
        tools: Vec::new(),
        max_tokens: Some(16),
        temperature: Some(0.0),
        agent: "doctor".into(),
        unit: None,
    };
    let mut streamed = None;
    let mut sink = |e: &StreamEvent| {
        if let StreamEvent::Usage(u) = e {
            streamed = Some(*u);
        }
        ControlFlow::Continue(())
    };
    let response = client
        .chat(&request, &mut sink, &CancellationToken::new())
        .await?;
    Ok(streamed
        .or((response.usage != Usage::default()).then_some(response.usage))
        .filter(|u| *u != Usage::default()))
}

/// What came back when the model was asked to call a tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum ToolProbe {
    /// The tool call came back, named and with JSON arguments.
    Ok,
    /// The answer had no tool call: the server dropped `tools`, or the model answered in prose.
    Dropped {
        /// The start of the answer.
        answer: String,
    },
    /// A tool call came back with arguments that are not JSON.
    BadArguments {
        /// What came back.
        arguments: String,
    },
}

/// Asks for one call of a `ping` tool and reports what came back.
pub async fn probe_tools(client: &dyn ModelClient, model: &str) -> Result<ToolProbe, LlmError> {
    let request = ChatRequest {
        model: model.to_owned(),
        system: "You are a tool-calling test. Answer only by calling a tool.".into(),
        messages: vec![Message::User {
            text: "Call the tool `ping` with the argument word set to \"hello\".".into(),
        }],
        tools: vec![ToolSpec {
            name: "ping".into(),
            description: "Answers pong. Call it when asked to ping.".into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {"word": {"type": "string"}},
                "required": ["word"],
            }),
        }],
        max_tokens: Some(256),
        temperature: Some(0.0),
        agent: "doctor".into(),
        unit: None,
    };
    let mut sink = |_: &StreamEvent| ControlFlow::Continue(());
    let response = client
        .chat(&request, &mut sink, &CancellationToken::new())
        .await?;
    // Any tool call shows the path works (a forced choice may name another tool).
    let call = response
        .tool_calls
        .iter()
        .find(|c| c.name == "ping")
        .or_else(|| response.tool_calls.first());
    Ok(match call {
        Some(call) if call.arguments.is_ok() => ToolProbe::Ok,
        Some(call) => ToolProbe::BadArguments {
            arguments: call.raw_arguments.chars().take(80).collect(),
        },
        None => ToolProbe::Dropped {
            answer: response
                .text
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .chars()
                .take(80)
                .collect(),
        },
    })
}

/// The API key a provider entry names, from the environment (`Ok(None)`: it names none).
pub fn api_key(name: &str, config: &ProviderConfig) -> Result<Option<String>, LlmError> {
    match &config.api_key_env {
        Some(var) => match std::env::var(var) {
            Ok(key) if !key.trim().is_empty() => Ok(Some(key.trim().to_owned())),
            _ => Err(LlmError::Config(format!(
                "provider `{name}` needs an API key in the environment variable `{var}`, which \
                 is not set"
            ))),
        },
        None => Ok(None),
    }
}

/// A client for probing provider `name` (its `tool_choice` and cache hints included): one attempt, `timeout`.
/// `None` for the script provider, which has nothing to probe.
pub fn probe_client(
    name: &str,
    config: &ProviderConfig,
    api_key: Option<String>,
    timeout: Duration,
) -> Result<Option<Box<dyn ModelClient>>, LlmError> {
    let policy = probe_policy(timeout);
    Ok(match config.kind {
        ProviderKind::OpenAi => {
            let url = config.base_url.as_deref().unwrap_or(OPENAI_BASE_URL);
            Some(Box::new(
                crate::openai::OpenAiClient::new(name, url, api_key)?
                    .with_retry_policy(policy)
                    .with_tool_choice(config.tool_choice)
                    .with_cache_key(config.cache_key.unwrap_or(false))
                    .with_cache_prompt(config.cache_prompt.unwrap_or(false)),
            ))
        }
        ProviderKind::Anthropic => {
            let url = config.base_url.as_deref().unwrap_or(ANTHROPIC_BASE_URL);
            Some(Box::new(
                crate::anthropic::AnthropicClient::new(name, url, api_key)?
                    .with_retry_policy(policy)
                    .with_cache(config.cache.unwrap_or_default()),
            ))
        }
        ProviderKind::Script => None,
    })
}
