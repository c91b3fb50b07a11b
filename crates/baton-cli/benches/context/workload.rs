//! The story the benchmark's model plays, stage by stage: what each agent reads, writes and runs
//! on each of its turns. Every call is carried out by baton's real tools, so what comes back
//! into the conversation is what baton would send.
//!
//! What the agents read follows what their prompts tell them to, before and after the change
//! being measured:
//! - [`Reads::Whole`] (today's prompts): the scrum master reads the whole epics document, PRD and
//!   architecture to write one story; the developer reads the story and the whole architecture
//!   its Dev Notes cite; reviewers and QA read the story and the diff.
//! - [`Reads::Sections`]: the scrum master reads its story's and its epic's sections of the
//!   epics document, lists the headings of the PRD and the architecture and reads the sections
//!   the story needs; the developer reads the two architecture sections the Dev Notes cite
//!   (`architecture.md#Data Architecture`). Where baton's `read_file` takes a section (`path#
//!   Heading`, `outline: true`) the calls use it; otherwise the same bytes are read with
//!   `offset_line` and `max_lines`, and headings are listed with `grep`.

use super::documents::{self, ARCH_SECTIONS, PRD_SECTION, STORY};
use serde_json::{Value, json};

pub const PLANNING: &str = "_bmad-output/planning-artifacts";
pub const STORIES: &str = "_bmad-output/implementation-artifacts";

/// How the agents read the planning documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    /// Whole documents.
    Whole,
    /// Only the sections a step needs.
    Sections,
}

/// The stages of the story, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    Create,
    Dev,
    Review1,
    Fix,
    Review2,
    Qa,
}

impl Stage {
    pub const ALL: [Stage; 6] = [
        Stage::Create,
        Stage::Dev,
        Stage::Review1,
        Stage::Fix,
        Stage::Review2,
        Stage::Qa,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Stage::Create => "create (scrum master)",
            Stage::Dev => "dev (developer)",
            Stage::Review1 => "review 1, fails (reviewer)",
            Stage::Fix => "fix (developer)",
            Stage::Review2 => "review 2, passes (reviewer)",
            Stage::Qa => "QA (qa)",
        }
    }

    /// The stage a request is for, from its agent (the system prompt's first heading) and its
    /// task (the first user message).
    pub fn of(system: &str, task: &str) -> Option<Stage> {
        let heading = system
            .lines()
            .find_map(|l| l.strip_prefix("# "))
            .map(str::trim)?;
        Some(match heading {
            "Scrum master" => Stage::Create,
            "Developer" if task.contains("(mode: fix)") => Stage::Fix,
            "Developer" => Stage::Dev,
            "Reviewer" if task.contains("review round 1") => Stage::Review1,
            "Reviewer" => Stage::Review2,
            "QA" => Stage::Qa,
            _ => return None,
        })
    }
}

/// One turn of the model: its text and its tool calls (none: a final answer).
pub struct Turn {
    pub text: String,
    pub calls: Vec<(String, Value)>,
}

fn turn(text: &str, calls: Vec<(&str, Value)>) -> Turn {
    Turn {
        text: text.to_owned(),
        calls: calls.into_iter().map(|(n, a)| (n.to_owned(), a)).collect(),
    }
}

fn answer(text: &str) -> Turn {
    turn(text, Vec::new())
}

/// The documents, generated once.
pub struct Docs {
    pub prd: String,
    pub epics: String,
    pub architecture: String,
    pub story: String,
}

impl Docs {
    pub fn new() -> Docs {
        Docs {
            prd: documents::prd(),
            epics: documents::epics(),
            architecture: documents::architecture(),
            story: documents::story(),
        }
    }

    fn text(&self, name: &str) -> &str {
        match name {
            "prd.md" => &self.prd,
            "epics.md" => &self.epics,
            "architecture.md" => &self.architecture,
            other => panic!("no document {other}"),
        }
    }
}

/// What the tools of the request can do.
#[derive(Debug, Clone, Copy)]
pub struct Tools {
    /// `read_file` takes a section (`path#Heading`) and lists headings (`outline`).
    pub sections: bool,
}

impl Tools {
    /// Read from the `tools` of a request body.
    pub fn of(body: &Value) -> Tools {
        let read_file = body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["name"] == "read_file");
        let props = read_file.map(|t| &t["input_schema"]["properties"]);
        Tools {
            sections: props
                .is_some_and(|p| p.get("section").is_some() && p.get("outline").is_some()),
        }
    }
}

fn read(path: &str) -> (&'static str, Value) {
    ("read_file", json!({ "path": path }))
}

/// Reads one section of a planning document.
fn read_section(docs: &Docs, tools: Tools, file: &str, heading: &str) -> (&'static str, Value) {
    let path = format!("{PLANNING}/{file}");
    if tools.sections {
        return ("read_file", json!({ "path": format!("{path}#{heading}") }));
    }
    let (first, count) = documents::section_lines(docs.text(file), heading);
    (
        "read_file",
        json!({ "path": path, "offset_line": first, "max_lines": count }),
    )
}

/// Lists the headings of a planning document.
fn outline(tools: Tools, file: &str) -> (&'static str, Value) {
    let path = format!("{PLANNING}/{file}");
    if tools.sections {
        return ("read_file", json!({ "path": path, "outline": true }));
    }
    ("grep", json!({ "pattern": "^#{1,4} ", "path_glob": path }))
}

fn story_path() -> String {
    format!("{STORIES}/{}.md", documents::story_key())
}

fn run(file: &str) -> (&'static str, Value) {
    ("run_command", json!({ "program": "cat", "args": [file] }))
}

/// A test module of the `k`th task (≈ 1.5 KB).
fn test_source(k: usize) -> String {
    let mut s = format!(
        "//! Tests of task {k}: the pantry history's page {k}.\n\nuse larder::pantry::history::{{History, Change}};\n\n"
    );
    for t in 0..6 {
        s.push_str(&format!(
            "#[test]\nfn task_{k}_case_{t}_keeps_changes_in_order() {{\n    let mut h = History::default();\n    h.record(Change::added(\"rice\", {q}));\n    h.record(Change::used(\"rice\", {u}));\n    assert_eq!(h.quantity(\"rice\"), {r});\n    assert_eq!(h.page({k}, 20).len(), 2);\n}}\n\n",
            q = 10 + t,
            u = t,
            r = 10
        ));
    }
    s
}

/// The code of the `k`th task (≈ 2 KB).
fn code_source(k: usize) -> String {
    let mut s = format!(
        "//! The pantry history, part {k}: changes of an item's quantity, oldest first.\n\nuse std::collections::BTreeMap;\n\n// TODO(review {k}): cap the page size.\n\n/// One change of an item's quantity.\n#[derive(Debug, Clone, PartialEq)]\npub struct Change{k} {{\n    pub item: String,\n    pub delta: i64,\n    pub at: u64,\n}}\n\n"
    );
    for f in 0..5 {
        s.push_str(&format!(
            "/// Step {f} of part {k}: folds the changes into quantities per item.\npub fn fold_{k}_{f}(changes: &[Change{k}]) -> BTreeMap<String, i64> {{\n    let mut out = BTreeMap::new();\n    for c in changes {{\n        *out.entry(c.item.clone()).or_insert(0) += c.delta;\n    }}\n    out\n}}\n\n"
        ));
    }
    s
}

fn verdict(passed: bool, round: u32) -> String {
    let findings = if passed {
        json!([
            {"severity": "low", "file": "src/pantry/history_0.rs", "line": 3, "issue": "the module doc could name the ordering", "suggestion": "say oldest first"},
            {"severity": "low", "file": "tests/history_0.rs", "line": 1, "issue": "test names repeat the task number", "suggestion": "name the behaviour"},
            {"severity": "low", "file": "src/pantry/history_0.rs", "line": 12, "issue": "a helper could be private", "suggestion": "drop pub"}
        ])
    } else {
        json!([
            {"severity": "high", "file": "src/pantry/history_0.rs", "line": 5, "issue": "the page size is not capped (AC 4)", "suggestion": "cap it at 100"},
            {"severity": "low", "file": "tests/history_0.rs", "line": 1, "issue": "test names repeat the task number", "suggestion": "name the behaviour"},
            {"severity": "low", "file": "src/pantry/history_0.rs", "line": 12, "issue": "a helper could be private", "suggestion": "drop pub"}
        ])
    };
    let must_fix: Vec<&str> = if passed {
        Vec::new()
    } else {
        vec!["high: the page size is not capped (AC 4)"]
    };
    let block = json!({
        "passed": passed,
        "findings": findings,
        "must_fix": must_fix,
        "summary": format!("review round {round}: {}", if passed { "the criteria are met" } else { "one criterion is missing" }),
    });
    format!("I compared every task and criterion with the diff.\n\n```baton-review\n{block}\n```")
}

/// The turns of `stage`, with `dev_turns` model turns in the developer's dev step.
pub fn turns(
    stage: Stage,
    reads: Reads,
    dev_turns: usize,
    docs: &Docs,
    tools: Tools,
    base: Option<&str>,
) -> Vec<Turn> {
    let story = story_path();
    let diff = match base {
        Some(b) => ("run_git_diff", json!({ "base": b })),
        None => ("run_git_diff", json!({})),
    };
    let (e, s) = STORY;
    match (stage, reads) {
        (Stage::Create, Reads::Whole) => vec![
            turn(
                "I will read the planning documents.",
                vec![
                    read(&format!("{PLANNING}/epics.md")),
                    read(&format!("{PLANNING}/prd.md")),
                    read(&format!("{PLANNING}/architecture.md")),
                ],
            ),
            turn(
                "Writing the story.",
                vec![(
                    "write_file",
                    json!({ "path": story, "content": docs.story }),
                )],
            ),
            answer("The story file is written, ready for development."),
        ],
        (Stage::Create, Reads::Sections) => vec![
            turn(
                "I will read the story's sections and the documents' headings.",
                vec![
                    read_section(docs, tools, "epics.md", &documents::story_heading(e, s)),
                    read_section(docs, tools, "epics.md", &documents::epic_heading(e)),
                    outline(tools, "prd.md"),
                    outline(tools, "architecture.md"),
                ],
            ),
            turn(
                "Now the sections this story needs.",
                vec![
                    read_section(docs, tools, "prd.md", PRD_SECTION),
                    read_section(docs, tools, "architecture.md", ARCH_SECTIONS[0]),
                    read_section(docs, tools, "architecture.md", ARCH_SECTIONS[1]),
                ],
            ),
            turn(
                "Writing the story.",
                vec![(
                    "write_file",
                    json!({ "path": story, "content": docs.story }),
                )],
            ),
            answer("The story file is written, ready for development."),
        ],
        (Stage::Dev, _) => {
            let first = match reads {
                Reads::Whole => vec![read(&story), read(&format!("{PLANNING}/architecture.md"))],
                Reads::Sections => vec![
                    read(&story),
                    read_section(docs, tools, "architecture.md", ARCH_SECTIONS[0]),
                    read_section(docs, tools, "architecture.md", ARCH_SECTIONS[1]),
                ],
            };
            let mut out = vec![
                turn(
                    "I will read the story and the architecture it cites.",
                    first,
                ),
                turn("The starting state of the tests.", vec![run("ci/red.txt")]),
            ];
            // Red, green, per task: a test, its failing run, the code, its passing run.
            let mut i = 0;
            while out.len() < dev_turns.saturating_sub(2) {
                let k = i / 4;
                let step = match i % 4 {
                    0 => turn(
                        &format!("Task {k}: a failing test first."),
                        vec![(
                            "write_file",
                            json!({ "path": format!("tests/history_{k}.rs"), "content": test_source(k) }),
                        )],
                    ),
                    1 => turn("Run it: it must fail.", vec![run("ci/red.txt")]),
                    2 => turn(
                        &format!("Task {k}: the code."),
                        vec![(
                            "write_file",
                            json!({ "path": format!("src/pantry/history_{k}.rs"), "content": code_source(k) }),
                        )],
                    ),
                    _ => turn("The full suite.", vec![run("ci/green.txt")]),
                };
                out.push(step);
                i += 1;
            }
            out.push(turn(
                "The File List and the Change Log.",
                vec![(
                    "edit_file",
                    json!({ "path": story, "old_string": "### File List\n", "new_string": "### File List\n\n- src/pantry/history_0.rs\n- tests/history_0.rs\n" }),
                )],
            ));
            out.push(answer(
                "All tasks are done; `test result: ok. 12 passed; 0 failed`.",
            ));
            out.truncate(dev_turns.max(3));
            out
        }
        (Stage::Review1 | Stage::Review2, _) => vec![
            turn(
                "I will read the story and the diff.",
                vec![read(&story), diff],
            ),
            answer(&verdict(
                stage == Stage::Review2,
                if stage == Stage::Review1 { 1 } else { 2 },
            )),
        ],
        (Stage::Fix, _) => vec![
            turn("I will read the findings.", vec![read(&story)]),
            turn(
                "Capping the page size.",
                vec![(
                    "edit_file",
                    json!({ "path": "src/pantry/history_0.rs", "old_string": "// TODO(review 0): cap the page size.", "new_string": "/// Pages hold at most this many changes.\npub const MAX_PAGE: usize = 100;" }),
                )],
            ),
            turn("The full suite.", vec![run("ci/green.txt")]),
            answer("Resolved review finding: the page size is capped at 100."),
        ],
        (Stage::Qa, _) => vec![
            turn(
                "I will read the story and the diff.",
                vec![read(&story), diff],
            ),
            turn("Build and run the suite.", vec![run("ci/green.txt")]),
            answer(&format!(
                "| AC | verdict | evidence |\n|---|---|---|\n| 1–6 | PASS | `cat ci/green.txt`: test result: ok |\n\n{}",
                verdict(true, 3)
            )),
        ],
    }
}

/// A cargo test run's output, failing (`red`) or passing.
pub fn test_output(red: bool) -> String {
    let mut s = String::from(
        "   Compiling larder v0.1.0 (/work/larder)\n    Finished `test` profile [unoptimized + debuginfo] target(s) in 3.41s\n     Running unittests src/lib.rs (target/debug/deps/larder-5f1c2a)\n\nrunning 12 tests\n",
    );
    for t in 0..12 {
        let ok = !(red && t == 11);
        s.push_str(&format!(
            "test pantry::history::tests::case_{t} ... {}\n",
            if ok { "ok" } else { "FAILED" }
        ));
    }
    if red {
        s.push_str("\nfailures:\n\n---- pantry::history::tests::case_11 stdout ----\nthread 'pantry::history::tests::case_11' panicked at src/pantry/history.rs:41:9:\nassertion `left == right` failed\n  left: 0\n right: 2\n\nfailures:\n    pantry::history::tests::case_11\n\ntest result: FAILED. 11 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s\n");
    } else {
        s.push_str("\ntest result: ok. 12 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s\n");
    }
    s
}
