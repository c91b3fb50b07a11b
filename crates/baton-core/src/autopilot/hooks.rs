//! Hooks a BMad skill or one of its step files declares in its YAML frontmatter, read as values.
//!
//! The format follows Claude Code's skill hooks, with baton's additions (`critical`, `once`, and
//! a command given as an argument list):
//!
//! ```yaml
//! hooks:
//!   SessionStart:
//!     - hooks:
//!         - command: ["python3", "scripts/setup.py"]
//!           once: true
//!   PreToolUse:
//!     - matcher: "run_command|write_file"
//!       hooks:
//!         - type: command
//!           command: "scripts/check.sh --strict"
//!           critical: true
//!           timeout: 30
//! ```
//!
//! A command written as a string is split into words (single and double quotes group words),
//! and never given to a shell. Unknown events, keys and hook types, an empty command, an
//! unterminated quote and a matcher that is not a regular expression are errors naming where.

use regex::Regex;
use serde::Deserialize;
use std::collections::BTreeMap;

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The session starts in a process.
    SessionStart,
    /// Before a tool call.
    PreToolUse,
    /// After a tool call.
    PostToolUse,
    /// After each turn.
    Stop,
}

impl Event {
    fn parse(s: &str) -> Option<Event> {
        Some(match s {
            "SessionStart" => Event::SessionStart,
            "PreToolUse" => Event::PreToolUse,
            "PostToolUse" => Event::PostToolUse,
            "Stop" => Event::Stop,
            _ => return None,
        })
    }
}

/// One hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hook {
    /// When it runs.
    pub event: Event,
    /// A regular expression on the tool's name (tool events only; none: every tool).
    pub matcher: Option<String>,
    /// The program and its arguments.
    pub argv: Vec<String>,
    /// A failure stops the session.
    pub critical: bool,
    /// Runs once per session (`SessionStart`).
    pub once: bool,
    /// Seconds before it is killed (default 60).
    pub timeout_secs: u64,
}

/// Why hooks cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HookError(pub String);

#[derive(Deserialize)]
struct Front {
    #[serde(default)]
    hooks: Option<BTreeMap<String, Vec<Group>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Group {
    #[serde(default)]
    matcher: Option<String>,
    hooks: Vec<Spec>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Command {
    Line(String),
    Argv(Vec<String>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Spec {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    command: Command,
    #[serde(default)]
    critical: bool,
    #[serde(default)]
    once: bool,
    #[serde(default)]
    timeout: Option<u64>,
}

/// Splits `line` into words: whitespace separates, quotes group, nothing else is special.
pub fn words(line: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut in_word = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err("an unterminated quote".into());
    }
    if in_word {
        out.push(cur);
    }
    Ok(out)
}

/// The hooks declared in `frontmatter` (the YAML between a file's `---` lines); none if it
/// declares none.
pub fn parse(frontmatter: &str) -> Result<Vec<Hook>, HookError> {
    let front: Front = serde_saphyr::from_str(frontmatter)
        .map_err(|e| HookError(format!("the frontmatter does not read: {e}")))?;
    let mut out = Vec::new();
    for (name, groups) in front.hooks.unwrap_or_default() {
        let event = Event::parse(&name).ok_or_else(|| {
            HookError(format!(
                "`{name}` is not a hook event (SessionStart, PreToolUse, PostToolUse, Stop)"
            ))
        })?;
        for (g, group) in groups.into_iter().enumerate() {
            if let Some(m) = &group.matcher {
                Regex::new(m).map_err(|e| {
                    HookError(format!(
                        "{name}[{g}].matcher `{m}` is not a regular expression: {e}"
                    ))
                })?;
            }
            for (h, spec) in group.hooks.into_iter().enumerate() {
                let at = format!("{name}[{g}].hooks[{h}]");
                if let Some(k) = spec.kind.as_deref().filter(|k| *k != "command") {
                    return Err(HookError(format!(
                        "{at}.type `{k}`: only command hooks are run"
                    )));
                }
                let argv = match spec.command {
                    Command::Line(l) => {
                        words(&l).map_err(|e| HookError(format!("{at}.command: {e}")))?
                    }
                    Command::Argv(v) => v,
                };
                if argv.first().is_none_or(|p| p.trim().is_empty()) {
                    return Err(HookError(format!("{at}.command is empty")));
                }
                out.push(Hook {
                    event,
                    matcher: group.matcher.clone(),
                    argv,
                    critical: spec.critical,
                    once: spec.once,
                    timeout_secs: spec.timeout.unwrap_or(60),
                });
            }
        }
    }
    Ok(out)
}

/// Whether `hook` runs at `event` for a call of `tool`.
pub fn applies(hook: &Hook, event: Event, tool: Option<&str>) -> bool {
    if hook.event != event {
        return false;
    }
    match (&hook.matcher, tool) {
        (Some(m), Some(t)) => Regex::new(&format!("^(?:{m})$")).is_ok_and(|r| r.is_match(t)),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_are_read_from_the_frontmatter() {
        let y = "name: x\nhooks:\n  SessionStart:\n    - hooks:\n        - command: [\"python3\", \"s.py\"]\n          once: true\n  PreToolUse:\n    - matcher: \"run_command|write_file\"\n      hooks:\n        - type: command\n          command: \"check.sh --strict 'a b'\"\n          critical: true\n          timeout: 30\n";
        let h = parse(y).unwrap();
        assert_eq!(h.len(), 2);
        let pre = h.iter().find(|h| h.event == Event::PreToolUse).unwrap();
        assert_eq!(pre.argv, ["check.sh", "--strict", "a b"]);
        assert!(pre.critical && pre.timeout_secs == 30);
        assert!(applies(pre, Event::PreToolUse, Some("write_file")));
        assert!(!applies(pre, Event::PreToolUse, Some("read_file")));
        assert!(!applies(pre, Event::Stop, None));
        let start = h.iter().find(|h| h.event == Event::SessionStart).unwrap();
        assert!(start.once && !start.critical && start.timeout_secs == 60);
        assert!(parse("name: x").unwrap().is_empty());
    }

    #[test]
    fn bad_hooks_name_where() {
        let cases = [
            (
                "hooks:\n  OnSave:\n    - hooks:\n        - command: x\n",
                "OnSave",
            ),
            (
                "hooks:\n  Stop:\n    - hooks:\n        - command: \"\"\n",
                "Stop[0].hooks[0].command is empty",
            ),
            (
                "hooks:\n  Stop:\n    - hooks:\n        - command: \"a 'b\"\n",
                "unterminated",
            ),
            (
                "hooks:\n  Stop:\n    - hooks:\n        - type: prompt\n          command: x\n",
                "only command",
            ),
            (
                "hooks:\n  PreToolUse:\n    - matcher: \"(\"\n      hooks:\n        - command: x\n",
                "matcher",
            ),
            (
                "hooks:\n  Stop:\n    - hooks:\n        - command: x\n          shell: true\n",
                "does not read",
            ),
        ];
        for (y, want) in cases {
            let e = parse(y).unwrap_err().to_string();
            assert!(e.contains(want), "{y:?}: {e}");
        }
    }

    #[test]
    fn words_are_split_without_a_shell() {
        assert_eq!(
            words("a $(rm -rf x); b").unwrap(),
            ["a", "$(rm", "-rf", "x);", "b"]
        );
        assert_eq!(words("\"\" x").unwrap(), ["", "x"]);
    }
}
