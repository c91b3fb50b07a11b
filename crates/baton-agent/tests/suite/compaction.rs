//! Compaction of old tool results end to end: the bundled developer on a recorded script, served
//! over the real Anthropic wire by a local server, so what the model was sent is read off the
//! requests themselves. Its early reads become stubs, it reads the stubbed document again and
//! finishes; the transcript keeps every result whole; and a dev step of 10 and 40 turns is
//! measured with and without compaction.

use baton_agent::compaction::Compaction;
use baton_agent::definition::{self, AgentDef, Source};
use baton_agent::guard::GuardChain;
use baton_agent::outcome::{Outcome, Status};
use baton_agent::runner::{Budget, Mode, Runner};
use baton_agent::sandbox::Sandbox;
use baton_agent::tools::{CommandPolicy, ToolContext, Toolbox};
use baton_agent::workspace::Workspace;
use baton_core::budget::BudgetLimits;
use baton_llm::anthropic::AnthropicClient;
use baton_llm::script::ScriptClient;
use baton_llm::{ChatRequest, Message, ModelSpec};
use baton_test_support::{MockResponse, MockServer, RecordedRequest, anthropic_stream};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The line only the end of the architecture document holds.
const MARKER: &str = "Data model marker: every count is a u64 kept in src/model.rs.";

/// The bundled developer, on a model of the local server.
fn developer() -> AgentDef {
    let (_, text) = baton_agent::discovery::BUNDLED
        .iter()
        .find(|(name, _)| *name == "developer")
        .unwrap();
    definition::parse("developer.md", text, Source::Bundled).unwrap()
}

/// A markdown document of about `bytes` bytes: sections of prose, then `last` as its last line.
fn document(title: &str, bytes: usize, last: &str) -> String {
    let mut text = format!("# {title}\n\n");
    let mut n = 0;
    while text.len() + last.len() < bytes {
        n += 1;
        text.push_str(&format!(
            "## Section {n}\n\nDecision {n}: the component keeps its state in one place and \
             exposes it through a narrow interface; callers never reach inside. Alternatives \
             were weighed and the simplest that meets the requirement was kept.\n\n"
        ));
    }
    text.push_str(last);
    text.push('\n');
    text
}

/// Source text of about `bytes` bytes.
fn source(bytes: usize, tag: &str) -> String {
    let mut text = String::new();
    let mut n = 0;
    while text.len() < bytes {
        n += 1;
        text.push_str(&format!(
            "/// Counts {tag} item {n}.\npub fn count_{tag}_{n}(input: &str) -> u64 {{\n    input.split_whitespace().count() as u64\n}}\n\n"
        ));
    }
    text
}

/// What a request's last message carries: its text, or the results that end it.
fn latest_input(body: &Value) -> Vec<Message> {
    let text_of = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    let last = body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or(Value::Null);
    let blocks = match &last["content"] {
        Value::String(s) => vec![json!({"type": "text", "text": s})],
        Value::Array(b) => b.clone(),
        _ => Vec::new(),
    };
    blocks
        .iter()
        .map(|b| match b["type"].as_str() {
            Some("tool_result") => Message::ToolResult {
                call_id: b["tool_use_id"].as_str().unwrap_or("").to_owned(),
                name: String::new(),
                content: text_of(&b["content"]),
                is_error: b["is_error"] == true,
            },
            _ => Message::User {
                text: text_of(&b["text"]),
            },
        })
        .collect()
}

/// A local Anthropic server answering every request of `agent` with the script's turn for it
/// (matched on the request's latest input, as the script provider does).
async fn replaying(script: ScriptClient, agent: &str) -> MockServer {
    let agent = agent.to_owned();
    let respond = move |request: &RecordedRequest| {
        let chat = ChatRequest {
            model: "m".into(),
            system: String::new(),
            messages: latest_input(&request.body),
            tools: Vec::new(),
            max_tokens: None,
            temperature: None,
            agent: agent.clone(),
            unit: None,
        };
        let answer = match script.respond(&chat) {
            Ok(a) => a,
            Err(e) => return MockResponse::text(500, &format!("no recorded turn: {e}")),
        };
        let usage = anthropic_stream::Usage {
            input_tokens: request.raw_body.len() as u64 / 4,
            output_tokens: 50,
            ..Default::default()
        };
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
        if calls.is_empty() {
            anthropic_stream::text(&[&answer.text], usage)
        } else {
            anthropic_stream::tool_use(&answer.text, &calls, 200, usage)
        }
    };
    let server = MockServer::start().await;
    server.respond_with(Arc::new(respond));
    server
}

fn runner(root: &Path, url: &str, def: &AgentDef, compaction: Compaction) -> Runner {
    let sandbox = Arc::new(Sandbox::new(root, &Sandbox::default_deny()).unwrap());
    let workspace = Arc::new(Workspace::new(root, sandbox.clone(), Vec::new()));
    let client = AnthropicClient::new("anthropic", url.to_owned(), Some("k".into())).unwrap();
    Runner {
        client: Arc::new(client),
        model: ModelSpec::parse("anthropic/claude-sonnet-4-5").unwrap(),
        price: None,
        mode: Mode::Yolo,
        budget: Arc::new(Budget::new(BudgetLimits::default())),
        tools: Toolbox::standard().select(&def.tools).unwrap(),
        guards: GuardChain::standard(false),
        ctx: ToolContext {
            root: root.to_path_buf(),
            sandbox,
            commands: CommandPolicy::default(),
            cancel: CancellationToken::new(),
            agent: def.name.clone(),
        },
        workspace,
        transcript_dir: Some(root.join(".baton/runs/test")),
        default_max_turns: 100,
        default_timeout: Duration::from_secs(300),
        max_tokens: None,
        compaction,
        on_event: None,
        on_call: None,
    }
}

/// Writes `script` (JSON, which is YAML) into `root` and runs the developer on it over the wire.
async fn run(
    root: &Path,
    script: &Value,
    compaction: Compaction,
) -> (Outcome, Vec<RecordedRequest>) {
    let path = root.join(".script.yaml");
    std::fs::write(&path, serde_json::to_string_pretty(script).unwrap()).unwrap();
    let def = developer();
    let server = replaying(ScriptClient::load(&path).unwrap(), &def.name).await;
    let out = runner(root, &server.url(), &def, compaction)
        .run(&def, "Implement story 1-1.")
        .await;
    assert_eq!(server.refused(), Vec::new(), "{out:?}");
    (out, server.requests())
}

fn read(path: &str) -> Value {
    json!({"name": "read_file", "arguments": {"path": path}})
}

/// The `tool_result` contents of a request body, in order.
fn results_of(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            let content = match &b["content"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (b["tool_use_id"].as_str().unwrap_or("").to_owned(), content)
        })
        .collect()
}

/// `value` without its `cache_control` markers: the breakpoints move with the end of the
/// conversation, the content they mark does not.
fn unmarked(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| *k != "cache_control")
                .map(|(k, v)| (k.clone(), unmarked(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(unmarked).collect()),
        other => other.clone(),
    }
}

/// The project of the re-read test: a 40 KB architecture ending with the marker, a story, code.
fn reread_project(root: &Path) -> (String, String) {
    let architecture = document("Architecture", 40_000, MARKER);
    let story = document("Story 1-1: count words", 6_000, "Status: ready-for-dev");
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("docs/architecture.md"), &architecture).unwrap();
    std::fs::write(root.join("story.md"), &story).unwrap();
    std::fs::write(root.join("src/lib.rs"), source(2_000, "word")).unwrap();
    (architecture, story)
}

/// Reads the architecture and the story, works three turns, reads the architecture again
/// (by then a stub), and finishes only once it holds the document's last line again.
fn reread_script() -> Value {
    json!({"turns": [
        {"agent": "developer", "match": "Implement story", "text": "Reading the story and the architecture.",
         "tool_calls": [read("docs/architecture.md"), read("story.md")]},
        {"agent": "developer", "match": "Status: ready-for-dev", "text": "Looking at the code.",
         "tool_calls": [{"name": "list_files", "arguments": {"pattern": "src/**"}}]},
        {"agent": "developer", "match": "src/lib.rs", "text": "Writing the test first.",
         "tool_calls": [{"name": "write_file", "arguments": {"path": "tests/count.rs", "content": "#[test]\nfn counts() {}\n"}}]},
        {"agent": "developer", "match": "tests/count.rs", "text": "Finding the counters.",
         "tool_calls": [{"name": "grep", "arguments": {"pattern": "pub fn count_word_1\\b"}}]},
        {"agent": "developer", "match": "count_word_1", "text": "The architecture was compacted; reading its data model again.",
         "tool_calls": [read("docs/architecture.md")]},
        {"agent": "developer", "match": "Data model marker", "text": "Done: counts are u64, as the architecture says."},
    ]})
}

#[tokio::test(flavor = "multi_thread")]
async fn a_compacted_agent_reads_its_stubbed_document_again_and_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let (architecture, story) = reread_project(dir.path());
    let (out, requests) = run(dir.path(), &reread_script(), Compaction::default()).await;
    assert_eq!(out.status, Status::Completed, "{out:?}");
    assert_eq!(out.turns, 6);
    assert_eq!(requests.len(), 6);
    // Requests 2 to 4 carry both documents whole; they are the results of the last three turns.
    for r in &requests[1..4] {
        let results = results_of(&r.body);
        assert_eq!(results[0].1, architecture);
        assert_eq!(results[1].1, story);
    }
    // From request 5 on, turn 1's results are stubs, their calls still answered; the latest
    // results stay whole.
    let fifth = results_of(&requests[4].body);
    assert_eq!(
        fifth[0].1,
        format!(
            "`docs/architecture.md`, 40 KB, {} lines, read in turn 1: compacted to save \
             context; read it again (`read_file` {{\"path\":\"docs/architecture.md\"}}) if you \
             need it.",
            architecture.lines().count()
        )
    );
    assert!(fifth[1].1.starts_with("`story.md`, 6 KB"), "{}", fifth[1].1);
    assert!(!requests[4].raw_body.contains(MARKER));
    let calls: Vec<&str> = requests[4].body["messages"][1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(fifth[0].0, calls[0]);
    assert_eq!(fifth[1].0, calls[1]);
    // The document read again reaches the model whole, after a prefix the compaction did not
    // touch again: request 6 extends request 5 message for message.
    let sixth = results_of(&requests[5].body);
    assert_eq!(sixth.last().unwrap().1, architecture);
    let msgs = |r: &RecordedRequest| unmarked(&r.body["messages"]).as_array().unwrap().clone();
    let (m5, m6) = (msgs(&requests[4]), msgs(&requests[5]));
    assert_eq!(m5, m6[..m5.len()]);
    // The outcome says what was compacted.
    let c = out.compaction;
    assert_eq!((c.batches, c.results), (1, 2));
    assert_eq!(c.result_bytes, (architecture.len() + story.len()) as u64);
    assert_eq!(c.bytes_not_sent, 2 * (c.result_bytes - c.stub_bytes));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_transcript_keeps_every_full_result() {
    let dir = tempfile::tempdir().unwrap();
    let (architecture, story) = reread_project(dir.path());
    let (out, requests) = run(dir.path(), &reread_script(), Compaction::default()).await;
    assert_eq!(out.status, Status::Completed, "{out:?}");
    let transcript = std::fs::read_to_string(out.transcript.as_ref().unwrap()).unwrap();
    let lines: Vec<Value> = transcript
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of_kind =
        |kind: &str| -> Vec<&Value> { lines.iter().filter(|l| l["kind"] == kind).collect() };
    // Every result as the tool returned it, the stubbed ones included.
    let results: Vec<&str> = of_kind("tool_result")
        .iter()
        .map(|l| l["content"].as_str().unwrap())
        .collect();
    assert_eq!(results.len(), 6);
    assert_eq!(results[0], architecture);
    assert_eq!(results[1], story);
    assert_eq!(results[5], architecture);
    assert!(
        !results
            .iter()
            .any(|r| r.contains("compacted to save context"))
    );
    // The compaction itself is recorded: before which turn, which results, what was sent.
    let compactions = of_kind("compaction");
    assert_eq!(compactions.len(), 1);
    let c = compactions[0];
    assert_eq!(c["before_turn"], 5);
    assert_eq!(c["bytes"], (architecture.len() + story.len()) as u64);
    let stubbed = c["results"].as_array().unwrap();
    assert_eq!(stubbed.len(), 2);
    assert_eq!(stubbed[0]["tool"], "read_file");
    assert_eq!(stubbed[0]["turn"], 1);
    let sent = results_of(&requests[4].body);
    assert_eq!(stubbed[0]["stub"], sent[0].1.as_str());
    // And the outcome line carries the totals.
    let outcome = of_kind("outcome")[0];
    assert_eq!(outcome["compaction"]["results"], 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn without_compaction_every_result_is_sent_on_every_turn() {
    let dir = tempfile::tempdir().unwrap();
    let (architecture, _) = reread_project(dir.path());
    let (out, requests) = run(dir.path(), &reread_script(), Compaction::off()).await;
    assert_eq!(out.status, Status::Completed, "{out:?}");
    assert!(
        requests[1..]
            .iter()
            .all(|r| results_of(&r.body)[0].1 == architecture)
    );
    assert!(out.compaction.is_empty());
    let transcript = std::fs::read_to_string(out.transcript.as_ref().unwrap()).unwrap();
    assert!(!transcript.contains("\"kind\":\"compaction\""));
    assert!(!transcript.contains("\"compaction\":"));
}

/// A test-first dev step of `turns` turns, as the token issue measured it: the story (13 KB)
/// and the architecture (61 KB) read in turn 1, then about 4 KB a turn of writing tests, running
/// them, reading and rewriting code, and a final answer.
fn dev_step(root: &Path, turns: usize) -> Value {
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(
        root.join("docs/architecture.md"),
        document("Architecture", 61_000, MARKER),
    )
    .unwrap();
    std::fs::write(
        root.join("story.md"),
        document("Story 1-1", 13_000, "Status: ready-for-dev"),
    )
    .unwrap();
    std::fs::write(root.join("src/lib.rs"), source(5_000, "word")).unwrap();
    let mut log = String::from("running 40 tests\n");
    for k in 1..=120 {
        log.push_str(&format!("test counts::case_{k} ... ok\n"));
    }
    log.push_str("test result: ok. 120 passed; 0 failed\n");
    std::fs::write(root.join("test-output.txt"), log).unwrap();
    let mut steps = vec![
        json!({"agent": "developer", "text": "Reading the story and the architecture.",
        "tool_calls": [read("story.md"), read("docs/architecture.md")]}),
    ];
    for k in 2..turns {
        let call = match k % 5 {
            0 => {
                json!({"name": "write_file", "arguments": {"path": format!("tests/t{k}.rs"), "content": source(3_000, &format!("t{k}"))}})
            }
            1 => {
                json!({"name": "run_command", "arguments": {"program": "cat", "args": ["test-output.txt"]}})
            }
            2 => read("src/lib.rs"),
            3 => {
                json!({"name": "write_file", "arguments": {"path": "src/lib.rs", "content": source(4_000, &format!("v{k}"))}})
            }
            _ => json!({"name": "grep", "arguments": {"pattern": "pub fn count_word_1[0-9]"}}),
        };
        steps.push(json!({"agent": "developer", "text": format!("Step {k} of the story."), "tool_calls": [call]}));
    }
    steps.push(json!({"agent": "developer", "text": "Done: every task is checked and the suite is green."}));
    json!({ "turns": steps })
}

/// What a provider with an ideal prompt cache would bill for `requests`, in input bytes: each
/// request's leading parts (tools, system, messages) equal to the previous request's are cache
/// reads (0.1×), the rest cache writes (1.25×), as on Anthropic with a breakpoint on the end of
/// each request. A model, not Anthropic's accounting: no minimum length, no expiry, no
/// lookback limit.
fn billed_with_cache(requests: &[RecordedRequest]) -> f64 {
    let mut previous: Vec<String> = Vec::new();
    let mut billed = 0.0;
    for r in requests {
        let body = unmarked(&r.body);
        let mut parts = vec![body["tools"].to_string(), body["system"].to_string()];
        parts.extend(
            body["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .map(Value::to_string),
        );
        let same = parts
            .iter()
            .zip(&previous)
            .take_while(|(a, b)| a == b)
            .count();
        let size = |p: &[String]| p.iter().map(String::len).sum::<usize>() as f64;
        billed += size(&parts[..same]) * 0.1 + size(&parts[same..]) * 1.25;
        previous = parts;
    }
    billed
}

/// A dev step of `turns` turns: bytes sent over the wire, what an ideal cache would bill, the
/// requests made and the outcome.
async fn measure(turns: usize, compaction: Compaction) -> (u64, f64, usize, Outcome) {
    let dir = tempfile::tempdir().unwrap();
    let script = dev_step(dir.path(), turns);
    let (out, requests) = run(dir.path(), &script, compaction).await;
    assert_eq!(out.status, Status::Completed, "{out:?}");
    assert_eq!(out.turns as usize, turns);
    let bytes = requests.iter().map(|r| r.raw_body.len() as u64).sum();
    (bytes, billed_with_cache(&requests), requests.len(), out)
}

/// Prints the table with
/// `cargo test -p baton-agent --test all compaction::bytes_sent -- --nocapture`
/// (tokens are bytes ÷ 4).
#[tokio::test(flavor = "multi_thread")]
async fn bytes_sent_by_a_dev_step_with_and_without_compaction() {
    println!(
        "| dev step | requests | sent, off | sent, default | ratio | cached bill, off | cached bill, default | ratio | stubbed |"
    );
    println!("|---|--:|--:|--:|--:|--:|--:|--:|--:|");
    for turns in [10, 40] {
        let (off, off_billed, n, _) = measure(turns, Compaction::off()).await;
        let (on, on_billed, m, out) = measure(turns, Compaction::default()).await;
        assert_eq!(n, m);
        let ratio = on as f64 / off as f64;
        let billed_ratio = on_billed / off_billed;
        let k = |bytes: f64| format!("{:.0} k tokens", bytes / 4000.0);
        println!(
            "| {turns} turns | {n} | {} | {} | {ratio:.2} | {} | {} | {billed_ratio:.2} | {} results, {} batches |",
            k(off as f64),
            k(on as f64),
            k(off_billed),
            k(on_billed),
            out.compaction.results,
            out.compaction.batches
        );
        // The reads of turn 1 are most of what a dev step sends; they leave after turn 4. Even
        // with a cache, the rebuilt prefix costs less than sending them on.
        assert!(ratio < 0.6, "{turns} turns: {on} of {off} bytes");
        assert!(
            billed_ratio < 0.9,
            "{turns} turns: {on_billed} of {off_billed}"
        );
        assert!(out.compaction.bytes_not_sent > 0);
    }
}
