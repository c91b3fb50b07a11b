//! `baton guard --policy`: baton's rules inside Claude Code, as the PreToolUse hook of a CLI
//! worker.
//!
//! baton starts Claude Code with a `--settings` file whose hooks run this command. Before a
//! `Write`, `Edit`, `MultiEdit` or `NotebookEdit` it resolves the path through the project's
//! sandbox, so the same refusals hold as for baton's own file tools: paths outside the
//! workspace, `.git/`, the deny globs, the protected paths (the sprint file, `baton.toml`,
//! `.baton/`, BMad's config files) and a change of a story file's status. A refusal exits 2
//! with the reason on stderr, which Claude Code reports to the model as the tool's error and
//! shows in its stream. Allowed calls (and every `PostToolUse`) then go through the test-first
//! guard exactly as `baton guard` does. Input that cannot be read blocks the call.
//!
//! Before a `Bash` call it applies the command allowlist (`[commands] allow`, plus a few shell
//! builtins) to every simple command of the line, reads the script of a `sh -c`/`bash -c` as a
//! line of its own, refuses command substitution (which would hide a program), and checks
//! output redirections and the destinations of `cp`, `mv`, `tee`,
//! `sed -i`… like file writes. This reads shell the way the test-first guard does: a heuristic,
//! and an allowlisted interpreter (`python3 -c`) can still do anything.

use super::tdd_hook::{HookAnswer, hook};
use anyhow::Result;
use baton_agent::sandbox::{Access, Sandbox};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn block(reason: &str) -> HookAnswer {
    HookAnswer {
        code: 2,
        stdout: String::new(),
        stderr: format!("baton policy: {reason}\n"),
    }
}

fn str_field<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or_default()
}

/// Answers one hook call given as JSON text, for an agent working in the project itself.
#[cfg(test)]
pub fn policy_hook(root: &Path, input: &str) -> HookAnswer {
    policy_hook_in(root, None, input)
}

/// Answers one hook call of an agent working in `tree` (a story's worktree under the project's
/// `.baton/worktrees/`; `None`: the project itself), where the project's rules hold at the
/// same places.
pub fn policy_hook_in(root: &Path, tree: Option<&Path>, input: &str) -> HookAnswer {
    let tree = match tree.map(|t| worktree_of(root, t)) {
        None => None,
        Some(Ok(t)) => Some(t),
        Some(Err(why)) => return block(&format!("{why}; the call is blocked")),
    };
    policy_call(root, tree.as_deref(), input)
}

/// `tree` if it is a worktree baton made for the project at `root` (a directory directly under
/// its `.baton/worktrees/`; for a project below its repository's root, `apps/x`, the project's
/// directory in such a worktree: `.baton/worktrees/<key>/apps/x`), canonical.
fn worktree_of(root: &Path, tree: &Path) -> Result<PathBuf, String> {
    let not = || format!("`{}` is not a worktree of this project", tree.display());
    let home = std::fs::canonicalize(root.join(".baton").join("worktrees")).map_err(|_| not())?;
    let t = std::fs::canonicalize(tree).map_err(|_| not())?;
    let prefix = repository_prefix(root);
    match t.strip_prefix(&home) {
        Ok(rel)
            if rel.components().count() == 1 + prefix.components().count()
                && rel.ends_with(&prefix)
                && t.is_dir() =>
        {
            Ok(t)
        }
        _ => Err(not()),
    }
}

/// The path of the project at `root` inside its repository (empty at the repository's top):
/// from the nearest directory holding `.git` (a directory, or a worktree's file) down to it.
fn repository_prefix(root: &Path) -> PathBuf {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    root.ancestors()
        .find(|d| d.join(".git").exists())
        .and_then(|top| root.strip_prefix(top).ok())
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// The sandbox an agent's call is judged by: the project's, or the same rules rooted at its
/// worktree.
fn sandbox_for(root: &Path, tree: Option<&Path>, cfg: &crate::config::Config) -> Result<Sandbox> {
    let protected = cfg.protected();
    Ok(match tree {
        None => Sandbox::with_protected(root, &cfg.sandbox_deny, &protected)?,
        Some(t) => {
            let canonical = std::fs::canonicalize(root)?;
            let relative = protected.relative_to(&[root, &canonical]);
            Sandbox::with_protected(t, &cfg.sandbox_deny, &relative)?
        }
    })
}

fn policy_call(root: &Path, tree: Option<&Path>, input: &str) -> HookAnswer {
    let payload: Value = match serde_json::from_str(input) {
        Ok(v @ Value::Object(_)) => v,
        _ => return block("the hook input is not a JSON object; the call is blocked"),
    };
    if str_field(&payload, "hook_event_name") == "PreToolUse" {
        match check(root, tree, &payload) {
            Ok(None) => {}
            Ok(Some(refusal)) => return block(&refusal),
            Err(e) => {
                return block(&format!(
                    "{e:#}; the call is blocked until the policy can check it"
                ));
            }
        }
    }
    hook(root, input)
}

/// The text a write leaves in `abs` (`None`: not known, e.g. a notebook edit).
fn after_text(tool: &str, input: &Value, before: Option<&str>) -> Option<String> {
    let edit = |text: &str, e: &Value| {
        let old = str_field(e, "old_string");
        let new = str_field(e, "new_string");
        let all = e.get("replace_all") == Some(&Value::Bool(true));
        if text.contains(old) || old.is_empty() {
            if all {
                text.replace(old, new)
            } else {
                text.replacen(old, new, 1)
            }
        } else {
            replace_across_quotes(text, old, new, all)
        }
    };
    match tool {
        "Write" => Some(str_field(input, "content").to_owned()),
        "Edit" => Some(edit(before.unwrap_or_default(), input)),
        "MultiEdit" => Some(
            input
                .get("edits")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .fold(before.unwrap_or_default().to_owned(), |t, e| edit(&t, e)),
        ),
        _ => None,
    }
}

/// A quote as Claude Code's Edit compares it: curly single and double quotes read as straight.
fn straight(c: char) -> char {
    match c {
        '\u{2018}' | '\u{2019}' | '\u{201a}' | '\u{201b}' => '\'',
        '\u{201c}' | '\u{201d}' | '\u{201e}' | '\u{201f}' => '"',
        c => c,
    }
}

/// Replaces `old` in `text` where it matches once curly quotes read as straight ones, as Claude
/// Code's Edit matches an `old_string` the file spells with other quotes; `text` unchanged when
/// it does not match that way either.
fn replace_across_quotes(text: &str, old: &str, new: &str, all: bool) -> String {
    let old: Vec<char> = old.chars().map(straight).collect();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut i = 0;
    while i + old.len() <= chars.len() {
        let hit = chars[i..i + old.len()]
            .iter()
            .zip(&old)
            .all(|((_, c), o)| straight(*c) == *o);
        if !hit {
            i += 1;
            continue;
        }
        let start = chars[i].0;
        let end = chars.get(i + old.len()).map_or(text.len(), |(b, _)| *b);
        out.push_str(&text[copied..start]);
        out.push_str(new);
        copied = end;
        i += old.len().max(1);
        if !all {
            break;
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// Shell builtins a command line may use besides the allowlisted programs.
const BUILTINS: [&str; 9] = [
    "cd", "pwd", "true", "false", "test", "[", "echo", "printf", "exit",
];

/// `Some(reason)` when a `Bash` command runs a program off the allowlist, hides one in a command
/// substitution, or redirects output onto a path the file tools would refuse.
fn check_bash(
    command: &str,
    allow: &[String],
    sandbox: &Sandbox,
    root: &Path,
    cwd: &Path,
) -> Option<String> {
    check_shell(command, allow, sandbox, root, cwd, 0)
}

/// Shells within shells (`sh -c '…'`) deeper than this are refused rather than read.
const MAX_NESTING: usize = 4;

/// [`check_bash`] of a line `depth` shells deep: a `sh -c SCRIPT` (bash, zsh, dash, ksh) is
/// unwrapped and its script checked like the line itself, as baton's own `run_command` does.
fn check_shell(
    command: &str,
    allow: &[String],
    sandbox: &Sandbox,
    root: &Path,
    cwd: &Path,
    depth: usize,
) -> Option<String> {
    if depth > MAX_NESTING {
        return Some(format!(
            "shells nested more than {MAX_NESTING} deep (`sh -c` within `sh -c`) are not allowed"
        ));
    }
    if command.contains("$(") || command.contains('`') {
        return Some("command substitution (`$(…)`, backticks) is not allowed: run each program as its own command".into());
    }
    let cmd = baton_agent::tdd::shell::Cmd::Shell(command.to_owned());
    for (dir, simple) in cmd.located(cwd) {
        let Some(program) = simple.program_words().first() else {
            continue;
        };
        // A `cd` earlier on the line moves where this command's relative paths lead.
        let here = dir.as_deref().unwrap_or(cwd);
        let name = program.rsplit('/').next().unwrap_or(program);
        if let baton_agent::tdd::shell::Cmd::Shell(script) =
            baton_agent::tdd::shell::Cmd::from_argv(simple.program_words().to_vec())
            && let Some(why) = check_shell(&script, allow, sandbox, root, here, depth + 1)
        {
            return Some(why);
        }
        if !BUILTINS.contains(&name) && !allow.iter().any(|a| a == name) {
            return Some(format!(
                "`{name}` is not on the command allowlist ({}); ask a human to add it to `[commands] allow`",
                allow.join(", ")
            ));
        }
        for target in simple.write_targets() {
            if dir.is_none() && !Path::new(&target).is_absolute() {
                return Some(format!(
                    "`{target}`: the `cd` before it leads where the command line does not say \
                     (`cd` alone, `~`, `-` or a variable); write with a path from the workspace"
                ));
            }
            if let Some(why) = check_path(&target, sandbox, root, here) {
                return Some(why);
            }
            if let Some(why) = check_shell_status(&simple, &target, sandbox, root, here) {
                return Some(why);
            }
        }
    }
    None
}

/// `path` (as given, relative to `cwd`) relative to the project: the file it names when it is
/// spelled through a symlink to the project, else as written; `None` outside the project.
fn project_rel(path: &str, sandbox: &Sandbox, root: &Path, cwd: &Path) -> Option<PathBuf> {
    let lexical = baton_agent::tdd::shell::lexical_join(cwd, path);
    let real = baton_agent::tdd::real_path(&lexical);
    let lexical_root = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    [real, lexical].iter().find_map(|p| {
        p.strip_prefix(sandbox.root())
            .or_else(|_| p.strip_prefix(&lexical_root))
            .ok()
            .map(Path::to_path_buf)
    })
}

/// `Some(reason)` when writing `path` (as given, relative to `cwd`) must be refused.
fn check_path(path: &str, sandbox: &Sandbox, root: &Path, cwd: &Path) -> Option<String> {
    let Some(rel) = project_rel(path, sandbox, root, cwd) else {
        return Some(format!(
            "`{path}` is outside the workspace `{}`",
            sandbox.root().display()
        ));
    };
    sandbox
        .resolve(&rel.to_string_lossy(), Access::Write)
        .err()
        .map(|refusal| refusal.to_string())
}

/// `Some(reason)` when a shell command's write of `target` may change a story's `Status:` line:
/// a `sed -i` of plain `s///` commands is run on the file's text and judged by the status rule
/// like an Edit; any other write into a file whose status the rule guards is refused, since what
/// it writes cannot be known beforehand.
fn check_shell_status(
    simple: &baton_agent::tdd::shell::Simple,
    target: &str,
    sandbox: &Sandbox,
    root: &Path,
    cwd: &Path,
) -> Option<String> {
    let rel = project_rel(target, sandbox, root, cwd)?;
    let resolved = sandbox
        .resolve(&rel.to_string_lossy(), Access::Write)
        .ok()?;
    let before = std::fs::read_to_string(&resolved).ok()?;
    let without_status: String = before
        .lines()
        .filter(|l| !l.trim_start().to_ascii_lowercase().starts_with("status:"))
        .map(|l| format!("{l}\n"))
        .collect();
    if sandbox
        .check_content(&resolved, Some(&before), &without_status)
        .is_ok()
    {
        return None;
    }
    match sed_in_place(simple, &before) {
        Some(after) => sandbox
            .check_content(&resolved, Some(&before), &after)
            .err()
            .map(|r| r.to_string()),
        None => Some(format!(
            "`{target}` holds a story's `Status:` line, and what this command would write there \
             cannot be checked against the status rule; change the story with Edit, and its status \
             through baton"
        )),
    }
}

/// The text `sed -i` leaves of `before` when every script is one `s/PATTERN/REPLACEMENT/[g]`
/// (basic or, with `-E`/`-r`, extended regular expressions); `None` for anything else.
fn sed_in_place(simple: &baton_agent::tdd::shell::Simple, before: &str) -> Option<String> {
    let words = simple.program_words();
    let prog = words.first()?.rsplit('/').next()?;
    if prog != "sed" && prog != "gsed" {
        return None;
    }
    let args = &words[1..];
    let short = |a: &String| a.starts_with('-') && !a.starts_with("--");
    let extended = args
        .iter()
        .any(|a| a == "--regexp-extended" || (short(a) && (a.contains('E') || a.contains('r'))));
    let mut scripts = Vec::new();
    let mut iter = args.iter();
    while let Some(a) = iter.next() {
        if a == "-e" || a == "--expression" {
            scripts.push(iter.next()?.clone());
        } else if a == "-f" || a.starts_with("--file") {
            return None;
        }
    }
    if scripts.is_empty() {
        scripts.push(args.iter().find(|a| !a.starts_with('-'))?.clone());
    }
    let mut text = before.to_owned();
    for script in scripts {
        let (re, rep, global) = sed_substitution(script.trim(), extended)?;
        text = text
            .split_inclusive('\n')
            .map(|line| {
                let (body, nl) = match line.strip_suffix('\n') {
                    Some(b) => (b, "\n"),
                    None => (line, ""),
                };
                let changed = if global {
                    re.replace_all(body, rep.as_str())
                } else {
                    re.replace(body, rep.as_str())
                };
                format!("{changed}{nl}")
            })
            .collect();
    }
    Some(text)
}

/// One `s` command: the regex, the replacement in the regex crate's syntax, and whether it is
/// global.
fn sed_substitution(script: &str, extended: bool) -> Option<(regex::Regex, String, bool)> {
    let rest = script.strip_prefix('s')?;
    let delim = rest.chars().next()?;
    if delim.is_alphanumeric() || delim == '\\' || delim == '\n' {
        return None;
    }
    let mut parts = vec![String::new()];
    let mut escaped = false;
    for c in rest[delim.len_utf8()..].chars() {
        let cur = parts.last_mut()?;
        if escaped {
            if c != delim {
                cur.push('\\');
            }
            cur.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == delim {
            parts.push(String::new());
        } else {
            cur.push(c);
        }
    }
    let [pattern, replacement, flags] = <[String; 3]>::try_from(parts).ok()?;
    if !flags.chars().all(|f| f == 'g' || f == 'I') {
        return None;
    }
    let mut re = String::new();
    if flags.contains('I') {
        re.push_str("(?i)");
    }
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, extended) {
            ('\\', false) => match chars.next() {
                Some(s @ ('(' | ')' | '{' | '}' | '+' | '?' | '|')) => re.push(s),
                Some(o) => {
                    re.push('\\');
                    re.push(o);
                }
                None => return None,
            },
            ('(' | ')' | '{' | '}' | '+' | '?' | '|', false) => {
                re.push('\\');
                re.push(c);
            }
            (c, _) => re.push(c),
        }
    }
    let mut rep = String::new();
    let mut chars = replacement.chars();
    while let Some(c) = chars.next() {
        match c {
            '&' => rep.push_str("${0}"),
            '$' => rep.push_str("$$"),
            '\\' => match chars.next() {
                Some(d) if d.is_ascii_digit() => rep.push_str(&format!("${{{d}}}")),
                Some('n') => rep.push('\n'),
                Some('$') => rep.push_str("$$"),
                Some(o) => rep.push(o),
                None => return None,
            },
            c => rep.push(c),
        }
    }
    Some((regex::Regex::new(&re).ok()?, rep, flags.contains('g')))
}

/// `Some(reason)` when the call must be refused.
fn check(project: &Path, tree: Option<&Path>, payload: &Value) -> Result<Option<String>> {
    let tool = str_field(payload, "tool_name");
    let root = tree.unwrap_or(project);
    if tool == "Bash" {
        let cfg = crate::config::Config::load_as(project, crate::trust::is_trusted(project))?;
        let sandbox = sandbox_for(project, tree, &cfg)?;
        let cwd = match str_field(payload, "cwd") {
            "" => root.to_path_buf(),
            c => PathBuf::from(c),
        };
        let command = payload
            .pointer("/tool_input/command")
            .and_then(Value::as_str)
            .unwrap_or_default();
        return Ok(check_bash(
            command,
            &cfg.commands.allow,
            &sandbox,
            root,
            &cwd,
        ));
    }
    if !matches!(tool, "Write" | "Edit" | "MultiEdit" | "NotebookEdit") {
        return Ok(None);
    }
    let input = payload.get("tool_input").cloned().unwrap_or(Value::Null);
    let path = match str_field(&input, "file_path") {
        "" => str_field(&input, "notebook_path"),
        p => p,
    };
    if path.is_empty() {
        return Ok(Some(format!("`{tool}` names no file")));
    }
    let cfg = crate::config::Config::load_as(project, crate::trust::is_trusted(project))?;
    let sandbox = sandbox_for(project, tree, &cfg)?;
    let cwd = match str_field(payload, "cwd") {
        "" => root.to_path_buf(),
        c => PathBuf::from(c),
    };
    if let Some(why) = check_path(path, &sandbox, root, &cwd) {
        return Ok(Some(why));
    }
    let rel = project_rel(path, &sandbox, root, &cwd)
        .map(|r| r.to_string_lossy().into_owned())
        .unwrap_or_default();
    let resolved = match sandbox.resolve(&rel, Access::Write) {
        Ok(p) => p,
        Err(refusal) => return Ok(Some(refusal.to_string())),
    };
    let before = std::fs::read_to_string(&resolved).ok();
    if let Some(after) = after_text(tool, &input, before.as_deref())
        && let Err(refusal) = sandbox.check_content(&resolved, before.as_deref(), &after)
    {
        return Ok(Some(refusal.to_string()));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn project() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("_bmad-output/implementation-artifacts")).unwrap();
        dir
    }

    fn pre(root: &Path, tool: &str, input: Value) -> HookAnswer {
        let payload = json!({
            "hook_event_name": "PreToolUse",
            "session_id": "s1",
            "cwd": root.display().to_string(),
            "tool_name": tool,
            "tool_input": input,
        });
        policy_hook(root, &payload.to_string())
    }

    #[test]
    fn protected_and_outside_paths_are_refused_and_the_rest_allowed() {
        let dir = project();
        let root = dir.path();
        let sprint = root.join("_bmad-output/implementation-artifacts/sprint-status.yaml");
        for (path, why) in [
            (sprint.display().to_string(), "sprint file"),
            ("baton.toml".to_owned(), "baton.toml"),
            (".baton/baton.db".to_owned(), ".baton"),
            (".git/config".to_owned(), ".git"),
            ("/etc/passwd".to_owned(), "outside the workspace"),
            ("../elsewhere.txt".to_owned(), ""),
        ] {
            let a = pre(root, "Write", json!({"file_path": path, "content": "x"}));
            assert_eq!(a.code, 2, "{path} was allowed");
            assert!(a.stderr.starts_with("baton policy:"), "{}", a.stderr);
            assert!(a.stderr.contains(why), "{path}: {}", a.stderr);
        }
        let a = pre(
            root,
            "Write",
            json!({"file_path": root.join("src/lib.rs").display().to_string(), "content": "x"}),
        );
        assert_eq!(a.code, 0, "{}", a.stderr);
        let a = pre(root, "Bash", json!({"command": "ls"}));
        assert_eq!(a.code, 0, "{}", a.stderr);
    }

    #[test]
    fn bash_runs_allowlisted_programs_and_writes_where_the_file_tools_may() {
        let dir = project();
        let root = dir.path();
        for (command, allowed) in [
            ("cargo test && git status", true),
            ("cd src; ls -la | cat > listing.txt", true),
            ("curl https://example.com", false),
            ("ls $(rm -rf .)", false),
            ("echo x > baton.toml", false),
            ("cat a > /etc/elsewhere", false),
            ("echo x > .git/hooks/pre-commit", false),
            ("FOO=1 /usr/bin/python3 -c 1", true),
            ("sudo rm -rf /", false),
        ] {
            let a = pre(root, "Bash", json!({ "command": command }));
            assert_eq!(a.code == 0, allowed, "{command}: {}", a.stderr);
        }
    }

    #[test]
    fn a_redirect_of_both_outputs_and_a_line_after_a_here_string_are_checked() {
        let dir = project();
        let root = dir.path();
        for (command, allowed) in [
            ("echo x >& baton.toml", false),
            ("echo x >&baton.toml", false),
            ("cargo test >& test.log", true),
            ("cargo test 2>&1 | cat", true),
            ("cat <<< hi\necho x > baton.toml", false),
        ] {
            let a = pre(root, "Bash", json!({ "command": command }));
            assert_eq!(a.code == 0, allowed, "{command}: {}", a.stderr);
        }
    }

    #[test]
    fn a_cd_on_the_line_moves_where_a_write_lands() {
        let dir = project();
        let root = dir.path();
        std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
        for (command, allowed) in [
            ("cd sub && echo x > ../baton.toml", false),
            ("cd sub/deeper; echo x > ../../baton.toml", false),
            ("cd /tmp && echo x > f", false),
            ("cd && echo x > f", false),
            ("cd sub && echo x > notes.txt", true),
            ("cd sub && cd .. && echo x > notes.txt", true),
        ] {
            let a = pre(root, "Bash", json!({ "command": command }));
            assert_eq!(a.code == 0, allowed, "{command}: {}", a.stderr);
        }
    }

    #[test]
    fn a_shell_given_a_script_has_its_script_checked() {
        let dir = project();
        let root = dir.path();
        let sandbox = Sandbox::new(root, &[]).unwrap();
        let allow: Vec<String> = ["sh", "bash", "cargo", "ls"].map(str::to_owned).to_vec();
        for (command, allowed) in [
            ("sh -c 'cargo test'", true),
            ("bash -c \"curl https://example.com\"", false),
            ("sh -c 'echo x > baton.toml'", false),
            ("bash -lc 'ls $(rm -rf .)'", false),
            ("sh -c \"sh -c 'curl x'\"", false),
            // Every way of quoting and starting the script.
            ("bash -c \"echo 'x = 1' > baton.toml\"", false),
            ("bash -c \"echo 'x = 1' > notes.txt\"", true),
            ("bash -lc \"echo 'x' > baton.toml\"", false),
            ("bash -l -c \"echo 'x' > baton.toml\"", false),
            ("env bash -c \"echo 'x' > baton.toml\"", false),
            ("sh -c \"echo \\\"x\\\" > baton.toml\"", false),
            ("sh -c \"echo \\\"x\\\" > notes.txt\"", true),
            ("bash -c \"sh -c \\\"echo 'x' > .git/config\\\"\"", false),
            ("bash --norc -c -- 'echo x > baton.toml'", false),
            ("bash -c \"cd sub && echo 'x' > ../baton.toml\"", false),
        ] {
            let refusal = check_bash(command, &allow, &sandbox, root, root);
            assert_eq!(refusal.is_none(), allowed, "{command}: {refusal:?}");
        }
    }

    #[test]
    fn an_edit_of_a_story_status_is_refused() {
        let dir = project();
        let story = dir
            .path()
            .join("_bmad-output/implementation-artifacts/1-1-login.md");
        std::fs::write(&story, "# Story 1.1\n\nStatus: ready-for-dev\n\nText.\n").unwrap();
        let a = pre(
            dir.path(),
            "Edit",
            json!({"file_path": story.display().to_string(), "old_string": "ready-for-dev", "new_string": "done"}),
        );
        assert_eq!(a.code, 2, "{}", a.stderr);
        let a = pre(
            dir.path(),
            "Edit",
            json!({"file_path": story.display().to_string(), "old_string": "Text.", "new_string": "More text."}),
        );
        assert_eq!(a.code, 0, "{}", a.stderr);
    }

    #[test]
    fn garbage_input_blocks() {
        let dir = project();
        assert_eq!(policy_hook(dir.path(), "not json").code, 2);
    }

    #[test]
    fn a_path_spelled_through_a_symlink_to_the_root_is_judged_as_the_root() {
        let dir = project();
        let root = dir.path();
        let outside = tempfile::tempdir().unwrap();
        let link = outside.path().join("alias");
        std::os::unix::fs::symlink(root, &link).unwrap();
        std::os::unix::fs::symlink(root, root.join("self")).unwrap();
        let sprint = "_bmad-output/implementation-artifacts/sprint-status.yaml";
        for path in [
            link.join("baton.toml").display().to_string(),
            link.join(sprint).display().to_string(),
            "self/baton.toml".to_owned(),
            format!("self/{sprint}"),
            "self/.baton/baton.db".to_owned(),
        ] {
            let a = pre(root, "Write", json!({"file_path": path, "content": "x"}));
            assert_eq!(a.code, 2, "{path} was allowed");
        }
        // The project reached through the link is still the project: ordinary files are fine.
        let a = pre(
            root,
            "Write",
            json!({"file_path": link.join("src/lib.rs").display().to_string(), "content": "x"}),
        );
        assert_eq!(a.code, 0, "{}", a.stderr);
        let payload = json!({
            "hook_event_name": "PreToolUse",
            "session_id": "s1",
            "cwd": link.display().to_string(),
            "tool_name": "Bash",
            "tool_input": {"command": "echo x > baton.toml"},
        });
        assert_eq!(policy_hook(root, &payload.to_string()).code, 2);
    }

    #[test]
    fn a_shell_line_that_changes_a_story_status_is_checked_against_the_status_rule() {
        let dir = project();
        let root = dir.path();
        let rel = "_bmad-output/implementation-artifacts/1-1-login.md";
        std::fs::write(
            root.join(rel),
            "# Story 1.1\n\nStatus: ready-for-dev\n\nText.\n",
        )
        .unwrap();
        let sandbox = Sandbox::new(root, &[]).unwrap();
        let allow: Vec<String> = ["sed", "printf", "echo"].map(str::to_owned).to_vec();
        for (command, allowed) in [
            (
                format!("sed -i 's/Status: ready-for-dev/Status: done/' {rel}"),
                false,
            ),
            (
                format!("sed -i -e 's/^Status: .*/Status: done/' {rel}"),
                false,
            ),
            (
                format!("printf '# Story 1.1\\n\\nStatus: done\\n' > {rel}"),
                false,
            ),
            (format!("echo 'Status: done' >> {rel}"), false),
            (format!("sed -i 's/Text./More text./' {rel}"), true),
        ] {
            let refusal = check_bash(&command, &allow, &sandbox, root, root);
            assert_eq!(refusal.is_none(), allowed, "{command}: {refusal:?}");
        }
    }

    #[test]
    fn an_edit_matched_across_curly_and_straight_quotes_is_checked() {
        let dir = project();
        let story = dir
            .path()
            .join("_bmad-output/implementation-artifacts/1-1-login.md");
        std::fs::write(
            &story,
            "# Story 1.1\n\nStatus: ready-for-dev \u{2019}tis\n\nText.\n",
        )
        .unwrap();
        // Claude Code matches `'tis` against `\u{2019}tis`; so does the hook.
        let a = pre(
            dir.path(),
            "Edit",
            json!({"file_path": story.display().to_string(), "old_string": "Status: ready-for-dev 'tis", "new_string": "Status: done 'tis"}),
        );
        assert_eq!(a.code, 2, "{}", a.stderr);
    }
}

#[cfg(test)]
mod tree_tests {
    use super::*;
    use serde_json::json;

    /// A project with a story worktree directory under `.baton/worktrees/`.
    fn project_with_tree() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("_bmad-output/implementation-artifacts")).unwrap();
        let tree = root.join(".baton/worktrees/1-1-a");
        std::fs::create_dir_all(tree.join("_bmad-output/implementation-artifacts")).unwrap();
        std::fs::create_dir_all(tree.join("src")).unwrap();
        (dir, tree)
    }

    fn pre_in(root: &Path, tree: &Path, tool: &str, input: Value) -> HookAnswer {
        let payload = json!({
            "hook_event_name": "PreToolUse",
            "session_id": "s1",
            "cwd": tree.display().to_string(),
            "tool_name": tool,
            "tool_input": input,
        });
        policy_hook_in(root, Some(tree), &payload.to_string())
    }

    #[test]
    fn in_a_worktree_the_protected_paths_hold_and_its_own_files_are_writable() {
        let (dir, tree) = project_with_tree();
        let root = dir.path();
        let sprint = "_bmad-output/implementation-artifacts/sprint-status.yaml";
        let write = |path: String| {
            pre_in(
                root,
                &tree,
                "Write",
                json!({ "file_path": path, "content": "x" }),
            )
        };
        // The worktree's own copies of the sprint file, baton.toml and .baton/, and the main
        // tree's (outside the worktree), by relative and absolute paths.
        for path in [
            sprint.to_owned(),
            "baton.toml".to_owned(),
            ".baton/baton.db".to_owned(),
            tree.join(sprint).display().to_string(),
            tree.join("baton.toml").display().to_string(),
            root.join(sprint).display().to_string(),
            root.join("baton.toml").display().to_string(),
            root.join(".baton/baton.db").display().to_string(),
            "../../../baton.toml".to_owned(),
        ] {
            let a = write(path.clone());
            assert_eq!(a.code, 2, "{path} was writable from the worktree");
        }
        assert_eq!(write("src/lib.rs".to_owned()).code, 0);
        assert_eq!(write(tree.join("src/lib.rs").display().to_string()).code, 0);
        // The shell: a redirect onto the main tree's files, relative or through `cd`.
        for line in [
            "echo x > ../../../baton.toml",
            "cd ../../.. && echo x > baton.toml",
            "echo x > baton.toml",
            "echo x >> .baton/baton.db",
        ] {
            let a = pre_in(root, &tree, "Bash", json!({ "command": line }));
            assert_eq!(a.code, 2, "`{line}` was allowed in the worktree");
        }
    }

    #[test]
    fn a_project_below_its_repository_s_root_works_in_its_directory_of_the_worktree() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path();
        std::fs::create_dir_all(top.join(".git")).unwrap();
        let root = top.join("apps/x");
        let tree = root.join(".baton/worktrees/1-1-a");
        std::fs::create_dir_all(tree.join("apps/x/src")).unwrap();
        std::fs::write(tree.join(".git"), "gitdir: elsewhere\n").unwrap();
        let write = |t: &Path| {
            pre_in(
                &root,
                t,
                "Write",
                json!({ "file_path": "src/x.rs", "content": "x" }),
            )
        };
        assert_eq!(write(&tree.join("apps/x")).code, 0);
        for t in [tree.clone(), tree.join("apps"), tree.join("apps/x/src")] {
            assert_eq!(
                write(&t).code,
                2,
                "{} was taken for a worktree",
                t.display()
            );
        }
    }

    #[test]
    fn a_tree_that_is_not_one_of_the_project_s_worktrees_blocks_every_call() {
        let (dir, _) = project_with_tree();
        let root = dir.path();
        let elsewhere = tempfile::tempdir().unwrap();
        for tree in [
            elsewhere.path().to_path_buf(),
            root.to_path_buf(),
            root.join(".baton"),
            root.join(".baton/worktrees"),
            root.join(".baton/worktrees/missing"),
            root.join(".baton/worktrees/1-1-a/src"),
        ] {
            let a = pre_in(
                root,
                &tree,
                "Write",
                json!({ "file_path": "src/x.rs", "content": "x" }),
            );
            assert_eq!(a.code, 2, "{} was taken for a worktree", tree.display());
            assert!(a.stderr.contains("not a worktree"), "{}", a.stderr);
        }
    }
}
