//! `baton plan` end to end with the script provider on real files: a tier-2 run from an idea to a
//! valid sprint file; a run killed after the PRD resumes at the architecture without rewriting
//! the brief or the PRD; standard mode stops after each artifact and the next agent reads the
//! user's edit; `--from` keeps the old artifact as a checkpoint; tier 0 takes the quick spec.

use super::common::{Project, SPRINT_REL};
use std::fs;
use std::process::Stdio;
use std::time::{Duration, Instant};

const PLANNING: &str = "_bmad-output/planning-artifacts";
pub(super) const IDEA: &str = "A command-line tool that counts the words and lines of a text";

const BRIEF: &str = "# Product Brief: tally\n\n## Vision\n\nCount text quickly.\n\n## Users\n\nWriters.\n\n## Constraints\n\nNone.\n\n## Success Metrics\n\nCounts match wc.\n\n## Out of Scope\n\nFiles.\n";
const PRD: &str = "# PRD: tally\n\n## Goals\n\nExact counts.\n\n## Functional Requirements\n\n- FR1: a user can count words\n- FR2: a user can count lines\n\n## Non-Functional Requirements\n\n- NFR1: counts a megabyte in under a second\n\n## User Journeys\n\nA writer counts a draft (FR1).\n\n## Out of Scope\n\nFiles.\n";
const ARCH: &str = "# Architecture: tally\n\n## Components\n\nOne module.\n\n## Data Model\n\nNone.\n\n## Interfaces\n\nFunctions.\n\n## Decisions\n\n### ADR-001: pure functions in one module\n\n## Requirements Coverage\n\nFR1 and FR2 by the module.\n";
const EPICS: &str = "# tally - Epic Breakdown\n\n## Requirements Inventory\n\nFR1, FR2, NFR1.\n\n## Epic List\n\n- Epic 1: Counting\n\n## Epic 1: Counting\n\n### Story 1.1: Count words\n\nAs a writer, I want word counts (FR1, NFR1, ADR-001).\n\n**Acceptance Criteria:**\n\n**Given** a text\n**When** I count its words\n**Then** I get the number\n\n### Story 1.2: Count lines\n\nAs a writer, I want line counts (FR2).\n\n**Given** a text\n**Then** I get its lines\n";
const READINESS: &str = "# Implementation Readiness Report: tally\n\n**Verdict:** PASS\n\nEverything is covered.\n\n## Documents Reviewed\n\nAll four.\n\n## Requirements Coverage\n\nComplete.\n\n## Epic and Story Quality\n\nGood.\n\n## Cross-Reference Findings\n\nNone.\n\n## Recommendation\n\nBuild.\n";
const SPEC: &str = "# Tech Spec: tally\n\n## Problem\n\nA typo.\n\n## Solution\n\nFix it.\n\n## Requirements\n\n- FR1: the typo in the help text is fixed\n\n## Files to Modify\n\n- src/main.rs\n\n## Tests\n\nThe help test.\n";
const SPEC_EPICS: &str = "# tally - Epic Breakdown\n\n## Requirements Inventory\n\nFR1.\n\n## Epic List\n\n- Epic 1: Fixes\n\n## Epic 1: Fixes\n\n### Story 1.1: Fix the help typo\n\nFR1.\n\n**Given** the help\n**Then** no typo\n";

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("      {l}\n"))
        .collect::<String>()
}

fn turn(agent: &str, pattern: &str, body: &str, delay_ms: u64) -> String {
    format!(
        "- agent: {agent}\n  match: '{pattern}'\n  repeat: true\n  delay_ms: {delay_ms}\n  text: |\n{}",
        indent(body)
    )
}

/// The planning script; `arch_match` is the architect's pattern, `arch_delay` its delay.
fn script(arch_match: &str, arch_delay: u64) -> String {
    [
        "turns:\n".to_owned(),
        turn("analyst", "^Write the product brief", BRIEF, 0),
        turn("pm", "^Write the product requirements", PRD, 0),
        turn("architect", arch_match, ARCH, arch_delay),
        turn("scrum-master", "^Write the epics", EPICS, 0),
        turn(
            "architect",
            "^Write the implementation readiness",
            READINESS,
            0,
        ),
        turn("architect", "^Write the quick technical spec", SPEC, 0),
        turn(
            "router",
            "^The user started",
            "Hello! Next comes the architecture.",
            0,
        ),
        turn(
            "bmad-master",
            "^The user started",
            "Hello! Next comes the architecture.",
            0,
        ),
    ]
    .concat()
}

pub(super) fn project(arch_match: &str, arch_delay: u64) -> Project {
    let p = Project::empty();
    p.write("baton.toml", "[agents]\nmodel = \"script/plan\"\n");
    p.write(".baton/scripts/plan.yaml", &script(arch_match, arch_delay));
    p
}

fn read(p: &Project, rel: &str) -> String {
    fs::read_to_string(p.root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn artifact(p: &Project, name: &str) -> String {
    read(p, &format!("{PLANNING}/{name}"))
}

fn readiness_reports(p: &Project) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(p.root().join(PLANNING))
        .map(|r| {
            r.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("implementation-readiness-report-"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn a_tier_2_run_goes_from_an_idea_to_a_valid_sprint_file() {
    let p = project("^Write the architecture document", 0);
    let run = p.ok(&["plan", IDEA, "--yolo"]);
    assert!(
        run.stdout.contains("Suggested tier 2 (low confidence)"),
        "{}",
        run.describe()
    );
    for step in [
        "brief",
        "prd",
        "architecture",
        "epics",
        "readiness",
        "sprint-planning",
    ] {
        assert!(
            run.stdout.contains(&format!("✓ {step}")),
            "{step}\n{}",
            run.describe()
        );
    }
    assert!(
        run.stdout.contains("The plan is complete"),
        "{}",
        run.describe()
    );
    for (name, kind) in [
        ("product-brief.md", "product-brief"),
        ("prd.md", "prd"),
        ("architecture.md", "architecture"),
        ("epics.md", "epics"),
    ] {
        let text = artifact(&p, name);
        assert!(
            text.starts_with("---\nstepsCompleted: [1, "),
            "{name}\n{text}"
        );
        assert!(
            text.contains(&format!("workflowType: '{kind}'\n")),
            "{name}\n{text}"
        );
        assert!(text.contains("inputDocuments: ["), "{name}\n{text}");
        assert!(text.contains("status: complete\n"), "{name}\n{text}");
    }
    assert!(
        artifact(&p, "architecture.md").contains(
            "inputDocuments: ['_bmad-output/planning-artifacts/product-brief.md', '_bmad-output/planning-artifacts/prd.md']"
        )
    );
    let reports = readiness_reports(&p);
    assert_eq!(reports.len(), 1, "{reports:?}");
    let report = artifact(&p, &reports[0]);
    assert!(report.contains("verdict: PASS\n"), "{report}");
    assert!(report.contains("| FR1 | 1.1 |"), "{report}");
    let sprint = read(&p, SPRINT_REL);
    assert!(
        sprint.contains("  epic-1: backlog\n  1-1-count-words: backlog\n  1-2-count-lines: backlog\n  epic-1-retrospective: optional\n"),
        "{sprint}"
    );
    p.ok(&["status", "--validate"]);
    // Sprint planning journaled each new key once.
    assert_eq!(p.log(&[]).len(), 4);
    // Nothing left to do: a second run changes no byte.
    let before = super::common::snapshot(&p.root().join("_bmad-output"));
    let again = p.ok(&["plan", "--continue", "--yolo"]);
    assert!(
        again.stdout.contains("The plan is complete"),
        "{}",
        again.describe()
    );
    assert_eq!(
        super::common::snapshot(&p.root().join("_bmad-output")),
        before
    );
}

#[test]
fn a_run_killed_after_the_prd_resumes_at_the_architecture() {
    // The architect answers only after a long delay: the kill lands while it is thinking.
    let p = project("^Write the architecture document", 600_000);
    let mut child = p
        .command(&["plan", IDEA, "--yolo"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn: {e}"));
    let prd = p.root().join(PLANNING).join("prd.md");
    let deadline = Instant::now() + Duration::from_secs(120);
    while !prd.is_file() {
        assert!(Instant::now() < deadline, "the PRD never appeared");
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the run ended before the kill: {status}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap_or_else(|e| panic!("kill: {e}"));
    let _ = child.wait();
    assert!(!p.root().join(PLANNING).join("architecture.md").exists());
    let brief_bytes = fs::read(p.root().join(PLANNING).join("product-brief.md"))
        .unwrap_or_else(|e| panic!("{e}"));
    let prd_bytes = fs::read(&prd).unwrap_or_else(|e| panic!("{e}"));
    // Same script, no delay now.
    p.write(
        ".baton/scripts/plan.yaml",
        &script("^Write the architecture document", 0),
    );
    let run = p.ok(&["plan", "--continue", "--yolo"]);
    let first = run.stdout.lines().find(|l| l.starts_with("✓ "));
    assert!(
        first.is_some_and(|l| l.starts_with("✓ architecture")),
        "{}",
        run.describe()
    );
    assert!(!run.stdout.contains("✓ brief"), "{}", run.describe());
    assert!(!run.stdout.contains("✓ prd"), "{}", run.describe());
    assert_eq!(
        fs::read(p.root().join(PLANNING).join("product-brief.md")).ok(),
        Some(brief_bytes)
    );
    assert_eq!(fs::read(&prd).ok(), Some(prd_bytes));
    p.ok(&["status", "--validate"]);
}

#[test]
fn standard_mode_stops_after_each_artifact_and_the_architect_reads_the_edit() {
    // The architect's turn answers only a request that carries the hand edit.
    let p = project("(?s)^Write the architecture document.*EDITED BY HAND", 0);
    let run = p.ok(&["plan", IDEA]);
    assert!(run.stdout.contains("✓ brief"), "{}", run.describe());
    assert!(
        run.stdout.contains("Stopped before the prd step"),
        "{}",
        run.describe()
    );
    assert!(!p.root().join(PLANNING).join("prd.md").exists());
    let run = p.ok(&["plan", "--continue"]);
    assert!(run.stdout.contains("✓ prd"), "{}", run.describe());
    assert!(
        run.stdout.contains("Stopped before the architecture step"),
        "{}",
        run.describe()
    );
    let prd = p.root().join(PLANNING).join("prd.md");
    let edited = format!(
        "{}\n- FR3: EDITED BY HAND, counts are printed as JSON\n",
        read(&p, &format!("{PLANNING}/prd.md")).trim_end()
    );
    fs::write(&prd, &edited).unwrap_or_else(|e| panic!("{e}"));
    let run = p.ok(&["plan", "--continue"]);
    assert!(run.stdout.contains("✓ architecture"), "{}", run.describe());
    assert!(
        run.stdout.contains("Stopped before the epics step"),
        "{}",
        run.describe()
    );
    // The edit stays: the PRD was complete and is not rewritten.
    assert_eq!(read(&p, &format!("{PLANNING}/prd.md")), edited);
}

#[test]
fn from_redoes_a_step_and_keeps_the_old_artifact() {
    let p = project("^Write the architecture document", 0);
    p.ok(&["plan", IDEA, "--yolo"]);
    let old = artifact(&p, "prd.md");
    fs::write(
        p.root().join(PLANNING).join("prd.md"),
        format!("{old}\nA note by hand.\n"),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let run = p.ok(&["plan", "--from", "prd", "--yolo"]);
    assert!(
        run.stdout
            .contains("Kept _bmad-output/planning-artifacts/prd.md as .baton/checkpoints/"),
        "{}",
        run.describe()
    );
    assert!(!run.stdout.contains("✓ brief"), "{}", run.describe());
    assert!(run.stdout.contains("✓ prd"), "{}", run.describe());
    assert!(!artifact(&p, "prd.md").contains("A note by hand."));
    let kept = super::common::snapshot(&p.root().join(".baton/checkpoints"));
    assert!(
        kept.values()
            .any(|b| String::from_utf8_lossy(b).contains("A note by hand.")),
        "no checkpoint holds the old PRD"
    );
    p.ok(&["status", "--validate"]);
}

#[test]
fn tier_0_takes_the_quick_spec_and_tier_override_is_printed() {
    let p = project("^Write the architecture document", 0);
    let scrum = turn("scrum-master", "^Write the epics", SPEC_EPICS, 0);
    let text = format!("{}{}", "turns:\n", scrum)
        + &script("^Write the architecture document", 0).replacen("turns:\n", "", 1);
    p.write(".baton/scripts/plan.yaml", &text);
    let run = p.ok(&["plan", "Fix the typo in the help text", "--yolo"]);
    assert!(
        run.stdout
            .contains("Suggested tier 0 (high confidence): \"fix\" → 0; \"typo\" → 0"),
        "{}",
        run.describe()
    );
    assert!(run.stdout.contains("✓ quick-spec"), "{}", run.describe());
    assert!(!run.stdout.contains("✓ brief"), "{}", run.describe());
    // Where BMad's quick flow keeps its spec: the implementation folder, named after the change.
    assert!(
        read(
            &p,
            "_bmad-output/implementation-artifacts/tech-spec-fix-the-typo-in-the-help-text.md"
        )
        .contains("workflowType: 'quick-spec'")
    );
    assert!(!p.root().join(PLANNING).join("tech-spec.md").exists());
    assert!(read(&p, SPRINT_REL).contains("1-1-fix-the-help-typo: backlog"));
    let q = project("^Write the architecture document", 0);
    let run = q.ok(&["plan", "Fix the typo", "--tier", "2"]);
    assert!(
        run.stdout.contains("Using tier 2 (--tier)."),
        "{}",
        run.describe()
    );
    assert!(run.stdout.contains("✓ brief"), "{}", run.describe());
}

#[test]
fn plan_without_an_idea_routes_from_the_files() {
    let p = project("^Write the architecture document", 0);
    let run = p.ok(&["chat"]);
    assert!(
        run.stdout.contains("Start with `baton plan"),
        "{}",
        run.describe()
    );
    p.ok(&["plan", IDEA]);
    let run = p.ok(&["plan"]);
    assert!(run.stdout.contains("✓ brief"), "{}", run.describe());
    assert!(
        run.stdout.contains("Next: the prd step"),
        "{}",
        run.describe()
    );
    assert!(
        run.stdout.contains("Hello! Next comes"),
        "{}",
        run.describe()
    );
    // YOLO takes the recommended path.
    let run = p.ok(&["plan", "--yolo"]);
    assert!(
        run.stdout.contains("YOLO: taking the recommended path."),
        "{}",
        run.describe()
    );
    assert!(
        run.stdout.contains("The plan is complete"),
        "{}",
        run.describe()
    );
}

#[test]
fn a_high_severity_finding_caps_the_readiness_verdict_at_concerns() {
    let p = project("^Write the architecture document", 0);
    // The scrum master forgets FR2: an orphan requirement, high severity.
    let epics = EPICS.replace("line counts (FR2)", "line counts");
    let text = script("^Write the architecture document", 0).replacen(
        "turns:\n",
        &format!(
            "turns:\n{}",
            turn("scrum-master", "^Write the epics", &epics, 0)
        ),
        1,
    );
    p.write(".baton/scripts/plan.yaml", &text);
    let run = p.ok(&["plan", IDEA, "--yolo"]);
    assert!(
        run.stdout
            .contains("verdict CONCERNS (CONDITIONAL GO), capped from PASS"),
        "{}",
        run.describe()
    );
    assert!(
        run.stdout.contains(
            "high    _bmad-output/planning-artifacts/prd.md:19  FR2 is covered by no story"
        ),
        "{}",
        run.describe()
    );
    let report = artifact(&p, &readiness_reports(&p)[0]);
    assert!(report.contains("verdict: CONCERNS\n"), "{report}");
    assert!(report.contains("| FR2 | **none (orphan)** |"), "{report}");
    // Tier 2: CONCERNS does not block sprint planning.
    p.ok(&["status", "--validate"]);
    p.run(&["check"]).expect_code(1);
}

#[test]
fn the_planning_demo_produces_the_plan_the_sprint_demo_builds() {
    let tmp = Project::empty();
    let dir = tmp.root().join("tally");
    let dir_s = dir.to_str().unwrap_or_else(|| panic!("UTF-8 temp path"));
    let mut cmd = tmp.command(&["demo", "--plan", "--dir", dir_s]);
    cmd.env("BATON_CONFIG_DIR", tmp.root().join("no-user-config"));
    let out = cmd.output().unwrap_or_else(|e| panic!("{e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for want in [
        "✓ brief",
        "✓ readiness",
        "verdict PASS (GO)",
        "✓ sprint-planning",
        "The plan is consistent: no findings.",
        "sprint --yolo",
    ] {
        assert!(stdout.contains(want), "missing {want:?}\n{stdout}");
    }
    // The generated queue is the one the recorded sprint session expects.
    let bundled = include_str!(
        "../../../../examples/tally/_bmad-output/implementation-artifacts/sprint-status.yaml"
    );
    let generated = fs::read_to_string(dir.join(SPRINT_REL)).unwrap_or_else(|e| panic!("{e}"));
    let queue = |t: &str| t.split("development_status:\n").nth(1).map(str::to_owned);
    assert_eq!(queue(&generated), queue(bundled), "{generated}");
    // Everything is committed.
    let status = std::process::Command::new("git")
        .arg("-C")
        .arg(&dir)
        .args(["status", "--porcelain"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(String::from_utf8_lossy(&status.stdout), "");
}

#[test]
fn the_idea_can_come_from_a_file_and_an_empty_one_is_refused() {
    let p = project("^Write the architecture document", 0);
    p.write("idea.md", "Fix the typo in the help text.\n");
    let idea = p.root().join("idea.md");
    let idea = idea.to_str().unwrap_or_else(|| panic!("UTF-8 temp path"));
    let run = p.ok(&["plan", "--idea-file", idea]);
    assert!(
        run.stdout.contains("Suggested tier 0"),
        "{}",
        run.describe()
    );
    assert!(run.stdout.contains("✓ quick-spec"), "{}", run.describe());
    assert!(
        run.stdout.contains("Stopped before the epics step"),
        "{}",
        run.describe()
    );
    let run = p.run(&["plan", "--from", "prd"]).expect_code(1);
    assert!(
        run.stderr.contains("tier 0 does not have a prd step"),
        "{}",
        run.describe()
    );
    p.write("empty.md", "  \n");
    let empty = p.root().join("empty.md");
    let run = p
        .run(&["plan", "--idea-file", empty.to_str().unwrap_or_default()])
        .expect_code(1);
    assert!(
        run.stderr.contains("the idea is empty"),
        "{}",
        run.describe()
    );
    let run = p.run(&["plan", "--from", "nowhere"]).expect_code(1);
    assert!(
        run.stderr.contains("unknown step `nowhere`"),
        "{}",
        run.describe()
    );
}

#[test]
fn a_large_brownfield_codebase_raises_the_suggested_tier() {
    let p = project("^Write the architecture document", 0);
    for i in 0..600 {
        p.write(&format!("src/m{i}.rs"), "pub fn f() {}\n");
    }
    let run = p.ok(&["plan", "Fix the typo in the help text"]);
    for want in [
        "Project: brownfield, 600 source files",
        "Suggested tier 1 (high confidence): \"fix\" → 0; \"typo\" → 0; brownfield, 600 source files → +1",
        "✓ quick-spec",
    ] {
        assert!(
            run.stdout.contains(want),
            "missing {want:?}\n{}",
            run.describe()
        );
    }
}

/// A planning step runs on the worker its role names: the product manager on a real Codex
/// against the loopback model, every other role on the script provider; Codex's answer is
/// checked as any model's is.
#[tokio::test(flavor = "multi_thread")]
async fn a_yolo_plan_checks_the_product_managers_answer_from_codex() {
    let Some(program) = super::cli_workers::installed(baton_agent::worker::cli::Cli::Codex) else {
        return;
    };
    let server = baton_test_support::MockServer::start().await;
    let p = project("^Write the architecture document", 0);
    p.write(
        "baton.toml",
        &format!(
            "[agents]\nmodel = \"script/plan\"\n\n[agents.roles]\npm = \"codex/gpt-5.5\"\n\n[cli.codex]\nprogram = {:?}\nbase_url = \"{}/v1\"\napi_key_env = \"PATH\"\nmax_retries = 0\n",
            program.display().to_string(),
            server.url()
        ),
    );
    let root = fs::canonicalize(p.root()).unwrap();
    server.respond_with(baton_test_support::scripted::responder(&root));
    p.ok(&["trust"]);
    // The mock model answers every task with one greeting, never a document: the product
    // manager's answer comes back from Codex, is checked like any model's, sent back once with
    // the reason, and not saved.
    let run = p.run(&["plan", IDEA, "--yolo"]);
    assert_eq!(run.code, Some(1), "{}", run.describe());
    assert!(
        run.stdout.contains(&format!(
            "pm answered twice with something that is not the product requirements document (PRD): it opens with `{}`",
            baton_test_support::scripted::HELLO
        )),
        "{}",
        run.describe()
    );
    let requests = server.requests();
    assert!(
        requests
            .iter()
            .any(|r| r.raw_body.contains("Write the product requirements")),
        "the product manager's task did not reach Codex"
    );
    assert!(
        requests
            .iter()
            .any(|r| r.raw_body.contains("Your previous answer was not saved")),
        "the retry did not reach Codex"
    );
    assert!(artifact(&p, "product-brief.md").contains("status: complete"));
    assert!(!p.root().join(PLANNING).join("prd.md").exists());
}

#[test]
fn a_chatty_answer_is_retried_with_the_reason_and_never_saved_as_complete() {
    let p = project("^Write the architecture document", 0);
    let chatty = format!(
        "Sure! I have drafted the brief below.\n\n{BRIEF}\nLet me know if you want changes!\n"
    );
    // Once chatty, then the document: the retry names what was wrong and the document is saved.
    let text = script("^Write the architecture document", 0).replacen(
        "turns:\n",
        &format!(
            "turns:\n{}{}",
            turn(
                "analyst",
                "previous answer was not saved: it opens with `Sure! I have drafted",
                BRIEF,
                0
            ),
            turn("analyst", "^Write the product brief", &chatty, 0)
        ),
        1,
    );
    p.write(".baton/scripts/plan.yaml", &text);
    let run = p.ok(&["plan", IDEA, "--yolo"]);
    let brief = artifact(&p, "product-brief.md");
    assert!(brief.contains("status: complete"), "{brief}");
    assert!(!brief.contains("Sure!"), "{brief}\n{}", run.describe());

    // Chatty every time: nothing is written, the plan fails and a human is asked.
    let p = project("^Write the architecture document", 0);
    let text = script("^Write the architecture document", 0).replacen(
        "turns:\n",
        &format!(
            "turns:\n{}",
            turn("analyst", "^Write the product brief", &chatty, 0)
        ),
        1,
    );
    p.write(".baton/scripts/plan.yaml", &text);
    let run = p.run(&["plan", IDEA, "--yolo"]);
    assert_ne!(run.code, Some(0), "{}", run.describe());
    assert!(
        run.stdout.contains("answered twice with something that is not the product brief: it opens with `Sure! I have drafted"),
        "{}",
        run.describe()
    );
    assert!(
        !p.root().join(PLANNING).join("product-brief.md").exists(),
        "a chatty brief was written"
    );
    let esc = p.ok(&["escalations", "--all"]);
    assert!(
        esc.stdout.contains("the brief step produced no document"),
        "{}",
        esc.describe()
    );
}

#[test]
fn completing_a_prd_bmad_began_keeps_its_step_file_names() {
    let p = project("^Write the architecture document", 0);
    p.write(
        &format!("{PLANNING}/product-brief.md"),
        &format!("---\nstatus: complete\n---\n{BRIEF}"),
    );
    p.write(
        &format!("{PLANNING}/prd.md"),
        "---\nstepsCompleted: [\"step-01-init.md\", \"step-02-discovery.md\"]\nworkflowType: 'prd'\n---\n# PRD: tally\n\n## Goals\n\nExact counts.\n",
    );
    let run = p.ok(&["plan", IDEA, "--yolo"]);
    let prd = artifact(&p, "prd.md");
    assert!(
        prd.contains(
            "stepsCompleted: ['step-01-init.md', 'step-02-discovery.md', 'step-12-complete.md']"
        ),
        "{prd}\n{}",
        run.describe()
    );
    let arch = artifact(&p, "architecture.md");
    assert!(
        arch.contains("stepsCompleted: [1, 2, 3, 4, 5, 6, 7, 8]"),
        "{arch}"
    );
}

#[test]
fn an_existing_bmad_quick_spec_in_the_implementation_folder_is_taken() {
    let p = project("^Write the architecture document", 0);
    let scrum = turn("scrum-master", "^Write the epics", SPEC_EPICS, 0);
    let text = format!("{}{}", "turns:\n", scrum)
        + &script("^Write the architecture document", 0).replacen("turns:\n", "", 1);
    p.write(".baton/scripts/plan.yaml", &text);
    let spec = "---\ntitle: 'Fix the help typo'\nslug: 'fix-help-typo'\nstatus: 'ready-for-dev'\nstepsCompleted: [1, 2, 3, 4]\n---\n\n# Tech-Spec: Fix the help typo\n\n## Requirements\n\n- FR1: the typo is gone\n";
    p.write(
        "_bmad-output/implementation-artifacts/tech-spec-fix-help-typo.md",
        spec,
    );
    let run = p.ok(&["plan", "Fix the typo in the help text", "--yolo"]);
    assert!(!run.stdout.contains("✓ quick-spec"), "{}", run.describe());
    assert_eq!(
        read(
            &p,
            "_bmad-output/implementation-artifacts/tech-spec-fix-help-typo.md"
        ),
        spec
    );
    assert!(read(&p, SPRINT_REL).contains("1-1-fix-the-help-typo: backlog"));
}
