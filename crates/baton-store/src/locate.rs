//! Finding a BMad project's sprint file, story directory and planning directory on disk.
//!
//! This module owns the answer to "where did BMad put things in this project": it reads the
//! project's BMad module config (`_bmad/bmm/config.yaml`, the alpha `.bmad/bmm/config.yaml` and
//! the early-alpha `bmad/bmm/config.yaml`, plus `_bmad/config.yaml`), resolves the keys BMad's
//! workflows use (`implementation_artifacts`, `sprint_artifacts`, `dev_story_location`,
//! `planning_artifacts`, `output_folder`) with their `{project-root}` and `{output_folder}`
//! placeholders, and probes the folders BMad versions have used by default
//! (`_bmad-output/implementation-artifacts/`, `docs/sprint-artifacts/`, `docs/`). It only reads;
//! nothing here creates or changes a file (BMAD-FORMAT.md R1: never write into `_bmad/`).

use std::path::{Component, Path, PathBuf};

/// The sprint file's name in every BMad version.
pub const SPRINT_FILE: &str = "sprint-status.yaml";

/// BMad config files, most recent layout first.
pub const CONFIG_FILES: &[&str] = &[
    "_bmad/bmm/config.yaml",
    ".bmad/bmm/config.yaml",
    "bmad/bmm/config.yaml",
    "_bmad/config.yaml",
];

/// Folders BMad versions put the sprint file in by default, relative to the root.
pub const DEFAULT_DIRS: &[&str] = &[
    "_bmad-output/implementation-artifacts",
    "docs/sprint-artifacts",
    "docs",
    "_bmad-output",
    "docs/stories",
];

/// What was found, with absolute paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The BMad config file that was read, if any.
    pub config: Option<PathBuf>,
    /// An existing sprint file, if one was found.
    pub sprint_status: Option<PathBuf>,
    /// Whether [`Layout::sprint_status`] has a `development_status` key (a BMad sprint file);
    /// false when only another tool's `sprint-status.yaml` was found.
    pub sprint_is_bmad: bool,
    /// Where a new sprint file belongs when none exists (from the config, else the default).
    pub sprint_default: PathBuf,
    /// Where story files live.
    pub stories: PathBuf,
    /// Where planning documents live.
    pub planning: PathBuf,
    /// How each path was decided, one sentence each (for `baton init` and messages).
    pub notes: Vec<String>,
}

/// The BMad config values baton uses, resolved to absolute paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BmadConfig {
    /// The file read.
    pub path: PathBuf,
    /// `output_folder`.
    pub output_folder: Option<PathBuf>,
    /// `implementation_artifacts`.
    pub implementation_artifacts: Option<PathBuf>,
    /// `sprint_artifacts` (v6 alpha).
    pub sprint_artifacts: Option<PathBuf>,
    /// `dev_story_location` (v6 alpha).
    pub dev_story_location: Option<PathBuf>,
    /// `planning_artifacts`.
    pub planning_artifacts: Option<PathBuf>,
}

/// Lexically normalises `p` (drops `.`, folds `..`) without touching the disk.
fn normalise(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// Resolves a config value: placeholders substituted, relative paths taken from `root`.
fn resolve(root: &Path, raw: &str, output_folder: Option<&Path>) -> Option<PathBuf> {
    let mut v = raw.trim().to_owned();
    if v.is_empty() {
        return None;
    }
    let root_s = root.display().to_string();
    for ph in ["{project-root}", "{project_root}", "{project_dir}"] {
        v = v.replace(ph, &root_s);
    }
    if v.contains("{output_folder}") {
        let of = output_folder?.display().to_string();
        v = v.replace("{output_folder}", &of);
    }
    if v.contains('{') {
        // An unresolved placeholder (`{config_source}:…`): not a path.
        return None;
    }
    Some(normalise(&root.join(v)))
}

/// Reads the first BMad config file found under `root`.
pub fn read_config(root: &Path) -> Option<BmadConfig> {
    for rel in CONFIG_FILES {
        let path = root.join(rel);
        let Ok(text) = crate::bounded::read_to_string(&path, crate::bounded::CONFIG_LIMIT) else {
            continue;
        };
        let Ok(serde_json::Value::Object(map)) = serde_saphyr::from_str::<serde_json::Value>(&text)
        else {
            continue;
        };
        let get = |k: &str| map.get(k).and_then(|v| v.as_str()).map(str::to_owned);
        let output_folder = get("output_folder").and_then(|v| resolve(root, &v, None));
        let of = output_folder.as_deref();
        let at = |k: &str| get(k).and_then(|v| resolve(root, &v, of));
        return Some(BmadConfig {
            implementation_artifacts: at("implementation_artifacts"),
            sprint_artifacts: at("sprint_artifacts"),
            dev_story_location: at("dev_story_location"),
            planning_artifacts: at("planning_artifacts"),
            output_folder,
            path,
        });
    }
    None
}

/// Whether the text has a top-level `development_status` key.
pub fn looks_like_sprint_file(text: &str) -> bool {
    text.lines().any(|l| {
        let l = l.strip_prefix('\u{feff}').unwrap_or(l);
        [
            "development_status:",
            "\"development_status\":",
            "'development_status':",
        ]
        .iter()
        .any(|k| l.starts_with(k))
    })
}

fn push_unique(v: &mut Vec<PathBuf>, p: PathBuf) {
    if !v.contains(&p) {
        v.push(p);
    }
}

/// The `story_location:` value of a sprint file, if it names an existing directory.
fn story_location(root: &Path, text: &str) -> Option<PathBuf> {
    let line = text.lines().find(|l| l.starts_with("story_location:"))?;
    let v = line["story_location:".len()..].split(" #").next()?.trim();
    let v = v.trim_matches(|c| c == '"' || c == '\'');
    let p = resolve(root, v, None)?;
    p.is_dir().then_some(p)
}

/// Finds the sprint file, stories and planning folders of the project at `root`.
pub fn locate(root: &Path) -> Layout {
    let cfg = read_config(root);
    let mut notes = Vec::new();
    let rel = |p: &Path| p.strip_prefix(root).unwrap_or(p).display().to_string();

    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(c) = &cfg {
        for d in [
            &c.implementation_artifacts,
            &c.sprint_artifacts,
            &c.dev_story_location,
        ]
        .into_iter()
        .flatten()
        {
            push_unique(&mut dirs, d.clone());
        }
        if let Some(of) = &c.output_folder {
            push_unique(&mut dirs, of.join("implementation-artifacts"));
            push_unique(&mut dirs, of.join("sprint-artifacts"));
            push_unique(&mut dirs, of.clone());
        }
    }
    let from_config = dirs.len();
    for d in DEFAULT_DIRS {
        push_unique(&mut dirs, normalise(&root.join(d)));
    }

    let mut found: Option<(PathBuf, bool, usize)> = None;
    for (i, d) in dirs.iter().enumerate() {
        let candidate = d.join(SPRINT_FILE);
        let Ok(text) = crate::bounded::read_to_string(&candidate, crate::bounded::DOCUMENT_LIMIT)
        else {
            continue;
        };
        let bmad = looks_like_sprint_file(&text);
        match &found {
            None => found = Some((candidate, bmad, i)),
            Some((_, false, _)) if bmad => found = Some((candidate, bmad, i)),
            _ => {}
        }
        if bmad {
            break;
        }
    }
    let sprint_default = dirs
        .first()
        .filter(|_| from_config > 0)
        .map(|d| d.join(SPRINT_FILE))
        .unwrap_or_else(|| root.join(DEFAULT_DIRS[0]).join(SPRINT_FILE));
    if let Some(c) = &cfg {
        notes.push(format!("read BMad config `{}`", rel(&c.path)));
    }
    match &found {
        Some((p, true, i)) => notes.push(format!(
            "sprint file `{}` ({})",
            rel(p),
            if *i < from_config {
                "from the BMad config"
            } else {
                "a BMad default location"
            }
        )),
        Some((p, false, _)) => notes.push(format!(
            "`{}` exists but has no `development_status`: not a BMad sprint file",
            rel(p)
        )),
        None => notes.push(format!(
            "no sprint file found; BMad's sprint planning would write `{}`",
            rel(&sprint_default)
        )),
    }

    let sprint_text = found
        .as_ref()
        .and_then(|(p, _, _)| {
            crate::bounded::read_to_string(p, crate::bounded::DOCUMENT_LIMIT).ok()
        })
        .unwrap_or_default();
    let stories = cfg
        .as_ref()
        .and_then(|c| {
            c.dev_story_location
                .clone()
                .or_else(|| c.implementation_artifacts.clone())
                .or_else(|| c.sprint_artifacts.clone())
        })
        .map(|d| (d, "from the BMad config"))
        .or_else(|| {
            story_location(root, &sprint_text).map(|d| (d, "the sprint file's `story_location`"))
        })
        .or_else(|| {
            found
                .as_ref()
                .and_then(|(p, bmad, _)| p.parent().filter(|_| *bmad).map(Path::to_path_buf))
                .map(|d| (d, "beside the sprint file"))
        })
        .unwrap_or_else(|| {
            (
                sprint_default
                    .parent()
                    .map_or_else(|| root.to_path_buf(), Path::to_path_buf),
                "the default",
            )
        });
    notes.push(format!("stories in `{}/` ({})", rel(&stories.0), stories.1));

    let planning = cfg
        .as_ref()
        .and_then(|c| {
            c.planning_artifacts.clone().or_else(|| {
                // v6 alpha kept planning documents in the output folder itself.
                c.output_folder.as_ref().map(|of| {
                    let nested = of.join("planning-artifacts");
                    if nested.is_dir() { nested } else { of.clone() }
                })
            })
        })
        .unwrap_or_else(|| root.join("_bmad-output/planning-artifacts"));

    let (sprint_status, sprint_is_bmad) = match found {
        Some((p, bmad, _)) => (Some(p), bmad),
        None => (None, false),
    };
    Layout {
        config: cfg.map(|c| c.path),
        sprint_status,
        sprint_is_bmad,
        sprint_default,
        stories: stories.0,
        planning,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    const SPRINT: &str = "development_status:\n  epic-1: backlog\n";

    #[test]
    fn v6_default_layout_without_config() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        write(
            root,
            "_bmad-output/implementation-artifacts/sprint-status.yaml",
            SPRINT,
        );
        let l = locate(root);
        let impl_dir = root.join("_bmad-output/implementation-artifacts");
        assert_eq!(l.sprint_status, Some(impl_dir.join(SPRINT_FILE)));
        assert!(l.sprint_is_bmad);
        assert_eq!(l.stories, impl_dir);
        assert_eq!(l.config, None);
    }

    #[test]
    fn alpha_config_with_sprint_artifacts_and_story_location() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        write(
            root,
            ".bmad/bmm/config.yaml",
            "output_folder: '{project-root}/docs'\nsprint_artifacts: '{output_folder}/sprint-artifacts'\ndev_story_location: \"{project-root}/docs/stories\"\n",
        );
        write(root, "docs/sprint-artifacts/sprint-status.yaml", SPRINT);
        let l = locate(root);
        assert_eq!(
            l.sprint_status,
            Some(root.join("docs/sprint-artifacts/sprint-status.yaml"))
        );
        assert_eq!(l.stories, root.join("docs/stories"));
        assert_eq!(l.config, Some(root.join(".bmad/bmm/config.yaml")));
    }

    #[test]
    fn early_alpha_output_folder_only() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        write(root, "bmad/bmm/config.yaml", "output_folder: ./docs\n");
        write(root, "docs/sprint-status.yaml", SPRINT);
        let l = locate(root);
        assert_eq!(l.sprint_status, Some(root.join("docs/sprint-status.yaml")));
        assert_eq!(l.stories, root.join("docs"));
    }

    #[test]
    fn a_bmad_file_beats_a_foreign_one_and_nothing_found_uses_the_config() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        write(
            root,
            "_bmad-output/implementation-artifacts/sprint-status.yaml",
            "sprints:\n  - name: one\n",
        );
        write(root, "docs/sprint-artifacts/sprint-status.yaml", SPRINT);
        let l = locate(root);
        assert_eq!(
            l.sprint_status,
            Some(root.join("docs/sprint-artifacts/sprint-status.yaml"))
        );
        let e = tempfile::tempdir().unwrap();
        write(
            e.path(),
            "_bmad/bmm/config.yaml",
            "implementation_artifacts: \"{project-root}/out/impl\"\n",
        );
        let l = locate(e.path());
        assert_eq!(l.sprint_status, None);
        assert_eq!(
            l.sprint_default,
            e.path().join("out/impl/sprint-status.yaml")
        );
        let only_foreign = tempfile::tempdir().unwrap();
        write(only_foreign.path(), "docs/sprint-status.yaml", "a: 1\n");
        let l = locate(only_foreign.path());
        assert!(l.sprint_status.is_some() && !l.sprint_is_bmad);
    }
}
