//! The BMad skills installed in a project, as BMad's installer leaves them: the manifest
//! `_bmad/_config/skill-manifest.csv` (id, name, description, module, source path) names them,
//! and the files live where the installer put them for the project's tool targets
//! ([`crate::bmad_targets`]: `.claude/skills/<name>/`, `.agents/skills/<name>/`, … with
//! `SKILL.md`, `references/`, `assets/`), or at the manifest's path (BMad before 6.12).
//!
//! A skill has a headless mode when its files declare one ([`Declared`]): a headless protocol
//! (`references/headless.md`), the schemas of its JSON status (`assets/headless-schemas.md`), or
//! in its `SKILL.md` a `## Headless Mode` section, a `-H`/`--headless` argument, or a headless
//! run told to end with JSON. Persona agents (`bmad-agent-*`, party members) and BMad's helpers
//! (`bmad-help`, `bmad-customize`) are installed skills but not work to run ([`Kind`]).
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
const HEADLESS: [(&str, Declared); 2] = [
    ("references/headless.md", Declared::Protocol),
    ("assets/headless-schemas.md", Declared::Schemas),
];

/// How a skill declares its headless mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Declared {
    /// `references/headless.md`, its headless protocol.
    Protocol,
    /// `assets/headless-schemas.md`, the schemas of its JSON status.
    Schemas,
    /// A `## Headless Mode` section of its `SKILL.md`.
    Section,
    /// A `-H` / `--headless` argument its `SKILL.md` accepts.
    Flag,
    /// Its `SKILL.md` tells a headless run to end with a JSON status.
    JsonEnding,
}

impl Declared {
    /// How it reads in a listing.
    pub fn as_str(self) -> &'static str {
        match self {
            Declared::Protocol => "references/headless.md",
            Declared::Schemas => "assets/headless-schemas.md",
            Declared::Section => "## Headless Mode",
            Declared::Flag => "-H / --headless",
            Declared::JsonEnding => "headless JSON ending",
        }
    }
}

/// What an installed skill is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Work a session runs (`bmad-prd`, `bmad-create-epics-and-stories`).
    Work,
    /// A persona agent (`bmad-agent-*`): a member of a party.
    Persona,
    /// One of BMad's helpers about BMad itself (`bmad-help`, `bmad-customize`).
    Helper,
}

/// BMad's helpers: about BMad itself, not work on the project.
const HELPERS: [&str; 2] = ["bmad-help", "bmad-customize"];

/// What `name` is for.
pub fn kind_of(name: &str) -> Kind {
    if name.starts_with("bmad-agent-") {
        Kind::Persona
    } else if HELPERS.contains(&name) {
        Kind::Helper
    } else {
        Kind::Work
    }
}

/// Whether `line` holds `token` as a word of its own (`-H`, `` `--headless` ``, `-H/--headless`).
fn has_token(line: &str, token: &str) -> bool {
    let apart = |c: Option<char>| c.is_none_or(|c| c.is_whitespace() || "`()/,.:;'\"".contains(c));
    line.match_indices(token).any(|(at, _)| {
        apart(line[..at].chars().next_back()) && apart(line[at + token.len()..].chars().next())
    })
}

/// The phrases telling a headless run to end with its JSON status.
const JSON_ENDINGS: [&str; 6] = [
    "end with json",
    "end with a json",
    "end with the json",
    "ends with a json",
    "return json",
    "respond with json",
];

/// How the `SKILL.md` text `text` declares a headless mode, if it does. Text in code fences
/// does not count.
pub fn declared_in(text: &str) -> Option<Declared> {
    let mut fence = false;
    let mut found = None;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("```") {
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        let heading = t.trim_start_matches('#');
        if t.starts_with("##") && heading.trim().to_lowercase().starts_with("headless") {
            return Some(Declared::Section);
        }
        if found.is_none() && (has_token(line, "-H") || has_token(line, "--headless")) {
            found = Some(Declared::Flag);
        }
        let lower = line.to_lowercase();
        if found.is_none()
            && let Some(at) = lower.find("headless")
            && JSON_ENDINGS.iter().any(|e| lower[at..].contains(e))
        {
            found = Some(Declared::JsonEnding);
        }
    }
    found
}

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
    /// The file that declares its headless mode, when it has one: `references/headless.md`,
    /// else `assets/headless-schemas.md`, else its `SKILL.md`.
    pub headless: Option<PathBuf>,
    /// How the headless mode is declared.
    pub declared: Option<Declared>,
    /// What it is for.
    pub kind: Kind,
    /// The skills folder it was found in (`.agents/skills`), or its manifest path's folder.
    pub found_in: String,
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
    let dirs = crate::bmad_targets::skill_dirs(root);
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
            let installed = dirs
                .iter()
                .map(|d| (*d, root.join(d).join(&name).join("SKILL.md")))
                .find(|(_, p)| p.is_file());
            let (found_in, instructions) = match installed {
                Some((d, p)) => (d.to_owned(), p),
                None if !path.is_empty() && root.join(&path).is_file() => {
                    let folder = Path::new(&path)
                        .parent()
                        .and_then(Path::parent)
                        .map_or_else(String::new, |p| p.display().to_string());
                    (folder, root.join(&path))
                }
                None => continue,
            };
            out.push(skill(
                name,
                get(desc_col),
                get(module_col),
                instructions,
                found_in,
            ));
        }
    }
    // Skills installed for a tool without a manifest row (a hand-installed one).
    for dir in &dirs {
        let Ok(read) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        let mut found: Vec<_> = read.flatten().collect();
        found.sort_by_key(std::fs::DirEntry::file_name);
        for d in found {
            let name = d.file_name().to_string_lossy().into_owned();
            let instructions = d.path().join("SKILL.md");
            if plain(&name) && instructions.is_file() && !out.iter().any(|s| s.name == name) {
                out.push(skill(
                    name,
                    String::new(),
                    String::new(),
                    instructions,
                    (*dir).to_owned(),
                ));
            }
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

fn skill(
    name: String,
    description: String,
    module: String,
    instructions: PathBuf,
    found_in: String,
) -> Skill {
    let by_file = instructions.parent().and_then(|d| {
        HEADLESS
            .iter()
            .map(|(f, how)| (d.join(f), *how))
            .find(|(p, _)| p.is_file())
    });
    let (headless, declared) = match by_file {
        Some((p, how)) => (Some(p), Some(how)),
        None => {
            let how = std::fs::read_to_string(&instructions)
                .ok()
                .and_then(|t| declared_in(&t));
            (how.map(|_| instructions.clone()), how)
        }
    };
    Skill {
        kind: kind_of(&name),
        name,
        description,
        module,
        instructions,
        headless,
        declared,
        found_in,
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
    fn a_headless_mode_is_read_from_what_the_skill_md_declares() {
        let table: [(&str, Option<Declared>); 8] = [
            (
                "# S\n\n## Headless Mode\n\nWhen invoked headless, do not ask.",
                Some(Declared::Section),
            ),
            (
                "**Args:** Accepts `--headless` / `-H` for a first draft.",
                Some(Declared::Flag),
            ),
            (
                "Interactive by default. With `-H`/`--headless`: skip every confirmation.",
                Some(Declared::Flag),
            ),
            (
                "Run headless without asking, and end with a JSON status object.",
                Some(Declared::JsonEnding),
            ),
            ("Talk to the user. Use -Hard mode never.", None),
            ("```\n## Headless Mode\n```\n", None),
            ("The user may ask for a headless-looking layout.", None),
            ("# Help\n\nAnswer questions about BMad.", None),
        ];
        for (text, want) in table {
            assert_eq!(declared_in(text), want, "{text:?}");
        }
        assert_eq!(kind_of("bmad-agent-pm"), Kind::Persona);
        assert_eq!(kind_of("bmad-help"), Kind::Helper);
        assert_eq!(kind_of("bmad-prd"), Kind::Work);
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
