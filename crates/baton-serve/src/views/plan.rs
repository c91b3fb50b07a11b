//! The plan pages: the planning documents of the configured folder, named by kind (never by
//! path), and `baton check`'s findings linked to their lines.

use super::ViewError;
use crate::Project;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A planning document the board may show, by its kind: the URL names the kind, never a path.
#[derive(Debug, Clone, Serialize)]
pub struct PlanDoc {
    /// `brief`, `prd`, `architecture`, `epics`, `quick-spec`.
    pub kind: &'static str,
    /// Its path, relative to the project.
    pub file: String,
    /// Findings in it.
    pub findings: usize,
}

/// The plan page.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// The planning folder, relative to the project.
    pub folder: String,
    /// Its documents.
    pub docs: Vec<PlanDoc>,
    /// `baton check`'s findings (`None`: no epics document to check).
    pub findings: Option<Vec<FindingLink>>,
}

/// A `baton check` finding with the page and line it points at.
#[derive(Debug, Clone, Serialize)]
pub struct FindingLink {
    /// The finding.
    #[serde(flatten)]
    pub finding: baton_core::plan::check::Finding,
    /// The document kind it is in, when it is one the board shows.
    pub doc: Option<&'static str>,
}

fn plan_files(project: &Project) -> Vec<(&'static str, PathBuf)> {
    let found = baton_store::planning::find(&project.planning_dir);
    [
        ("brief", found.brief),
        ("prd", found.prd),
        ("architecture", found.architecture),
        ("epics", found.epics),
        ("quick-spec", found.quick_spec),
    ]
    .into_iter()
    .filter_map(|(k, p)| Some((k, p?)))
    .collect()
}

/// Builds the plan page.
pub fn plan(project: &Project) -> Plan {
    let root = &project.root;
    let files = plan_files(project);
    let findings = baton_store::planning::load(&project.planning_dir, root)
        .ok()
        .and_then(|p| p.check());
    let shown = |p: &Path| baton_store::planning::shown(root, p);
    let links: Option<Vec<FindingLink>> = findings.map(|fs| {
        fs.into_iter()
            .map(|f| FindingLink {
                doc: files
                    .iter()
                    .find(|(_, p)| shown(p) == f.file)
                    .map(|(k, _)| *k),
                finding: f,
            })
            .collect()
    });
    Plan {
        folder: shown(&project.planning_dir),
        docs: files
            .iter()
            .map(|(kind, p)| PlanDoc {
                kind,
                file: shown(p),
                findings: links
                    .iter()
                    .flatten()
                    .filter(|l| l.doc == Some(*kind))
                    .count(),
            })
            .collect(),
        findings: links,
    }
}

/// One planning document, line by line, with the findings on each line.
#[derive(Debug, Clone, Serialize)]
pub struct PlanText {
    /// The kind.
    pub kind: &'static str,
    /// Its path, relative to the project.
    pub file: String,
    /// Its lines.
    pub lines: Vec<PlanLine>,
}

/// A line of a planning document.
#[derive(Debug, Clone, Serialize)]
pub struct PlanLine {
    /// 1-based.
    pub number: usize,
    /// The text.
    pub text: String,
    /// Findings on it.
    pub findings: Vec<String>,
}

/// The planning document of `kind`, read from the planning folder only.
pub fn plan_doc(project: &Project, kind: &str) -> Result<PlanText, ViewError> {
    let plan = plan(project);
    let (kind, path) = plan_files(project)
        .into_iter()
        .find(|(k, _)| *k == kind)
        .ok_or_else(|| ViewError::NotFound(format!("no `{kind}` document in `{}`", plan.folder)))?;
    // Only a regular file inside the planning folder (no link leading elsewhere) is read.
    let inside = super::inside(&path, &project.planning_dir);
    let text = inside
        .then(|| baton_store::bounded::read_to_string(&path, baton_store::bounded::DOCUMENT_LIMIT))
        .and_then(Result::ok)
        .ok_or_else(|| ViewError::NotFound(format!("cannot read the `{kind}` document")))?;
    let mut on_line: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for l in plan
        .findings
        .iter()
        .flatten()
        .filter(|l| l.doc == Some(kind))
    {
        on_line.entry(l.finding.line).or_default().push(format!(
            "{}: {}",
            l.finding.severity.as_str(),
            l.finding.message
        ));
    }
    Ok(PlanText {
        kind,
        file: baton_store::planning::shown(&project.root, &path),
        lines: text
            .lines()
            .enumerate()
            .map(|(i, t)| PlanLine {
                number: i + 1,
                text: t.to_owned(),
                findings: on_line.remove(&(i + 1)).unwrap_or_default(),
            })
            .collect(),
    })
}
