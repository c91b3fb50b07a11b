//! The planning templates: one per artifact, bundled in the binary and overridable per project.
//!
//! A project overrides a template by putting a file of the same name in `.baton/templates/`
//! (`.baton/templates/prd.md`); anything else falls back to the bundled text. Templates are
//! written in baton's own words and follow the section layout BMad's workflows expect, so BMad's
//! tools can continue documents baton wrote.

use std::path::Path;

/// Every bundled template: file name and text.
pub const BUNDLED: &[(&str, &str)] = &[
    (
        "product-brief.md",
        include_str!("../../templates/product-brief.md"),
    ),
    ("prd.md", include_str!("../../templates/prd.md")),
    (
        "architecture.md",
        include_str!("../../templates/architecture.md"),
    ),
    ("epics.md", include_str!("../../templates/epics.md")),
    ("story.md", include_str!("../../templates/story.md")),
    (
        "readiness-report.md",
        include_str!("../../templates/readiness-report.md"),
    ),
    ("review.md", include_str!("../../templates/review.md")),
    (
        "retrospective.md",
        include_str!("../../templates/retrospective.md"),
    ),
    (
        "quick-spec.md",
        include_str!("../../templates/quick-spec.md"),
    ),
];

/// The project folder holding template overrides, relative to the root.
pub const OVERRIDE_DIR: &str = ".baton/templates";

/// Where a template came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The binary.
    Bundled,
    /// `.baton/templates/`.
    Project,
}

/// The template `name` for the project at `root`: the project's override when it exists and
/// reads as UTF-8, else the bundled one; `None` for an unknown name.
pub fn template(root: &Path, name: &str) -> Option<(String, Source)> {
    let bundled = BUNDLED.iter().find(|(n, _)| *n == name)?.1;
    let custom = root.join(OVERRIDE_DIR).join(name);
    match std::fs::read_to_string(&custom) {
        Ok(text) if !text.trim().is_empty() => Some((text, Source::Project)),
        _ => Some((bundled.to_owned(), Source::Bundled)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_unless_the_project_overrides() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (t, s) = template(dir.path(), "prd.md").unwrap_or_else(|| panic!("prd"));
        assert_eq!(s, Source::Bundled);
        assert!(t.contains("## Functional Requirements"));
        std::fs::create_dir_all(dir.path().join(OVERRIDE_DIR)).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join(OVERRIDE_DIR).join("prd.md"), "# Ours\n")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            template(dir.path(), "prd.md"),
            Some(("# Ours\n".to_owned(), Source::Project))
        );
        assert_eq!(template(dir.path(), "nope.md"), None);
        assert_eq!(BUNDLED.len(), 9);
    }
}
