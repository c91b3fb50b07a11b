//! The guard's cases on real files, real programs and a real SQLite journal, each call going
//! through the guard chain the way the agent loop sends it: check, run if allowed, observe.

use super::*;
use crate::guard::GuardChain;
use crate::sandbox::Sandbox;
use crate::tools::{CommandPolicy, ToolContext, Toolbox};
use baton_store::journal::SqliteJournal;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

struct Rig {
    dir: tempfile::TempDir,
    journal: Arc<Mutex<SqliteJournal>>,
    chain: GuardChain,
    ctx: ToolContext,
    tools: Toolbox,
}

fn settings(mode: TddMode) -> TddSettings {
    let mut s = TddSettings::defaults(mode);
    // Test commands the tests can run for real: `true` passes, `false` fails, and a project
    // script stands for a user's own test command.
    s.test_commands = vec![
        vec!["true".into()],
        vec!["false".into()],
        vec!["sh".into(), "check.sh".into()],
    ];
    s
}

fn rig_with(mode: TddMode, dir: tempfile::TempDir, db: &Path) -> Rig {
    let journal = Arc::new(Mutex::new(SqliteJournal::open(db).unwrap()));
    rig_on(mode, dir, journal, "native")
}

fn rig_on(
    mode: TddMode,
    dir: tempfile::TempDir,
    journal: Arc<Mutex<SqliteJournal>>,
    scope: &str,
) -> Rig {
    let root = dir.path().to_path_buf();
    let core = TddCore::new(settings(mode), &root, journal.clone(), scope).unwrap();
    let mut chain = GuardChain::standard(false);
    chain.push(Box::new(TddGuard::new(Arc::new(core))));
    let mut commands = CommandPolicy::default();
    commands
        .allow
        .extend(["true", "false", "sh"].map(str::to_owned));
    let ctx = ToolContext {
        root: root.clone(),
        sandbox: Arc::new(Sandbox::new(&root, &[]).unwrap()),
        commands,
        cancel: CancellationToken::new(),
        agent: "developer".into(),
    };
    Rig {
        dir,
        journal,
        chain,
        ctx,
        tools: Toolbox::standard(),
    }
}

fn rig(mode: TddMode) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join(".baton/baton.db");
    rig_with(mode, dir, &db)
}

impl Rig {
    /// Sends one call through the chain: `Err(reason)` if refused, else the tool's result.
    async fn call(&self, name: &str, args: Value) -> Result<ToolResult, String> {
        let tool = self.tools.get(name).unwrap();
        let inspected = Inspected {
            name,
            tool: tool.as_ref(),
            args: &args,
            ctx: &self.ctx,
        };
        match self.chain.check(&inspected).0 {
            Verdict::Allow => {
                let r = tool.call(&args, &self.ctx).await;
                self.chain.observe(&inspected, &r);
                Ok(r)
            }
            Verdict::Ask(w) | Verdict::Deny(w) => Err(w),
        }
    }

    async fn write(&self, path: &str) -> Result<ToolResult, String> {
        self.call("write_file", json!({ "path": path, "content": "x\n" }))
            .await
    }

    async fn run(&self, program: &str, args: &[&str]) -> Result<ToolResult, String> {
        self.call("run_command", json!({ "program": program, "args": args }))
            .await
    }

    fn log(&self, kind: &str) -> Vec<baton_store::journal::GuardRecord> {
        self.journal
            .lock()
            .unwrap()
            .guard_records(None, None)
            .unwrap()
            .into_iter()
            .filter(|r| r.kind == kind)
            .collect()
    }

    fn file(&self, rel: &str, text: &str) {
        let p = self.dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

#[tokio::test]
async fn case_01_writing_an_implementation_without_a_test_is_denied_naming_the_test() {
    let r = rig(TddMode::Tdd);
    let why = r.write("src/parser.rs").await.unwrap_err();
    assert!(
        why.starts_with("create a test file first, expected: src/parser_test.rs"),
        "{why}"
    );
    assert!(why.contains("tests/parser.rs"), "{why}");
    assert!(!r.dir.path().join("src/parser.rs").exists());
    let denied = r.log("deny");
    assert_eq!(denied.len(), 1);
    assert_eq!(denied[0].path, "src/parser.rs");
    assert_eq!(denied[0].tool, "write_file");
}

#[tokio::test]
async fn case_02_editing_an_implementation_without_a_test_is_denied_likewise() {
    let r = rig(TddMode::Tdd);
    r.file("web/cart.ts", "export const a = 1;\n");
    let why = r
        .call(
            "edit_file",
            json!({ "path": "web/cart.ts", "old_string": "1", "new_string": "2" }),
        )
        .await
        .unwrap_err();
    assert!(
        why.starts_with("create a test file first, expected: web/cart.test.ts"),
        "{why}"
    );
    assert_eq!(
        std::fs::read_to_string(r.dir.path().join("web/cart.ts")).unwrap(),
        "export const a = 1;\n"
    );
}

#[tokio::test]
async fn case_03_writing_a_test_file_is_allowed_and_recorded() {
    let r = rig(TddMode::Tdd);
    assert!(!r.write("src/parser_test.rs").await.unwrap().is_error);
    assert!(!r.write("tests/test_app.py").await.unwrap().is_error);
    let writes: Vec<String> = r.log("test-write").into_iter().map(|w| w.path).collect();
    assert_eq!(writes, ["src/parser_test.rs", "tests/test_app.py"]);
}

#[tokio::test]
async fn case_04_an_implementation_whose_test_was_never_run_is_denied() {
    let r = rig(TddMode::Tdd);
    r.write("pkg/cart_test.go").await.unwrap();
    let why = r.write("pkg/cart.go").await.unwrap_err();
    assert!(why.starts_with("run your tests first"), "{why}");
    assert!(why.contains("pkg/cart_test.go"), "{why}");
    // A test file that was already there and never run in this scope: the same.
    r.file("tests/test_tax.py", "def test_x(): pass\n");
    let why = r.write("tax.py").await.unwrap_err();
    assert!(why.starts_with("run your tests first"), "{why}");
}

#[tokio::test]
async fn case_05_after_a_failing_run_the_implementation_is_allowed() {
    let r = rig(TddMode::Tdd);
    r.write("pkg/cart_test.go").await.unwrap();
    let out = r.run("false", &[]).await.unwrap();
    assert!(out.content.starts_with("exit code: 1"), "{}", out.content);
    let runs = r.log("test-run");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].exit_code, Some(1));
    assert!(!r.write("pkg/cart.go").await.unwrap().is_error);
}

#[tokio::test]
async fn case_06_after_a_passing_run_the_implementation_is_allowed() {
    let r = rig(TddMode::Tdd);
    r.write("src/parser_test.rs").await.unwrap();
    r.run("true", &[]).await.unwrap();
    assert_eq!(r.log("test-run")[0].exit_code, Some(0));
    assert!(!r.write("src/parser.rs").await.unwrap().is_error);
    // A new test written after the run needs a run of its own before the code changes again.
    r.write("src/parser_test.rs").await.unwrap();
    let why = r.write("src/parser.rs").await.unwrap_err();
    assert!(why.starts_with("run your tests first"), "{why}");
}

#[tokio::test]
async fn case_07_a_shell_redirection_into_an_implementation_file_is_denied() {
    let r = rig(TddMode::Tdd);
    r.write("src/parser_test.rs").await.unwrap();
    r.run("true", &[]).await.unwrap();
    // Even with a test run, the shell is not the way to change implementation files.
    for (program, args) in [
        ("sh", vec!["-c", "echo 'fn f() {}' > src/parser.rs"]),
        ("sh", vec!["-c", "printf x | tee -a src/parser.rs"]),
        ("sh", vec!["-c", "sed -i 's/a/b/' src/parser.rs"]),
        ("sh", vec!["-c", "cp /tmp/x.rs src/parser.rs"]),
        // A `cd` earlier on the line is followed.
        (
            "sh",
            vec!["-c", "cd tests && echo 'fn f() {}' > ../src/parser.rs"],
        ),
    ] {
        let why = r.run(program, &args).await.unwrap_err();
        assert!(
            why.contains("would write the implementation file `src/parser.rs`"),
            "{args:?}: {why}"
        );
    }
    assert!(!r.dir.path().join("src/parser.rs").exists());
    // Writing a test file or a log from the shell is fine.
    r.file("tests/.keep", "");
    let ok = r
        .run("sh", &["-c", "echo ok > build.log && echo t > tests/x.rs"])
        .await
        .unwrap();
    assert!(ok.content.starts_with("exit code: 0"), "{}", ok.content);
}

#[tokio::test]
async fn a_path_spelled_through_a_symlink_to_the_root_is_the_same_file() {
    let r = rig(TddMode::Tdd);
    let outside = tempfile::tempdir().unwrap();
    let link = outside.path().join("alias");
    std::os::unix::fs::symlink(r.dir.path(), &link).unwrap();
    std::os::unix::fs::symlink(r.dir.path(), r.dir.path().join("self")).unwrap();
    r.file("src/.keep", "");
    for script in [
        format!("echo 'fn f() {{}}' > {}/src/parser.rs", link.display()),
        format!(
            "cd {} && echo 'fn f() {{}}' > src/parser.rs",
            link.display()
        ),
        "echo 'fn f() {}' > self/src/parser.rs".to_owned(),
    ] {
        let why = r.run("sh", &["-c", &script]).await.unwrap_err();
        assert!(
            why.contains("would write the implementation file `src/parser.rs`"),
            "{script}: {why}"
        );
    }
    assert!(!r.dir.path().join("src/parser.rs").exists());
}

#[tokio::test]
async fn tests_in_the_layouts_projects_use_cover_their_files() {
    for (test, implementation) in [
        ("tests/unit/test_parser.py", "src/parser.py"),
        ("test/test_parser.py", "parser.py"),
        ("test/parser.js", "lib/parser.js"),
        ("src/parser.test.ts", "src/parser.js"),
        // A Go package's tests are all its `_test.go` files.
        ("pkg/lexer_test.go", "pkg/parser.go"),
    ] {
        let r = rig(TddMode::Tdd);
        assert!(r.write(implementation).await.is_err(), "{implementation}");
        r.write(test).await.unwrap();
        r.run("false", &[]).await.unwrap();
        let ok = r.write(implementation).await;
        assert!(ok.is_ok(), "{test} does not cover {implementation}: {ok:?}");
    }
}

#[tokio::test]
async fn case_08_a_one_time_allowance_lets_one_shell_write_through() {
    let r = rig(TddMode::Tdd);
    r.journal
        .lock()
        .unwrap()
        .grant_allowance(BASH_WRITE, "regenerate the bindings")
        .unwrap();
    r.file("src/.keep", "");
    let out = r
        .run("sh", &["-c", "echo 'pub fn f() {}' > src/bindings.rs"])
        .await
        .unwrap();
    assert!(out.content.starts_with("exit code: 0"), "{}", out.content);
    assert!(r.dir.path().join("src/bindings.rs").exists());
    let used = r.log("allowance-used");
    assert_eq!(used.len(), 1);
    assert!(
        used[0].detail.contains("regenerate the bindings"),
        "{used:?}"
    );
    let why = r
        .run("sh", &["-c", "echo again >> src/bindings.rs"])
        .await
        .unwrap_err();
    assert!(why.contains("would write the implementation file"), "{why}");
}

#[tokio::test]
async fn case_09_a_users_own_test_command_is_recorded_with_its_status() {
    let r = rig(TddMode::Tdd);
    r.file("check.sh", "exit 3\n");
    r.run("sh", &["check.sh"]).await.unwrap();
    r.run("echo", &["exit code: 0"]).await.unwrap();
    let runs = r.log("test-run");
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].detail, "sh check.sh");
    assert_eq!(runs[0].exit_code, Some(3));
}

#[tokio::test]
async fn case_10_mode_off_allows_everything() {
    let r = rig(TddMode::Off);
    assert!(r.write("src/parser.rs").await.is_ok());
    assert!(r.run("sh", &["-c", "echo x > src/other.rs"]).await.is_ok());
    assert!(r.log("deny").is_empty());
}

#[tokio::test]
async fn case_11_exempt_paths_are_allowed() {
    let r = rig(TddMode::Tdd);
    for p in [
        "types/api.d.ts",
        "vite.config.ts",
        "migrations/001_init.py",
        "docs/guide.md",
        "README.md",
        "Cargo.lock",
    ] {
        assert!(r.write(p).await.is_ok(), "{p}");
    }
    assert!(r.log("deny").is_empty() && r.log("warn").is_empty());
}

#[tokio::test]
async fn case_12_an_unmapped_file_is_allowed_with_a_logged_warning() {
    let r = rig(TddMode::Tdd);
    assert!(r.write("Makefile").await.is_ok());
    let warned = r.log("warn");
    assert_eq!(warned.len(), 1);
    assert_eq!(warned[0].path, "Makefile");
    assert!(warned[0].detail.contains("no test mapping"), "{warned:?}");
}

#[tokio::test]
async fn rust_inline_tests_count_as_the_files_own_test() {
    let r = rig(TddMode::Tdd);
    // A new module that brings its test module is a test write …
    r.call(
        "write_file",
        json!({ "path": "src/calc.rs", "content": "// calc\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() { assert_eq!(super::add(1, 1), 2); }\n}\n" }),
    )
    .await
    .unwrap();
    // … so the code waits for a run …
    let why = r
        .call(
            "edit_file",
            json!({ "path": "src/calc.rs", "old_string": "// calc\n", "new_string": "pub fn add(a: i32, b: i32) -> i32 { a + b }\n" }),
        )
        .await
        .unwrap_err();
    assert!(why.starts_with("run your tests first"), "{why}");
    r.run("false", &[]).await.unwrap();
    r.call(
        "edit_file",
        json!({ "path": "src/calc.rs", "old_string": "// calc\n", "new_string": "pub fn add(a: i32, b: i32) -> i32 { a + b }\n" }),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn the_state_survives_a_restart_and_scopes_do_not_mix() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join(".baton/baton.db");
    let r = rig_with(TddMode::Tdd, dir, &db);
    r.write("src/parser_test.rs").await.unwrap();
    r.run("false", &[]).await.unwrap();
    let Rig { dir, chain, .. } = r;
    drop(chain);
    // A new process: the journal reopened from disk.
    let again = rig_with(TddMode::Tdd, dir, &db);
    assert!(again.write("src/parser.rs").await.is_ok());
    // Another scope (another Claude Code session) has run nothing.
    let journal = again.journal.clone();
    let other = rig_on(TddMode::Tdd, again.dir, journal, "claude:other");
    let why = other.write("src/parser.rs").await.unwrap_err();
    assert!(why.starts_with("run your tests first"), "{why}");
}

#[tokio::test]
async fn an_agent_cannot_switch_the_guard_off_or_forge_its_state() {
    let r = rig(TddMode::Tdd);
    for args in [
        vec!["-c", "baton tdd off"],
        vec!["-c", "baton tdd allow-bash-write once 'me'"],
        vec!["-c", "echo '{}' | baton guard"],
        vec!["-c", "echo x > .baton/baton.db"],
        vec!["-c", "echo '{}' > .claude/settings.local.json"],
    ] {
        assert!(r.run("sh", &args).await.is_err(), "{args:?}");
    }
    // The tool's own first line is the status; output cannot pose as it.
    let forged = ToolResult::ok("--- stdout ---\nexit code: 0\n");
    assert_eq!(reported_exit(&forged), None);
    assert_eq!(reported_exit(&ToolResult::error("exit code: 0")), None);
    assert!(r.log("test-run").is_empty());
}

#[tokio::test]
async fn atdd_warns_about_a_unit_test_without_an_acceptance_test() {
    let r = rig(TddMode::Atdd);
    assert!(r.write("tests/test_cart.py").await.is_ok());
    let warned = r.log("warn");
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(
        warned[0].detail.contains("no acceptance test"),
        "{warned:?}"
    );
    assert!(r.write("tests/acceptance/test_checkout.py").await.is_ok());
    assert!(r.write("tests/test_tax.py").await.is_ok());
    assert_eq!(r.log("warn").len(), 1);
}

#[test]
fn the_refusal_names_the_test_command_of_the_files_ecosystem() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Arc::new(Mutex::new(
        SqliteJournal::open(&dir.path().join(".baton/baton.db")).unwrap(),
    ));
    let core = TddCore::new(
        TddSettings::defaults(TddMode::Tdd),
        dir.path(),
        journal,
        "hint",
    )
    .unwrap();
    for (test, code, runner, not) in [
        ("tests/test_tax.py", "tax.py", "`pytest`", "cargo"),
        ("pkg/cart_test.go", "pkg/cart.go", "`go test`", "cargo"),
        ("src/cart.test.ts", "src/cart.ts", "`npm test`", "cargo"),
        ("tests/cart.rs", "src/cart.rs", "`cargo test`", "pytest"),
    ] {
        let p = dir.path().join(test);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "x\n").unwrap();
        let Decision { verdict, .. } = core.check_write("write_file", code, Some("x\n"));
        let why = match verdict {
            crate::guard::Verdict::Deny(w) => w,
            other => panic!("{code}: {other:?}"),
        };
        assert!(why.contains(runner), "{code}: {why}");
        assert!(!why.contains(not), "{code}: {why}");
    }
}
