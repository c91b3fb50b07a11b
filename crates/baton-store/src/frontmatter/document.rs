//! The [`Document`] type: a markdown document parsed into its frontmatter (the top-level keys
//! and where each sits) and its body, loaded and saved atomically, and its reads: the text, the
//! body, the keys and a key's typed value.

use std::fmt;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use serde::de::{DeserializeOwned, DeserializeSeed, IgnoredAny};

use super::FrontmatterError;
use super::error::io_err;
use super::split::{FrontSpan, Split, bom_len, split};
use super::yaml::{Pick, entries, render, to_usize, yaml_options};
use crate::atomic::replace_durable;

#[derive(Debug, Clone)]
pub(super) struct KeyEntry {
    pub(super) name: String,
    /// 1-based line within the YAML (not the file).
    pub(super) line: usize,
    /// 1-based column of the key.
    pub(super) column: usize,
}

/// A markdown document split into optional YAML frontmatter and a body kept byte for byte.
#[derive(Debug, Clone)]
pub struct Document {
    pub(super) path: PathBuf,
    pub(super) text: String,
    pub(super) front: Option<FrontSpan>,
    pub(super) keys: Vec<KeyEntry>,
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

    pub(super) fn rejected(&self, key: &str, reason: String) -> FrontmatterError {
        FrontmatterError::EditRejected {
            path: self.path.clone(),
            key: key.to_owned(),
            reason,
        }
    }

    pub(super) fn eol(&self) -> &'static str {
        let crlf = match &self.front {
            Some(f) => f.crlf,
            None => {
                let body = self.body();
                body.find('\n').is_some_and(|i| body[..i].ends_with('\r'))
            }
        };
        if crlf { "\r\n" } else { "\n" }
    }
}

impl fmt::Display for Document {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frontmatter::StepRef;
    use proptest::prelude::*;
    use std::fs;

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
    }
}
