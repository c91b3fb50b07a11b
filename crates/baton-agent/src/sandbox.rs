//! The path jail every file tool goes through: a path an agent names is accepted only if it
//! resolves to a place inside the project root, outside `.git/`, and not matching a deny pattern.
//!
//! Resolution is done by hand, one component at a time, like `realpath(3)` but tolerant of missing
//! components: `.` and repeated slashes are dropped lexically, any `..` written by the agent is
//! refused outright (whatever it would resolve to), every existing component is inspected with
//! `lstat` and symlinks are followed (chains, symlinked directories, relative and absolute
//! targets, dangling links), and the part that does not exist yet is appended as written. The
//! result must lie under the canonical root. Checking only ever reads metadata and link targets:
//! nothing is created, opened or modified, inside the root or outside it.
//!
//! Deny patterns (globs such as `.env*` or `*.pem`) are matched against the file name and the
//! root-relative path, both as the agent wrote it and as it resolved, so a symlink named `notes`
//! that points at `.env` is refused, and so is a link named `.env`. Both `.git` and the deny
//! patterns are matched ignoring letter case: on the case-insensitive file systems of macOS and
//! Windows `.GIT/config` *is* `.git/config`, and refusing `.GIT` on Linux costs nothing.
//!
//! Names are taken literally: `~` is not expanded, `%2e%2e` is not URL-decoded, and on Unix a
//! backslash is an ordinary character (`..\x` is one file name); only what the OS itself would
//! treat as a parent directory counts as `..`.
//!
//! Writing is refused on the protected paths of [`crate::protect`] too (baton's state and
//! configuration, the sprint file, BMad's configuration), matched like the deny patterns on the
//! path as written and as resolved, so a symlink pointing at `baton.toml` is refused as well.
//!
//! Known limits: the check and the later use are two steps, so a symlink swapped in between (by a
//! command the agent runs) is not caught; hard links cannot be told from ordinary files.

use crate::protect::{Compiled, Protected};
use globset::{Glob, GlobBuilder, GlobMatcher};
use std::collections::VecDeque;
use std::ffi::OsStr;
use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Longest path accepted, in bytes.
pub const MAX_PATH_BYTES: usize = 4096;
/// Longest single path component accepted, in bytes.
pub const MAX_COMPONENT_BYTES: usize = 255;
/// Most symlinks followed while resolving one path (as Linux's `MAXSYMLINKS`).
const MAX_SYMLINK_HOPS: usize = 40;
/// Longest path echoed back in a [`Refusal`], in characters.
const MAX_ECHOED_CHARS: usize = 200;

/// Why a sandbox could not be built.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The root does not exist or cannot be canonicalized.
    #[error("sandbox root `{path}` cannot be resolved: {source}")]
    Root {
        /// The root as given.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: io::Error,
    },
    /// The root is not a directory.
    #[error("sandbox root `{path}` is not a directory")]
    NotADirectory {
        /// The root as given.
        path: PathBuf,
    },
    /// A deny pattern is not a valid glob.
    #[error("invalid deny pattern `{pattern}`: {source}")]
    Glob {
        /// The pattern as given.
        pattern: String,
        /// The glob error.
        #[source]
        source: globset::Error,
    },
}

/// What the caller means to do with a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read it (or list it).
    Read,
    /// Create, replace or edit it.
    Write,
}

/// A path the sandbox refused, with a short reason for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The path as the agent gave it (shortened when very long, control characters escaped).
    pub path: String,
    /// Why, e.g. "`..` is not allowed" or "inside .git/".
    pub reason: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` refused: {}", self.path, self.reason)
    }
}

impl std::error::Error for Refusal {}

/// One deny pattern, compiled for the file name and for the root-relative path.
#[derive(Debug, Clone)]
struct DenyPattern {
    pattern: String,
    /// The pattern itself (matched against the file name and the relative path).
    plain: GlobMatcher,
    /// `**/` + the pattern (matched against the relative path), unless it already starts so.
    anywhere: Option<GlobMatcher>,
}

/// The path jail of one workspace root.
#[derive(Debug, Clone)]
pub struct Sandbox {
    root: PathBuf,
    deny: Vec<DenyPattern>,
    protected: Compiled,
    /// The protected paths as given, relative to the root where they lie under it: what a
    /// sandbox of the same rules elsewhere (a worktree) protects.
    rules: Protected,
}

fn compile(pattern: &str, original: &str) -> Result<GlobMatcher, SandboxError> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .case_insensitive(true)
        .build()
        .map(|g: Glob| g.compile_matcher())
        .map_err(|source| SandboxError::Glob {
            pattern: original.to_owned(),
            source,
        })
}

impl Sandbox {
    /// Builds the sandbox of `root` (canonicalized) refusing paths that match `deny_globs`, and
    /// refusing writes to the protected paths of BMad's default layout
    /// ([`Protected::defaults`]).
    pub fn new(root: &Path, deny_globs: &[String]) -> Result<Sandbox, SandboxError> {
        Sandbox::with_protected(root, deny_globs, &Protected::defaults())
    }

    /// Checks that `pattern` is a valid deny glob (for validating configuration early).
    pub fn check_pattern(pattern: &str) -> Result<(), globset::Error> {
        GlobBuilder::new(pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map(|_| ())
    }

    /// Builds the sandbox of `root` (canonicalized) refusing paths that match `deny_globs` and
    /// writes to the paths `protected` names (the caller knows the project's sprint file and
    /// story directory).
    pub fn with_protected(
        root: &Path,
        deny_globs: &[String],
        protected: &Protected,
    ) -> Result<Sandbox, SandboxError> {
        let canonical = std::fs::canonicalize(root).map_err(|source| SandboxError::Root {
            path: root.to_path_buf(),
            source,
        })?;
        if !canonical.is_dir() {
            return Err(SandboxError::NotADirectory {
                path: root.to_path_buf(),
            });
        }
        let mut deny = Vec::with_capacity(deny_globs.len());
        for pattern in deny_globs {
            let plain = compile(pattern, pattern)?;
            let anywhere = if pattern.starts_with("**/") || pattern.starts_with('/') {
                None
            } else {
                Some(compile(&format!("**/{pattern}"), pattern)?)
            };
            deny.push(DenyPattern {
                pattern: pattern.clone(),
                plain,
                anywhere,
            });
        }
        let compiled = Compiled::new(root, &canonical, protected)
            .map_err(|(pattern, source)| SandboxError::Glob { pattern, source })?;
        Ok(Sandbox {
            rules: protected.relative_to(&[root, &canonical]),
            root: canonical,
            deny,
            protected: compiled,
        })
    }

    /// The deny patterns every project gets unless it says otherwise: dotenv files, keys and
    /// certificates.
    pub fn default_deny() -> Vec<String> {
        [".env*", "*.pem", "*.key", "id_*"]
            .map(str::to_owned)
            .to_vec()
    }

    /// The protected paths, relative to the root where they lie under it (so that a sandbox of
    /// the same rules at another root, a worktree's, protects the same files there).
    pub fn protected(&self) -> &Protected {
        &self.rules
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether a path component names git's directory: `.git` in any letter case (macOS and
    /// Windows file systems ignore case), also with the trailing dots or spaces Windows drops.
    pub fn is_git_dir(component: &str) -> bool {
        component
            .trim_end_matches(['.', ' '])
            .eq_ignore_ascii_case(".git")
    }

    /// The deny patterns, as given.
    pub fn deny_patterns(&self) -> Vec<&str> {
        self.deny.iter().map(|d| d.pattern.as_str()).collect()
    }

    /// The deny pattern a root-relative path (with `/` separators) matches, if any.
    pub fn denied_by(&self, relative: &str) -> Option<&str> {
        let relative = relative.trim_start_matches("./");
        if relative.is_empty() || relative == "." {
            return None;
        }
        let name = relative.rsplit('/').next().unwrap_or(relative);
        self.deny
            .iter()
            .find(|d| {
                d.plain.is_match(name)
                    || d.plain.is_match(relative)
                    || d.anywhere.as_ref().is_some_and(|g| g.is_match(relative))
            })
            .map(|d| d.pattern.as_str())
    }

    /// `abs` relative to the root, with `/` separators (`.` for the root itself); a path outside
    /// the root is returned whole.
    pub fn relative(&self, abs: &Path) -> String {
        match abs.strip_prefix(&self.root) {
            Ok(rel) => {
                let parts: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if parts.is_empty() {
                    ".".to_owned()
                } else {
                    parts.join("/")
                }
            }
            Err(_) => abs.to_string_lossy().into_owned(),
        }
    }

    /// Checks `path` (relative to the root, or absolute) for `access` and returns the absolute,
    /// symlink-free path to use instead of it.
    pub fn resolve(&self, path: &str, access: Access) -> Result<PathBuf, Refusal> {
        let refuse = |reason: &str| Refusal {
            path: echo(path),
            reason: reason.to_owned(),
        };
        if path.is_empty() {
            return Err(refuse("empty path"));
        }
        if path.contains('\0') {
            return Err(refuse("contains a NUL byte"));
        }
        if path.len() > MAX_PATH_BYTES {
            return Err(refuse(&format!(
                "path too long ({} bytes, limit {MAX_PATH_BYTES})",
                path.len()
            )));
        }
        // Lexical pass: `..` refused in any position, `.` and repeated slashes dropped.
        let mut absolute = false;
        let mut lexical: Vec<&OsStr> = Vec::new();
        for component in Path::new(path).components() {
            match component {
                Component::ParentDir => return Err(refuse("`..` is not allowed")),
                Component::CurDir => {}
                Component::RootDir => absolute = true,
                Component::Prefix(_) => return Err(refuse("absolute path outside the project")),
                Component::Normal(name) => {
                    if name.len() > MAX_COMPONENT_BYTES {
                        return Err(refuse(&format!(
                            "path too long (a component has {} bytes, limit \
                             {MAX_COMPONENT_BYTES})",
                            name.len()
                        )));
                    }
                    lexical.push(name);
                }
            }
        }
        let lexical_path: PathBuf = if absolute {
            let mut p = PathBuf::from("/");
            p.extend(&lexical);
            p
        } else {
            let mut p = self.root.clone();
            p.extend(&lexical);
            p
        };

        let resolved = match self.realpath(&lexical_path) {
            Ok(p) => p,
            Err(RealpathError::TooManyLinks) => {
                return Err(refuse("too many symlinks (loop?)"));
            }
            Err(RealpathError::Io(e)) => {
                return Err(refuse(&format!("cannot be resolved: {e}")));
            }
        };

        if !resolved.starts_with(&self.root) {
            if absolute && !lexical_path.starts_with(&self.root) {
                return Err(refuse("absolute path outside the project"));
            }
            return Err(refuse("symlink points outside the project"));
        }

        // `.git` and deny patterns, on the path as written and as resolved.
        let mut relatives = vec![self.relative(&resolved)];
        if let Ok(rel) = lexical_path.strip_prefix(&self.root) {
            let written = self.relative(&self.root.join(rel));
            if written != relatives[0] {
                relatives.push(written);
            }
        }
        for rel in &relatives {
            if rel.split('/').any(Sandbox::is_git_dir) {
                return Err(refuse("inside .git/"));
            }
        }
        for rel in &relatives {
            if let Some(pattern) = self.denied_by(rel) {
                return Err(refuse(&format!("matches deny pattern `{pattern}`")));
            }
        }

        if access == Access::Write {
            for rel in &relatives {
                if let Some(reason) = self.protected.refuses(rel) {
                    return Err(refuse(reason));
                }
            }
            let is_dir = std::fs::metadata(&resolved).is_ok_and(|m| m.is_dir());
            if is_dir || path.ends_with('/') || path.ends_with("/.") || resolved == self.root {
                return Err(refuse("is a directory, not a file"));
            }
        }
        Ok(resolved)
    }

    /// Whether the resolved file `abs` is a story file whose status the file tools must keep.
    pub fn is_story_file(&self, abs: &Path) -> bool {
        self.protected.is_story(&self.relative(abs))
    }

    /// Checks that replacing the text of the resolved file `abs` (`before`: its text, `None` for
    /// a new file) by `after` does not change a story's status; the file tools call it before
    /// they write.
    pub fn check_content(
        &self,
        abs: &Path,
        before: Option<&str>,
        after: &str,
    ) -> Result<(), Refusal> {
        let rel = self.relative(abs);
        if !self.protected.is_story(&rel) {
            return Ok(());
        }
        self.protected
            .check_story(before, after)
            .map_err(|reason| Refusal {
                path: echo(&rel),
                reason,
            })
    }

    /// `realpath(3)` that allows the tail of the path not to exist. Only `lstat` and `readlink`
    /// are used.
    fn realpath(&self, lexical: &Path) -> Result<PathBuf, RealpathError> {
        let mut pending: VecDeque<PathBuf> = VecDeque::new();
        let mut resolved = PathBuf::from("/");
        for c in lexical.components() {
            match c {
                Component::RootDir => {}
                other => pending.push_back(PathBuf::from(other.as_os_str())),
            }
        }
        // The root is canonical: start from it instead of walking it again.
        if lexical.starts_with(&self.root) {
            resolved = self.root.clone();
            let skip = self.root.components().count() - 1;
            for _ in 0..skip {
                pending.pop_front();
            }
        }
        let mut hops = 0;
        let mut missing = false;
        while let Some(part) = pending.pop_front() {
            let component = part.components().next();
            match component {
                None | Some(Component::CurDir) => {}
                Some(Component::RootDir) | Some(Component::Prefix(_)) => {
                    resolved = PathBuf::from("/");
                }
                Some(Component::ParentDir) => {
                    // Only reachable from a symlink's target. Below a missing directory the OS
                    // would fail too; above, `resolved` has no links, so popping is exact.
                    if missing {
                        return Err(RealpathError::Io(io::Error::new(
                            io::ErrorKind::NotFound,
                            "symlink target goes through a missing directory",
                        )));
                    }
                    resolved.pop();
                }
                Some(Component::Normal(name)) => {
                    let candidate = resolved.join(name);
                    if missing {
                        resolved = candidate;
                        continue;
                    }
                    match std::fs::symlink_metadata(&candidate) {
                        Ok(meta) if meta.file_type().is_symlink() => {
                            hops += 1;
                            if hops > MAX_SYMLINK_HOPS {
                                return Err(RealpathError::TooManyLinks);
                            }
                            let target =
                                std::fs::read_link(&candidate).map_err(RealpathError::Io)?;
                            let mut parts: Vec<PathBuf> = Vec::new();
                            for tc in target.components() {
                                match tc {
                                    Component::RootDir => parts.push(PathBuf::from("/")),
                                    other => parts.push(PathBuf::from(other.as_os_str())),
                                }
                            }
                            for p in parts.into_iter().rev() {
                                pending.push_front(p);
                            }
                        }
                        Ok(_) => resolved = candidate,
                        Err(e) if e.kind() == io::ErrorKind::NotFound => {
                            missing = true;
                            resolved = candidate;
                        }
                        Err(e) => return Err(RealpathError::Io(e)),
                    }
                }
            }
        }
        Ok(resolved)
    }
}

enum RealpathError {
    TooManyLinks,
    Io(io::Error),
}

/// The path as echoed in a refusal: control characters escaped, very long paths shortened.
fn echo(path: &str) -> String {
    let mut out = String::new();
    for (i, ch) in path.chars().enumerate() {
        if i == MAX_ECHOED_CHARS {
            out.push_str(&format!("… ({} bytes in all)", path.len()));
            break;
        }
        if ch.is_control() {
            out.extend(ch.escape_default());
        } else {
            out.push(ch);
        }
    }
    out
}
