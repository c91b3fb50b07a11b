//! The standard tools on real files, real processes and real git repositories: file reading,
//! writing and editing, listing and grep, `run_command`'s allowlist, literal arguments, timeout,
//! cancellation and truncation, and `run_git_diff` / `changed_files` in a temporary repository.

// Helpers outside `#[test]` functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use baton_agent::sandbox::Sandbox;
use baton_agent::tools::git::{changed_files, head};
use baton_agent::tools::{CommandPolicy, ToolContext, ToolResult, Toolbox};
use serde_json::{Value, json};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A tool context on `root` with the default deny patterns and command policy.
pub fn context(root: &Path) -> ToolContext {
    context_with(root, CommandPolicy::default())
}

/// A tool context on `root` with `policy`.
pub fn context_with(root: &Path, policy: CommandPolicy) -> ToolContext {
    ToolContext {
        root: root.to_path_buf(),
        sandbox: Arc::new(Sandbox::new(root, &Sandbox::default_deny()).unwrap()),
        commands: policy,
        cancel: CancellationToken::new(),
        agent: "test".to_owned(),
    }
}

async fn call(ctx: &ToolContext, tool: &str, args: Value) -> ToolResult {
    let tools = Toolbox::standard();
    let tool = tools.get(tool).unwrap_or_else(|| panic!("no tool {tool}"));
    tool.call(&args, ctx).await
}

fn project() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap();
    (tmp, root)
}

fn put(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

#[test]
fn standard_tools_have_object_schemas() {
    let tools = Toolbox::standard();
    for name in [
        "read_file",
        "write_file",
        "edit_file",
        "list_files",
        "grep",
        "run_command",
        "run_git_diff",
    ] {
        let spec = tools.get(name).unwrap().spec();
        assert_eq!(spec.name, name);
        assert_eq!(spec.parameters["type"], "object", "{name}");
        assert!(spec.parameters["required"].is_array(), "{name}");
        for (arg, schema) in spec.parameters["properties"].as_object().unwrap() {
            assert!(schema["description"].is_string(), "{name}.{arg}");
        }
    }
    let writes: Vec<_> = ["write_file", "edit_file", "run_command"]
        .into_iter()
        .filter(|n| tools.get(n).unwrap().writes())
        .collect();
    assert_eq!(writes.len(), 3);
    for name in ["read_file", "list_files", "grep", "run_git_diff"] {
        assert!(!tools.get(name).unwrap().writes(), "{name}");
    }
    assert_eq!(tools.get("read_file").unwrap().path_args(), &["path"]);
    assert_eq!(tools.get("write_file").unwrap().path_args(), &["path"]);
    assert_eq!(tools.get("edit_file").unwrap().path_args(), &["path"]);
    assert_eq!(tools.get("run_git_diff").unwrap().path_args(), &["paths"]);
    // `cwd` is a directory: checked by the tool itself (the guard checks path arguments of
    // writing tools for write access, which a directory never gets).
    assert!(tools.get("run_command").unwrap().path_args().is_empty());
}

#[tokio::test]
async fn write_read_and_edit_files() {
    let (_tmp, root) = project();
    let ctx = context(&root);

    let r = call(
        &ctx,
        "write_file",
        json!({"path": "src/deep/lib.rs", "content": "a\nb\na\n"}),
    )
    .await;
    assert!(!r.is_error, "{}", r.content);
    assert!(r.content.contains("new file"), "{}", r.content);
    assert_eq!(
        fs::read_to_string(root.join("src/deep/lib.rs")).unwrap(),
        "a\nb\na\n"
    );

    let r = call(&ctx, "read_file", json!({"path": "src/deep/lib.rs"})).await;
    assert_eq!(r, ToolResult::ok("a\nb\na\n"));

    // Not unique: says how many.
    let r = call(
        &ctx,
        "edit_file",
        json!({"path": "src/deep/lib.rs", "old_string": "a", "new_string": "z"}),
    )
    .await;
    assert!(r.is_error);
    assert!(r.content.contains("2 matches"), "{}", r.content);
    // Absent.
    let r = call(
        &ctx,
        "edit_file",
        json!({"path": "src/deep/lib.rs", "old_string": "q", "new_string": "z"}),
    )
    .await;
    assert!(r.is_error);
    assert!(
        r.content.contains("not found") && r.content.contains("0 matches"),
        "{}",
        r.content
    );
    assert_eq!(
        fs::read_to_string(root.join("src/deep/lib.rs")).unwrap(),
        "a\nb\na\n"
    );
    // Unique.
    let r = call(
        &ctx,
        "edit_file",
        json!({"path": "src/deep/lib.rs", "old_string": "b\na", "new_string": "B\nA"}),
    )
    .await;
    assert!(!r.is_error, "{}", r.content);
    assert_eq!(
        fs::read_to_string(root.join("src/deep/lib.rs")).unwrap(),
        "a\nB\nA\n"
    );
    // Missing file.
    let r = call(
        &ctx,
        "edit_file",
        json!({"path": "nope.rs", "old_string": "x", "new_string": "y"}),
    )
    .await;
    assert!(
        r.is_error && r.content.contains("does not exist"),
        "{}",
        r.content
    );

    let r = call(
        &ctx,
        "write_file",
        json!({"path": "src/deep/lib.rs", "content": ""}),
    )
    .await;
    assert!(r.content.contains("replaced"), "{}", r.content);
    let r = call(&ctx, "read_file", json!({"path": "src/deep/lib.rs"})).await;
    assert!(!r.is_error && r.content.contains("empty"), "{}", r.content);

    // Bad arguments are tool errors.
    let r = call(&ctx, "write_file", json!({"path": "x.txt"})).await;
    assert!(r.is_error && r.content.contains("content"), "{}", r.content);
    let r = call(&ctx, "read_file", json!({"path": "src"})).await;
    assert!(
        r.is_error && r.content.contains("directory"),
        "{}",
        r.content
    );
}

#[tokio::test]
async fn read_file_pages_and_truncates() {
    let (_tmp, root) = project();
    let ctx = context(&root);
    let big: String = (1..=20_000)
        .map(|i| format!("line {i:05} of the big file\n"))
        .collect();
    put(&root, "big.txt", &big);

    let r = call(&ctx, "read_file", json!({"path": "big.txt"})).await;
    assert!(!r.is_error);
    assert!(r.content.len() < 101_000, "{}", r.content.len());
    assert!(r.content.starts_with("line 00001"));
    assert!(
        r.content.contains("[… truncated: showing lines 1–"),
        "marker"
    );
    let marker = r.content.lines().last().unwrap();
    let next: usize = marker
        .split("offset_line=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let r = call(
        &ctx,
        "read_file",
        json!({"path": "big.txt", "offset_line": next, "max_lines": 2}),
    )
    .await;
    assert!(
        r.content.starts_with(&format!("line {next:05}")),
        "{}",
        r.content
    );
    assert!(
        r.content
            .contains(&format!("showing lines {next}–{} of 20000", next + 1))
    );

    let r = call(
        &ctx,
        "read_file",
        json!({"path": "big.txt", "offset_line": 20_001}),
    )
    .await;
    assert!(
        r.is_error && r.content.contains("past the end"),
        "{}",
        r.content
    );

    // One huge line.
    put(&root, "wide.txt", &"é".repeat(80_000));
    let r = call(&ctx, "read_file", json!({"path": "wide.txt"})).await;
    assert!(r.content.contains("only its first"), "marker");

    fs::write(root.join("blob.bin"), [0u8, 1, 2, 3, 0, 255]).unwrap();
    let r = call(&ctx, "read_file", json!({"path": "blob.bin"})).await;
    assert!(r.is_error && r.content.contains("binary"), "{}", r.content);
}

#[tokio::test]
async fn file_tools_refuse_secrets_and_git() {
    let (_tmp, root) = project();
    let ctx = context(&root);
    put(&root, ".env", "TOKEN=hunter2\n");
    put(&root, ".git/config", "[core]\n");
    for (tool, args) in [
        ("read_file", json!({"path": ".env"})),
        ("read_file", json!({"path": ".git/config"})),
        (
            "edit_file",
            json!({"path": ".git/config", "old_string": "core", "new_string": "x"}),
        ),
        (
            "write_file",
            json!({"path": "../escape.txt", "content": "x"}),
        ),
    ] {
        let r = call(&ctx, tool, args).await;
        assert!(
            r.is_error && r.content.contains("refused"),
            "{tool}: {}",
            r.content
        );
        assert!(!r.content.contains("hunter2"));
    }
    assert_eq!(
        fs::read_to_string(root.join(".git/config")).unwrap(),
        "[core]\n"
    );
}

#[tokio::test]
async fn list_files_globs_and_skips() {
    let (_tmp, root) = project();
    let ctx = context(&root);
    for f in [
        "Cargo.toml",
        "src/main.rs",
        "src/lib.rs",
        "src/a/deep.rs",
        "target/debug/build.rs",
        "node_modules/x/index.js",
        ".git/HEAD",
        ".GIT/x.rs",
        ".baton/state.rs",
        "sub/target/gen.rs",
        ".env",
        "keys/server.pem",
        "README.md",
    ] {
        put(&root, f, "x\n");
    }
    let r = call(&ctx, "list_files", json!({})).await;
    assert_eq!(
        r.content, "Cargo.toml\nREADME.md\nsrc/a/deep.rs\nsrc/lib.rs\nsrc/main.rs",
        "{}",
        r.content
    );
    let r = call(&ctx, "list_files", json!({"pattern": "*.rs"})).await;
    assert_eq!(r.content, "src/a/deep.rs\nsrc/lib.rs\nsrc/main.rs");
    let r = call(&ctx, "list_files", json!({"pattern": "src/*.rs"})).await;
    assert_eq!(r.content, "src/lib.rs\nsrc/main.rs");
    let r = call(
        &ctx,
        "list_files",
        json!({"pattern": "src/**/*.rs", "max": 2}),
    )
    .await;
    assert!(
        r.content
            .starts_with("src/a/deep.rs\nsrc/lib.rs\n[… 1 more files not shown"),
        "{}",
        r.content
    );
    let r = call(&ctx, "list_files", json!({"pattern": "*.py"})).await;
    assert!(
        !r.is_error && r.content.contains("no files match"),
        "{}",
        r.content
    );
    let r = call(&ctx, "list_files", json!({"pattern": "src/[.rs"})).await;
    assert!(
        r.is_error && r.content.contains("invalid glob"),
        "{}",
        r.content
    );
}

#[tokio::test]
async fn grep_reports_path_line_text() {
    let (_tmp, root) = project();
    let ctx = context(&root);
    put(
        &root,
        "src/a.rs",
        "fn alpha() {}\nlet x = 1;\nfn beta() {}\n",
    );
    put(&root, "src/b.py", "def gamma():\n    pass\n");
    put(&root, "target/gen.rs", "fn hidden() {}\n");
    put(&root, ".env", "fn secret() {}\n");
    fs::write(root.join("src/blob.bin"), b"fn binary\0\0").unwrap();

    let r = call(&ctx, "grep", json!({"pattern": r"fn \w+"})).await;
    assert_eq!(
        r.content,
        "src/a.rs:1: fn alpha() {}\nsrc/a.rs:3: fn beta() {}"
    );
    let r = call(&ctx, "grep", json!({"pattern": "a", "path_glob": "*.py"})).await;
    assert_eq!(r.content, "src/b.py:1: def gamma():\nsrc/b.py:2:     pass");
    let r = call(&ctx, "grep", json!({"pattern": r"fn", "max_matches": 1})).await;
    assert!(
        r.content
            .starts_with("src/a.rs:1: fn alpha() {}\n[… stopped after 1 matches"),
        "{}",
        r.content
    );
    let r = call(&ctx, "grep", json!({"pattern": "zzz"})).await;
    assert!(
        !r.is_error && r.content.contains("no matches"),
        "{}",
        r.content
    );
    let r = call(&ctx, "grep", json!({"pattern": "(unclosed"})).await;
    assert!(
        r.is_error && r.content.contains("invalid regex"),
        "{}",
        r.content
    );
}

#[tokio::test]
async fn run_command_refuses_programs_not_allowed() {
    let (_tmp, root) = project();
    let ctx = context(&root);
    put(&root, "canary.txt", "alive");
    for program in [
        "rm",
        "sh",
        "bash",
        "/bin/sh",
        "/bin/echo",
        "../echo",
        "echo hi",
        "",
        "env",
    ] {
        let r = call(
            &ctx,
            "run_command",
            json!({"program": program, "args": ["-rf", "canary.txt"]}),
        )
        .await;
        assert!(r.is_error, "{program} ran: {}", r.content);
        assert!(
            r.content.contains("allowed programs: cargo") || r.content.contains("`..`"),
            "{program}: {}",
            r.content
        );
    }
    assert_eq!(
        fs::read_to_string(root.join("canary.txt")).unwrap(),
        "alive"
    );
}

#[tokio::test]
async fn run_command_passes_shell_metacharacters_literally() {
    let (_tmp, root) = project();
    let ctx = context(&root);
    put(&root, "canary.txt", "alive");
    let canary = root.join("canary.txt").display().to_string();
    let args = [
        format!("a; rm -rf {canary}"),
        "$(whoami)".to_owned(),
        "`id`".to_owned(),
        "|".to_owned(),
        "&&".to_owned(),
        "> out.txt".to_owned(),
        "*".to_owned(),
        "$HOME".to_owned(),
    ];
    let r = call(
        &ctx,
        "run_command",
        json!({"program": "echo", "args": args}),
    )
    .await;
    assert!(!r.is_error, "{}", r.content);
    assert!(
        r.content.starts_with("exit code: 0\n--- stdout ---\n"),
        "{}",
        r.content
    );
    assert!(r.content.contains(&args.join(" ")), "{}", r.content);
    assert_eq!(
        fs::read_to_string(root.join("canary.txt")).unwrap(),
        "alive"
    );
    assert!(!root.join("out.txt").exists());
}

#[tokio::test]
async fn run_command_nonzero_exit_is_output_not_error() {
    let (_tmp, root) = project();
    let ctx = context(&root);
    let r = call(
        &ctx,
        "run_command",
        json!({"program": "cat", "args": ["missing.txt"]}),
    )
    .await;
    assert!(!r.is_error, "{}", r.content);
    assert!(r.content.starts_with("exit code: 1\n"), "{}", r.content);
    assert!(r.content.contains("--- stderr ---\n") && r.content.contains("missing.txt"));
}

#[tokio::test]
async fn run_command_spawn_failure_is_an_error() {
    let (_tmp, root) = project();
    let policy = CommandPolicy {
        allow: vec!["baton-no-such-program-xyz".to_owned()],
        ..CommandPolicy::default()
    };
    let ctx = context_with(&root, policy);
    let r = call(
        &ctx,
        "run_command",
        json!({"program": "baton-no-such-program-xyz", "args": []}),
    )
    .await;
    assert!(
        r.is_error && r.content.contains("not found"),
        "{}",
        r.content
    );
}

#[tokio::test]
async fn run_command_cwd_stays_inside() {
    let (_tmp, root) = project();
    let ctx = context(&root);
    put(&root, "src/main.rs", "");
    put(&root, ".git/HEAD", "");
    let r = call(
        &ctx,
        "run_command",
        json!({"program": "ls", "args": [], "cwd": "src"}),
    )
    .await;
    assert!(
        !r.is_error && r.content.contains("main.rs"),
        "{}",
        r.content
    );
    for cwd in ["..", "/", ".git", "src/main.rs", "nope"] {
        let r = call(
            &ctx,
            "run_command",
            json!({"program": "ls", "args": [], "cwd": cwd}),
        )
        .await;
        assert!(r.is_error, "{cwd}: {}", r.content);
    }
}

#[tokio::test]
async fn run_command_project_script_by_path() {
    let (_tmp, root) = project();
    let policy = CommandPolicy {
        allow: vec!["check.sh".to_owned()],
        ..CommandPolicy::default()
    };
    let ctx = context_with(&root, policy);
    executable(
        &root,
        "scripts/check.sh",
        "#!/bin/sh\necho checked \"$@\"\n",
    );
    let r = call(
        &ctx,
        "run_command",
        json!({"program": "./scripts/check.sh", "args": ["x y"], "cwd": "scripts"}),
    )
    .await;
    assert!(
        !r.is_error && r.content.contains("checked x y"),
        "{}",
        r.content
    );
    // A link inside the project to a program outside is refused.
    std::os::unix::fs::symlink("/bin/sh", root.join("scripts/sneaky.sh")).unwrap();
    let policy = CommandPolicy {
        allow: vec!["sneaky.sh".to_owned()],
        ..CommandPolicy::default()
    };
    let ctx = context_with(&root, policy);
    let r = call(
        &ctx,
        "run_command",
        json!({"program": "scripts/sneaky.sh", "args": ["-c", "echo hi"]}),
    )
    .await;
    assert!(
        r.is_error && r.content.contains("symlink points outside"),
        "{}",
        r.content
    );
}

#[tokio::test]
async fn run_command_timeout_kills_the_program() {
    let (_tmp, root) = project();
    let policy = CommandPolicy {
        allow: vec!["sleep".to_owned()],
        ..CommandPolicy::default()
    };
    let ctx = context_with(&root, policy);
    let r = call(
        &ctx,
        "run_command",
        json!({"program": "sleep", "args": ["600"], "timeout_secs": 1}),
    )
    .await;
    assert!(r.is_error, "{}", r.content);
    assert!(
        r.content.starts_with("timed out after 1 s"),
        "{}",
        r.content
    );
    assert!(r.content.contains("--- stdout ---"));

    // The project's limit wins over a larger request.
    let policy = CommandPolicy {
        allow: vec!["sleep".to_owned()],
        timeout: Duration::from_secs(1),
        ..CommandPolicy::default()
    };
    let ctx = context_with(&root, policy);
    let r = call(
        &ctx,
        "run_command",
        json!({"program": "sleep", "args": ["600"], "timeout_secs": 900}),
    )
    .await;
    assert!(
        r.content.starts_with("timed out after 1 s"),
        "{}",
        r.content
    );

    let r = call(
        &ctx,
        "run_command",
        json!({"program": "sleep", "args": ["1"], "timeout_secs": -3}),
    )
    .await;
    assert!(
        r.is_error && r.content.contains("positive"),
        "{}",
        r.content
    );
}

#[tokio::test]
async fn run_command_cancellation_kills_the_program() {
    let (_tmp, root) = project();
    let policy = CommandPolicy {
        allow: vec!["sleep".to_owned()],
        ..CommandPolicy::default()
    };
    let ctx = context_with(&root, policy);
    let cancel = ctx.cancel.clone();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let r = call(
        &ctx,
        "run_command",
        json!({"program": "sleep", "args": ["600"]}),
    )
    .await;
    canceller.await.unwrap();
    assert!(
        r.is_error && r.content.starts_with("cancelled"),
        "{}",
        r.content
    );
}

#[tokio::test]
async fn run_command_truncates_output_keeping_head_and_tail() {
    let (_tmp, root) = project();
    let policy = CommandPolicy {
        max_output_bytes: 1000,
        ..CommandPolicy::default()
    };
    let ctx = context_with(&root, policy);
    let big: String = (0..10_000).map(|i| format!("{i:06}\n")).collect();
    put(&root, "big.txt", &big);
    let r = call(
        &ctx,
        "run_command",
        json!({"program": "cat", "args": ["big.txt"]}),
    )
    .await;
    assert!(!r.is_error, "{}", r.content);
    assert!(
        r.content
            .contains("[… output truncated: 69000 bytes omitted …]"),
        "{}",
        r.content
    );
    assert!(r.content.contains("000000\n000001\n"), "head kept");
    assert!(r.content.contains("009999\n"), "tail kept");
    assert!(r.content.len() < 1200, "{}", r.content.len());
}

// ---- git ----

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=Baton Test",
            "-c",
            "user.email=test@example.com",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A repository with one commit on `main` and a checked-out `feature` branch.
fn repo() -> (tempfile::TempDir, PathBuf) {
    let (tmp, root) = project();
    git(&root, &["init", "-q", "-b", "main"]);
    put(&root, "src/lib.rs", "pub fn old() {}\n");
    put(&root, "README.md", "readme\n");
    put(&root, "doomed.txt", "bye\n");
    put(&root, ".env", "TOKEN=hunter2\n");
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "initial"]);
    git(&root, &["checkout", "-q", "-b", "feature"]);
    (tmp, root)
}

#[tokio::test]
async fn git_diff_shows_committed_uncommitted_and_untracked_changes() {
    let (_tmp, root) = repo();
    let ctx = context(&root);
    put(&root, "README.md", "readme v2\n");
    git(&root, &["commit", "-q", "-am", "readme"]);
    put(&root, "src/lib.rs", "pub fn new() {}\n");
    put(&root, "notes/new.txt", "brand new\n");
    put(&root, ".env", "TOKEN=changed-secret\n");

    let r = call(&ctx, "run_git_diff", json!({})).await;
    assert!(!r.is_error, "{}", r.content);
    assert!(
        r.content
            .starts_with("diff against the merge-base of HEAD and main"),
        "{}",
        r.content
    );
    assert!(
        r.content.contains("-pub fn old() {}\n+pub fn new() {}"),
        "{}",
        r.content
    );
    assert!(
        r.content.contains("+readme v2"),
        "committed change seen: {}",
        r.content
    );
    assert!(
        r.content
            .contains("untracked: notes/new.txt (new file, 1 lines)\n+brand new"),
        "{}",
        r.content
    );
    assert!(
        !r.content.contains("hunter2") && !r.content.contains("changed-secret"),
        "{}",
        r.content
    );

    let r = call(&ctx, "run_git_diff", json!({"paths": ["src"]})).await;
    assert!(
        r.content.contains("src/lib.rs") && !r.content.contains("README"),
        "{}",
        r.content
    );
    assert!(!r.content.contains("notes/new.txt"), "{}", r.content);

    let r = call(&ctx, "run_git_diff", json!({"stat_only": true})).await;
    assert!(r.content.contains("2 files changed"), "{}", r.content);
    assert!(
        r.content.contains("untracked: notes/new.txt\n") && !r.content.contains("+brand new"),
        "{}",
        r.content
    );

    let r = call(&ctx, "run_git_diff", json!({"base": "HEAD"})).await;
    assert!(
        !r.content.contains("readme v2") && r.content.contains("+pub fn new"),
        "{}",
        r.content
    );

    for bad in [
        json!({"base": "--output=/tmp/x"}),
        json!({"base": "no-such-branch"}),
        json!({"paths": ["../x"]}),
        json!({"paths": [".git/config"]}),
    ] {
        let r = call(&ctx, "run_git_diff", bad.clone()).await;
        assert!(r.is_error, "{bad}: {}", r.content);
    }
}

#[tokio::test]
async fn git_diff_on_main_and_clean_tree() {
    let (_tmp, root) = repo();
    git(&root, &["checkout", "-q", "main"]);
    let ctx = context(&root);
    let r = call(&ctx, "run_git_diff", json!({})).await;
    assert!(
        !r.is_error && r.content.ends_with("no changes"),
        "{}",
        r.content
    );
    put(&root, "README.md", "edited\n");
    let r = call(&ctx, "run_git_diff", json!({})).await;
    assert!(
        r.content.contains("+edited"),
        "working tree seen on main: {}",
        r.content
    );
}

#[tokio::test]
async fn git_diff_truncates_at_50000_chars() {
    let (_tmp, root) = repo();
    let ctx = context(&root);
    let big: String = (0..5000)
        .map(|i| format!("changed line number {i:05}\n"))
        .collect();
    put(&root, "src/lib.rs", &big);
    let r = call(&ctx, "run_git_diff", json!({})).await;
    assert!(!r.is_error);
    let (body, marker) = r.content.split_once("\n[… diff truncated: ").unwrap();
    assert_eq!(body.chars().count(), 50_000);
    assert!(marker.contains("more characters not shown"), "{marker}");
}

#[tokio::test]
async fn git_diff_outside_a_repository_is_an_error() {
    let (_tmp, root) = project();
    let ctx = context(&root);
    let r = call(&ctx, "run_git_diff", json!({})).await;
    assert!(
        r.is_error && r.content.contains("not a git repository"),
        "{}",
        r.content
    );
    assert!(
        changed_files(&root, None)
            .await
            .unwrap_err()
            .contains("not a git repository")
    );
    assert_eq!(head(&root).await, None);
}

#[tokio::test]
async fn changed_files_lists_modified_deleted_committed_and_untracked() {
    let (_tmp, root) = repo();
    put(&root, "README.md", "v2\n");
    git(&root, &["commit", "-q", "-am", "readme"]);
    put(&root, "src/lib.rs", "changed\n");
    fs::remove_file(root.join("doomed.txt")).unwrap();
    put(&root, "z/new.rs", "new\n");
    put(&root, ".gitignore", "ignored.log\n");
    put(&root, "ignored.log", "noise\n");
    let files = changed_files(&root, None).await.unwrap();
    assert_eq!(
        files,
        [
            ".gitignore",
            "README.md",
            "doomed.txt",
            "src/lib.rs",
            "z/new.rs"
        ]
    );
    let files = changed_files(&root, Some("HEAD")).await.unwrap();
    assert_eq!(
        files,
        [".gitignore", "doomed.txt", "src/lib.rs", "z/new.rs"]
    );

    let sha = git(&root, &["rev-parse", "HEAD"]);
    assert_eq!(head(&root).await.as_deref(), Some(sha.trim()));
}

#[tokio::test]
async fn changed_files_in_a_repository_without_commits() {
    let (_tmp, root) = project();
    git(&root, &["init", "-q", "-b", "main"]);
    put(&root, "a.txt", "a\n");
    assert_eq!(head(&root).await, None);
    assert_eq!(changed_files(&root, None).await.unwrap(), ["a.txt"]);
}

/// Whether process `pid` is gone or a zombie, waiting for it up to a generous bound (the kill is
/// asynchronous; this is a liveness check, not a timing assertion).
async fn eventually_dead(pid: &str) -> bool {
    for _ in 0..200 {
        match fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(stat)
                if stat
                    .rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z') =>
            {
                return true;
            }
            Ok(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    false
}

fn executable(root: &Path, rel: &str, script: &str) {
    put(root, rel, script);
    let mut perms = fs::metadata(root.join(rel)).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    fs::set_permissions(root.join(rel), perms).unwrap();
}

#[tokio::test]
async fn run_command_kills_what_the_program_left_behind() {
    if !Path::new("/proc/self/stat").exists() {
        return; // needs Linux's /proc to observe the background process
    }
    let (_tmp, root) = project();
    let policy = CommandPolicy {
        allow: vec!["bg.sh".to_owned(), "hang.sh".to_owned()],
        ..CommandPolicy::default()
    };
    let ctx = context_with(&root, policy);
    // Exits at once but leaves a child holding stdout open: the call must still return.
    executable(
        &root,
        "bg.sh",
        "#!/bin/sh\nsleep 600 &\necho $! > bg.pid\necho done\n",
    );
    let r = call(
        &ctx,
        "run_command",
        json!({"program": "./bg.sh", "args": []}),
    )
    .await;
    assert!(
        !r.is_error && r.content.contains("exit code: 0") && r.content.contains("done"),
        "{}",
        r.content
    );
    let pid = fs::read_to_string(root.join("bg.pid")).unwrap();
    assert!(
        eventually_dead(pid.trim()).await,
        "background sleep {pid} survived"
    );

    // Times out with a grandchild: the whole group goes.
    executable(
        &root,
        "hang.sh",
        "#!/bin/sh\nsleep 600 &\necho $! > hang.pid\nwait\n",
    );
    let r = call(
        &ctx,
        "run_command",
        json!({"program": "./hang.sh", "args": [], "timeout_secs": 1}),
    )
    .await;
    assert!(
        r.is_error && r.content.starts_with("timed out after 1 s"),
        "{}",
        r.content
    );
    let pid = fs::read_to_string(root.join("hang.pid")).unwrap();
    assert!(
        eventually_dead(pid.trim()).await,
        "grandchild sleep {pid} survived"
    );
}

#[tokio::test]
async fn run_command_hides_the_variables_it_is_told_to_remove() {
    let (_tmp, root) = project();
    let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) else {
        return; // nothing to hide on this machine
    };
    let home = home.to_string_lossy().into_owned();
    let policy = CommandPolicy {
        allow: vec!["printenv".to_owned()],
        ..CommandPolicy::default()
    };
    let shown = call(
        &context_with(&root, policy.clone()),
        "run_command",
        serde_json::json!({"program": "printenv", "args": ["HOME"]}),
    )
    .await;
    assert!(shown.content.contains(&home), "{}", shown.content);
    let policy = CommandPolicy {
        env_remove: vec!["HOME".to_owned()],
        ..policy
    };
    let hidden = call(
        &context_with(&root, policy),
        "run_command",
        serde_json::json!({"program": "printenv", "args": ["HOME"]}),
    )
    .await;
    assert!(!hidden.content.contains(&home), "{}", hidden.content);
}

#[tokio::test]
async fn status_files_agrees_with_changed_files_against_head() {
    use baton_agent::tools::git::{changed_files, head, prefix, status_files};
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path();
    let run = |dir: &std::path::Path, args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    run(repo, &["init", "-q"]);
    std::fs::create_dir_all(repo.join("app/src")).unwrap();
    std::fs::write(repo.join("outside.txt"), "o").unwrap();
    std::fs::write(repo.join("app/keep.rs"), "k").unwrap();
    std::fs::write(repo.join("app/gone.rs"), "g").unwrap();
    run(repo, &["add", "."]);
    run(repo, &["commit", "-qm", "base"]);
    std::fs::write(repo.join("outside.txt"), "changed outside the root").unwrap();
    std::fs::write(repo.join("app/keep.rs"), "changed").unwrap();
    std::fs::remove_file(repo.join("app/gone.rs")).unwrap();
    std::fs::write(repo.join("app/src/new.rs"), "n").unwrap();
    for root in [repo.to_path_buf(), repo.join("app")] {
        let h = head(&root).await;
        let slow = changed_files(&root, h.as_deref()).await.unwrap();
        let p = prefix(&root).await.unwrap();
        let fast = status_files(&root, &p).await.unwrap();
        assert_eq!(fast, slow, "root {}", root.display());
    }
    let app = repo.join("app");
    let p = prefix(&app).await.unwrap();
    assert_eq!(p, "app/");
    assert_eq!(
        status_files(&app, &p).await.unwrap(),
        ["gone.rs", "keep.rs", "src/new.rs"]
    );
}

#[tokio::test]
async fn edit_file_never_writes_back_a_lossy_decoding() {
    let (_tmp, root) = project();
    let ctx = context(&root);
    // Latin-1 bytes in an otherwise textual file.
    let bytes = b"caf\xe9 = 1\nname = \"x\"\n".to_vec();
    fs::write(root.join("legacy.txt"), &bytes).unwrap();
    let r = call(
        &ctx,
        "edit_file",
        json!({"path": "legacy.txt", "old_string": "name = \"x\"", "new_string": "name = \"y\""}),
    )
    .await;
    assert!(r.is_error, "{}", r.content);
    assert!(r.content.contains("not valid UTF-8"), "{}", r.content);
    assert!(r.content.contains("offset 3"), "{}", r.content);
    assert_eq!(
        fs::read(root.join("legacy.txt")).unwrap(),
        bytes,
        "the file changed"
    );
    // Reading still works, shown with replacement characters.
    let r = call(&ctx, "read_file", json!({"path": "legacy.txt"})).await;
    assert!(
        !r.is_error && r.content.contains('\u{FFFD}'),
        "{}",
        r.content
    );
}

#[tokio::test]
async fn writes_replace_whole_files_and_keep_their_mode() {
    use std::os::unix::fs::PermissionsExt;
    let (_dir, root) = project();
    put(&root, "bin/run.sh", "echo old\n");
    fs::set_permissions(root.join("bin/run.sh"), fs::Permissions::from_mode(0o750)).unwrap();
    // Hard-link the old file: a write in place (truncate, then write) would change the linked
    // copy too; a replacement leaves it holding the old content.
    fs::hard_link(root.join("bin/run.sh"), root.join("old-copy")).unwrap();
    let ctx = context(&root);
    let r = call(
        &ctx,
        "write_file",
        json!({"path": "bin/run.sh", "content": "echo new\n"}),
    )
    .await;
    assert!(!r.is_error, "{}", r.content);
    let r = call(
        &ctx,
        "edit_file",
        json!({"path": "bin/run.sh", "old_string": "new", "new_string": "newer"}),
    )
    .await;
    assert!(!r.is_error, "{}", r.content);
    assert_eq!(
        fs::read_to_string(root.join("bin/run.sh")).unwrap(),
        "echo newer\n"
    );
    assert_eq!(
        fs::read_to_string(root.join("old-copy")).unwrap(),
        "echo old\n"
    );
    let mode = fs::metadata(root.join("bin/run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o750);
    let left: Vec<_> = fs::read_dir(root.join("bin"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 1, "temporary files left: {left:?}");
}

/// A model that copies a compaction marker from its history into a new call is refused, and the
/// file keeps what it held; a file that merely mentions the words is written.
#[tokio::test]
async fn writing_tools_refuse_a_compaction_marker_as_text() {
    use baton_agent::compaction::written;
    use baton_llm::ToolCall;
    let (_tmp, root) = project();
    let ctx = context(&root);
    put(&root, "src/lib.rs", "pub fn a() {}\n");
    let long = json!({ "path": "src/lib.rs", "content": "x".repeat(2_000) });
    let mut old = ToolCall::new("c", "write_file", long.to_string());
    let found = written::compactable(&old, 3, 1024);
    written::apply(&mut old, &found);
    let marker = old.arguments.as_ref().unwrap()["content"].clone();

    let r = call(
        &ctx,
        "write_file",
        json!({"path": "src/lib.rs", "content": marker}),
    )
    .await;
    assert!(r.is_error && r.content.contains("marker"), "{}", r.content);
    let r = call(
        &ctx,
        "edit_file",
        json!({"path": "src/lib.rs", "old_string": "pub fn a() {}", "new_string": marker}),
    )
    .await;
    assert!(r.is_error && r.content.contains("marker"), "{}", r.content);
    assert_eq!(
        fs::read_to_string(root.join("src/lib.rs")).unwrap(),
        "pub fn a() {}\n"
    );
    let mention = "// [baton: compacted markers are refused as content]\n";
    let r = call(
        &ctx,
        "write_file",
        json!({"path": "src/notes.rs", "content": mention}),
    )
    .await;
    assert!(!r.is_error, "{}", r.content);
}
