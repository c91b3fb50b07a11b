//! Transcripts: every agent run written as JSON lines under `.baton/runs/<run>/`.
//!
//! One line per thing that happened (system prompt, task, model turn, tool call, guard verdict,
//! tool result, usage, outcome), flushed as it happens so a killed run still leaves its record.
//! API keys never reach a transcript: only what the model and the tools saw is written, and
//! every configured key's value is masked in each line ([`baton_core::secrets`]).

use serde::Serialize;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// A JSON-lines transcript file.
pub struct Transcript {
    path: PathBuf,
    file: Option<File>,
}

#[derive(Serialize)]
struct Line<'a, T: Serialize> {
    at: String,
    kind: &'a str,
    #[serde(flatten)]
    data: T,
}

impl Transcript {
    /// Creates `dir/<agent>-<n>.jsonl` with the first free `n`; a transcript that cannot be
    /// created is reported once and the run goes on without one.
    pub fn create(dir: &Path, agent: &str) -> io::Result<Transcript> {
        fs::create_dir_all(dir)?;
        for n in 1..10_000 {
            let path = dir.join(format!("{agent}-{n}.jsonl"));
            match fs::OpenOptions::new()
                .create_new(true)
                .append(true)
                .open(&path)
            {
                Ok(file) => {
                    return Ok(Transcript {
                        path,
                        file: Some(file),
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::other(
            "too many transcripts in one run directory",
        ))
    }

    /// A transcript that writes nothing.
    pub fn none() -> Transcript {
        Transcript {
            path: PathBuf::new(),
            file: None,
        }
    }

    /// The file, if any.
    pub fn path(&self) -> Option<&Path> {
        self.file.as_ref().map(|_| self.path.as_path())
    }

    /// Appends one line; a write error disables the transcript rather than failing the run.
    pub fn write(&mut self, kind: &str, data: impl Serialize) {
        let Some(file) = &mut self.file else {
            return;
        };
        let line = Line {
            at: jiff::Timestamp::now().to_string(),
            kind,
            data,
        };
        // Whatever path a configured key took into the line, it is not written.
        let ok = serde_json::to_string(&line)
            .ok()
            .is_some_and(|s| writeln!(file, "{}", baton_core::secrets::redact(&s)).is_ok());
        if !ok {
            self.file = None;
        }
    }
}
