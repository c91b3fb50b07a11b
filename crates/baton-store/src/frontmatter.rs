//! YAML frontmatter of markdown documents, edited without disturbing anything else.
//!
//! This module owns reading and minimally rewriting the `---`-fenced YAML block at the top of
//! BMad markdown documents: planning documents whose `stepsCompleted` records step-file progress
//! (ints or step-file names, BMAD-FORMAT.md §4 and R8) and story files whose optional frontmatter
//! holds `baseline_commit` (§3). The fences are found by hand, the body after the closing fence is
//! kept byte for byte, and [`Document::set`] rewrites only the block of the one top-level key it
//! changes, then re-parses the result and refuses any edit that would not read back as intended.
//! It also owns [`Checkpoints`]: numbered snapshots of a document under `.baton/checkpoints`,
//! pruned to the newest ten, that can be restored atomically.

use std::fmt;
use std::fs;
use std::io;
use std::marker::PhantomData;
use std::ops::Range;
use std::path::{Component, Path, PathBuf};

use serde::Serialize;
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess,
    Visitor,
};
use serde_saphyr::Spanned;
use sha2::{Digest, Sha256};

use crate::atomic::{WriteError, replace_durable};

/// The frontmatter key holding step-file progress (BMAD-FORMAT.md §4).
pub const STEPS_COMPLETED: &str = "stepsCompleted";

/// How many checkpoints [`Checkpoints`] keeps per document unless told otherwise.
pub const DEFAULT_KEEP: usize = 10;

/// An error reading, editing or writing a document's frontmatter, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum FrontmatterError {
    /// The file could not be read (or a directory could not be listed or created).
    #[error("cannot read `{}`: {source}", path.display())]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: io::Error,
    },
    /// The file could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// The document opens a frontmatter block on its first line that no `---` line closes.
    #[error("`{}`: the frontmatter opened on line 1 is never closed by a `---` line", path.display())]
    Unclosed {
        /// The document.
        path: PathBuf,
    },
    /// The frontmatter is not valid YAML, or not a mapping with string keys.
    #[error("invalid YAML frontmatter in `{}`: {message}", path.display())]
    Yaml {
        /// The document.
        path: PathBuf,
        /// 1-based line in the file (not in the frontmatter), when known.
        line: Option<usize>,
        /// 1-based column, when known.
        column: Option<usize>,
        /// The parser's message, with file line numbers.
        message: String,
    },
    /// A key's value does not have the shape the caller asked for.
    #[error("`{key}` in the frontmatter of `{}` has an unexpected shape: {message}", path.display())]
    Value {
        /// The document.
        path: PathBuf,
        /// The top-level key.
        key: String,
        /// 1-based line in the file, when known.
        line: Option<usize>,
        /// The deserializer's message, with file line numbers.
        message: String,
    },
    /// The value to store could not be serialized as YAML.
    #[error("cannot serialize `{key}` for the frontmatter of `{}`: {message}", path.display())]
    Serialize {
        /// The document.
        path: PathBuf,
        /// The top-level key.
        key: String,
        /// The serializer's message.
        message: String,
    },
    /// An edit was refused because the result would not read back as intended.
    #[error("refusing to change `{key}` in the frontmatter of `{}`: {reason}", path.display())]
    EditRejected {
        /// The document.
        path: PathBuf,
        /// The top-level key.
        key: String,
        /// Why the edit was refused.
        reason: String,
    },
    /// `stepsCompleted` mixes step numbers and step-file names in a way a caller refuses (no
    /// longer returned by [`Document::push_step_completed`], which accepts mixed lists).
    #[error("`stepsCompleted` in `{}` {message}", path.display())]
    StepsDialect {
        /// The document.
        path: PathBuf,
        /// What is mixed.
        message: String,
    },
    /// A checkpoint does not belong to the document's checkpoint directory.
    #[error("`{}` is not a checkpoint of `{}`", checkpoint.display(), path.display())]
    ForeignCheckpoint {
        /// The document.
        path: PathBuf,
        /// The checkpoint file offered.
        checkpoint: PathBuf,
    },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> FrontmatterError + '_ {
    move |source| FrontmatterError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Where the frontmatter sits in a document's text (byte offsets into [`Document::text`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontSpan {
    /// The YAML between the fences, each line with its line ending (may be empty).
    pub yaml: Range<usize>,
    /// Where the body starts: just after the closing fence line.
    pub body_start: usize,
    /// Whether the opening fence ends in `\r\n`; new frontmatter lines use the same ending.
    pub crlf: bool,
}

enum Split {
    Plain,
    Front(FrontSpan),
    Unclosed,
}

fn bom_len(text: &str) -> usize {
    if text.starts_with('\u{feff}') {
        '\u{feff}'.len_utf8()
    } else {
        0
    }
}

fn split(text: &str) -> Split {
    let start = bom_len(text);
    let rest = &text[start..];
    let (open_len, crlf) = if rest.starts_with("---\n") {
        (4, false)
    } else if rest.starts_with("---\r\n") {
        (5, true)
    } else {
        return Split::Plain;
    };
    let yaml_start = start + open_len;
    let mut pos = yaml_start;
    while pos < text.len() {
        let line_end = text[pos..].find('\n').map_or(text.len(), |i| pos + i + 1);
        let line = &text[pos..line_end];
        let content = line.strip_suffix('\n').unwrap_or(line);
        let content = content.strip_suffix('\r').unwrap_or(content);
        if content == "---" || content == "..." {
            return Split::Front(FrontSpan {
                yaml: yaml_start..pos,
                body_start: line_end,
                crlf,
            });
        }
        pos = line_end;
    }
    Split::Unclosed
}

/// Byte offset where the markdown body of `text` starts: after a closed frontmatter block, else 0.
///
/// Lenient: an unclosed frontmatter is treated as body, so callers that only look at the body
/// (like the story `Status:` line) keep working on odd files.
pub fn body_offset(text: &str) -> usize {
    match split(text) {
        Split::Front(span) => span.body_start,
        Split::Plain | Split::Unclosed => bom_len(text),
    }
}

/// One entry of `stepsCompleted`: a step number or a step-file name (the two dialects of §4).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StepRef {
    /// A step number, as in `stepsCompleted: [1, 2, 3]`.
    Int(u32),
    /// A step-file name, as in `stepsCompleted: ["step-01-init.md"]`.
    Name(String),
}

impl fmt::Display for StepRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StepRef::Int(n) => write!(f, "{n}"),
            StepRef::Name(s) => f.write_str(s),
        }
    }
}

impl From<u32> for StepRef {
    fn from(n: u32) -> Self {
        StepRef::Int(n)
    }
}

impl From<&str> for StepRef {
    fn from(s: &str) -> Self {
        StepRef::Name(s.to_owned())
    }
}

impl From<String> for StepRef {
    fn from(s: String) -> Self {
        StepRef::Name(s)
    }
}

impl Serialize for StepRef {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            StepRef::Int(n) => serializer.serialize_u32(*n),
            StepRef::Name(s) => serializer.serialize_str(s),
        }
    }
}

impl<'de> de::Deserialize<'de> for StepRef {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = StepRef;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a step number or a step file name")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<StepRef, E> {
                u32::try_from(v)
                    .map(StepRef::Int)
                    .map_err(|_| E::custom(format!("step number {v} is too large")))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<StepRef, E> {
                u32::try_from(v)
                    .map(StepRef::Int)
                    .map_err(|_| E::custom(format!("step number {v} is out of range")))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<StepRef, E> {
                if v.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&v) {
                    // Checked above: integral and in range.
                    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                    Ok(StepRef::Int(v as u32))
                } else {
                    Err(E::custom(format!("{v} is not a step number")))
                }
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<StepRef, E> {
                Ok(StepRef::Name(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<StepRef, E> {
                Ok(StepRef::Name(v))
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// A structural YAML value, used to check that an edit reads back as intended.
#[derive(Debug, Clone, PartialEq)]
enum AnyValue {
    Null,
    Bool(bool),
    Int(i128),
    Float(u64),
    Str(String),
    Bytes(Vec<u8>),
    Seq(Vec<AnyValue>),
    Map(Vec<(AnyValue, AnyValue)>),
}

impl<'de> de::Deserialize<'de> for AnyValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AnyValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any YAML value")
            }
            fn visit_bool<E>(self, v: bool) -> Result<AnyValue, E> {
                Ok(AnyValue::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<AnyValue, E> {
                Ok(AnyValue::Int(i128::from(v)))
            }
            fn visit_u64<E>(self, v: u64) -> Result<AnyValue, E> {
                Ok(AnyValue::Int(i128::from(v)))
            }
            fn visit_i128<E>(self, v: i128) -> Result<AnyValue, E> {
                Ok(AnyValue::Int(v))
            }
            fn visit_u128<E: de::Error>(self, v: u128) -> Result<AnyValue, E> {
                Ok(i128::try_from(v).map_or_else(|_| AnyValue::Str(v.to_string()), AnyValue::Int))
            }
            fn visit_f64<E>(self, v: f64) -> Result<AnyValue, E> {
                Ok(AnyValue::Float(v.to_bits()))
            }
            fn visit_str<E>(self, v: &str) -> Result<AnyValue, E> {
                Ok(AnyValue::Str(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<AnyValue, E> {
                Ok(AnyValue::Str(v))
            }
            fn visit_bytes<E>(self, v: &[u8]) -> Result<AnyValue, E> {
                Ok(AnyValue::Bytes(v.to_vec()))
            }
            fn visit_byte_buf<E>(self, v: Vec<u8>) -> Result<AnyValue, E> {
                Ok(AnyValue::Bytes(v))
            }
            fn visit_none<E>(self) -> Result<AnyValue, E> {
                Ok(AnyValue::Null)
            }
            fn visit_unit<E>(self) -> Result<AnyValue, E> {
                Ok(AnyValue::Null)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<AnyValue, D::Error> {
                <AnyValue as de::Deserialize>::deserialize(d)
            }
            fn visit_newtype_struct<D: Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<AnyValue, D::Error> {
                <AnyValue as de::Deserialize>::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<AnyValue, A::Error> {
                let mut out = Vec::new();
                while let Some(v) = seq.next_element()? {
                    out.push(v);
                }
                Ok(AnyValue::Seq(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AnyValue, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    out.push(entry);
                }
                Ok(AnyValue::Map(out))
            }
        }
        deserializer.deserialize_any(V)
    }
}

impl AnyValue {
    fn is_collection(&self) -> bool {
        matches!(self, AnyValue::Seq(v) if !v.is_empty())
            || matches!(self, AnyValue::Map(m) if !m.is_empty())
    }
}

fn yaml_options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        with_snippet: false,
        non_finite_float_policy: serde_saphyr::NonFiniteFloatPolicy::PassThrough,
    }
}

/// The top-level entries of a YAML mapping (an empty or null document has none).
struct Entries<V>(PhantomData<V>);

impl<'de, V: de::Deserialize<'de>> Visitor<'de> for Entries<V> {
    type Value = Vec<(Spanned<String>, V)>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping of keys to values")
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(key) = map.next_key::<Spanned<String>>()? {
            let value = map.next_value::<V>()?;
            out.push((key, value));
        }
        Ok(out)
    }
}

fn entries<V: DeserializeOwned>(
    yaml: &str,
) -> Result<Vec<(Spanned<String>, V)>, serde_saphyr::Error> {
    serde_saphyr::with_deserializer_from_str_with_options(yaml, yaml_options(), |de| {
        de.deserialize_any(Entries(PhantomData))
    })
}

/// Picks one top-level key's value out of a mapping, deserialized as `T`.
struct Pick<'k, T> {
    key: &'k str,
    _t: PhantomData<T>,
}

impl<'de, T: de::Deserialize<'de>> DeserializeSeed<'de> for Pick<'_, T> {
    type Value = Option<T>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<T>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, T: de::Deserialize<'de>> Visitor<'de> for Pick<'_, T> {
    type Value = Option<T>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping of keys to values")
    }
    fn visit_unit<E>(self) -> Result<Option<T>, E> {
        Ok(None)
    }
    fn visit_none<E>(self) -> Result<Option<T>, E> {
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<T>, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<String>()? {
            if found.is_none() && key == self.key {
                found = Some(map.next_value::<T>()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

fn to_usize(n: u64) -> Option<usize> {
    usize::try_from(n).ok().filter(|&n| n > 0)
}

/// Renders a parser error with line numbers of the file (`line_offset` lines precede the YAML).
fn render(e: &serde_saphyr::Error, line_offset: usize) -> (Option<usize>, Option<usize>, String) {
    let loc = e.location();
    let line = loc
        .and_then(|l| to_usize(l.line()))
        .map(|l| l.saturating_add(line_offset));
    let column = loc.and_then(|l| to_usize(l.column()));
    let full = e.to_string();
    // A breach of the parser's safety limits gets a sentence, not the parser's internals.
    if let Some(at) = full.find("budget breached: ") {
        return (
            line,
            column,
            crate::sprint_file::budget_message(&full[at + 17..]),
        );
    }
    let message = e.render_with_options(serde_saphyr::render_options! {
        snippets: serde_saphyr::SnippetMode::Off,
        line_offset: u64::try_from(line_offset).unwrap_or(0),
    });
    (line, column, message)
}

#[derive(Debug, Clone)]
struct KeyEntry {
    name: String,
    /// 1-based line within the YAML (not the file).
    line: usize,
    /// 1-based column of the key.
    column: usize,
}

/// A markdown document split into optional YAML frontmatter and a body kept byte for byte.
#[derive(Debug, Clone)]
pub struct Document {
    path: PathBuf,
    text: String,
    front: Option<FrontSpan>,
    keys: Vec<KeyEntry>,
}

/// Lines of `s` with their endings, each as a byte range into `s`.
fn line_ranges(s: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < s.len() {
        let end = s[pos..].find('\n').map_or(s.len(), |i| pos + i + 1);
        out.push(pos..end);
        pos = end;
    }
    out
}

fn strip_eol(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
}

/// The byte index of the `:` that ends the key at the start of a top-level `key: value` line.
fn key_colon(line: &str) -> Option<usize> {
    let bytes = line.as_bytes();
    let after_key = match bytes.first()? {
        b'"' => {
            let mut i = 1;
            loop {
                match bytes.get(i)? {
                    b'\\' => i += 2,
                    b'"' => break i + 1,
                    _ => i += 1,
                }
            }
        }
        b'\'' => {
            let mut i = 1;
            loop {
                match bytes.get(i)? {
                    b'\'' if bytes.get(i + 1) == Some(&b'\'') => i += 2,
                    b'\'' => break i + 1,
                    _ => i += 1,
                }
            }
        }
        b' ' | b'\t' | b'#' | b'-' | b'?' | b'[' | b'{' | b'&' | b'!' | b'*' => return None,
        _ => {
            let mut i = 0;
            loop {
                match bytes.get(i)? {
                    b':' if matches!(
                        bytes.get(i + 1),
                        None | Some(b' ' | b'\t' | b'\r' | b'\n')
                    ) =>
                    {
                        return Some(i);
                    }
                    b'#' if i > 0 && matches!(bytes[i - 1], b' ' | b'\t') => return None,
                    _ => i += 1,
                }
            }
        }
    };
    let mut i = after_key;
    while matches!(bytes.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    (bytes.get(i) == Some(&b':')).then_some(i)
}

/// Splits the value part of a single `key: value  # comment` line into value and comment,
/// returning the byte index where the comment's leading whitespace starts.
fn comment_start(value: &str) -> Option<usize> {
    let bytes = value.as_bytes();
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(b'"') if b == b'\\' => i += 1,
            Some(b'\'') if b == b'\'' && bytes.get(i + 1) == Some(&b'\'') => i += 1,
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None => {
                let at_token_start =
                    i == 0 || matches!(bytes[i - 1], b' ' | b'\t' | b'[' | b'{' | b',');
                if (b == b'"' || b == b'\'') && at_token_start {
                    quote = Some(b);
                } else if b == b'#' && i > 0 && matches!(bytes[i - 1], b' ' | b'\t') {
                    let mut start = i;
                    while start > 0 && matches!(bytes[start - 1], b' ' | b'\t') {
                        start -= 1;
                    }
                    return Some(start);
                }
            }
        }
        i += 1;
    }
    None
}

/// How a new value is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    /// Flow style (`[a, b]`) when the old value was flow style, block style otherwise.
    Auto,
    /// Flow style for sequences when the key is new or was flow style.
    FlowIfNew,
}

/// What a candidate edit must read back as.
enum Expect<'a> {
    Set(&'a AnyValue),
    Removed,
}

impl Document {
    /// Splits `text` into frontmatter and body and checks that the frontmatter is a YAML mapping.
    ///
    /// A document without a leading `---` line has no frontmatter and is valid. A leading `---`
    /// line (after an optional BOM) that no `---` or `...` line closes is an error, as is YAML
    /// that does not parse; errors carry `path` and 1-based file line numbers.
    pub fn parse(
        path: impl Into<PathBuf>,
        text: impl Into<String>,
    ) -> Result<Self, FrontmatterError> {
        let path = path.into();
        let text = text.into();
        match split(&text) {
            Split::Plain => Ok(Self {
                path,
                text,
                front: None,
                keys: Vec::new(),
            }),
            Split::Unclosed => Err(FrontmatterError::Unclosed { path }),
            Split::Front(span) => {
                let yaml = &text[span.yaml.clone()];
                let keys = match entries::<IgnoredAny>(yaml) {
                    Ok(found) => found
                        .into_iter()
                        .map(|(k, _)| KeyEntry {
                            line: to_usize(k.referenced.line()).unwrap_or(1),
                            column: to_usize(k.referenced.column()).unwrap_or(1),
                            name: k.value,
                        })
                        .collect(),
                    Err(e) => {
                        let (line, column, message) = render(&e, 1);
                        return Err(FrontmatterError::Yaml {
                            path,
                            line,
                            column,
                            message,
                        });
                    }
                };
                Ok(Self {
                    path,
                    text,
                    front: Some(span),
                    keys,
                })
            }
        }
    }

    /// Reads and parses the document at `path`.
    pub fn load(path: impl Into<PathBuf>) -> Result<Self, FrontmatterError> {
        let path = path.into();
        let text = crate::bounded::read_to_string(&path, crate::bounded::DOCUMENT_LIMIT)
            .map_err(io_err(&path))?;
        Self::parse(path, text)
    }

    /// Writes the document back to its path atomically ([`replace_durable`]).
    pub fn save(&self) -> Result<(), FrontmatterError> {
        replace_durable(&self.path, self.text.as_bytes())?;
        Ok(())
    }

    /// The path the document was parsed or loaded with.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The whole document text, frontmatter and body.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Consumes the document, returning its text.
    pub fn into_text(self) -> String {
        self.text
    }

    /// Where the frontmatter sits, if the document has one.
    pub fn front(&self) -> Option<&FrontSpan> {
        self.front.as_ref()
    }

    /// The raw YAML between the fences, if the document has frontmatter.
    pub fn frontmatter(&self) -> Option<&str> {
        self.front.as_ref().map(|f| &self.text[f.yaml.clone()])
    }

    /// The markdown body: everything after the closing fence (the whole text, minus a BOM,
    /// when there is no frontmatter).
    pub fn body(&self) -> &str {
        let start = self
            .front
            .as_ref()
            .map_or_else(|| bom_len(&self.text), |f| f.body_start);
        &self.text[start..]
    }

    /// The 1-based file line where the body starts.
    pub fn body_line(&self) -> usize {
        let start = self.text.len() - self.body().len();
        self.text[..start].matches('\n').count() + 1
    }

    /// The top-level keys of the frontmatter, in file order.
    pub fn keys(&self) -> Vec<&str> {
        self.keys.iter().map(|k| k.name.as_str()).collect()
    }

    /// Whether the frontmatter has the top-level `key`.
    pub fn contains_key(&self, key: &str) -> bool {
        self.keys.iter().any(|k| k.name == key)
    }

    /// The 1-based file line of the top-level `key`, if present.
    pub fn key_line(&self, key: &str) -> Option<usize> {
        self.keys
            .iter()
            .find(|k| k.name == key)
            .map(|k| k.line.saturating_add(1))
    }

    /// The value of the top-level `key` deserialized as `T`, or `None` when the key is absent.
    ///
    /// A value of the wrong shape is a [`FrontmatterError::Value`] naming the file line.
    pub fn get<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, FrontmatterError> {
        let Some(yaml) = self.frontmatter() else {
            return Ok(None);
        };
        if !self.contains_key(key) {
            return Ok(None);
        }
        let seed = Pick::<T> {
            key,
            _t: PhantomData,
        };
        serde_saphyr::with_deserializer_from_str_with_options(yaml, yaml_options(), |de| {
            seed.deserialize(de)
        })
        .map_err(|e| {
            let (line, _, message) = render(&e, 1);
            FrontmatterError::Value {
                path: self.path.clone(),
                key: key.to_owned(),
                line,
                message,
            }
        })
    }

    /// Sets the top-level `key` to `value`.
    ///
    /// Only that key's block (its `key:` line up to the next top-level key, minus trailing
    /// blank and column-0 comment lines) is rewritten; a missing key is appended at the end of
    /// the frontmatter, and a document without frontmatter gets a new block. Every other byte is
    /// kept. The result is re-parsed: if it would not read back with `value` under `key` and
    /// every other key unchanged, the document is left as it was and an error is returned.
    pub fn set<V: Serialize + ?Sized>(
        &mut self,
        key: &str,
        value: &V,
    ) -> Result<(), FrontmatterError> {
        self.set_styled(key, value, Style::Auto)
    }

    /// Removes the top-level `key` and its block; returns whether it was present.
    pub fn remove(&mut self, key: &str) -> Result<bool, FrontmatterError> {
        let Some(idx) = self.keys.iter().position(|k| k.name == key) else {
            return Ok(false);
        };
        let old = self.old_entries(key)?;
        let block = self.block(idx, key)?;
        let yaml = self.frontmatter().unwrap_or_default();
        let new_yaml = format!("{}{}", &yaml[..block.start], &yaml[block.end..]);
        if let Err(reason) = verify(&new_yaml, &old, key, &Expect::Removed) {
            return Err(self.rejected(key, reason));
        }
        self.replace_yaml(key, &new_yaml)?;
        Ok(true)
    }

    /// The `stepsCompleted` list (empty when absent or null), in either dialect.
    pub fn steps_completed(&self) -> Result<Vec<StepRef>, FrontmatterError> {
        Ok(self
            .get::<Option<Vec<StepRef>>>(STEPS_COMPLETED)?
            .flatten()
            .unwrap_or_default())
    }

    /// Appends `step` to `stepsCompleted` unless it is already there; returns whether it changed.
    ///
    /// Lists may mix step numbers and step-file names (BMad writes both), so any step is
    /// accepted. The list keeps its style: a one-line flow list (`[1, 'step-02.md']`) or a block
    /// list (`- …` lines) gets the new item appended in place, quoted the way its other names
    /// are quoted, and nothing else in the frontmatter changes. Other layouts are rewritten
    /// whole by [`Document::set`]'s rules. A missing key is created in flow style
    /// (`stepsCompleted: [1]`), as BMad templates write it.
    pub fn push_step_completed(
        &mut self,
        step: impl Into<StepRef>,
    ) -> Result<bool, FrontmatterError> {
        let step = step.into();
        let mut steps = self.steps_completed()?;
        if steps.contains(&step) {
            return Ok(false);
        }
        steps.push(step.clone());
        if self.append_step_in_place(&step, &steps)? {
            return Ok(true);
        }
        self.set_styled(STEPS_COMPLETED, &steps, Style::FlowIfNew)?;
        Ok(true)
    }

    /// Appends `step` to an existing one-line flow or block `stepsCompleted` list by inserting
    /// text; returns false (nothing changed) when the list has another layout or the result
    /// would not read back as `steps`.
    fn append_step_in_place(
        &mut self,
        step: &StepRef,
        steps: &[StepRef],
    ) -> Result<bool, FrontmatterError> {
        let key = STEPS_COMPLETED;
        let Some(idx) = self.keys.iter().position(|k| k.name == key) else {
            return Ok(false);
        };
        let Ok(range) = self.block(idx, key) else {
            return Ok(false);
        };
        let yaml = self.frontmatter().unwrap_or_default().to_owned();
        let block = &yaml[range.clone()];
        let eol = self.eol();
        let first = strip_eol(block.lines().next().unwrap_or_default());
        let Some(colon) = key_colon(first) else {
            return Ok(false);
        };
        let value_part = &first[colon + 1..];
        let value = match comment_start(value_part) {
            Some(c) => &value_part[..c],
            None => value_part,
        };
        let quote = quote_style(block);
        let item = render_step(step, quote);
        let trimmed = value.trim();
        let new_block = if trimmed.starts_with('[') && trimmed.ends_with(']') {
            // One-line flow list: insert before the closing bracket.
            let close = range.start + colon + 1 + value.rfind(']').unwrap_or(0);
            let inner = trimmed[1..trimmed.len() - 1].trim();
            let before = &yaml[range.start..close];
            let sep = if inner.is_empty() {
                ""
            } else if inner.contains(", ") || !inner.contains(',') {
                ", "
            } else {
                ","
            };
            let before = if inner.is_empty() {
                before.to_owned()
            } else {
                before.trim_end().to_owned()
            };
            format!("{before}{sep}{item}{}", &yaml[close..range.end])
        } else if trimmed.is_empty() {
            // Block list: copy the last item's indentation and dash.
            let lines: Vec<&str> = block.split_inclusive('\n').collect();
            let Some(last) = lines.iter().rposition(|l| l.trim_start().starts_with("- ")) else {
                return Ok(false);
            };
            let line = strip_eol(lines[last]);
            let dash = line.len() - line.trim_start().len();
            let prefix = &line[..dash + 2];
            let mut out: String = lines[..=last].concat();
            if !out.ends_with('\n') {
                out.push_str(eol);
            }
            out.push_str(prefix);
            out.push_str(&item);
            out.push_str(eol);
            out.push_str(&lines[last + 1..].concat());
            out
        } else {
            return Ok(false);
        };
        let mut new_yaml = yaml.clone();
        new_yaml.replace_range(range, &new_block);
        let old = self.old_entries(key)?;
        let Ok(rendered) = serde_saphyr::to_string(&steps) else {
            return Ok(false);
        };
        let Ok(expected) =
            serde_saphyr::from_str_with_options::<AnyValue>(&rendered, yaml_options())
        else {
            return Ok(false);
        };
        if verify(&new_yaml, &old, key, &Expect::Set(&expected)).is_err() {
            return Ok(false);
        }
        self.replace_yaml(key, &new_yaml)?;
        Ok(true)
    }

    fn rejected(&self, key: &str, reason: String) -> FrontmatterError {
        FrontmatterError::EditRejected {
            path: self.path.clone(),
            key: key.to_owned(),
            reason,
        }
    }

    fn eol(&self) -> &'static str {
        let crlf = match &self.front {
            Some(f) => f.crlf,
            None => {
                let body = self.body();
                body.find('\n').is_some_and(|i| body[..i].ends_with('\r'))
            }
        };
        if crlf { "\r\n" } else { "\n" }
    }

    /// The current top-level entries with structural values, for verifying an edit.
    fn old_entries(&self, key: &str) -> Result<Vec<(String, AnyValue)>, FrontmatterError> {
        let Some(yaml) = self.frontmatter() else {
            return Ok(Vec::new());
        };
        entries::<AnyValue>(yaml)
            .map(|v| v.into_iter().map(|(k, v)| (k.value, v)).collect())
            .map_err(|e| {
                let (_, _, message) = render(&e, 1);
                self.rejected(
                    key,
                    format!("the current frontmatter cannot be compared: {message}"),
                )
            })
    }

    /// The byte range, within the YAML, of the block of the key at `idx`.
    fn block(&self, idx: usize, key: &str) -> Result<Range<usize>, FrontmatterError> {
        let yaml = self.frontmatter().unwrap_or_default();
        let lines = line_ranges(yaml);
        let not_block = || {
            self.rejected(
                key,
                "the frontmatter is not a block mapping with one key per line".to_owned(),
            )
        };
        // YAML also breaks lines at a lone `\r`; the parser's line numbers would not match ours.
        if yaml.replace("\r\n", "").contains('\r') {
            return Err(self.rejected(
                key,
                "the frontmatter uses bare `\\r` line breaks".to_owned(),
            ));
        }
        let ordered = self.keys.windows(2).all(|w| w[0].line < w[1].line);
        let entry = self.keys.get(idx).ok_or_else(not_block)?;
        let start_line = entry.line.saturating_sub(1);
        let start = lines
            .get(start_line)
            .filter(|_| ordered && entry.column == 1)
            .ok_or_else(not_block)?;
        if key_colon(strip_eol(&yaml[start.clone()])).is_none() {
            return Err(self.rejected(
                key,
                "its key line is not a plain `key: value` line".to_owned(),
            ));
        }
        let mut end_line = self
            .keys
            .get(idx + 1)
            .map_or(lines.len(), |k| k.line.saturating_sub(1))
            .min(lines.len());
        while end_line > start_line + 1 {
            let Some(range) = lines.get(end_line - 1) else {
                break;
            };
            let line = strip_eol(&yaml[range.clone()]);
            if line.trim().is_empty() || line.starts_with('#') {
                end_line -= 1;
            } else {
                break;
            }
        }
        let end = lines
            .get(end_line)
            .map_or(yaml.len(), |r| r.start)
            .max(start.end);
        Ok(start.start..end)
    }

    fn set_styled<V: Serialize + ?Sized>(
        &mut self,
        key: &str,
        value: &V,
        style: Style,
    ) -> Result<(), FrontmatterError> {
        let ser_err = |message: String| FrontmatterError::Serialize {
            path: self.path.clone(),
            key: key.to_owned(),
            message,
        };
        let block_text = serde_saphyr::to_string(&value).map_err(|e| ser_err(e.to_string()))?;
        let expected: AnyValue =
            serde_saphyr::from_str_with_options(&block_text, yaml_options())
                .map_err(|e| ser_err(format!("the serialized value does not read back: {e}")))?;
        let flow_text = if matches!(expected, AnyValue::Seq(_)) {
            serde_saphyr::to_string(&serde_saphyr::FlowSeq(value)).ok()
        } else {
            None
        };
        let json_text = serde_json::to_string(value).ok();

        let old = self.old_entries(key)?;
        let eol = self.eol();
        let yaml = self.frontmatter().unwrap_or_default().to_owned();
        let idx = self.keys.iter().position(|k| k.name == key);

        // Where the new block goes, how the key is spelled, and what the old line carried.
        let (range, key_text, comment, was_flow) = match idx {
            Some(idx) => {
                let range = self.block(idx, key)?;
                let first = strip_eol(yaml[range.clone()].lines().next().unwrap_or_default());
                let colon = key_colon(first).unwrap_or(0);
                let key_text = first[..colon].to_owned();
                let value_part = &first[colon + 1..];
                let single_line = yaml[range.clone()].trim_end().lines().count() == 1;
                let was_flow = value_part.trim_start().starts_with('[');
                let comment = comment_start(value_part)
                    .filter(|_| single_line)
                    .filter(|&c| {
                        // Keep the comment only if cutting it leaves the same value.
                        let without = format!("{}:{}\n", key_text, &value_part[..c]);
                        let old_value = old.iter().find(|(k, _)| k == key).map(|(_, v)| v);
                        entries::<AnyValue>(&without)
                            .ok()
                            .and_then(|e| e.into_iter().next())
                            .is_some_and(|(_, v)| Some(&v) == old_value)
                    })
                    .map(|c| value_part[c..].to_owned());
                (range, key_text, comment, was_flow)
            }
            None => {
                let key_text = serde_saphyr::to_string(&key)
                    .ok()
                    .map(|s| s.trim_end_matches('\n').to_owned())
                    .filter(|s| !s.is_empty() && !s.contains('\n'))
                    .or_else(|| serde_json::to_string(key).ok())
                    .ok_or_else(|| ser_err("the key cannot be written".to_owned()))?;
                let mut at = yaml.len();
                // Append after the last non-blank line so trailing blank lines stay trailing.
                for r in line_ranges(&yaml).iter().rev() {
                    if yaml[r.clone()].trim().is_empty() {
                        at = r.start;
                    } else {
                        break;
                    }
                }
                let was_flow = style == Style::FlowIfNew;
                (at..at, key_text, None, was_flow)
            }
        };

        let mut candidates: Vec<String> = Vec::new();
        let mut push = |c: Option<String>| {
            if let Some(c) = c
                && !candidates.contains(&c)
            {
                candidates.push(c);
            }
        };
        let comment = comment.as_deref();
        if was_flow && let Some(flow) = &flow_text {
            push(layout(
                &key_text,
                flow,
                &expected,
                eol,
                comment,
                Indent::Keep,
            ));
            push(layout(&key_text, flow, &expected, eol, None, Indent::Keep));
        }
        for indent in [Indent::Keep, Indent::Extra] {
            push(layout(
                &key_text,
                &block_text,
                &expected,
                eol,
                comment,
                indent,
            ));
            push(layout(&key_text, &block_text, &expected, eol, None, indent));
        }
        if let Some(json) = &json_text {
            push(layout(
                &key_text,
                json,
                &AnyValue::Null,
                eol,
                comment,
                Indent::Keep,
            ));
            push(layout(
                &key_text,
                json,
                &AnyValue::Null,
                eol,
                None,
                Indent::Keep,
            ));
        }

        let mut last_reason = String::from("no way to write the value was found");
        for candidate in &candidates {
            let mut new_yaml = String::with_capacity(yaml.len() + candidate.len() + 2);
            new_yaml.push_str(&yaml[..range.start]);
            if range.start == yaml.len() && !yaml.is_empty() && !yaml.ends_with('\n') {
                new_yaml.push_str(eol);
            }
            new_yaml.push_str(candidate);
            new_yaml.push_str(&yaml[range.end..]);
            match verify(&new_yaml, &old, key, &Expect::Set(&expected)) {
                Ok(()) => return self.replace_yaml(key, &new_yaml),
                Err(reason) => last_reason = reason,
            }
        }
        Err(self.rejected(key, last_reason))
    }

    /// Swaps in new frontmatter YAML (creating the fences if needed) and re-indexes.
    fn replace_yaml(&mut self, key: &str, new_yaml: &str) -> Result<(), FrontmatterError> {
        let text = match &self.front {
            Some(f) => format!(
                "{}{}{}",
                &self.text[..f.yaml.start],
                new_yaml,
                &self.text[f.yaml.end..]
            ),
            None => {
                let bom = bom_len(&self.text);
                let eol = self.eol();
                format!(
                    "{}---{eol}{new_yaml}---{eol}{}",
                    &self.text[..bom],
                    &self.text[bom..]
                )
            }
        };
        let doc = Document::parse(self.path.clone(), text)
            .map_err(|e| self.rejected(key, format!("the edited document does not parse: {e}")))?;
        *self = doc;
        Ok(())
    }
}

impl fmt::Display for Document {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Indent {
    /// Continuation lines of a scalar as the serializer wrote them.
    Keep,
    /// Continuation lines of a scalar indented by two more spaces.
    Extra,
}

/// The quote character the step-file names of a list use: the first quoted item's, else none.
fn quote_style(block: &str) -> Option<char> {
    let bytes = block.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if (b == b'\'' || b == b'"') && i > 0 && matches!(bytes[i - 1], b'[' | b' ' | b',') {
            return Some(b as char);
        }
    }
    None
}

/// A step as a YAML list item: numbers bare, names in `quote` when the list quotes them (or
/// when a bare name would not read back as a string).
fn render_step(step: &StepRef, quote: Option<char>) -> String {
    let name = match step {
        StepRef::Int(n) => return n.to_string(),
        StepRef::Name(s) => s,
    };
    let plain_ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
        && name.parse::<f64>().is_err()
        && !matches!(
            name.to_ascii_lowercase().as_str(),
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "~"
        );
    match quote {
        Some('\'') => format!("'{}'", name.replace('\'', "''")),
        Some(_) => serde_json::to_string(name).unwrap_or_else(|_| format!("\"{name}\"")),
        None if plain_ok => name.clone(),
        None => serde_json::to_string(name).unwrap_or_else(|_| format!("\"{name}\"")),
    }
}

/// Lays out `key_text: <rendered>` as a top-level block ending with `eol`.
fn layout(
    key_text: &str,
    rendered: &str,
    shape: &AnyValue,
    eol: &str,
    comment: Option<&str>,
    indent: Indent,
) -> Option<String> {
    let rendered = rendered.strip_suffix('\n').unwrap_or(rendered);
    let lines: Vec<&str> = rendered.split('\n').collect();
    let first = lines.first().copied().unwrap_or_default();
    let comment = comment.unwrap_or_default();
    let mut out = String::new();
    if shape.is_collection() && !first.starts_with('[') && !first.starts_with('{') {
        if indent == Indent::Extra {
            return None;
        }
        out.push_str(key_text);
        out.push(':');
        out.push_str(comment);
        out.push_str(eol);
        for line in &lines {
            if !line.is_empty() {
                out.push_str("  ");
            }
            out.push_str(line);
            out.push_str(eol);
        }
    } else {
        if lines.len() > 1 && !comment.is_empty() && !first.starts_with(['|', '>']) {
            return None;
        }
        out.push_str(key_text);
        out.push_str(": ");
        out.push_str(first);
        out.push_str(comment);
        out.push_str(eol);
        for line in &lines[1..] {
            if indent == Indent::Extra && !line.is_empty() {
                out.push_str("  ");
            }
            out.push_str(line);
            out.push_str(eol);
        }
    }
    Some(out)
}

/// Checks that `new_yaml` holds exactly `old` with `key` changed as `expect` says.
fn verify(
    new_yaml: &str,
    old: &[(String, AnyValue)],
    key: &str,
    expect: &Expect<'_>,
) -> Result<(), String> {
    let new: Vec<(String, AnyValue)> = entries::<AnyValue>(new_yaml)
        .map_err(|e| format!("the result would not be valid YAML: {}", render(&e, 1).2))?
        .into_iter()
        .map(|(k, v)| (k.value, v))
        .collect();
    let mut want: Vec<(String, AnyValue)> = Vec::with_capacity(old.len() + 1);
    let mut seen = false;
    for (k, v) in old {
        if k == key {
            seen = true;
            if let Expect::Set(value) = expect {
                want.push((k.clone(), (*value).clone()));
            }
        } else {
            want.push((k.clone(), v.clone()));
        }
    }
    if !seen && let Expect::Set(value) = expect {
        want.push((key.to_owned(), (*value).clone()));
    }
    if new == want {
        return Ok(());
    }
    let names = |v: &[(String, AnyValue)]| v.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
    if names(&new) != names(&want) {
        return Err(format!(
            "the result would have keys {:?} instead of {:?}",
            names(&new),
            names(&want)
        ));
    }
    let changed: Vec<&str> = new
        .iter()
        .zip(&want)
        .filter(|(a, b)| a != b)
        .map(|(a, _)| a.0.as_str())
        .collect();
    Err(format!(
        "the result would read back differently for {changed:?}"
    ))
}

/// One snapshot of a document, as stored by [`Checkpoints::save`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// Sequence number, monotonic per document.
    pub seq: u64,
    /// The sanitized label given when it was saved.
    pub label: String,
    /// The snapshot file.
    pub path: PathBuf,
}

impl Checkpoint {
    /// Reads the snapshot's bytes.
    pub fn read(&self) -> Result<Vec<u8>, FrontmatterError> {
        fs::read(&self.path).map_err(io_err(&self.path))
    }

    fn parse_name(name: &str) -> Option<(u64, String)> {
        let stem = name.strip_suffix(".md")?;
        let (digits, label) = stem.split_once('-')?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        if label.is_empty() || label != sanitize_label(label) {
            return None;
        }
        Some((digits.parse().ok()?, label.to_owned()))
    }
}

fn sanitize_label(label: &str) -> String {
    let mut out: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(48)
        .collect();
    if out.trim_matches('-').is_empty() {
        out = "checkpoint".to_owned();
    }
    out
}

/// Numbered snapshots of documents, kept under one directory (baton uses
/// `.baton/checkpoints`), the newest [`DEFAULT_KEEP`] per document.
///
/// Each document gets its own subdirectory named after its path (sanitized, plus a hash of the
/// path so distinct paths never share one); pass the same spelling of a document's path every
/// time. Snapshots are `NNNNNN-<label>.md`. One writer at a time is assumed.
#[derive(Debug, Clone)]
pub struct Checkpoints {
    dir: PathBuf,
    keep: usize,
}

impl Checkpoints {
    /// Checkpoints stored under `dir`, keeping [`DEFAULT_KEEP`] per document.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            keep: DEFAULT_KEEP,
        }
    }

    /// Keeps the newest `keep` snapshots per document (at least one).
    pub fn with_keep(mut self, keep: usize) -> Self {
        self.keep = keep.max(1);
        self
    }

    /// The directory holding every document's checkpoints.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The directory holding `doc_path`'s checkpoints (always a direct child of [`Self::dir`]).
    pub fn doc_dir(&self, doc_path: &Path) -> PathBuf {
        let mut normal = String::new();
        for c in doc_path.components() {
            match c {
                Component::CurDir => {}
                Component::RootDir => normal.push('/'),
                Component::ParentDir => normal.push_str("../"),
                Component::Prefix(p) => normal.push_str(&p.as_os_str().to_string_lossy()),
                Component::Normal(s) => {
                    normal.push_str(&s.to_string_lossy());
                    normal.push('/');
                }
            }
        }
        let normal = normal.trim_end_matches('/');
        let readable: String = normal
            .trim_start_matches(['/', '.'])
            .chars()
            .map(|c| match c {
                'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' | '.' => c,
                _ => '_',
            })
            .take(80)
            .collect();
        let digest = Sha256::digest(normal.as_bytes());
        let hash: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{readable}-{hash}"))
    }

    /// Copies the current bytes of `doc_path` into a new snapshot labelled `label`, then prunes
    /// the document's snapshots to the newest ones.
    pub fn save(&self, doc_path: &Path, label: &str) -> Result<Checkpoint, FrontmatterError> {
        let bytes = fs::read(doc_path).map_err(io_err(doc_path))?;
        let dir = self.doc_dir(doc_path);
        fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        let existing = self.scan(&dir)?;
        let seq = existing.last().map_or(1, |c| c.seq.saturating_add(1));
        let label = sanitize_label(label);
        let path = dir.join(format!("{seq:06}-{label}.md"));
        replace_durable(&path, &bytes)?;
        let checkpoint = Checkpoint { seq, label, path };
        let all = self.scan(&dir)?;
        let excess = all.len().saturating_sub(self.keep);
        for old in all.iter().take(excess) {
            match fs::remove_file(&old.path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_err(&old.path)(e)),
            }
        }
        Ok(checkpoint)
    }

    /// The snapshots of `doc_path`, oldest first (newest last); none if it never had any.
    pub fn list(&self, doc_path: &Path) -> Result<Vec<Checkpoint>, FrontmatterError> {
        self.scan(&self.doc_dir(doc_path))
    }

    /// The newest snapshot of `doc_path`, if any.
    pub fn latest(&self, doc_path: &Path) -> Result<Option<Checkpoint>, FrontmatterError> {
        Ok(self.list(doc_path)?.pop())
    }

    /// Writes `checkpoint`'s bytes back over `doc_path` atomically.
    ///
    /// The checkpoint must be one of `doc_path`'s own snapshots; any other file is refused.
    pub fn restore(
        &self,
        doc_path: &Path,
        checkpoint: &Checkpoint,
    ) -> Result<(), FrontmatterError> {
        let foreign = || FrontmatterError::ForeignCheckpoint {
            path: doc_path.to_path_buf(),
            checkpoint: checkpoint.path.clone(),
        };
        let name = checkpoint
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(foreign)?;
        if Checkpoint::parse_name(name).is_none() {
            return Err(foreign());
        }
        let dir = self.doc_dir(doc_path);
        if checkpoint.path.parent() != Some(dir.as_path()) {
            return Err(foreign());
        }
        let snapshot = dir.join(name);
        let bytes = fs::read(&snapshot).map_err(io_err(&snapshot))?;
        replace_durable(doc_path, &bytes)?;
        Ok(())
    }

    fn scan(&self, dir: &Path) -> Result<Vec<Checkpoint>, FrontmatterError> {
        let entries = match fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_err(dir)(e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io_err(dir))?;
            let name = entry.file_name();
            let Some((seq, label)) = name.to_str().and_then(Checkpoint::parse_name) else {
                continue;
            };
            out.push(Checkpoint {
                seq,
                label,
                path: entry.path(),
            });
        }
        out.sort_by_key(|c| c.seq);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn doc(text: &str) -> Document {
        Document::parse("doc.md", text).unwrap()
    }

    #[test]
    fn plain_document_has_empty_frontmatter() {
        let d = doc("# Title\n\nbody\n");
        assert!(d.front().is_none());
        assert!(d.keys().is_empty());
        assert_eq!(d.body(), "# Title\n\nbody\n");
        assert_eq!(d.get::<String>("x").unwrap(), None);
        assert_eq!(d.steps_completed().unwrap(), Vec::<StepRef>::new());
    }

    #[test]
    fn splits_frontmatter_and_reads_keys_and_values() {
        let d = doc("---\nname: prd\nstepsCompleted: [1, 2]\ncount: 3\n---\n# Body\n");
        assert_eq!(d.keys(), vec!["name", "stepsCompleted", "count"]);
        assert_eq!(d.get::<String>("name").unwrap().as_deref(), Some("prd"));
        assert_eq!(d.get::<u32>("count").unwrap(), Some(3));
        assert_eq!(
            d.get::<Vec<u32>>("stepsCompleted").unwrap(),
            Some(vec![1, 2])
        );
        assert_eq!(d.body(), "# Body\n");
        assert_eq!(d.body_line(), 6);
        assert_eq!(d.key_line("count"), Some(4));
        assert_eq!(
            d.frontmatter(),
            Some("name: prd\nstepsCompleted: [1, 2]\ncount: 3\n")
        );
    }

    #[test]
    fn dot_dot_dot_closes_and_empty_frontmatter_is_valid() {
        let d = doc("---\na: 1\n...\nbody");
        assert_eq!(d.keys(), vec!["a"]);
        assert_eq!(d.body(), "body");
        let d = doc("---\n---\nbody");
        assert!(d.front().is_some());
        assert!(d.keys().is_empty());
        let d = doc("---\n# just a comment\n---\n");
        assert!(d.keys().is_empty());
        assert_eq!(d.body(), "");
    }

    #[test]
    fn baseline_commit_digits_read_as_written() {
        let d = doc("---\nbaseline_commit: 0123456\n---\n# Story 1.1: X\n");
        assert_eq!(
            d.get::<String>("baseline_commit").unwrap().as_deref(),
            Some("0123456")
        );
    }

    #[test]
    fn set_keeps_body_with_fences_and_no_trailing_newline() {
        let body = "# Doc\n---\nnot: frontmatter\n---\n...\nlast line without newline";
        let text = format!("---\nstatus: draft\n---\n{body}");
        let mut d = doc(&text);
        d.set("status", "done").unwrap();
        assert_eq!(d.body(), body);
        assert_eq!(d.to_string(), format!("---\nstatus: done\n---\n{body}"));
        d.set("newKey", &vec!["a", "b"]).unwrap();
        assert_eq!(d.body(), body);
        assert!(d.to_string().ends_with(body));
    }

    #[test]
    fn set_keeps_comments_and_other_keys_byte_for_byte() {
        let text = "---\n# Leading comment\nname: 'Some Name'   # quoted on purpose\nstepsCompleted:\n  - 1\n  - 2\n# about inputDocuments\ninputDocuments: [] # none yet\nnested:\n  deep: {a: 1}\n\n# trailing comment\n---\nBody\n";
        let mut d = doc(text);
        d.set("stepsCompleted", &vec![1, 2, 3]).unwrap();
        let expected = "---\n# Leading comment\nname: 'Some Name'   # quoted on purpose\nstepsCompleted:\n  - 1\n  - 2\n  - 3\n# about inputDocuments\ninputDocuments: [] # none yet\nnested:\n  deep: {a: 1}\n\n# trailing comment\n---\nBody\n";
        assert_eq!(d.to_string(), expected);
        d.set("inputDocuments", &vec!["prd.md"]).unwrap();
        assert!(
            d.to_string()
                .contains("\ninputDocuments: [prd.md] # none yet\n"),
            "flow style and trailing comment kept: {}",
            d
        );
        assert_eq!(
            d.get::<Vec<String>>("inputDocuments").unwrap(),
            Some(vec!["prd.md".to_owned()])
        );
        d.set("name", "Other").unwrap();
        assert!(
            d.to_string()
                .contains("\nname: Other   # quoted on purpose\n"),
            "{d}"
        );
        assert!(
            d.to_string()
                .contains("nested:\n  deep: {a: 1}\n\n# trailing comment\n---\nBody\n")
        );
        assert_eq!(
            d.keys(),
            vec!["name", "stepsCompleted", "inputDocuments", "nested"]
        );
    }

    #[test]
    fn set_last_key_keeps_trailing_blank_and_comment_lines() {
        let mut d = doc("---\na: 1\nb:\n  - x\n\n# end\n---\nB");
        d.set("b", "done").unwrap();
        assert_eq!(d.to_string(), "---\na: 1\nb: done\n\n# end\n---\nB");
    }

    #[test]
    fn set_appends_missing_key_at_end_of_frontmatter() {
        let mut d = doc("---\na: 1\n# note\n\n---\nbody\n");
        d.set("lastStep", &4u32).unwrap();
        assert_eq!(
            d.to_string(),
            "---\na: 1\n# note\nlastStep: 4\n\n---\nbody\n"
        );
        d.set("weird key: yes", "v").unwrap();
        assert_eq!(
            d.get::<String>("weird key: yes").unwrap().as_deref(),
            Some("v")
        );
    }

    #[test]
    fn set_creates_frontmatter_on_plain_document() {
        let mut d = doc("# Story 1.2: Thing\n\nStatus: ready-for-dev\n");
        d.set("baseline_commit", "abc123").unwrap();
        assert_eq!(
            d.to_string(),
            "---\nbaseline_commit: abc123\n---\n# Story 1.2: Thing\n\nStatus: ready-for-dev\n"
        );
        let mut d = doc("\u{feff}body");
        d.set("k", &true).unwrap();
        assert_eq!(d.to_string(), "\u{feff}---\nk: true\n---\nbody");
        let mut d = doc("");
        d.set("k", "v").unwrap();
        assert_eq!(d.to_string(), "---\nk: v\n---\n");
    }

    #[test]
    fn crlf_documents_stay_crlf() {
        let text = "---\r\nname: x\r\nstepsCompleted: [1]\r\n---\r\nline one\r\nline two\r\n";
        let mut d = doc(text);
        assert_eq!(d.get::<String>("name").unwrap().as_deref(), Some("x"));
        assert!(d.push_step_completed(2).unwrap());
        d.set("inputDocuments", &vec!["a.md", "b.md"]).unwrap();
        assert_eq!(
            d.to_string(),
            "---\r\nname: x\r\nstepsCompleted: [1, 2]\r\ninputDocuments:\r\n  - a.md\r\n  - b.md\r\n---\r\nline one\r\nline two\r\n"
        );
        let mut d = doc("plain\r\ntext\r\n");
        d.set("k", "v").unwrap();
        assert_eq!(d.to_string(), "---\r\nk: v\r\n---\r\nplain\r\ntext\r\n");
    }

    #[test]
    fn multiline_and_tricky_strings_round_trip() {
        let mut d = doc("---\na: 1\nnote: old\nz: 2\n---\n");
        for value in [
            "line one\nline two",
            "ends with newline\n",
            "  leading spaces\nx",
            "yes",
            "null",
            "0123",
            "# not a comment",
            "a: b",
            "quote ' and \" both",
            "",
            "tab\there",
            "unicode \u{2028} sep \u{85}",
        ] {
            d.set("note", value).unwrap();
            assert_eq!(d.get::<String>("note").unwrap().as_deref(), Some(value));
            assert_eq!(d.get::<u32>("a").unwrap(), Some(1));
            assert_eq!(d.get::<u32>("z").unwrap(), Some(2));
            assert_eq!(d.keys(), vec!["a", "note", "z"]);
        }
    }

    #[test]
    fn set_refuses_edits_that_break_other_keys() {
        let text = "---\na: &anchor 1\nb: *anchor\n---\nbody\n";
        let mut d = doc(text);
        let err = d.set("a", &2).unwrap_err();
        assert!(
            matches!(err, FrontmatterError::EditRejected { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("doc.md"));
        assert_eq!(
            d.to_string(),
            text,
            "document untouched after a refused edit"
        );
        let text = "---\n{a: 1, b: 2}\n---\n";
        let mut d = doc(text);
        assert_eq!(d.keys(), vec!["a", "b"]);
        assert!(d.set("a", &3).is_err());
        assert_eq!(d.to_string(), text);
    }

    #[test]
    fn remove_deletes_only_that_block() {
        let mut d = doc("---\na: 1\nb:\n  - x\n  - y\n# about c\nc: 3\n---\nbody");
        assert!(d.remove("b").unwrap());
        assert_eq!(d.to_string(), "---\na: 1\n# about c\nc: 3\n---\nbody");
        assert!(!d.remove("missing").unwrap());
        assert!(d.remove("a").unwrap());
        assert!(d.remove("c").unwrap());
        assert_eq!(d.to_string(), "---\n# about c\n---\nbody");
    }

    #[test]
    fn steps_completed_int_dialect() {
        let mut d = doc("---\nstepsCompleted: [1, 2]\nworkflowType: architecture\n---\n# Arch\n");
        assert_eq!(
            d.steps_completed().unwrap(),
            vec![StepRef::Int(1), StepRef::Int(2)]
        );
        assert!(d.push_step_completed(3).unwrap());
        assert!(!d.push_step_completed(3).unwrap(), "already there");
        assert_eq!(
            d.to_string(),
            "---\nstepsCompleted: [1, 2, 3]\nworkflowType: architecture\n---\n# Arch\n"
        );
        // BMad mixes numbers and step-file names; both are accepted.
        assert!(d.push_step_completed("step-04-x.md").unwrap());
        assert_eq!(
            d.to_string(),
            "---\nstepsCompleted: [1, 2, 3, step-04-x.md]\nworkflowType: architecture\n---\n# Arch\n"
        );
    }

    #[test]
    fn steps_completed_name_dialect_in_block_style() {
        let mut d =
            doc("---\nstepsCompleted:\n  - 'step-01-init.md'\n  - step-02-discovery.md\n---\nx");
        assert_eq!(
            d.steps_completed().unwrap(),
            vec![
                StepRef::Name("step-01-init.md".into()),
                StepRef::Name("step-02-discovery.md".into())
            ]
        );
        assert!(d.push_step_completed("step-03-success.md").unwrap());
        assert_eq!(
            d.to_string(),
            "---\nstepsCompleted:\n  - 'step-01-init.md'\n  - step-02-discovery.md\n  - 'step-03-success.md'\n---\nx"
        );
        assert!(d.push_step_completed(4).unwrap());
        assert_eq!(
            d.to_string(),
            "---\nstepsCompleted:\n  - 'step-01-init.md'\n  - step-02-discovery.md\n  - 'step-03-success.md'\n  - 4\n---\nx"
        );
    }

    #[test]
    fn steps_completed_keeps_quoting_comments_and_other_keys() {
        let text = "---\nstepsCompleted: [\"step-01-init.md\", \"step-02-discovery.md\"]  # progress\ninputDocuments: ['a.md']\ndate: '2026-01-02'\n---\n# PRD\n";
        let mut d = doc(text);
        assert!(d.push_step_completed("step-03-success.md").unwrap());
        assert_eq!(
            d.to_string(),
            text.replace(
                "\"step-02-discovery.md\"]",
                "\"step-02-discovery.md\", \"step-03-success.md\"]"
            )
        );
        let block = "---\ntitle: x\nstepsCompleted:\n    - 1\n    - \"step-02-vision.md\"\n    # trailing\nlastStep: 2\n---\nbody";
        let mut d = doc(block);
        assert!(d.push_step_completed(3).unwrap());
        assert_eq!(
            d.to_string(),
            block.replace(
                "\"step-02-vision.md\"\n",
                "\"step-02-vision.md\"\n    - 3\n"
            )
        );
        assert_eq!(
            d.steps_completed().unwrap(),
            vec![
                StepRef::Int(1),
                StepRef::Name("step-02-vision.md".into()),
                StepRef::Int(3)
            ]
        );
    }

    #[test]
    fn steps_completed_mixed_or_missing() {
        let mut d = doc("---\nstepsCompleted: [1, 'step-02.md']\n---\n");
        assert_eq!(d.steps_completed().unwrap().len(), 2);
        assert!(d.push_step_completed(3).unwrap());
        assert!(d.push_step_completed("step-04.md").unwrap());
        assert_eq!(
            d.to_string(),
            "---\nstepsCompleted: [1, 'step-02.md', 3, 'step-04.md']\n---\n"
        );
        let mut d = doc("---\ntitle: t\n---\nbody\n");
        assert!(d.push_step_completed("step-e-01-discovery").unwrap());
        assert_eq!(
            d.to_string(),
            "---\ntitle: t\nstepsCompleted: [step-e-01-discovery]\n---\nbody\n"
        );
        let mut d = doc("---\nstepsCompleted: []\n---\n");
        assert!(d.push_step_completed(1).unwrap());
        assert_eq!(d.to_string(), "---\nstepsCompleted: [1]\n---\n");
        let d = doc("---\nstepsCompleted: 7\n---\n");
        assert!(matches!(
            d.steps_completed(),
            Err(FrontmatterError::Value { .. })
        ));
    }

    #[test]
    fn a_frontmatter_over_the_yaml_budget_gets_a_sentence() {
        let mut text = String::from("---\nsteps:\n");
        for i in 0..260_000 {
            text.push_str(&format!("  - {i}\n"));
        }
        text.push_str("---\n# Doc\n");
        let err = Document::parse("big.md", text).unwrap_err().to_string();
        assert!(err.contains("too large for baton to read safely"), "{err}");
        assert!(!err.contains("Nodes {"), "{err}");
    }

    #[test]
    fn yaml_errors_carry_path_and_file_line() {
        let err = Document::parse("plan/prd.md", "---\na: 1\nb: [\n---\nbody").unwrap_err();
        match &err {
            FrontmatterError::Yaml { path, line, .. } => {
                assert_eq!(path, Path::new("plan/prd.md"));
                assert!(matches!(line, Some(3) | Some(4)), "line {line:?}");
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(err.to_string().contains("plan/prd.md"));
        let err = Document::parse("x.md", "---\na: 1\n  b: 2\n---\n").unwrap_err();
        assert!(
            matches!(err, FrontmatterError::Yaml { line: Some(3), .. }),
            "{err:?}"
        );
        let err = Document::parse("x.md", "---\n- a\n---\n").unwrap_err();
        assert!(matches!(err, FrontmatterError::Yaml { .. }));
        let err = Document::parse("x.md", "---\na: 1\nno close\n").unwrap_err();
        assert!(matches!(err, FrontmatterError::Unclosed { .. }));
        let err = doc("---\na: text\n---\n").get::<u32>("a").unwrap_err();
        assert!(
            matches!(err, FrontmatterError::Value { line: Some(2), .. }),
            "{err:?}"
        );
    }

    #[test]
    fn load_and_save_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("prd.md");
        assert!(matches!(
            Document::load(&p),
            Err(FrontmatterError::Io { .. })
        ));
        fs::write(&p, "---\nstepsCompleted: []\n---\n# PRD\n").unwrap();
        let mut d = Document::load(&p).unwrap();
        d.push_step_completed("step-01-init.md").unwrap();
        d.save().unwrap();
        assert_eq!(
            fs::read_to_string(&p).unwrap(),
            "---\nstepsCompleted: [step-01-init.md]\n---\n# PRD\n"
        );
    }

    #[test]
    fn checkpoints_prune_to_ten_and_restore() {
        let dir = tempfile::tempdir().unwrap();
        let doc_path = dir.path().join("prd.md");
        let cps = Checkpoints::new(dir.path().join(".baton/checkpoints"));
        assert!(cps.list(&doc_path).unwrap().is_empty());
        for i in 1..=13 {
            fs::write(&doc_path, format!("version {i}\n")).unwrap();
            let cp = cps.save(&doc_path, &format!("step {i}")).unwrap();
            assert_eq!(cp.seq, i);
            assert_eq!(cp.label, format!("step-{i}"));
        }
        let list = cps.list(&doc_path).unwrap();
        assert_eq!(list.len(), DEFAULT_KEEP);
        assert_eq!(list.first().unwrap().seq, 4);
        assert_eq!(list.last().unwrap().seq, 13);
        assert_eq!(
            list.last().unwrap().path.file_name().unwrap().to_str(),
            Some("000013-step-13.md")
        );
        assert_eq!(cps.latest(&doc_path).unwrap().unwrap().seq, 13);
        let five = list.iter().find(|c| c.seq == 5).unwrap();
        cps.restore(&doc_path, five).unwrap();
        assert_eq!(fs::read_to_string(&doc_path).unwrap(), "version 5\n");
        let next = cps.save(&doc_path, "after restore").unwrap();
        assert_eq!(next.seq, 14, "sequence keeps growing");
        assert_eq!(next.read().unwrap(), b"version 5\n");
    }

    #[test]
    fn checkpoint_paths_never_escape_and_foreign_ones_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("cp");
        let cps = Checkpoints::new(&root);
        let doc_path = dir.path().join("d.md");
        fs::write(&doc_path, "x").unwrap();
        let cp = cps.save(&doc_path, "../../etc/passwd").unwrap();
        assert!(cp.path.starts_with(&root));
        assert_eq!(cp.path.parent().unwrap().parent().unwrap(), root);
        assert!(!cp.label.contains('/') && !cp.label.contains('.'));
        for weird in ["../../x.md", "/", "..", ".", ""] {
            let d = cps.doc_dir(Path::new(weird));
            assert_eq!(d.parent().unwrap(), root, "{weird}");
            let name = d.file_name().unwrap().to_str().unwrap();
            assert!(name != ".." && name != "." && !name.is_empty());
        }
        assert_ne!(
            cps.doc_dir(Path::new("a/b.md")),
            cps.doc_dir(Path::new("a_b.md"))
        );
        assert_eq!(
            cps.doc_dir(Path::new("./a/b.md")),
            cps.doc_dir(Path::new("a/b.md"))
        );
        let other = dir.path().join("other.md");
        fs::write(&other, "y").unwrap();
        let theirs = cps.save(&other, "x").unwrap();
        assert!(matches!(
            cps.restore(&doc_path, &theirs),
            Err(FrontmatterError::ForeignCheckpoint { .. })
        ));
        let forged = Checkpoint {
            seq: 1,
            label: "x".into(),
            path: doc_path.clone(),
        };
        assert!(cps.restore(&doc_path, &forged).is_err());
        assert_eq!(fs::read_to_string(&doc_path).unwrap(), "x");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn parse_never_panics_on_arbitrary_text(text in any::<String>()) {
            let _ = Document::parse("p.md", text);
        }

        #[test]
        fn parse_never_panics_on_fenced_garbage(garbage in any::<String>(), body in any::<String>()) {
            let _ = Document::parse("p.md", format!("---\n{garbage}\n---\n{body}"));
        }

        #[test]
        fn parse_never_panics_on_yamlish_garbage(garbage in "[a-z:\\-\\[\\]{}&*!|>'\"# \n]{0,80}") {
            if let Ok(mut d) = Document::parse("p.md", format!("---\n{garbage}\n---\nbody")) {
                let _ = d.set("k", "v");
                let _ = d.remove("a");
                let _ = d.push_step_completed(1);
            }
        }

        #[test]
        fn set_leaves_body_identical(body in any::<String>(), value in any::<String>(), n in 0u32..1000) {
            let text = format!("---\n# c\nstepsCompleted: [1]\nname: x\n---\n{body}");
            let mut d = Document::parse("p.md", text).unwrap();
            d.set("name", &value).unwrap();
            prop_assert_eq!(d.body(), body.as_str());
            d.set("added", &n).unwrap();
            prop_assert_eq!(d.body(), body.as_str());
            prop_assert_eq!(d.get::<String>("name").unwrap(), Some(value));
            prop_assert!(d.to_string().ends_with(&body));
            prop_assert!(d.to_string().starts_with("---\n# c\nstepsCompleted: [1]\nname: "));
        }

        #[test]
        fn set_on_plain_body_keeps_it(body in any::<String>()) {
            prop_assume!(!body.starts_with("---\n") && !body.starts_with("---\r\n") && !body.starts_with('\u{feff}'));
            let mut d = Document::parse("p.md", body.clone()).unwrap();
            d.set("k", &vec![1, 2]).unwrap();
            prop_assert_eq!(d.body(), body.as_str());
        }
    }
}
