//! The second wire oracle: request bodies checked against the official SDKs' own request types
//! (PyPI `anthropic`'s `MessageCreateParams`, `openai`'s chat `CompletionCreateParams`), by a
//! long-lived Python process (`oracle/wire_sdk_check.py`) started once per test process.
//!
//! [`crate::wire_rules`] owns the structure across fields (pairing, roles, limits); the SDK types
//! own the shape of every field, including the blocks baton never writes. The SDKs live in a pip
//! `--target` directory named by `BATON_TEST_WIRE_SDK_DIR` (`.ci/run` installs the pinned
//! versions there). Without it the check is skipped, unless `BATON_TEST_WIRE_SDK_REQUIRED=1`, in
//! which case every check fails with a message saying how to install it.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Mutex, PoisonError};

/// The pip `--target` directory holding `anthropic` and `openai`.
pub const DIR_ENV: &str = "BATON_TEST_WIRE_SDK_DIR";
/// `1`: a missing SDK directory fails the check instead of skipping it.
pub const REQUIRED_ENV: &str = "BATON_TEST_WIRE_SDK_REQUIRED";
/// How to install what [`DIR_ENV`] names (the versions `.ci/run` pins).
pub const INSTALL: &str = "python3 -m pip install --target target/wire-sdk anthropic==2.14.0 \
                           openai==3.57.0 pydantic==2.14.4 (or run .ci/run) and set \
                           BATON_TEST_WIRE_SDK_DIR=$PWD/target/wire-sdk";

const SCRIPT: &str = include_str!("../oracle/wire_sdk_check.py");

/// Which request type a body is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// Anthropic Messages; `beta` (`?beta=true`) uses the SDK's beta params type when it has one.
    Anthropic {
        /// The request went to `/v1/messages?beta=true`.
        beta: bool,
    },
    /// OpenAI chat completions.
    OpenAi,
}

/// What the SDK types said of a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The body validates.
    Accepted,
    /// The body does not validate: where and why.
    Refused(String),
    /// No SDK directory is configured (and none is required): nothing was checked.
    Skipped,
}

/// Whether the SDK directory is configured; `Err` (with how to install it) when it is not but
/// [`REQUIRED_ENV`] is `1`.
pub fn configured() -> Result<bool, String> {
    if std::env::var_os(DIR_ENV).is_some_and(|d| !d.is_empty()) {
        return Ok(true);
    }
    if std::env::var(REQUIRED_ENV).as_deref() == Ok("1") {
        return Err(format!(
            "{REQUIRED_ENV}=1 but {DIR_ENV} is not set: install the SDKs with `{INSTALL}`"
        ));
    }
    Ok(false)
}

struct Oracle {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Oracle {
    fn start(dir: &str) -> Result<Oracle, String> {
        let mut child = Command::new("python3")
            .arg("-c")
            .arg(SCRIPT)
            .env("PYTHONPATH", dir)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start python3 for the SDK check: {e}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            return Err("the SDK check's pipes were not set up".to_owned());
        };
        let mut oracle = Oracle {
            child,
            stdin,
            stdout: BufReader::new(stdout),
        };
        let ready = oracle.read_line()?;
        if ready.get("ready") != Some(&Value::Bool(true)) {
            let why = ready
                .get("error")
                .and_then(Value::as_str)
                .unwrap_or("no reason given");
            return Err(format!(
                "the SDKs under {DIR_ENV}={dir} do not load ({why}); install them with `{INSTALL}`"
            ));
        }
        Ok(oracle)
    }

    fn read_line(&mut self) -> Result<Value, String> {
        let mut line = String::new();
        let n = self
            .stdout
            .read_line(&mut line)
            .map_err(|e| format!("reading the SDK check's answer: {e}"))?;
        if n == 0 {
            return Err("the SDK check's process exited".to_owned());
        }
        serde_json::from_str(&line)
            .map_err(|e| format!("the SDK check answered {line:?}, not JSON: {e}"))
    }

    fn ask(&mut self, wire: Wire, body: &Value) -> Result<Verdict, String> {
        let (name, beta) = match wire {
            Wire::Anthropic { beta } => ("anthropic", beta),
            Wire::OpenAi => ("openai", false),
        };
        let mut line = json!({ "wire": name, "beta": beta, "body": body }).to_string();
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("writing to the SDK check: {e}"))?;
        let answer = self.read_line()?;
        match answer.get("ok") {
            Some(Value::Bool(true)) => Ok(Verdict::Accepted),
            Some(Value::Bool(false)) => Ok(Verdict::Refused(
                answer
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or("refused without a reason")
                    .to_owned(),
            )),
            _ => Err(format!("the SDK check answered {answer}")),
        }
    }
}

impl Drop for Oracle {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The process, started by the first check of the test process and shared by all.
static ORACLE: Mutex<Option<Oracle>> = Mutex::new(None);

/// Starts the process now if it is configured and not running yet (blocking, a few seconds),
/// so that the first request a test sends is not the one that waits for it: a client timeout
/// of a second would otherwise fire before the answer. Errors are left for [`check`] to report.
pub fn warm_up() {
    if !matches!(configured(), Ok(true)) {
        return;
    }
    let Ok(dir) = std::env::var(DIR_ENV) else {
        return;
    };
    let mut slot = ORACLE.lock().unwrap_or_else(PoisonError::into_inner);
    if slot.is_none() {
        *slot = Oracle::start(&dir).ok();
    }
}

/// Checks `body` against the SDK's request type for `wire` (blocking: it talks to the Python
/// process). `Err` when the check cannot run although it should: the SDK is required but not
/// configured, or configured but does not load.
pub fn check(wire: Wire, body: &Value) -> Result<Verdict, String> {
    if !configured()? {
        return Ok(Verdict::Skipped);
    }
    let dir = std::env::var(DIR_ENV).map_err(|e| format!("{DIR_ENV}: {e}"))?;
    let mut slot = ORACLE.lock().unwrap_or_else(PoisonError::into_inner);
    // One retry with a fresh process, should the previous one have died.
    for attempt in 0..2 {
        if slot.is_none() {
            *slot = Some(Oracle::start(&dir)?);
        }
        let Some(oracle) = slot.as_mut() else {
            continue;
        };
        match oracle.ask(wire, body) {
            Ok(verdict) => return Ok(verdict),
            Err(e) if attempt == 1 => return Err(e),
            Err(_) => *slot = None,
        }
    }
    Err("the SDK check did not answer".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// False (after a `SKIPPED:` notice) when the SDK is not configured and not required.
    fn sdk_or_skip(test: &str) -> bool {
        match configured() {
            Ok(true) => true,
            Ok(false) => {
                eprintln!("SKIPPED: {test}: the SDK check ({DIR_ENV} is not set; `{INSTALL}`)");
                false
            }
            Err(e) => panic!("{e}"),
        }
    }

    fn multi_turn() -> Value {
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 1024,
            "stream": true,
            "system": [{ "type": "text", "text": "sys", "cache_control": { "type": "ephemeral" } }],
            "tools": [{ "name": "bash", "input_schema": { "type": "object", "properties": {} } }],
            "messages": [
                { "role": "user", "content": "list files" },
                { "role": "assistant", "content": [
                    { "type": "text", "text": "Listing." },
                    { "type": "tool_use", "id": "toolu_1", "name": "bash", "input": { "command": "ls" } },
                ]},
                { "role": "user", "content": [
                    { "type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt" },
                    { "type": "text", "text": "thanks" },
                ]},
                { "role": "assistant", "content": "One file." },
                { "role": "user", "content": "ok" },
            ],
        })
    }

    #[test]
    fn accepts_a_well_formed_multi_turn_body_on_both_wires() {
        if !sdk_or_skip("accepts_a_well_formed_multi_turn_body_on_both_wires") {
            return;
        }
        let body = multi_turn();
        assert_eq!(
            check(Wire::Anthropic { beta: false }, &body),
            Ok(Verdict::Accepted)
        );
        assert_eq!(
            check(Wire::Anthropic { beta: true }, &body),
            Ok(Verdict::Accepted)
        );
        let chat = json!({
            "model": "gpt-4o",
            "stream": true,
            "messages": [
                { "role": "system", "content": "sys" },
                { "role": "user", "content": "list" },
                { "role": "assistant", "content": null, "tool_calls": [
                    { "id": "call_1", "type": "function", "function": { "name": "bash", "arguments": "{}" } },
                ]},
                { "role": "tool", "tool_call_id": "call_1", "content": "a.txt" },
            ],
            "tools": [{ "type": "function", "function": { "name": "bash", "parameters": { "type": "object" } } }],
        });
        assert_eq!(check(Wire::OpenAi, &chat), Ok(Verdict::Accepted));
    }

    #[test]
    fn refuses_an_unknown_block_type_hidden_in_a_lazy_iterable() {
        if !sdk_or_skip("refuses_an_unknown_block_type_hidden_in_a_lazy_iterable") {
            return;
        }
        let mut body = multi_turn();
        body["messages"][2]["content"][0]["type"] = json!("tool_resultx");
        for beta in [false, true] {
            match check(Wire::Anthropic { beta }, &body) {
                Ok(Verdict::Refused(why)) => assert!(why.contains("messages.2.content.0"), "{why}"),
                other => panic!("beta={beta}: {other:?}"),
            }
        }
    }

    #[test]
    fn refuses_a_missing_max_tokens_and_a_bad_chat_role() {
        if !sdk_or_skip("refuses_a_missing_max_tokens_and_a_bad_chat_role") {
            return;
        }
        let mut body = multi_turn();
        body.as_object_mut().unwrap().remove("max_tokens");
        match check(Wire::Anthropic { beta: false }, &body) {
            Ok(Verdict::Refused(why)) => assert!(why.contains("max_tokens"), "{why}"),
            other => panic!("{other:?}"),
        }
        let chat = json!({ "model": "gpt-4o", "messages": [{ "role": "robot", "content": "hi" }] });
        match check(Wire::OpenAi, &chat) {
            Ok(Verdict::Refused(why)) => assert!(why.contains("messages.0"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    /// Not an assertion on time (CONTRIBUTING: none), a figure for whoever tunes the suite:
    /// `cargo test -p baton-test-support sdk_oracle::tests::reports_its_cost -- --nocapture`.
    #[test]
    fn reports_its_cost() {
        if !sdk_or_skip("reports_its_cost") {
            return;
        }
        let dir = std::env::var(DIR_ENV).unwrap();
        let start = Instant::now();
        let mut oracle = Oracle::start(&dir).unwrap();
        let started = start.elapsed();
        let body = multi_turn();
        let start = Instant::now();
        let n = 50u32;
        for _ in 0..n {
            assert_eq!(
                oracle.ask(Wire::Anthropic { beta: false }, &body),
                Ok(Verdict::Accepted)
            );
        }
        eprintln!(
            "SDK check: process start {started:?}, {:?} per request",
            start.elapsed() / n
        );
    }
}
