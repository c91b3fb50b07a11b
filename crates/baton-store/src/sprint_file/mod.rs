//! `sprint-status.yaml`: tolerant load, minimal edits, compare-and-swap writes.
//!
//! A [`SprintDoc`] holds the file's exact text, the byte span of every value (from [`scan`]) and
//! the typed model (`baton_core::Sprint`). Loading parses the whole file with a real YAML parser
//! too and refuses any entry the two read differently, so an edit can never change what the YAML
//! means beyond the value it targets. Edits splice new bytes into the spans of the changed values
//! and `last_updated`, nothing else (BMAD-FORMAT.md R4). [`SprintDoc::persist`] writes atomically
//! and only if the file on disk is still the one that was read.

mod edit;
pub mod plan;
pub mod scan;
mod shift;
mod yaml;

pub use edit::{Change, EditError, EditOptions, MAX_COMMENT_CHARS, comment_text};

use crate::atomic;
use baton_core::key::{EpicId, Key, KeyKind};
use baton_core::sprint::{Entry, Field, Sprint};
use baton_core::status::{Status, StatusValue};
use scan::{Scan, ScannedEntry};
use std::collections::HashMap;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use yaml::YamlStatuses;

/// Why a sprint file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Reading failed.
    #[error("cannot read `{path}`: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: io::Error,
    },
    /// The file is not UTF-8.
    #[error("`{path}` is not UTF-8 text")]
    NotUtf8 {
        /// The file.
        path: PathBuf,
    },
    /// Lines end in a carriage return alone (classic Mac OS), which neither baton nor BMad reads.
    #[error(
        "`{path}` ends its lines with a carriage return alone (CR, classic Mac OS line endings); \
         convert them to LF (or CRLF), e.g. `tr '\\r' '\\n' < FILE > FILE.new`, then run again"
    )]
    CrLineEndings {
        /// The file.
        path: PathBuf,
    },
    /// The YAML does not parse, or a line has a layout baton cannot edit safely.
    #[error("{}:{line}{}: {message}", path.display(), column.map(|c| format!(":{c}")).unwrap_or_default())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column, when known.
        column: Option<usize>,
        /// What is wrong.
        message: String,
    },
}

/// Whether `text` breaks its lines with a carriage return alone: it has a CR and no LF.
pub fn cr_only(text: &str) -> bool {
    text.contains('\r') && !text.contains('\n')
}

/// Why a write did not happen.
#[derive(Debug, thiserror::Error)]
pub enum PersistError {
    /// The file changed on disk since it was read: reload and try again.
    #[error("`{path}` changed on disk since it was read")]
    Conflict {
        /// The file.
        path: PathBuf,
    },
    /// Writing failed.
    #[error(transparent)]
    Write(#[from] atomic::WriteError),
    /// The new text would not load back (a bug, or text that slipped past validation); nothing
    /// was written.
    #[error("refusing to write `{path}`: {detail}; the file was left as it was")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What the loader said.
        detail: String,
    },
}

/// Identity of the file's on-disk version, for compare-and-swap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DiskVersion {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl DiskVersion {
    fn of(meta: &fs::Metadata) -> Self {
        DiskVersion {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// A loaded sprint-status file.
#[derive(Debug, Clone)]
pub struct SprintDoc {
    path: PathBuf,
    text: String,
    /// The scan of the text as loaded; an entry's spans are these plus its growth in `shifts`
    /// (fields are kept exact).
    scan: Scan,
    /// Growth of the text before each entry since the scan (see [`shift`]).
    shifts: shift::Shifts,
    /// Whether the entries' spans increase in file order, so the entries after a byte offset
    /// can be found by bisection; when not, an edit shifts every entry's spans instead.
    ordered: bool,
    /// Keys that occur more than once, with their number of occurrences (edits refuse them).
    dups: HashMap<String, usize>,
    /// Positions of each epic's stories (first occurrences), built on first use: keys never
    /// change while the document lives.
    epic_stories: OnceLock<HashMap<EpicId, Vec<usize>>>,
    /// An empty buffer with the capacity of an earlier text, reused by the next edit.
    spare: String,
    sprint: Sprint,
    disk: Option<DiskVersion>,
    /// Whether the next write must parse the whole text again first: an edit wrote free text
    /// (a note, a reason). A status-only edit writes canonical tokens into spans the scanner
    /// placed, which cannot change what the rest of the file means, so it skips the parse and
    /// a durable step stays flat in the size of the file.
    verify: bool,
    /// The text's length after the last parse or edit: anything else changed it behind the
    /// editor's back, and the next write parses it whole.
    expected_len: usize,
}

impl SprintDoc {
    /// Reads and parses `path`.
    pub fn load(path: &Path) -> Result<Self, LoadError> {
        let io_err = |source| LoadError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = crate::bounded::open_regular(path).map_err(io_err)?;
        let meta = file.metadata().map_err(io_err)?;
        let limit = crate::bounded::DOCUMENT_LIMIT;
        let mut bytes = Vec::with_capacity(usize::try_from(meta.len().min(limit)).unwrap_or(0));
        io::Read::read_to_end(&mut io::Read::take(&file, limit + 1), &mut bytes).map_err(io_err)?;
        if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > limit {
            return Err(io_err(io::Error::new(
                io::ErrorKind::FileTooLarge,
                format!("larger than {limit} bytes, the most baton reads from a sprint file"),
            )));
        }
        let text = String::from_utf8(bytes).map_err(|_| LoadError::NotUtf8 {
            path: path.to_path_buf(),
        })?;
        let mut doc = Self::parse(path, text)?;
        doc.disk = Some(DiskVersion::of(&meta));
        Ok(doc)
    }

    /// Parses text that claims to come from `path` (used for messages only).
    pub fn parse(path: &Path, text: String) -> Result<Self, LoadError> {
        if cr_only(&text) {
            return Err(LoadError::CrLineEndings {
                path: path.to_path_buf(),
            });
        }
        let syntax = |line: usize, column: Option<usize>, message: String| LoadError::Syntax {
            path: path.to_path_buf(),
            line,
            column,
            message,
        };
        // A large file's YAML parse (most of a load) runs on a second thread while this one
        // scans the lines and builds the model; a small file's is not worth a thread.
        let (yaml, scanned) = if text.len() >= PARALLEL_PARSE_FROM {
            std::thread::scope(|s| {
                let worker = std::thread::Builder::new()
                    .name("sprint-yaml".into())
                    .spawn_scoped(s, || parse_yaml(&text));
                let scanned = scan_and_model(&text);
                let yaml = match worker {
                    Ok(handle) => handle
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                    Err(_) => parse_yaml(&text),
                };
                (yaml, scanned)
            })
        } else {
            let yaml = parse_yaml(&text).map_err(|(l, c, m)| syntax(l, c, m))?;
            (Ok(yaml), scan_and_model(&text))
        };
        let yaml = yaml.map_err(|(l, c, m)| syntax(l, c, m))?;
        let Scanned {
            scan,
            firsts,
            dups,
            sprint,
        } = scanned.map_err(|e| syntax(e.line, None, e.message))?;
        if let Some((l, m)) = cross_check(&scan, &firsts, &yaml).into_iter().next() {
            return Err(syntax(l, None, m));
        }
        let text_len = text.len();
        let ordered = scan
            .entries
            .windows(2)
            .all(|w| w[0].slot.eol < w[1].slot.insert_at);
        Ok(SprintDoc {
            path: path.to_path_buf(),
            text,
            scan,
            shifts: shift::Shifts::default(),
            ordered,
            dups,
            epic_stories: OnceLock::new(),
            spare: String::new(),
            sprint,
            disk: None,
            verify: false,
            expected_len: text_len,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The exact text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The typed model.
    pub fn sprint(&self) -> &Sprint {
        &self.sprint
    }

    /// The stories of epic `n` in file order (first occurrence of each key), like
    /// [`Sprint::stories_of`] but from an index built once per document, so a step's epic
    /// follow-up costs the size of the epic, not of the sprint.
    pub fn stories_of(&self, n: impl Into<EpicId>) -> impl Iterator<Item = &Entry> {
        let index = self.epic_stories.get_or_init(|| {
            // Stories are grouped by epic in practice: collect runs, then merge them by epic.
            let mut runs: Vec<(EpicId, Vec<usize>)> = Vec::new();
            for (i, e) in self.sprint.entries.iter().enumerate() {
                let KeyKind::Story { epic, .. } = e.key.kind() else {
                    continue;
                };
                // Only a duplicated key can be a later occurrence.
                if self.dups.contains_key(e.key.as_str())
                    && self.sprint.position(e.key.as_str()) != Some(i)
                {
                    continue;
                }
                match runs.last_mut() {
                    Some((last, run)) if *last == epic => run.push(i),
                    _ => runs.push((epic, vec![i])),
                }
            }
            let mut index: HashMap<EpicId, Vec<usize>> = HashMap::with_capacity(runs.len());
            for (epic, run) in runs {
                index.entry(epic).or_default().extend(run);
            }
            index
        });
        index
            .get(&n.into())
            .into_iter()
            .flatten()
            .filter_map(|&i| self.sprint.entries.get(i))
    }

    /// The scanned entry at `pos` with its spans where they are in the current text.
    pub(crate) fn entry_at(&self, pos: usize) -> Option<ScannedEntry> {
        let mut e = self.scan.entries.get(pos)?.clone();
        let delta = self.shifts.at(pos);
        if delta != 0 {
            edit::offset_slot(&mut e.slot, |o| o.wrapping_add_signed(delta));
        }
        Some(e)
    }

    /// Every scanned entry with its spans where they are in the current text.
    #[cfg(test)]
    pub(crate) fn resolved_entries(&self) -> Vec<ScannedEntry> {
        (0..self.scan.entries.len())
            .filter_map(|i| self.entry_at(i))
            .collect()
    }

    /// Whether the file on disk is no longer the version this document was read from or wrote.
    pub fn changed_on_disk(&self) -> bool {
        let now = fs::metadata(&self.path).ok().map(|m| DiskVersion::of(&m));
        now != self.disk
    }

    /// Writes the current text atomically, unless the file changed on disk since it was read.
    ///
    /// When an edit wrote free text (a note, a reason), the text is parsed again first (the
    /// write never leaves a file that does not load, or loads differently); a status-only edit
    /// writes canonical tokens into spans the scanner placed and is not parsed again. The file's
    /// identity is compared both before the temp file is written and when it is swapped in.
    pub fn persist(&mut self) -> Result<(), PersistError> {
        self.persist_inner(None)
    }

    /// [`SprintDoc::persist`], leaving the removal of the replaced file to `reaper` instead of
    /// waiting for it: the ledger's durable step, which nothing needs to hold up for it.
    pub fn persist_with(&mut self, reaper: &atomic::Reaper) -> Result<(), PersistError> {
        self.persist_inner(Some(reaper))
    }

    fn persist_inner(&mut self, reaper: Option<&atomic::Reaper>) -> Result<(), PersistError> {
        let conflict = || PersistError::Conflict {
            path: self.path.clone(),
        };
        // `replace_if` looks at the file's identity before it writes anything, and again when
        // it swaps the new text in.
        let check = self.verify || self.text.len() != self.expected_len;
        match check.then(|| SprintDoc::parse(&self.path, self.text.clone())) {
            None => {}
            Some(Ok(back)) if same_model(&back.sprint, &self.sprint) => {}
            Some(Ok(_)) => {
                return Err(PersistError::Unreadable {
                    path: self.path.clone(),
                    detail: "it would read back differently".to_owned(),
                });
            }
            Some(Err(e)) => {
                return Err(PersistError::Unreadable {
                    path: self.path.clone(),
                    detail: e.to_string(),
                });
            }
        }
        let expected = self.disk;
        let unchanged = |now: &fs::Metadata, moved: bool| {
            let now = DiskVersion::of(now);
            match expected {
                Some(e) if moved => {
                    DiskVersion {
                        ctime: e.ctime,
                        ..now
                    } == e
                }
                Some(e) => now == e,
                None => false,
            }
        };
        let bytes = self.text.as_bytes();
        let written = match reaper {
            Some(r) => atomic::replace_if_with(&self.path, bytes, unchanged, r)?,
            None => atomic::replace_if(&self.path, bytes, unchanged)?,
        };
        let Some(meta) = written else {
            return Err(conflict());
        };
        self.disk = Some(DiskVersion::of(&meta));
        self.verify = false;
        Ok(())
    }

    /// Writes the text as a new file (for `baton init` and tests), failing if it exists.
    pub fn create(path: &Path, text: &str) -> Result<Self, LoadError> {
        Self::parse(path, text.to_owned())?;
        let write = |source| LoadError::Io {
            path: path.to_path_buf(),
            source,
        };
        if path.exists() {
            return Err(write(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "file exists",
            )));
        }
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(write)?;
        }
        atomic::replace_durable(path, text.as_bytes()).map_err(|e| write(e.source))?;
        Self::load(path)
    }
}

/// From this size on, [`SprintDoc::parse`] runs the YAML parse on a second thread.
const PARALLEL_PARSE_FROM: usize = 32 * 1024;

/// What the line scan yields for a load: the scan, the position of the first occurrence of
/// every key, the duplicated keys and the model.
struct Scanned {
    scan: Scan,
    firsts: Vec<usize>,
    dups: HashMap<String, usize>,
    sprint: Sprint,
}

fn scan_and_model(text: &str) -> Result<Scanned, scan::ScanError> {
    let scan = scan::scan(text)?;
    let (firsts, dups) = firsts(&scan);
    let sprint = model(text, &scan);
    Ok(Scanned {
        scan,
        firsts,
        dups,
        sprint,
    })
}

/// Whether two models read the same: fields and entries (with their lines) alike.
fn same_model(a: &Sprint, b: &Sprint) -> bool {
    a.fields == b.fields
        && a.development_status_line == b.development_status_line
        && a.entries == b.entries
}

/// Parses the whole text as YAML; returns the `development_status` mapping (key → status text,
/// `None` for a value without a status) in file order, first occurrence of each key.
fn parse_yaml(text: &str) -> Result<Option<YamlStatuses>, (usize, Option<usize>, String)> {
    let options = serde_saphyr::options! {
        duplicate_keys: serde_saphyr::DuplicateKeyPolicy::FirstWins,
    };
    let root = match yaml::parse(text, options) {
        Ok(v) => v,
        Err(e) => {
            let (line, col) = e
                .location()
                .map(|l| (to_usize(l.line()), Some(to_usize(l.column()))))
                .unwrap_or((1, None));
            return Err((line.max(1), col, yaml_message(&e.to_string())));
        }
    };
    match root {
        yaml::Root::Null | yaml::Root::Map(None) => Ok(None),
        yaml::Root::NotMapping => Err((
            1,
            None,
            "the sprint file must be a mapping of `key: value` lines".into(),
        )),
        yaml::Root::Map(Some(yaml::Dev::Null)) => Ok(Some(Vec::new())),
        yaml::Root::Map(Some(yaml::Dev::NotMapping)) => Err((
            1,
            None,
            "`development_status` must be a mapping of `key: status`".into(),
        )),
        yaml::Root::Map(Some(yaml::Dev::Entries(entries))) => Ok(Some(entries)),
    }
}

/// The YAML library's message without its own `error: line N column M:` prefix (the caller
/// names the file, line and column itself).
fn yaml_message(full: &str) -> String {
    if let Some(at) = full.find("budget breached: ") {
        return budget_message(&full[at + 17..]);
    }
    let first = full.lines().next().unwrap_or("invalid YAML").trim();
    let first = first.strip_prefix("error:").unwrap_or(first).trim_start();
    let rest = match first.strip_prefix("line ") {
        Some(r) => r
            .split_once(": ")
            .filter(|(pos, _)| {
                pos.chars()
                    .all(|c| c.is_ascii_digit() || c == ' ' || c.is_ascii_alphabetic())
            })
            .map_or(first, |(_, msg)| msg),
        None => first,
    };
    rest.to_owned()
}

/// A sentence for a breach of the YAML parser's safety limits (`Nodes { nodes: 250001 }`, ...).
pub(crate) fn budget_message(breach: &str) -> String {
    let kind = breach.split([' ', '{']).next().unwrap_or_default();
    match kind {
        "Nodes" => "the file is too large for baton to read safely: it has more than 250000 YAML \
                    nodes (keys, values and list items; in a sprint file, about 125000 \
                    `development_status` entries); split it, or archive finished epics into \
                    another file"
            .to_owned(),
        "Depth" => "the file is nested too deeply for baton to read safely (more than 64 levels \
                    of mappings or lists)"
            .to_owned(),
        "Aliases" | "Anchors" | "AliasExpansion" | "MergeKeys" => {
            "the file uses too many YAML anchors, aliases or merge keys (`&`, `*`, `<<`) for \
             baton to read safely"
                .to_owned()
        }
        _ => format!(
            "the file is too large or too complex for baton to read safely (YAML limit: {})",
            breach.lines().next().unwrap_or(breach).trim()
        ),
    }
}

fn to_usize(n: impl TryInto<usize>) -> usize {
    n.try_into().unwrap_or(usize::MAX)
}

/// Every problem that keeps `text` from loading, in file order: the YAML error (a parser stops
/// at its first), every line the scanner cannot place, and every entry that YAML and the
/// scanner read differently. Empty when [`SprintDoc::parse`] would succeed.
pub fn diagnose(path: &Path, text: &str) -> Vec<LoadError> {
    let syntax = |line: usize, column: Option<usize>, message: String| LoadError::Syntax {
        path: path.to_path_buf(),
        line,
        column,
        message,
    };
    let (scan, scan_errors) = scan::scan_all(text);
    let mut out: Vec<LoadError> = scan_errors
        .into_iter()
        .map(|e| syntax(e.line, None, e.message))
        .collect();
    match parse_yaml(text) {
        Err((l, c, m)) => {
            if !out
                .iter()
                .any(|e| matches!(e, LoadError::Syntax { line, .. } if *line == l))
            {
                out.push(syntax(l, c, m));
            }
        }
        Ok(yaml) if out.is_empty() => {
            out.extend(
                cross_check(&scan, &firsts(&scan).0, &yaml)
                    .into_iter()
                    .map(|(l, m)| syntax(l, None, m)),
            );
        }
        Ok(_) => {}
    }
    out.sort_by_key(|e| match e {
        LoadError::Syntax { line, .. } => *line,
        _ => 0,
    });
    out
}

/// The position of the first occurrence of every key, in file order, and the keys that occur
/// more than once with their number of occurrences.
fn firsts(scan: &Scan) -> (Vec<usize>, HashMap<String, usize>) {
    let mut seen = std::collections::HashSet::with_capacity(scan.entries.len());
    let mut dups: HashMap<String, usize> = HashMap::new();
    let mut firsts = Vec::with_capacity(scan.entries.len());
    for (i, e) in scan.entries.iter().enumerate() {
        if seen.insert(e.key.as_str()) {
            firsts.push(i);
        } else {
            *dups.entry(e.key.clone()).or_insert(1) += 1;
        }
    }
    (firsts, dups)
}

fn cross_check(scan: &Scan, firsts: &[usize], yaml: &Option<YamlStatuses>) -> Vec<(usize, String)> {
    let Some(yaml) = yaml else {
        return Vec::new();
    };
    let out = check_entries(scan, firsts, yaml);
    if out.is_empty() {
        // The keys matched the scan's, which are distinct as text: so are YAML's.
        return out;
    }
    // Keys distinct to YAML but equal as text (`11` and `'11'`) are compared as one, as a map
    // keyed by text reads them.
    match yaml::merge_text_duplicates(yaml) {
        Some(merged) => check_entries(scan, firsts, &merged),
        None => out,
    }
}

fn check_entries(scan: &Scan, firsts: &[usize], yaml: &YamlStatuses) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    if firsts.len() != yaml.len() {
        let line = scan.dev_line.unwrap_or(1);
        out.push((
            line,
            format!(
                "`development_status` has {} entries for YAML but baton read {}; the mapping uses a layout baton cannot edit safely (keep one `key: status` per line)",
                yaml.len(),
                firsts.len()
            ),
        ));
        return out;
    }
    let firsts = firsts.iter().filter_map(|&i| scan.entries.get(i));
    for (e, (key, status)) in firsts.zip(yaml) {
        let mine = e.slot.value.as_ref().map(|v| v.text.as_str());
        if e.key != *key || mine != status.as_deref() {
            out.push((
                e.line,
                format!(
                    "`{}` reads as `{}` to YAML but `{}` to baton's editor (anchors, tags or multi-line values are not supported in `development_status`)",
                    key,
                    status.as_deref().unwrap_or("<none>"),
                    mine.unwrap_or("<none>")
                ),
            ));
        }
    }
    out
}

/// The `baton: <state>` marker in a trailing comment, if its state fits the canonical value.
pub(crate) fn marker(comment: &str, canonical: &StatusValue) -> Option<Status> {
    let at = comment.find("baton: ")?;
    let word: String = comment[at + 7..]
        .chars()
        .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
        .collect();
    let state = Status::parse(&word).filter(|s| s.is_extended())?;
    // needs-intervention keeps whatever the story had (even a foreign value); the others must
    // still sit on their projection, or the marker is stale.
    let fits = match state.projection() {
        Some(p) => canonical.known() == Some(p),
        None => true,
    };
    fits.then_some(state)
}

pub(crate) fn entry_of(text: &str, e: &ScannedEntry) -> Entry {
    let key = Key::new(e.key.clone());
    let raw = e.slot.value.as_ref().map(|v| v.text.clone());
    let (value, legacy) = match &raw {
        Some(r) => StatusValue::parse(r, key.kind()),
        None => (StatusValue::Unknown(String::new()), None),
    };
    let literal = value.known().filter(|s| s.is_extended());
    let marked = e
        .slot
        .comment
        .as_ref()
        .and_then(|c| marker(&text[c.clone()], &value));
    let extended = marked.or(literal);
    Entry {
        key,
        raw,
        value,
        legacy,
        extended,
        line: e.line,
        structured: e.structured,
    }
}

fn model(text: &str, scan: &Scan) -> Sprint {
    let fields = scan
        .fields
        .iter()
        .map(|f| Field {
            name: f.name.clone(),
            value: f.slot.value.as_ref().map(|v| v.text.clone()),
            line: f.line,
        })
        .collect();
    let entries = scan.entries.iter().map(|e| entry_of(text, e)).collect();
    Sprint::new(fields, scan.dev_line, entries)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;

#[cfg(test)]
mod notes;
