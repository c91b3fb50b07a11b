//! Prompt caching on the wire: the breakpoints and hints each provider is sent, against local
//! servers that refuse what the real APIs (or a strict llama-server) refuse.

use super::common::{KEY, fast_policy, guard, read_tool, run, user_request};
use baton_llm::anthropic::AnthropicClient;
use baton_llm::cache::PromptCache;
use baton_llm::registry::{ProviderConfig, ProviderKind, build_client};
use baton_llm::{ChatRequest, Message, ModelSpec, ToolCall, ToolSpec};
use baton_test_support::captures::{self, strict_llama_server, unknown_to_llama_server};
use baton_test_support::{MockServer, anthropic_stream, openai_stream};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A developer's third turn on Sonnet 4.5: tools and system prompt of a real agent's size
/// (about 8 KB together), a task, two rounds of reads.
fn long_request() -> ChatRequest {
    let doc = |name: &str| {
        format!(
            "# {name}\n\n{}",
            "A line of the planning document.\n".repeat(60)
        )
    };
    let mut tools = vec![read_tool()];
    for name in ["write_file", "edit_file", "run_command"] {
        tools.push(ToolSpec {
            name: name.into(),
            description: format!("{name}: {}", "what it does and when to use it. ".repeat(45)),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        });
    }
    let read = |id: &str, path: &str| Message::Assistant {
        text: String::new(),
        tool_calls: vec![ToolCall::new(
            id,
            "read_file",
            format!(r#"{{"path":"{path}"}}"#),
        )],
    };
    let result = |id: &str, content: String| Message::ToolResult {
        call_id: id.into(),
        name: "read_file".into(),
        content,
        is_error: false,
    };
    ChatRequest {
        model: "claude-sonnet-4-5".into(),
        system: "You are the developer. Work test first.\n".repeat(100),
        messages: vec![
            Message::User {
                text: "Implement story `1-2-login` (mode: dev).".into(),
            },
            read("toolu_1", "story.md"),
            result("toolu_1", doc("Story")),
            read("toolu_2", "architecture.md"),
            result("toolu_2", doc("Architecture")),
        ],
        tools,
        max_tokens: Some(4096),
        temperature: None,
        agent: "dev".into(),
        unit: Some("1-2-login".into()),
    }
}

/// Where the breakpoints of an Anthropic body are, in the API's order, with their TTL.
fn breakpoints(body: &Value) -> Vec<(String, Option<String>)> {
    let mut found = Vec::new();
    let mut visit = |list: &Value, at: String| {
        for (i, block) in list.as_array().into_iter().flatten().enumerate() {
            if let Some(control) = block.get("cache_control") {
                let ttl = control["ttl"].as_str().map(str::to_owned);
                found.push((format!("{at}.{i}"), ttl));
            }
        }
    };
    visit(&body["tools"], "tools".into());
    visit(&body["system"], "system".into());
    for (m, message) in body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        visit(&message["content"], format!("messages.{m}"));
    }
    found
}

/// Sends `body` to the server's Messages endpoint as it stands; returns the status and answer.
async fn post_raw(server: &MockServer, body: &Value) -> (u16, Value) {
    let addr = server.url().trim_start_matches("http://").to_owned();
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let body = body.to_string();
    let request = format!(
        "POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.expect("read");
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

#[tokio::test]
async fn the_anthropic_server_takes_the_breakpoints_of_either_ttl() {
    for (cache, ttl) in [
        (PromptCache::FiveMinutes, None),
        (PromptCache::OneHour, Some("1h".to_owned())),
    ] {
        let server = MockServer::start().await;
        server.enqueue(anthropic_stream::text(&["ok"], Default::default()));
        let client = AnthropicClient::new("anthropic", server.url(), Some(KEY.into()))
            .expect("client")
            .with_retry_policy(fast_policy())
            .with_cache(cache);
        let (result, _) = guard(run(&client, &long_request())).await;
        assert_eq!(server.refused(), Vec::new(), "{cache:?}");
        assert_eq!(result.expect("answer").text, "ok");
        let body = &server.requests()[0].body;
        let expected: Vec<(String, Option<String>)> =
            ["tools.3", "system.0", "messages.2.0", "messages.4.0"]
                .into_iter()
                .map(|at| (at.to_owned(), ttl.clone()))
                .collect();
        assert_eq!(breakpoints(body), expected, "{cache:?}");
    }
}

#[tokio::test]
async fn the_anthropic_server_refuses_an_hour_after_five_minutes() {
    let server = MockServer::start().await;
    server.enqueue(anthropic_stream::text(&["ok"], Default::default()));
    let client = AnthropicClient::new("anthropic", server.url(), Some(KEY.into()))
        .expect("client")
        .with_retry_policy(fast_policy());
    let (result, _) = guard(run(&client, &long_request())).await;
    result.expect("baton's own body is taken");
    // The same body with its system breakpoint, after the tools' five-minute one, at an hour.
    let mut body = server.requests()[0].body.clone();
    body["system"][0]["cache_control"] = json!({"type": "ephemeral", "ttl": "1h"});
    let (status, answer) = guard(post_raw(&server, &body)).await;
    assert_eq!(status, 400, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("ttl='1h'") && message.contains("must not come after"),
        "{message}"
    );
    assert_eq!(server.refused().len(), 1);
}

#[tokio::test]
async fn an_off_provider_sends_no_breakpoint() {
    let server = MockServer::start().await;
    server.enqueue(anthropic_stream::text(&["ok"], Default::default()));
    let mut providers = BTreeMap::new();
    providers.insert(
        "anthropic".to_owned(),
        ProviderConfig {
            base_url: Some(server.url()),
            api_key_env: Some("PATH".to_owned()),
            cache: Some(PromptCache::Off),
            ..ProviderConfig::new(ProviderKind::Anthropic)
        },
    );
    let spec = ModelSpec::parse("anthropic/claude-sonnet-4-5").expect("spec");
    let client = build_client(&spec, &providers, Path::new(".")).expect("client");
    let (result, _) = guard(run(&*client, &long_request())).await;
    result.expect("answer");
    assert!(!server.requests()[0].raw_body.contains("cache_control"));
}

/// Sends one request through the configured provider `name`, pointed at a local server, and
/// returns the body the server received.
async fn body_sent_by(name: &str, entry: ProviderConfig) -> Value {
    let server = MockServer::start().await;
    server.enqueue(openai_stream::text(&["ok"], None));
    let mut providers = BTreeMap::new();
    providers.insert(
        name.to_owned(),
        ProviderConfig {
            base_url: Some(format!("{}/v1", server.url())),
            max_retries: Some(0),
            ..entry
        },
    );
    let spec = ModelSpec::parse(&format!("{name}/some-model")).expect("spec");
    let client = build_client(&spec, &providers, Path::new(".")).expect("client");
    let mut request = user_request("hi");
    request.unit = Some("1-2-login".into());
    let (result, _) = guard(run(&*client, &request)).await;
    assert_eq!(server.refused(), Vec::new(), "{name}");
    result.expect("answer");
    server.requests()[0].body.clone()
}

#[tokio::test]
async fn the_cache_key_goes_only_to_providers_that_take_it() {
    // The bundled `openai` entry (its key variable replaced: tests cannot set one).
    let openai = body_sent_by(
        "openai",
        ProviderConfig {
            api_key_env: Some("PATH".to_owned()),
            ..ProviderConfig::new(ProviderKind::OpenAi)
        },
    )
    .await;
    let key = openai["prompt_cache_key"].as_str().unwrap_or("");
    assert!(
        key.starts_with("baton-scout-") && key.len() <= 64,
        "{openai}"
    );
    assert!(openai.get("cache_prompt").is_none(), "{openai}");
    // Local servers of the `openai` kind: neither hint unless declared.
    for local in ["ollama", "vllm", "corp"] {
        let body = body_sent_by(local, ProviderConfig::new(ProviderKind::OpenAi)).await;
        assert!(body.get("prompt_cache_key").is_none(), "{local}: {body}");
        assert!(body.get("cache_prompt").is_none(), "{local}: {body}");
    }
    // A declared provider that says it takes the key.
    let proxy = body_sent_by(
        "proxy",
        ProviderConfig {
            cache_key: Some(true),
            ..ProviderConfig::new(ProviderKind::OpenAi)
        },
    )
    .await;
    assert_eq!(proxy["prompt_cache_key"], key);
}

#[tokio::test]
async fn a_llama_server_that_refuses_unknown_parameters_gets_none() {
    let server = MockServer::start().await;
    server.respond_with(strict_llama_server(captures::CPPSERVER_TOOLS_AUTO));
    let mut providers = BTreeMap::new();
    providers.insert(
        "llamacpp".to_owned(),
        ProviderConfig {
            base_url: Some(format!("{}/v1", server.url())),
            max_retries: Some(0),
            tool_choice: Some(baton_llm::registry::ToolChoice::Auto),
            ..ProviderConfig::new(ProviderKind::OpenAi)
        },
    );
    let spec = ModelSpec::parse("llamacpp/qwen2.5-coder-0.5b").expect("spec");
    let client = build_client(&spec, &providers, Path::new(".")).expect("client");
    // Everything a request of baton's can carry: tools, an output cap, a temperature, a unit.
    let mut request = long_request();
    request.model = "qwen2.5-coder-0.5b".into();
    request.temperature = Some(0.2);
    let (result, _) = guard(run(&*client, &request)).await;
    let body = &server.requests()[0].body;
    assert_eq!(
        unknown_to_llama_server(body),
        Vec::<String>::new(),
        "{body}"
    );
    assert_eq!(body["cache_prompt"], true);
    assert!(result.expect("answer").text.contains("```json"));
    // The server does refuse what it does not know: the same provider told to send a key.
    providers.get_mut("llamacpp").expect("entry").cache_key = Some(true);
    let client = build_client(&spec, &providers, Path::new(".")).expect("client");
    let (result, _) = guard(run(&*client, &request)).await;
    match result {
        Err(baton_llm::LlmError::Http {
            status: 400, body, ..
        }) => {
            assert!(
                body.contains("Unsupported param: prompt_cache_key"),
                "{body}"
            );
        }
        other => panic!("expected the server's 400, got {other:?}"),
    }
}
