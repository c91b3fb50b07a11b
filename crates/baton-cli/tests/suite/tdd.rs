//! The test-first guard end to end: in the sprint loop (a scripted developer refused, then
//! working test first), as a Claude Code hook fed recorded payloads, its installation into
//! `.claude/settings.local.json`, and the trust rules that keep a cloned repository from
//! switching it off.

use super::common::{Project, Run};
use super::sprint::{
    K1, STORIES, Script, Toml, baton, call, command, pass_verdict, re, sprint_json, sprint_project,
};
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;
use std::process::Stdio;

/// Trusts `p` in its (test-private) user configuration directory.
fn trust(p: &Project) {
    let root = std::fs::canonicalize(p.root()).expect("canonical root");
    p.write(
        ".baton/no-user-config/trusted-projects",
        &format!("{}\n", root.display()),
    );
}

/// `baton tdd status --json`.
fn status(p: &Project) -> Value {
    let run = baton(p, &["tdd", "status", "--json", "--limit", "200"]).expect_code(0);
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}\n{}", run.describe()))
}

fn log_of(p: &Project, kind: &str) -> Vec<Value> {
    status(p)["log"]
        .as_array()
        .expect("log")
        .iter()
        .filter(|r| r["kind"] == kind)
        .cloned()
        .collect()
}

/// Every file under `dir`, read as text, joined.
fn all_text(dir: &Path) -> String {
    let mut out = String::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let path = e.path();
        if path.is_dir() {
            out.push_str(&all_text(&path));
        } else if let Ok(t) = std::fs::read_to_string(&path) {
            out.push_str(&t);
        }
    }
    out
}

#[test]
fn in_the_sprint_loop_a_developer_writing_code_first_is_refused_and_the_refusal_journaled() {
    let key = K1;
    let story_path = format!("{STORIES}/{key}.md");
    let code = format!("src/{key}.rs");
    let expected = format!("src/{key}_test.rs");
    let script = Script::new()
        .create(key)
        // Code first: refused.
        .turn(
            "developer",
            &re(&format!("Implement story `{key}` (mode: dev)")),
            "The change is small; straight to the code.",
            vec![call(
                "write_file",
                json!({ "path": code, "content": "pub fn alpha() {}\n" }),
            )],
        )
        // Told which test to write: test, failing run, code, passing marker.
        .turn(
            "developer",
            &re(&format!("refused: create a test file first, expected: {expected}")),
            "Test first, then.",
            vec![
                call(
                    "write_file",
                    json!({ "path": format!("tests/{key}.rs"), "content": "#[test]\nfn alpha() {}\n" }),
                ),
                call("run_command", json!({ "program": "cat", "args": ["tests-pass"] })),
                call(
                    "write_file",
                    json!({ "path": code, "content": "pub fn alpha() {}\n" }),
                ),
                call(
                    "edit_file",
                    json!({
                        "path": story_path,
                        "old_string": "### File List\n",
                        "new_string": format!("### File List\n\n- {code}\n- tests/{key}.rs\n"),
                    }),
                ),
                call("write_file", json!({ "path": "tests-pass", "content": "ok\n" })),
            ],
        )
        .turn(
            "developer",
            &re(&format!("to `{code}`")),
            &format!("Implemented `{key}` test first. All tests pass."),
            vec![],
        )
        .review(key, 1, &pass_verdict("meets its criteria, tested first"));
    let p = sprint_project(
        Toml {
            tail: "[tdd]\nmode = \"tdd\"\n",
            ..Toml::default()
        },
        &script,
    );
    trust(&p);
    let (_, report, run) = sprint_json(&p, &["--yolo", "--stories", key], 0);
    assert_eq!(report["end"], "completed", "{report:#}\n{}", run.describe());

    // The agent saw the refusal, with the expected test path, as its tool result.
    let transcripts = all_text(&p.root().join(".baton/runs"));
    assert!(
        transcripts.contains(&format!(
            "refused: create a test file first, expected: {expected}"
        )),
        "no refusal in the transcripts"
    );
    // The orchestrator journaled it, and the test run that let the code through.
    let denied = log_of(&p, "deny");
    assert_eq!(denied.len(), 1, "{denied:#?}");
    assert_eq!(denied[0]["path"], code.as_str());
    assert_eq!(denied[0]["tool"], "write_file");
    assert_eq!(denied[0]["scope"], "native");
    assert!(
        denied[0]["detail"]
            .as_str()
            .unwrap_or_default()
            .starts_with(&format!("create a test file first, expected: {expected}")),
        "{denied:#?}"
    );
    let runs = log_of(&p, "test-run");
    assert_eq!(runs.len(), 1, "{runs:#?}");
    assert_eq!(runs[0]["detail"], "cat tests-pass");
    assert_eq!(runs[0]["exit_code"], 1);
    assert_eq!(
        std::fs::read_to_string(p.root().join(&code)).unwrap_or_default(),
        "pub fn alpha() {}\n"
    );
}

#[test]
fn an_untrusted_repository_can_turn_the_guard_on_but_not_off() {
    let p = Project::empty();
    p.write(
        "baton.toml",
        "[sprint]\ntest_command = [\"echo\"]\n\n[tdd]\nmode = \"off\"\nexempt = [\"src/**\"]\n\
         test_commands = [[\"echo\"]]\n\n[tdd.overrides]\n\"src/*.rs\" = \"README.md\"\n\n\
         [rules]\nenabled = false\n",
    );
    baton(&p, &["tdd", "on"]).expect_code(0);
    let st = status(&p);
    assert_eq!(st["mode"], "tdd", "{st:#}");
    assert_eq!(st["trusted"], false);
    let commands = st["test_commands"].to_string();
    assert!(!commands.contains("\"echo\""), "{commands}");
    assert!(!st["exempt"].to_string().contains("src/**"), "{st:#}");
    // The same file in a trusted project: the user's own settings apply.
    trust(&p);
    let st = status(&p);
    assert_eq!(st["mode"], "tdd", "{st:#}");
    assert!(
        st["test_commands"].to_string().contains("\"echo\""),
        "{st:#}"
    );
    baton(&p, &["tdd", "off"]).expect_code(0);
    assert_eq!(status(&p)["mode"], "off");

    // Untrusted, a repository asking for the guard gets it.
    let q = Project::empty();
    q.write("baton.toml", "[tdd]\nmode = \"atdd\"\n");
    assert_eq!(status(&q)["mode"], "atdd");
    baton(&q, &["tdd", "off"]).expect_code(0);
    assert_eq!(
        status(&q)["mode"],
        "atdd",
        "a repository's mode still holds"
    );

    // Bad settings are named with their line.
    let r = Project::empty();
    r.write("baton.toml", "[tdd]\nmode = \"sometimes\"\n");
    let run = baton(&r, &["tdd", "status"]).expect_code(1);
    assert!(run.stderr.contains("baton.toml:2"), "{}", run.describe());
    assert!(
        run.stderr.contains("must be off, tdd or atdd"),
        "{}",
        run.describe()
    );
}

#[test]
fn an_allowance_is_granted_by_the_user_and_listed_until_used() {
    let p = Project::empty();
    baton(
        &p,
        &["tdd", "allow-bash-write", "once", "regenerate the bindings"],
    )
    .expect_code(0);
    let st = status(&p);
    assert_eq!(
        st["open_allowances"][0]["reason"],
        "regenerate the bindings"
    );
    let run = baton(&p, &["tdd", "allow-bash-write", "always", "x"]).expect_code(1);
    assert!(run.stderr.contains("once"), "{}", run.describe());
    baton(&p, &["tdd", "allow-bash-write", "once", "  "]).expect_code(1);
}

// ---------------------------------------------------------------------------------------------
// Claude Code hook mode.

/// `baton guard` with `payload` on stdin.
fn guard(p: &Project, payload: &Value) -> Run {
    let mut cmd = command(p, &["guard"]);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("baton starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(payload.to_string().as_bytes())
        .expect("payload written");
    let out = child.wait_with_output().expect("baton ends");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        args: format!("guard < {payload}"),
    }
}

/// A hook payload as Claude Code sends it (shape of its `hooks.md`).
fn payload(p: &Project, session: &str, event: &str, tool: &str, input: Value) -> Value {
    json!({
        "session_id": session,
        "transcript_path": format!("/tmp/{session}.jsonl"),
        "cwd": p.root().display().to_string(),
        "permission_mode": "default",
        "hook_event_name": event,
        "tool_name": tool,
        "tool_input": input,
        "tool_use_id": "toolu_01",
    })
}

fn abs(p: &Project, rel: &str) -> String {
    p.root().join(rel).display().to_string()
}

#[test]
fn the_hook_answers_recorded_payloads_with_the_right_decisions_and_exit_codes() {
    let p = Project::empty();
    let s = "3f1c0b2e-5d7a-4c11-9a61-0d2f4b6a8c90";
    let write = |rel: &str| {
        payload(
            &p,
            s,
            "PreToolUse",
            "Write",
            json!({ "file_path": abs(&p, rel), "content": "x = 1\n" }),
        )
    };
    // Off: silent allow.
    let r = guard(&p, &write("app.py")).expect_code(0);
    assert_eq!(r.stdout, "");
    baton(&p, &["tdd", "on"]).expect_code(0);

    // Write, Edit and MultiEdit of code without a test: blocked with exit 2, reason on stderr.
    let r = guard(&p, &write("app.py")).expect_code(2);
    assert!(
        r.stderr
            .contains("create a test file first, expected: test_app.py"),
        "{}",
        r.describe()
    );
    let edit = payload(
        &p,
        s,
        "PreToolUse",
        "Edit",
        json!({ "file_path": abs(&p, "app.py"), "old_string": "1", "new_string": "2" }),
    );
    guard(&p, &edit).expect_code(2);
    let multi = payload(
        &p,
        s,
        "PreToolUse",
        "MultiEdit",
        json!({ "file_path": abs(&p, "app.py"), "edits": [{ "old_string": "1", "new_string": "2" }] }),
    );
    guard(&p, &multi).expect_code(2);

    // The test file: allowed without a decision (Claude Code's own permissions still apply).
    let r = guard(&p, &write("test_app.py")).expect_code(0);
    assert_eq!(
        r.stdout, "",
        "an allow must not bypass the permission prompt"
    );
    p.write("test_app.py", "def test_x(): assert False\n");
    let post_write = payload(
        &p,
        s,
        "PostToolUse",
        "Write",
        json!({ "file_path": abs(&p, "test_app.py"), "content": "def test_x(): assert False\n" }),
    );
    guard(&p, &post_write).expect_code(0);

    // Never run: blocked.
    let r = guard(&p, &write("app.py")).expect_code(2);
    assert!(
        r.stderr.contains("run your tests first"),
        "{}",
        r.describe()
    );

    // A failing run arrives as PostToolUseFailure, with the exit code on the error's first line.
    let mut failed = payload(
        &p,
        s,
        "PostToolUseFailure",
        "Bash",
        json!({ "command": "pytest -q", "description": "Run the tests" }),
    );
    failed["error"] = json!("Exit code 1\nF\n1 failed in 0.01s");
    guard(&p, &failed).expect_code(0);
    guard(&p, &write("app.py")).expect_code(0);

    // Bash writing code: blocked; tampering with the guard: blocked.
    for command in [
        "echo 'x = 2' > app.py",
        "sed -i 's/1/2/' app.py",
        "baton tdd off",
        "echo '{}' > .claude/settings.local.json",
    ] {
        let bash = payload(&p, s, "PreToolUse", "Bash", json!({ "command": command }));
        let r = guard(&p, &bash).expect_code(2);
        assert!(
            r.stderr.starts_with("baton test-first guard:"),
            "{}",
            r.describe()
        );
    }
    let ok = payload(
        &p,
        s,
        "PreToolUse",
        "Bash",
        json!({ "command": "pytest -q" }),
    );
    assert_eq!(guard(&p, &ok).expect_code(0).stdout, "");

    // Another session has its own state; its passing run arrives as PostToolUse.
    let other = "9b2d7c4a-0000-4000-8000-000000000001";
    let w2 = payload(
        &p,
        other,
        "PreToolUse",
        "Write",
        json!({ "file_path": abs(&p, "app.py"), "content": "x\n" }),
    );
    guard(&p, &w2).expect_code(2);
    let mut passed = payload(
        &p,
        other,
        "PostToolUse",
        "Bash",
        json!({ "command": "cd . && pytest" }),
    );
    passed["tool_response"] = json!({ "stdout": "1 passed", "stderr": "", "interrupted": false });
    guard(&p, &passed).expect_code(0);
    guard(&p, &w2).expect_code(0);

    // An unmapped file: allowed, with the warning as context for the agent.
    let r = guard(&p, &write("Makefile")).expect_code(0);
    let v: Value =
        serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.describe()));
    assert!(
        v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap_or_default()
            .contains("no test mapping"),
        "{v:#}"
    );
    assert!(v["hookSpecificOutput"].get("permissionDecision").is_none());

    // Garbage in: blocked, not waved through.
    let mut cmd = command(&p, &["guard"]);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("baton starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"not json")
        .expect("written");
    let out = child.wait_with_output().expect("ends");
    assert_eq!(out.status.code(), Some(2));

    // The runs are journaled per session with their status.
    let runs = log_of(&p, "test-run");
    let seen: Vec<(String, i64)> = runs
        .iter()
        .map(|r| {
            (
                r["scope"].as_str().unwrap_or_default().to_owned(),
                r["exit_code"].as_i64().unwrap_or(-1),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [(format!("claude:{s}"), 1), (format!("claude:{other}"), 0)]
    );
}

#[test]
fn install_merges_and_uninstall_restores_the_file_byte_for_byte() {
    let p = Project::empty();
    let original = "{\n\t\"permissions\": {\"allow\": [\"Bash(cargo test *)\"]},\n\t\"hooks\": {\"PreToolUse\": [{\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"./my-hook.sh\"}]}]},\n\t\"model\": \"opus\"\n}\n";
    p.write(".claude/settings.local.json", original);
    let path = p.root().join(".claude/settings.local.json");
    baton(&p, &["guard", "install"]).expect_code(0);
    let installed: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("settings")).expect("JSON");
    assert_eq!(installed["model"], "opus");
    assert_eq!(installed["permissions"]["allow"][0], "Bash(cargo test *)");
    let pre = installed["hooks"]["PreToolUse"].as_array().expect("array");
    assert_eq!(pre.len(), 2, "{installed:#}");
    assert_eq!(pre[0]["hooks"][0]["command"], "./my-hook.sh");
    assert!(
        pre[1]["hooks"][0]["command"]
            .as_str()
            .unwrap_or_default()
            .ends_with("guard")
    );
    assert!(installed["hooks"]["PostToolUseFailure"].is_array());
    // Twice is once.
    let before = std::fs::read(&path).expect("read");
    baton(&p, &["guard", "install"]).expect_code(0);
    assert_eq!(std::fs::read(&path).expect("read"), before);
    baton(&p, &["guard", "uninstall"]).expect_code(0);
    assert_eq!(std::fs::read_to_string(&path).expect("read"), original);

    // Edited in between: only baton's entries go, the user's edit stays.
    baton(&p, &["guard", "install"]).expect_code(0);
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("JSON");
    v["theme"] = json!("dark");
    std::fs::write(&path, serde_json::to_string_pretty(&v).expect("JSON")).expect("write");
    baton(&p, &["guard", "uninstall"]).expect_code(0);
    let after: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("JSON");
    assert_eq!(after["theme"], "dark");
    assert_eq!(
        after["hooks"]["PreToolUse"].as_array().map(Vec::len),
        Some(1)
    );
    assert!(
        after["hooks"].get("PostToolUseFailure").is_none(),
        "{after:#}"
    );

    // No file before: none after.
    let q = Project::empty();
    baton(&q, &["guard", "install"]).expect_code(0);
    assert!(q.root().join(".claude/settings.local.json").is_file());
    baton(&q, &["guard", "uninstall"]).expect_code(0);
    assert!(!q.root().join(".claude/settings.local.json").exists());

    // A settings file that is not JSON is named, and left alone.
    let r = Project::empty();
    r.write(".claude/settings.local.json", "{ nope");
    let run = baton(&r, &["guard", "install"]).expect_code(1);
    assert!(
        run.stderr.contains("settings.local.json"),
        "{}",
        run.describe()
    );
    assert_eq!(
        std::fs::read_to_string(r.root().join(".claude/settings.local.json")).expect("read"),
        "{ nope"
    );
}

#[test]
fn project_rules_apply_only_in_a_trusted_project() {
    let p = Project::empty();
    p.write(
        ".baton/rules/house.md",
        "---\nname: house\ntrigger: (?i)quick hack\nfrequency: once\n---\nNo quick hacks here.\n",
    );
    let names = |p: &Project| status(p)["rules"].to_string();
    assert!(names(&p).contains("test-first"), "bundled rules load");
    assert!(
        !names(&p).contains("house"),
        "an untrusted project's rules are ignored"
    );
    trust(&p);
    assert!(names(&p).contains("house (/"), "{}", names(&p));
    // A broken rule is named.
    p.write(
        ".baton/rules/broken.md",
        "---\nname: b\ntrigger: '('\n---\nx\n",
    );
    let run = baton(&p, &["tdd", "status"]).expect_code(1);
    assert!(
        run.stderr.contains("broken.md") && run.stderr.contains("trigger"),
        "{}",
        run.describe()
    );
}

#[test]
fn a_shell_script_writing_code_is_blocked_however_it_is_quoted_or_started() {
    let p = Project::empty();
    let s = "9a1c0b2e-5d7a-4c11-9a61-0d2f4b6a8c91";
    baton(&p, &["tdd", "on"]).expect_code(0);
    for (command, blocked) in [
        (r#"bash -c "echo 'x = 1' > src/shop/cart.py""#, true),
        ("sh -c 'echo x = 1 > src/shop/cart.py'", true),
        (r#"sh -c "echo \"x = 1\" > src/shop/cart.py""#, true),
        (r#"bash -lc "echo 'x = 1' > src/shop/cart.py""#, true),
        (r#"env bash -c "echo 'x = 1' > src/shop/cart.py""#, true),
        (
            r#"/usr/bin/env -i bash -c "echo 'x' > src/shop/cart.py""#,
            true,
        ),
        (r#"bash -c "sh -c \"echo 'x' > src/shop/cart.py\"""#, true),
        (r#"cd src && bash -c "cd shop; printf 'x' > cart.py""#, true),
        (r#"bash -c "pytest -q""#, false),
        (r#"bash -c "echo 'x = 1' > tests/test_cart.py""#, false),
    ] {
        let bash = payload(&p, s, "PreToolUse", "Bash", json!({ "command": command }));
        let r = guard(&p, &bash);
        assert_eq!(r.code == Some(2), blocked, "{command}: {}", r.describe());
        if blocked {
            assert!(
                r.stderr.starts_with("baton test-first guard:")
                    && r.stderr.contains("src/shop/cart.py"),
                "{command}: {}",
                r.describe()
            );
        }
    }
}
