//! Parsing the plan's documents: requirements of a PRD, decisions of an architecture document,
//! and the epics, stories, acceptance criteria and citations of an epics document.
//!
//! Parsing is tolerant by design (a plan is prose written by people and models): a line defines a
//! requirement when, after list markers, heading marks and bold, it starts with an identifier
//! (`FR1`, `FR-1`, `NFR2`, `ADR-001`); a citation is any such identifier inside a story. Fenced
//! code blocks are skipped. Epic and story headings follow the rules BMad's sprint planning uses
//! (BMAD-FORMAT.md §2.2): epic heading `#`–`###` "Epic N[:] title", story heading `##`–`####`
//! "Story N.M[a-z]?[:] title", case-insensitive. Line numbers are 1-based.

use serde::Serialize;
use std::fmt;

/// What an identifier names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReqKind {
    /// A functional requirement, `FR1`.
    Fr,
    /// A non-functional requirement, `NFR1`.
    Nfr,
    /// An architecture decision, `ADR-001`.
    Adr,
}

/// A requirement or decision identifier; `FR-01` and `FR1` are the same, `FR-1.1` and `FR-1.2`
/// are two.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReqId {
    /// What it names.
    pub kind: ReqKind,
    /// Its number.
    pub n: u32,
    /// The number after a dot (`FR-1.1`), for requirements numbered within a group.
    pub sub: Option<u32>,
}

impl fmt::Display for ReqId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ReqKind::Fr => write!(f, "FR{}", self.n)?,
            ReqKind::Nfr => write!(f, "NFR{}", self.n)?,
            ReqKind::Adr => write!(f, "ADR-{:03}", self.n)?,
        }
        match self.sub {
            Some(sub) => write!(f, ".{sub}"),
            None => Ok(()),
        }
    }
}

impl Serialize for ReqId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One defined requirement or decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Requirement {
    /// Its identifier.
    pub id: ReqId,
    /// The line defining it.
    pub line: usize,
    /// The defining line's text after the identifier.
    pub text: String,
}

/// A product requirements document's requirements.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prd {
    /// The file, as the caller names it in findings.
    pub path: String,
    /// Functional and non-functional requirements in file order (first definition wins).
    pub requirements: Vec<Requirement>,
}

/// An architecture document's decisions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Architecture {
    /// The file, as the caller names it in findings.
    pub path: String,
    /// Decisions in file order (first definition wins).
    pub decisions: Vec<Requirement>,
}

/// A story of the epics document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Story {
    /// The file it is written in (the epics document, or its shard).
    pub file: String,
    /// `N.M` as written (`2.6a`).
    pub number: String,
    /// The sprint-status key, `N-M-slug`.
    pub key: String,
    /// The heading's title.
    pub title: String,
    /// The heading's line.
    pub line: usize,
    /// Identifiers the story cites, with their lines, in order.
    pub cites: Vec<(ReqId, usize)>,
    /// How many acceptance criteria lines it has (Given/When/Then/And, or list items under an
    /// "Acceptance Criteria" label).
    pub criteria: usize,
}

/// An epic of the epics document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Epic {
    /// The file its heading is in (the epics document, or its shard).
    pub file: String,
    /// Its number as written (`1`, `14c`).
    pub number: String,
    /// The heading's title.
    pub title: String,
    /// The heading's line (the section holding its stories when the epic is listed twice).
    pub line: usize,
    /// Identifiers cited in the epic's own text (before and between its stories' sections).
    pub cites: Vec<(ReqId, usize)>,
    /// Its stories in file order.
    pub stories: Vec<Story>,
}

/// One epics document of a plan: a whole file, or a sharded folder (its index, then its shards).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EpicsDocument {
    /// The document as the caller names it (`epics.md`, `epics/`).
    pub name: String,
    /// Its files in reading order.
    pub files: Vec<String>,
}

/// The epics of a plan: one epics document, or several read as one (a plan made in phases).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Epics {
    /// The first file, as the caller names it in findings.
    pub path: String,
    /// Every document read, in reading order.
    pub documents: Vec<EpicsDocument>,
    /// Epics in order of first appearance.
    pub epics: Vec<Epic>,
    /// Coverage claims before the first epic section (the FR coverage map, and ranges or lists
    /// such as `FR1-FR15: Section Detection — COMPLETE` anywhere in the requirements inventory):
    /// requirement, line, the line's text after the identifiers.
    pub coverage: Vec<(ReqId, usize, String)>,
    /// Headings that look like an epic or story but fail the pattern: file, line and text.
    pub malformed: Vec<(String, usize, String)>,
    /// The sprint plan exactly as BMad's `sprint_plan.py generate` reads the same files: keys,
    /// epic order, repeated headings.
    pub plan: super::bmad::SprintPlan,
}

impl Epics {
    /// The document `file` belongs to.
    pub fn document_of(&self, file: &str) -> Option<&str> {
        self.documents
            .iter()
            .find(|d| d.files.iter().any(|f| f == file))
            .map(|d| d.name.as_str())
    }

    /// Every story in epic order.
    pub fn stories(&self) -> impl Iterator<Item = (&Epic, &Story)> {
        self.epics
            .iter()
            .flat_map(|e| e.stories.iter().map(move |s| (e, s)))
    }
}

/// Lines outside fenced code blocks, numbered from 1.
fn prose_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut fence: Option<&str> = None;
    text.lines().enumerate().filter_map(move |(i, line)| {
        let t = line.trim_start();
        let marker = if t.starts_with("```") {
            Some("```")
        } else if t.starts_with("~~~") {
            Some("~~~")
        } else {
            None
        };
        match (fence, marker) {
            (None, Some(m)) => {
                fence = Some(m);
                None
            }
            (Some(f), Some(m)) if f == m => {
                fence = None;
                None
            }
            (Some(_), _) => None,
            (None, None) => Some((i + 1, line)),
        }
    })
}

/// `line` without leading heading marks, list markers, numbering, quotes, table bars and bold.
fn strip_lead(line: &str) -> &str {
    let mut s = line.trim();
    loop {
        let before = s;
        s = s.trim_start_matches(['#', '>', '|', '-', '*', '+', '_', '[', ']']);
        s = s.trim_start();
        let digits = s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 {
            let rest = &s[digits..];
            if let Some(r) = rest.strip_prefix(['.', ')'])
                && r.starts_with(' ')
            {
                s = r.trim_start();
            }
        }
        if s == before {
            return s;
        }
    }
}

/// Parses an identifier at the start of `s`: the id and the byte length consumed.
fn id_at(s: &str) -> Option<(ReqId, usize)> {
    let (kind, prefix) = if s.starts_with("NFR") {
        (ReqKind::Nfr, 3)
    } else if s.starts_with("FR") {
        (ReqKind::Fr, 2)
    } else if s.starts_with("ADR") {
        (ReqKind::Adr, 3)
    } else {
        return None;
    };
    let mut rest = &s[prefix..];
    let mut used = prefix;
    if let Some(r) = rest.strip_prefix(['-', ' ']) {
        rest = r;
        used += 1;
    }
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return None;
    }
    let n: u32 = rest[..digits].parse().ok()?;
    used += digits;
    // `FR-1.1`: a dot and digits make a sub-number (a sentence's full stop does not).
    let mut sub = None;
    if let Some(after) = s[used..].strip_prefix('.') {
        let d = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if d > 0 {
            sub = Some(after[..d].parse().ok()?);
            used += 1 + d;
        }
    }
    if s[used..]
        .chars()
        .next()
        .is_some_and(|c| c.is_alphanumeric() || c == '_')
    {
        return None;
    }
    Some((ReqId { kind, n, sub }, used))
}

/// The widest range of identifiers a citation such as `FR1-FR15` may span; anything wider is
/// read as two separate numbers, not a range.
const MAX_RANGE: u32 = 500;

/// The end of a range right after an identifier of `kind`: `-FR15`, `–FR6` (en or em dash),
/// `-17` (the bare number), with blanks around the dash allowed; and the bytes it takes.
fn range_end(rest: &str, kind: ReqKind) -> Option<(u32, usize)> {
    let r = rest.trim_start();
    let r = r
        .strip_prefix('-')
        .or_else(|| r.strip_prefix('\u{2013}'))
        .or_else(|| r.strip_prefix('\u{2014}'))?
        .trim_start();
    let taken = |tail: &str| rest.len() - tail.len();
    if let Some((id, used)) = id_at(r) {
        return (id.kind == kind).then(|| (id.n, taken(&r[used..])));
    }
    let digits = r.len() - r.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let after = &r[digits..];
    let mut next = after.chars();
    let dotted = next.next() == Some('.') && next.next().is_some_and(|c| c.is_ascii_digit());
    if digits == 0
        || dotted
        || after
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    {
        return None;
    }
    Some((r[..digits].parse().ok()?, taken(after)))
}

/// Every identifier cited anywhere in `line`; a range (`FR1-FR3`, `FR4–FR6`, `FR7-8`) cites
/// every identifier in it.
pub fn citations(line: &str) -> Vec<ReqId> {
    let mut out = Vec::new();
    let mut prev: Option<char> = None;
    let mut skip_to = 0;
    for (i, c) in line.char_indices() {
        let boundary = prev.is_none_or(|p| !(p.is_alphanumeric() || p == '_'));
        prev = Some(c);
        if i < skip_to || !boundary || !(c == 'F' || c == 'N' || c == 'A') {
            continue;
        }
        let Some((id, used)) = id_at(&line[i..]) else {
            continue;
        };
        out.push(id);
        if let Some((end, taken)) = range_end(&line[i + used..], id.kind)
            && id.sub.is_none()
            && end > id.n
            && end - id.n <= MAX_RANGE
        {
            out.extend((id.n + 1..=end).map(|n| ReqId {
                kind: id.kind,
                n,
                sub: None,
            }));
            skip_to = i + used + taken;
        }
    }
    out
}

/// A definition: the id at the start of the line (after markers) and the rest of the line.
fn definition(line: &str) -> Option<(ReqId, String)> {
    let s = strip_lead(line);
    let (id, used) = id_at(s)?;
    let rest = s[used..].trim_start_matches([
        '*', '_', ':', '.', ')', ']', '|', '-', ' ', '\u{2014}', '\u{2013}',
    ]);
    Some((id, rest.trim().trim_end_matches('|').trim().to_owned()))
}

fn definitions(text: &str, keep: impl Fn(ReqKind) -> bool) -> Vec<Requirement> {
    let mut out: Vec<Requirement> = Vec::new();
    for (line, raw) in prose_lines(text) {
        if let Some((id, text)) = definition(raw)
            && keep(id.kind)
            && !out.iter().any(|r| r.id == id)
        {
            out.push(Requirement { id, line, text });
        }
    }
    out
}

/// Parses a PRD's `FR`/`NFR` definitions.
pub fn parse_prd(path: &str, text: &str) -> Prd {
    Prd {
        path: path.to_owned(),
        requirements: definitions(text, |k| k != ReqKind::Adr),
    }
}

/// Parses an architecture document's `ADR-NNN` definitions.
pub fn parse_architecture(path: &str, text: &str) -> Architecture {
    Architecture {
        path: path.to_owned(),
        decisions: definitions(text, |k| k == ReqKind::Adr),
    }
}

/// BMad's slug: lowercase, each run of non-word characters → `-`, trimmed, at most 60
/// characters; an 8-hex SHA-256 prefix when nothing is left (see [`super::bmad::slug`]).
pub fn slug(title: &str) -> String {
    super::bmad::slug(title)
}

/// A heading: its level and text.
fn heading(line: &str) -> Option<(usize, &str)> {
    let t = line.trim_start();
    let level = t.len() - t.trim_start_matches('#').len();
    if level == 0 || level > 6 {
        return None;
    }
    let rest = &t[level..];
    if !rest.starts_with(' ') {
        return None;
    }
    Some((level, rest.trim().trim_matches('*').trim()))
}

/// `word N[rest]` at the start of `s`, case-insensitive: the number as written and the title.
fn numbered<'a>(s: &'a str, word: &str, allow_dot: bool) -> Option<(&'a str, &'a str)> {
    let head = s.get(..word.len())?;
    if !head.eq_ignore_ascii_case(word) {
        return None;
    }
    let rest = s[word.len()..].strip_prefix(' ')?.trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || (allow_dot && c == '.')))
        .unwrap_or(rest.len());
    let number = &rest[..end];
    if !number.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let title = rest[end..]
        .trim_start_matches([':', ' ', '-', '\u{2014}', '\u{2013}', '.'])
        .trim();
    Some((number, title))
}

/// A story number `N.M[a-z]?` split into its key prefix `N-M[a-z]?`.
fn story_prefix(number: &str) -> Option<String> {
    let (e, s) = number.split_once('.')?;
    let ok_e = !e.is_empty() && e.chars().all(|c| c.is_ascii_alphanumeric());
    let digits = s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let suffix = &s[digits..];
    let ok_s = digits > 0
        && (suffix.is_empty()
            || (suffix.len() == 1 && suffix.chars().all(|c| c.is_ascii_lowercase())));
    (ok_e && ok_s).then(|| format!("{e}-{s}"))
}

fn is_criterion(line: &str) -> bool {
    let s = strip_lead(line).trim_start_matches(['*', '_']);
    ["given", "when", "then", "and"].iter().any(|w| {
        s.get(..w.len()).is_some_and(|h| h.eq_ignore_ascii_case(w))
            && s[w.len()..]
                .chars()
                .next()
                .is_none_or(|c| !c.is_alphanumeric())
    }) && !s.eq_ignore_ascii_case("and")
}

fn is_list_item(line: &str) -> bool {
    let t = line.trim_start();
    if t.starts_with("- ") || t.starts_with("* ") || t.starts_with("+ ") {
        return true;
    }
    let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    digits > 0 && (t[digits..].starts_with(". ") || t[digits..].starts_with(") "))
}

/// Parses an epics document.
pub fn parse_epics(path: &str, text: &str) -> Epics {
    let mut doc = Epics {
        path: path.to_owned(),
        plan: super::bmad::parse(&[(path.to_owned(), text.to_owned())]),
        documents: vec![EpicsDocument {
            name: path.to_owned(),
            files: vec![path.to_owned()],
        }],
        ..Epics::default()
    };
    // Index into doc.epics of the current epic, and whether a story is open.
    let mut epic: Option<usize> = None;
    let mut story_open = false;
    let mut in_criteria = false;
    let mut in_coverage = false;
    for (line, raw) in prose_lines(text) {
        if let Some((level, h)) = heading(raw) {
            in_criteria = h.to_lowercase().contains("acceptance criteria");
            if level <= 3
                && let Some((number, title)) = numbered(h, "epic", false)
            {
                let idx = match doc.epics.iter().position(|e| e.number == number) {
                    Some(i) => {
                        // Listed twice (an Epic List, then its section): the section counts.
                        if doc.epics[i].stories.is_empty() {
                            doc.epics[i].line = line;
                        }
                        i
                    }
                    None => {
                        doc.epics.push(Epic {
                            file: path.to_owned(),
                            number: number.to_owned(),
                            title: title.to_owned(),
                            line,
                            cites: Vec::new(),
                            stories: Vec::new(),
                        });
                        doc.epics.len() - 1
                    }
                };
                epic = Some(idx);
                story_open = false;
                in_coverage = false;
                continue;
            }
            if (2..=4).contains(&level)
                && let Some((number, title)) = numbered(h, "story", true)
            {
                match (story_prefix(number), epic) {
                    (Some(prefix), Some(i)) => {
                        // The key BMad's sprint planning derives from the same line, when it
                        // reads the line as a story heading.
                        let key = super::bmad::story_heading(raw)
                            .map(|h| h.key())
                            .unwrap_or_else(|| format!("{prefix}-{}", slug(title)));
                        doc.epics[i].stories.push(Story {
                            file: path.to_owned(),
                            number: number.to_owned(),
                            key,
                            title: title.to_owned(),
                            line,
                            cites: Vec::new(),
                            criteria: 0,
                        });
                        story_open = true;
                    }
                    _ => {
                        doc.malformed.push((path.to_owned(), line, h.to_owned()));
                        story_open = false;
                    }
                }
                continue;
            }
            let lower = h.to_lowercase();
            let numbered_like = ["epic ", "story "].iter().any(|w| {
                lower
                    .strip_prefix(w)
                    .is_some_and(|r| r.trim_start().starts_with(|c: char| c.is_ascii_digit()))
            });
            if numbered_like {
                doc.malformed.push((path.to_owned(), line, h.to_owned()));
            }
            if epic.is_none() {
                in_coverage = lower.contains("coverage");
            }
            if level <= 2 && epic.is_some() {
                // A level-1/2 heading that is no epic closes the current story.
                story_open = false;
            }
            continue;
        }
        let lower = raw.to_lowercase();
        if lower.contains("acceptance criteria") {
            in_criteria = true;
            continue;
        }
        if epic.is_none() {
            // In the coverage map every identifier a line starts with is claimed. Elsewhere in
            // the inventory a line lists requirements (`FR1: …`, `FR1, FR2, NFR1.`), unless it
            // says where they are covered: an epic, or that they are complete or covered
            // (`FR1-FR15: Section Detection — COMPLETE`).
            let (ids, rest) = leading_ids(raw);
            if in_coverage || says_covered(&rest) {
                for id in ids {
                    doc.coverage.push((id, line, rest.clone()));
                }
            }
            if in_coverage {
                continue;
            }
        }
        if !story_open {
            // An epic-level line (`**FRs covered:** FR1, FR2`): the epic claims them.
            if let Some(i) = epic {
                for id in citations(raw) {
                    doc.epics[i].cites.push((id, line));
                }
            }
            continue;
        }
        let Some(s) = epic.and_then(|i| doc.epics[i].stories.last_mut()) else {
            continue;
        };
        for id in citations(raw) {
            s.cites.push((id, line));
        }
        if is_criterion(raw) || (in_criteria && is_list_item(raw)) {
            s.criteria += 1;
        }
    }
    doc
}

/// Parses a sharded epics document: the index, then each shard (`epic-1.md`, …) in order, merged
/// as one document whose epics and stories keep the file they are written in.
pub fn parse_epics_sharded(index: (&str, &str), shards: &[(String, String)]) -> Epics {
    let mut files = vec![(index.0.to_owned(), index.1.to_owned())];
    files.extend(shards.iter().cloned());
    let name = index
        .0
        .strip_suffix("index.md")
        .filter(|d| !d.is_empty())
        .unwrap_or(index.0);
    parse_epics_documents(&[(name.to_owned(), files)])
}

/// Parses several epics documents as one plan, in the order given: each `(name, files)` is a
/// whole file or a sharded folder's index and shards. Epics of the same number are one epic, as
/// BMad's sprint planning makes them one (`epic-28` holds the stories every document gives
/// epic 28); every epic and story keeps the file it is written in, and the sprint plan is what
/// BMad's `sprint_plan.py generate` makes of all the files in that order.
pub fn parse_epics_documents(documents: &[(String, Vec<(String, String)>)]) -> Epics {
    let mut doc = Epics::default();
    let mut all = Vec::new();
    for (name, files) in documents {
        doc.documents.push(EpicsDocument {
            name: name.clone(),
            files: files.iter().map(|(f, _)| f.clone()).collect(),
        });
        for (path, text) in files {
            all.push((path.clone(), text.clone()));
            let part = parse_epics(path, text);
            if doc.path.is_empty() {
                doc.path = part.path;
            }
            for e in part.epics {
                match doc.epics.iter_mut().find(|d| d.number == e.number) {
                    Some(d) => {
                        if d.stories.is_empty() {
                            d.file = e.file;
                            d.line = e.line;
                        }
                        d.stories.extend(e.stories);
                        d.cites.extend(e.cites);
                    }
                    None => doc.epics.push(e),
                }
            }
            doc.coverage.extend(part.coverage);
            doc.malformed.extend(part.malformed);
        }
    }
    doc.plan = super::bmad::parse(&all);
    doc
}

/// Whether the text after a line's identifiers says where they are covered: an epic (`Epic 2`),
/// or a word of completion (`COMPLETE`, `covered`, `done`, `implemented`, `delivered`).
fn says_covered(rest: &str) -> bool {
    let lower = rest.to_lowercase();
    lower.split(|c: char| !c.is_alphanumeric()).any(|w| {
        matches!(
            w,
            "epic"
                | "epics"
                | "complete"
                | "completed"
                | "covered"
                | "done"
                | "implemented"
                | "delivered"
        )
    })
}

/// The identifiers a line starts with, after list markers and bold: one (`FR1: …`), a range
/// (`FR1-FR15`, `FR1–FR15`, `NFR1-5`) or a list of them (`FR1, FR3 and FR7-FR9`); and the
/// line's text after them.
pub fn leading_ids(line: &str) -> (Vec<ReqId>, String) {
    let mut s = strip_lead(line);
    let mut out = Vec::new();
    while let Some((id, used)) = id_at(s) {
        out.push(id);
        s = &s[used..];
        if let Some((end, taken)) = range_end(s, id.kind)
            && id.sub.is_none()
            && end > id.n
            && end - id.n <= MAX_RANGE
        {
            out.extend((id.n + 1..=end).map(|n| ReqId {
                kind: id.kind,
                n,
                sub: None,
            }));
            s = &s[taken..];
        }
        // Separators between identifiers: commas, `and`, `&`, `/`, blanks and emphasis.
        let next = s.trim_start_matches([',', ';', '&', '/', ' ', '*', '_']);
        let next = next
            .strip_prefix("and ")
            .map_or(next, |r| r.trim_start_matches([' ', '*', '_']));
        if id_at(next).is_none() {
            break;
        }
        s = next;
    }
    let rest = s
        .trim_start_matches([
            '*', '_', ':', '.', ')', ']', '|', '-', ' ', '\u{2014}', '\u{2013}',
        ])
        .trim()
        .trim_end_matches('|')
        .trim()
        .to_owned();
    (out, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_merge_and_keep_their_files() {
        let doc = parse_epics_sharded(
            (
                "epics/index.md",
                "# Epics\n\n## Epic List\n\n### Epic 1: A\n### Epic 2: B\n",
            ),
            &[
                (
                    "epics/epic-1.md".to_owned(),
                    "## Epic 1: A\n\n### Story 1.1: One\n\nFR1\n**Given** x\n".to_owned(),
                ),
                (
                    "epics/epic-2.md".to_owned(),
                    "## Epic 2: B\n\n### Story 2.1: Two\n".to_owned(),
                ),
            ],
        );
        assert_eq!(doc.epics.len(), 2);
        assert_eq!(doc.epics[0].file, "epics/epic-1.md");
        assert_eq!(doc.epics[1].stories[0].file, "epics/epic-2.md");
        assert_eq!(doc.epics[1].stories[0].line, 3);
        assert_eq!(doc.stories().count(), 2);
    }

    fn fr(n: u32) -> ReqId {
        ReqId {
            kind: ReqKind::Fr,
            n,
            sub: None,
        }
    }

    #[test]
    fn identifiers_are_read_in_every_spelling() {
        let cases: &[(&str, Option<&str>)] = &[
            ("- FR1: Users can sign up", Some("FR1")),
            ("**FR2**: Users can log in", Some("FR2")),
            ("FR-03 — export", Some("FR3")),
            ("| FR4 | table row |", Some("FR4")),
            ("1. NFR1: p95 under 200 ms", Some("NFR1")),
            ("### ADR-001: SQLite for storage", Some("ADR-001")),
            ("FRx is not one", None),
            ("FRAME of mind", None),
            ("We cover FR1 here", None),
        ];
        for (line, want) in cases {
            let got = definition(line).map(|(id, _)| id.to_string());
            assert_eq!(got.as_deref(), *want, "{line}");
        }
    }

    #[test]
    fn dotted_identifiers_stay_apart() {
        let dotted = |n: u32, sub: u32| ReqId {
            kind: ReqKind::Fr,
            n,
            sub: Some(sub),
        };
        assert_eq!(
            citations("Covers FR-1.1, FR-1.2 and FR1.10; FR2."),
            [dotted(1, 1), dotted(1, 2), dotted(1, 10), fr(2)]
        );
        assert_eq!(
            definition("- FR-1.2: Users can log out").map(|(id, _)| id.to_string()),
            Some("FR1.2".to_owned())
        );
        let prd = parse_prd(
            "prd.md",
            "- FR-1.1: sign up\n- FR-1.2: log in\n- FR-1.3: log out\n",
        );
        assert_eq!(prd.requirements.len(), 3);
    }

    #[test]
    fn citations_need_a_word_boundary() {
        assert_eq!(citations("Covers FR1, FR-2 and NFR3; see ADR-002."), {
            vec![
                fr(1),
                fr(2),
                ReqId {
                    kind: ReqKind::Nfr,
                    n: 3,
                    sub: None,
                },
                ReqId {
                    kind: ReqKind::Adr,
                    n: 2,
                    sub: None,
                },
            ]
        });
        assert!(citations("XFR1 SURFR2 FR").is_empty());
    }

    #[test]
    fn a_range_cites_every_requirement_in_it() {
        let fr = |n: u32| ReqId {
            kind: ReqKind::Fr,
            n,
            sub: None,
        };
        assert_eq!(
            citations("Covers FR1-FR3, FR4\u{2013}FR6 and FR7-8."),
            (1..=8).map(fr).collect::<Vec<_>>()
        );
        assert_eq!(
            citations("FR16-17 and FR-20 - FR-21"),
            [16, 17, 20, 21].map(fr)
        );
        // Not ranges: a year, a dotted number, a range backwards, another kind.
        assert_eq!(citations("FR3-2024"), [fr(3)]);
        assert_eq!(citations("FR3-4.5"), [fr(3)]);
        assert_eq!(citations("FR5-FR2"), [fr(5), fr(2)]);
        assert_eq!(
            citations("FR1-NFR2"),
            [
                fr(1),
                ReqId {
                    kind: ReqKind::Nfr,
                    n: 2,
                    sub: None,
                }
            ]
        );
    }

    #[test]
    fn slugs_follow_bmad() {
        assert_eq!(slug("User Authentication"), "user-authentication");
        assert_eq!(slug("  Count words!! (fast) "), "count-words-fast");
        assert_eq!(slug("Café au lait"), "café-au-lait");
        assert_eq!(slug("!!!").len(), 8);
        assert_eq!(slug(&"a".repeat(80)).len(), 60);
    }

    #[test]
    fn prd_definitions_skip_code_and_keep_the_first() {
        let prd = parse_prd(
            "prd.md",
            "# PRD\n\n## Functional Requirements\n\n- FR1: one\n- FR2: two\n```\nFR9: in code\n```\n- FR1: again\n- NFR1: fast\n",
        );
        let ids: Vec<_> = prd
            .requirements
            .iter()
            .map(|r| (r.id.to_string(), r.line))
            .collect();
        assert_eq!(
            ids,
            [("FR1".into(), 5), ("FR2".into(), 6), ("NFR1".into(), 11)]
        );
        assert_eq!(prd.requirements[0].text, "one");
    }

    #[test]
    fn epics_stories_citations_and_criteria() {
        let text = "\
# Plan - Epic Breakdown

## Requirements Inventory

### FR Coverage Map

FR1: Epic 1 - counting
FR2: Epic 2

## Epic List

### Epic 1: Counting

## Epic 1: Counting

Goal.

### Story 1.1: Count words

As a writer (FR1, ADR-001).

**Acceptance Criteria:**

**Given** a text
**When** counted
**Then** 3

### Story 1.2a: Count lines!

Covers FR2.

## Epic 2: Empty

### story 2: bad
";
        let doc = parse_epics("epics.md", text);
        assert_eq!(doc.epics.len(), 2);
        assert_eq!(doc.coverage.len(), 2);
        let e1 = &doc.epics[0];
        assert_eq!(e1.stories.len(), 2);
        assert_eq!(e1.stories[0].key, "1-1-count-words");
        assert_eq!(e1.stories[0].line, 18);
        assert_eq!(e1.stories[0].criteria, 3);
        assert_eq!(e1.stories[0].cites.len(), 2);
        assert_eq!(e1.stories[1].key, "1-2a-count-lines");
        assert_eq!(e1.stories[1].criteria, 0);
        assert!(doc.epics[1].stories.is_empty());
        assert_eq!(
            doc.malformed,
            [("epics.md".to_owned(), 34, "story 2: bad".to_owned())]
        );
    }

    #[test]
    fn numbered_criteria_under_a_label_count() {
        let doc = parse_epics(
            "e.md",
            "## Epic 1: A\n### Story 1.1: B\n#### Acceptance Criteria\n1. it works\n2. it stays\n",
        );
        assert_eq!(doc.epics[0].stories[0].criteria, 2);
    }

    #[test]
    fn coverage_is_read_in_ranges_and_lists() {
        let nfr = |n: u32| ReqId {
            kind: ReqKind::Nfr,
            n,
            sub: None,
        };
        let ids = |line: &str| leading_ids(line).0;
        assert_eq!(
            ids("FR1-FR15: Section Detection — COMPLETE"),
            (1..=15).map(fr).collect::<Vec<_>>()
        );
        assert_eq!(ids("- **FR1\u{2013}FR3**: Epic 1"), [1, 2, 3].map(fr));
        assert_eq!(ids("FR1, FR3: Epic 2"), [fr(1), fr(3)]);
        assert_eq!(ids("FR4 and FR6-7 / FR9: Epic 3"), [4, 6, 7, 9].map(fr));
        assert_eq!(ids("NFR1-NFR3: all epics"), [1, 2, 3].map(nfr));
        assert_eq!(ids("FR2: Users can log in"), [fr(2)]);
        assert!(ids("Covers FR1").is_empty());
        assert_eq!(
            leading_ids("FR1-FR15: Section Detection — COMPLETE").1,
            "Section Detection — COMPLETE"
        );
        // The inventory's ranges claim coverage; its single definitions do not.
        let doc = parse_epics(
            "epics.md",
            "## Requirements Inventory\n\n### Functional Requirements\n\nFR1-FR3: Parsing — COMPLETE\n\
             FR4: export a report\nFR5, FR6: Epic 2\nFR7-FR9: Reporting\nFR10, FR11, NFR1.\n\n\
             ## Epic 1: A\n### Story 1.1: B\n",
        );
        let claimed: Vec<u32> = doc.coverage.iter().map(|(id, _, _)| id.n).collect();
        assert_eq!(claimed, [1, 2, 3, 5, 6]);
    }

    #[test]
    fn several_documents_are_one_plan_each_story_keeping_its_file() {
        let doc = parse_epics_documents(&[
            (
                "epics.md".to_owned(),
                vec![(
                    "epics.md".to_owned(),
                    "## Epic 28: Data\n### Story 28.1: Export\n**FRs covered:** FR1\n".to_owned(),
                )],
            ),
            (
                "epics-next.md".to_owned(),
                vec![(
                    "epics-next.md".to_owned(),
                    "## Epic 28: Sync\n**FRs covered:** FR1-FR16 (all)\n### Story 28.1: Daemon\n\
                     ### Story 1: bad\n"
                        .to_owned(),
                )],
            ),
        ]);
        assert_eq!(doc.path, "epics.md");
        assert_eq!(doc.epics.len(), 1);
        let files: Vec<&str> = doc.epics[0]
            .stories
            .iter()
            .map(|s| s.file.as_str())
            .collect();
        assert_eq!(files, ["epics.md", "epics-next.md"]);
        assert_eq!(
            doc.plan.keys(),
            [
                "epic-28",
                "28-1-export",
                "28-1-daemon",
                "epic-28-retrospective"
            ]
        );
        assert_eq!(doc.epics[0].cites.len(), 16);
        assert_eq!(doc.document_of("epics-next.md"), Some("epics-next.md"));
        assert_eq!(doc.malformed[0].0, "epics-next.md");
    }
}
