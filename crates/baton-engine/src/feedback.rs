//! Implicit feedback from hand edits: a person who reverts a developer's change within a story
//! has corrected the team, and the correction is worth remembering.
//!
//! When a story that already has work is driven again, the lines its own stage commits added
//! (from its baseline to its latest stage commit) are compared with what people changed since:
//! the commits after it that baton did not make (not `story(`, `epic(`, `sprint:`, `baton:` or
//! `sdd:`) and the uncommitted changes. A line the developer added that a person removed is a
//! revert. In YOLO mode it is remembered at once as a preference of low importance, scoped to
//! its file; in standard mode baton says what it saw and how to keep it with `baton remember`.
//! Files of baton's own (`_bmad-output/`, `.baton/`) are not looked at.

use crate::ctx::StoryCtx;
use crate::protocol::EventBody;
use crate::story_doc;
use baton_agent::runner::Mode;
use baton_core::memory::{Draft, Kind, Scope, Source};
use std::collections::{BTreeMap, BTreeSet};

/// A developer's change a person reverted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revert {
    /// The file.
    pub file: String,
    /// The lines the developer added and the person removed (trimmed), in file order.
    pub lines: Vec<String>,
}

/// Subjects of the commits baton makes.
const BATON_SUBJECTS: [&str; 5] = ["story(", "epic(", "sprint: ", "baton: ", "sdd: "];

/// Paths that are baton's own, never an agent's code.
const EXCLUDE: [&str; 3] = [".", ":(exclude)_bmad-output", ":(exclude).baton"];

/// The lines a unified diff with no context adds (`+`) or removes (`-`), by file: an added line
/// belongs to the file its `+++ b/…` header names, a removed one to its `--- a/…` header's (the
/// other side is `/dev/null` for a new or deleted file).
pub fn diff_lines(diff: &str, added: bool) -> BTreeMap<String, Vec<String>> {
    let (header, side, mark) = if added {
        ("+++ ", "b/", '+')
    } else {
        ("--- ", "a/", '-')
    };
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut file: Option<String> = None;
    // Headers come before a file's first hunk; after it, `--- x` is a removed line `-- x`.
    let mut in_hunk = false;
    for line in diff.lines() {
        if line.starts_with("diff --git") {
            file = None;
            in_hunk = false;
        } else if line.starts_with("@@") {
            in_hunk = true;
        } else if !in_hunk {
            if let Some(path) = line.strip_prefix(header) {
                file = path.strip_prefix(side).map(str::to_owned);
            }
        } else if let (Some(f), Some(rest)) = (&file, line.strip_prefix(mark)) {
            out.entry(f.clone()).or_default().push(rest.to_owned());
        }
    }
    out
}

/// The reverts in `removed` of lines in `added`: lines of at least three characters that are
/// not only punctuation (a lone `}` proves nothing).
pub fn reverts(
    added: &BTreeMap<String, Vec<String>>,
    removed: &BTreeMap<String, Vec<String>>,
) -> Vec<Revert> {
    let meaningful = |l: &&String| {
        let t = l.trim();
        t.chars().count() >= 3 && t.chars().any(char::is_alphanumeric)
    };
    let mut out = Vec::new();
    for (file, gone) in removed {
        let Some(made) = added.get(file) else {
            continue;
        };
        let made: BTreeSet<&str> = made.iter().filter(meaningful).map(|l| l.trim()).collect();
        let mut lines: Vec<String> = Vec::new();
        for l in gone.iter().filter(meaningful) {
            let t = l.trim();
            if made.contains(t) && !lines.iter().any(|x| x == t) {
                lines.push(t.to_owned());
            }
        }
        if !lines.is_empty() {
            out.push(Revert {
                file: file.clone(),
                lines,
            });
        }
    }
    out
}

/// The story's developer changes that people reverted since its latest stage commit.
pub async fn hand_reverts(ctx: &StoryCtx) -> Vec<Revert> {
    let Some(base) = story_doc::baseline(&ctx.story_path()) else {
        return Vec::new();
    };
    let git = ctx.workspace().git();
    let own = ctx.subject("");
    let Ok(log) = git
        .run(&["log", "--format=%H%x1f%s", &format!("{base}..HEAD")])
        .await
    else {
        return Vec::new();
    };
    let commits: Vec<(&str, &str)> = log.lines().filter_map(|l| l.split_once('\u{1f}')).collect();
    // Newest first: the people's commits after the story's latest stage commit.
    let Some(latest) = commits.iter().position(|(_, s)| s.starts_with(&own)) else {
        return Vec::new();
    };
    let stage = commits[latest].0;
    let mut args = vec![
        "diff",
        "--unified=0",
        "--no-color",
        base.as_str(),
        stage,
        "--",
    ];
    args.extend(EXCLUDE);
    let Ok(made) = git.run(&args).await else {
        return Vec::new();
    };
    let added = diff_lines(&made, true);
    if added.is_empty() {
        return Vec::new();
    }
    let mut removed: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut take = |diff: &str| {
        for (f, lines) in diff_lines(diff, false) {
            removed.entry(f).or_default().extend(lines);
        }
    };
    for (sha, subject) in &commits[..latest] {
        if BATON_SUBJECTS.iter().any(|p| subject.starts_with(p)) {
            continue;
        }
        let mut args = vec!["show", "--unified=0", "--no-color", "--format=", sha, "--"];
        args.extend(EXCLUDE);
        if let Ok(d) = git.run(&args).await {
            take(&d);
        }
    }
    let mut args = vec!["diff", "--unified=0", "--no-color", "HEAD", "--"];
    args.extend(EXCLUDE);
    if let Ok(d) = git.run(&args).await {
        take(&d);
    }
    reverts(&added, &removed)
}

/// The preference a revert teaches.
pub fn revert_draft(key: &str, r: &Revert) -> Draft {
    let quoted: Vec<String> = r
        .lines
        .iter()
        .take(3)
        .map(|l| format!("\"{}\"", l.chars().take(120).collect::<String>()))
        .collect();
    let mut d = Draft::new(
        Kind::Preference,
        Source::HumanFeedback,
        format!(
            "In story {key} a person reverted the developer's change to {}: removed {}.",
            r.file,
            quoted.join(", ")
        ),
    );
    d.importance = 3;
    d.unit = Some(key.to_owned());
    d.scope = Scope::files(vec![r.file.clone()]);
    d
}

/// Looks for reverts of the story's work and remembers them (YOLO) or says how to (standard).
pub async fn notice_reverts(ctx: &StoryCtx) {
    if ctx.run.run.setup.memory.is_none() {
        return;
    }
    let found = hand_reverts(ctx).await;
    if found.is_empty() {
        return;
    }
    if ctx.run.run.setup.mode == Mode::Yolo {
        ctx.learn(found.iter().map(|r| revert_draft(&ctx.key, r)).collect());
        for r in &found {
            ctx.emit(EventBody::Notice {
                message: format!(
                    "{}: a person reverted the developer's change to {}; remembered as a preference",
                    ctx.key, r.file
                ),
            });
        }
        return;
    }
    for r in &found {
        ctx.emit(EventBody::Notice {
            message: format!(
                "{}: a person reverted the developer's change to {} ({} line(s)); to keep why for \
                 later work: baton remember \"…\" --scope {}",
                ctx.key,
                r.file,
                r.lines.len(),
                r.file
            ),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MADE: &str = "diff --git a/src/a.rs b/src/a.rs\nnew file mode 100644\n--- /dev/null\n+++ b/src/a.rs\n@@ -0,0 +1,3 @@\n+fn main() {\n+    let pool = Pool::leaky();\n+}\ndiff --git a/src/b.rs b/src/b.rs\n--- a/src/b.rs\n+++ b/src/b.rs\n@@ -1 +1 @@\n-old\n+    retry(3);\n";
    const UNDONE: &str = "diff --git a/src/a.rs b/src/a.rs\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -2 +1,0 @@\n-    let pool = Pool::leaky();\n@@ -3 +2 @@\n-}\n+}\ndiff --git a/src/c.rs b/src/c.rs\ndeleted file mode 100644\n--- a/src/c.rs\n+++ /dev/null\n@@ -1 +0,0 @@\n-    retry(3);\n";

    #[test]
    fn a_removed_line_the_developer_added_is_a_revert() {
        let added = diff_lines(MADE, true);
        assert_eq!(added["src/a.rs"].len(), 3);
        assert_eq!(added["src/b.rs"], vec!["    retry(3);"]);
        let removed = diff_lines(UNDONE, false);
        assert_eq!(removed["src/c.rs"], vec!["    retry(3);"]);
        // A removed SQL comment is a line, not a header.
        let sql = "diff --git a/q.sql b/q.sql\n--- a/q.sql\n+++ b/q.sql\n@@ -1 +0,0 @@\n--- keep the index\n";
        assert_eq!(diff_lines(sql, false)["q.sql"], vec!["-- keep the index"]);
        let r = reverts(&added, &removed);
        // A lone brace proves nothing, and the same line in another file is not this change.
        assert_eq!(
            r,
            vec![Revert {
                file: "src/a.rs".into(),
                lines: vec!["let pool = Pool::leaky();".into()]
            }]
        );
        let d = revert_draft("1-2-x", &r[0]);
        assert_eq!(d.scope, Scope::files(vec!["src/a.rs".into()]));
        assert_eq!(d.importance, 3);
        assert!(
            d.text.contains("removed \"let pool = Pool::leaky();\""),
            "{}",
            d.text
        );
    }

    #[test]
    fn nothing_removed_is_nothing_reverted() {
        assert!(reverts(&diff_lines(MADE, true), &BTreeMap::new()).is_empty());
    }
}
