//! Finding the planning documents in a planning folder (BMAD-FORMAT.md R2).
//!
//! The folder is scanned (not recursively) for the brief (`*brief*.md`), the PRD (`*prd*.md`),
//! the architecture (`*architecture*.md`), the epics (`*epic*.md`, or a sharded `epics/index.md`),
//! a quick spec (`tech-spec*.md`) and readiness reports (`implementation-readiness-report-*.md`).
//! When several files match, the canonical name wins (`prd.md`), then the shortest name, so a
//! `prd-validation-report.md` beside `prd.md` is never taken for the PRD.
//!
//! The epics are read as BMad's sprint planning reads them: every epics document of the folder
//! (`epics.md`, `epic-*.md`, `epics-*.md`, … — every `*epic*.md` that is not a report or a
//! retrospective — and every sharded `*epic*/` folder with an `index.md`), trusting content over
//! the name: a document without one epic or story heading plans nothing and is left out. The
//! canonical `epics.md` (or `epics/`) is read first, then the others by name. When a document
//! exists both whole (`epics.md`) and sharded (`epics/`), which one is current is the person's
//! call, as BMad's instructions say: [`EpicsVersion`] carries the answer, and without one the
//! whole version is read and the pair reported in [`LoadedPlan::undecided`] for the caller to ask.

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
    /// The epics of every epics document read.
    pub epics: Option<Epics>,
    /// Documents that exist both whole and sharded when nobody said which is current: the whole
    /// version was read.
    pub undecided: Vec<Twin>,
}

/// Which version of an epics document that exists both whole and sharded is current.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EpicsVersion {
    /// Nobody said: the whole file is read and the pair reported.
    #[default]
    Undecided,
    /// The whole file (`epics.md`).
    Whole,
    /// The sharded folder (`epics/`).
    Sharded,
}

/// An epics document that exists both whole and sharded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Twin {
    /// The whole file.
    pub whole: PathBuf,
    /// The sharded folder's index.
    pub sharded: PathBuf,
}

/// One epics document found: a whole file or a sharded folder's `index.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EpicsSource {
    /// A whole file.
    Whole(PathBuf),
    /// A sharded folder, by its `index.md`.
    Sharded(PathBuf),
}

impl EpicsSource {
    /// The file (whole) or index (sharded).
    pub fn path(&self) -> &Path {
        match self {
            EpicsSource::Whole(p) | EpicsSource::Sharded(p) => p,
        }
    }

    /// The document's name without `.md` (`epics` for `epics.md` and for `epics/index.md`).
    fn stem(&self) -> String {
        let named = match self {
            EpicsSource::Whole(p) => p.file_stem(),
            EpicsSource::Sharded(p) => p.parent().and_then(Path::file_name),
        };
        named
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
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

/// The shards beside a sharded index, in the order of the document they were cut from: first
/// the files the index links to, in the order it links them (BMad's shard tool writes the index
/// as the table of contents of the original document), then every other `.md` file of the folder:
/// those without a number first (`epic-list.md`), then by the first number in the name
/// (`epic-2-oauth2.md` is epic 2, before `epic-10-…`), then by name.
fn shard_files(index: &Path, index_text: &str) -> Vec<PathBuf> {
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
    let name = |p: &PathBuf| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let linked = index_links(index_text);
    let key = |p: &PathBuf| {
        let n = name(p);
        let at = linked.iter().position(|l| *l == n).unwrap_or(usize::MAX);
        let number = n
            .split(|c: char| !c.is_ascii_digit())
            .find(|run| !run.is_empty())
            .map(|run| run.parse::<u64>().unwrap_or(u64::MAX));
        (at, number, n)
    };
    files.sort_by_key(key);
    files
}

/// The `.md` file names an index links to (`[Epic 1](./epic-1-foundation.md)`), in order, each
/// once; links into other folders or to other sites are not shards.
fn index_links(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (i, _) in text.match_indices("](") {
        let rest = &text[i + 2..];
        let Some(end) = rest.find(')') else { continue };
        let target = rest[..end].trim();
        let target = target.split('#').next().unwrap_or_default();
        let target = target.strip_prefix("./").unwrap_or(target);
        if target.ends_with(".md") && !target.contains('/') && !target.contains(':') {
            let t = target.to_owned();
            if !out.contains(&t) {
                out.push(t);
            }
        }
    }
    out
}

/// Finds and parses the planning documents in `dir`; paths in findings are shown relative to
/// `root`. A document both whole and sharded is read whole and reported as undecided.
pub fn load(dir: &Path, root: &Path) -> Result<LoadedPlan, ReadError> {
    load_choosing(dir, root, EpicsVersion::Undecided)
}

/// [`load`], reading `version` of each epics document that exists both whole and sharded.
pub fn load_choosing(
    dir: &Path,
    root: &Path,
    version: EpicsVersion,
) -> Result<LoadedPlan, ReadError> {
    let found = find(dir);
    let prd = match &found.prd {
        Some(p) => Some(docs::parse_prd(&shown(root, p), &read(p)?)),
        None => None,
    };
    let architecture = match &found.architecture {
        Some(p) => Some(docs::parse_architecture(&shown(root, p), &read(p)?)),
        None => None,
    };
    let twins = twins(&found.epics_documents);
    let skipped = |source: &EpicsSource| match source {
        EpicsSource::Whole(p) => {
            version == EpicsVersion::Sharded && twins.iter().any(|t| t.whole == *p)
        }
        EpicsSource::Sharded(p) => {
            version != EpicsVersion::Sharded && twins.iter().any(|t| t.sharded == *p)
        }
    };
    let mut documents = Vec::new();
    for source in found.epics_documents.iter().filter(|s| !skipped(s)) {
        let files = match source {
            EpicsSource::Whole(p) => vec![(shown(root, p), read(p)?)],
            EpicsSource::Sharded(p) => {
                let index = read(p)?;
                let mut files = Vec::new();
                for s in shard_files(p, &index) {
                    files.push((shown(root, &s), read(&s)?));
                }
                files.insert(0, (shown(root, p), index));
                files
            }
        };
        let name = match source {
            EpicsSource::Whole(p) => shown(root, p),
            EpicsSource::Sharded(p) => format!("{}/", shown(root, p.parent().unwrap_or(p))),
        };
        documents.push((name, files));
    }
    // Content over name: a document that plans nothing is no epics document, unless it is the
    // only one (then its findings still say what is wrong with it).
    if documents.len() > 1 {
        documents.retain(|(_, files)| !baton_core::plan::bmad::parse(files).keys().is_empty());
    }
    let epics = (!documents.is_empty()).then(|| docs::parse_epics_documents(&documents));
    Ok(LoadedPlan {
        docs: found,
        prd,
        architecture,
        epics,
        undecided: if version == EpicsVersion::Undecided {
            twins
        } else {
            Vec::new()
        },
    })
}

/// The documents found both whole (`X.md`) and sharded (`X/index.md`).
fn twins(sources: &[EpicsSource]) -> Vec<Twin> {
    let mut out = Vec::new();
    for s in sources {
        let EpicsSource::Sharded(index) = s else {
            continue;
        };
        let stem = s.stem();
        if let Some(whole) = sources
            .iter()
            .find(|w| matches!(w, EpicsSource::Whole(_)) && w.stem() == stem)
        {
            out.push(Twin {
                whole: whole.path().to_path_buf(),
                sharded: index.clone(),
            });
        }
    }
    out
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
    /// Every epics document, whole or sharded, in reading order: the canonical `epics.md` and
    /// `epics/` first, then by name, a whole file before its sharded twin.
    pub epics_documents: Vec<EpicsSource>,
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
        epics_documents: Vec::new(),
    };
    if docs.epics.is_none() {
        let sharded = dir.join("epics").join("index.md");
        if sharded.is_file() {
            docs.epics = Some(sharded);
        }
    }
    let mut sources: Vec<EpicsSource> = files
        .iter()
        .filter(|f| epics_like(f))
        .map(|f| EpicsSource::Whole(dir.join(f)))
        .collect();
    let mut folders: Vec<String> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|n| epics_like(n) && dir.join(n).join("index.md").is_file())
        .collect();
    folders.sort();
    sources.extend(
        folders
            .iter()
            .map(|n| EpicsSource::Sharded(dir.join(n).join("index.md"))),
    );
    let canonical = names::EPICS.trim_end_matches(".md");
    sources.sort_by_key(|s| {
        let stem = s.stem();
        (
            stem != canonical,
            stem,
            matches!(s, EpicsSource::Sharded(_)),
        )
    });
    docs.epics_documents = sources;
    docs
}

/// Whether a file or folder name names an epics document: it says `epic`, and it is no report,
/// validation or retrospective.
fn epics_like(name: &str) -> bool {
    let l = name.to_lowercase();
    l.contains("epic")
        && !l.starts_with(names::READINESS_PREFIX)
        && !l.contains("validation")
        && !l.contains("report")
        && !l.contains("retro")
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

    #[test]
    fn shards_follow_the_index_then_the_epic_number_not_every_digit() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let epics = dir.path().join("epics");
        fs::create_dir(&epics).unwrap_or_else(|e| panic!("{e}"));
        for f in [
            "epic-1-setup.md",
            "epic-2-oauth2-and-s3.md",
            "epic-3-export.md",
            "epic-10-late.md",
            "epic-list.md",
            "overview.md",
        ] {
            fs::write(epics.join(f), "x").unwrap_or_else(|e| panic!("{e}"));
        }
        let names = |index: &str| -> Vec<String> {
            shard_files(&epics.join("index.md"), index)
                .iter()
                .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                .collect()
        };
        assert_eq!(
            names(""),
            [
                "epic-list.md",
                "overview.md",
                "epic-1-setup.md",
                "epic-2-oauth2-and-s3.md",
                "epic-3-export.md",
                "epic-10-late.md"
            ]
        );
        let index = "# Epics\n\n- [Overview](./overview.md)\n- [Epic List](./epic-list.md)\n\
                     - [Epic 3](./epic-3-export.md#top)\n- [site](https://x.example/a.md)\n";
        assert_eq!(
            names(index),
            [
                "overview.md",
                "epic-list.md",
                "epic-3-export.md",
                "epic-1-setup.md",
                "epic-2-oauth2-and-s3.md",
                "epic-10-late.md"
            ]
        );
    }

    #[test]
    fn every_epics_document_is_found_canonical_first_and_twins_are_undecided() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let d = dir.path();
        let write = |f: &str, text: &str| {
            if let Some(parent) = d.join(f).parent() {
                fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{e}"));
            }
            fs::write(d.join(f), text).unwrap_or_else(|e| panic!("{e}"));
        };
        write(
            "epics-next.md",
            "## Epic 28: Sync\n### Story 28.1: Daemon\n",
        );
        write("epics.md", "## Epic 1: A\n### Story 1.1: One\n");
        write("epic-cli-ux.md", "# Notes on the CLI, no epics here\n");
        write("epics-validation-report.md", "## Epic 9: not a plan\n");
        write("epic-2-retro-2026-11-20.md", "## Epic 2\n");
        write("epics/index.md", "- [Epic 1](./epic-1.md)\n");
        write(
            "epics/epic-1.md",
            "## Epic 1: A\n### Story 1.1: One, resharded\n",
        );
        let names: Vec<String> = find(d)
            .epics_documents
            .iter()
            .map(|s| shown(d, s.path()))
            .collect();
        assert_eq!(
            names,
            [
                "epics.md",
                "epics/index.md",
                "epic-cli-ux.md",
                "epics-next.md"
            ]
        );
        let keys = |v: EpicsVersion| {
            let l = load_choosing(d, d, v).unwrap_or_else(|e| panic!("{e}"));
            let undecided = l.undecided.len();
            let e = l.epics.unwrap_or_else(|| panic!("epics"));
            (e.plan.keys(), e.documents.len(), undecided)
        };
        let (whole, docs, undecided) = keys(EpicsVersion::Undecided);
        assert_eq!(
            (docs, undecided),
            (2, 1),
            "the note plans nothing and is left out"
        );
        assert!(whole.contains(&"1-1-one".to_owned()), "{whole:?}");
        assert!(whole.contains(&"28-1-daemon".to_owned()), "{whole:?}");
        let (sharded, _, undecided) = keys(EpicsVersion::Sharded);
        assert_eq!(undecided, 0);
        assert!(
            sharded.contains(&"1-1-one-resharded".to_owned()),
            "{sharded:?}"
        );
        assert!(!sharded.contains(&"1-1-one".to_owned()), "{sharded:?}");
        assert_eq!(keys(EpicsVersion::Whole).0, whole);
    }
}
