//! Reading by section end to end, on native agents replayed by the script provider: an agent
//! reads `architecture.md#Data Model` as BMad writes the reference and gets exactly that
//! section, a missing section answers with the document's headings, and the scrum master's task
//! names its story's section of the epics document, which it reads instead of the whole file.

use super::common::{Project, parse_json, s};
use super::sprint::{
    K1, STORIES, Script, Toml, baton, call, git, git_init, pass_verdict, re, sprint_json,
    sprint_project,
};
use serde_json::{Value, json};

/// A real-shaped BMad architecture document (front matter, fences with `#` lines, nested and
/// repeated headings, a setext appendix).
const ARCHITECTURE: &str = include_str!("../../../baton-agent/tests/fixtures/bmad/architecture.md");
const PLANNING: &str = "_bmad-output/planning-artifacts";

/// The lines of [`ARCHITECTURE`] from the line `from` to the line `to` (excluded).
fn between(from: &str, to: &str) -> &'static str {
    let start = ARCHITECTURE.find(&format!("\n{from}\n")).unwrap() + 1;
    let end = ARCHITECTURE.find(&format!("\n{to}\n")).unwrap() + 1;
    &ARCHITECTURE[start..end]
}

/// The `tool_result` records of the transcripts of a `--json` report's steps, in order.
fn tool_results(steps: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for step in steps {
        let path = s(step, "transcript");
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        out.extend(
            text.lines()
                .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
                .filter(|r| r["kind"] == "tool_result"),
        );
    }
    out
}

/// A project holding the architecture, and a scout that reads one section of it and answers.
fn scout_project(section: &str, answer_when: &str) -> Project {
    let p = Project::empty();
    p.write(&format!("{PLANNING}/architecture.md"), ARCHITECTURE);
    p.write(".baton/.gitignore", "*\n");
    Script::new()
        .turn(
            "scout",
            "^where is the section\\?$",
            "I read only the section I need.",
            vec![call(
                "read_file",
                json!({ "path": format!("{PLANNING}/architecture.md#{section}") }),
            )],
        )
        .turn("scout", answer_when, "Done reading (section-read).", vec![])
        .install(&p);
    git_init(&p);
    p
}

fn scout(p: &Project) -> Value {
    let run = baton(
        p,
        &[
            "team",
            "scout",
            "where is the section?",
            "--json",
            "--model",
            "script/t",
        ],
    )
    .expect_code(0);
    parse_json(&run)
}

#[test]
fn a_native_agent_reads_exactly_the_section_a_bmad_reference_names() {
    // The next turn answers only a result that starts with the heading and holds its tables.
    let p = scout_project("Data Model", "(?s)^## Data Model\n.*CREATE TABLE expenses");
    let out = scout(&p);
    let steps = out["report"]["steps"].as_array().expect("steps");
    assert_eq!(steps[0]["status"], "completed", "{out:#}");
    let results = tool_results(steps);
    assert_eq!(results.len(), 1, "{results:#?}");
    assert_eq!(results[0]["is_error"], false);
    let section = between(
        "## Data Model",
        "## Implementation Patterns & Consistency Rules",
    );
    assert_eq!(s(&results[0], "content"), section);
    assert!(section.len() * 4 < ARCHITECTURE.len());
}

#[test]
fn a_missing_section_answers_with_the_documents_headings() {
    let p = scout_project("Security Model", &re("has no heading `Security Model`"));
    let out = scout(&p);
    let steps = out["report"]["steps"].as_array().expect("steps");
    assert_eq!(steps[0]["status"], "completed", "{out:#}");
    let results = tool_results(steps);
    assert_eq!(results[0]["is_error"], true);
    let content = s(&results[0], "content");
    let mut lines = content.lines();
    assert_eq!(
        lines.next(),
        Some(
            "`_bmad-output/planning-artifacts/architecture.md` has no heading `Security Model`. \
             Pass one of these headings as `section`, as written here (38 of 38; level, line, \
             size):"
        )
    );
    let listed: Vec<&str> = lines.collect();
    assert_eq!(listed.len(), 38, "{content}");
    for heading in [
        "# Architecture Decision Document  [line 14, ",
        "## Data Model  [line ",
        "### ADR-003: Money as integer minor units  [line ",
        "#### Consequences (3)  [line ",
        "## Minor unit  [line ",
    ] {
        assert!(
            listed.iter().any(|l| l.starts_with(heading)),
            "{heading}\n{content}"
        );
    }
    assert!(!content.contains("CREATE TABLE"), "not the document");
}

const EPICS: &str = "---\nstepsCompleted: [1, 2, 3, 4]\n---\n\n# e2e - Epic Breakdown\n\n\
    ## Epic List\n\n### Epic 1: Letters\nThe first letters.\n\n### Epic 2: More letters\nMore.\n\n\
    ## Epic 1: Letters\n\nThe first letters.\n\n### Story 1.1: Alpha\n\nAs a reader, I want alpha, \
    so that I can start.\n\n**Acceptance Criteria:**\n\n**Given** nothing\n**When** I ask for \
    alpha\n**Then** `src/1-1-alpha.rs` exists\n\n### Story 1.2: Beta\n\nAs a reader, I want \
    beta.\n\n## Epic 2: More letters\n\nMore.\n\n### Story 2.1: Gamma\n\nAs a reader, I want \
    gamma.\n";

#[test]
fn the_scrum_master_reads_its_storys_section_of_the_epics() {
    let story_ref = format!("{PLANNING}/epics.md#Story 1.1: Alpha");
    let epic_ref = format!("{PLANNING}/epics.md#Epic 1: Letters (2)");
    let path = format!("{STORIES}/{K1}.md");
    let story = format!(
        "# Story 1.1: Alpha\n\nStatus: ready-for-dev\n\n## Story\n\nAs a reader, I want alpha, \
         so that I can start.\n\n## Acceptance Criteria\n\n1. `src/{K1}.rs` exists.\n\n\
         ## Tasks / Subtasks\n\n- [ ] Task 1: write it (AC: 1)\n\n## Dev Notes\n\n\
         ### References\n\n- [Source: {story_ref}]\n\n## Dev Agent Record\n\n\
         ### Agent Model Used\n\n### Completion Notes List\n\n### File List\n"
    );
    let script = Script::new()
        // The task names both sections; the scrum master reads its story's.
        .turn(
            "scrum-master",
            &format!(
                "{}.*{}",
                re(&format!("Create the story file for story `{K1}`")),
                re(&format!(
                    "Its acceptance criteria are in `{story_ref}` and its epic is `{epic_ref}`"
                ))
            ),
            "I read the story's section.",
            vec![call("read_file", json!({ "path": story_ref }))],
        )
        // Only the story's section (and not the next story) lets it write the file.
        .turn(
            "scrum-master",
            "(?s)^### Story 1\\.1: Alpha\n.*exists\n\n$",
            "I will write the story from its section.",
            vec![call(
                "write_file",
                json!({ "path": path, "content": story }),
            )],
        )
        .turn(
            "scrum-master",
            &re(&format!("to `{path}`")),
            &format!("Story `{K1}` is written to `{path}`."),
            vec![],
        )
        .develop(K1, true)
        .review(K1, 1, &pass_verdict("alpha meets its criteria"));
    let p = sprint_project(Toml::default(), &script);
    p.write(&format!("{PLANNING}/epics.md"), EPICS);
    git(p.root(), &["add", "-A"]);
    git(p.root(), &["commit", "-q", "-m", "epics"]);

    let (_, report, run) = sprint_json(&p, &["--stories", K1, "--yolo"], 0);
    assert_eq!(report["completed"], 1, "{report:#}\n{}", run.describe());
    // What the scrum master read is the story's section, a fraction of the epics document.
    let runs = p.root().join(".baton/runs");
    let mut read = Vec::new();
    for dir in std::fs::read_dir(runs).unwrap().flatten() {
        for f in std::fs::read_dir(dir.path()).unwrap().flatten() {
            let name = f.file_name().to_string_lossy().into_owned();
            if name.starts_with("scrum-master") && name.ends_with(".jsonl") {
                let text = std::fs::read_to_string(f.path()).unwrap();
                read.extend(
                    text.lines()
                        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
                        .filter(|r| r["kind"] == "tool_result" && r["name"] == "read_file")
                        .map(|r| s(&r, "content").to_owned()),
                );
            }
        }
    }
    let start = EPICS.find("### Story 1.1: Alpha").unwrap();
    let end = EPICS.find("### Story 1.2: Beta").unwrap();
    assert_eq!(read, [&EPICS[start..end]]);
}
