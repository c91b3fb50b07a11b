//! The planning commands on real files: `baton check` finds each kind of inconsistency with its
//! file and line and nothing on an aligned plan; `baton sprint-plan` creates the sprint file from
//! the epics, and on an existing one keeps every status, comment and unknown key and appends only
//! the new stories.

use super::common::{Project, SPRINT_REL, parse_json, sprint};

const PLANNING: &str = "_bmad-output/planning-artifacts";

const PRD: &str = "---
stepsCompleted: [1]
workflowType: 'prd'
---
# PRD

## Functional Requirements

- FR1: count words
- FR2: count lines
- FR3: print a summary
";

const ARCH: &str = "# Architecture

## Decisions

### ADR-001: pure functions in their own module
### ADR-002: no dependencies
";

const ALIGNED: &str = "# Epics

## Epic 1: Counting

### Story 1.1: Count words

Covers FR1 under ADR-001.

**Acceptance Criteria:**

**Given** a text
**When** I count its words
**Then** I get the count

### Story 1.2: Count lines

Covers FR2 (ADR-002).

**Given** a text
**Then** I get its line count

## Epic 2: Reporting

### Story 2.1: Summary line

Covers FR3.

**Given** a text
**Then** the summary reads words=N lines=M
";

/// The aligned plan with four defects: FR3 orphaned, FR9 dangling, ADR-002 unreferenced,
/// story 1.2 without acceptance criteria.
const BROKEN: &str = "# Epics

## Epic 1: Counting

### Story 1.1: Count words

Covers FR1 under ADR-001.

**Given** a text
**Then** I get the count

### Story 1.2: Count lines

Covers FR2.

## Epic 2: Reporting

### Story 2.1: Summary line

Covers FR9.

**Given** a text
**Then** the summary reads words=N lines=M
";

fn plan(epics: &str) -> Project {
    let p = Project::empty();
    p.write(&format!("{PLANNING}/prd.md"), PRD);
    p.write(&format!("{PLANNING}/architecture.md"), ARCH);
    p.write(&format!("{PLANNING}/epics.md"), epics);
    p
}

#[test]
fn check_reports_each_problem_with_file_and_line() {
    let p = plan(BROKEN);
    let run = p.run(&["check"]).expect_code(1);
    for want in [
        "high    _bmad-output/planning-artifacts/prd.md:11  FR3 is covered by no story",
        "high    _bmad-output/planning-artifacts/epics.md:20  story 2.1 cites FR9, which the PRD does not define",
        "medium  _bmad-output/planning-artifacts/epics.md:12  story 1.2 (Count lines) of epic 1 has no acceptance criteria",
        "low     _bmad-output/planning-artifacts/architecture.md:6  ADR-002 is referenced by no story",
    ] {
        assert!(
            run.stdout.contains(want),
            "missing {want:?}\n{}",
            run.describe()
        );
    }
    let json = parse_json(&p.run(&["check", "--json"]).expect_code(1));
    let kinds: Vec<&str> = json["findings"]
        .as_array()
        .map(|a| a.iter().filter_map(|f| f["kind"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        kinds,
        [
            "dangling-reference",
            "orphan-requirement",
            "no-acceptance-criteria",
            "unreferenced-decision"
        ],
        "sorted by severity, then file"
    );
    assert_eq!(json["high"], 2);
}

#[test]
fn check_on_an_aligned_plan_finds_nothing() {
    let p = plan(ALIGNED);
    let run = p.ok(&["check"]);
    assert!(run.stdout.contains("no findings"), "{}", run.describe());
    let json = parse_json(&p.ok(&["check", "--json"]));
    assert_eq!(json["findings"].as_array().map(Vec::len), Some(0));
}

#[test]
fn check_without_epics_says_where_it_looked() {
    let p = Project::empty();
    let run = p.run(&["check"]).expect_code(1);
    assert!(
        run.stderr
            .contains("no epics document in `_bmad-output/planning-artifacts`"),
        "{}",
        run.describe()
    );
}

#[test]
fn sprint_plan_creates_a_valid_sprint_file() {
    let p = plan(ALIGNED);
    let run = p.ok(&["sprint-plan"]);
    assert!(run.stdout.contains("Created"), "{}", run.describe());
    let text = p.read_sprint();
    assert!(
        text.ends_with(
            "development_status:\n  epic-1: backlog\n  1-1-count-words: backlog\n  1-2-count-lines: backlog\n  epic-1-retrospective: optional\n\n  epic-2: backlog\n  2-1-summary-line: backlog\n  epic-2-retrospective: optional\n"
        ),
        "{text}"
    );
    p.ok(&["status", "--validate"]);
}

#[test]
fn sprint_plan_keeps_progress_and_comments_and_appends_new_stories() {
    let before = sprint(
        "  # epic one is under way\n  epic-1: in-progress\n  1-1-count-words: done  # shipped\n  1-2-count-lines: in-progress  # baton: needs-intervention (max review rounds)\n  epic-1-retrospective: optional\n\n  9-9-dropped-story: review\n",
    );
    let p = Project::with_sprint(&before);
    p.write(&format!("{PLANNING}/prd.md"), PRD);
    let more = format!(
        "{ALIGNED}\n### Story 2.2: Summary as JSON\n\nCovers FR3.\n\n**Given** a text\n**Then** JSON\n"
    );
    p.write(&format!("{PLANNING}/epics.md"), &more);
    let run = p.ok(&["sprint-plan"]);
    assert!(
        run.stdout.contains("? 9-9-dropped-story: review"),
        "{}",
        run.describe()
    );
    let after = p.read_sprint();
    let expected_body = "  # epic one is under way\n  epic-1: in-progress\n  1-1-count-words: done  # shipped\n  1-2-count-lines: in-progress  # baton: needs-intervention (max review rounds)\n  epic-1-retrospective: optional\n\n  9-9-dropped-story: review\n\n  epic-2: backlog\n  2-1-summary-line: backlog\n  2-2-summary-as-json: backlog\n  epic-2-retrospective: optional\n";
    let before_lines: Vec<&str> = before.lines().collect();
    let after_lines: Vec<&str> = after.lines().collect();
    for l in &before_lines {
        if !l.starts_with("last_updated:") {
            assert!(after_lines.contains(l), "line {l:?} lost\n{after}");
        }
    }
    assert!(after.ends_with(expected_body), "{after}");
    // Each added key is journaled once, as a change by the orchestrator.
    let log = p.log(&[]);
    let added: Vec<&str> = log.iter().filter_map(|e| e["key"].as_str()).collect();
    assert_eq!(
        added,
        [
            "epic-2",
            "2-1-summary-line",
            "2-2-summary-as-json",
            "epic-2-retrospective"
        ],
        "{log:?}"
    );
    // Sprint planning again: in sync, nothing added.
    let again = p.ok(&["sprint-plan"]);
    assert!(again.stdout.contains("in sync"), "{}", again.describe());
    // A story file floors its story at ready-for-dev.
    p.write(
        "_bmad-output/implementation-artifacts/2-1-summary-line.md",
        "# Story 2.1: Summary line\n\nStatus: ready-for-dev\n",
    );
    let run = p.ok(&["sprint-plan", "--json"]);
    let json = parse_json(&run);
    assert_eq!(json["raised"][0][0], "2-1-summary-line");
    assert!(
        p.read_sprint()
            .contains("  2-1-summary-line: ready-for-dev\n")
    );
}

#[test]
fn a_sharded_epics_document_is_checked_and_planned_shard_by_shard() {
    let p = Project::empty();
    p.write(&format!("{PLANNING}/prd.md"), PRD);
    p.write(
        &format!("{PLANNING}/epics/index.md"),
        "# Epics\n\n## Epic List\n\n### Epic 1: Counting\n### Epic 2: Reporting\n",
    );
    p.write(
        &format!("{PLANNING}/epics/epic-1.md"),
        "## Epic 1: Counting\n\n### Story 1.1: Count words\n\nFR1 FR2\n\n**Given** a text\n**Then** counts\n",
    );
    p.write(
        &format!("{PLANNING}/epics/epic-2.md"),
        "## Epic 2: Reporting\n\n### Story 2.1: Summary line\n\nFR3\n",
    );
    let run = p.run(&["check"]).expect_code(0);
    assert!(
        run.stdout.contains(
            "medium  _bmad-output/planning-artifacts/epics/epic-2.md:3  story 2.1 (Summary line) of epic 2 has no acceptance criteria"
        ),
        "{}",
        run.describe()
    );
    p.ok(&["sprint-plan"]);
    assert!(p.read_sprint().ends_with(
        "  epic-1: backlog\n  1-1-count-words: backlog\n  epic-1-retrospective: optional\n\n  epic-2: backlog\n  2-1-summary-line: backlog\n  epic-2-retrospective: optional\n"
    ));
}

#[test]
fn a_renamed_story_keeps_its_key_and_status_and_is_never_queued_again() {
    let p = Project::empty();
    p.write(
        &format!("{PLANNING}/epics.md"),
        "## Epic 1: Login\n### Story 1.1: Log in\n### Story 1.2: Log out\n",
    );
    p.ok(&["sprint-plan"]);
    p.write(
        SPRINT_REL,
        &p.read_sprint()
            .replace("1-1-log-in: backlog", "1-1-log-in: done")
            .replace("epic-1: backlog", "epic-1: in-progress"),
    );
    // The titles are translated: the stories are the same, numbered as before.
    p.write(
        &format!("{PLANNING}/epics.md"),
        "## Epic 1: Anmeldung\n### Story 1.1: Anmelden\n### Story 1.2: Abmelden\n### Story 1.3: Passwort\n",
    );
    let run = p.ok(&["sprint-plan", "--json"]);
    let report = parse_json(&run);
    assert_eq!(
        report["renamed"],
        serde_json::json!([
            ["1-1-log-in", "1-1-anmelden"],
            ["1-2-log-out", "1-2-abmelden"]
        ]),
        "{}",
        run.describe()
    );
    assert_eq!(
        report["orphans"],
        serde_json::json!([]),
        "{}",
        run.describe()
    );
    let text = p.read_sprint();
    assert!(text.contains("  1-1-log-in: done\n"), "{text}");
    assert!(!text.contains("anmelden"), "{text}");
    assert!(
        text.contains("  1-2-log-out: backlog\n  1-3-passwort: backlog\n"),
        "{text}"
    );
    let next = p.status_json()["next"].clone();
    assert_eq!(next["key"], "1-2-log-out", "{next}");
    let human = p.ok(&["sprint-plan"]);
    assert!(
        human
            .stdout
            .contains("~ 1-1-log-in (now titled as 1-1-anmelden)"),
        "{}",
        human.describe()
    );
}

#[test]
fn repeated_story_headings_are_planned_once_and_named_with_their_lines() {
    let p = Project::empty();
    p.write(
        &format!("{PLANNING}/epics.md"),
        "## Epic 1: A\n### Story 1.1: Same\n### Story 1.1: Same\n### Story 1.2: Next\n### Story 1.1: Same\n",
    );
    let run = p.ok(&["sprint-plan"]);
    let text = p.read_sprint();
    assert_eq!(text.matches("1-1-same:").count(), 1, "{text}");
    assert!(
        run.stdout.contains(
            "_bmad-output/planning-artifacts/epics.md:3: story `1-1-same` is written twice (first at _bmad-output/planning-artifacts/epics.md:2)"
        ),
        "{}",
        run.describe()
    );
    p.ok(&["status", "--validate"]);
}

#[test]
fn epics_are_planned_in_number_order_and_new_stories_where_the_epics_put_them() {
    let p = Project::empty();
    p.write(
        &format!("{PLANNING}/epics.md"),
        "## Epic 1: A\n### Story 1.1: First\n### Story 1.3: Third\n\n## Epic 3: C\n### Story 3.1: X\n\n## Epic 0: Zero\n### Story 0.1: Prep\n",
    );
    p.ok(&["sprint-plan"]);
    let body = |t: &str| t[t.find("development_status:").unwrap_or(0)..].to_owned();
    assert_eq!(
        body(&p.read_sprint()),
        "development_status:\n  epic-0: backlog\n  0-1-prep: backlog\n  epic-0-retrospective: optional\n\n  epic-1: backlog\n  1-1-first: backlog\n  1-3-third: backlog\n  epic-1-retrospective: optional\n\n  epic-3: backlog\n  3-1-x: backlog\n  epic-3-retrospective: optional\n"
    );
    p.write(
        &format!("{PLANNING}/epics.md"),
        "## Epic 1: A\n### Story 1.1: First\n### Story 1.2: Second\n### Story 1.3: Third\n\n## Epic 2: B\n### Story 2.1: Y\n\n## Epic 3: C\n### Story 3.1: X\n\n## Epic 0: Zero\n### Story 0.1: Prep\n",
    );
    p.ok(&["sprint-plan"]);
    assert_eq!(
        body(&p.read_sprint()),
        "development_status:\n  epic-0: backlog\n  0-1-prep: backlog\n  epic-0-retrospective: optional\n\n  epic-1: backlog\n  1-1-first: backlog\n  1-2-second: backlog\n  1-3-third: backlog\n  epic-1-retrospective: optional\n\n  epic-2: backlog\n  2-1-y: backlog\n  epic-2-retrospective: optional\n\n  epic-3: backlog\n  3-1-x: backlog\n  epic-3-retrospective: optional\n"
    );
}

#[test]
fn story_keys_are_derived_as_bmad_derives_them() {
    let p = Project::empty();
    p.write(
        &format!("{PLANNING}/epics.md"),
        "## Epic 1: Scripts\n### Story 1.1: हिन्दी पाठ\n### Story 1.2: বাংলা\n### Story 1.3: தமிழ்\n### Story 1.4: →★←\n### Story 1.5: C#\n### Story 1.6: ###\n",
    );
    p.ok(&["sprint-plan"]);
    let keys: Vec<String> = p
        .statuses()
        .into_keys()
        .filter(|k| k.starts_with("1-"))
        .collect();
    // Keys printed by BMad 6.12's sprint_plan.py for the same headings.
    assert_eq!(
        keys,
        [
            "1-1-ह-न-द-प-ठ",
            "1-2-ব-ল",
            "1-3-தம-ழ",
            "1-4-aaa4bb9d",
            "1-5-c",
            "1-6-e3b0c442"
        ]
    );
}

#[test]
fn dotted_requirement_ids_are_checked_one_by_one() {
    let p = Project::empty();
    p.write(
        &format!("{PLANNING}/prd.md"),
        "# PRD\n\n## Functional Requirements\n\n- FR-1.1: sign up\n- FR-1.2: log in\n- FR-1.3: log out\n",
    );
    p.write(
        &format!("{PLANNING}/epics.md"),
        "## Epic 1: Accounts\n\n### Story 1.1: Sign up\n\nCovers FR-1.1.\n\n**Given** x\n**Then** y\n\n### Story 1.2: Log in\n\nCovers FR-1.2.\n\n**Given** x\n**Then** y\n",
    );
    let run = p.run(&["check", "--json"]);
    let out = run.stdout.clone();
    assert!(
        out.contains("FR1.3 is covered by no story"),
        "{}",
        run.describe()
    );
    assert!(
        !out.contains("FR1.1 is covered by no story"),
        "{}",
        run.describe()
    );
    assert!(
        !out.contains("FR1.2 is covered by no story"),
        "{}",
        run.describe()
    );
}
