//! Create (and revise) a story file: the scrum master writes it from the planning documents.
//! Whether the file exists afterwards is a fact the next decision reads.
//!
//! The task names the story's own section of the epics document and its epic's, as `read_file`
//! reads BMad references (`epics.md#Story 2.1: Login`), so the scrum master reads a few
//! kilobytes instead of the whole epics document; a story the epics document does not have
//! falls back to the planning folder.

use super::{Settled, StageWork};
use crate::ctx::StoryCtx;
use crate::error::EngineError;
use crate::prompts;
use baton_agent::outcome::Outcome;
use baton_agent::tools::sections;
use baton_core::story::{StagePlan, StepOutcome};
use baton_store::bounded;
use baton_store::planning;
use std::path::Path;

/// The create and revise stages.
pub struct Create;

impl StageWork for Create {
    async fn task(&self, plan: &StagePlan, ctx: &StoryCtx) -> Result<String, EngineError> {
        let run = &ctx.run;
        let planning_dir = run.rel(&run.settings.planning_dir);
        let sources = match story_sections(&run.settings.planning_dir, &run.settings.root, &ctx.key)
        {
            Some(found) => prompts::render(
                prompts::CREATE_SECTIONS,
                &[
                    ("story_section", &found.story),
                    ("epic_section", &found.epic),
                    ("planning_dir", &planning_dir),
                ],
            ),
            None => prompts::render(
                prompts::CREATE_DOCUMENTS,
                &[("planning_dir", &planning_dir)],
            ),
        };
        Ok(prompts::render(
            prompts::CREATE,
            &[
                ("key", &ctx.key),
                ("mode", plan.mode),
                ("story_file", &ctx.rel(&ctx.story_path())),
                ("sources", &sources),
            ],
        ))
    }

    async fn settle(
        &self,
        _plan: &StagePlan,
        _outcome: &Outcome,
        _step: i64,
        _ctx: &StoryCtx,
    ) -> Result<Settled, EngineError> {
        Ok(Settled::of(StepOutcome::Completed))
    }
}

/// A story's sections of the epics document, as `file#Heading` references relative to the root.
#[derive(Debug, PartialEq, Eq)]
struct StorySections {
    /// The story's own heading (`### Story 2.1: Login`): its text and acceptance criteria.
    story: String,
    /// Its epic's heading: the epic's goal and its other stories.
    epic: String,
}

/// The sections of story `key` in the epics document of `planning_dir` (whole or sharded), or
/// `None` when there is no such document, it has no such story, or it cannot be read.
fn story_sections(planning_dir: &Path, root: &Path, key: &str) -> Option<StorySections> {
    let epics = planning::load(planning_dir, root).ok()?.epics?;
    let (epic, story) = epics
        .epics
        .iter()
        .find_map(|e| e.stories.iter().find(|s| s.key == key).map(|s| (e, s)))?;
    Some(StorySections {
        story: reference(root, &story.file, story.line)?,
        epic: reference(root, &epic.file, epic.line)?,
    })
}

/// `file#Heading` for the heading on `line` of `file`, named as `read_file` finds it (a
/// repeated heading, such as an epic listed in the Epic List before its own section, is
/// `Heading (2)`).
fn reference(root: &Path, file: &str, line: usize) -> Option<String> {
    let text = bounded::read_to_string(&root.join(file), bounded::DOCUMENT_LIMIT).ok()?;
    let doc = sections::parse(&text);
    let heading = doc.headings.iter().find(|h| h.line == line)?;
    Some(format!("{file}#{}", heading.name))
}

#[cfg(test)]
mod tests {
    use super::*;

    const EPICS: &str = "---\nstepsCompleted: [1, 2, 3, 4]\n---\n\n# shop - Epic Breakdown\n\n\
        ## Epic List\n\n### Epic 1: Accounts\nSign up and sign in.\n\n### Epic 2: Cart\nBuy.\n\n\
        ## Epic 1: Accounts\n\nSign up and sign in.\n\n### Story 1.1: Sign up\n\nAs a visitor…\n\n\
        **Acceptance Criteria:**\n\n**Given** a new email\n**When** I sign up\n**Then** I have an \
        account\n\n### Story 1.2: Sign in / out\n\nAs a member…\n\n## Epic 2: Cart\n\nBuy.\n\n\
        ### Story 2.1: Add to cart\n\nAs a shopper…\n";

    fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        for (rel, text) in files {
            let path = tmp.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        tmp
    }

    #[test]
    fn a_story_of_the_epics_names_its_section_and_its_epics_section() {
        let tmp = project(&[("_bmad-output/planning-artifacts/epics.md", EPICS)]);
        let planning = tmp.path().join("_bmad-output/planning-artifacts");
        let found = story_sections(&planning, tmp.path(), "1-2-sign-in-out").unwrap();
        // The epic is listed in the Epic List first: its own section is the second heading.
        assert_eq!(
            found,
            StorySections {
                story: "_bmad-output/planning-artifacts/epics.md#Story 1.2: Sign in / out".into(),
                epic: "_bmad-output/planning-artifacts/epics.md#Epic 1: Accounts (2)".into(),
            }
        );
        // What the references name is what the story needs, and no more.
        let doc = sections::parse(EPICS);
        let story = &doc.headings[doc.find("Story 1.2: Sign in / out").unwrap()];
        assert_eq!(
            &EPICS[story.bytes.clone()],
            "### Story 1.2: Sign in / out\n\nAs a member…\n\n"
        );
        let epic = &doc.headings[doc.find("Epic 1: Accounts (2)").unwrap()];
        assert!(EPICS[epic.bytes.clone()].contains("### Story 1.1: Sign up"));
        assert!(!EPICS[epic.bytes.clone()].contains("Add to cart"));

        assert_eq!(story_sections(&planning, tmp.path(), "3-1-nowhere"), None);
        assert_eq!(
            story_sections(&tmp.path().join("nope"), tmp.path(), "1-1-sign-up"),
            None
        );
    }

    /// The task tells the scrum master to use `read_file` as its schema says.
    #[test]
    fn the_task_names_read_files_own_arguments() {
        let tools = baton_agent::tools::Toolbox::standard();
        let spec = tools.get("read_file").unwrap().spec();
        assert_eq!(spec.parameters["properties"]["outline"]["type"], "boolean");
        for template in [prompts::CREATE_SECTIONS, prompts::CREATE_DOCUMENTS] {
            assert!(
                template.contains("`read_file` with `outline: true`"),
                "{template}"
            );
        }
        assert!(prompts::CREATE_SECTIONS.contains("`read_file` takes these paths as written"));
        assert!(spec.description.contains("works as the `path` as it is"));
    }

    #[test]
    fn a_sharded_epics_document_names_the_shard() {
        let tmp = project(&[
            (
                "plan/epics/index.md",
                "# Epics\n\n- [Epic 1](./epic-1-accounts.md)\n",
            ),
            (
                "plan/epics/epic-1-accounts.md",
                "## Epic 1: Accounts\n\n### Story 1.1: Sign up\n\nAs a visitor…\n",
            ),
        ]);
        let found = story_sections(&tmp.path().join("plan"), tmp.path(), "1-1-sign-up").unwrap();
        assert_eq!(
            found.story,
            "plan/epics/epic-1-accounts.md#Story 1.1: Sign up"
        );
        assert_eq!(found.epic, "plan/epics/epic-1-accounts.md#Epic 1: Accounts");
    }
}
