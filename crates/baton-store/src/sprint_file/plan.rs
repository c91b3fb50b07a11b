//! Sprint planning: generating `sprint-status.yaml` from an epics document, or merging the plan
//! into an existing file (BMAD-FORMAT.md R5).
//!
//! The plan is the ordered list epic → its stories → its retrospective, with defaults `backlog`,
//! `backlog` (floored to `ready-for-dev` when the story file exists) and `optional`. A new file is
//! the caller's header plus those entries, a blank line before every epic after the first. An
//! existing file is merged in place: no status is ever lowered (a story whose file exists is
//! raised to `ready-for-dev` at most), no line, comment or unknown key is dropped, new stories are
//! inserted in epic order after their epic's last story, new epics are appended at the end of
//! `development_status`, and keys the plan no longer names are kept and reported as orphans.
//! `last_updated` is stamped; everything else keeps its bytes. When a journal is given, every
//! added key and every raise is journaled as one group (intent before the write, applied after),
//! like any other change of the sprint file.

use super::{EditError, EditOptions, LoadError, PersistError, SprintDoc};
use crate::journal::{JournalError, NewEvent, StatusEvents};
use baton_core::key::{EpicId, KeyKind, classify};
use baton_core::plan::docs::Epics;
use baton_core::stamp::Stamp;
use baton_core::status::{Status, StatusValue};
use serde::Serialize;
use std::path::Path;

/// One epic of the plan, with its keys in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedEpic {
    /// `epic-N`, the stories, `epic-N-retrospective`, each with its default status.
    pub entries: Vec<(String, Status)>,
    /// Whether one document plans all of the epic's stories. An epic two documents plan (a
    /// later phase reusing the number) is two plans under one number: a story the file has and
    /// the plan no longer names cannot be told renamed, so none is taken for a rename there.
    pub one_document: bool,
}

/// Builds the plan of an epics document as BMad's `sprint_plan.py generate` reads it (epics in
/// numeric order, keys derived as BMad derives them, a repeated story heading once): a story
/// whose file `<stories_dir>/<key>.md` exists is floored at `ready-for-dev`.
pub fn planned_from(epics: &Epics, stories_dir: &Path) -> Vec<PlannedEpic> {
    let list: Vec<(String, Vec<String>)> = epics
        .plan
        .epics
        .iter()
        .map(|(n, stories)| {
            (
                n.to_string(),
                stories.iter().map(|s| s.key.clone()).collect(),
            )
        })
        .collect();
    let mut plan = planned(&list, |k| stories_dir.join(format!("{k}.md")).is_file());
    for (epic, (_, stories)) in plan.iter_mut().zip(&epics.plan.epics) {
        let mut docs: Vec<&str> = stories
            .iter()
            .map(|s| epics.document_of(&s.file).unwrap_or(s.file.as_str()))
            .collect();
        docs.sort_unstable();
        docs.dedup();
        epic.one_document = docs.len() <= 1;
    }
    plan
}

/// What planning skips in an epics document, one line each with its file and line: repeated
/// story headings and headings that mention an epic or a story but fail BMad's patterns.
pub fn plan_warnings(epics: &Epics) -> Vec<String> {
    let p = &epics.plan;
    p.duplicates
        .iter()
        .map(|d| {
            format!(
                "{}:{}: story `{}` is written twice (first at {}:{}); planned once",
                d.file, d.line, d.key, d.first.0, d.first.1
            )
        })
        .chain(p.unparsed.iter().map(|(f, l, t)| {
            format!(
                "{f}:{l}: `{t}` reads like an epic or story heading but is not one; not planned"
            )
        }))
        .collect()
}

/// Builds the plan: for each `(epic number, story keys)`, the epic, its stories and its
/// retrospective with their default statuses; `story_exists(key)` floors a story at
/// `ready-for-dev`.
pub fn planned(
    epics: &[(String, Vec<String>)],
    story_exists: impl Fn(&str) -> bool,
) -> Vec<PlannedEpic> {
    epics
        .iter()
        .map(|(n, stories)| {
            let mut entries = vec![(format!("epic-{n}"), Status::Backlog)];
            for key in stories {
                let s = if story_exists(key) {
                    Status::ReadyForDev
                } else {
                    Status::Backlog
                };
                entries.push((key.clone(), s));
            }
            entries.push((format!("epic-{n}-retrospective"), Status::Optional));
            PlannedEpic {
                entries,
                one_document: true,
            }
        })
        .collect()
}

/// What a planning run did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PlanReport {
    /// The file did not exist and was created.
    pub created: bool,
    /// Keys added, in order, with their status.
    pub added: Vec<(String, String)>,
    /// Keys whose status was raised (story file found): key, from, to.
    pub raised: Vec<(String, String, String)>,
    /// Keys in the file the plan does not name (kept), with their status as written.
    pub orphans: Vec<(String, String)>,
    /// Keys present and left as they were.
    pub kept: usize,
    /// Stories whose title changed in the epics document, matched on their epic-story number:
    /// the key in the file (kept, with its status) and the key the new title gives.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub renamed: Vec<(String, String)>,
    /// What the epics document holds that planning skipped: repeated story headings (the first
    /// is kept, as BMad keeps it) and headings that mention an epic or a story but fail the
    /// patterns, each with its file and line.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The epics documents planned from, in reading order, when there are several.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub documents: Vec<String>,
}

/// Why planning failed; the file is unchanged.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The existing file could not be loaded.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A status could not be raised.
    #[error(transparent)]
    Edit(#[from] EditError),
    /// The write failed or was refused.
    #[error(transparent)]
    Persist(#[from] PersistError),
    /// The journal failed.
    #[error(transparent)]
    Journal(#[from] JournalError),
}

/// Who sprint planning journals its changes as, and when.
pub struct PlanJournal<'a> {
    /// The journal's status events.
    pub journal: &'a mut dyn StatusEvents,
    /// RFC 3339 timestamp of the events.
    pub at: String,
    /// The run, if any.
    pub run_id: Option<String>,
}

/// The actor sprint planning's events carry.
pub const ACTOR: &str = "orchestrator";

fn events(report: &PlanReport, at: &str, run_id: Option<&str>) -> Vec<NewEvent> {
    let ev = |key: &str, from: Option<&str>, to: &str| NewEvent {
        at: at.to_owned(),
        actor: ACTOR.to_owned(),
        key: key.to_owned(),
        from: from.map(str::to_owned),
        to: to.to_owned(),
        reason: "sprint planning".to_owned(),
        forced: false,
        run_id: run_id.map(str::to_owned),
    };
    report
        .added
        .iter()
        .map(|(k, s)| ev(k, None, s))
        .chain(report.raised.iter().map(|(k, f, t)| ev(k, Some(f), t)))
        .collect()
}

/// Runs `write` between journaling the report's events as pending and as applied (abandoned
/// when the write fails).
fn journaled<T>(
    journal: Option<&mut PlanJournal<'_>>,
    report: &PlanReport,
    write: impl FnOnce() -> Result<T, PlanError>,
) -> Result<T, PlanError> {
    let Some(j) = journal else {
        return write();
    };
    let evs = events(report, &j.at, j.run_id.as_deref());
    if evs.is_empty() {
        return write();
    }
    let ids = j.journal.record_pending(&evs)?;
    match write() {
        Ok(v) => {
            j.journal.mark_applied(&ids)?;
            Ok(v)
        }
        Err(e) => {
            j.journal.mark_abandoned(&ids)?;
            Err(e)
        }
    }
}

fn entry_lines(epic: &PlannedEpic, indent: &str) -> String {
    epic.entries
        .iter()
        .map(|(k, s)| format!("{indent}{k}: {}\n", s.as_str()))
        .collect()
}

/// The text of a new sprint file: `header` (comments and top-level keys, ending with
/// `development_status:`) followed by the plan.
pub fn render_new(header: &str, plan: &[PlannedEpic]) -> String {
    let mut text = header.to_owned();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    for (i, e) in plan.iter().enumerate() {
        if i > 0 {
            text.push('\n');
        }
        text.push_str(&entry_lines(e, "  "));
    }
    text
}

/// Byte offset of the start of 1-based `line` (text length past the end).
fn line_start(text: &str, line: usize) -> usize {
    if line <= 1 {
        return 0;
    }
    text.match_indices('\n')
        .nth(line - 2)
        .map_or(text.len(), |(i, _)| i + 1)
}

fn indent_of(s: &str) -> usize {
    s.len() - s.trim_start_matches(' ').len()
}

/// Byte offset just past entry `line` and any lines nested deeper under it (a block struct).
fn entry_end(text: &str, line: usize) -> usize {
    let start = line_start(text, line);
    let own = indent_of(&text[start..]);
    let mut pos = line_start(text, line + 1);
    let mut end = pos;
    while pos < text.len() {
        let rest = &text[pos..];
        let len = rest.find('\n').map_or(rest.len(), |i| i + 1);
        let l = rest[..len].trim_end();
        if l.trim().is_empty() || l.trim_start().starts_with('#') {
            pos += len;
            continue;
        }
        if indent_of(l) <= own {
            break;
        }
        pos += len;
        end = pos;
    }
    end
}

/// Byte offset where a new epic block goes: after the last entry of `development_status`.
fn section_end(text: &str, doc: &SprintDoc) -> usize {
    match doc.scan.entries.last() {
        Some(e) => entry_end(text, e.line),
        None => doc
            .scan
            .dev_line
            .map_or(text.len(), |l| line_start(text, l + 1)),
    }
}

/// Plans into `path`: creates the file from `header` when absent, else merges.
pub fn plan_sprint(
    path: &Path,
    header: &str,
    plan: &[PlannedEpic],
    now: Stamp,
    mut journal: Option<&mut PlanJournal<'_>>,
) -> Result<PlanReport, PlanError> {
    if !path.exists() {
        let text = render_new(header, plan);
        let report = PlanReport {
            created: true,
            added: plan
                .iter()
                .flat_map(|e| e.entries.iter())
                .map(|(k, s)| (k.clone(), s.as_str().to_owned()))
                .collect(),
            ..PlanReport::default()
        };
        journaled(journal.as_deref_mut(), &report, || {
            SprintDoc::create(path, &text)?;
            Ok(())
        })?;
        return Ok(report);
    }
    let mut doc = SprintDoc::load(path)?;
    let mut report = PlanReport::default();
    // Raises first (in-place value edits, plus the `last_updated` stamp).
    let mut changes = Vec::new();
    for (key, want) in plan.iter().flat_map(|e| e.entries.iter()) {
        let Some(entry) = doc.sprint().get(key) else {
            continue;
        };
        let kind = classify(key);
        let have = match &entry.value {
            StatusValue::Known(s) => s.projection().unwrap_or(*s).rank(kind),
            _ => None,
        };
        match (have, want.rank(kind)) {
            (Some(h), Some(w)) if w > h => {
                report.raised.push((
                    key.clone(),
                    entry.raw.clone().unwrap_or_default(),
                    want.as_str().to_owned(),
                ));
                changes.push(super::Change {
                    key: key.clone(),
                    to: *want,
                    reason: None,
                    note: None,
                });
            }
            _ => report.kept += 1,
        }
    }
    doc.apply(&changes, now, EditOptions::default())?;
    // Then insertions, computed on the edited text from the last insertion point backwards.
    let text = doc.text().to_owned();
    let fresh = SprintDoc::parse(path, text.clone())?;
    let indent = fresh
        .scan
        .entries
        .first()
        .map(|e| " ".repeat(indent_of(&text[line_start(&text, e.line)..])))
        .unwrap_or_else(|| "  ".to_owned());
    // A story the epics document renamed: a new key whose epic-story number is that of a story
    // in the file the plan no longer names. The story in the file keeps its key and status (its
    // story file and branch carry that key) and the rename is reported; it is never added again.
    // Only where that is unambiguous: the number is planned once, in an epic one document plans
    // (two plans reusing an epic's number each have their own stories, and a finished story of
    // one is never taken for a renamed story of the other).
    let named: std::collections::HashSet<&str> = plan
        .iter()
        .flat_map(|e| e.entries.iter().map(|(k, _)| k.as_str()))
        .collect();
    let mut renamed_to: std::collections::HashMap<String, String> = Default::default();
    for (k, _) in plan
        .iter()
        .filter(|e| e.one_document)
        .flat_map(|e| e.entries.iter())
    {
        if fresh.sprint().get(k).is_some() {
            continue;
        }
        let KeyKind::Story { .. } = classify(k) else {
            continue;
        };
        let same_number = plan
            .iter()
            .flat_map(|e| e.entries.iter())
            .filter(|(p, _)| classify(p) == classify(k))
            .count();
        if same_number > 1 {
            continue;
        }
        let old = fresh.scan.entries.iter().find(|e| {
            !named.contains(e.key.as_str())
                && classify(&e.key) == classify(k)
                && !renamed_to.values().any(|o| *o == e.key)
        });
        if let Some(old) = old {
            report.renamed.push((old.key.clone(), k.clone()));
            renamed_to.insert(k.clone(), old.key.clone());
        }
    }
    // Where a planned key stands in the file: its own entry, or the entry it was renamed from.
    let entry_of = |k: &str| {
        let k = renamed_to.get(k).map_or(k, String::as_str);
        fresh.scan.entries.iter().find(|e| e.key == k)
    };
    let mut inserts: Vec<(usize, String)> = Vec::new();
    let mut tail = String::new();
    for (ei, epic) in plan.iter().enumerate() {
        let new: Vec<(usize, &(String, Status))> = epic
            .entries
            .iter()
            .enumerate()
            .filter(|(_, (k, _))| entry_of(k).is_none())
            .collect();
        if new.is_empty() {
            continue;
        }
        for (_, (k, s)) in &new {
            report.added.push((k.clone(), s.as_str().to_owned()));
        }
        if new.len() == epic.entries.len() {
            // A new epic goes before the next epic of the plan the file has, or at the end.
            let block = PlannedEpic {
                entries: new.into_iter().map(|(_, e)| e.clone()).collect(),
                one_document: epic.one_document,
            };
            let next = plan[ei + 1..]
                .iter()
                .find_map(|e| e.entries.iter().find_map(|(k, _)| entry_of(k)));
            match next {
                Some(n) => inserts.push((
                    line_start(&text, n.line),
                    format!("{}\n", entry_lines(&block, &indent)),
                )),
                None => {
                    tail.push('\n');
                    tail.push_str(&entry_lines(&block, &indent));
                }
            }
            continue;
        }
        // A new key of a known epic goes right after the key the epics document puts before it
        // (its epic line, the story before it), as BMad's `generate` orders them; before the
        // next one when none before it is in the file.
        for (i, (k, s)) in new {
            let line = format!("{indent}{k}: {}\n", s.as_str());
            let before = epic.entries[..i]
                .iter()
                .rev()
                .find_map(|(p, _)| entry_of(p));
            let at = match before {
                Some(b) => entry_end(&text, b.line),
                None => match epic.entries[i + 1..].iter().find_map(|(n, _)| entry_of(n)) {
                    Some(n) => line_start(&text, n.line),
                    None => continue,
                },
            };
            inserts.push((at, line));
        }
    }
    if !tail.is_empty() {
        let at = section_end(&text, &fresh);
        let mut t = tail;
        if at > 0 && !text[..at].ends_with('\n') {
            t.insert(0, '\n');
        }
        inserts.push((at, t));
    }
    // Orphans: interpreted keys the plan does not name (and no new key renamed).
    for e in &fresh.sprint().entries {
        let kind = e.key.kind();
        let renamed = report.renamed.iter().any(|(old, _)| old == e.key.as_str());
        if kind.epic().is_some() && !named.contains(e.key.as_str()) && !renamed {
            report
                .orphans
                .push((e.key.as_str().to_owned(), e.raw.clone().unwrap_or_default()));
        }
    }
    let mut new_text = text;
    // Stable: inserts at the same offset keep plan order.
    let mut order: Vec<usize> = (0..inserts.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(inserts[i].0), std::cmp::Reverse(i)));
    for i in order {
        let (at, s) = &inserts[i];
        new_text.insert_str(*at, s);
    }
    if report.added.is_empty() && report.raised.is_empty() {
        // Already in sync: write nothing, not even `last_updated` (whose age is BMad's
        // staleness signal).
        return Ok(report);
    }
    let back = SprintDoc::parse(path, new_text.clone())?;
    doc.text = new_text;
    doc.expected_len = doc.text.len();
    doc.scan = back.scan;
    doc.sprint = back.sprint;
    doc.verify = true;
    journaled(journal, &report, || Ok(doc.persist()?))?;
    Ok(report)
}

/// The plan's epic ids, for callers that want to report which epics are new.
pub fn epic_ids(plan: &[PlannedEpic]) -> Vec<EpicId> {
    plan.iter()
        .filter_map(|e| e.entries.first().and_then(|(k, _)| classify(k).epic()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Stamp {
        Stamp::new(2026, 11, 23, 10, 0).unwrap_or_else(|| unreachable!())
    }

    const HEADER: &str = "# header\n\ngenerated: 11-20-2026 09:00\nlast_updated: 11-20-2026 09:00\nproject: t\nproject_key: NOKEY\ntracking_system: file-system\nstory_location: impl\n\ndevelopment_status:\n";

    fn plan() -> Vec<PlannedEpic> {
        planned(
            &[
                (
                    "1".to_owned(),
                    vec!["1-1-a".to_owned(), "1-2-b".to_owned(), "1-3-c".to_owned()],
                ),
                ("2".to_owned(), vec!["2-1-d".to_owned()]),
            ],
            |k| k == "1-3-c",
        )
    }

    #[test]
    fn a_new_file_lists_the_plan_in_order() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("sprint-status.yaml");
        let r = plan_sprint(&path, HEADER, &plan(), now(), None).unwrap_or_else(|e| panic!("{e}"));
        assert!(r.created);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(text.ends_with(
            "development_status:\n  epic-1: backlog\n  1-1-a: backlog\n  1-2-b: backlog\n  1-3-c: ready-for-dev\n  epic-1-retrospective: optional\n\n  epic-2: backlog\n  2-1-d: backlog\n  epic-2-retrospective: optional\n"
        ), "{text}");
    }

    #[test]
    fn a_merge_keeps_statuses_and_comments_and_appends_new_stories() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("sprint-status.yaml");
        let before = format!(
            "{HEADER}  epic-1: in-progress  # started\n  1-1-a: done\n  # the hard one\n  1-2-b: in-progress  # baton: needs-intervention (max review rounds)\n  epic-1-retrospective: optional\n\n  0-9-old: review # kept\n  x-container: {{status: done}}\n"
        );
        std::fs::write(&path, &before).unwrap_or_else(|e| panic!("{e}"));
        let r = plan_sprint(&path, HEADER, &plan(), now(), None).unwrap_or_else(|e| panic!("{e}"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            text,
            format!(
                "{}  epic-1: in-progress  # started\n  1-1-a: done\n  # the hard one\n  1-2-b: in-progress  # baton: needs-intervention (max review rounds)\n  1-3-c: ready-for-dev\n  epic-1-retrospective: optional\n\n  0-9-old: review # kept\n  x-container: {{status: done}}\n\n  epic-2: backlog\n  2-1-d: backlog\n  epic-2-retrospective: optional\n",
                HEADER.replace(
                    "last_updated: 11-20-2026 09:00",
                    "last_updated: 11-23-2026 10:00"
                )
            )
        );
        assert_eq!(
            r.added.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            ["1-3-c", "epic-2", "2-1-d", "epic-2-retrospective"]
        );
        assert_eq!(r.orphans, [("0-9-old".to_owned(), "review".to_owned())]);
        assert!(r.raised.is_empty());
        // Running it again changes nothing but the stamp.
        let again =
            plan_sprint(&path, HEADER, &plan(), now(), None).unwrap_or_else(|e| panic!("{e}"));
        assert!(again.added.is_empty());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}")),
            text
        );
    }

    #[test]
    fn a_file_already_in_sync_is_not_written_even_a_day_later() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("sprint-status.yaml");
        plan_sprint(&path, HEADER, &plan(), now(), None).unwrap_or_else(|e| panic!("{e}"));
        let before = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        let later = Stamp::new(2026, 11, 24, 11, 30).unwrap_or_else(|| unreachable!());
        let again =
            plan_sprint(&path, HEADER, &plan(), later, None).unwrap_or_else(|e| panic!("{e}"));
        assert!(again.added.is_empty() && again.raised.is_empty());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}")),
            before,
            "an in-sync file was rewritten (its last_updated hides BMad's staleness warning)"
        );
    }

    #[test]
    fn a_story_file_raises_backlog_but_nothing_is_lowered() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("sprint-status.yaml");
        std::fs::write(
            &path,
            format!("{HEADER}  epic-1: backlog\n  1-1-a: review\n  1-2-b: backlog\n  1-3-c: backlog  # soon\n  epic-1-retrospective: done\n"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let r = plan_sprint(&path, HEADER, &plan(), now(), None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            r.raised,
            [(
                "1-3-c".to_owned(),
                "backlog".to_owned(),
                "ready-for-dev".to_owned()
            )]
        );
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(text.contains("  1-1-a: review\n"));
        assert!(text.contains("  1-3-c: ready-for-dev  # soon\n"));
        assert!(text.contains("  epic-1-retrospective: done\n"));
    }

    #[test]
    fn every_added_key_and_raise_is_journaled_as_applied() {
        use crate::journal::{EventFilter, SqliteJournal};
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("sprint-status.yaml");
        let mut journal =
            SqliteJournal::open(&dir.path().join("baton.db")).unwrap_or_else(|e| panic!("{e}"));
        let mut pj = PlanJournal {
            journal: &mut journal,
            at: "2026-11-23T10:00:00Z".to_owned(),
            run_id: None,
        };
        let r = plan_sprint(&path, HEADER, &plan(), now(), Some(&mut pj))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.added.len(), 8);
        std::fs::write(
            &path,
            std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{e}"))
                .replace("1-3-c: ready-for-dev", "1-3-c: backlog"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let mut pj = PlanJournal {
            journal: &mut journal,
            at: "2026-11-23T10:01:00Z".to_owned(),
            run_id: None,
        };
        plan_sprint(&path, HEADER, &plan(), now(), Some(&mut pj)).unwrap_or_else(|e| panic!("{e}"));
        let all = journal
            .events(&EventFilter {
                all_states: true,
                ..EventFilter::default()
            })
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(all.len(), 9);
        assert!(
            all.iter()
                .all(|e| e.state == crate::journal::EventState::Applied)
        );
        let last = &all[8];
        assert_eq!(
            (last.key.as_str(), last.from.as_deref(), last.to.as_str()),
            ("1-3-c", Some("backlog"), "ready-for-dev")
        );
        assert!(all[..8].iter().all(|e| e.from.is_none()));
    }

    #[test]
    fn a_finished_story_is_never_taken_for_a_story_of_another_plan_under_its_epic_number() {
        use baton_core::plan::docs::parse_epics_documents;
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("sprint-status.yaml");
        // The file knows epic 28 of the first plan; its 28.2 was renamed since. A later plan
        // (another document) numbers its own epic 28 too.
        std::fs::write(
            &path,
            format!("{HEADER}  epic-28: in-progress\n  28-1-export: done\n  28-2-import-old: done\n  epic-28-retrospective: optional\n"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let doc =
            |name: &str, text: &str| (name.to_owned(), vec![(name.to_owned(), text.to_owned())]);
        let one = doc(
            "epics.md",
            "## Epic 28: Data\n### Story 28.1: Export\n### Story 28.2: Import\n",
        );
        let next = doc(
            "epics-next.md",
            "## Epic 28: Sync\n### Story 28.3: Sync daemon\n",
        );
        let both = parse_epics_documents(&[one.clone(), next]);
        let plan = planned_from(&both, dir.path());
        assert!(!plan[0].one_document);
        let r = plan_sprint(&path, HEADER, &plan, now(), None).unwrap_or_else(|e| panic!("{e}"));
        assert!(r.renamed.is_empty(), "{r:?}");
        assert_eq!(
            r.added.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            ["28-2-import", "28-3-sync-daemon"]
        );
        assert_eq!(
            r.orphans,
            [("28-2-import-old".to_owned(), "done".to_owned())]
        );
        // The same rename with the first plan alone is one.
        std::fs::write(
            &path,
            format!("{HEADER}  epic-28: in-progress\n  28-1-export: done\n  28-2-import-old: done\n  epic-28-retrospective: optional\n"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let alone = planned_from(&parse_epics_documents(&[one]), dir.path());
        let r = plan_sprint(&path, HEADER, &alone, now(), None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            r.renamed,
            [("28-2-import-old".to_owned(), "28-2-import".to_owned())]
        );
        // A number planned twice in one document is no rename either.
        std::fs::write(
            &path,
            format!("{HEADER}  epic-28: in-progress\n  28-1-export: done\n  28-2-import-old: done\n  epic-28-retrospective: optional\n"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let twice = planned_from(
            &parse_epics_documents(&[doc(
                "epics.md",
                "## Epic 28: Data\n### Story 28.1: Export\n### Story 28.2: Import\n### Story 28.2: Import again\n",
            )]),
            dir.path(),
        );
        let r = plan_sprint(&path, HEADER, &twice, now(), None).unwrap_or_else(|e| panic!("{e}"));
        assert!(r.renamed.is_empty(), "{r:?}");
    }
}
