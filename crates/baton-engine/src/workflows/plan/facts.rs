//! Reading the planning machine's facts from disk: where each artifact is, whether its
//! frontmatter checkpoint says it is complete, and the readiness verdict.
//!
//! An artifact is complete when its frontmatter `status` says so (`complete`, `done`, …), when
//! its `stepsCompleted` holds the workflow's final step (a step number at least the final one of
//! BMad's workflow, or a step-file name ending the workflow such as `step-12-complete.md`), or
//! when it has no checkpoint at all (a document the user wrote by hand). A `stepsCompleted` list
//! without the final step, or a `status` of `draft`/`in-progress`, is a started document. The
//! sprint-planning step is complete when `sprint-status.yaml` names every story of the epics.

use baton_core::plan::pipeline::{DocState, PlanFacts, PlanStep, Readiness};
use baton_store::frontmatter::{Document, StepRef};
use baton_store::planning::{self, PlanningDocs, names};
use baton_store::sprint_file::SprintDoc;
use std::path::{Path, PathBuf};

/// Where things are.
#[derive(Debug, Clone)]
pub struct Paths {
    /// The project root.
    pub root: PathBuf,
    /// The planning folder.
    pub planning: PathBuf,
    /// `sprint-status.yaml`.
    pub sprint_status: PathBuf,
    /// The story folder (BMad's implementation folder).
    pub stories: PathBuf,
    /// The slug of a new quick spec's name, `tech-spec-{slug}.md` (the idea's, as BMad's quick
    /// flow slugs its spec's title); the project folder's name when `None`.
    pub spec_slug: Option<String>,
}

/// The quick spec of tiers 0–1, where BMad's quick flow keeps it: `tech-spec-{slug}.md` in the
/// implementation folder (an existing one is taken, `tech-spec-wip.md` only when there is no
/// other, archived ones never); else a `tech-spec*.md` baton wrote in the planning folder;
/// else a new `tech-spec-{slug}.md` in the implementation folder.
fn quick_spec(paths: &Paths, docs: &PlanningDocs) -> PathBuf {
    let mut specs: Vec<String> = std::fs::read_dir(&paths.stories)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|n| n.starts_with("tech-spec-") && n.ends_with(".md") && !n.contains("-archived-"))
        .collect();
    specs.sort_by_key(|n| (n == "tech-spec-wip.md", n.clone()));
    if let Some(found) = specs.first() {
        return paths.stories.join(found);
    }
    if let Some(p) = &docs.quick_spec {
        return p.clone();
    }
    let slug = match &paths.spec_slug {
        Some(s) if !s.is_empty() => s.clone(),
        _ => baton_core::plan::bmad::slug(
            &paths
                .root
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "project".to_owned()),
        ),
    };
    paths.stories.join(format!("tech-spec-{slug}.md"))
}

/// The final step number of BMad's workflow for each artifact written in the integer dialect.
fn final_step(step: PlanStep) -> u32 {
    match step {
        PlanStep::Brief => 6,
        PlanStep::Architecture => 8,
        PlanStep::Epics => 4,
        PlanStep::Readiness => 6,
        PlanStep::QuickSpec => 4,
        PlanStep::Prd => 12,
        PlanStep::SprintPlanning => 1,
    }
}

/// The artifact `step` reads and writes: the one found in the planning folder, else the name
/// baton writes (the readiness report carries `date`).
pub fn artifact(paths: &Paths, docs: &PlanningDocs, step: PlanStep, date: &str) -> PathBuf {
    let dir = &paths.planning;
    match step {
        PlanStep::Brief => docs.brief.clone().unwrap_or_else(|| dir.join(names::BRIEF)),
        PlanStep::Prd => docs.prd.clone().unwrap_or_else(|| dir.join(names::PRD)),
        PlanStep::Architecture => docs
            .architecture
            .clone()
            .unwrap_or_else(|| dir.join(names::ARCHITECTURE)),
        PlanStep::Epics => docs.epics.clone().unwrap_or_else(|| dir.join(names::EPICS)),
        PlanStep::QuickSpec => quick_spec(paths, docs),
        PlanStep::Readiness => docs
            .readiness
            .last()
            .cloned()
            .unwrap_or_else(|| dir.join(format!("{}{date}.md", names::READINESS_PREFIX))),
        PlanStep::SprintPlanning => paths.sprint_status.clone(),
    }
}

/// A document's checkpoint and its `stepsCompleted`.
pub fn doc_state(step: PlanStep, path: &Path) -> (DocState, Vec<StepRef>) {
    if !path.is_file() {
        return (DocState::Missing, Vec::new());
    }
    let Ok(doc) = Document::load(path) else {
        // Unreadable frontmatter: the document is there, but not finished by any tool.
        return (DocState::Started, Vec::new());
    };
    let status: Option<String> = doc.get::<String>("status").ok().flatten();
    let steps = doc.steps_completed().unwrap_or_default();
    if let Some(s) = status.as_deref().map(str::to_lowercase) {
        if [
            "complete",
            "completed",
            "done",
            "final",
            "approved",
            "ready-for-dev",
        ]
        .contains(&s.as_str())
        {
            return (DocState::Complete, steps);
        }
        if ["draft", "in-progress", "wip", "started", "review"].contains(&s.as_str()) {
            return (DocState::Started, steps);
        }
    }
    if !doc.contains_key("stepsCompleted") {
        return (DocState::Complete, steps);
    }
    let done = steps.iter().any(|s| match s {
        StepRef::Int(n) => *n >= final_step(step),
        StepRef::Name(n) => {
            let n = n.to_lowercase();
            n.contains("complete") || n.contains("final")
        }
    });
    if done {
        (DocState::Complete, steps)
    } else {
        (DocState::Started, steps)
    }
}

/// The verdict of a readiness report: its frontmatter `verdict`, else the body's verdict line.
pub fn verdict(path: &Path) -> Option<Readiness> {
    let doc = Document::load(path).ok()?;
    if let Some(v) = doc.get::<String>("verdict").ok().flatten()
        && let Some(r) = Readiness::find(&format!("verdict: {v}"))
    {
        return Some(r);
    }
    Readiness::find(doc.body())
}

/// Whether `sprint-status.yaml` names every story of the epics document.
fn sprint_complete(paths: &Paths) -> bool {
    let Ok(plan) = planning::load(&paths.planning, &paths.root) else {
        return false;
    };
    let Some(epics) = plan.epics else {
        return false;
    };
    let Ok(sprint) = SprintDoc::load(&paths.sprint_status) else {
        return false;
    };
    !epics.epics.is_empty()
        && epics
            .stories()
            .all(|(_, s)| sprint.sprint().get(&s.key).is_some())
}

/// The facts for `decide`.
pub fn load(paths: &Paths, tier: u8, yolo: bool, ran: usize, date: &str) -> PlanFacts {
    let docs = planning::find(&paths.planning);
    let mut facts = PlanFacts {
        tier,
        docs: Vec::new(),
        readiness: None,
        yolo,
        ran,
    };
    for step in PlanStep::ALL {
        let state = if step == PlanStep::SprintPlanning {
            if sprint_complete(paths) {
                DocState::Complete
            } else {
                DocState::Missing
            }
        } else {
            doc_state(step, &artifact(paths, &docs, step, date)).0
        };
        if step == PlanStep::Readiness && state == DocState::Complete {
            facts.readiness = verdict(&artifact(paths, &docs, step, date));
        }
        facts.docs.push((step, state));
    }
    facts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoints_in_both_dialects() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let p = dir.path().join("doc.md");
        let cases: &[(&str, PlanStep, DocState)] = &[
            ("# hand written\n", PlanStep::Prd, DocState::Complete),
            (
                "---\nstatus: complete\n---\n# x\n",
                PlanStep::Prd,
                DocState::Complete,
            ),
            (
                "---\nstatus: draft\n---\n# x\n",
                PlanStep::Prd,
                DocState::Started,
            ),
            (
                "---\nstepsCompleted: [\"step-01-init.md\", \"step-02-discovery.md\"]\n---\n",
                PlanStep::Prd,
                DocState::Started,
            ),
            (
                "---\nstepsCompleted: [\"step-01-init.md\", \"step-12-complete.md\"]\n---\n",
                PlanStep::Prd,
                DocState::Complete,
            ),
            (
                "---\nstepsCompleted: [1, 2, 3]\n---\n",
                PlanStep::Architecture,
                DocState::Started,
            ),
            (
                "---\nstepsCompleted: [1, 2, 3, 4]\n---\n",
                PlanStep::Epics,
                DocState::Complete,
            ),
            (
                "---\ninputDocuments: []\n---\n",
                PlanStep::Epics,
                DocState::Complete,
            ),
        ];
        for (text, step, want) in cases {
            std::fs::write(&p, text).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(doc_state(*step, &p).0, *want, "{text}");
        }
        assert_eq!(
            doc_state(PlanStep::Prd, &dir.path().join("none.md")).0,
            DocState::Missing
        );
    }

    #[test]
    fn verdict_from_frontmatter_or_body() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let p = dir.path().join("r.md");
        std::fs::write(&p, "---\nverdict: CONCERNS\n---\n**Verdict:** PASS\n")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(verdict(&p), Some(Readiness::Concerns));
        std::fs::write(&p, "# r\n\n**Verdict:** FAIL\n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(verdict(&p), Some(Readiness::Fail));
    }
}
