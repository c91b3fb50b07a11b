//! The BMad skills installed in a project, as BMad's installer leaves them: the manifest
//! `_bmad/_config/skill-manifest.csv` (id, name, description, module, source path) names them,
//! and the files live where the installer put them for the coding tool (`.claude/skills/<name>/`,
//! with `SKILL.md`, `references/`, `assets/`), or at the manifest's path. A skill with
//! `references/headless.md` or `assets/headless-schemas.md` has a headless mode.
//!
//! Paths come from files a cloned repository ships, so every one is checked to stay inside the
//! project: a manifest row pointing elsewhere is refused with its line. [`config`] reads the
//! project's BMad configuration the skills resolve their `{placeholders}` from.

use std::path::{Component, Path, PathBuf};

/// The manifest, relative to the project root.
pub const MANIFEST: &str = "_bmad/_config/skill-manifest.csv";

/// Where the installer puts skills for Claude Code, relative to the project root.
pub const CLAUDE_SKILLS: &str = ".claude/skills";

/// The files that declare a skill's headless mode, the first found wins: its protocol, or the
/// schemas of the JSON status it ends with.
const HEADLESS: [&str; 2] = ["references/headless.md", "assets/headless-schemas.md"];

/// An installed skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Its name (`bmad-prd`).
    pub name: String,
    /// What it is for (from the manifest; empty when only the files were found).
    pub description: String,
    /// Its module (`bmm`, `core`; empty when unknown).
    pub module: String,
    /// Its `SKILL.md`.
    pub instructions: PathBuf,
    /// Its `references/headless.md` (or, without one, `assets/headless-schemas.md`), when it has
    /// a headless mode.
    pub headless: Option<PathBuf>,
}

impl Skill {
    /// The skill's folder.
    pub fn dir(&self) -> &Path {
        self.instructions.parent().unwrap_or(Path::new("."))
    }
}

/// Why a skill cannot be found or trusted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillError {
    /// No installed skill has the name.
    #[error("no BMad skill `{name}` is installed{}", suggest(.known))]
    Unknown {
        /// The name asked for.
        name: String,
        /// The names that are installed.
        known: Vec<String>,
    },
    /// A manifest row whose path leaves the project.
    #[error("`{MANIFEST}`:{line}: the path `{path}` leaves the project")]
    Escapes {
        /// The line.
        line: usize,
        /// The path.
        path: String,
    },
    /// The manifest cannot be read as BMad writes it.
    #[error("`{MANIFEST}`:{line}: {why}")]
    Manifest {
        /// The line.
        line: usize,
        /// What is wrong.
        why: String,
    },
}

fn suggest(known: &[String]) -> String {
    if known.is_empty() {
        "; install BMad with `npx bmad-method install`".to_owned()
    } else {
        format!("; installed: {}", known.join(", "))
    }
}

/// One row of a CSV file as BMad writes it: fields separated by commas, a field in double quotes
/// may hold commas, and `""` inside quotes is one quote.
fn csv_row(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    let mut was_quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') if field.is_empty() && !was_quoted => {
                quoted = true;
                was_quoted = true;
            }
            (false, ',') => {
                fields.push(std::mem::take(&mut field));
                was_quoted = false;
            }
            (false, c) => field.push(c),
        }
    }
    if quoted {
        return Err("a quoted field is never closed".into());
    }
    fields.push(field);
    Ok(fields)
}

/// Whether `rel` is a relative path that stays inside the project.
fn inside(rel: &str) -> bool {
    let p = Path::new(rel);
    !rel.is_empty()
        && p.components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// A skill's name as a folder name: letters, digits, `-`, `_`.
fn plain(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Every skill installed in `root`, by name.
pub fn list(root: &Path) -> Result<Vec<Skill>, SkillError> {
    let mut out: Vec<Skill> = Vec::new();
    if let Ok(text) = std::fs::read_to_string(root.join(MANIFEST)) {
        let mut lines = text.lines().enumerate();
        let header = lines
            .next()
            .map(|(_, l)| csv_row(l))
            .transpose()
            .map_err(|why| SkillError::Manifest { line: 1, why })?
            .unwrap_or_default();
        let col = |name: &str| header.iter().position(|h| h.trim() == name);
        let (Some(name_col), Some(path_col)) = (col("name"), col("path")) else {
            return Err(SkillError::Manifest {
                line: 1,
                why: "the header names no `name` and `path` columns".into(),
            });
        };
        let (desc_col, module_col) = (col("description"), col("module"));
        for (i, line) in lines {
            if line.trim().is_empty() {
                continue;
            }
            let row = csv_row(line).map_err(|why| SkillError::Manifest { line: i + 1, why })?;
            let get = |c: Option<usize>| c.and_then(|c| row.get(c)).cloned().unwrap_or_default();
            let name = get(Some(name_col));
            let path = get(Some(path_col));
            if !plain(&name) {
                continue;
            }
            if !path.is_empty() && !inside(&path) {
                return Err(SkillError::Escapes { line: i + 1, path });
            }
            let installed = root.join(CLAUDE_SKILLS).join(&name).join("SKILL.md");
            let instructions = if installed.is_file() {
                installed
            } else if !path.is_empty() && root.join(&path).is_file() {
                root.join(&path)
            } else {
                continue;
            };
            out.push(skill(name, get(desc_col), get(module_col), instructions));
        }
    }
    // Skills installed for the tool without a manifest row (a hand-installed one).
    if let Ok(dirs) = std::fs::read_dir(root.join(CLAUDE_SKILLS)) {
        for d in dirs.flatten() {
            let name = d.file_name().to_string_lossy().into_owned();
            let instructions = d.path().join("SKILL.md");
            if plain(&name) && instructions.is_file() && !out.iter().any(|s| s.name == name) {
                out.push(skill(name, String::new(), String::new(), instructions));
            }
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

fn skill(name: String, description: String, module: String, instructions: PathBuf) -> Skill {
    let headless = instructions
        .parent()
        .and_then(|d| HEADLESS.iter().map(|f| d.join(f)).find(|p| p.is_file()));
    Skill {
        name,
        description,
        module,
        instructions,
        headless,
    }
}

/// The installed skill `name`.
pub fn find(root: &Path, name: &str) -> Result<Skill, SkillError> {
    let all = list(root)?;
    match all.iter().find(|s| s.name == name) {
        Some(s) => Ok(s.clone()),
        None => Err(SkillError::Unknown {
            name: name.to_owned(),
            known: all.into_iter().map(|s| s.name).collect(),
        }),
    }
}

/// The project's BMad configuration (`_bmad/core/config.yaml`, then each module's, later
/// winning), its top-level scalars with `{project-root}` made relative.
pub fn config(root: &Path) -> Vec<(String, String)> {
    let mut files = vec![root.join("_bmad/core/config.yaml")];
    if let Ok(dirs) = std::fs::read_dir(root.join("_bmad")) {
        let mut more: Vec<_> = dirs
            .flatten()
            .map(|d| d.path().join("config.yaml"))
            .filter(|p| p.is_file() && !p.starts_with(root.join("_bmad/core")))
            .collect();
        more.sort();
        files.extend(more);
    }
    let mut out: Vec<(String, String)> = Vec::new();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        for line in text.lines() {
            if line.starts_with([' ', '\t', '#', '-']) {
                continue;
            }
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            let k = k.trim();
            let v = v.trim().trim_matches('"').trim_matches('\'');
            if k.is_empty() || v.is_empty() || !k.chars().all(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let v = v
                .replace("{project-root}/", "")
                .replace("{project-root}", ".");
            out.retain(|(old, _)| old != k);
            out.push((k.to_owned(), v));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_rows_as_bmad_writes_them() {
        assert_eq!(
            csv_row(r#""a","b, c","say ""hi""",,plain"#).unwrap(),
            vec!["a", "b, c", "say \"hi\"", "", "plain"]
        );
        assert!(csv_row(r#""open"#).is_err());
    }

    fn project(manifest: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let m = dir.path().join(MANIFEST);
        std::fs::create_dir_all(m.parent().unwrap()).unwrap();
        std::fs::write(&m, manifest).unwrap();
        dir
    }

    #[test]
    fn a_manifest_path_leaving_the_project_is_refused_with_its_line() {
        for path in ["../../etc/passwd", "/etc/passwd", "_bmad/../../x/SKILL.md"] {
            let dir = project(&format!(
                "canonicalId,name,description,module,path\n\"a\",\"a\",\"d\",\"core\",\"_bmad/a/SKILL.md\"\n\"x\",\"x\",\"d\",\"core\",\"{path}\"\n"
            ));
            assert_eq!(
                find(dir.path(), "x"),
                Err(SkillError::Escapes {
                    line: 3,
                    path: path.into()
                })
            );
        }
    }

    #[test]
    fn skills_come_from_the_tool_folder_or_the_manifest_path() {
        let dir = project(
            "canonicalId,name,description,module,path\n\"p\",\"bmad-p\",\"Plans, well\",\"bmm\",\"_bmad/bmm/p/SKILL.md\"\n\"q\",\"bmad-q\",\"\",\"core\",\"_bmad/core/q/SKILL.md\"\n\"gone\",\"bmad-gone\",\"\",\"core\",\"_bmad/core/gone/SKILL.md\"\n",
        );
        let root = dir.path();
        let p = root.join(CLAUDE_SKILLS).join("bmad-p");
        std::fs::create_dir_all(p.join("references")).unwrap();
        std::fs::write(p.join("SKILL.md"), "# p").unwrap();
        std::fs::write(p.join("references/headless.md"), "# headless").unwrap();
        let q = root.join("_bmad/core/q");
        std::fs::create_dir_all(&q).unwrap();
        std::fs::write(q.join("SKILL.md"), "# q").unwrap();
        let hand = root.join(CLAUDE_SKILLS).join("my-skill");
        std::fs::create_dir_all(&hand).unwrap();
        std::fs::write(hand.join("SKILL.md"), "# mine").unwrap();

        let s = find(root, "bmad-p").unwrap();
        assert_eq!(
            (s.description.as_str(), s.module.as_str()),
            ("Plans, well", "bmm")
        );
        assert_eq!(s.dir(), p);
        assert_eq!(s.headless, Some(p.join("references/headless.md")));
        let q_skill = find(root, "bmad-q").unwrap();
        assert_eq!(q_skill.instructions, q.join("SKILL.md"));
        assert_eq!(q_skill.headless, None);
        assert!(find(root, "my-skill").is_ok());
        let err = find(root, "bmad-gone").unwrap_err();
        assert_eq!(
            err.to_string(),
            "no BMad skill `bmad-gone` is installed; installed: bmad-p, bmad-q, my-skill"
        );
    }

    #[test]
    fn the_bmad_config_is_read_core_first_with_the_project_root_made_relative() {
        let d = tempfile::tempdir().unwrap();
        let w = |rel: &str, text: &str| {
            let p = d.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        w(
            "_bmad/core/config.yaml",
            "user_name: Core\noutput_folder: out\n",
        );
        w(
            "_bmad/bmm/config.yaml",
            "# a comment\nuser_name: Mod\nplanning_artifacts: \"{project-root}/out/plan\"\nlist:\n  - item\n",
        );
        let c = config(d.path());
        let get = |k: &str| c.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
        assert_eq!(get("user_name"), Some("Mod"));
        assert_eq!(get("output_folder"), Some("out"));
        assert_eq!(get("planning_artifacts"), Some("out/plan"));
        assert_eq!(get("list"), None);
    }
}
