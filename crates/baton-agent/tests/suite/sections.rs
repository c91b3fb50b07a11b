//! `read_file` by section on a BMad-shaped architecture document: the `section` argument and
//! BMad's `file.md#Heading` references, the outline, a missing heading, how `offset_line` and
//! `max_lines` page a section or an outline, and path safety with a `#` suffix (through the tool
//! and through the guard chain).

use super::tools::context;
use baton_agent::guard::{GuardChain, Inspected, Verdict};
use baton_agent::sandbox::Access;
use baton_agent::tools::{ToolContext, ToolResult, Toolbox};
use serde_json::{Value, json};
use std::fs;
use std::path::{Path, PathBuf};

const ARCHITECTURE: &str = include_str!("../fixtures/bmad/architecture.md");
const DOC: &str = "docs/architecture.md";

async fn read(ctx: &ToolContext, args: Value) -> ToolResult {
    let tools = Toolbox::standard();
    tools.get("read_file").unwrap().call(&args, ctx).await
}

fn guard(ctx: &ToolContext, args: Value) -> Verdict {
    let tools = Toolbox::standard();
    GuardChain::standard(true)
        .check(&Inspected {
            name: "read_file",
            tool: tools.get("read_file").unwrap().as_ref(),
            args: &args,
            ctx,
        })
        .0
}

/// A project in `root/` of a temporary directory (so `outside.md` beside it is outside).
fn project() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap().join("root");
    put(&root, DOC, ARCHITECTURE);
    (tmp, root)
}

fn put(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

/// The lines of the fixture from the line `from` to the line `to` (excluded).
fn between(from: &str, to: &str) -> &'static str {
    let start = ARCHITECTURE.find(&format!("\n{from}\n")).unwrap() + 1;
    let end = ARCHITECTURE.find(&format!("\n{to}\n")).unwrap() + 1;
    &ARCHITECTURE[start..end]
}

#[tokio::test]
async fn a_section_by_argument_or_by_reference_is_exactly_that_section() {
    let (_tmp, root) = project();
    let ctx = context(&root);
    let data_model = between(
        "## Data Model",
        "## Implementation Patterns & Consistency Rules",
    );
    for args in [
        json!({"path": DOC, "section": "Data Model"}),
        json!({"path": DOC, "section": "## data model  "}),
        json!({"path": format!("{DOC}#Data Model")}),
        json!({"path": format!("./{DOC}#data-model")}),
        json!({"path": format!("{DOC}#Data Model"), "section": "data model"}),
        json!({"path": format!("{}/{DOC}#Data Model", root.display())}),
    ] {
        let r = read(&ctx, args.clone()).await;
        assert_eq!(r, ToolResult::ok(data_model), "{args}");
    }
    // A nested section stops at the next heading of its level.
    let r = read(
        &ctx,
        json!({"path": format!("{DOC}#ADR-002: Sessions in a signed cookie")}),
    )
    .await;
    assert_eq!(
        r.content,
        between(
            "### ADR-002: Sessions in a signed cookie",
            "### ADR-003: Money as integer minor units ###"
        )
    );
    // The path and the argument must agree.
    let r = read(
        &ctx,
        json!({"path": format!("{DOC}#Data Model"), "section": "Tables"}),
    )
    .await;
    assert!(
        r.is_error && r.content.contains("name one"),
        "{}",
        r.content
    );
    // An empty suffix reads the whole file.
    let r = read(&ctx, json!({"path": format!("{DOC}#")})).await;
    assert_eq!(r, ToolResult::ok(ARCHITECTURE));
}

#[tokio::test]
async fn a_missing_heading_lists_the_headings_with_levels_lines_and_sizes() {
    let (_tmp, root) = project();
    let ctx = context(&root);
    let r = read(&ctx, json!({"path": format!("{DOC}#Security Model")})).await;
    assert!(r.is_error, "{}", r.content);
    let mut lines = r.content.lines();
    assert_eq!(
        lines.next().unwrap(),
        "`docs/architecture.md` has no heading `Security Model`. Pass one of these headings as \
         `section`, as written here (38 of 38; level, line, size):"
    );
    let listed: Vec<&str> = lines.collect();
    assert_eq!(listed.len(), 38, "{}", r.content);
    assert!(listed[0].starts_with("# Architecture Decision Document  [line 14, "));
    assert!(
        listed
            .iter()
            .any(|l| l.starts_with("## Data Model  [line "))
    );
    assert!(
        listed
            .iter()
            .any(|l| l.starts_with("#### Consequences (2)  [line "))
    );
    assert!(listed.iter().any(|l| l.starts_with("# Glossary  [line ")));
    assert!(!r.content.contains("CREATE TABLE"), "not the document");

    // A start shared by several headings lists just those.
    let r = read(&ctx, json!({"path": DOC, "section": "ADR"})).await;
    assert!(r.is_error, "{}", r.content);
    assert!(
        r.content
            .starts_with("`ADR` starts 3 headings of `docs/architecture.md`")
    );
    assert_eq!(r.content.lines().count(), 4, "{}", r.content);

    // A file without headings says so.
    put(&root, "notes.txt", "plain text\n");
    let r = read(&ctx, json!({"path": "notes.txt", "section": "Intro"})).await;
    assert!(
        r.is_error && r.content.contains("has no Markdown headings"),
        "{}",
        r.content
    );
}

#[tokio::test]
async fn the_outline_lists_headings_without_the_text() {
    let (_tmp, root) = project();
    let ctx = context(&root);
    let r = read(&ctx, json!({"path": DOC, "outline": true})).await;
    assert!(!r.is_error, "{}", r.content);
    let first = r.content.lines().next().unwrap();
    assert_eq!(
        first,
        format!(
            "Outline of `docs/architecture.md`: {} lines, {:.1} KB, 38 headings (front matter: \
             lines 1–12). Read a section with `section` set to its heading as listed; sizes \
             include nested subsections.",
            ARCHITECTURE.lines().count(),
            ARCHITECTURE.len() as f64 / 1000.0
        )
    );
    assert_eq!(r.content.lines().count(), 39);
    let data_model = between(
        "## Data Model",
        "## Implementation Patterns & Consistency Rules",
    );
    let heading_at = ARCHITECTURE.find("\n## Data Model\n").unwrap() + 1;
    let line = ARCHITECTURE[..heading_at].matches('\n').count() + 1;
    assert!(
        r.content.contains(&format!(
            "\n## Data Model  [line {line}, {} lines, {:.1} KB]\n",
            data_model.lines().count(),
            data_model.len() as f64 / 1000.0
        )),
        "{}",
        r.content
    );
    assert!(!r.content.contains("CREATE TABLE"));
    assert!(r.content.len() < ARCHITECTURE.len() / 3);

    // Within a section (`"true"` as a string is accepted too).
    let r = read(
        &ctx,
        json!({"path": format!("{DOC}#Core Architectural Decisions"), "outline": "true"}),
    )
    .await;
    let listed: Vec<&str> = r.content.lines().skip(1).collect();
    assert_eq!(listed.len(), 8, "{}", r.content);
    assert!(listed[0].starts_with("## Core Architectural Decisions  [line"));
    assert!(listed[7].starts_with("#### Consequences (3)  [line"));
    let r = read(&ctx, json!({"path": DOC, "outline": 1})).await;
    assert!(
        r.is_error && r.content.contains("true or false"),
        "{}",
        r.content
    );
}

#[tokio::test]
async fn offset_and_max_lines_page_the_section_or_the_outline() {
    let (_tmp, root) = project();
    let ctx = context(&root);
    let section = between("### Tables", "### Entities");
    let total = section.lines().count();
    let r = read(
        &ctx,
        json!({"path": DOC, "section": "Tables", "max_lines": 3}),
    )
    .await;
    let shown: String = section.lines().take(3).map(|l| format!("{l}\n")).collect();
    assert_eq!(
        r.content,
        format!(
            "{shown}[… truncated: showing lines 1–3 of {total} of the section `Tables`; continue \
             with the same section and offset_line=4 …]"
        )
    );
    // Lines count from the section's heading, and the rest reads to the section's end.
    let r = read(
        &ctx,
        json!({"path": format!("{DOC}#Tables"), "offset_line": 4}),
    )
    .await;
    let rest: String = section.split_inclusive('\n').skip(3).collect();
    assert_eq!(r, ToolResult::ok(rest));
    let r = read(
        &ctx,
        json!({"path": DOC, "section": "Tables", "offset_line": total + 1}),
    )
    .await;
    assert_eq!(
        r,
        ToolResult::error(format!(
            "offset_line {} is past the end: the section `Tables` has {total} lines",
            total + 1
        ))
    );
    let r = read(
        &ctx,
        json!({"path": DOC, "outline": true, "offset_line": 2, "max_lines": 1}),
    )
    .await;
    assert!(
        r.content
            .starts_with("# Architecture Decision Document  [line 14, ")
            && r.content.ends_with(
                "[… truncated: showing lines 2–2 of 39 of the outline; continue with \
                 `outline: true` and offset_line=3 …]"
            ),
        "{}",
        r.content
    );
    // A section over the byte limit is cut like a file.
    let big: String = (0..5000)
        .map(|i| format!("line {i:04} of a long section\n"))
        .collect();
    put(&root, "big.md", &format!("# Big\n{big}# Next\n"));
    let r = read(&ctx, json!({"path": "big.md#Big"})).await;
    assert!(r.content.len() < 101_000);
    assert!(
        r.content
            .contains("of the section `Big`; continue with the same section and offset_line="),
        "{}",
        &r.content[r.content.len() - 200..]
    );
}

#[tokio::test]
async fn a_repeated_heading_says_which_one_it_is() {
    let (_tmp, root) = project();
    let ctx = context(&root);
    let r = read(&ctx, json!({"path": DOC, "section": "Consequences"})).await;
    let (body, note) = r.content.rsplit_once('\n').unwrap();
    assert!(body.starts_with("#### Consequences\n") && body.contains("VACUUM INTO"));
    assert!(
        note.starts_with("[… this is `Consequences` (line ")
            && note.contains("other headings with the same text: `Consequences (2)` (line "),
        "{note}"
    );
    let r = read(&ctx, json!({"path": format!("{DOC}#Consequences (3)")})).await;
    assert!(r.content.contains("Sums never drift"), "{}", r.content);
}

#[tokio::test]
async fn a_file_named_with_a_hash_wins_over_a_section() {
    let (_tmp, root) = project();
    let ctx = context(&root);
    put(&root, "notes.md", "# Intro\nthe section\n# Other\n");
    put(&root, "notes.md#Intro", "the file named with a hash\n");
    let r = read(&ctx, json!({"path": "notes.md#Intro"})).await;
    assert_eq!(r, ToolResult::ok("the file named with a hash\n"));
    fs::remove_file(root.join("notes.md#Intro")).unwrap();
    let r = read(&ctx, json!({"path": "notes.md#Intro"})).await;
    assert_eq!(r, ToolResult::ok("# Intro\nthe section\n"));
    // A `#` in a directory's name: the file is found after it.
    put(&root, "c#/guide.md", "# Setup\nsteps\n");
    let r = read(&ctx, json!({"path": "c#/guide.md#Setup"})).await;
    assert_eq!(r, ToolResult::ok("# Setup\nsteps\n"));
    let r = read(&ctx, json!({"path": "docs/nope.md#Data Model"})).await;
    assert_eq!(
        r,
        ToolResult::error(
            "`docs/nope.md#Data Model` does not exist, and neither does `docs/nope.md`"
        )
    );
}

/// The suffix opens no file the sandbox would refuse: the tool and the guard both resolve the
/// file before the `#` as they resolve any path.
#[tokio::test]
async fn a_section_suffix_never_opens_a_refused_path() {
    let (_tmp, root) = project();
    let ctx = context(&root);
    put(&root, "server.pem", "# Key\nsecret-key-material\n");
    put(&root, ".env", "# Env\nTOKEN=hunter2\n");
    let outside = root.parent().unwrap().join("outside.md");
    fs::write(&outside, "# Outside\ncanary\n").unwrap();
    std::os::unix::fs::symlink(&outside, root.join("link.md")).unwrap();
    for path in [
        "server.pem#Key",
        ".env#Env",
        "link.md#Outside",
        "docs/architecture.md#../../outside.md",
        ".git#config",
    ] {
        let r = read(&ctx, json!({"path": path})).await;
        assert!(
            r.is_error && r.content.contains("refused"),
            "{path}: {}",
            r.content
        );
        assert!(
            !r.content.contains("secret")
                && !r.content.contains("hunter2")
                && !r.content.contains("canary")
        );
        assert!(
            matches!(guard(&ctx, json!({"path": path})), Verdict::Deny(_)),
            "{path}"
        );
    }
    // As written, `server.pem#Key` matches no deny pattern: both refuse it for the file they
    // would open.
    assert!(ctx.sandbox.resolve("server.pem#Key", Access::Read).is_ok());
    assert_eq!(
        guard(&ctx, json!({"path": "docs/architecture.md#Data Model"})),
        Verdict::Allow
    );
}
