//! Codex (`codex exec --json`): its command line, its isolated environment and its event
//! stream.
//!
//! Isolation: HOME and `CODEX_HOME` under the run's state directory (no `config.toml`, so no
//! user MCP servers or hooks, and no trusted project, so a repository's `.codex/config.toml` is
//! not read), `--ignore-user-config --ignore-rules --ephemeral`, project docs off
//! (`project_doc_max_bytes=0`), the list of skills off (`skills.include_instructions=false`:
//! Codex would otherwise offer the model a repository's `.agents/skills` and `.codex/skills`),
//! stdin closed (Codex reads it otherwise). The agent's system prompt goes in as
//! `developer_instructions`; read-only roles run in the `read-only` sandbox, writing roles in
//! `workspace-write`. A provider the user configured comes in through
//! `-c model_providers.baton={…}` on the Responses wire (the only one Codex 0.169 speaks). The
//! traps: a server that is down makes Codex print "Reconnecting..." forever, so those lines are
//! not progress and the stall timeout ends the run as failed with the reason; a model name Codex
//! has no metadata for gets no `apply_patch` tool, which is kept as a warning.

use super::stream::{Activity, StreamParser, Tally, no_result, str_of, u64_of};
use super::{Invocation, Launch};
use baton_llm::Usage;
use serde_json::Value;

/// The variable the provider entry names for its key.
pub const KEY_VAR: &str = "BATON_CODEX_API_KEY";

/// A TOML basic string (JSON's string syntax is a subset TOML accepts).
fn toml_str(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

/// The command line, environment and files of one run.
pub fn invocation(l: &Launch<'_>) -> Invocation {
    let sandbox = if l.read_only {
        "read-only"
    } else {
        "workspace-write"
    };
    let mut args: Vec<String> = vec![
        "exec".into(),
        "--json".into(),
        "--ephemeral".into(),
        "--ignore-user-config".into(),
        "--ignore-rules".into(),
        "--skip-git-repo-check".into(),
        "--color".into(),
        "never".into(),
        "-s".into(),
        sandbox.into(),
        "-c".into(),
        "project_doc_max_bytes=0".into(),
        "-c".into(),
        "skills.include_instructions=false".into(),
        "-c".into(),
        format!("developer_instructions={}", toml_str(l.system)),
    ];
    if !l.read_only {
        // `workspace-write` also lets Codex write anywhere under `/tmp` and `$TMPDIR`; the
        // workspace is the only tree a writing role may change.
        args.extend([
            "-c".into(),
            "sandbox_workspace_write.exclude_slash_tmp=true".into(),
            "-c".into(),
            "sandbox_workspace_write.exclude_tmpdir_env_var=true".into(),
        ]);
    }
    if !l.model.is_empty() {
        args.extend(["-m".into(), l.model.to_owned()]);
    }
    let mut secret_env = Vec::new();
    if let Some(url) = &l.settings.base_url {
        let retries = l.settings.max_retries;
        args.extend([
            "-c".into(),
            "model_provider=\"baton\"".into(),
            "-c".into(),
            format!(
                "model_providers.baton={{name=\"baton\",base_url={},wire_api=\"responses\",env_key=\"{KEY_VAR}\",request_max_retries={retries},stream_max_retries={retries}}}",
                toml_str(url)
            ),
        ]);
        secret_env.push((
            KEY_VAR.to_owned(),
            l.settings
                .api_key
                .as_ref()
                .map_or_else(|| "none".to_owned(), |k| k.expose().to_owned()),
        ));
    } else if let Some(k) = &l.settings.api_key {
        secret_env.push(("OPENAI_API_KEY".to_owned(), k.expose().to_owned()));
    }
    // After `--`, a task can never be read as a flag or as a value of one.
    args.push("--".into());
    args.push(l.task.to_owned());
    let home = l.home.display().to_string();
    let codex_home = l.home.join(".codex");
    Invocation {
        args,
        env: vec![
            ("HOME".to_owned(), home),
            ("CODEX_HOME".to_owned(), codex_home.display().to_string()),
        ],
        secret_env,
        // Codex refuses a CODEX_HOME that does not exist; the file itself is ignored
        // (`--ignore-user-config`).
        files: vec![(codex_home.join("config.toml"), String::new())],
    }
}

/// Reads Codex's `--json` events.
#[derive(Debug, Default)]
pub struct Parser {
    turn_failed: Option<String>,
    /// "Reconnecting..." lines tolerated before the server counts as unreachable.
    max_reconnects: u32,
    reconnects: u32,
}

impl Parser {
    /// A parser that gives up after `max_retries` reconnections in a row (Codex itself never
    /// does).
    pub fn new(max_retries: u32) -> Parser {
        Parser {
            max_reconnects: max_retries,
            ..Parser::default()
        }
    }
}

impl StreamParser for Parser {
    fn event(&mut self, ev: &Value, t: &mut Tally) -> Activity {
        if str_of(ev, "type") != "error" {
            self.reconnects = 0;
        }
        match str_of(ev, "type") {
            "turn.started" if t.turns == 0 => t.turn(),
            "item.started" => {
                let item = ev.get("item").unwrap_or(&Value::Null);
                match str_of(item, "type") {
                    "command_execution" => t.tool("exec_command"),
                    "file_change" => t.tool("apply_patch"),
                    "mcp_tool_call" => t.tool(str_of(item, "tool")),
                    _ => return Activity::Progress,
                }
                // Each tool call means the model is asked again: one more turn.
                t.turn();
            }
            "item.completed" => {
                let item = ev.get("item").unwrap_or(&Value::Null);
                match str_of(item, "type") {
                    "agent_message" => {
                        let text = str_of(item, "text");
                        if !text.trim().is_empty() {
                            t.summary = text.to_owned();
                        }
                    }
                    "error" => {
                        let msg = str_of(item, "message");
                        if msg.contains("metadata") {
                            t.warnings.push(format!(
                                "{msg} (Codex offers no apply_patch tool for a model it does not know; files can only be written through shell commands)"
                            ));
                        } else {
                            t.warnings.push(msg.to_owned());
                        }
                    }
                    _ => {}
                }
            }
            "turn.completed" => {
                t.finished = true;
                let u = ev.get("usage").unwrap_or(&Value::Null);
                let input = u64_of(u, "input_tokens");
                let cached = u64_of(u, "cached_input_tokens");
                let written = u64_of(u, "cache_write_input_tokens");
                t.usage.add(&Usage {
                    // Codex counts as OpenAI does: `input_tokens` is the whole prompt, the
                    // cached and cache-written tokens inside it.
                    input_tokens: input.saturating_sub(cached).saturating_sub(written),
                    output_tokens: u64_of(u, "output_tokens"),
                    cache_read_tokens: cached,
                    cache_write_tokens: written,
                });
            }
            "turn.failed" => {
                t.finished = true;
                let msg = ev
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("turn failed")
                    .to_owned();
                t.errors.push(msg.clone());
                self.turn_failed = Some(msg);
            }
            "error" => {
                let msg = str_of(ev, "message");
                t.errors.push(msg.to_owned());
                if msg.starts_with("Reconnecting") {
                    // Codex retries a dead server forever: this is not progress, and past the
                    // retries allowed the server counts as unreachable.
                    self.reconnects += 1;
                    if self.reconnects > self.max_reconnects {
                        t.fatal = Some(format!(
                            "the model server is unreachable: {msg} ({} reconnection attempts)",
                            self.reconnects
                        ));
                    }
                    return Activity::Idle;
                }
            }
            _ => {}
        }
        Activity::Progress
    }

    fn verdict(&self, t: &Tally, exit: Option<i32>, stderr_tail: &str) -> Result<(), String> {
        if let Some(f) = &self.turn_failed {
            return Err(format!("model API error: {f}"));
        }
        match (t.finished, exit) {
            (true, Some(0)) => Ok(()),
            _ => Err(match t.errors.last() {
                Some(e) => format!("{}; last error: {e}", no_result("codex", exit, stderr_tail)),
                None => no_result("codex", exit, stderr_tail),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::replay;
    use super::*;

    #[test]
    fn a_patch_run_is_read_to_its_usage() {
        let (t, v) = replay(Parser::default(), "codex/write.jsonl", Some(0));
        assert_eq!(v, Ok(()));
        assert_eq!(t.tool_calls, 1);
        assert_eq!(t.turns, 2);
        assert_eq!((t.usage.input_tokens, t.usage.output_tokens), (19746, 24));
        assert_eq!(t.cli_cost, None);
        assert!(t.summary.starts_with("DONE:"));
    }

    #[test]
    fn cached_input_is_inside_codexs_input_and_counted_once() {
        let mut t = Tally::default();
        let turn = |input: u64, cached: u64, written: u64| {
            serde_json::json!({"type": "turn.completed", "usage": {
                "input_tokens": input, "cached_input_tokens": cached,
                "cache_write_input_tokens": written, "output_tokens": 7,
                "reasoning_output_tokens": 0}})
        };
        let mut p = Parser::default();
        p.event(&turn(10_000, 0, 0), &mut t);
        p.event(&turn(12_000, 9_000, 500), &mut t);
        assert_eq!(
            t.usage,
            Usage {
                input_tokens: 12_500,
                output_tokens: 14,
                cache_read_tokens: 9_000,
                cache_write_tokens: 500,
            }
        );
        // All input: what Codex reported as input, summed.
        assert_eq!(t.usage.total_input(), 22_000);
    }

    #[test]
    fn a_failed_command_is_tool_activity_not_a_failed_run() {
        let (t, v) = replay(Parser::default(), "codex/fail-command.jsonl", Some(0));
        assert_eq!(v, Ok(()));
        assert_eq!(t.tool_calls, 1);
    }

    #[test]
    fn reconnecting_is_idle_and_never_finishes() {
        let mut p = Parser::new(u32::MAX);
        let mut t = Tally::default();
        let text = std::fs::read_to_string(super::super::tests::fixture("codex/server-down.jsonl"))
            .unwrap();
        let mut idle = 0;
        for line in text.lines() {
            let ev: Value = serde_json::from_str(line).unwrap();
            if p.event(&ev, &mut t) == Activity::Idle {
                idle += 1;
            }
        }
        assert_eq!(idle, 5);
        assert!(!t.finished);
        assert!(
            t.fatal.is_none(),
            "no retry limit: Codex's own endless retrying"
        );
        let why = p.verdict(&t, None, "").unwrap_err();
        assert!(why.contains("Reconnecting"), "{why}");
    }

    #[test]
    fn reconnecting_past_the_retries_gives_up() {
        let (t, _) = replay(Parser::new(2), "codex/server-down.jsonl", None);
        assert!(t.fatal.unwrap().contains("unreachable: Reconnecting"));
        let (t, _) = replay(Parser::new(5), "codex/server-down.jsonl", None);
        assert!(t.fatal.is_none());
    }

    #[test]
    fn an_unknown_model_is_a_warning_about_apply_patch() {
        let (t, v) = replay(
            Parser::default(),
            "codex/write-unknown-model-exec_command.jsonl",
            Some(0),
        );
        assert_eq!(v, Ok(()));
        assert!(t.warnings[0].contains("no apply_patch"), "{:?}", t.warnings);
    }

    #[test]
    fn the_provider_and_instructions_go_in_as_config() {
        let settings = super::super::CliSettings {
            base_url: Some("http://127.0.0.1:9/v1".into()),
            api_key: Some(super::super::Secret::new("sk-secret")),
            ..Default::default()
        };
        let home = std::path::PathBuf::from("/h");
        let l = Launch {
            model: "gpt-5.5",
            provider: None,
            settings: &settings,
            system: "SYS \"quoted\"",
            task: "do it",
            read_only: true,
            max_turns: 3,
            root: std::path::Path::new("/r"),
            home: &home,
            policy_hook: None,
            allow_commands: &[],
        };
        let inv = invocation(&l);
        let joined = inv.args.join(" ");
        assert!(joined.contains("-s read-only"), "{joined}");
        // A writing role's sandbox leaves out /tmp and $TMPDIR.
        let writing = invocation(&Launch {
            read_only: false,
            ..l
        })
        .args
        .join(" ");
        assert!(writing.contains("-s workspace-write"), "{writing}");
        for key in ["exclude_slash_tmp", "exclude_tmpdir_env_var"] {
            assert!(
                writing.contains(&format!("-c sandbox_workspace_write.{key}=true")),
                "{writing}"
            );
        }
        assert!(
            joined.contains("-c skills.include_instructions=false"),
            "{joined}"
        );
        assert!(
            joined.contains(r#"developer_instructions="SYS \"quoted\"""#),
            "{joined}"
        );
        assert!(
            joined.contains(r#"base_url="http://127.0.0.1:9/v1""#),
            "{joined}"
        );
        assert!(!joined.contains("sk-secret"));
        assert_eq!(
            inv.secret_env,
            vec![(KEY_VAR.to_owned(), "sk-secret".to_owned())]
        );
        assert_eq!(inv.args.last().map(String::as_str), Some("do it"));
    }
}
