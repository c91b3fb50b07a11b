//! The fake GitHub against GitHub's own recorded answers: npm's `@octokit/fixtures` holds real
//! exchanges with api.github.com, recorded by GitHub's SDK team. Every recorded request of every
//! scenario that touches an endpoint baton calls is replayed against the fake (seeded with what
//! the recording shows the repository held), and the answers compared where baton reads them:
//! the status, the headers (pagination `link`, rate limits, `etag`, `date`), the JSON shape (every
//! key GitHub sent, of the same type) and the values baton reads (numbers, titles, states, label
//! names and colours, references, validation errors). `.ci/run` unpacks the scenarios into the
//! target directory and sets `BATON_TEST_OCTOKIT_FIXTURES`; without it the test says SKIPPED.

use baton_test_support::github::FakeGitHub;
use serde_json::Value;
use std::path::{Path, PathBuf};

const ENV_DIR: &str = "BATON_TEST_OCTOKIT_FIXTURES";
const ENV_REQUIRED: &str = "BATON_TEST_OCTOKIT_FIXTURES_REQUIRED";
const ORG: &str = "octokit-fixture-org";

/// The scenarios with a request to an endpoint baton calls.
const SCENARIOS: [&str; 5] = [
    "add-labels-to-issue",
    "labels",
    "errors",
    "paginate-issues",
    "git-refs",
];

/// Requests of those scenarios to endpoints baton never calls (`METHOD` and the path after
/// the repository): not replayed, and any other request is.
const NOT_BATONS: [(&str, &str); 5] = [
    ("get", "/labels/test-label"),
    ("patch", "/labels/test-label"),
    ("delete", "/labels/test-label-updated"),
    ("get", "/git/refs/"),
    ("patch", "/git/refs/heads/test"),
];

fn fixtures_dir() -> Option<PathBuf> {
    let dir = std::env::var_os(ENV_DIR)
        .map(PathBuf::from)
        .filter(|d| d.is_dir());
    if dir.is_none() {
        let msg = format!(
            "@octokit/fixtures is not installed: run .ci/run (it unpacks the scenarios into \
             target/octokit-fixtures) or set {ENV_DIR} to its `scenarios/api.github.com`"
        );
        assert!(
            std::env::var(ENV_REQUIRED).as_deref() != Ok("1"),
            "{ENV_REQUIRED}=1 but {msg}"
        );
        eprintln!("SKIPPED (octokit fixtures): {msg}");
    }
    dir
}

fn load(dir: &Path, scenario: &str) -> Vec<Value> {
    let file = dir.join(scenario).join("normalized-fixture.json");
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    match serde_json::from_str(&text) {
        Ok(Value::Array(a)) => a,
        other => panic!("{}: not a list of exchanges: {other:?}", file.display()),
    }
}

/// The `rel`s of a `link` header, in order.
fn rels(link: &str) -> Vec<String> {
    link.split(',')
        .filter_map(|part| part.split("rel=\"").nth(1))
        .filter_map(|r| r.split('"').next())
        .map(str::to_owned)
        .collect()
}

/// The URL a `link` header gives for `rel`.
fn link_of(link: &str, rel: &str) -> Option<String> {
    link.split(',')
        .find(|p| p.contains(&format!("rel=\"{rel}\"")))
        .and_then(|p| p.split('<').nth(1))
        .and_then(|p| p.split('>').next())
        .map(str::to_owned)
}

fn page_of(url: &str) -> Option<String> {
    url.split(['?', '&'])
        .find_map(|p| p.strip_prefix("page="))
        .map(str::to_owned)
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Every key GitHub sent is in the fake's answer, of the same type (a `null` matches a `null`
/// only where baton reads the value; elsewhere either may be null).
fn same_shape(at: &str, github: &Value, fake: &Value, problems: &mut Vec<String>) {
    match (github, fake) {
        (Value::Object(g), Value::Object(f)) => {
            for (k, gv) in g {
                let here = format!("{at}.{k}");
                match f.get(k) {
                    None => problems.push(format!("{here}: missing (GitHub: {gv})")),
                    Some(fv) => same_shape(&here, gv, fv, problems),
                }
            }
        }
        (Value::Array(g), Value::Array(f)) => {
            if let (Some(gv), Some(fv)) = (g.first(), f.first()) {
                same_shape(&format!("{at}[0]"), gv, fv, problems);
            }
        }
        (Value::Null, _) | (_, Value::Null) => {
            let read = READ.iter().any(|r| at.ends_with(r));
            if read && kind(github) != kind(fake) {
                problems.push(format!("{at}: GitHub {github}, the fake {fake}"));
            }
        }
        (g, f) if kind(g) != kind(f) => problems.push(format!(
            "{at}: GitHub a {}, the fake a {}",
            kind(g),
            kind(f)
        )),
        _ => {}
    }
}

/// Fields whose values baton reads (model.rs), compared for equality.
const READ: [&str; 12] = [
    ".number",
    ".title",
    ".state",
    ".name",
    ".color",
    ".description",
    ".ref",
    ".sha",
    ".message",
    ".code",
    ".field",
    ".resource",
];

fn same_values(at: &str, github: &Value, fake: &Value, problems: &mut Vec<String>) {
    match (github, fake) {
        (Value::Object(g), Value::Object(f)) => {
            for (k, gv) in g {
                // A URL's host is the fake's; where its numbers point is compared elsewhere.
                if k.ends_with("url") || k == "id" || k == "node_id" {
                    continue;
                }
                if let Some(fv) = f.get(k) {
                    same_values(&format!("{at}.{k}"), gv, fv, problems);
                }
            }
        }
        (Value::Array(g), Value::Array(f)) => {
            if g.len() != f.len() {
                problems.push(format!(
                    "{at}: GitHub {} items, the fake {}",
                    g.len(),
                    f.len()
                ));
            }
            for (i, (gv, fv)) in g.iter().zip(f).enumerate() {
                same_values(&format!("{at}[{i}]"), gv, fv, problems);
            }
        }
        (g, f) => {
            let read = READ.iter().any(|r| at.ends_with(r));
            // The documentation link of an error moves with GitHub's docs; baton shows the message.
            if read && !at.ends_with("documentation_url") && g != f {
                problems.push(format!("{at}: GitHub {g}, the fake {f}"));
            }
        }
    }
}

/// Seeds the fake with what the recording shows the repository held before the scenario.
fn seed(fake: &FakeGitHub, scenario: &str, exchanges: &[Value]) {
    match scenario {
        "labels" => {
            for l in exchanges[0]["response"].as_array().into_iter().flatten() {
                fake.add_label(
                    l["name"].as_str().unwrap_or_default(),
                    l["color"].as_str().unwrap_or_default(),
                    l["description"].as_str().unwrap_or_default(),
                );
            }
        }
        "paginate-issues" => {
            let mut issues: Vec<&Value> = exchanges
                .iter()
                .filter_map(|e| e["response"].as_array())
                .flatten()
                .collect();
            issues.sort_by_key(|i| i["number"].as_u64());
            for i in issues {
                let labels: Vec<&str> = i["labels"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|l| l["name"].as_str())
                    .collect();
                let n = fake.add_issue(
                    i["title"].as_str().unwrap_or_default(),
                    i["body"].as_str().unwrap_or_default(),
                    &labels,
                    i["user"]["login"]
                        .as_str()
                        .unwrap_or("octokit-fixture-user-a"),
                );
                assert_eq!(Some(n), i["number"].as_u64(), "issues are seeded in order");
            }
        }
        "git-refs" => {
            let main = exchanges[0]["response"][0]["object"]["sha"]
                .as_str()
                .unwrap_or_default();
            fake.seed_ref("refs/heads/main", main);
            if let Some(sha) = exchanges[1]["body"]["sha"].as_str() {
                fake.seed_commit(sha);
            }
        }
        _ => {}
    }
}

#[tokio::test]
async fn the_fake_answers_as_github_did_in_its_recorded_exchanges() {
    let Some(dir) = fixtures_dir() else { return };
    // reqwest is built without a crypto provider; the client installs ring, and so does this.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let mut replayed = 0;
    let mut problems = Vec::new();
    for scenario in SCENARIOS {
        let exchanges = load(&dir, scenario);
        let repo = exchanges
            .iter()
            .find_map(|e| {
                e["path"]
                    .as_str()?
                    .strip_prefix(&format!("/repos/{ORG}/"))?
                    .split(['/', '?'])
                    .next()
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| panic!("{scenario}: no repository in its paths"));
        let fake = FakeGitHub::start_for(ORG, &repo).await;
        seed(&fake, scenario, &exchanges);
        let mut next: Option<String> = None;
        for (i, e) in exchanges.iter().enumerate() {
            let method = e["method"].as_str().unwrap_or_default();
            let path = e["path"].as_str().unwrap_or_default();
            let tail = path
                .strip_prefix(&format!("/repos/{ORG}/{repo}"))
                .unwrap_or(path);
            if NOT_BATONS.contains(&(method, tail)) {
                continue;
            }
            let at = format!("{scenario} #{i} {} {path}", method.to_uppercase());
            // A later page is asked for by the link the fake gave, as baton's client does.
            let url = if path.starts_with("/repositories/") {
                let link = next.take().unwrap_or_else(|| panic!("{at}: no next link"));
                assert_eq!(page_of(&link), page_of(path), "{at}: the next page");
                link
            } else {
                format!("{}{path}", fake.base_url())
            };
            let method = reqwest::Method::from_bytes(method.to_uppercase().as_bytes())
                .unwrap_or(reqwest::Method::GET);
            let mut req = http
                .request(method.clone(), &url)
                .header("authorization", "token fixture-replay")
                .header("accept", "application/vnd.github+json")
                .header("user-agent", "baton-fixture-replay");
            if e["body"].is_object() || e["body"].is_array() {
                req = req.json(&e["body"]);
            }
            let answer = req.send().await.unwrap_or_else(|e| panic!("{at}: {e}"));
            replayed += 1;
            let status = answer.status().as_u16();
            let headers = answer.headers().clone();
            let text = answer.text().await.unwrap_or_default();
            let body: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
            if Some(u64::from(status)) != e["status"].as_u64() {
                problems.push(format!(
                    "{at}: GitHub {}, the fake {status}: {body}",
                    e["status"]
                ));
                continue;
            }
            let recorded = |name: &str| e["headers"][name].as_str().map(str::to_owned);
            let got = |name: &str| {
                headers
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            };
            // Pagination: the same `rel`s, in GitHub's order.
            match (recorded("link"), got("link")) {
                (Some(g), Some(f)) => {
                    if rels(&g) != rels(&f) {
                        problems.push(format!("{at}: link rels {:?} vs {:?}", rels(&g), rels(&f)));
                    }
                    next = link_of(&f, "next");
                }
                (None, None) => {}
                (g, f) => problems.push(format!("{at}: link GitHub {g:?}, the fake {f:?}")),
            }
            // Rate limits: baton waits on them.
            for name in [
                "x-ratelimit-limit",
                "x-ratelimit-remaining",
                "x-ratelimit-reset",
            ] {
                if e["headers"].get(name).is_some()
                    && got(name).and_then(|v| v.parse::<u64>().ok()).is_none()
                {
                    problems.push(format!("{at}: no numeric `{name}`"));
                }
            }
            // `date` is GitHub's clock, which baton reads as now.
            if recorded("date").is_some()
                && got("date")
                    .and_then(|d| jiff::fmt::rfc2822::parse(&d).ok())
                    .is_none()
            {
                problems.push(format!("{at}: no RFC 2822 `date`: {:?}", got("date")));
            }
            // ETags: baton makes its polling GETs conditional.
            if method == reqwest::Method::GET && recorded("etag").is_some() && got("etag").is_none()
            {
                problems.push(format!("{at}: no `etag`"));
            }
            let before = problems.len();
            same_shape("answer", &e["response"], &body, &mut problems);
            same_values("answer", &e["response"], &body, &mut problems);
            for p in &mut problems[before..] {
                *p = format!("{at}: {p}");
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} differences from GitHub's recordings:\n{}",
        problems.len(),
        problems.join("\n")
    );
    assert!(replayed >= 12, "replayed {replayed} exchanges");
}
