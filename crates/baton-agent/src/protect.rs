//! Paths an agent's file tools may read but never write: baton's own state and configuration,
//! the sprint file, BMad's configuration, and the status of story files.
//!
//! The sprint file is the process baton enforces: an agent that could edit it (or its story's
//! `Status:` line) could mark its own work `done`; one that could write `baton.toml` could send
//! the next run's API key elsewhere or widen its own command allowlist; one that could write
//! `.baton/` could destroy the journal or replace a trusted agent definition. So the sandbox
//! refuses every writing access to these paths, whatever spelling reaches them (`./baton.toml`,
//! a symlink, a symlinked directory, `BATON.TOML` on a case-insensitive disk), and the file tools
//! refuse an edit of a story file that changes its status. The one way to move a status is the
//! `update_sprint_status` tool, which goes through the transition table and the journal.
//!
//! The set is data given by the caller ([`Protected`]), because only the caller knows where the
//! project keeps its sprint file and stories; [`Protected::defaults`] covers BMad's default
//! layout for callers that know nothing more.

use globset::{GlobBuilder, GlobMatcher};
use std::path::{Component, Path, PathBuf};

/// The default sprint file, relative to the project root (BMad's layout).
pub const DEFAULT_SPRINT_FILE: &str = "_bmad-output/implementation-artifacts/sprint-status.yaml";
/// The default story directory, relative to the project root (BMad's layout).
pub const DEFAULT_STORY_DIR: &str = "_bmad-output/implementation-artifacts";

/// What agents may not write, as the caller configures it. Relative paths are relative to the
/// project root; absolute paths outside the root are ignored (the sandbox refuses them anyway).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protected {
    /// Sprint files: never written by a file tool.
    pub sprint_files: Vec<PathBuf>,
    /// Configuration files (`baton.toml`): never written.
    pub config_files: Vec<PathBuf>,
    /// State directories (`.baton/`): nothing in them is written, and they are not created.
    pub state_dirs: Vec<PathBuf>,
    /// Globs on root-relative paths (any letter case) naming other protected files, such as
    /// BMad's `config.yaml` files.
    pub globs: Vec<String>,
    /// Directories of story files: a `.md` file in them may be edited, but not in a way that
    /// changes its `Status:` line or its frontmatter `status:`.
    pub story_dirs: Vec<PathBuf>,
    /// Statuses a new story file may be created with (the status a story document gets when it
    /// is drafted); a new story file with any other status is refused.
    pub new_story_statuses: Vec<String>,
}

impl Protected {
    /// The same rules with every path that lies under one of `roots` made relative to it, so
    /// that they name the same files under any other root.
    pub fn relative_to(&self, roots: &[&Path]) -> Protected {
        let rel = |paths: &[PathBuf]| -> Vec<PathBuf> {
            paths
                .iter()
                .map(|p| {
                    roots
                        .iter()
                        .find_map(|r| p.strip_prefix(r).ok())
                        .map_or_else(|| p.clone(), Path::to_path_buf)
                })
                .collect()
        };
        Protected {
            sprint_files: rel(&self.sprint_files),
            config_files: rel(&self.config_files),
            state_dirs: rel(&self.state_dirs),
            globs: self.globs.clone(),
            story_dirs: rel(&self.story_dirs),
            new_story_statuses: self.new_story_statuses.clone(),
        }
    }

    /// Nothing protected (for tests of the sandbox alone).
    pub fn none() -> Protected {
        Protected {
            sprint_files: Vec::new(),
            config_files: Vec::new(),
            state_dirs: Vec::new(),
            globs: Vec::new(),
            story_dirs: Vec::new(),
            new_story_statuses: Vec::new(),
        }
    }

    /// BMad's default layout: `baton.toml`, `.baton/`, the default sprint file and any file named
    /// `sprint-status.yaml`, BMad's configuration under `_bmad/`, `.bmad/` and `bmad/`, and the
    /// story files of the default story directory.
    pub fn defaults() -> Protected {
        Protected {
            sprint_files: vec![PathBuf::from(DEFAULT_SPRINT_FILE)],
            config_files: vec![PathBuf::from("baton.toml")],
            state_dirs: vec![PathBuf::from(".baton")],
            globs: [
                "**/sprint-status.yaml",
                "**/sprint-status.yml",
                "_bmad/**/config.yaml",
                "_bmad/**/config.yml",
                ".bmad/**/config.yaml",
                ".bmad/**/config.yml",
                "bmad/**/config.yaml",
                "bmad/**/config.yml",
            ]
            .map(str::to_owned)
            .to_vec(),
            story_dirs: vec![PathBuf::from(DEFAULT_STORY_DIR)],
            new_story_statuses: ["backlog", "drafted", "ready-for-dev"]
                .map(str::to_owned)
                .to_vec(),
        }
    }

    /// The defaults, with the project's own sprint file and story directory added.
    pub fn for_project(sprint_file: &Path, story_dir: &Path) -> Protected {
        let mut p = Protected::defaults();
        p.sprint_files.push(sprint_file.to_path_buf());
        p.story_dirs.push(story_dir.to_path_buf());
        p
    }
}

/// What kind of protected path a write would touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Sprint,
    Config,
    State,
    Glob,
}

impl Kind {
    fn reason(self) -> &'static str {
        match self {
            Kind::Sprint => {
                "is the sprint file, which agents may not write; move a status with \
                 `update_sprint_status`"
            }
            Kind::Config => "is baton's configuration, which agents may not write",
            Kind::State => "is inside `.baton/`, baton's own state, which agents may not write",
            Kind::Glob => "is protected project configuration, which agents may not write",
        }
    }
}

/// [`Protected`], compiled against one canonical root.
#[derive(Debug, Clone)]
pub(crate) struct Compiled {
    /// `(lower-case relative path, kind, whether it names a directory)`.
    exact: Vec<(String, Kind, bool)>,
    globs: Vec<GlobMatcher>,
    /// Lower-case relative story directories (`""` for the root itself).
    story_dirs: Vec<String>,
    new_story_statuses: Vec<String>,
}

/// A protected path's spellings relative to the canonical root (lower case, `/`-separated): as
/// given, and as resolved through symlinks as far as it exists. Empty when it lies outside the
/// root.
fn relatives(given_root: &Path, canonical_root: &Path, path: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        canonical_root.join(path)
    };
    let lexical = normalize(&absolute);
    for root in [canonical_root, given_root] {
        if let Ok(rel) = lexical.strip_prefix(root) {
            out.push(join(rel));
        }
    }
    // Resolve the longest existing ancestor so a protected path behind a symlinked directory,
    // or a symlinked protected file, is protected at its real place too.
    let mut existing = lexical.clone();
    let mut tail: Vec<PathBuf> = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(&existing) {
            let mut real = real;
            for t in tail.iter().rev() {
                real.push(t);
            }
            if let Ok(rel) = real.strip_prefix(canonical_root) {
                out.push(join(rel));
            }
            break;
        }
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                tail.push(PathBuf::from(name));
                existing = parent.to_path_buf();
            }
            _ => break,
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Drops `.` and applies `..` lexically (configuration paths, not agent input).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

fn join(rel: &Path) -> String {
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().to_lowercase())
        .collect::<Vec<_>>()
        .join("/")
}

impl Compiled {
    pub(crate) fn new(
        given_root: &Path,
        canonical_root: &Path,
        p: &Protected,
    ) -> Result<Compiled, (String, globset::Error)> {
        let mut exact = Vec::new();
        let groups = [
            (&p.sprint_files, Kind::Sprint, false),
            (&p.config_files, Kind::Config, false),
            (&p.state_dirs, Kind::State, true),
        ];
        for (paths, kind, dir) in groups {
            for path in paths {
                for rel in relatives(given_root, canonical_root, path) {
                    if !rel.is_empty() {
                        exact.push((rel, kind, dir));
                    }
                }
            }
        }
        let mut globs = Vec::new();
        for g in &p.globs {
            let m = GlobBuilder::new(g)
                .literal_separator(true)
                .case_insensitive(true)
                .build()
                .map_err(|e| (g.clone(), e))?
                .compile_matcher();
            globs.push(m);
        }
        let mut story_dirs = Vec::new();
        for d in &p.story_dirs {
            story_dirs.extend(relatives(given_root, canonical_root, d));
        }
        story_dirs.sort();
        story_dirs.dedup();
        Ok(Compiled {
            exact,
            globs,
            story_dirs,
            new_story_statuses: p.new_story_statuses.clone(),
        })
    }

    /// Why writing the root-relative path `rel` is refused, if it is.
    pub(crate) fn refuses(&self, rel: &str) -> Option<&'static str> {
        let rel = rel.trim_start_matches("./").to_lowercase();
        for (p, kind, dir) in &self.exact {
            let inside = *dir && rel.starts_with(p.as_str()) && rel[p.len()..].starts_with('/');
            if rel == *p || inside {
                return Some(kind.reason());
            }
        }
        if self.globs.iter().any(|g| g.is_match(&rel)) {
            return Some(Kind::Glob.reason());
        }
        None
    }

    /// Whether the root-relative path `rel` is a story file (a `.md` file in a story directory).
    pub(crate) fn is_story(&self, rel: &str) -> bool {
        let rel = rel.to_lowercase();
        rel.ends_with(".md")
            && self.story_dirs.iter().any(|d| {
                d.is_empty() || (rel.starts_with(d.as_str()) && rel[d.len()..].starts_with('/'))
            })
    }

    /// Refuses replacing a story file's text `before` (`None`: a new file) with `after` when the
    /// story's status would change.
    pub(crate) fn check_story(&self, before: Option<&str>, after: &str) -> Result<(), String> {
        let new = story_status(after);
        match before {
            Some(before) => {
                let old = story_status(before);
                if old != new {
                    return Err(format!(
                        "would change the story's status ({} → {}); agents may edit a story \
                         file's other sections, but a status moves only through \
                         `update_sprint_status`",
                        old.shown(),
                        new.shown()
                    ));
                }
            }
            None => {
                for s in [&new.line, &new.front].into_iter().flatten() {
                    let ok = self
                        .new_story_statuses
                        .iter()
                        .any(|allowed| allowed.eq_ignore_ascii_case(s.trim()));
                    if !ok {
                        return Err(format!(
                            "a new story file may start only as {}, not `{s}`; a status moves \
                             only through `update_sprint_status`",
                            self.new_story_statuses
                                .iter()
                                .map(|s| format!("`{s}`"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// A story's status as its file states it: the `Status:` line and the frontmatter `status:`.
#[derive(Debug, PartialEq, Eq)]
struct StoryStatus {
    line: Option<String>,
    front: Option<String>,
}

impl StoryStatus {
    fn shown(&self) -> String {
        let one = |v: &Option<String>| v.as_deref().map_or("none".to_owned(), |s| format!("`{s}`"));
        if self.front.is_none() {
            format!("Status: {}", one(&self.line))
        } else {
            format!(
                "Status: {}, frontmatter status: {}",
                one(&self.line),
                one(&self.front)
            )
        }
    }
}

fn story_status(text: &str) -> StoryStatus {
    let line = baton_store::story_file::read_status(text).map(|s| s.value);
    let front =
        match baton_store::frontmatter::Document::parse("story.md", text) {
            Ok(doc) => ["status", "Status"].into_iter().find_map(|k| {
                match doc.get::<serde_json::Value>(k) {
                    Ok(Some(serde_json::Value::String(s))) => Some(s),
                    Ok(Some(serde_json::Value::Null)) | Ok(None) => None,
                    Ok(Some(other)) => Some(other.to_string()),
                    Err(_) => Some("<unreadable>".to_owned()),
                }
            }),
            // A frontmatter that does not parse cannot be compared: read it as its own value, so
            // breaking (or mending) it counts as a change.
            Err(_) => Some("<unreadable frontmatter>".to_owned()),
        };
    StoryStatus { line, front }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compiled(root: &Path) -> Compiled {
        Compiled::new(root, root, &Protected::defaults()).unwrap()
    }

    #[test]
    fn defaults_refuse_state_config_and_sprint_files_in_any_case() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let c = compiled(&root);
        for rel in [
            "baton.toml",
            "./baton.toml",
            "BATON.TOML",
            ".baton",
            ".baton/baton.db",
            ".baton/agents/x.md",
            ".BATON/agents/x.md",
            "_bmad-output/implementation-artifacts/sprint-status.yaml",
            "docs/sprint-artifacts/sprint-status.yaml",
            "_bmad/bmm/config.yaml",
            "_bmad/core/config.yaml",
            ".bmad/config.yml",
            "bmad/bmm/config.yaml",
        ] {
            assert!(c.refuses(rel).is_some(), "{rel} must be protected");
        }
        for rel in [
            "src/baton.toml.rs",
            "baton.toml.bak",
            ".batonrc",
            ".baton-notes/x.md",
            "docs/config.yaml",
            "_bmad/bmm/workflows/x.md",
            "_bmad-output/implementation-artifacts/1-1-a.md",
        ] {
            assert!(c.refuses(rel).is_none(), "{rel} must stay writable");
        }
    }

    #[test]
    fn story_status_changes_are_refused_and_other_edits_allowed() {
        let dir = tempfile::tempdir().unwrap();
        let c = compiled(dir.path());
        let story = "# Story 1.1: A\n\nStatus: in-progress\n\n## Tasks\n\n- [ ] one\n";
        let ticked = story.replace("- [ ] one", "- [x] one");
        assert!(c.check_story(Some(story), &ticked).is_ok());
        for to in ["done", "review", "", "**done**"] {
            let moved = story.replace("in-progress", to);
            assert!(c.check_story(Some(story), &moved).is_err(), "{to}");
        }
        let removed = story.replace("Status: in-progress\n", "");
        assert!(c.check_story(Some(story), &removed).is_err());
        let front = "---\nstatus: in-progress\n---\n# Story 1.1: A\n\nStatus: in-progress\n";
        let front_done = front.replacen("status: in-progress", "status: done", 1);
        assert!(c.check_story(Some(front), &front_done).is_err());
        let added = format!("---\nstatus: done\n---\n{story}");
        assert!(c.check_story(Some(story), &added).is_err());
        assert!(c.check_story(None, story).is_err(), "created in-progress");
        assert!(
            c.check_story(None, &story.replace("in-progress", "ready-for-dev"))
                .is_ok()
        );
        assert!(c.check_story(None, "# Notes\n").is_ok());
    }

    #[test]
    fn story_files_are_markdown_under_a_story_dir() {
        let dir = tempfile::tempdir().unwrap();
        let c = compiled(dir.path());
        assert!(c.is_story("_bmad-output/implementation-artifacts/1-2-login.md"));
        assert!(c.is_story("_bmad-output/implementation-artifacts/sub/1-2-login.md"));
        assert!(!c.is_story("_bmad-output/implementation-artifacts.md"));
        assert!(!c.is_story("docs/1-2-login.md"));
    }
}
