//! Sprint settings: the one place where `baton.toml`'s `[sprint]` values and the command's flags
//! become the values a sprint runs with, defaults included.

use baton_core::dispatch::DispatchOptions;
use baton_core::status::Status;
use std::path::PathBuf;
use std::time::Duration;

/// Longest any configured duration may be (about a century): larger values are clamped, so no
/// deadline arithmetic can overflow.
const MAX_SECS: u64 = 100 * 365 * 24 * 3600;

/// The sprint's settings as configured, every value optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SprintOptions {
    /// Stories per run (default 3).
    pub batch: Option<usize>,
    /// Stories in flight at once, each in its own worktree (default 1: one at a time, in the
    /// project's own tree).
    pub parallel: Option<usize>,
    /// Explicit stories, in this order.
    pub stories: Option<Vec<String>>,
    /// Review each story document before development (default off).
    pub story_review: Option<bool>,
    /// Verify each reviewed story end to end (default off).
    pub qa: Option<bool>,
    /// Fix rounds before escalating (default 3).
    pub max_review_rounds: Option<u32>,
    /// Findings a code review must report (default 3).
    pub min_findings: Option<usize>,
    /// The project's test command, program and arguments (default none).
    pub test_command: Option<Vec<String>>,
    /// Timeout of one test run in seconds (default 900).
    pub test_timeout_secs: Option<u64>,
    /// Statuses a story enters only after a human confirms, in standard mode (default `done`).
    pub checkpoints: Option<Vec<String>>,
    /// Timeout of one story in seconds (default 7200).
    pub story_timeout_secs: Option<u64>,
    /// Timeout of the whole run in seconds (default 28800).
    pub run_timeout_secs: Option<u64>,
    /// Hold an epic's retrospective when its last story is done (default off).
    pub retrospective: Option<bool>,
    /// Run even with uncommitted changes in the tree.
    pub allow_dirty: bool,
}

/// Settings of a sprint run, resolved.
#[derive(Debug, Clone)]
pub struct SprintSettings {
    /// Project root (a git work tree).
    pub root: PathBuf,
    /// Story directory.
    pub stories_dir: PathBuf,
    /// Planning directory.
    pub planning_dir: PathBuf,
    /// The append-only escalation log (`_bmad-output/escalations.log`).
    pub escalations_log: PathBuf,
    /// Stories per run.
    pub batch: usize,
    /// Stories in flight at once (1: one at a time in the main tree; more: each in its own
    /// worktree, merged through the merge lane).
    pub parallel: usize,
    /// Explicit stories, in this order.
    pub stories: Option<Vec<String>>,
    /// Story-document review and QA stages.
    pub dispatch: DispatchOptions,
    /// Fix rounds before escalating.
    pub max_review_rounds: u32,
    /// Findings a review must report.
    pub min_findings: usize,
    /// The project's test command (program and arguments); `None` skips the check.
    pub test_command: Option<Vec<String>>,
    /// Timeout of one test run.
    pub test_timeout: Duration,
    /// Statuses a story may only enter after a human confirms (standard mode).
    pub checkpoints: Vec<Status>,
    /// Timeout of one story.
    pub story_timeout: Duration,
    /// Timeout of the whole run.
    pub run_timeout: Duration,
    /// Times a story may enter the same status before it is a loop.
    pub loop_limit: u32,
    /// Hold an epic's retrospective (scrum master) when its last story is done.
    pub retrospective: bool,
    /// Run even with uncommitted changes in the tree.
    pub allow_dirty: bool,
}

/// A setting that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`[sprint] {key}`: {message}")]
pub struct SettingsError {
    /// The key.
    pub key: &'static str,
    /// What is wrong.
    pub message: String,
}

fn secs(v: Option<u64>, default: u64) -> Duration {
    Duration::from_secs(v.unwrap_or(default).min(MAX_SECS))
}

impl SprintSettings {
    /// Resolves `opts` for the project at `root`, with its story and planning directories.
    pub fn resolve(
        root: PathBuf,
        stories_dir: PathBuf,
        planning_dir: PathBuf,
        opts: SprintOptions,
    ) -> Result<SprintSettings, SettingsError> {
        let checkpoints = opts
            .checkpoints
            .clone()
            .unwrap_or_else(|| vec!["done".into()])
            .iter()
            .map(|c| {
                Status::parse(c).ok_or_else(|| SettingsError {
                    key: "checkpoints",
                    message: format!("unknown status `{c}`"),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SprintSettings {
            escalations_log: root.join("_bmad-output").join("escalations.log"),
            root,
            stories_dir,
            planning_dir,
            batch: opts.batch.unwrap_or(3).max(1),
            parallel: opts.parallel.unwrap_or(1).max(1),
            stories: opts.stories,
            dispatch: DispatchOptions {
                story_review: opts.story_review.unwrap_or(false),
                qa: opts.qa.unwrap_or(false),
            },
            max_review_rounds: opts.max_review_rounds.unwrap_or(3),
            min_findings: opts.min_findings.unwrap_or(3),
            test_command: opts.test_command.filter(|c| !c.is_empty()),
            test_timeout: secs(opts.test_timeout_secs, 900),
            checkpoints,
            story_timeout: secs(opts.story_timeout_secs, 7200),
            run_timeout: secs(opts.run_timeout_secs, 28_800),
            loop_limit: 5,
            retrospective: opts.retrospective.unwrap_or(false),
            allow_dirty: opts.allow_dirty,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(opts: SprintOptions) -> Result<SprintSettings, SettingsError> {
        SprintSettings::resolve("/p".into(), "/p/s".into(), "/p/p".into(), opts)
    }

    #[test]
    fn defaults_and_clamped_durations() {
        let s = resolve(SprintOptions::default()).unwrap();
        assert_eq!((s.batch, s.max_review_rounds, s.min_findings), (3, 3, 3));
        assert_eq!(s.checkpoints, [Status::Done]);
        let huge = resolve(SprintOptions {
            run_timeout_secs: Some(u64::MAX),
            batch: Some(0),
            ..SprintOptions::default()
        })
        .unwrap();
        assert_eq!(huge.run_timeout, Duration::from_secs(MAX_SECS));
        assert_eq!(huge.batch, 1);
        // The deadline arithmetic the scheduler does cannot overflow.
        assert!(
            std::time::Instant::now()
                .checked_add(huge.run_timeout)
                .is_some()
        );
    }

    #[test]
    fn an_unknown_checkpoint_names_the_key() {
        let err = resolve(SprintOptions {
            checkpoints: Some(vec!["finished".into()]),
            ..SprintOptions::default()
        })
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "`[sprint] checkpoints`: unknown status `finished`"
        );
    }
}
