//! Which files are tests, which are implementation, and which test belongs to which
//! implementation file.
//!
//! A path (relative to the project root, `/`-separated) is exempt (configuration, docs, lock
//! files, generated declarations, migrations), a test (unit or acceptance), an implementation
//! file of a known language (Rust, TypeScript/JavaScript, Python, Go) with the test files that
//! would cover it, or unmapped (any other file: the guard lets it through with a warning).
//! Candidates come from the strategies in order — suffix (`foo_test.rs`, `foo.test.ts`,
//! `test_foo.py`, `foo_test.go`), directory (`__tests__/`, `tests/` beside the file), mirror
//! (`src/x/foo` ↔ `tests/x/foo`) — unless an explicit override names the test, which then wins.
//! A Rust file with an inline `#[cfg(test)]` module is its own test.

use globset::{Glob, GlobSet, GlobSetBuilder};

/// Exempt by default: generated declarations, configuration, migrations, docs, lock files.
pub const DEFAULT_EXEMPT: &[&str] = &[
    "*.d.ts",
    "*.config.*",
    "migrations/**",
    "**/migrations/**",
    "docs/**",
    "*.md",
    "*.txt",
    "*.rst",
    "*.lock",
    "package-lock.json",
    "**/package-lock.json",
    "pnpm-lock.yaml",
    "**/pnpm-lock.yaml",
    "go.sum",
    "**/go.sum",
    "**/__init__.py",
    "__init__.py",
];

/// A language the guard knows tests for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// `.rs`
    Rust,
    /// `.ts`, `.tsx`, `.js`, `.jsx`, `.mjs`, `.cjs`
    TypeScript,
    /// `.py`
    Python,
    /// `.go`
    Go,
}

/// What a path is to the guard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Class {
    /// Never guarded.
    Exempt,
    /// A test file; `acceptance` for acceptance / end-to-end tests.
    Test {
        /// An acceptance test (`*.acceptance.*`, `*.e2e.*`, `tests/acceptance/`).
        acceptance: bool,
    },
    /// An implementation file and the test files that would cover it, best first.
    Impl {
        /// Its language.
        lang: Lang,
        /// Candidate test paths, in strategy order.
        candidates: Vec<String>,
    },
    /// A file of no known language.
    Unmapped,
}

/// An override: implementation files matching `glob` are covered by `test` (`{stem}` is
/// replaced by the file's stem).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Override {
    /// Glob on root-relative paths.
    pub glob: String,
    /// The test path.
    pub test: String,
}

/// Compiled mapping settings.
#[derive(Debug, Clone)]
pub struct Mapper {
    exempt: GlobSet,
    overrides: Vec<(globset::GlobMatcher, String)>,
}

/// A bad glob in the settings.
#[derive(Debug, thiserror::Error)]
#[error("[tdd] {field}: `{glob}` is not a valid glob: {message}")]
pub struct BadGlob {
    /// The setting.
    pub field: &'static str,
    /// The glob.
    pub glob: String,
    /// Why.
    pub message: String,
}

fn glob(field: &'static str, g: &str) -> Result<Glob, BadGlob> {
    Glob::new(g).map_err(|e| BadGlob {
        field,
        glob: g.to_owned(),
        message: e.kind().to_string(),
    })
}

impl Mapper {
    /// Compiles the exempt globs and overrides.
    ///
    /// # Errors
    ///
    /// [`BadGlob`] naming the first invalid glob.
    pub fn new(exempt: &[String], overrides: &[Override]) -> Result<Mapper, BadGlob> {
        let mut b = GlobSetBuilder::new();
        for g in exempt {
            b.add(glob("exempt", g)?);
        }
        let exempt = b.build().map_err(|e| BadGlob {
            field: "exempt",
            glob: String::new(),
            message: e.to_string(),
        })?;
        let overrides = overrides
            .iter()
            .map(|o| {
                Ok((
                    glob("overrides", &o.glob)?.compile_matcher(),
                    o.test.clone(),
                ))
            })
            .collect::<Result<_, BadGlob>>()?;
        Ok(Mapper { exempt, overrides })
    }

    /// Classifies `rel` (root-relative, `/`-separated).
    pub fn classify(&self, rel: &str) -> Class {
        if self.exempt.is_match(rel) {
            return Class::Exempt;
        }
        let (dir, name) = match rel.rsplit_once('/') {
            Some((d, n)) => (d, n),
            None => ("", rel),
        };
        let Some((stem, ext)) = name.rsplit_once('.') else {
            return Class::Unmapped;
        };
        let lang = match ext {
            "rs" => Lang::Rust,
            "ts" | "tsx" | "js" | "jsx" | "mjs" | "cjs" => Lang::TypeScript,
            "py" => Lang::Python,
            "go" => Lang::Go,
            _ => return Class::Unmapped,
        };
        let dirs: Vec<&str> = if dir.is_empty() {
            Vec::new()
        } else {
            dir.split('/').collect()
        };
        if let Some(acceptance) = test_kind(lang, &dirs, name, stem) {
            return Class::Test { acceptance };
        }
        for (m, test) in &self.overrides {
            if m.is_match(rel) {
                return Class::Impl {
                    lang,
                    candidates: vec![test.replace("{stem}", stem)],
                };
            }
        }
        Class::Impl {
            lang,
            candidates: candidates(lang, dir, &dirs, stem, ext),
        }
    }
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

/// `Some(acceptance)` if the file is a test.
fn test_kind(lang: Lang, dirs: &[&str], name: &str, stem: &str) -> Option<bool> {
    let acceptance = name.contains(".acceptance.")
        || name.contains(".e2e.")
        || dirs.windows(2).any(|w| w == ["tests", "acceptance"]);
    if acceptance {
        return Some(true);
    }
    let in_tests_dir = dirs
        .iter()
        .any(|d| *d == "tests" || *d == "__tests__" || *d == "test");
    let test = match lang {
        Lang::Rust => {
            in_tests_dir
                || stem.ends_with("_test")
                || stem.ends_with("_tests")
                || stem == "tests"
                || stem == "test"
        }
        Lang::TypeScript => in_tests_dir || name.contains(".test.") || name.contains(".spec."),
        Lang::Python => {
            in_tests_dir
                || stem.starts_with("test_")
                || stem.ends_with("_test")
                || stem == "conftest"
        }
        Lang::Go => stem.ends_with("_test"),
    };
    test.then_some(false)
}

/// The mirror of `dir` under a `tests/` beside its `src/` component: `crates/a/src/x` →
/// `crates/a/tests/x`; `None` without a `src` component.
fn mirror(dirs: &[&str]) -> Option<String> {
    let at = dirs.iter().rposition(|d| *d == "src")?;
    let mut parts: Vec<&str> = dirs[..at].to_vec();
    parts.push("tests");
    parts.extend_from_slice(&dirs[at + 1..]);
    Some(parts.join("/"))
}

/// [`mirror`] under another top folder (`test`, or `""` for the path below `src` alone).
fn mirror_as(dirs: &[&str], top: &str) -> Option<String> {
    let at = dirs.iter().rposition(|d| *d == "src")?;
    let mut parts: Vec<&str> = dirs[..at].to_vec();
    if !top.is_empty() {
        parts.push(top);
    }
    parts.extend_from_slice(&dirs[at + 1..]);
    Some(parts.join("/"))
}

fn candidates(lang: Lang, dir: &str, dirs: &[&str], stem: &str, ext: &str) -> Vec<String> {
    let mut out = Vec::new();
    let m = mirror(dirs);
    match lang {
        Lang::Rust => {
            out.push(join(dir, &format!("{stem}_test.rs")));
            out.push(join(&join(dir, "tests"), &format!("{stem}.rs")));
            if let Some(m) = m {
                out.push(join(&m, &format!("{stem}.rs")));
            }
        }
        Lang::TypeScript => {
            // A JavaScript file may be tested from TypeScript (`foo.js` ← `foo.test.ts`).
            let mut exts = vec![ext];
            if matches!(ext, "js" | "jsx" | "mjs" | "cjs") {
                exts.push("ts");
            }
            for e in &exts {
                out.push(join(dir, &format!("{stem}.test.{e}")));
                out.push(join(dir, &format!("{stem}.spec.{e}")));
                out.push(join(&join(dir, "__tests__"), &format!("{stem}.test.{e}")));
            }
            out.push(join(&join(dir, "__tests__"), &format!("{stem}.{ext}")));
            for e in &exts {
                if let Some(m) = &m {
                    out.push(join(m, &format!("{stem}.test.{e}")));
                }
                // A singular `test/` folder (mocha's default), mirrored like `tests/`.
                let singular = mirror_as(dirs, "test").unwrap_or_else(|| join("test", dir));
                out.push(join(&singular, &format!("{stem}.test.{e}")));
                out.push(join(&singular, &format!("{stem}.{e}")));
                out.push(format!("test/{stem}.test.{e}"));
                out.push(format!("test/{stem}.{e}"));
            }
        }
        Lang::Python => {
            out.push(join(dir, &format!("test_{stem}.py")));
            out.push(join(dir, &format!("{stem}_test.py")));
            out.push(join(&join(dir, "tests"), &format!("test_{stem}.py")));
            let under = |top: &str| match mirror_as(dirs, top) {
                Some(m) => m,
                None => join(top, dir),
            };
            out.push(join(&under("tests"), &format!("test_{stem}.py")));
            out.push(format!("tests/test_{stem}.py"));
            // Unit tests kept apart (`tests/unit/`) and a singular `test/` folder.
            let inner = mirror_as(dirs, "").unwrap_or_else(|| dir.to_owned());
            out.push(join(
                &join("tests/unit", &inner),
                &format!("test_{stem}.py"),
            ));
            out.push(format!("tests/unit/test_{stem}.py"));
            out.push(join(&under("test"), &format!("test_{stem}.py")));
            out.push(format!("test/test_{stem}.py"));
        }
        // Go tests a package: any other `_test.go` file of the folder counts too (the guard
        // looks for them on disk).
        Lang::Go => out.push(join(dir, &format!("{stem}_test.go"))),
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|c| seen.insert(c.clone()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapper() -> Mapper {
        let exempt: Vec<String> = DEFAULT_EXEMPT.iter().map(|s| (*s).to_owned()).collect();
        Mapper::new(&exempt, &[]).unwrap()
    }

    fn cands(rel: &str) -> Vec<String> {
        match mapper().classify(rel) {
            Class::Impl { candidates, .. } => candidates,
            other => panic!("{rel}: {other:?}"),
        }
    }

    #[test]
    fn suffix_directory_and_mirror_strategies_per_language() {
        assert_eq!(
            cands("crates/a/src/x/foo.rs"),
            [
                "crates/a/src/x/foo_test.rs",
                "crates/a/src/x/tests/foo.rs",
                "crates/a/tests/x/foo.rs"
            ]
        );
        assert_eq!(
            cands("src/foo.ts"),
            [
                "src/foo.test.ts",
                "src/foo.spec.ts",
                "src/__tests__/foo.test.ts",
                "src/__tests__/foo.ts",
                "tests/foo.test.ts",
                "test/foo.test.ts",
                "test/foo.ts"
            ]
        );
        assert_eq!(
            cands("pkg/foo.py"),
            [
                "pkg/test_foo.py",
                "pkg/foo_test.py",
                "pkg/tests/test_foo.py",
                "tests/pkg/test_foo.py",
                "tests/test_foo.py",
                "tests/unit/pkg/test_foo.py",
                "tests/unit/test_foo.py",
                "test/pkg/test_foo.py",
                "test/test_foo.py"
            ]
        );
        assert_eq!(cands("cmd/foo.go"), ["cmd/foo_test.go"]);
    }

    #[test]
    fn nested_unit_tests_a_singular_test_folder_and_typescript_tests_of_javascript() {
        let py = cands("pkg/foo.py");
        assert!(
            py.contains(&"tests/unit/pkg/test_foo.py".to_owned()),
            "{py:?}"
        );
        assert!(py.contains(&"tests/unit/test_foo.py".to_owned()), "{py:?}");
        assert!(py.contains(&"test/test_foo.py".to_owned()), "{py:?}");
        let src_py = cands("src/app/foo.py");
        assert!(
            src_py.contains(&"tests/unit/app/test_foo.py".to_owned()),
            "{src_py:?}"
        );
        let js = cands("lib/foo.js");
        for want in ["lib/foo.test.ts", "test/lib/foo.js", "test/lib/foo.test.js"] {
            assert!(js.contains(&want.to_owned()), "{want} not in {js:?}");
        }
        let src_js = cands("src/foo.js");
        assert!(src_js.contains(&"test/foo.js".to_owned()), "{src_js:?}");
        assert!(
            src_js.contains(&"test/foo.test.ts".to_owned()),
            "{src_js:?}"
        );
        assert_eq!(
            mapper().classify("test/foo.js"),
            Class::Test { acceptance: false }
        );
        assert_eq!(
            mapper().classify("tests/unit/test_foo.py"),
            Class::Test { acceptance: false }
        );
    }

    #[test]
    fn tests_acceptance_exempt_and_unmapped() {
        let m = mapper();
        for t in [
            "tests/foo.rs",
            "src/foo_test.rs",
            "src/foo.test.ts",
            "src/__tests__/foo.ts",
            "tests/test_foo.py",
            "pkg/foo_test.go",
        ] {
            assert_eq!(m.classify(t), Class::Test { acceptance: false }, "{t}");
        }
        for t in [
            "tests/acceptance/login.rs",
            "web/login.e2e.ts",
            "x.acceptance.py",
        ] {
            assert_eq!(m.classify(t), Class::Test { acceptance: true }, "{t}");
        }
        for t in [
            "types/a.d.ts",
            "vite.config.ts",
            "db/migrations/001.py",
            "README.md",
            "Cargo.lock",
            "docs/x.rs",
        ] {
            assert_eq!(m.classify(t), Class::Exempt, "{t}");
        }
        for t in ["Makefile", "src/a.c", "tests-pass"] {
            assert_eq!(m.classify(t), Class::Unmapped, "{t}");
        }
    }

    #[test]
    fn an_override_names_the_test() {
        let m = Mapper::new(
            &[],
            &[Override {
                glob: "src/legacy/*.rs".into(),
                test: "tests/legacy_{stem}.rs".into(),
            }],
        )
        .unwrap();
        assert_eq!(
            m.classify("src/legacy/parser.rs"),
            Class::Impl {
                lang: Lang::Rust,
                candidates: vec!["tests/legacy_parser.rs".into()]
            }
        );
        let err = Mapper::new(&["a[".into()], &[]).unwrap_err();
        assert!(err.to_string().contains("[tdd] exempt: `a[`"), "{err}");
    }
}
