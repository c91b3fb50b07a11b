//! The test command a project's own files propose, for `baton init` to write into a new
//! `baton.toml` as `[sprint] test_command` and for `baton doctor` to suggest when none is set.
//!
//! This module owns which files are read, what each ecosystem's command is, and which proposal
//! wins when several fit. It only reads: nothing of the project is run (a cloned repository is
//! untrusted), every file is read through [`baton_store::bounded`] (regular files of at most
//! 1 MiB), and a directory is listed only to a bounded number of entries. The proposals, in the
//! order [`detect`] returns them, which is also their precedence:
//!
//! 1. a `test` target in the Makefile (`GNUmakefile`, `makefile` or `Makefile`, the one GNU make
//!    reads): `make test`. A project that wrote one made it its entry point, usually wrapping the
//!    ecosystem's command with what it needs around it.
//! 2. Python, when pytest is declared or configured, else when `test*.py` files import
//!    `unittest` (`python.rs`). Before Cargo: a root `pyproject.toml` beside a `Cargo.toml` is a
//!    Python package with a Rust extension (maturin, PyO3), tested through Python.
//! 3. Cargo (`Cargo.toml` with a `[package]` or `[workspace]`): `cargo test`, with `--workspace`
//!    for a root package whose workspace has members (plain `cargo test` tests the root package
//!    alone there).
//! 4. Go (`go.mod`): `go test ./...`.
//! 5. .NET (a `*.sln`, `*.slnx`, `*.csproj`, `*.fsproj` or `*.vbproj` at the root): `dotnet test`,
//!    naming the solution (or project) when the root holds more than one, as `dotnet test` needs.
//! 6. Gradle (`build.gradle[.kts]`, `settings.gradle[.kts]`): `./gradlew test` with the wrapper,
//!    else `gradle test`.
//! 7. Maven (`pom.xml`): `./mvnw test` with the wrapper, else `mvn test`.
//! 8. Node, when `package.json` has a `test` script other than npm's placeholder (`node.rs`):
//!    `npm test`, `pnpm test`, `yarn test` or `bun run test`. Last, because a root
//!    `package.json` is often only the tooling (formatters, commit hooks) of a project in another
//!    language.

mod build_tools;
mod node;
mod python;

use serde::Serialize;
use std::path::Path;

/// One command the project's files propose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Proposal {
    /// The command, program first, as `[sprint] test_command` takes it.
    pub command: Vec<String>,
    /// `make`, `python`, `cargo`, `go`, `dotnet`, `gradle`, `maven` or `node`.
    pub ecosystem: &'static str,
    /// The files it was read from, relative to the project root, the deciding one first.
    pub files: Vec<String>,
    /// Why this command, for a person: what in those files chose it.
    pub reason: String,
}

impl Proposal {
    fn new(command: &[&str], ecosystem: &'static str, files: &[&str], reason: String) -> Self {
        Proposal {
            command: command.iter().map(|s| (*s).to_owned()).collect(),
            ecosystem,
            files: files.iter().map(|s| (*s).to_owned()).collect(),
            reason,
        }
    }

    /// The command as a person would type it.
    pub fn display(&self) -> String {
        self.command.join(" ")
    }

    /// The `baton.toml` line that sets it: `test_command = ["cargo", "test"]`.
    pub fn setting(&self) -> String {
        format!("test_command = {}", toml_array(&self.command))
    }

    /// The program when it is not on the default `[commands] allow` list: the orchestrator of an
    /// untrusted project does not run it, and agents may not run it without adding it there.
    pub fn program_off_the_allowlist(&self) -> Option<&str> {
        let program = self.command.first()?;
        let policy = baton_agent::tools::CommandPolicy::default();
        (program.contains('/') || !policy.allow.contains(program)).then_some(program.as_str())
    }
}

/// Every command the project's files propose, the one to use first (see the module's list).
pub fn detect(root: &Path) -> Vec<Proposal> {
    [
        build_tools::make(root),
        python::detect(root),
        build_tools::cargo(root),
        build_tools::go(root),
        build_tools::dotnet(root),
        build_tools::gradle(root),
        build_tools::maven(root),
        node::detect(root),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The text of `root/name` when it is a regular file of at most 1 MiB of UTF-8; `None` when it
/// is absent, larger, not text or not a file.
fn read(root: &Path, name: &str) -> Option<String> {
    baton_store::bounded::read_to_string(&root.join(name), baton_store::bounded::CONFIG_LIMIT).ok()
}

/// Whether `root/name` is a regular file (or a link to one).
fn exists(root: &Path, name: &str) -> bool {
    root.join(name).is_file()
}

/// At most this many entries of one directory are looked at.
const MAX_ENTRIES: usize = 2_000;

/// The names of the regular files in `dir` (at most [`MAX_ENTRIES`] entries looked at), sorted.
fn file_names(dir: &Path) -> Vec<String> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = read
        .take(MAX_ENTRIES)
        .flatten()
        .filter(|e| e.path().is_file())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    names
}

/// `items` as a TOML array of strings.
pub(crate) fn toml_array(items: &[String]) -> String {
    let quoted: Vec<String> = items
        .iter()
        // A JSON string is a valid TOML basic string.
        .map(|s| serde_json::to_string(s).unwrap_or_default())
        .collect();
    format!("[{}]", quoted.join(", "))
}

/// `name` in backticks, for reasons.
fn tick(name: &str) -> String {
    format!("`{name}`")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A project of `files` (path, text) in a temp directory.
    pub(crate) fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        dir
    }

    /// The commands proposed for `files`, in order.
    pub(crate) fn commands(files: &[(&str, &str)]) -> Vec<String> {
        detect(project(files).path())
            .iter()
            .map(Proposal::display)
            .collect()
    }

    #[test]
    fn nothing_is_proposed_for_an_empty_project() {
        assert!(commands(&[]).is_empty());
        assert!(commands(&[("README.md", "# hi\n"), ("src/main.c", "int main;")]).is_empty());
    }

    #[test]
    fn a_makefile_test_target_comes_first_and_node_last() {
        let all = commands(&[
            ("package.json", r#"{"scripts": {"test": "jest"}}"#),
            ("go.mod", "module example.com/x\n"),
            ("Cargo.toml", "[package]\nname = \"x\"\n"),
            ("pyproject.toml", "[tool.pytest.ini_options]\n"),
            ("Makefile", "test:\n\tcargo test\n"),
        ]);
        assert_eq!(
            all,
            [
                "make test",
                "python3 -m pytest",
                "cargo test",
                "go test ./...",
                "npm test"
            ]
        );
    }

    #[test]
    fn programs_off_the_default_allowlist_are_named() {
        let p = |c: &[&str]| Proposal::new(c, "x", &[], String::new());
        assert_eq!(p(&["cargo", "test"]).program_off_the_allowlist(), None);
        assert_eq!(
            p(&["uv", "run", "pytest"]).program_off_the_allowlist(),
            Some("uv")
        );
        assert_eq!(
            p(&["./gradlew", "test"]).program_off_the_allowlist(),
            Some("./gradlew")
        );
    }

    #[test]
    fn what_is_not_a_regular_file_of_bounded_size_is_not_read() {
        let dir = project(&[("big/x", "")]);
        let big = "#".repeat(usize::try_from(baton_store::bounded::CONFIG_LIMIT).unwrap() + 1);
        std::fs::write(dir.path().join("Makefile"), format!("{big}\ntest:\n")).unwrap();
        std::fs::create_dir(dir.path().join("go.mod")).unwrap();
        assert!(detect(dir.path()).is_empty());
        #[cfg(unix)]
        {
            // A FIFO would block a reader until a writer comes: it is refused from its metadata.
            let fifo = dir.path().join("package.json");
            let made = std::process::Command::new("mkfifo").arg(&fifo).status();
            if made.is_ok_and(|s| s.success()) {
                assert!(detect(dir.path()).is_empty());
            }
        }
    }
}
