//! What the engine writes into a story file besides its status: the baseline commit, review
//! findings (BMad's `### Review Findings` dialect), and a developer's HALT. Every write here is
//! one the next stage depends on, so every failure is an error, never ignored. It also reads
//! the paths a story mentions, the files it plans to touch.

use crate::error::EngineError;
use baton_store::frontmatter::Document;
use std::path::Path;

/// Records the commit a story's work starts from (`baseline_commit`, as BMad 6.8+ does).
pub fn set_baseline(path: &Path, commit: &str) -> Result<(), EngineError> {
    refuse_link(path)?;
    let mut doc = Document::load(path).map_err(|e| EngineError::file(path, e))?;
    if doc
        .get::<String>("baseline_commit")
        .ok()
        .flatten()
        .is_some()
    {
        return Ok(());
    }
    doc.set("baseline_commit", commit)
        .map_err(|e| EngineError::file(path, e))?;
    // Not flushed: the durable transition to in-progress follows at once, and a baseline lost
    // to a power cut only costs the reviewer its base.
    baton_store::atomic::replace_unsynced(path, doc.text().as_bytes())
        .map_err(|e| EngineError::file(path, e))?;
    Ok(())
}

/// The project paths a story mentions in backticks (`src/db/pool.rs`, `Cargo.toml`): the files
/// it plans to touch, before any is changed. A span counts when it has no spaces, is not a URL,
/// and has a directory or a file extension; at most 64 are taken.
pub fn mentioned_paths(text: &str) -> Vec<String> {
    let mut out: Vec<String> = text
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|s| {
            s.trim()
                .trim_start_matches("./")
                .trim_end_matches([':', ',', '.'])
        })
        .filter(|s| {
            !s.is_empty()
                && s.len() < 200
                && !s.contains(char::is_whitespace)
                && !s.contains("://")
                && !s.starts_with(['-', '/', '$'])
                && (s.contains('/')
                    || s.rsplit_once('.').is_some_and(|(stem, ext)| {
                        !stem.is_empty()
                            && (1..=6).contains(&ext.len())
                            && ext.chars().all(|c| c.is_ascii_alphanumeric())
                            && ext.chars().any(|c| c.is_ascii_alphabetic())
                    }))
        })
        .map(str::to_owned)
        .take(64)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The story's baseline commit, if recorded.
pub fn baseline(path: &Path) -> Option<String> {
    Document::load(path)
        .ok()
        .and_then(|d| d.get::<String>("baseline_commit").ok().flatten())
}

/// Inserts `block` under `### <heading>`, creating the subsection before `## Dev Notes` (or at
/// the end) when it does not exist yet.
fn append_under(text: &str, heading: &str, block: &str) -> String {
    let marker = format!("### {heading}");
    let nl = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let block = block.replace('\n', nl);
    if let Some(at) = text.find(&marker) {
        // End of that subsection: the next heading of level 2 or 3, or the end.
        let after = at + marker.len();
        let end = text[after..]
            .find(&format!("{nl}## "))
            .into_iter()
            .chain(text[after..].find(&format!("{nl}### ")))
            .min()
            .map_or(text.len(), |i| after + i);
        let mut out = String::with_capacity(text.len() + block.len() + 4);
        out.push_str(text[..end].trim_end());
        out.push_str(nl);
        out.push_str(nl);
        out.push_str(block.trim_end());
        out.push_str(nl);
        out.push_str(&text[end..]);
        return out;
    }
    let section = format!("{marker}{nl}{nl}{}{nl}", block.trim_end());
    match text.find(&format!("{nl}## Dev Notes")) {
        Some(i) => format!("{}{nl}{nl}{section}{}", text[..i].trim_end(), &text[i..]),
        None => format!("{}{nl}{nl}{section}", text.trim_end()),
    }
}

/// A story file an agent replaced with a symlink would have baton write wherever it points
/// (the atomic replace writes a link's target): refuse it.
fn refuse_link(path: &Path) -> Result<(), EngineError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(EngineError::file(
            path,
            "is a symlink; baton writes story files only in place, never through a link",
        )),
        _ => Ok(()),
    }
}

fn edit(path: &Path, f: impl FnOnce(&str) -> String) -> Result<(), EngineError> {
    refuse_link(path)?;
    let text = read(path)?;
    let new = f(&text);
    // Not flushed: the stage's commit follows, and a story file lost to a power cut is rebuilt
    // by running the stage again.
    baton_store::atomic::replace_unsynced(path, new.as_bytes())
        .map_err(|e| EngineError::file(path, e))?;
    Ok(())
}

/// Appends a round of review findings.
pub fn add_review_findings(path: &Path, markdown: &str) -> Result<(), EngineError> {
    edit(path, |t| append_under(t, "Review Findings", markdown))
}

/// Records a developer's HALT in the Completion Notes.
pub fn add_halt(path: &Path, reason: &str) -> Result<(), EngineError> {
    edit(path, |t| {
        append_under(t, "Completion Notes List", &format!("- HALT: {reason}"))
    })
}

/// Reads a story file: a regular file, within the document size limit.
pub fn read(path: &Path) -> Result<String, EngineError> {
    baton_store::bounded::read_to_string(path, baton_store::bounded::DOCUMENT_LIMIT)
        .map_err(|e| EngineError::file(path, e))
}

/// The latest round of review findings written to the story, if any.
pub fn latest_findings(path: &Path) -> Option<String> {
    let text = read(path).ok()?;
    let at = text.find("### Review Findings")?;
    let section = &text[at..];
    let end = section[3..].find("\n#").map_or(section.len(), |i| i + 3);
    let section = &section[..end];
    let last = section.rfind("Round ").map_or(section, |i| &section[i..]);
    Some(last.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_story_file_that_is_a_link_is_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.md");
        fs_write(&outside, "---\nx: 1\n---\n# Not a story\n");
        let story = dir.path().join("1-1-a.md");
        std::os::unix::fs::symlink(&outside, &story).unwrap();
        assert!(add_review_findings(&story, "Round 1").is_err());
        assert!(add_halt(&story, "stop").is_err());
        assert!(set_baseline(&story, "abc").is_err());
        assert_eq!(
            std::fs::read_to_string(&outside).unwrap(),
            "---\nx: 1\n---\n# Not a story\n"
        );
    }

    fn fs_write(p: &Path, text: &str) {
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn findings_go_before_dev_notes_and_accumulate() {
        let t = "# Story 1.1: X\n\nStatus: review\n\n## Tasks / Subtasks\n\n- [x] a\n\n## Dev Notes\n\nn\n";
        let t = append_under(
            t,
            "Review Findings",
            "Round 1\n- [ ] [Review][Patch] bug [a.rs:1]",
        );
        assert!(t.contains("- [x] a\n\n### Review Findings\n\nRound 1\n- [ ] [Review][Patch] bug [a.rs:1]\n\n## Dev Notes"), "{t}");
        let t = append_under(
            &t,
            "Review Findings",
            "Round 2\n- [ ] [Review][Patch] other [b.rs:2]",
        );
        assert!(t.contains("[a.rs:1]\n\nRound 2\n"), "{t}");
        assert!(t.ends_with("## Dev Notes\n\nn\n"));
    }

    #[test]
    fn the_paths_a_story_mentions_are_its_planned_files() {
        let t = "Touch `src/db/pool.rs` and `./Cargo.toml`, then run `cargo test`.\n\
                 See `https://x.io/a.b`, `--flag`, `v1.2`, `$HOME/x`, `a b.rs` and `src/db/pool.rs`:";
        assert_eq!(mentioned_paths(t), vec!["Cargo.toml", "src/db/pool.rs"]);
        assert!(mentioned_paths("no code spans at all").is_empty());
    }
}
