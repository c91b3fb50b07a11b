//! A repository's own configuration for a CLI that the CLI would load from the workspace and that
//! none of the flags baton passes switches off: finding it, and the reason a run is refused when
//! it is there.
//!
//! A cloned repository must not change what an agent may do. Claude Code's and Codex's project
//! configuration is shut out by flags (`--setting-sources ""`, `--strict-mcp-config`, `--tools`;
//! `--ignore-user-config`, `project_doc_max_bytes=0`, an empty `CODEX_HOME` that trusts no
//! project), and so are pi's project extensions, skills, prompt templates, themes and context
//! files. What is left is pi's: it merges `<cwd>/.pi/settings.json` over baton's settings (the
//! shell and the command prefix its bash tool runs, thinking level, transport, retries,
//! compaction) and lets `<cwd>/.pi/SYSTEM.md` replace its system prompt; it has no flag or
//! variable that moves or ignores either. So a pi run in a workspace holding one is refused
//! unless the user's own configuration allows it ([`ProjectConfig::Allow`]).

use super::Cli;
use std::path::Path;

/// What a CLI run does when the workspace holds configuration the CLI would load and baton
/// cannot switch off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProjectConfig {
    /// The run fails before the CLI starts, naming the file and the remedy.
    #[default]
    Refuse,
    /// The CLI runs and loads it (the user trusts the repository's files).
    Allow,
}

/// One file a CLI loads from its working directory with no way to turn it off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProjectFile {
    /// Relative to the workspace root.
    pub path: &'static str,
    /// What it can change.
    pub effect: &'static str,
}

const PI: [ProjectFile; 2] = [
    ProjectFile {
        path: ".pi/settings.json",
        effect: "it overrides pi's settings, among them the shell and command prefix pi's bash tool runs",
    },
    ProjectFile {
        path: ".pi/SYSTEM.md",
        effect: "it replaces pi's system prompt",
    },
];

/// The files of this kind `cli` knows.
pub fn known(cli: Cli) -> &'static [ProjectFile] {
    match cli {
        Cli::Pi => &PI,
        Cli::ClaudeCode | Cli::Codex => &[],
    }
}

/// Those of [`known`] present in the workspace at `root` (a dangling symbolic link counts: what
/// it points at may appear while the CLI runs).
pub fn present(cli: Cli, root: &Path) -> Vec<ProjectFile> {
    known(cli)
        .iter()
        .filter(|f| std::fs::symlink_metadata(root.join(f.path)).is_ok())
        .copied()
        .collect()
}

/// Why a run of `cli` is refused when `found` (not empty) is in the workspace, with the remedy.
pub fn refusal(cli: Cli, found: &[ProjectFile]) -> String {
    let files: Vec<String> = found
        .iter()
        .map(|f| format!("`{}` ({})", f.path, f.effect))
        .collect();
    format!(
        "the workspace holds {}, which {cli} would load from the repository and no flag turns off; \
         remove it, or, if you trust this repository's {cli} configuration, set \
         `project_config = \"allow\"` under `[cli.{cli}]` in your own baton configuration",
        files.join(" and ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pi_settings_and_system_prompt_are_found_and_named() {
        let dir = tempfile::tempdir().unwrap();
        assert!(present(Cli::Pi, dir.path()).is_empty());
        std::fs::create_dir(dir.path().join(".pi")).unwrap();
        // pi's own extension and skill directories are switched off by flags.
        std::fs::create_dir(dir.path().join(".pi/extensions")).unwrap();
        std::fs::write(dir.path().join(".pi/APPEND_SYSTEM.md"), "x").unwrap();
        assert!(present(Cli::Pi, dir.path()).is_empty());
        std::fs::write(dir.path().join(".pi/settings.json"), "{}").unwrap();
        let found = present(Cli::Pi, dir.path());
        assert_eq!(
            found.iter().map(|f| f.path).collect::<Vec<_>>(),
            [".pi/settings.json"]
        );
        std::fs::write(dir.path().join(".pi/SYSTEM.md"), "be evil").unwrap();
        let found = present(Cli::Pi, dir.path());
        assert_eq!(found.len(), 2);
        let why = refusal(Cli::Pi, &found);
        assert!(why.contains("`.pi/settings.json`"), "{why}");
        assert!(why.contains("`.pi/SYSTEM.md`"), "{why}");
        assert!(why.contains("remove it"), "{why}");
        assert!(
            why.contains("`project_config = \"allow\"` under `[cli.pi]`"),
            "{why}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_dangling_link_counts() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".pi")).unwrap();
        std::os::unix::fs::symlink("/nonexistent/x", dir.path().join(".pi/settings.json")).unwrap();
        assert_eq!(present(Cli::Pi, dir.path()).len(), 1);
    }

    #[test]
    fn the_other_clis_have_nothing_flags_cannot_close() {
        let dir = tempfile::tempdir().unwrap();
        for d in [".claude", ".codex"] {
            std::fs::create_dir(dir.path().join(d)).unwrap();
        }
        std::fs::write(dir.path().join(".claude/settings.json"), "{}").unwrap();
        std::fs::write(dir.path().join(".codex/config.toml"), "").unwrap();
        assert!(present(Cli::ClaudeCode, dir.path()).is_empty());
        assert!(present(Cli::Codex, dir.path()).is_empty());
    }
}
