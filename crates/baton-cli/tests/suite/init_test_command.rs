//! `baton init`'s test command, ecosystem by ecosystem: it writes the command the project's own
//! files propose into the new `baton.toml`, names the files it read (a snapshot of its output,
//! and its `--json` report), and, where the toolchain is on the machine, the written command
//! really runs the project's tests: they pass, and fail once one of them fails.
//!
//! The runs need `python3`, `npm`, `make` and `go` on `PATH`, pytest in `BATON_TEST_PYTEST_DIR`
//! (`site/` to import, `wheels/` for uv to install from without an index) and uv on `PATH` or in
//! `BATON_TEST_UV_DIR`. `.ci/run` provides them all and sets `BATON_TEST_ECOSYSTEMS_REQUIRED=1`,
//! which makes a missing one a failure; elsewhere a missing one prints a `SKIPPED:` notice.

use super::common::{Project, parse_json};
use super::snapshots::snap;
use super::sprint::{baton, run_guarded};
use serde_json::json;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;

/// A project of one ecosystem, the command `baton init` writes for it and the files it names.
struct Fixture {
    name: &'static str,
    files: &'static [(&'static str, &'static str)],
    command: &'static [&'static str],
    read: &'static [&'static str],
}

const NODE_TEST: &str = r#"{"name": "tally", "private": true, "scripts": {"test": "node --test"}}"#;

const FIXTURES: &[Fixture] = &[
    Fixture {
        name: "cargo_workspace",
        files: &[
            (
                "Cargo.toml",
                "[workspace]\nmembers = [\"crates/*\"]\nresolver = \"2\"\n",
            ),
            ("crates/tally/Cargo.toml", "[package]\nname = \"tally\"\n"),
        ],
        command: &["cargo", "test"],
        read: &["Cargo.toml"],
    },
    Fixture {
        name: "python_uv",
        files: &[
            (
                "pyproject.toml",
                "[project]\nname = \"tally\"\n\n[dependency-groups]\ndev = [\"pytest>=8\", \"ruff\"]\n",
            ),
            ("uv.lock", "version = 1\n"),
        ],
        command: &["uv", "run", "pytest"],
        read: &["pyproject.toml", "uv.lock"],
    },
    Fixture {
        name: "python_uv_extra",
        files: &[
            (
                "pyproject.toml",
                "[project]\nname = \"tally\"\n\n[project.optional-dependencies]\ntest = [\"pytest-cov\"]\n",
            ),
            ("uv.lock", "version = 1\n"),
        ],
        command: &["uv", "run", "--extra", "test", "pytest"],
        read: &["pyproject.toml", "uv.lock"],
    },
    Fixture {
        name: "python_poetry",
        files: &[
            (
                "pyproject.toml",
                "[tool.poetry]\nname = \"tally\"\n\n[tool.poetry.group.dev.dependencies]\npytest = \"^8.0\"\n",
            ),
            ("poetry.lock", ""),
        ],
        command: &["poetry", "run", "pytest"],
        read: &["pyproject.toml", "poetry.lock"],
    },
    Fixture {
        name: "python_pytest_ini",
        files: &[("pytest.ini", "[pytest]\n"), ("tally.py", "")],
        command: &["python3", "-m", "pytest"],
        read: &["pytest.ini"],
    },
    Fixture {
        name: "python_unittest",
        files: &[(
            "tests/test_tally.py",
            "import unittest\n\nclass TallyTest(unittest.TestCase):\n    pass\n",
        )],
        command: &["python3", "-m", "unittest", "discover", "-s", "tests"],
        read: &["tests/test_tally.py"],
    },
    Fixture {
        name: "node_npm",
        files: &[("package.json", NODE_TEST), ("package-lock.json", "{}")],
        command: &["npm", "test"],
        read: &["package.json", "package-lock.json"],
    },
    Fixture {
        name: "node_pnpm",
        files: &[("package.json", NODE_TEST), ("pnpm-lock.yaml", "")],
        command: &["pnpm", "test"],
        read: &["package.json", "pnpm-lock.yaml"],
    },
    Fixture {
        name: "node_bun",
        files: &[("package.json", NODE_TEST), ("bun.lock", "")],
        command: &["bun", "run", "test"],
        read: &["package.json", "bun.lock"],
    },
    Fixture {
        name: "node_yarn_field",
        files: &[(
            "package.json",
            r#"{"packageManager": "yarn@4.5.0", "scripts": {"test": "jest"}}"#,
        )],
        command: &["yarn", "test"],
        read: &["package.json"],
    },
    Fixture {
        name: "go",
        files: &[("go.mod", "module example.com/tally\n\ngo 1.19\n")],
        command: &["go", "test", "./..."],
        read: &["go.mod"],
    },
    Fixture {
        name: "dotnet",
        files: &[("Shop.sln", ""), ("Admin.sln", ""), ("Shop.csproj", "")],
        command: &["dotnet", "test", "Admin.sln"],
        read: &["Admin.sln"],
    },
    Fixture {
        name: "make",
        files: &[
            (
                "Makefile",
                ".PHONY: test\ntest: ## run every test\n\tgo test ./...\n\tnpm test\n",
            ),
            ("go.mod", "module example.com/tally\n"),
            ("package.json", NODE_TEST),
        ],
        command: &["make", "test"],
        read: &["Makefile"],
    },
    Fixture {
        name: "gradle",
        files: &[("build.gradle.kts", ""), ("gradlew", "#!/bin/sh\n")],
        command: &["./gradlew", "test"],
        read: &["build.gradle.kts", "gradlew"],
    },
    Fixture {
        name: "maven",
        files: &[("pom.xml", "<project/>\n")],
        command: &["mvn", "test"],
        read: &["pom.xml"],
    },
];

fn project(files: &[(&str, &str)]) -> Project {
    let p = Project::empty();
    for (path, text) in files {
        p.write(path, text);
    }
    p
}

/// `[sprint] test_command` as the project's `baton.toml` writes it (read as trusted, so that a
/// program off the default allowlist is not set aside).
fn written(p: &Project) -> Option<Vec<String>> {
    baton_config::Config::load_as(p.root(), true)
        .expect("baton.toml loads")
        .sprint
        .test_command
}

#[test]
fn init_writes_each_ecosystems_test_command_and_names_the_files_it_read() {
    for f in FIXTURES {
        let p = project(f.files);
        snap(&format!("init_tests_{}", f.name), &p, &["init"]).expect_code(0);
        let expected: Vec<String> = f.command.iter().map(|s| (*s).to_owned()).collect();
        assert_eq!(written(&p).as_ref(), Some(&expected), "{}", f.name);
        let toml = std::fs::read_to_string(p.root().join("baton.toml")).unwrap();
        assert!(
            toml.contains("# Proposed by `baton init` from `"),
            "{}: {toml}",
            f.name
        );

        let fresh = project(f.files);
        let report = parse_json(&baton(&fresh, &["init", "--json"]).expect_code(0));
        let t = &report["test_command"];
        assert_eq!(t["written"], true, "{}: {t}", f.name);
        assert_eq!(
            t["proposal"]["command"],
            json!(f.command),
            "{}: {t}",
            f.name
        );
        assert_eq!(t["proposal"]["files"], json!(f.read), "{}: {t}", f.name);
    }
}

#[test]
fn init_without_a_test_command_to_propose_says_how_to_set_one() {
    let p = project(&[("README.md", "# tally\n")]);
    snap("init_tests_none", &p, &["init"]).expect_code(0);
    assert_eq!(written(&p), None);
    let toml = std::fs::read_to_string(p.root().join("baton.toml")).unwrap();
    assert!(
        toml.contains("# test_command = [\"cargo\", \"test\"]\n"),
        "{toml}"
    );
    let report = parse_json(&baton(&p, &["init", "--json"]));
    assert_eq!(report["test_command"]["proposal"], serde_json::Value::Null);
    assert_eq!(report["test_command"]["written"], false);

    // A `baton.toml` that is already there is kept as it is; `init` only says what to add.
    let kept = project(&[
        ("baton.toml", "[sprint]\nbatch = 2\n"),
        ("go.mod", "module example.com/tally\n"),
    ]);
    snap("init_tests_kept_config", &kept, &["init"]).expect_code(0);
    assert_eq!(
        std::fs::read_to_string(kept.root().join("baton.toml")).unwrap(),
        "[sprint]\nbatch = 2\n"
    );
    // `baton doctor` gives the same advice.
    let doctor = baton(&kept, &["doctor", "--offline", "--json"]);
    let v = parse_json(&doctor);
    assert_eq!(
        v["proposed_test_command"]["command"],
        json!(["go", "test", "./..."])
    );
    assert!(
        v["warnings"].to_string().contains(
            "add `test_command = [\\\"go\\\", \\\"test\\\", \\\"./...\\\"]` under `[sprint]`"
        ),
        "{v}"
    );
}

#[test]
fn a_written_command_off_the_allowlist_waits_for_trust_and_doctor_says_so() {
    let uv = FIXTURES.iter().find(|f| f.name == "python_uv").unwrap();
    let p = project(uv.files);
    let init = baton(&p, &["init"]).expect_code(0);
    // The file is baton's own: no warning that it comes from an untrusted project.
    assert_eq!(init.stderr, "", "{}", init.describe());
    let doctor = |p: &Project| parse_json(&baton(p, &["doctor", "--offline", "--json"]));
    let v = doctor(&p);
    assert_eq!(v["test_command"], serde_json::Value::Null, "{v}");
    assert_eq!(v["test_command_needs_trust"], true, "{v}");
    assert!(
        v["warnings"]
            .to_string()
            .contains("applies once you trust the project"),
        "{v}"
    );
    baton(&p, &["trust"]).expect_code(0);
    let v = doctor(&p);
    assert_eq!(v["test_command"], json!(uv.command), "{v}");
    assert_eq!(v["test_command_needs_trust"], false, "{v}");
}

// ---------------------------------------------------------------------------------------------
// The written command, run.

/// Whether `what` is there; if not, a `SKIPPED:` notice, or a failure in CI.
fn available(what: &str, there: bool) -> bool {
    if !there {
        assert!(
            std::env::var("BATON_TEST_ECOSYSTEMS_REQUIRED").as_deref() != Ok("1"),
            "BATON_TEST_ECOSYSTEMS_REQUIRED=1 but {what} is missing; .ci/run installs it"
        );
        eprintln!("SKIPPED: {what} is missing; .ci/run installs it");
    }
    there
}

/// The directory on `PATH` holding `program`.
fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).find(|d| d.join(program).is_file())
}

fn have(program: &str) -> bool {
    available(&format!("`{program}`"), on_path(program).is_some())
}

/// pytest's `site/` and `wheels/`, from `BATON_TEST_PYTEST_DIR`.
fn pytest_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("BATON_TEST_PYTEST_DIR")
        .map(PathBuf::from)
        .filter(|d| d.join("site/pytest").is_dir() && d.join("wheels").is_dir());
    available("pytest ($BATON_TEST_PYTEST_DIR)", dir.is_some());
    dir
}

/// The directory holding `uv`: `BATON_TEST_UV_DIR`, else `PATH`.
fn uv_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("BATON_TEST_UV_DIR")
        .map(PathBuf::from)
        .filter(|d| d.join("uv").is_file())
        .or_else(|| on_path("uv"));
    available("uv ($BATON_TEST_UV_DIR)", dir.is_some());
    dir
}

/// Runs `baton init` on `p`, then the command it wrote, in `p` with `env`; whether it passed.
fn run_written(p: &Project, env: &[(&str, OsString)]) -> bool {
    let argv = written(p).expect("a test command was written");
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]).current_dir(p.root());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let args: Vec<&str> = argv.iter().map(String::as_str).collect();
    let run = run_guarded(cmd, &args);
    eprintln!(
        "$ {}\nexit: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        args.join(" "),
        run.code,
        run.stdout,
        run.stderr
    );
    run.code == Some(0)
}

/// `baton init` on `p` writes `command`; it passes, and fails once `broken` replaces a file.
fn passes_then_fails(
    p: &Project,
    command: &[&str],
    env: &[(&str, OsString)],
    broken: (&str, &str),
) {
    baton(p, &["init"]).expect_code(0);
    let expected: Vec<String> = command.iter().map(|s| (*s).to_owned()).collect();
    assert_eq!(written(p), Some(expected));
    assert!(
        run_written(p, env),
        "`{}` fails on passing tests",
        command.join(" ")
    );
    p.write(broken.0, broken.1);
    assert!(
        !run_written(p, env),
        "`{}` passes with a failing test",
        command.join(" ")
    );
}

/// `PATH` with `dir` first.
fn path_with(dir: &std::path::Path) -> OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::iter::once(dir.to_path_buf()).chain(std::env::split_paths(&path));
    std::env::join_paths(dirs).expect("PATH")
}

const TALLY_PY: &str = "def count(text):\n    return len(text.split())\n";
const UNITTEST_PY: &str = "import unittest\n\nfrom tally import count\n\n\nclass CountTest(unittest.TestCase):\n    def test_words(self):\n        self.assertEqual(count(\"a b c\"), 3)\n";
const PYTEST_PY: &str =
    "from tally import count\n\n\ndef test_words():\n    assert count(\"a b c\") == 3\n";

#[test]
fn the_written_cargo_command_runs_the_workspace_tests() {
    let lib = "pub fn count(text: &str) -> usize {\n    text.split_whitespace().count()\n}\n\n#[test]\nfn counts_words() {\n    assert_eq!(count(\"a b c\"), 3);\n}\n";
    let p = project(&[
        (
            "Cargo.toml",
            "[workspace]\nmembers = [\"tally\"]\nresolver = \"2\"\n",
        ),
        (
            "tally/Cargo.toml",
            "[package]\nname = \"tally\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        ),
        ("tally/src/lib.rs", lib),
    ]);
    let target = p.root().join("target").into_os_string();
    passes_then_fails(
        &p,
        &["cargo", "test"],
        &[("CARGO_TARGET_DIR", target)],
        ("tally/src/lib.rs", &lib.replace("), 3)", "), 4)")),
    );
}

#[test]
fn the_written_unittest_command_runs_the_tests_folder() {
    if !have("python3") {
        return;
    }
    let p = project(&[("tally.py", TALLY_PY), ("tests/test_tally.py", UNITTEST_PY)]);
    passes_then_fails(
        &p,
        &["python3", "-m", "unittest", "discover", "-s", "tests"],
        &[("PYTHONDONTWRITEBYTECODE", "1".into())],
        ("tally.py", "def count(text):\n    return 0\n"),
    );
}

#[test]
fn the_written_pytest_command_runs_pytest() {
    if !have("python3") {
        return;
    }
    let Some(pytest) = pytest_dir() else { return };
    let p = project(&[
        (
            "pyproject.toml",
            "[project]\nname = \"tally\"\nversion = \"0.1.0\"\n\n[project.optional-dependencies]\ntest = [\"pytest\"]\n",
        ),
        ("tally.py", TALLY_PY),
        ("tests/test_tally.py", PYTEST_PY),
    ]);
    passes_then_fails(
        &p,
        &["python3", "-m", "pytest"],
        &[
            ("PYTHONPATH", pytest.join("site").into_os_string()),
            ("PYTHONDONTWRITEBYTECODE", "1".into()),
        ],
        ("tally.py", "def count(text):\n    return 0\n"),
    );
}

#[test]
fn the_written_uv_command_runs_pytest_in_the_projects_environment() {
    if !have("python3") {
        return;
    }
    let (Some(pytest), Some(uv)) = (pytest_dir(), uv_dir()) else {
        return;
    };
    let p = project(&[
        (
            "pyproject.toml",
            "[project]\nname = \"tally\"\nversion = \"0.1.0\"\nrequires-python = \">=3.11\"\n\n\
             [dependency-groups]\ndev = [\"pytest==8.3.5\"]\n\n\
             [tool.pytest.ini_options]\npythonpath = [\".\"]\n",
        ),
        ("tally.py", TALLY_PY),
        ("tests/test_tally.py", PYTEST_PY),
    ]);
    // uv installs from the pinned wheels only, never from an index, into the test's own cache.
    let settings = tempfile::tempdir().unwrap();
    let config = settings.path().join("uv.toml");
    let wheels = serde_json::to_string(&pytest.join("wheels")).unwrap();
    std::fs::write(
        &config,
        format!("no-index = true\nfind-links = [{wheels}]\n"),
    )
    .unwrap();
    let env = [
        ("PATH", path_with(&uv)),
        ("UV_CONFIG_FILE", config.into_os_string()),
        (
            "UV_CACHE_DIR",
            settings.path().join("cache").into_os_string(),
        ),
        ("UV_OFFLINE", "1".into()),
        ("UV_PYTHON_DOWNLOADS", "never".into()),
        ("PYTHONDONTWRITEBYTECODE", "1".into()),
    ];
    // The project's lockfile, as uv writes it.
    let mut lock = Command::new(uv.join("uv"));
    lock.args(["lock", "--quiet"]).current_dir(p.root());
    for (k, v) in &env {
        lock.env(k, v);
    }
    run_guarded(lock, &["uv", "lock"]).expect_code(0);
    let locked = std::fs::read_to_string(p.root().join("uv.lock")).unwrap();
    assert!(!locked.contains("pypi.org"), "{locked}");
    passes_then_fails(
        &p,
        &["uv", "run", "pytest"],
        &env,
        ("tally.py", "def count(text):\n    return 0\n"),
    );
}

#[test]
fn the_written_npm_command_runs_the_test_script() {
    if !have("npm") {
        return;
    }
    let test = "const test = require('node:test');\nconst assert = require('node:assert');\nconst { count } = require('../tally');\n\ntest('counts words', () => {\n  assert.strictEqual(count('a b c'), 3);\n});\n";
    let p = project(&[
        ("package.json", NODE_TEST),
        (
            "tally.js",
            "exports.count = (text) => text.split(/\\s+/).length;\n",
        ),
        ("test/tally.test.js", test),
    ]);
    passes_then_fails(
        &p,
        &["npm", "test"],
        &[
            ("npm_config_update_notifier", "false".into()),
            ("npm_config_cache", p.root().join(".npm").into_os_string()),
        ],
        ("tally.js", "exports.count = () => 0;\n"),
    );
}

#[test]
fn the_written_go_command_runs_every_package() {
    if !have("go") {
        return;
    }
    let p = project(&[
        ("go.mod", "module example.com/tally\n\ngo 1.19\n"),
        (
            "words/words.go",
            "package words\n\nimport \"strings\"\n\nfunc Count(s string) int { return len(strings.Fields(s)) }\n",
        ),
        (
            "words/words_test.go",
            "package words\n\nimport \"testing\"\n\nfunc TestCount(t *testing.T) {\n\tif Count(\"a b c\") != 3 {\n\t\tt.Fatal(\"wrong count\")\n\t}\n}\n",
        ),
    ]);
    passes_then_fails(
        &p,
        &["go", "test", "./..."],
        &[
            ("GOCACHE", p.root().join(".go-cache").into_os_string()),
            ("GOPATH", p.root().join(".go-path").into_os_string()),
            ("GOPROXY", "off".into()),
            ("GOTOOLCHAIN", "local".into()),
        ],
        (
            "words/words.go",
            "package words\n\nfunc Count(s string) int { return 0 }\n",
        ),
    );
}

#[test]
fn the_written_make_command_runs_the_test_target() {
    if !have("make") || !have("python3") {
        return;
    }
    let p = project(&[
        (
            "Makefile",
            ".PHONY: test\ntest:\n\tpython3 -m unittest discover -s tests\n",
        ),
        ("tally.py", TALLY_PY),
        ("tests/test_tally.py", UNITTEST_PY),
    ]);
    passes_then_fails(
        &p,
        &["make", "test"],
        &[("PYTHONDONTWRITEBYTECODE", "1".into())],
        ("tally.py", "def count(text):\n    return 0\n"),
    );
}
