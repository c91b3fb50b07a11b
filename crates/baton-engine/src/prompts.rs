//! Task prompts: the text each stage gives its agent, kept as template files in `prompts/`
//! (embedded in the binary) rather than as string literals inside the engine's branches.
//!
//! A template names its values in braces (`{key}`, `{story_file}`); [`render`] fills them in one
//! pass, so a value that itself contains braces is never expanded again. Scripted sessions match
//! on these texts, so a change here is a change of the engine's observable behaviour.

/// Create (or revise) a story file; `{sources}` is one of the two below.
pub const CREATE: &str = include_str!("prompts/create.md");
/// Where to read a story that the epics document has: its section and its epic's.
pub const CREATE_SECTIONS: &str = include_str!("prompts/create_sections.md");
/// Where to read a story the epics document does not have (or no epics document).
pub const CREATE_DOCUMENTS: &str = include_str!("prompts/create_documents.md");
/// Review a story document.
pub const STORY_REVIEW: &str = include_str!("prompts/story_review.md");
/// Implement a story.
pub const DEV: &str = include_str!("prompts/dev.md");
/// A fix round.
pub const FIX: &str = include_str!("prompts/fix.md");
/// The line naming the test command.
pub const TESTS_LINE: &str = include_str!("prompts/tests_line.md");
/// The failing tests' output, in a fix round.
pub const FAILING_TESTS: &str = include_str!("prompts/failing_tests.md");
/// A code review or an end-to-end verification.
pub const REVIEW: &str = include_str!("prompts/review.md");
/// A plan task's implementation (subagent-driven development).
pub const SDD_IMPLEMENT: &str = include_str!("prompts/sdd_implement.md");
/// A plan task's fix round.
pub const SDD_FIX: &str = include_str!("prompts/sdd_fix.md");
/// A plan task's review (spec, quality, security, performance).
pub const SDD_REVIEW: &str = include_str!("prompts/sdd_review.md");
/// A merge fix round: conflicts between a story's branch and the base.
pub const MERGE_CONFLICT: &str = include_str!("prompts/merge_conflict.md");
/// A merge fix round: the tests fail on the story's branch brought up to date with the base.
pub const MERGE_TESTS: &str = include_str!("prompts/merge_tests.md");
/// An epic's retrospective.
pub const RETRO: &str = include_str!("prompts/retro.md");

/// Fills `{name}` placeholders of `template` with `vars`, in one pass; unknown names are left
/// as they are. The template's final newline is dropped.
pub fn render(template: &str, vars: &[(&str, &str)]) -> String {
    let template = template.strip_suffix('\n').unwrap_or(template);
    let mut out = String::with_capacity(template.len() + 256);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let name_end = after.find('}').filter(|&end| {
            after[..end]
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'_')
        });
        match name_end.and_then(|end| {
            vars.iter()
                .find(|(n, _)| *n == &after[..end])
                .map(|(_, v)| (end, *v))
        }) {
            Some((end, value)) => {
                out.push_str(value);
                rest = &after[end + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Backticked items joined with commas, or `(none)`.
pub fn list<T: AsRef<str>>(items: &[T]) -> String {
    if items.is_empty() {
        "(none)".into()
    } else {
        items
            .iter()
            .map(|s| format!("`{}`", s.as_ref()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_filled_once_and_unknown_ones_kept() {
        let t = "Story `{key}` {x} {not a name} {round}\n";
        let out = render(t, &[("key", "{round}"), ("round", "2")]);
        assert_eq!(out, "Story `{round}` {x} {not a name} 2");
    }

    #[test]
    fn every_template_names_only_values_the_engine_gives() {
        for t in [
            CREATE,
            CREATE_SECTIONS,
            CREATE_DOCUMENTS,
            STORY_REVIEW,
            DEV,
            FIX,
            TESTS_LINE,
            FAILING_TESTS,
            REVIEW,
            RETRO,
        ] {
            let names = [
                "key",
                "mode",
                "story_file",
                "planning_dir",
                "tests_line",
                "round",
                "findings",
                "failing_tests",
                "command",
                "output",
                "verb",
                "base",
                "changed",
                "unlisted",
                "unchanged",
                "epic",
                "stories_dir",
                "sources",
                "story_section",
                "epic_section",
            ];
            let vars: Vec<(&str, &str)> = names.iter().map(|n| (*n, "")).collect();
            let out = render(t, &vars);
            assert!(
                !out.contains('{') || out.contains("```"),
                "unfilled placeholder in {t:?}: {out}"
            );
        }
        assert_eq!(list::<&str>(&[]), "(none)");
        assert_eq!(list(&["a", "b"]), "`a`, `b`");
    }
}
