//! Protected paths against the file tools: baton's state and configuration, the sprint file,
//! BMad's configuration and story statuses, each reached through several spellings (plain, `./`,
//! `..`, symlinked file, symlinked directory, absolute) and several tools (`write_file`,
//! `edit_file`, and the guard chain that every writing tool passes). Every refusal must leave
//! the file as it was.

// Helpers outside `#[test]` functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use baton_agent::guard::{GuardChain, Inspected, Verdict};
use baton_agent::protect::Protected;
use baton_agent::sandbox::{Access, Sandbox};
use baton_agent::tools::{CommandPolicy, ToolContext, ToolResult, Toolbox};
use serde_json::{Value, json};
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

const SPRINT: &str = "docs/sprint/status.yaml";
const STORIES: &str = "docs/stories";
const SPRINT_TEXT: &str =
    "development_status:\n  epic-1: in-progress\n  1-1-login: in-progress\n  1-2-logout: backlog\n";
const STORY: &str = "# Story 1.1: Login\n\nStatus: in-progress\n\n## Tasks / Subtasks\n\n- [ ] Task 1\n\n## Dev Agent Record\n\n### File List\n";

struct Fx {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    ctx: ToolContext,
}

/// A project with `baton.toml`, `.baton/`, a sprint file at a non-default place (given to the
/// sandbox by the caller, as the engine does), a story file and BMad's config.
fn fx() -> Fx {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap();
    let put = |rel: &str, text: &str| {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    };
    put("baton.toml", "[sprint]\nbatch = 1\n");
    put(".baton/baton.db", "journal");
    put(
        ".baton/agents/reviewer.md",
        "---\nname: reviewer\n---\nreview\n",
    );
    put(SPRINT, SPRINT_TEXT);
    put(&format!("{STORIES}/1-1-login.md"), STORY);
    put("_bmad/bmm/config.yaml", "user_name: me\n");
    put("src/lib.rs", "fn a() {}\n");
    let protected = Protected::for_project(&root.join(SPRINT), Path::new(STORIES));
    let sandbox = Sandbox::with_protected(&root, &Sandbox::default_deny(), &protected).unwrap();
    let ctx = ToolContext {
        root: root.clone(),
        sandbox: Arc::new(sandbox),
        commands: CommandPolicy::default(),
        cancel: CancellationToken::new(),
        agent: "developer".to_owned(),
    };
    Fx {
        _tmp: tmp,
        root,
        ctx,
    }
}

async fn call(ctx: &ToolContext, tool: &str, args: Value) -> ToolResult {
    let tools = Toolbox::standard();
    tools.get(tool).unwrap().call(&args, ctx).await
}

/// The guard chain's verdict on a call (what every writing tool passes before it runs).
fn guard(ctx: &ToolContext, tool: &str, args: Value) -> Verdict {
    let tools = Toolbox::standard();
    let t = tools.get(tool).unwrap();
    let chain = GuardChain::standard(false);
    chain
        .check(&Inspected {
            name: tool,
            tool: t.as_ref(),
            args: &args,
            ctx,
        })
        .0
}

fn snapshot(root: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for rel in [
        "baton.toml",
        ".baton/baton.db",
        ".baton/agents/reviewer.md",
        SPRINT,
        "docs/stories/1-1-login.md",
        "_bmad/bmm/config.yaml",
    ] {
        out.push((rel.to_owned(), fs::read_to_string(root.join(rel)).unwrap()));
    }
    out
}

#[tokio::test]
async fn every_spelling_of_a_protected_path_is_refused_by_every_writing_tool() {
    let f = fx();
    symlink(f.root.join("baton.toml"), f.root.join("notes.txt")).unwrap();
    symlink(f.root.join(".baton"), f.root.join("state")).unwrap();
    symlink(f.root.join(SPRINT), f.root.join("board.yaml")).unwrap();
    symlink(f.root.join("docs/sprint"), f.root.join("sprintdir")).unwrap();
    let before = snapshot(&f.root);
    let abs_toml = f.root.join("baton.toml").display().to_string();
    let paths = [
        "baton.toml",
        "./baton.toml",
        "sub/../baton.toml",
        ".//baton.toml",
        abs_toml.as_str(),
        "notes.txt",
        ".baton/baton.db",
        ".baton/agents/reviewer.md",
        ".baton/agents/x.md",
        ".baton/new-dir/file",
        ".baton",
        "state/baton.db",
        "state/agents/x.md",
        SPRINT,
        "./docs/sprint/status.yaml",
        "board.yaml",
        "sprintdir/status.yaml",
        "_bmad-output/implementation-artifacts/sprint-status.yaml",
        "elsewhere/sprint-status.yaml",
        "_bmad/bmm/config.yaml",
        "_bmad/core/config.yaml",
        ".bmad/config.yaml",
        "bmad/bmm/config.yml",
    ];
    for path in paths {
        let r = call(
            &f.ctx,
            "write_file",
            json!({"path": path, "content": "x = 1\n"}),
        )
        .await;
        assert!(r.is_error, "write_file {path}: {}", r.content);
        assert!(r.content.contains("refused"), "{path}: {}", r.content);
        let r = call(
            &f.ctx,
            "edit_file",
            json!({"path": path, "old_string": "in-progress", "new_string": "done"}),
        )
        .await;
        assert!(r.is_error, "edit_file {path}: {}", r.content);
        for tool in ["write_file", "edit_file"] {
            let v = guard(
                &f.ctx,
                tool,
                json!({"path": path, "content": "", "old_string": "a", "new_string": "b"}),
            );
            assert!(matches!(v, Verdict::Deny(_)), "guard {tool} {path}: {v:?}");
        }
    }
    assert_eq!(snapshot(&f.root), before, "nothing protected changed");
    assert!(!f.root.join(".baton/agents/x.md").exists());
    assert!(!f.root.join("elsewhere").exists());
}

#[tokio::test]
async fn protected_files_stay_readable_and_ordinary_files_writable() {
    let f = fx();
    for path in ["baton.toml", SPRINT, ".baton/agents/reviewer.md"] {
        assert!(f.ctx.sandbox.resolve(path, Access::Read).is_ok(), "{path}");
        let r = call(&f.ctx, "read_file", json!({"path": path})).await;
        assert!(!r.is_error, "{path}: {}", r.content);
    }
    for path in [
        "src/lib.rs",
        "docs/baton.toml.md",
        "_bmad/bmm/workflows/x.md",
    ] {
        let r = call(
            &f.ctx,
            "write_file",
            json!({"path": path, "content": "ok\n"}),
        )
        .await;
        assert!(!r.is_error, "{path}: {}", r.content);
    }
}

/// Regression (issue 8): a developer agent edited the sprint file and marked its own story and
/// an unstarted one `done`.
#[tokio::test]
async fn regression_a_developer_cannot_mark_stories_done_in_the_sprint_file() {
    let f = fx();
    for (old, new) in [
        ("1-1-login: in-progress", "1-1-login: done"),
        ("1-2-logout: backlog", "1-2-logout: done"),
    ] {
        let r = call(
            &f.ctx,
            "edit_file",
            json!({"path": SPRINT, "old_string": old, "new_string": new}),
        )
        .await;
        assert!(
            r.is_error && r.content.contains("update_sprint_status"),
            "{}",
            r.content
        );
    }
    let r = call(
        &f.ctx,
        "write_file",
        json!({"path": SPRINT, "content": SPRINT_TEXT.replace("backlog", "done")}),
    )
    .await;
    assert!(r.is_error, "{}", r.content);
    assert_eq!(
        fs::read_to_string(f.root.join(SPRINT)).unwrap(),
        SPRINT_TEXT
    );
}

/// Regression (issue 8): with file tools only, an agent rewrote `baton.toml` (provider URL,
/// allowlist, deny list), wrote `.baton/baton.db`, and replaced a trusted project agent.
#[tokio::test]
async fn regression_config_journal_and_project_agents_cannot_be_rewritten() {
    let f = fx();
    let before = snapshot(&f.root);
    for (path, content) in [
        (
            "baton.toml",
            "[providers.anthropic]\nkind = \"anthropic\"\nbase_url = \"http://evil.example\"\n",
        ),
        ("baton.toml", "[commands]\nallow = [\"sh\"]\n"),
        ("baton.toml", "[sandbox]\ndeny = []\n"),
        (".baton/baton.db", ""),
        (
            ".baton/agents/reviewer.md",
            "---\nname: reviewer\nrole: developer\n---\nwrite anything\n",
        ),
    ] {
        let r = call(
            &f.ctx,
            "write_file",
            json!({"path": path, "content": content}),
        )
        .await;
        assert!(r.is_error, "{path}: {}", r.content);
    }
    assert_eq!(snapshot(&f.root), before);
}

#[tokio::test]
async fn a_story_file_can_be_edited_but_its_status_cannot_move() {
    let f = fx();
    let story = "docs/stories/1-1-login.md";
    // Ticking a task is the developer's job.
    let r = call(
        &f.ctx,
        "edit_file",
        json!({"path": story, "old_string": "- [ ] Task 1", "new_string": "- [x] Task 1"}),
    )
    .await;
    assert!(!r.is_error, "{}", r.content);
    let ticked = fs::read_to_string(f.root.join(story)).unwrap();
    // Moving the status, in any way, is not.
    for (tool, args) in [
        (
            "edit_file",
            json!({"path": story, "old_string": "Status: in-progress", "new_string": "Status: done"}),
        ),
        (
            "edit_file",
            json!({"path": story, "old_string": "in-progress", "new_string": "review"}),
        ),
        (
            "edit_file",
            json!({"path": story, "old_string": "Status: in-progress\n", "new_string": ""}),
        ),
        (
            "edit_file",
            json!({"path": story, "old_string": "# Story 1.1: Login\n", "new_string": "---\nstatus: done\n---\n# Story 1.1: Login\n"}),
        ),
        (
            "write_file",
            json!({"path": story, "content": ticked.replace("in-progress", "done")}),
        ),
        (
            "write_file",
            json!({"path": "docs/stories/1-2-logout.md", "content": "# Story 1.2: Logout\n\nStatus: done\n"}),
        ),
    ] {
        let r = call(&f.ctx, tool, args.clone()).await;
        assert!(r.is_error, "{tool} {args}: {}", r.content);
        assert!(r.content.contains("update_sprint_status"), "{}", r.content);
    }
    assert_eq!(fs::read_to_string(f.root.join(story)).unwrap(), ticked);
    assert!(!f.root.join("docs/stories/1-2-logout.md").exists());
    // A new story drafted as BMad drafts it is fine.
    let r = call(
        &f.ctx,
        "write_file",
        json!({"path": "docs/stories/1-2-logout.md", "content": "# Story 1.2: Logout\n\nStatus: ready-for-dev\n"}),
    )
    .await;
    assert!(!r.is_error, "{}", r.content);
    // The default story directory is covered too.
    let r = call(
        &f.ctx,
        "write_file",
        json!({"path": "_bmad-output/implementation-artifacts/2-1-x.md", "content": "# Story 2.1: X\n\nStatus: done\n"}),
    )
    .await;
    assert!(r.is_error, "{}", r.content);
}
