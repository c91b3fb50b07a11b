//! The error of every frontmatter operation, naming the file it concerns.

use std::io;
use std::path::{Path, PathBuf};

use crate::atomic::WriteError;

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
    /// longer returned by
    /// [`Document::push_step_completed`](super::Document::push_step_completed), which accepts
    /// mixed lists).
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

pub(super) fn io_err(path: &Path) -> impl FnOnce(io::Error) -> FrontmatterError + '_ {
    move |source| FrontmatterError::Io {
        path: path.to_path_buf(),
        source,
    }
}
