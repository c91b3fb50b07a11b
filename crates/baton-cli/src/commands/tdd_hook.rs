//! The test-first guard's answer to one Claude Code hook call: the hook input read as JSON, the
//! same [`baton_agent::tdd::TddCore`] decision baton's own agents get (its state in the
//! project's journal under `claude:<session_id>`), and the exit status and output that carry it
//! back in the hook protocol. `baton guard` runs it; the project's hook policy runs it after its
//! own rules.

use anyhow::Result;
use baton_agent::guard::Verdict;
use baton_agent::tdd::shell::Cmd;
use baton_agent::tdd::{Decision, relative};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// What one hook call ends with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookAnswer {
    /// Exit status.
    pub code: u8,
    /// Printed on stdout.
    pub stdout: String,
    /// Printed on stderr.
    pub stderr: String,
}

impl HookAnswer {
    pub(super) fn silent() -> HookAnswer {
        HookAnswer {
            code: 0,
            stdout: String::new(),
            stderr: String::new(),
        }
    }

    pub(super) fn block(reason: &str) -> HookAnswer {
        HookAnswer {
            code: 2,
            stdout: String::new(),
            stderr: format!("{reason}\n"),
        }
    }
}

pub(super) fn str_field<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or_default()
}

/// Answers one hook call given as JSON text.
pub fn hook(root: &Path, input: &str) -> HookAnswer {
    let payload: Value = match serde_json::from_str(input) {
        Ok(v @ Value::Object(_)) => v,
        _ => {
            return HookAnswer::block(
                "baton guard: the hook input is not a JSON object; the call is blocked",
            );
        }
    };
    let event = str_field(&payload, "hook_event_name").to_owned();
    let pre = event == "PreToolUse";
    match answer(root, &payload, &event) {
        Ok(a) => a,
        Err(e) if pre => HookAnswer::block(&format!(
            "baton guard: {e:#}; the call is blocked until the guard can check it"
        )),
        Err(e) => HookAnswer {
            code: 1,
            stdout: String::new(),
            stderr: format!("baton guard: {e:#}\n"),
        },
    }
}

fn answer(root: &Path, payload: &Value, event: &str) -> Result<HookAnswer> {
    let tool = str_field(payload, "tool_name");
    if !matches!(
        tool,
        "Write" | "Edit" | "MultiEdit" | "NotebookEdit" | "Bash"
    ) || !matches!(event, "PreToolUse" | "PostToolUse" | "PostToolUseFailure")
    {
        return Ok(HookAnswer::silent());
    }
    let session = str_field(payload, "session_id");
    anyhow::ensure!(!session.is_empty(), "the hook input has no `session_id`");
    let cfg = crate::config::Config::load_as(root, crate::trust::is_trusted(root))?;
    let journal = Arc::new(Mutex::new(crate::project::journal(&cfg)?));
    let scope = format!("claude:{session}");
    let Some(core) = super::tdd::core(&cfg, journal, &scope)? else {
        return Ok(HookAnswer::silent());
    };
    let input = payload.get("tool_input").cloned().unwrap_or(Value::Null);
    let cwd = match str_field(payload, "cwd") {
        "" => root.to_path_buf(),
        c => PathBuf::from(c),
    };
    let file = || {
        let p = match str_field(&input, "file_path") {
            "" => str_field(&input, "notebook_path"),
            p => p,
        };
        relative(core.root(), &cwd, p)
    };
    let text = written_text(tool, &input);
    let command = || Cmd::Shell(str_field(&input, "command").to_owned());
    match event {
        "PreToolUse" => {
            let decision = if tool == "Bash" {
                core.check_command(tool, &command(), &cwd)
            } else {
                match file() {
                    Some(rel) => core.check_write(tool, &rel, text.as_deref()),
                    None => return Ok(HookAnswer::silent()),
                }
            };
            Ok(pre_answer(&decision))
        }
        "PostToolUse" => {
            if tool == "Bash" {
                core.after_command(tool, &command(), Some(0));
            } else if let Some(rel) = file() {
                core.after_write(tool, &rel, text.as_deref());
            }
            Ok(HookAnswer::silent())
        }
        _ => {
            // PostToolUseFailure: the first line of `error` is `Exit code N`.
            if tool == "Bash" && payload.get("is_interrupt") != Some(&Value::Bool(true)) {
                let code = str_field(payload, "error")
                    .lines()
                    .next()
                    .and_then(|l| l.trim().strip_prefix("Exit code "))
                    .and_then(|n| n.trim().parse::<i64>().ok());
                if code.is_some() {
                    core.after_command(tool, &command(), code);
                }
            }
            Ok(HookAnswer::silent())
        }
    }
}

fn written_text(tool: &str, input: &Value) -> Option<String> {
    match tool {
        "Write" => input
            .get("content")
            .and_then(Value::as_str)
            .map(str::to_owned),
        "Edit" => input
            .get("new_string")
            .and_then(Value::as_str)
            .map(str::to_owned),
        "MultiEdit" => input.get("edits").and_then(Value::as_array).map(|edits| {
            edits
                .iter()
                .map(|e| str_field(e, "new_string"))
                .collect::<Vec<_>>()
                .join("\n")
        }),
        _ => None,
    }
}

fn pre_answer(d: &Decision) -> HookAnswer {
    match (&d.verdict, &d.warning) {
        (Verdict::Deny(why) | Verdict::Ask(why), _) => {
            HookAnswer::block(&format!("baton test-first guard: {why}"))
        }
        (Verdict::Allow, Some(w)) => HookAnswer {
            code: 0,
            stdout: json!({
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "additionalContext": format!("baton test-first guard: {w}"),
                }
            })
            .to_string(),
            stderr: String::new(),
        },
        (Verdict::Allow, None) => HookAnswer::silent(),
    }
}
