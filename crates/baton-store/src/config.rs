//! `baton.toml`: typed, strict, resolved once.
//!
//! The raw file is read with unknown keys rejected (naming their line), then resolved against the
//! project root into a [`Config`] with absolute paths. Defaults follow BMad's layout
//! (`_bmad-output/implementation-artifacts/sprint-status.yaml`, stories beside it,
//! `_bmad-output/planning-artifacts/`), so a project without `baton.toml` works as is.

use serde::Deserialize;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The config file's name, at the project root.
pub const FILE_NAME: &str = "baton.toml";
/// baton's private directory, at the project root.
pub const STATE_DIR: &str = ".baton";

/// Default location of the sprint file, relative to the root.
pub const DEFAULT_SPRINT_STATUS: &str = "_bmad-output/implementation-artifacts/sprint-status.yaml";
/// Default story directory.
pub const DEFAULT_STORIES: &str = "_bmad-output/implementation-artifacts";
/// Default planning directory.
pub const DEFAULT_PLANNING: &str = "_bmad-output/planning-artifacts";

/// Errors reading `baton.toml`.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Reading failed.
    #[error("cannot read `{path}`: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: io::Error,
    },
    /// The TOML is invalid or has unknown keys.
    #[error("{}:{line}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// `baton.toml` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    /// `[paths]`.
    #[serde(default)]
    pub paths: RawPaths,
    /// `[sprint]`.
    #[serde(default)]
    pub sprint: RawSprint,
}

/// `[paths]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPaths {
    /// The sprint-status file.
    pub sprint_status: Option<PathBuf>,
    /// Where story files live.
    pub stories: Option<PathBuf>,
    /// Planning artifacts.
    pub planning: Option<PathBuf>,
}

/// `[sprint]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSprint {
    /// Write extended statuses literally (default false: projection + comment).
    pub write_extended_statuses: Option<bool>,
    /// Move an epic to done when all its stories are done (default true).
    pub auto_epic_done: Option<bool>,
    /// Days after which the sprint file is reported stale (default 7).
    pub stale_days: Option<u32>,
}

/// The resolved configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Project root.
    pub root: PathBuf,
    /// The sprint-status file.
    pub sprint_status: PathBuf,
    /// Story directory.
    pub stories: PathBuf,
    /// Planning directory.
    pub planning: PathBuf,
    /// `.baton/`.
    pub state_dir: PathBuf,
    /// Write extended statuses literally.
    pub write_extended_statuses: bool,
    /// Epic follows to done automatically.
    pub auto_epic_done: bool,
    /// Staleness threshold in days.
    pub stale_days: u32,
}

impl Config {
    /// The journal database.
    pub fn journal_path(&self) -> PathBuf {
        self.state_dir.join("baton.db")
    }

    /// The lock serialising writers of the sprint file.
    pub fn lock_path(&self) -> PathBuf {
        self.state_dir.join("sprint.lock")
    }

    /// The story file of `key`.
    pub fn story_path(&self, key: &str) -> PathBuf {
        self.stories.join(format!("{key}.md"))
    }

    /// Loads `root/baton.toml` (defaults if absent) and resolves paths against `root`.
    pub fn load(root: &Path) -> Result<Config, ConfigError> {
        let path = root.join(FILE_NAME);
        let raw = match fs::read_to_string(&path) {
            Ok(text) => parse(&path, &text)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => RawConfig::default(),
            Err(source) => return Err(ConfigError::Io { path, source }),
        };
        Ok(Self::resolve(root, raw))
    }

    /// Resolves a raw config against `root`.
    pub fn resolve(root: &Path, raw: RawConfig) -> Config {
        let at = |p: Option<PathBuf>, default: &str| root.join(p.unwrap_or_else(|| default.into()));
        Config {
            root: root.to_path_buf(),
            sprint_status: at(raw.paths.sprint_status, DEFAULT_SPRINT_STATUS),
            stories: at(raw.paths.stories, DEFAULT_STORIES),
            planning: at(raw.paths.planning, DEFAULT_PLANNING),
            state_dir: root.join(STATE_DIR),
            write_extended_statuses: raw.sprint.write_extended_statuses.unwrap_or(false),
            auto_epic_done: raw.sprint.auto_epic_done.unwrap_or(true),
            stale_days: raw.sprint.stale_days.unwrap_or(7),
        }
    }
}

/// Parses `baton.toml` text; errors name the line.
pub fn parse(path: &Path, text: &str) -> Result<RawConfig, ConfigError> {
    toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1)
            .unwrap_or(1);
        ConfigError::Invalid {
            path: path.to_path_buf(),
            line,
            message: e.message().to_owned(),
        }
    })
}

/// The `baton.toml` that `baton init` writes: every setting, commented, at its default.
pub const TEMPLATE: &str = r#"# baton configuration. Every setting is optional; the values shown are the defaults.

[paths]
# sprint_status = "_bmad-output/implementation-artifacts/sprint-status.yaml"
# stories = "_bmad-output/implementation-artifacts"
# planning = "_bmad-output/planning-artifacts"

[sprint]
# Write baton's extended story states (needs-intervention, e2e-verify, ...) literally into
# sprint-status.yaml. Off: the file keeps BMad's canonical status plus a `# baton: ...` comment.
# write_extended_statuses = false
# Move an epic to `done` when all its stories are done (BMad leaves this to a human).
# auto_epic_done = true
# Warn when the sprint file has not been updated for this many days.
# stale_days = 7
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_bmad_layout() {
        let c = Config::resolve(Path::new("/p"), RawConfig::default());
        assert_eq!(
            c.sprint_status,
            Path::new("/p/_bmad-output/implementation-artifacts/sprint-status.yaml")
        );
        assert_eq!(
            c.story_path("1-1-a"),
            Path::new("/p/_bmad-output/implementation-artifacts/1-1-a.md")
        );
        assert!(c.auto_epic_done && !c.write_extended_statuses);
    }

    #[test]
    fn unknown_keys_are_rejected_with_their_line() {
        let err = parse(
            Path::new("baton.toml"),
            "[paths]\nstories = \"s\"\n\n[sprint]\nauto_epic_dne = true\n",
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with("baton.toml:5: unknown field `auto_epic_dne`"),
            "{msg}"
        );
    }

    #[test]
    fn the_template_parses_to_defaults() {
        let raw = parse(Path::new("baton.toml"), TEMPLATE).unwrap();
        assert_eq!(
            Config::resolve(Path::new("/p"), raw),
            Config::resolve(Path::new("/p"), RawConfig::default())
        );
    }

    #[test]
    fn overrides_apply() {
        let raw = parse(
            Path::new("baton.toml"),
            "[paths]\nsprint_status = \"docs/sprint-artifacts/sprint-status.yaml\"\n[sprint]\nauto_epic_done = false\n",
        )
        .unwrap();
        let c = Config::resolve(Path::new("/p"), raw);
        assert_eq!(
            c.sprint_status,
            Path::new("/p/docs/sprint-artifacts/sprint-status.yaml")
        );
        assert!(!c.auto_epic_done);
    }
}
