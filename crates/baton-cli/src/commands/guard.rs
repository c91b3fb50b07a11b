//! `baton guard`: the test-first guard as a Claude Code hook, and its installation.
//!
//! In hook mode baton reads one hook call from stdin — `PreToolUse` for `Write`, `Edit`,
//! `MultiEdit`, `NotebookEdit` and `Bash`; `PostToolUse` and `PostToolUseFailure` to learn about
//! test runs (a failing command only reaches the second) and test-file writes — applies the
//! same [`baton_agent::tdd::TddCore`] as baton's own agents, with its state in the project's
//! journal under the scope `claude:<session_id>`, and answers in the hook protocol: a refusal
//! exits 2 with the reason on stderr (which Claude Code shows the agent); an allowed call exits
//! 0 with no decision at all, so Claude Code's own permission rules still apply (answering
//! `allow` would skip them); a warning exits 0 with `additionalContext`. When the guard cannot
//! read its input or its state, a `PreToolUse` call is refused rather than waved through.
//!
//! `install` merges three handlers into `.claude/settings.local.json`, keeping everything else;
//! `uninstall` removes only those handlers, and restores the file byte for byte when nothing
//! else changed in between (the original bytes are kept in `.baton/guard-install.json`).

use super::tdd_hook::{HookAnswer, hook, str_field};
use crate::cli::{GuardAction, GuardArgs};
use crate::commands::Code;
use anyhow::{Context, Result};
use serde_json::{Map, Value, json};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Marks baton's handlers in the settings file.
pub const MARKER: &str = "baton test-first guard";
/// Largest hook payload read (Claude Code caps tool output well below this).
const STDIN_LIMIT: u64 = 16 * 1024 * 1024;

/// Runs `baton guard`.
pub fn run(root: &Path, args: &GuardArgs) -> Result<Code> {
    match args.action {
        Some(GuardAction::Install) => {
            let changed = install(root)?;
            println!(
                "{} `{}`",
                if changed {
                    "installed the test-first guard hooks in"
                } else {
                    "the test-first guard hooks are already in"
                },
                settings_path(root).display()
            );
            Ok(Code::Ok)
        }
        Some(GuardAction::Uninstall) => {
            let changed = uninstall(root)?;
            println!(
                "{}",
                if changed {
                    "removed the test-first guard hooks"
                } else {
                    "no test-first guard hooks to remove"
                }
            );
            Ok(Code::Ok)
        }
        None => {
            let mut input = Vec::new();
            let read = std::io::stdin()
                .take(STDIN_LIMIT)
                .read_to_end(&mut input)
                .map(|_| ());
            let answer = match read {
                Ok(()) if args.policy => super::policy::policy_hook_in(
                    root,
                    args.tree.as_deref(),
                    &String::from_utf8_lossy(&input),
                ),
                Ok(()) => hook(root, &String::from_utf8_lossy(&input)),
                Err(e) => HookAnswer::block(&format!(
                    "baton guard: cannot read the hook input ({e}); the call is blocked"
                )),
            };
            #[allow(clippy::print_stderr)]
            {
                print!("{}", answer.stdout);
                eprint!("{}", answer.stderr);
            }
            std::process::exit(i32::from(answer.code));
        }
    }
}

/// `.claude/settings.local.json` of `root`.
pub fn settings_path(root: &Path) -> PathBuf {
    root.join(".claude").join("settings.local.json")
}

fn record_path(root: &Path) -> PathBuf {
    root.join(crate::config::STATE_DIR)
        .join("guard-install.json")
}

fn handler_command() -> String {
    let exe = std::env::current_exe()
        .ok()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "baton".to_owned());
    format!(
        "'{}' -C \"$CLAUDE_PROJECT_DIR\" guard",
        exe.replace('\'', r"'\''")
    )
}

const EVENTS: [(&str, &str); 3] = [
    ("PreToolUse", "Write|Edit|MultiEdit|NotebookEdit|Bash"),
    ("PostToolUse", "Write|Edit|MultiEdit|NotebookEdit|Bash"),
    ("PostToolUseFailure", "Bash"),
];

fn is_ours(group: &Value) -> bool {
    group
        .get("hooks")
        .and_then(Value::as_array)
        .is_some_and(|hs| {
            !hs.is_empty() && hs.iter().all(|h| str_field(h, "statusMessage") == MARKER)
        })
}

/// A settings file: its bytes and its top-level object.
type Settings = (Vec<u8>, Map<String, Value>);

fn read_settings(path: &Path) -> Result<Option<Settings>> {
    match baton_store::bounded::read(path, baton_store::bounded::CONFIG_LIMIT) {
        Ok(bytes) => {
            let v: Value = serde_json::from_slice(&bytes)
                .with_context(|| format!("`{}` is not valid JSON", path.display()))?;
            match v {
                Value::Object(m) => Ok(Some((bytes, m))),
                _ => anyhow::bail!("`{}` is not a JSON object", path.display()),
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read `{}`", path.display())),
    }
}

fn render(m: &Map<String, Value>) -> Result<Vec<u8>> {
    let mut out = serde_json::to_vec_pretty(m)?;
    out.push(b'\n');
    Ok(out)
}

/// Merges baton's handlers into the settings file; returns whether it changed anything.
pub fn install(root: &Path) -> Result<bool> {
    let path = settings_path(root);
    let existing = read_settings(&path)?;
    let (original, mut m) = match existing {
        Some((b, m)) => (Some(b), m),
        None => (None, Map::new()),
    };
    let hooks = m
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(hooks) = hooks else {
        anyhow::bail!("`{}`: `hooks` is not an object", path.display());
    };
    let mut changed = false;
    for (event, matcher) in EVENTS {
        let groups = hooks
            .entry(event)
            .or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(groups) = groups else {
            anyhow::bail!("`{}`: `hooks.{event}` is not an array", path.display());
        };
        if groups.iter().any(is_ours) {
            continue;
        }
        groups.push(json!({
            "matcher": matcher,
            "hooks": [{ "type": "command", "command": handler_command(), "statusMessage": MARKER }],
        }));
        changed = true;
    }
    if !changed {
        return Ok(false);
    }
    let written = render(&m)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create `{}`", dir.display()))?;
    }
    let record = json!({
        "original": original.as_ref().map(|b| String::from_utf8_lossy(b).into_owned()),
        "written": String::from_utf8_lossy(&written),
    });
    let rp = record_path(root);
    if let Some(dir) = rp.parent() {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create `{}`", dir.display()))?;
    }
    baton_store::atomic::replace_durable(&rp, &serde_json::to_vec(&record)?)?;
    baton_store::atomic::replace_durable(&path, &written)?;
    Ok(true)
}

/// Removes baton's handlers; returns whether it changed anything.
pub fn uninstall(root: &Path) -> Result<bool> {
    let path = settings_path(root);
    let rp = record_path(root);
    let Some((bytes, mut m)) = read_settings(&path)? else {
        return Ok(false);
    };
    let record: Option<Value> = baton_store::bounded::read(&rp, baton_store::bounded::CONFIG_LIMIT)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    // Nothing changed since the install: put the original back exactly.
    if let Some(r) = &record
        && r.get("written").and_then(Value::as_str).map(str::as_bytes) == Some(&bytes[..])
    {
        match r.get("original").and_then(Value::as_str) {
            Some(orig) => {
                baton_store::atomic::replace_durable(&path, orig.as_bytes())?;
            }
            None => std::fs::remove_file(&path)
                .with_context(|| format!("cannot remove `{}`", path.display()))?,
        }
        let _ = std::fs::remove_file(&rp);
        return Ok(true);
    }
    let mut changed = false;
    if let Some(Value::Object(hooks)) = m.get_mut("hooks") {
        for (event, _) in EVENTS {
            if let Some(Value::Array(groups)) = hooks.get_mut(event) {
                let before = groups.len();
                groups.retain(|g| !is_ours(g));
                changed |= groups.len() != before;
                if groups.is_empty() && before > 0 {
                    hooks.remove(event);
                }
            }
        }
        if hooks.is_empty() {
            m.remove("hooks");
        }
    }
    if changed {
        baton_store::atomic::replace_durable(&path, &render(&m)?)?;
    }
    let _ = std::fs::remove_file(&rp);
    Ok(changed)
}
