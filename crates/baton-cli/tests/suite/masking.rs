//! One mask for every front end: a key planted in the provider's key variable and a token
//! written into its `base_url` (userinfo and a `?api_key=` parameter), which a failing gateway
//! echoes back in its error, appear in no terminal output, `--json` document, journal row,
//! transcript, file under `.baton/` or board page, after a failing plan step, a failing sprint
//! step and a failing team run.

use super::board::Server;
use super::common::Project;
use super::sprint::{K1, Script, Toml, command, sprint_project};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;

/// The key in the provider's key variable.
const KEY: &str = "sk-planted-env-key-7f3a9c21";
/// The password written into the provider's `base_url`.
const URL_TOKEN: &str = "gw-userinfo-token-5b8e0d44";
/// The `?api_key=` parameter of the provider's `base_url`.
const QUERY_TOKEN: &str = "gw-query-token-c91f27e6";

/// A model gateway that refuses every request with HTTP 401, quoting the request's target and
/// its headers back (as real gateways do with a key they reject); its address.
fn echoing_gateway() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("address");
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(&stream);
                let mut head = Vec::new();
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                    head.push(line.trim_end().to_owned());
                }
                let mut body = vec![0; length];
                let _ = std::io::Read::read_exact(&mut reader, &mut body);
                let message = format!("Incorrect API key provided: {}", head.join(" | "));
                let json = serde_json::json!({
                    "error": { "message": message, "type": "invalid_request_error" }
                })
                .to_string();
                let reply = format!(
                    "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\n\
                     content-length: {}\r\nconnection: close\r\n\r\n{json}",
                    json.len()
                );
                let _ = (&stream).write_all(reply.as_bytes());
            });
        }
    });
    format!("127.0.0.1:{}", addr.port())
}

/// The provider `gw` on the gateway, with the token in its URL and the key in its variable,
/// as the model of every agent.
fn gateway_toml(addr: &str) -> String {
    format!(
        "[providers.gw]\nkind = \"openai\"\nbase_url = \"http://gateway:{URL_TOKEN}@{addr}/v1?api_key={QUERY_TOKEN}\"\n\
         api_key_env = \"BATON_TEST_GW_KEY\"\nmax_retries = 0\n\n[agents]\nmodel = \"gw/model-1\"\n"
    )
}

/// Trusts the project, so that its provider applies (the configuration directory is the
/// project's own: `command` sets `BATON_CONFIG_DIR`).
fn trust(p: &Project) {
    let root = std::fs::canonicalize(p.root()).expect("canonical root");
    p.write(
        ".baton/no-user-config/trusted-projects",
        &format!("{}\n", root.display()),
    );
}

/// `baton ARGS` with the key in its environment: stdout and stderr.
fn run(p: &Project, args: &[&str]) -> (Option<i32>, String) {
    let out = command(p, args)
        .env("BATON_TEST_GW_KEY", KEY)
        .output()
        .expect("baton runs");
    (
        out.status.code(),
        format!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// The basic `Authorization` header the HTTP client makes of the URL's user and password
/// (`gateway:<URL_TOKEN>`, base64).
const BASIC: &str = "Z2F0ZXdheTpndy11c2VyaW5mby10b2tlbi01YjhlMGQ0NA==";

/// Every secret that shows in `text`.
fn leaks(text: &str) -> Vec<&'static str> {
    [KEY, URL_TOKEN, QUERY_TOKEN, BASIC]
        .into_iter()
        .filter(|s| text.contains(s))
        .collect()
}

/// Every file under `dir` (the journal's database and its WAL, transcripts, stream files,
/// logs), read as bytes: `(path, secrets found)` for each file holding one.
fn leaking_files(dir: &Path) -> Vec<(String, Vec<&'static str>)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let path = e.path();
        if path.is_dir() {
            out.extend(leaking_files(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            let found = leaks(&String::from_utf8_lossy(&bytes));
            if !found.is_empty() {
                out.push((path.display().to_string(), found));
            }
        }
    }
    out
}

/// Nothing under `.baton/` and no board page holds a secret; the gateway did echo them (the
/// failure reached the journal), so the mask had something to hide.
fn assert_nothing_leaked(p: &Project, outputs: &[(String, String)]) {
    if !p.sprint_path().is_file() {
        // The board serves a project with a sprint file.
        p.write(
            super::common::SPRINT_REL,
            "development_status:\n  epic-1: backlog\n  1-1-alpha: backlog\n",
        );
    }
    for (what, text) in outputs {
        assert_eq!(leaks(text), Vec::<&str>::new(), "{what}:\n{text}");
    }
    assert!(
        outputs
            .iter()
            .any(|(_, t)| t.contains("Incorrect API key provided")),
        "the gateway's refusal was never shown: {outputs:#?}"
    );
    assert_eq!(leaking_files(&p.root().join(".baton")), Vec::new());
    let server = Server::start(p, &[], &[("BATON_TEST_GW_KEY", KEY)]);
    for page in [
        "/",
        "/runs",
        "/escalations",
        "/plan",
        &format!("/story/{K1}"),
    ] {
        for accept in ["text/html", "application/json"] {
            let r = server.get(page, &[("accept", accept)]);
            assert_eq!(
                leaks(&r.body),
                Vec::<&str>::new(),
                "GET {page} ({accept}):\n{}",
                r.body
            );
        }
    }
}

#[test]
fn a_failing_plan_step_shows_no_key() {
    let addr = echoing_gateway();
    let p = Project::empty();
    p.write("baton.toml", &gateway_toml(&addr));
    trust(&p);
    let (code, text) = run(&p, &["plan", super::plan_pipeline::IDEA, "--yolo"]);
    assert_ne!(code, Some(0), "{text}");
    let (_, chat) = run(&p, &["chat"]);
    let (_, log) = run(&p, &["log", "--json"]);
    assert_nothing_leaked(
        &p,
        &[
            ("baton plan".into(), text),
            ("baton chat".into(), chat),
            ("baton log --json".into(), log),
        ],
    );
}

#[test]
fn a_failing_sprint_step_shows_no_key() {
    let addr = echoing_gateway();
    let tail = gateway_toml(&addr).replace(
        "[agents]\nmodel = \"gw/model-1\"\n",
        "[agents.roles]\nscrum-master = \"gw/model-1\"\ndeveloper = \"gw/model-1\"\n",
    );
    let p = sprint_project(
        Toml {
            tail: &tail,
            ..Toml::default()
        },
        &Script::new(),
    );
    trust(&p);
    let (_, text) = run(&p, &["sprint", "--yolo", "--stories", K1]);
    let (_, json) = run(
        &p,
        &[
            "sprint",
            "--yolo",
            "--stories",
            K1,
            "--json",
            "--allow-dirty",
        ],
    );
    let (_, escalations) = run(&p, &["escalations", "--all", "--json"]);
    let (_, status) = run(&p, &["status", "--json"]);
    assert_nothing_leaked(
        &p,
        &[
            ("baton sprint".into(), text),
            ("baton sprint --json".into(), json),
            ("baton escalations".into(), escalations),
            ("baton status".into(), status),
        ],
    );
}

#[test]
fn a_failing_team_run_shows_no_key() {
    let addr = echoing_gateway();
    let p = Project::empty();
    p.write("baton.toml", &gateway_toml(&addr));
    super::sprint::git_init(&p);
    trust(&p);
    let (code, text) = run(&p, &["team", "scout", "find the tests"]);
    assert_ne!(code, Some(0), "{text}");
    let (_, json) = run(&p, &["team", "scout", "find the tests", "--json"]);
    assert_nothing_leaked(
        &p,
        &[
            ("baton team".into(), text),
            ("baton team --json".into(), json),
        ],
    );
}
