//! The tool targets BMad's installer offers, and where each puts the skills it installs: the
//! installer's own table (`tools/installer/ide/platform-codes.yaml` of `bmad-method` 6.12,
//! `platforms.<id>.installer.target_dir`), copied here because an installed project does not
//! carry it. A test compares this copy with the installer's `--list-tools` so the two cannot
//! drift apart.
//!
//! An install records the targets it was made for in `_bmad/_config/manifest.yaml` (`ides:`);
//! [`installed`] reads them, so skills are looked for where those targets put them first.

use std::path::Path;

/// One tool target of BMad's installer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// Its id (`--tools codex`).
    pub id: &'static str,
    /// Its display name.
    pub name: &'static str,
    /// Where it puts skills, relative to the project root.
    pub dir: &'static str,
}

impl Target {
    /// The baton worker that drives this target's tool: `claude-code`, `codex` or `pi` (a
    /// coding-agent CLI baton runs), otherwise `native` (baton's own loop, any provider).
    pub fn worker(&self) -> &'static str {
        match self.id {
            "claude-code" => "claude-code",
            "codex" => "codex",
            "pi" => "pi",
            _ => "native",
        }
    }
}

macro_rules! targets {
    ($(($id:literal, $name:literal, $dir:literal)),* $(,)?) => {
        /// Every target, in the installer's table order.
        pub const TARGETS: &[Target] = &[$(Target { id: $id, name: $name, dir: $dir }),*];
    };
}

targets![
    ("adal", "AdaL", ".adal/skills"),
    ("amp", "Sourcegraph Amp", ".agents/skills"),
    ("antigravity", "Google Antigravity", ".agent/skills"),
    ("antigravity-cli", "Antigravity CLI (AGY)", ".agents/skills"),
    ("auggie", "Auggie", ".agents/skills"),
    ("bob", "IBM Bob", ".bob/skills"),
    ("claude-code", "Claude Code", ".claude/skills"),
    ("cline", "Cline", ".cline/skills"),
    ("codex", "Codex", ".agents/skills"),
    ("codewhale", "CodeWhale", ".codewhale/skills"),
    ("codebuddy", "CodeBuddy", ".codebuddy/skills"),
    ("command-code", "Command Code", ".agents/skills"),
    ("cortex", "Snowflake Cortex Code", ".cortex/skills"),
    ("crush", "Crush", ".agents/skills"),
    ("cursor", "Cursor", ".agents/skills"),
    ("droid", "Factory Droid", ".factory/skills"),
    ("firebender", "Firebender", ".firebender/skills"),
    ("gemini", "Gemini CLI", ".agents/skills"),
    ("github-copilot", "GitHub Copilot", ".agents/skills"),
    ("goose", "Block Goose", ".agents/skills"),
    ("grok", "Grok", ".agents/skills"),
    ("hermes", "Hermes Agent", ".agents/skills"),
    ("iflow", "iFlow", ".iflow/skills"),
    ("junie", "Junie", ".junie/skills"),
    ("kilo", "KiloCoder", ".agents/skills"),
    ("kimi-code", "Kimi Code", ".agents/skills"),
    ("kiro", "Kiro", ".kiro/skills"),
    ("kode", "Kode", ".kode/skills"),
    ("mistral-vibe", "Mistral Vibe", ".agents/skills"),
    ("mux", "Mux", ".agents/skills"),
    ("neovate", "Neovate", ".neovate/skills"),
    ("ona", "Ona", ".ona/skills"),
    ("openclaw", "OpenClaw", ".agents/skills"),
    ("opencode", "OpenCode", ".agents/skills"),
    ("openhands", "OpenHands", ".agents/skills"),
    ("pi", "Pi", ".agents/skills"),
    ("pochi", "Pochi", ".agents/skills"),
    ("polytoken", "Polytoken", ".agents/skills"),
    ("qoder", "Qoder", ".qoder/skills"),
    ("qwen", "QwenCoder", ".qwen/skills"),
    ("replit", "Replit Agent", ".agents/skills"),
    ("roo", "Roo Code", ".agents/skills"),
    ("rovo-dev", "Rovo Dev", ".agents/skills"),
    ("trae", "Trae", ".trae/skills"),
    ("warp", "Warp", ".agents/skills"),
    ("windsurf", "Windsurf", ".agents/skills"),
    ("zcode", "ZCode", ".zcode/skills"),
    ("zencoder", "Zencoder", ".zencoder/skills"),
];

/// The target with id `id`.
pub fn target(id: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.id == id)
}

/// The installer's record of an install: `_bmad/_config/manifest.yaml`.
pub const INSTALL_MANIFEST: &str = "_bmad/_config/manifest.yaml";

/// The targets the project was installed for (the `ides:` list of [`INSTALL_MANIFEST`]), known
/// ones only, in the order written.
pub fn installed(root: &Path) -> Vec<&'static Target> {
    let Ok(text) = std::fs::read_to_string(root.join(INSTALL_MANIFEST)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if !line.starts_with([' ', '-', '\t']) && !line.trim().is_empty() {
            inside = line.trim_end() == "ides:";
            continue;
        }
        if !inside {
            continue;
        }
        let Some(id) = line.trim().strip_prefix("- ") else {
            continue;
        };
        let id = id.trim().trim_matches(['"', '\'']);
        if let Some(t) = target(id)
            && !out.contains(&t)
        {
            out.push(t);
        }
    }
    out
}

/// Every distinct skills folder of the table, the installed targets' first.
pub fn skill_dirs(root: &Path) -> Vec<&'static str> {
    let mut dirs: Vec<&'static str> = installed(root).iter().map(|t| t.dir).collect();
    for t in TARGETS {
        if !dirs.contains(&t.dir) {
            dirs.push(t.dir);
        }
    }
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_install_record_names_its_targets_and_their_folders_come_first() {
        let d = tempfile::tempdir().unwrap();
        let m = d.path().join(INSTALL_MANIFEST);
        std::fs::create_dir_all(m.parent().unwrap()).unwrap();
        std::fs::write(
            &m,
            "installation:\n  version: 6.12.0\nmodules:\n  - name: core\nides:\n  - pi\n  - cline\n  - not-a-tool\n",
        )
        .unwrap();
        let ids: Vec<&str> = installed(d.path()).iter().map(|t| t.id).collect();
        assert_eq!(ids, ["pi", "cline"]);
        let dirs = skill_dirs(d.path());
        assert_eq!(&dirs[..2], [".agents/skills", ".cline/skills"]);
        assert!(dirs.contains(&".claude/skills"));
        assert_eq!(target("pi").map(Target::worker), Some("pi"));
        assert_eq!(target("cursor").map(Target::worker), Some("native"));
    }
}
