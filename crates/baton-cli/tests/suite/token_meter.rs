//! The token meter end to end: the demo's recorded sprint on native agents over the real wire,
//! every answer reporting usage with a cache split of its own (as Anthropic's API reports it, or
//! as OpenAI's does, cached tokens inside the prompt). Whatever the local server reported, summed,
//! is what the sprint report, the `--json` events, `baton status` (text and JSON) and the board's
//! runs and story pages show: every input token once, the cache reads and writes as parts of it,
//! and the dollars of each call at its model's price for each kind of token.

use super::board::Server;
use super::common::{Project, parse_json};
use super::sprint::events_and_report;
use super::wire_replay::{Wire, chat_request, example_dir, sprint_over_the_wire, stream};

use baton_core::meter::Meter;
use baton_llm::pricing::{Price, cost_usd, price_for};
use baton_llm::script::ScriptClient;
use baton_llm::{ModelSpec, Usage};
use baton_test_support::{MockResponse, MockServer, RecordedRequest};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

const STORIES: [&str; 3] = ["1-1-count-words", "1-2-count-lines", "2-1-summary-line"];

/// The demo's script with every turn reporting its own usage, cache reads and writes included.
fn metered_script(dir: &std::path::Path) -> std::path::PathBuf {
    let text = std::fs::read_to_string(example_dir().join(".baton/scripts/demo.yaml"))
        .expect("the demo script");
    let mut out = String::new();
    let mut n = 0u64;
    for line in text.lines() {
        out.push_str(line);
        out.push('\n');
        if line.starts_with("- agent: ") {
            n += 1;
            out.push_str(&format!(
                "  usage: {{input_tokens: {}, output_tokens: {}, cache_read_tokens: {}, \
                 cache_write_tokens: {}}}\n",
                40 + n,
                10 + n,
                2000 + 100 * n,
                300 + 7 * n
            ));
        }
    }
    let path = dir.join("metered.yaml");
    std::fs::write(&path, out).expect("write the script");
    path
}

/// A server replaying `script` over `wire` that keeps the usage of every answer it gave, as
/// baton is to count it: the wire's own report turned into uncached input, cache reads and
/// cache writes (OpenAI's prompt holds the cached tokens and knows no cache writes).
fn replaying(
    wire: Wire,
    script: Arc<ScriptClient>,
    served: Arc<Mutex<Vec<Usage>>>,
) -> impl Fn(&RecordedRequest) -> MockResponse {
    move |request: &RecordedRequest| match script.respond(&chat_request(wire, &request.body)) {
        Ok(answer) => {
            let u = answer.usage;
            let counted = match wire {
                Wire::Anthropic => u,
                Wire::OpenAi => Usage {
                    input_tokens: u.input_tokens + u.cache_write_tokens,
                    cache_write_tokens: 0,
                    ..u
                },
            };
            served.lock().expect("the served usage").push(counted);
            stream(wire, &answer)
        }
        Err(e) => MockResponse::text(500, &format!("no recorded turn: {e}")),
    }
}

/// The meter of what the server reported, each call priced at `price`.
fn sum(served: &[Usage], price: &Price) -> Meter {
    served
        .iter()
        .map(|u| {
            Meter::of_call(
                u.input_tokens,
                u.cache_read_tokens,
                u.cache_write_tokens,
                u.output_tokens,
                cost_usd(u, price),
            )
        })
        .sum()
}

/// The meter a JSON object carries (`input_tokens`, `cache_read_tokens`, …).
fn meter(v: &Value) -> Meter {
    let count = |k: &str| v[k].as_u64().unwrap_or_else(|| panic!("no `{k}` in {v:#}"));
    Meter {
        input_tokens: count("input_tokens"),
        cache_read_tokens: count("cache_read_tokens"),
        cache_write_tokens: count("cache_write_tokens"),
        output_tokens: count("output_tokens"),
        cost_usd: v["cost_usd"]
            .as_f64()
            .unwrap_or_else(|| panic!("no `cost_usd` in {v:#}")),
    }
}

/// `got` is `want`: the same tokens, and the same dollars but for the rounding of a different
/// order of additions.
#[track_caller]
fn same(what: &str, got: Meter, want: Meter) {
    let tokens = |m: Meter| {
        (
            m.input_tokens,
            m.cache_read_tokens,
            m.cache_write_tokens,
            m.output_tokens,
        )
    };
    assert_eq!(
        tokens(got),
        tokens(want),
        "{what}: {got:?} against {want:?}"
    );
    assert!(
        (got.cost_usd - want.cost_usd).abs() < 1e-9,
        "{what}: ${} against ${}",
        got.cost_usd,
        want.cost_usd
    );
}

/// Runs the demo sprint over `wire` with every answer metered; returns the project, its trusted
/// user configuration, the sprint's report and events, and the meter of what the server
/// reported.
async fn metered_sprint(wire: Wire) -> (Project, tempfile::TempDir, Value, Vec<Value>, Meter) {
    let p = Project::empty();
    let script = Arc::new(ScriptClient::load(metered_script(p.root())).expect("metered script"));
    let served = Arc::new(Mutex::new(Vec::new()));
    let server = MockServer::start().await;
    server.respond_with(Arc::new(replaying(wire, script, served.clone())));
    let (run, user) = sprint_over_the_wire(&p, wire, &server);
    let (events, report) = events_and_report(&run);
    assert_eq!(report["completed"], 3, "{report:#}");
    let model = match wire {
        Wire::Anthropic => "anthropic/claude-sonnet-4-5",
        Wire::OpenAi => "openai/gpt-5",
    };
    let spec = ModelSpec::parse(model).expect("a model string");
    let price = price_for(&spec, &BTreeMap::new()).expect("a bundled price");
    let served = served.lock().expect("the served usage").clone();
    assert!(served.len() >= 16, "{} requests", served.len());
    let want = sum(&served, &price);
    assert!(
        want.cache_read_tokens > 0 && want.cost_usd > 0.0,
        "{want:?}"
    );
    (p, user, report, events, want)
}

/// The report and the `--json` events sum to what the server reported, per run and, through
/// each story's stages, per story.
fn check_report(report: &Value, events: &[Value], want: Meter) {
    same("the report's run total", meter(&report["usage"]), want);
    let from_events: Meter = events
        .iter()
        .filter(|e| e["event"] == "usage")
        .map(meter)
        .sum();
    same("the --json usage events", from_events, want);
    let mut stories = Meter::default();
    for story in report["stories"].as_array().expect("stories") {
        let total = meter(story);
        let stages: Meter = story["stages"]
            .as_array()
            .expect("stages")
            .iter()
            .map(meter)
            .sum();
        same(&format!("the stages of {}", story["key"]), stages, total);
        stories.add(total);
    }
    // The run holds the stories and the epics' retrospectives.
    assert!(
        stories.input_tokens > 0 && stories.input_tokens <= want.input_tokens,
        "{stories:?} of {want:?}"
    );
}

/// `baton status` shows the sprint's total and each story's, in its JSON and its text.
fn check_status(p: &Project, report: &Value, want: Meter) -> BTreeMap<String, Meter> {
    let status = parse_json(&p.run(&["status", "--json"]));
    same(
        "baton status --json's sprint",
        meter(&status["usage"]),
        want,
    );
    let mut by_story = BTreeMap::new();
    for key in STORIES {
        let entry = status["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .find(|e| e["key"] == key)
            .unwrap_or_else(|| panic!("{key} in {status:#}"));
        let in_report = report["stories"]
            .as_array()
            .expect("stories")
            .iter()
            .find(|s| s["key"] == key)
            .map(meter)
            .expect("the story in the report");
        same(
            &format!("{key} in baton status"),
            meter(&entry["usage"]),
            in_report,
        );
        by_story.insert(key.to_owned(), in_report);
    }
    let text = p.run(&["status"]).expect_code(0).stdout;
    let line = format!("used by the sprint's runs: {}", want.describe());
    assert!(text.contains(&line), "no `{line}` in:\n{text}");
    for key in STORIES {
        let row = text.lines().find(|l| l.contains(key)).expect("a row");
        assert!(row.contains(&by_story[key].describe()), "{row}");
    }
    by_story
}

#[tokio::test(flavor = "multi_thread")]
async fn the_meter_shows_what_the_anthropic_wire_reported_everywhere() {
    let (p, _user, report, events, want) = metered_sprint(Wire::Anthropic).await;
    assert!(want.cache_write_tokens > 0, "{want:?}");
    check_report(&report, &events, want);
    let stories = check_status(&p, &report, want);

    // The board: the run and its agents on the runs page, each story and its steps on its page.
    let board = Server::start(&p, &[], &[]);
    let runs = board.json("/runs");
    same("the board's run", meter(&runs["runs"][0]["spend"]), want);
    let agents: Meter = runs["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .map(meter)
        .sum();
    same("the board's agents", agents, want);
    let page = board.get("/runs", &[]).body;
    let cells = format!(
        "<td>{} / {}</td><td>{} / {}</td>",
        want.input_tokens, want.output_tokens, want.cache_read_tokens, want.cache_write_tokens
    );
    assert!(page.contains(&cells), "no `{cells}` on the runs page");
    for (key, story) in &stories {
        let view = board.json(&format!("/story/{key}"));
        same(
            &format!("{key} on the board"),
            meter(&view["spend"]),
            *story,
        );
        let steps: Meter = view["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .map(|s| meter(&s["spend"]))
            .sum();
        same(&format!("{key}'s steps on the board"), steps, *story);
        let page = board.get(&format!("/story/{key}"), &[]).body;
        let said = format!(
            "{} in, of which {} cache read and {} cache write / {} out tokens",
            story.input_tokens,
            story.cache_read_tokens,
            story.cache_write_tokens,
            story.output_tokens
        );
        assert!(page.contains(&said), "no `{said}` on {key}'s page");
    }
}

/// OpenAI's prompt holds its cached tokens: the meter takes them out of the uncached input once,
/// and prices them at the model's cached-input rate.
#[tokio::test(flavor = "multi_thread")]
async fn the_meter_counts_openais_cached_prompt_tokens_once() {
    let (p, _user, report, events, want) = metered_sprint(Wire::OpenAi).await;
    assert_eq!(want.cache_write_tokens, 0, "{want:?}");
    check_report(&report, &events, want);
    check_status(&p, &report, want);
}
