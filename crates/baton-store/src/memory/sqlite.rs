//! [`SqliteMemory`]: the embedded memory store in `.baton/memory.db`.
//!
//! Memories are rows keyed by their curation key (the same lesson is one row, its strength
//! counting how often it was learned); an external-content FTS5 table indexes their texts for
//! search and for the text match of recall. Scopes are kept as columns (epic, globs one per line)
//! so that recall reads only small rows and compiles a glob only when its literal prefix could
//! match one of the unit's files. Each scope is capped: past the cap the least important, then
//! oldest, memories are pruned, and the pruning is logged. A database that SQLite cannot read is
//! moved aside (never deleted) and reported; the caller goes on without memory.

use super::{Curated, Filter, LogEntry, Memory, MemoryError, MemoryStore, RecallRecord};
use baton_core::memory::recall::{self, Candidate, Query};
use baton_core::memory::{self, Draft, Kind, Scope, Source};
use baton_core::verdict::Finding;
use rusqlite::{Connection, OptionalExtension, Row, params};
use std::path::{Path, PathBuf};
use std::time::Duration;

// 2 adds `imports`; every statement of the schema is idempotent, so a version 1 database is
// brought up to date by running it again.
const SCHEMA_VERSION: i64 = 2;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS memories (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    importance INTEGER NOT NULL,
    source TEXT NOT NULL,
    text TEXT NOT NULL,
    unit TEXT,
    scope_label TEXT NOT NULL,
    scope_epic TEXT,
    scope_globs TEXT NOT NULL DEFAULT '',
    strength INTEGER NOT NULL DEFAULT 1,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS memories_scope ON memories(scope_label, importance, updated_at);
CREATE INDEX IF NOT EXISTS memories_wide ON memories(importance DESC, updated_at DESC)
    WHERE scope_globs = '';
CREATE TABLE IF NOT EXISTS memory_dirs (
    dir TEXT NOT NULL,
    memory_id INTEGER NOT NULL,
    PRIMARY KEY (dir, memory_id)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS memories_dirs_ad AFTER DELETE ON memories BEGIN
    DELETE FROM memory_dirs WHERE memory_id = old.id;
END;
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(text, content='memories', content_rowid='id');
CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER IF NOT EXISTS memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER IF NOT EXISTS memories_au AFTER UPDATE OF text ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, text) VALUES ('delete', old.id, old.text);
    INSERT INTO memories_fts(rowid, text) VALUES (new.id, new.text);
END;
CREATE TABLE IF NOT EXISTS memory_log (
    seq INTEGER PRIMARY KEY,
    at INTEGER NOT NULL,
    action TEXT NOT NULL,
    memory_id INTEGER,
    detail TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS recalls (
    seq INTEGER PRIMARY KEY,
    at INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    unit TEXT NOT NULL,
    stage TEXT NOT NULL,
    memories TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS recalls_unit ON recalls(unit);
CREATE TABLE IF NOT EXISTS imports (
    origin TEXT PRIMARY KEY,
    memory_id INTEGER,
    at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS open_findings (
    unit TEXT NOT NULL,
    key TEXT NOT NULL,
    finding TEXT NOT NULL,
    PRIMARY KEY (unit, key)
);
";

/// The default cap on memories per scope.
pub const DEFAULT_CAP: usize = 500;

/// The embedded memory store.
#[derive(Debug)]
pub struct SqliteMemory {
    conn: Connection,
    path: PathBuf,
    cap: usize,
}

impl SqliteMemory {
    /// Opens (creating if needed) the memory at `path`, keeping at most `cap` memories per scope.
    ///
    /// # Errors
    ///
    /// [`MemoryError::SetAside`] when the file is not a database SQLite can read (it is renamed
    /// `<name>.corrupt-<now>` first, with its WAL files); [`MemoryError::Sqlite`] for any other
    /// failure.
    pub fn open(path: &Path, cap: usize, now: i64) -> Result<SqliteMemory, MemoryError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| MemoryError::Queue {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        match Self::setup(Connection::open(path), path, cap) {
            Ok(m) => Ok(m),
            Err(MemoryError::Sqlite { source, .. }) if unreadable(&source) => {
                let moved_to = path.with_file_name(format!(
                    "{}.corrupt-{now}",
                    path.file_name()
                        .map_or_else(|| "memory.db".into(), |n| n.to_string_lossy().into_owned())
                ));
                let err = |source| MemoryError::Queue {
                    path: path.to_path_buf(),
                    source,
                };
                std::fs::rename(path, &moved_to).map_err(err)?;
                for suffix in ["-wal", "-shm"] {
                    let side = PathBuf::from(format!("{}{suffix}", path.display()));
                    if side.exists() {
                        let to = PathBuf::from(format!("{}{suffix}", moved_to.display()));
                        std::fs::rename(&side, to).map_err(err)?;
                    }
                }
                Err(MemoryError::SetAside {
                    path: path.to_path_buf(),
                    moved_to,
                    why: source.to_string(),
                })
            }
            Err(e) => Err(e),
        }
    }

    /// Opens an existing memory for reading only (a viewer such as the board): nothing is
    /// created, migrated or set aside, and every write fails.
    ///
    /// # Errors
    ///
    /// [`MemoryError::Sqlite`] when it cannot be opened or is not a memory database.
    pub fn open_read_only(path: &Path) -> Result<SqliteMemory, MemoryError> {
        let err = |source| MemoryError::Sqlite {
            path: path.to_path_buf(),
            source,
        };
        let conn = Connection::open_with_flags(
            path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(err)?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(err)?;
        conn.query_row("SELECT count(*) FROM memories", [], |r| r.get::<_, i64>(0))
            .map_err(err)?;
        Ok(SqliteMemory {
            conn,
            path: path.to_path_buf(),
            cap: DEFAULT_CAP,
        })
    }

    /// A private in-memory store (tests, benchmarks).
    ///
    /// # Errors
    ///
    /// [`MemoryError::Sqlite`] if SQLite cannot set it up.
    pub fn open_in_memory(cap: usize) -> Result<SqliteMemory, MemoryError> {
        Self::setup(Connection::open_in_memory(), Path::new(":memory:"), cap)
    }

    fn setup(
        conn: rusqlite::Result<Connection>,
        path: &Path,
        cap: usize,
    ) -> Result<SqliteMemory, MemoryError> {
        let err = |source| MemoryError::Sqlite {
            path: path.to_path_buf(),
            source,
        };
        let conn = conn.map_err(err)?;
        conn.busy_timeout(Duration::from_secs(30)).map_err(err)?;
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(err)?;
        if version < SCHEMA_VERSION {
            conn.pragma_update(None, "journal_mode", "WAL")
                .map_err(err)?;
            conn.execute_batch(SCHEMA).map_err(err)?;
            conn.pragma_update(None, "user_version", SCHEMA_VERSION)
                .map_err(err)?;
        }
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(err)?;
        // Reading every table once proves the file is ours and readable.
        conn.query_row("SELECT count(*) FROM memories", [], |r| r.get::<_, i64>(0))
            .map_err(err)?;
        Ok(SqliteMemory {
            conn,
            path: path.to_path_buf(),
            cap: cap.max(1),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self) -> impl Fn(rusqlite::Error) -> MemoryError + '_ {
        |source| MemoryError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    fn memory(&self, row: &Row<'_>) -> rusqlite::Result<Result<Memory, MemoryError>> {
        let id: i64 = row.get("id")?;
        let kind: String = row.get("kind")?;
        let source: String = row.get("source")?;
        let importance: i64 = row.get("importance")?;
        let strength: i64 = row.get("strength")?;
        let corrupt = |detail: String| MemoryError::Corrupt {
            path: self.path.clone(),
            id,
            detail,
        };
        let Some(kind) = Kind::parse(&kind) else {
            return Ok(Err(corrupt(format!("unknown kind `{kind}`"))));
        };
        let Some(source) = Source::parse(&source) else {
            return Ok(Err(corrupt(format!("unknown source `{source}`"))));
        };
        Ok(Ok(Memory {
            id,
            kind,
            importance: u8::try_from(importance).unwrap_or(memory::MAX_IMPORTANCE),
            source,
            text: row.get("text")?,
            unit: row.get("unit")?,
            scope: scope(
                row.get("scope_epic")?,
                &row.get::<_, String>("scope_globs")?,
            ),
            strength: u32::try_from(strength).unwrap_or(1),
            created_at: row.get("created_at")?,
            updated_at: row.get("updated_at")?,
        }))
    }

    fn memories(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
    ) -> Result<Vec<Memory>, MemoryError> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(self.err())?;
        let rows = stmt
            .query_map(params, |r| self.memory(r))
            .map_err(self.err())?;
        let mut out = Vec::new();
        for row in rows {
            out.push(row.map_err(self.err())??);
        }
        Ok(out)
    }
}

/// Prunes the scope `label` down to `cap` memories, least important and oldest first, logging
/// each one removed.
fn prune(
    tx: &rusqlite::Transaction<'_>,
    label: &str,
    cap: usize,
    now: i64,
) -> rusqlite::Result<()> {
    let count: i64 = tx.query_row(
        "SELECT count(*) FROM memories WHERE scope_label = ?1",
        [label],
        |r| r.get(0),
    )?;
    let over = count - i64::try_from(cap).unwrap_or(i64::MAX);
    if over <= 0 {
        return Ok(());
    }
    let victims: Vec<(i64, String)> = tx
        .prepare(
            "SELECT id, text FROM memories WHERE scope_label = ?1
                 ORDER BY importance ASC, updated_at ASC, id ASC LIMIT ?2",
        )?
        .query_map(params![label, over], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (id, text) in victims {
        tx.execute("DELETE FROM memories WHERE id = ?1", [id])?;
        log(
            tx,
            now,
            "pruned",
            Some(id),
            &format!("scope {label} over its cap of {cap}: {text}"),
        )?;
    }
    Ok(())
}

fn unreadable(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt)
    )
}

fn scope(epic: Option<String>, globs: &str) -> Scope {
    Scope {
        epic,
        globs: globs.lines().map(str::to_owned).collect(),
    }
}

fn log(
    tx: &rusqlite::Transaction<'_>,
    at: i64,
    action: &str,
    memory: Option<i64>,
    detail: &str,
) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO memory_log (at, action, memory_id, detail) VALUES (?1, ?2, ?3, ?4)",
        params![at, action, memory, detail],
    )?;
    Ok(())
}

/// The words of `text` as an FTS5 query that matches any of them, each quoted so that no
/// character of it is read as query syntax.
fn fts_any(text: &str) -> Option<String> {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .take(32)
        .map(|w| format!("\"{}\"", w.to_lowercase()))
        .collect();
    (!words.is_empty()).then(|| words.join(" OR "))
}

/// How many project- and epic-wide memories recall weighs at most, the most important and
/// newest first: far more than a task's budget holds.
const WIDE_LIMIT: i64 = 256;

/// The directory a glob starts in: its part before the first special character, cut after the
/// last `/` (`src/db/` of `src/db/**` and of `src/db/*.rs`, `` of `**/*.rs`). A file the glob
/// matches lies under it.
fn glob_dir(glob: &str) -> &str {
    let glob = glob.trim_start_matches("./");
    let end = glob.find(['*', '?', '[', '{', '\\']).unwrap_or(glob.len());
    let literal = &glob[..end];
    literal.rfind('/').map_or("", |i| &literal[..=i])
}

/// The directories a file lies under, from the root: `` `src/` `src/db/` of `src/db/pool.rs`.
fn dirs_of(file: &str) -> Vec<String> {
    let file = file.trim_start_matches("./");
    let mut out = vec![String::new()];
    out.extend(file.match_indices('/').map(|(i, _)| file[..=i].to_owned()));
    out
}

/// The words of a unit that rank memories mentioning them higher: lowercase, three letters or
/// more, at most 32.
fn match_words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .collect();
    words.sort();
    words.dedup();
    words.truncate(32);
    words
}

/// The share of `words` that `text` contains, 0–1.
fn text_match(text: &str, words: &[String]) -> f64 {
    if words.is_empty() {
        return 0.0;
    }
    let text = text.to_lowercase();
    let hits = words.iter().filter(|w| text.contains(w.as_str())).count();
    hits as f64 / words.len() as f64
}

impl SqliteMemory {
    /// Stores `draft` in one transaction; with an `origin` already stored, nothing (`None`).
    fn store(
        &mut self,
        mut draft: Draft,
        origin: Option<&str>,
        now: i64,
    ) -> Result<Option<Curated>, MemoryError> {
        memory::check(&mut draft)?;
        let key = draft.key();
        let label = draft.scope.label();
        let path = self.path.clone();
        let err = move |source| MemoryError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(&err)?;
        if let Some(origin) = origin {
            let seen = tx
                .query_row("SELECT 1 FROM imports WHERE origin = ?1", [origin], |_| {
                    Ok(())
                })
                .optional()
                .map_err(&err)?
                .is_some();
            if seen {
                return Ok(None);
            }
        }
        let existing: Option<(i64, i64)> = tx
            .query_row(
                "SELECT id, importance FROM memories WHERE key = ?1",
                [&key],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(&err)?;
        let curated = match existing {
            Some((id, importance)) => {
                tx.execute(
                    "UPDATE memories SET strength = strength + 1, updated_at = ?2,
                     importance = max(importance, ?3) WHERE id = ?1",
                    params![id, now, draft.importance],
                )
                .map_err(&err)?;
                let raised = i64::from(draft.importance) > importance;
                let detail = if raised {
                    format!("importance {importance} → {}", draft.importance)
                } else {
                    String::new()
                };
                log(&tx, now, "strengthened", Some(id), &detail).map_err(&err)?;
                Curated::Strengthened(id)
            }
            None => {
                tx.execute(
                    "INSERT INTO memories (key, kind, importance, source, text, unit, scope_label,
                     scope_epic, scope_globs, strength, created_at, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 1, ?10, ?10)",
                    params![
                        key,
                        draft.kind.as_str(),
                        draft.importance,
                        draft.source.as_str(),
                        draft.text,
                        draft.unit,
                        label,
                        draft.scope.epic,
                        draft.scope.globs.join("\n"),
                        now
                    ],
                )
                .map_err(&err)?;
                let id = tx.last_insert_rowid();
                for glob in &draft.scope.globs {
                    tx.execute(
                        "INSERT OR IGNORE INTO memory_dirs (dir, memory_id) VALUES (?1, ?2)",
                        params![glob_dir(glob), id],
                    )
                    .map_err(&err)?;
                }
                log(&tx, now, "added", Some(id), draft.source.as_str()).map_err(&err)?;
                Curated::Added(id)
            }
        };
        if let Some(origin) = origin {
            tx.execute(
                "INSERT INTO imports (origin, memory_id, at) VALUES (?1, ?2, ?3)",
                params![origin, curated.id(), now],
            )
            .map_err(&err)?;
        }
        prune(&tx, &label, self.cap, now).map_err(&err)?;
        tx.commit().map_err(&err)?;
        Ok(Some(curated))
    }
}

const COLUMNS: &str = "id, kind, importance, source, text, unit, scope_epic, scope_globs, \
                       strength, created_at, updated_at";

impl MemoryStore for SqliteMemory {
    fn remember(&mut self, draft: Draft, now: i64) -> Result<Curated, MemoryError> {
        // Without an origin a draft is always stored: `None` cannot come back.
        self.store(draft, None, now)
            .map(|c| c.unwrap_or(Curated::Strengthened(0)))
    }

    fn remember_once(
        &mut self,
        draft: Draft,
        origin: &str,
        now: i64,
    ) -> Result<Option<Curated>, MemoryError> {
        self.store(draft, Some(origin), now)
    }

    fn forget(&mut self, id: i64, now: i64) -> Result<bool, MemoryError> {
        let path = self.path.clone();
        let err = move |source| MemoryError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(&err)?;
        let text: Option<String> = tx
            .query_row("SELECT text FROM memories WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .optional()
            .map_err(&err)?;
        let Some(text) = text else {
            return Ok(false);
        };
        tx.execute("DELETE FROM memories WHERE id = ?1", [id])
            .map_err(&err)?;
        log(&tx, now, "forgotten", Some(id), &text).map_err(&err)?;
        tx.commit().map_err(&err)?;
        Ok(true)
    }

    fn get(&self, id: i64) -> Result<Option<Memory>, MemoryError> {
        Ok(self
            .memories(
                &format!("SELECT {COLUMNS} FROM memories WHERE id = ?1"),
                [id],
            )?
            .pop())
    }

    fn list(&self, filter: &Filter) -> Result<Vec<Memory>, MemoryError> {
        let limit = filter
            .limit
            .map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX));
        self.memories(
            &format!(
                "SELECT {COLUMNS} FROM memories
                 WHERE (?1 IS NULL OR kind = ?1) AND (?2 IS NULL OR source = ?2)
                 ORDER BY updated_at DESC, id DESC LIMIT ?3"
            ),
            params![
                filter.kind.map(Kind::as_str),
                filter.source.map(Source::as_str),
                limit
            ],
        )
    }

    fn search(&self, words: &str, limit: usize) -> Result<Vec<Memory>, MemoryError> {
        let Some(q) = fts_any(words) else {
            return Ok(Vec::new());
        };
        self.memories(
            &format!(
                "SELECT {} FROM memories_fts f JOIN memories m ON m.id = f.rowid
                 WHERE memories_fts MATCH ?1 ORDER BY f.rank LIMIT ?2",
                COLUMNS
                    .split(", ")
                    .map(|c| format!("m.{c}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            params![q, i64::try_from(limit).unwrap_or(i64::MAX)],
        )
    }

    fn candidates(
        &self,
        query: &Query,
        words: &str,
        now: i64,
    ) -> Result<Vec<Candidate>, MemoryError> {
        let words = match_words(words);
        let epic = query.epic.as_deref();
        let mut out: Vec<Candidate> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut take = |row: &Row<'_>, out: &mut Vec<Candidate>| -> rusqlite::Result<()> {
            let id: i64 = row.get(0)?;
            if !seen.insert(id) {
                return Ok(());
            }
            let kind: String = row.get(1)?;
            let Some(kind) = Kind::parse(&kind) else {
                return Ok(());
            };
            let globs: String = row.get(4)?;
            let scope = scope(row.get(3)?, &globs);
            if recall::scope_relevance(&scope, query).is_none() {
                return Ok(());
            }
            let importance: i64 = row.get(2)?;
            let strength: i64 = row.get(5)?;
            let updated: i64 = row.get(6)?;
            let text: String = row.get(7)?;
            out.push(Candidate {
                id,
                kind,
                importance: u8::try_from(importance).unwrap_or(memory::MAX_IMPORTANCE),
                text_match: text_match(&text, &words),
                text,
                scope,
                strength: u32::try_from(strength).unwrap_or(1),
                age_days: (now - updated).max(0) as f64 / 86_400.0,
            });
            Ok(())
        };
        // The project's and the epic's memories, the most important and newest first: recall
        // never needs more of them than fill a budget, so a bounded number are weighed.
        let mut wide = self
            .conn
            .prepare_cached(
                "SELECT id, kind, importance, scope_epic, scope_globs, strength, updated_at, text
                 FROM memories INDEXED BY memories_wide
                 WHERE scope_globs = '' AND (scope_epic IS NULL OR scope_epic = ?1)
                 ORDER BY importance DESC, updated_at DESC LIMIT ?2",
            )
            .map_err(self.err())?;
        let mut rows = wide.query(params![epic, WIDE_LIMIT]).map_err(self.err())?;
        while let Some(row) = rows.next().map_err(self.err())? {
            take(row, &mut out).map_err(self.err())?;
        }
        drop(rows);
        // Memories scoped to files: only those whose glob starts in a directory of one of the
        // unit's files (an index lookup per directory), then matched exactly.
        let mut dirs: Vec<String> = query.files.iter().flat_map(|f| dirs_of(f)).collect();
        dirs.sort();
        dirs.dedup();
        let mut scoped = self
            .conn
            .prepare_cached(
                "SELECT m.id, m.kind, m.importance, m.scope_epic, m.scope_globs, m.strength,
                        m.updated_at, m.text
                 FROM memory_dirs d JOIN memories m ON m.id = d.memory_id
                 WHERE d.dir = ?1 AND (m.scope_epic IS NULL OR m.scope_epic = ?2)",
            )
            .map_err(self.err())?;
        for dir in &dirs {
            let mut rows = scoped.query(params![dir, epic]).map_err(self.err())?;
            while let Some(row) = rows.next().map_err(self.err())? {
                take(row, &mut out).map_err(self.err())?;
            }
        }
        Ok(out)
    }

    fn record_recall(&mut self, recall: &RecallRecord) -> Result<(), MemoryError> {
        let ids = recall
            .memories
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(",");
        self.conn
            .execute(
                "INSERT INTO recalls (at, run_id, unit, stage, memories) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![recall.at, recall.run_id, recall.unit, recall.stage, ids],
            )
            .map_err(self.err())?;
        Ok(())
    }

    fn recalls(&self, unit: &str) -> Result<Vec<RecallRecord>, MemoryError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT at, run_id, unit, stage, memories FROM recalls WHERE unit = ?1 ORDER BY seq",
            )
            .map_err(self.err())?;
        let rows = stmt
            .query_map([unit], |r| {
                let ids: String = r.get(4)?;
                Ok(RecallRecord {
                    at: r.get(0)?,
                    run_id: r.get(1)?,
                    unit: r.get(2)?,
                    stage: r.get(3)?,
                    memories: ids.split(',').filter_map(|s| s.parse().ok()).collect(),
                })
            })
            .map_err(self.err())?;
        rows.collect::<rusqlite::Result<_>>().map_err(self.err())
    }

    fn settle_findings(
        &mut self,
        unit: &str,
        findings: &[Finding],
    ) -> Result<Vec<Finding>, MemoryError> {
        let path = self.path.clone();
        let err = move |source| MemoryError::Sqlite {
            path: path.clone(),
            source,
        };
        let keyed: Vec<(String, &Finding)> = findings.iter().map(|f| (finding_key(f), f)).collect();
        let tx = self.conn.transaction().map_err(&err)?;
        let open: Vec<(String, String)> = tx
            .prepare("SELECT key, finding FROM open_findings WHERE unit = ?1")
            .map_err(&err)?
            .query_map([unit], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(&err)?
            .collect::<rusqlite::Result<_>>()
            .map_err(&err)?;
        let resolved = open
            .into_iter()
            .filter(|(k, _)| !keyed.iter().any(|(n, _)| n == k))
            .filter_map(|(_, json)| serde_json::from_str::<Finding>(&json).ok())
            .collect();
        tx.execute("DELETE FROM open_findings WHERE unit = ?1", [unit])
            .map_err(&err)?;
        for (key, f) in &keyed {
            let json = serde_json::to_string(f).unwrap_or_default();
            tx.execute(
                "INSERT OR REPLACE INTO open_findings (unit, key, finding) VALUES (?1, ?2, ?3)",
                params![unit, key, json],
            )
            .map_err(&err)?;
        }
        tx.commit().map_err(&err)?;
        Ok(resolved)
    }

    fn log(&self) -> Result<Vec<LogEntry>, MemoryError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT at, action, memory_id, detail FROM memory_log ORDER BY seq")
            .map_err(self.err())?;
        let rows = stmt
            .query_map([], |r| {
                Ok(LogEntry {
                    at: r.get(0)?,
                    action: r.get(1)?,
                    memory: r.get(2)?,
                    detail: r.get(3)?,
                })
            })
            .map_err(self.err())?;
        rows.collect::<rusqlite::Result<_>>().map_err(self.err())
    }
}

/// A finding's identity across review rounds: its file and its issue, normalised.
fn finding_key(f: &Finding) -> String {
    format!(
        "{}|{}",
        f.file.trim().trim_start_matches("./"),
        memory::normalise(&f.issue)
    )
}

#[cfg(test)]
mod tests;
