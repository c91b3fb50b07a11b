//! The demo's recorded sprint on native agents over the real wires: a local server speaks the
//! Anthropic Messages API (and, in a second run, OpenAI chat completions), answers each request
//! with the recorded turn the script provider would give, and refuses any request the real API
//! would refuse. Every agent reads before it writes, so each conversation carries several
//! rounds of tool calls and results, parallel calls included; a request built wrongly fails the
//! run, and the run must still end with every story done.

use super::common::{Project, Run, parse_json, statuses_of};
use super::sprint::{events_and_report, git, run_guarded};
use baton_llm::script::ScriptClient;
use baton_llm::{ChatRequest, ChatResponse, Message, ToolCall};
use baton_test_support::{
    MockResponse, MockServer, RecordedRequest, anthropic_stream, openai_stream,
};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

/// The example project's files, as `baton demo` writes them.
pub(super) const EXAMPLE: &[&str] = &[
    "Cargo.toml",
    ".gitignore",
    "baton.toml",
    "src/lib.rs",
    "_bmad-output/planning-artifacts/epics.md",
    "_bmad-output/implementation-artifacts/sprint-status.yaml",
    ".baton/scripts/demo.yaml",
];

/// The environment variable holding the key the server expects.
pub(super) const KEY_ENV: &str = "BATON_TEST_WIRE_KEY";
pub(super) const KEY: &str = "sk-wire-replay-key";

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Wire {
    Anthropic,
    OpenAi,
}

pub(super) fn example_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tally")
}

/// The text of a system prompt or message content: a string, or the text of its text blocks.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The agent a system prompt belongs to: the bundled definition whose first `# Heading` is the
/// prompt's first (`# Product manager` → `pm`).
fn agent_of(system: &str) -> String {
    let first_heading = |text: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix("# "))
            .map(|t| t.trim().to_owned())
    };
    let Some(heading) = first_heading(system) else {
        return String::new();
    };
    let agents = Path::new(env!("CARGO_MANIFEST_DIR")).join("../baton-agent/agents");
    for entry in std::fs::read_dir(&agents)
        .expect("the bundled agents")
        .flatten()
    {
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        // The body starts after the front matter's closing `---`.
        let body = text.splitn(3, "---\n").nth(2).unwrap_or("");
        if first_heading(body).as_deref() == Some(heading.as_str()) {
            let name = entry
                .path()
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned());
            return name.unwrap_or_default();
        }
    }
    String::new()
}

fn call(id: &str, name: &str, input: &Value) -> ToolCall {
    let raw = match input {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    ToolCall::new(id, name, raw)
}

/// The conversation of an Anthropic Messages body.
fn anthropic_messages(body: &Value) -> Vec<Message> {
    let mut out = Vec::new();
    for message in body["messages"].as_array().into_iter().flatten() {
        let blocks = match &message["content"] {
            Value::String(s) => vec![serde_json::json!({"type": "text", "text": s})],
            Value::Array(b) => b.clone(),
            _ => Vec::new(),
        };
        if message["role"] == "assistant" {
            let calls = blocks
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| {
                    call(
                        b["id"].as_str().unwrap_or(""),
                        b["name"].as_str().unwrap_or(""),
                        &b["input"],
                    )
                })
                .collect();
            out.push(Message::Assistant {
                text: text_of(&Value::Array(blocks)),
                tool_calls: calls,
            });
            continue;
        }
        for block in &blocks {
            match block["type"].as_str() {
                Some("tool_result") => out.push(Message::ToolResult {
                    call_id: block["tool_use_id"].as_str().unwrap_or("").to_owned(),
                    name: String::new(),
                    content: text_of(&block["content"]),
                    is_error: block["is_error"] == true,
                }),
                Some("text") => out.push(Message::User {
                    text: text_of(&Value::Array(vec![block.clone()])),
                }),
                _ => {}
            }
        }
    }
    out
}

/// The system prompt and conversation of an OpenAI chat completions body.
fn openai_messages(body: &Value) -> (String, Vec<Message>) {
    let mut system = String::new();
    let mut out = Vec::new();
    for message in body["messages"].as_array().into_iter().flatten() {
        let content = text_of(&message["content"]);
        match message["role"].as_str() {
            Some("system") => system = content,
            Some("user") => out.push(Message::User { text: content }),
            Some("assistant") => {
                let calls = message["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| {
                        call(
                            c["id"].as_str().unwrap_or(""),
                            c["function"]["name"].as_str().unwrap_or(""),
                            &c["function"]["arguments"],
                        )
                    })
                    .collect();
                out.push(Message::Assistant {
                    text: content,
                    tool_calls: calls,
                });
            }
            Some("tool") => out.push(Message::ToolResult {
                call_id: message["tool_call_id"].as_str().unwrap_or("").to_owned(),
                name: String::new(),
                content,
                is_error: false,
            }),
            _ => {}
        }
    }
    (system, out)
}

/// The scripted answer as the wire streams it, its usage reported as that wire's API reports it
/// (Anthropic: input without the cache, the cache's reads and writes beside it; OpenAI: the
/// prompt with the cached tokens in it, and no cache writes of its own).
pub(super) fn stream(wire: Wire, answer: &ChatResponse) -> MockResponse {
    let calls: Vec<(String, String, String)> = answer
        .tool_calls
        .iter()
        .map(|c| {
            (
                format!("toolu_{}", c.id),
                c.name.clone(),
                c.raw_arguments.clone(),
            )
        })
        .collect();
    let calls: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(i, n, a)| (i.as_str(), n.as_str(), a.as_str()))
        .collect();
    let usage = answer.usage;
    match wire {
        Wire::Anthropic => {
            let usage = anthropic_stream::Usage {
                input_tokens: usage.input_tokens,
                output_tokens: usage.output_tokens,
                cache_read_input_tokens: usage.cache_read_tokens,
                cache_creation_input_tokens: usage.cache_write_tokens,
            };
            if calls.is_empty() {
                anthropic_stream::text(&[&answer.text], usage)
            } else {
                anthropic_stream::tool_use(&answer.text, &calls, 40, usage)
            }
        }
        Wire::OpenAi => {
            let usage = Some(openai_stream::Usage {
                prompt_tokens: usage.total_input(),
                completion_tokens: usage.output_tokens,
                cached_tokens: usage.cache_read_tokens,
            });
            if calls.is_empty() {
                openai_stream::text(&[&answer.text], usage)
            } else {
                openai_stream::tool_calls(&answer.text, &calls, 40, usage)
            }
        }
    }
}

/// The request a body sent over `wire` is, as the script provider reads it.
pub(super) fn chat_request(wire: Wire, body: &Value) -> ChatRequest {
    let (system, messages) = match wire {
        Wire::Anthropic => (text_of(&body["system"]), anthropic_messages(body)),
        Wire::OpenAi => openai_messages(body),
    };
    ChatRequest {
        model: body["model"].as_str().unwrap_or("").to_owned(),
        agent: agent_of(&system),
        system,
        messages,
        tools: Vec::new(),
        max_tokens: None,
        temperature: None,
        unit: None,
    }
}

/// A server answering every request with the script's turn for its agent; a request the
/// script has no turn for is answered with a 500 naming it, which fails the agent.
fn replaying(wire: Wire, script: Arc<ScriptClient>) -> impl Fn(&RecordedRequest) -> MockResponse {
    move |request: &RecordedRequest| {
        let chat = chat_request(wire, &request.body);
        match script.respond(&chat) {
            Ok(answer) => stream(wire, &answer),
            Err(e) => MockResponse::text(500, &format!("no recorded turn: {e}")),
        }
    }
}

/// The example project's `files` in `dir`, its agents on a model of `wire`'s provider, served
/// by the local server at `url`.
pub(super) fn prepare(dir: &Path, files: &[&str], wire: Wire, url: &str) {
    for rel in files {
        let text = std::fs::read_to_string(example_dir().join(rel)).expect("example file");
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    let (provider, model) = match wire {
        Wire::Anthropic => (
            format!("[providers.anthropic]\nkind = \"anthropic\"\nbase_url = \"{url}\"\n"),
            "anthropic/claude-sonnet-4-5",
        ),
        Wire::OpenAi => (
            format!("[providers.openai]\nkind = \"openai\"\nbase_url = \"{url}/v1\"\n"),
            "openai/gpt-5",
        ),
    };
    let config = std::fs::read_to_string(dir.join("baton.toml")).expect("baton.toml");
    let config = config.replace("model = \"script/demo\"", &format!("model = \"{model}\""));
    std::fs::write(
        dir.join("baton.toml"),
        format!("{config}\n{provider}api_key_env = \"{KEY_ENV}\"\nmax_retries = 0\n"),
    )
    .expect("write baton.toml");
    std::fs::create_dir_all(dir.join(".baton")).expect("mkdir .baton");
    std::fs::write(dir.join(".baton/.gitignore"), "*\n").expect(".baton/.gitignore");
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "tally"]);
}

/// Trusts `p` in a user configuration of its own (returned), so no other test races it.
pub(super) fn trusted(p: &Project) -> tempfile::TempDir {
    let user = tempfile::tempdir().expect("a temp dir");
    let trust = p
        .command(&["trust"])
        .env("BATON_CONFIG_DIR", user.path())
        .output()
        .expect("baton trust");
    assert!(trust.status.success(), "{trust:?}");
    user
}

/// The example project in `p`, trusted, its sprint of three stories run with `--yolo --json`
/// against `server`; asserts that nothing baton sent was refused as the real API would refuse
/// it and that the run exited 0. Returns the run and the user configuration it was trusted in.
pub(super) fn sprint_over_the_wire(
    p: &Project,
    wire: Wire,
    server: &MockServer,
) -> (Run, tempfile::TempDir) {
    prepare(p.root(), EXAMPLE, wire, &server.url());
    let user = trusted(p);
    let args = ["sprint", "--batch", "3", "--yolo", "--json"];
    let mut cmd = p.command(&args);
    cmd.env(KEY_ENV, KEY)
        .env("BATON_CONFIG_DIR", user.path())
        .env_remove("CARGO_TARGET_DIR");
    let run = run_guarded(cmd, &args);
    assert_eq!(server.refused(), Vec::new(), "{}", run.describe());
    (run.expect_code(0), user)
}

async fn replay_the_demo(wire: Wire) {
    let script = Arc::new(
        ScriptClient::load(example_dir().join(".baton/scripts/demo.yaml")).expect("demo script"),
    );
    let server = MockServer::start().await;
    server.respond_with(Arc::new(replaying(wire, script)));
    let p = Project::empty();
    let (run, _user) = sprint_over_the_wire(&p, wire, &server);
    let (_, report) = events_and_report(&run);
    let requests = server.requests();
    assert_eq!(report["end"], "completed", "{report:#}");
    assert_eq!(report["completed"], 3, "{report:#}");
    let status = statuses_of(&parse_json(&p.run(&["status", "--json"])));
    for key in ["1-1-count-words", "1-2-count-lines", "2-1-summary-line"] {
        assert_eq!(status[key], "done", "{status:?}");
    }
    // Every request went over the wire with the key, and conversations of three and more
    // requests (read, write with parallel calls, answer) were sent.
    let path = match wire {
        Wire::Anthropic => "/v1/messages",
        Wire::OpenAi => "/v1/chat/completions",
    };
    assert!(
        requests.iter().all(|r| r.path == path),
        "{:?}",
        requests.iter().map(|r| &r.path).collect::<Vec<_>>()
    );
    let longest = requests
        .iter()
        .filter_map(|r| r.body["messages"].as_array().map(Vec::len))
        .max()
        .unwrap_or(0);
    assert!(
        longest >= 5,
        "no multi-turn conversation was sent (longest: {longest} messages)"
    );
    let log = git(p.root(), &["log", "--format=%s"]);
    assert!(log.contains("story(2-1): review passed"), "{log}");
    cache_requests_were_made(wire, &requests);
}

/// The requests asked for prompt caching as the provider takes it: Anthropic breakpoints on
/// every agent's system prompt (with its tools, over Sonnet's 1024-token minimum) and on the
/// tools of the agents with the full tool set (the read-only reviewer's are too short alone),
/// OpenAI one `prompt_cache_key` per agent run, the same on every turn of it.
fn cache_requests_were_made(wire: Wire, requests: &[RecordedRequest]) {
    match wire {
        Wire::Anthropic => {
            let marked = |list: &Value| {
                list.as_array()
                    .and_then(|l| l.last())
                    .is_some_and(|b| b["cache_control"] == serde_json::json!({"type": "ephemeral"}))
            };
            for r in requests {
                assert!(marked(&r.body["system"]), "system unmarked: {}", r.raw_body);
                assert!(r.raw_body.matches("\"cache_control\"").count() <= 4);
            }
            assert!(requests.iter().any(|r| marked(&r.body["tools"])));
        }
        Wire::OpenAi => {
            let mut keys = std::collections::BTreeMap::<String, String>::new();
            for r in requests {
                let key = r.body["prompt_cache_key"].as_str().unwrap_or("");
                assert!(key.starts_with("baton-"), "{}", r.raw_body);
                // The task opens every conversation: one run, one key.
                let task = r.body["messages"][1]["content"].to_string();
                let first = keys.entry(task).or_insert_with(|| key.to_owned());
                assert_eq!(first, key, "a run changed its key");
            }
            assert!(keys.len() > 1, "every run shared one key: {keys:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_demo_sprint_completes_on_native_agents_over_the_anthropic_wire() {
    replay_the_demo(Wire::Anthropic).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_demo_sprint_completes_on_native_agents_over_the_openai_wire() {
    replay_the_demo(Wire::OpenAi).await;
}

/// The planning demo's recorded session over the Anthropic wire: the analyst, the product
/// manager, the architect and the scrum master write the plan the sprint demo builds.
#[tokio::test(flavor = "multi_thread")]
async fn the_planning_demo_completes_on_native_agents_over_the_anthropic_wire() {
    let script = Arc::new(
        ScriptClient::load(example_dir().join(".baton/scripts/plan.yaml")).expect("plan script"),
    );
    let server = MockServer::start().await;
    server.respond_with(Arc::new(replaying(Wire::Anthropic, script)));
    let p = Project::empty();
    let files = ["Cargo.toml", ".gitignore", "baton.toml", "src/lib.rs"];
    prepare(p.root(), &files, Wire::Anthropic, &server.url());
    let user = trusted(&p);
    let idea = "A Rust library that counts the words and lines of a text and prints a one-line \
                summary other programs can parse";
    let args = ["plan", idea, "--yolo"];
    let mut cmd = p.command(&args);
    cmd.env(KEY_ENV, KEY).env("BATON_CONFIG_DIR", user.path());
    let run = run_guarded(cmd, &args);
    assert_eq!(server.refused(), Vec::new(), "{}", run.describe());
    run.expect_code(0);
    let bundled = std::fs::read_to_string(
        example_dir().join("_bmad-output/implementation-artifacts/sprint-status.yaml"),
    )
    .expect("the bundled sprint file");
    let generated = std::fs::read_to_string(p.sprint_path()).expect("the planned sprint file");
    let queue = |t: &str| t.split("development_status:\n").nth(1).map(str::to_owned);
    assert_eq!(queue(&generated), queue(&bundled), "{generated}");
    let agents: std::collections::BTreeSet<String> = server
        .requests()
        .iter()
        .map(|r| agent_of(&text_of(&r.body["system"])))
        .collect();
    assert_eq!(
        agents.into_iter().collect::<Vec<_>>(),
        ["analyst", "architect", "pm", "scrum-master"]
    );
}
