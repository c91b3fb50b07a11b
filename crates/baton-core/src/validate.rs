//! Validation of a whole sprint: every problem, with its line, not just the first.
//!
//! Errors make a sprint invalid (`baton status --validate` exits 1): an unknown status, a status
//! that its kind of key cannot have, a malformed key, a story or retrospective whose epic is
//! missing, a duplicate key, a missing `development_status`. Warnings are reported but tolerated:
//! legacy spellings, foreign statuses, opaque keys, missing or unparseable header fields, a stale
//! stamp.

use crate::key::{EpicId, KeyKind};
use crate::sprint::Sprint;
use crate::stamp::Stamp;
use crate::status::StatusValue;
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// How bad a problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    /// Tolerated; shown.
    Warning,
    /// Makes the sprint invalid.
    Error,
}

/// What kind of problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProblemKind {
    /// A status nobody documents.
    UnknownStatus,
    /// A status the key's kind cannot have (`epic-1: review`).
    WrongKindStatus,
    /// An entry without a status.
    MissingStatus,
    /// A key that breaks the grammar.
    MalformedKey,
    /// A story whose `epic-N` is missing.
    MissingEpic,
    /// A retrospective whose `epic-N` is missing.
    OrphanRetrospective,
    /// The same key twice.
    DuplicateKey,
    /// A required top-level field is missing.
    MissingField,
    /// A date stamp that no accepted format parses.
    BadStamp,
    /// A legacy status, normalised on read.
    LegacyStatus,
    /// A status written by another tool.
    ForeignStatus,
    /// A key baton keeps but does not interpret.
    OpaqueKey,
    /// The file has not been updated for a long time.
    Stale,
    /// The YAML itself could not be read (reported by the store).
    Syntax,
    /// The file and the journal disagree: the file was changed outside baton.
    JournalMismatch,
    /// A story file's status differs from the sprint file's (reported by the front end,
    /// which reads story files).
    StoryFileMismatch,
}

/// One problem.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// Error or warning.
    pub severity: Severity,
    /// What kind.
    pub kind: ProblemKind,
    /// 1-based line, when there is one.
    pub line: Option<usize>,
    /// The key concerned, if any.
    pub key: Option<String>,
    /// A sentence saying what is wrong and what to do.
    pub message: String,
}

/// Options of validation.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Today, for the staleness check (`None` skips it).
    pub today: Option<Stamp>,
    /// Days after which the file counts as stale (BMad: 7).
    pub stale_days: i64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            today: None,
            stale_days: 7,
        }
    }
}

/// Validates a sprint; problems are sorted by line.
pub fn validate(sprint: &Sprint, opts: &Options) -> Vec<Problem> {
    let mut out = Vec::new();
    let mut push = |severity, kind, line, key: Option<&str>, message: String| {
        out.push(Problem {
            severity,
            kind,
            line,
            key: key.map(str::to_owned),
            message,
        })
    };
    use ProblemKind as P;
    use Severity::{Error, Warning};

    if sprint.development_status_line.is_none() {
        push(
            Error,
            P::MissingField,
            None,
            None,
            "no `development_status` mapping: this is not a BMad sprint file (BMad's sprint planning writes one)"
                .into(),
        );
    }
    for required in ["generated", "project"] {
        if !sprint.fields.iter().any(|f| f.name == required) {
            push(
                Warning,
                P::MissingField,
                None,
                None,
                format!("top-level `{required}` is missing"),
            );
        }
    }
    let mut newest: Option<Stamp> = None;
    for f in sprint
        .fields
        .iter()
        .filter(|f| f.name == "generated" || f.name == "last_updated")
    {
        match f.value.as_deref().and_then(Stamp::parse) {
            Some(s) => newest = newest.max(Some(s)),
            None => push(
                Warning,
                P::BadStamp,
                Some(f.line),
                None,
                format!(
                    "`{}` is not a date baton can read (use `MM-DD-YYYY HH:MM`)",
                    f.name
                ),
            ),
        }
    }
    if let (Some(today), Some(stamp)) = (opts.today, newest) {
        let age = today.days_since_epoch() - stamp.days_since_epoch();
        if age > opts.stale_days {
            push(
                Warning,
                P::Stale,
                None,
                None,
                format!("the sprint file was last updated {age} days ago"),
            );
        }
    }

    let epics: HashSet<EpicId> = sprint
        .entries
        .iter()
        .filter_map(|e| match e.key.kind() {
            KeyKind::Epic { epic } => Some(epic),
            _ => None,
        })
        .collect();
    let stranded = stranded_stories(sprint, &epics);
    let mut first_line: HashMap<&str, usize> = HashMap::new();
    for e in &sprint.entries {
        let key = e.key.as_str();
        let kind = e.key.kind();
        if let Some(&first) = first_line.get(key) {
            push(
                Error,
                P::DuplicateKey,
                Some(e.line),
                Some(key),
                format!("`{key}` appears again (first on line {first}); remove one of them"),
            );
            continue;
        }
        first_line.insert(key, e.line);
        match kind {
            KeyKind::Malformed => match stranded.iter().find(|s| s.misnamed == Some(e.line)) {
                Some(s) => push(
                    Error,
                    P::MalformedKey,
                    Some(e.line),
                    Some(key),
                    format!(
                        "`{key}` is not a valid epic key, so `epic-{}` is missing for {}; rename it `epic-{}`",
                        s.epic,
                        s.list(),
                        s.epic
                    ),
                ),
                None => push(
                    Error,
                    P::MalformedKey,
                    Some(e.line),
                    Some(key),
                    format!(
                        "`{key}` is not a valid key: use `epic-N`, `N-M-slug` (lowercase) or `epic-N-retrospective`"
                    ),
                ),
            },
            KeyKind::Opaque => push(
                Warning,
                P::OpaqueKey,
                Some(e.line),
                Some(key),
                format!("`{key}` is not an epic, story or retrospective; kept as it is"),
            ),
            KeyKind::Retrospective { epic } if !epics.contains(&epic) => push(
                Error,
                P::OrphanRetrospective,
                Some(e.line),
                Some(key),
                format!("retrospective `{key}` has no `epic-{epic}`"),
            ),
            _ => {}
        }
        if e.raw.is_none() {
            push(
                Error,
                P::MissingStatus,
                Some(e.line),
                Some(key),
                format!("`{key}` has no status"),
            );
            continue;
        };
        if matches!(kind, KeyKind::Opaque | KeyKind::Malformed) {
            // Opaque keys keep whatever value they have; malformed ones are reported above.
            continue;
        }
        match &e.value {
            StatusValue::Unknown(v) => push(
                Error,
                P::UnknownStatus,
                Some(e.line),
                Some(key),
                format!(
                    "`{key}` has unknown status `{v}`; valid: backlog, ready-for-dev, in-progress, review, done (epics: backlog, in-progress, done; retrospectives: optional, done)"
                ),
            ),
            StatusValue::Foreign(v) => push(
                Warning,
                P::ForeignStatus,
                Some(e.line),
                Some(key),
                format!("`{key}` has status `{v}` written by another tool; baton leaves it alone"),
            ),
            StatusValue::Known(s) => {
                if !s.legal_for(kind) {
                    push(
                        Error,
                        P::WrongKindStatus,
                        Some(e.line),
                        Some(key),
                        format!("a {} cannot be `{s}` (`{key}`)", kind.name()),
                    );
                }
                if let Some(legacy) = e.legacy {
                    push(
                        Warning,
                        P::LegacyStatus,
                        Some(e.line),
                        Some(key),
                        format!("`{key}: {legacy}` is a legacy status, read as `{s}`"),
                    );
                }
            }
        }
    }
    for s in stranded.iter().filter(|s| s.misnamed.is_none()) {
        push(
            Error,
            P::MissingEpic,
            Some(s.line),
            s.stories.first().map(String::as_str),
            format!(
                "`epic-{}` is missing, stranding {}; add `epic-{}: backlog` above them",
                s.epic,
                s.list(),
                s.epic
            ),
        );
    }
    out.sort_by_key(|p| (p.line.unwrap_or(0), p.severity));
    out
}

/// The stories of one missing epic.
struct Stranded {
    epic: EpicId,
    /// Line of the first story.
    line: usize,
    stories: Vec<String>,
    /// Line of a malformed `epic…` key just above the first story, which is most likely the
    /// epic's own line misspelt.
    misnamed: Option<usize>,
}

impl Stranded {
    fn list(&self) -> String {
        let shown: Vec<String> = self
            .stories
            .iter()
            .take(5)
            .map(|k| format!("`{k}`"))
            .collect();
        let more = self.stories.len().saturating_sub(shown.len());
        let noun = if self.stories.len() == 1 {
            "story"
        } else {
            "stories"
        };
        if more > 0 {
            format!("{noun} {} and {more} more", shown.join(", "))
        } else {
            format!("{noun} {}", shown.join(", "))
        }
    }
}

/// Stories whose epic is missing, grouped by epic (one problem per epic, not per story).
fn stranded_stories(sprint: &Sprint, epics: &HashSet<EpicId>) -> Vec<Stranded> {
    let mut out: Vec<Stranded> = Vec::new();
    // The nearest `epic…`-looking key that is not an epic, since the last real epic.
    let mut candidate: Option<usize> = None;
    let mut claimed: HashSet<usize> = HashSet::new();
    for e in sprint.unique() {
        match e.key.kind() {
            KeyKind::Epic { .. } => candidate = None,
            KeyKind::Malformed if e.key.as_str().to_ascii_lowercase().starts_with("epic") => {
                candidate = Some(e.line);
            }
            KeyKind::Story { epic, .. } if !epics.contains(&epic) => {
                match out.iter_mut().find(|s| s.epic == epic) {
                    Some(s) => s.stories.push(e.key.as_str().to_owned()),
                    None => {
                        let misnamed = candidate.filter(|l| claimed.insert(*l));
                        out.push(Stranded {
                            epic,
                            line: e.line,
                            stories: vec![e.key.as_str().to_owned()],
                            misnamed,
                        });
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// True if any problem is an error.
pub fn has_errors(problems: &[Problem]) -> bool {
    problems.iter().any(|p| p.severity == Severity::Error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Key;
    use crate::sprint::{Entry, Field};

    fn entry(line: usize, k: &str, v: Option<&str>) -> Entry {
        let key = Key::new(k);
        let (value, legacy) = match v {
            Some(v) => StatusValue::parse(v, key.kind()),
            None => (StatusValue::Unknown(String::new()), None),
        };
        Entry {
            key,
            raw: v.map(str::to_owned),
            value,
            legacy,
            extended: None,
            line,
            structured: false,
        }
    }

    fn fields() -> Vec<Field> {
        ["generated", "project"]
            .iter()
            .enumerate()
            .map(|(i, n)| Field {
                name: (*n).into(),
                value: Some(if i == 0 { "01-02-2026 10:00" } else { "x" }.into()),
                line: i + 1,
            })
            .collect()
    }

    #[test]
    fn reports_all_five_problem_classes_with_lines() {
        let s = Sprint::new(
            fields(),
            Some(3),
            vec![
                entry(4, "epic-1", Some("in-progress")),
                entry(5, "1-1-a", Some("finished")),
                entry(6, "1-x-b", Some("backlog")),
                entry(7, "2-1-c", Some("backlog")),
                entry(8, "1-1-a", Some("done")),
                entry(9, "epic-3-retrospective", Some("optional")),
            ],
        );
        let errors: Vec<(usize, ProblemKind)> = validate(&s, &Options::default())
            .into_iter()
            .filter(|p| p.severity == Severity::Error)
            .map(|p| (p.line.unwrap(), p.kind))
            .collect();
        assert_eq!(
            errors,
            vec![
                (5, ProblemKind::UnknownStatus),
                (6, ProblemKind::MalformedKey),
                (7, ProblemKind::MissingEpic),
                (8, ProblemKind::DuplicateKey),
                (9, ProblemKind::OrphanRetrospective),
            ]
        );
    }

    #[test]
    fn a_clean_sprint_has_no_errors() {
        let s = Sprint::new(
            fields(),
            Some(3),
            vec![
                entry(4, "epic-1", Some("contexted")),
                entry(5, "1-1-a", Some("drafted")),
                entry(6, "1-2-b", Some("awaiting-operator")),
                entry(7, "epic-1-retrospective", Some("optional")),
                entry(8, "sprint-01", Some("whatever")),
            ],
        );
        let problems = validate(&s, &Options::default());
        assert!(!has_errors(&problems), "{problems:#?}");
        assert_eq!(problems.len(), 4, "2 legacy + 1 foreign + 1 opaque");
    }

    #[test]
    fn a_missing_or_misnamed_epic_is_one_problem_listing_its_stories() {
        let s = Sprint::new(
            fields(),
            Some(3),
            vec![
                entry(4, "epic-one", Some("in-progress")),
                entry(5, "1-1-a", Some("done")),
                entry(6, "1-2-b", Some("backlog")),
                entry(7, "epic-14c", Some("backlog")),
                entry(8, "14c-1-c", Some("backlog")),
                entry(9, "epic-2.5", Some("in-progress")),
                entry(10, "2.5-1-d", Some("review")),
                entry(11, "3-1-e", Some("backlog")),
                entry(12, "3-2-f", Some("backlog")),
                entry(13, "epic-2.5-retrospective", Some("completed")),
            ],
        );
        let problems = validate(&s, &Options::default());
        let errors: Vec<&Problem> = problems
            .iter()
            .filter(|p| p.severity == Severity::Error)
            .collect();
        assert_eq!(errors.len(), 2, "{problems:#?}");
        assert_eq!(errors[0].kind, ProblemKind::MalformedKey);
        assert_eq!(errors[0].line, Some(4));
        assert!(
            errors[0].message.contains("`1-1-a`, `1-2-b`") && errors[0].message.contains("epic-1"),
            "{}",
            errors[0].message
        );
        assert_eq!(errors[1].kind, ProblemKind::MissingEpic);
        assert_eq!(errors[1].line, Some(11));
        assert!(errors[1].message.contains("`3-1-e`, `3-2-f`"));
        let legacy = problems
            .iter()
            .find(|p| p.kind == ProblemKind::LegacyStatus)
            .unwrap();
        assert_eq!(legacy.line, Some(13));
    }

    #[test]
    fn stale_and_bad_stamps_warn() {
        let mut f = fields();
        f[0].value = Some("05-06-2-2025 21:30".into());
        f.push(Field {
            name: "last_updated".into(),
            value: Some("2026-01-01".into()),
            line: 3,
        });
        let s = Sprint::new(f, Some(4), vec![]);
        let today = Stamp::new(2026, 2, 1, 0, 0);
        let kinds: Vec<ProblemKind> = validate(
            &s,
            &Options {
                today,
                stale_days: 7,
            },
        )
        .into_iter()
        .map(|p| p.kind)
        .collect();
        assert!(kinds.contains(&ProblemKind::BadStamp));
        assert!(kinds.contains(&ProblemKind::Stale));
    }
}
