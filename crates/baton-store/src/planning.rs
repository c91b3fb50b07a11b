//! Finding the planning documents in a planning folder (BMAD-FORMAT.md R2).
//!
//! The folder is scanned (not recursively) for the brief (`*brief*.md`), the PRD (`*prd*.md`),
//! the architecture (`*architecture*.md`), the epics (`*epic*.md`, or a sharded `epics/index.md`),
//! a quick spec (`tech-spec*.md`) and readiness reports (`implementation-readiness-report-*.md`).
//! When several files match, the canonical name wins (`prd.md`), then the shortest name, so a
//! `prd-validation-report.md` beside `prd.md` is never taken for the PRD.

use baton_core::plan::check::{Finding, check};
use baton_core::plan::docs::{self, Architecture, Epics, Prd};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// A planning document could not be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read `{path}`: {source}")]
pub struct ReadError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    #[source]
    pub source: io::Error,
}

/// The plan's documents, read and parsed.
#[derive(Debug, Clone, Default)]
pub struct LoadedPlan {
    /// Where they are.
    pub docs: PlanningDocs,
    /// The PRD's requirements.
    pub prd: Option<Prd>,
    /// The architecture's decisions.
    pub architecture: Option<Architecture>,
    /// The epics.
    pub epics: Option<Epics>,
}

impl LoadedPlan {
    /// The cross-reference check; `None` without an epics document.
    pub fn check(&self) -> Option<Vec<Finding>> {
        let epics = self.epics.as_ref()?;
        Some(check(self.prd.as_ref(), self.architecture.as_ref(), epics))
    }
}

/// `path` relative to `root` when under it, for messages.
pub fn shown(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

fn read(path: &Path) -> Result<String, ReadError> {
    crate::bounded::read_to_string(path, crate::bounded::DOCUMENT_LIMIT).map_err(|source| {
        ReadError {
            path: path.to_path_buf(),
            source,
        }
    })
}

/// Whether `path` is a sharded epics index (`…/epics/index.md`).
fn is_sharded(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "index.md")
}

/// The shards beside a sharded index: every other `.md` file of its folder, in natural order
/// (`epic-2.md` before `epic-10.md`).
fn shard_files(index: &Path) -> Vec<PathBuf> {
    let Some(dir) = index.parent() else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p != index)
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    let key = |p: &PathBuf| {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let digits: String = name.chars().filter(char::is_ascii_digit).collect();
        (digits.parse::<u64>().unwrap_or(u64::MAX), name)
    };
    files.sort_by_key(key);
    files
}

/// Finds and parses the planning documents in `dir`; paths in findings are shown relative to
/// `root`.
pub fn load(dir: &Path, root: &Path) -> Result<LoadedPlan, ReadError> {
    let found = find(dir);
    let prd = match &found.prd {
        Some(p) => Some(docs::parse_prd(&shown(root, p), &read(p)?)),
        None => None,
    };
    let architecture = match &found.architecture {
        Some(p) => Some(docs::parse_architecture(&shown(root, p), &read(p)?)),
        None => None,
    };
    let epics = match &found.epics {
        Some(p) if is_sharded(p) => {
            let mut shards = Vec::new();
            for s in shard_files(p) {
                shards.push((shown(root, &s), read(&s)?));
            }
            Some(docs::parse_epics_sharded(
                (&shown(root, p), &read(p)?),
                &shards,
            ))
        }
        Some(p) => Some(docs::parse_epics(&shown(root, p), &read(p)?)),
        None => None,
    };
    Ok(LoadedPlan {
        docs: found,
        prd,
        architecture,
        epics,
    })
}

/// The planning documents found; `None` where there is none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlanningDocs {
    /// The product brief.
    pub brief: Option<PathBuf>,
    /// The PRD.
    pub prd: Option<PathBuf>,
    /// The architecture document.
    pub architecture: Option<PathBuf>,
    /// The epics document (a sharded `epics/index.md` when there is no whole file).
    pub epics: Option<PathBuf>,
    /// The quick spec.
    pub quick_spec: Option<PathBuf>,
    /// Readiness reports, oldest name first.
    pub readiness: Vec<PathBuf>,
}

/// Canonical file names baton writes.
pub mod names {
    /// The product brief.
    pub const BRIEF: &str = "product-brief.md";
    /// The PRD.
    pub const PRD: &str = "prd.md";
    /// The architecture.
    pub const ARCHITECTURE: &str = "architecture.md";
    /// The epics.
    pub const EPICS: &str = "epics.md";
    /// The quick spec.
    pub const QUICK_SPEC: &str = "tech-spec.md";
    /// The readiness report's prefix; the date and `.md` follow.
    pub const READINESS_PREFIX: &str = "implementation-readiness-report-";
}

fn pick(files: &[String], canonical: &str, matches: impl Fn(&str) -> bool) -> Option<String> {
    if files.iter().any(|f| f == canonical) {
        return Some(canonical.to_owned());
    }
    files
        .iter()
        .filter(|f| matches(f))
        .min_by_key(|f| (f.len(), (*f).clone()))
        .cloned()
}

/// Scans `dir`. A missing folder finds nothing.
pub fn find(dir: &Path) -> PlanningDocs {
    let mut files: Vec<String> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|n| n.to_lowercase().ends_with(".md"))
        .collect();
    files.sort();
    let lower = |f: &str| f.to_lowercase();
    let readiness_like = |f: &str| lower(f).starts_with(names::READINESS_PREFIX);
    let report_like = |f: &str| {
        let l = lower(f);
        readiness_like(f) || l.contains("validation") || l.contains("report")
    };
    let at = |n: Option<String>| n.map(|n| dir.join(n));
    let mut docs = PlanningDocs {
        brief: at(pick(&files, names::BRIEF, |f| {
            lower(f).contains("brief") && !report_like(f)
        })),
        prd: at(pick(&files, names::PRD, |f| {
            lower(f).contains("prd") && !report_like(f)
        })),
        architecture: at(pick(&files, names::ARCHITECTURE, |f| {
            lower(f).contains("architecture") && !report_like(f)
        })),
        epics: at(pick(&files, names::EPICS, |f| {
            lower(f).contains("epic") && !report_like(f) && !lower(f).contains("retro")
        })),
        quick_spec: at(pick(&files, names::QUICK_SPEC, |f| {
            (lower(f).starts_with("tech-spec") || lower(f).starts_with("quick-spec"))
                && !lower(f).contains("archived")
        })),
        readiness: files
            .iter()
            .filter(|f| readiness_like(f))
            .map(|f| dir.join(f))
            .collect(),
    };
    if docs.epics.is_none() {
        let sharded = dir.join("epics").join("index.md");
        if sharded.is_file() {
            docs.epics = Some(sharded);
        }
    }
    docs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_names_win_and_reports_are_not_documents() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        for f in [
            "prd-validation-report.md",
            "prd.md",
            "architecture.md",
            "product-brief-tally-2026-11-20.md",
            "implementation-readiness-report-2026-11-20.md",
            "implementation-readiness-report-2026-11-21.md",
            "epics.md",
            "notes.txt",
        ] {
            fs::write(dir.path().join(f), "x").unwrap_or_else(|e| panic!("{e}"));
        }
        let d = find(dir.path());
        let name = |p: &Option<PathBuf>| {
            p.as_ref()
                .and_then(|p| p.file_name())
                .map(|n| n.to_string_lossy().into_owned())
        };
        assert_eq!(name(&d.prd).as_deref(), Some("prd.md"));
        assert_eq!(
            name(&d.brief).as_deref(),
            Some("product-brief-tally-2026-11-20.md")
        );
        assert_eq!(name(&d.epics).as_deref(), Some("epics.md"));
        assert_eq!(d.readiness.len(), 2);
        assert_eq!(d.quick_spec, None);
    }

    #[test]
    fn sharded_epics_and_a_missing_folder() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        fs::create_dir(dir.path().join("epics")).unwrap_or_else(|e| panic!("{e}"));
        fs::write(dir.path().join("epics/index.md"), "x").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            find(dir.path()).epics,
            Some(dir.path().join("epics/index.md"))
        );
        assert_eq!(find(&dir.path().join("nope")), PlanningDocs::default());
    }
}
