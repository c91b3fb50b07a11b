//! Python: pytest when the project declares or configures it, else `unittest` when its `test*.py`
//! files import it; run in the environment the project's manager keeps.
//!
//! pytest counts when `pyproject.toml` lists it (or a `pytest-*` plugin, which brings it) among
//! the project's dependencies, a `[dependency-groups]` group (following `include-group`), an extra
//! of `[project.optional-dependencies]`, `[tool.uv] dev-dependencies`, Poetry's dependency tables
//! or PDM's dev dependencies, or configures it (`[tool.pytest.ini_options]`, `[tool.pytest]`);
//! else when `pytest.ini`, a `[pytest]` section of `tox.ini`, a `[tool:pytest]` section of
//! `setup.cfg`, a `conftest.py` or a requirements file says so.
//!
//! The manager: `uv.lock` means uv (`uv run pytest`), `poetry.lock` or a `[tool.poetry]` table
//! Poetry (`poetry run pytest`), neither the `python3` on `PATH` (`python3 -m pytest`: `python3`,
//! not `python`, which Debian and macOS do not ship, and which the default command allowlist
//! names). `uv run` syncs the project with its default dependency groups only (`dev`, or
//! `[tool.uv] default-groups`), so pytest declared in another group or in an extra is run with
//! `--group NAME` or `--extra NAME`, as it would not be installed otherwise.

use super::{Proposal, exists, file_names, read, tick};
use std::path::Path;
use toml::{Table, Value};

/// Requirements files that may list pytest, most telling first.
const REQUIREMENTS: [&str; 9] = [
    "requirements-dev.txt",
    "requirements_dev.txt",
    "dev-requirements.txt",
    "requirements-test.txt",
    "requirements_test.txt",
    "test-requirements.txt",
    "requirements/dev.txt",
    "requirements/test.txt",
    "requirements.txt",
];

/// Folders whose `test*.py` files are looked at for `unittest`, the root first.
const TEST_DIRS: [&str; 3] = ["", "tests", "test"];

/// At most this many `test*.py` files are read per folder.
const MAX_TEST_FILES: usize = 50;

/// Where `pyproject.toml` puts pytest, which decides whether `uv run` installs it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Place {
    /// Installed by a plain sync: the project's dependencies, a default group, uv's or Poetry's
    /// development dependencies.
    Synced,
    /// A `[dependency-groups]` group uv does not sync by default.
    Group(String),
    /// An extra of `[project.optional-dependencies]`.
    Extra(String),
    /// Configured or mentioned, but not declared as a dependency in `pyproject.toml`.
    Elsewhere,
}

/// What showed that the project uses pytest.
struct Evidence {
    file: &'static str,
    what: String,
    place: Place,
}

/// The environment manager.
enum Manager {
    Uv,
    Poetry(&'static str),
    Plain,
}

impl Manager {
    fn of(root: &Path, pyproject: Option<&Table>) -> Manager {
        if exists(root, "uv.lock") {
            Manager::Uv
        } else if exists(root, "poetry.lock") {
            Manager::Poetry("poetry.lock")
        } else if pyproject.is_some_and(|p| table(p, &["tool", "poetry"]).is_some()) {
            Manager::Poetry("pyproject.toml")
        } else {
            Manager::Plain
        }
    }

    /// The command running pytest (given where it is declared) or `unittest ARGS`.
    fn command(&self, run: Run<'_>) -> Vec<String> {
        let (mut cmd, python): (Vec<&str>, &str) = match self {
            Manager::Uv => (vec!["uv", "run"], "python"),
            Manager::Poetry(_) => (vec!["poetry", "run"], "python"),
            Manager::Plain => (Vec::new(), "python3"),
        };
        match run {
            Run::Pytest(place) => {
                if let Manager::Uv = self {
                    match place {
                        Place::Group(g) => cmd.extend(["--group", g.as_str()]),
                        Place::Extra(e) => cmd.extend(["--extra", e.as_str()]),
                        Place::Synced | Place::Elsewhere => {}
                    }
                }
                if let Manager::Plain = self {
                    cmd.extend([python, "-m", "pytest"]);
                } else {
                    cmd.push("pytest");
                }
            }
            Run::Unittest(args) => {
                cmd.extend([python, "-m", "unittest"]);
                cmd.extend(args);
            }
        }
        cmd.into_iter().map(str::to_owned).collect()
    }

    /// The file that named the manager, if it is not `pyproject.toml`.
    fn file(&self) -> Option<&'static str> {
        match self {
            Manager::Uv => Some("uv.lock"),
            Manager::Poetry(file) => Some(file),
            Manager::Plain => None,
        }
    }

    /// How the manager was chosen, for a person.
    fn how(&self) -> &'static str {
        match self {
            Manager::Uv => "`uv.lock` says uv manages its environment",
            Manager::Poetry("poetry.lock") => "`poetry.lock` says Poetry manages its environment",
            Manager::Poetry(_) => "its `[tool.poetry]` table says Poetry manages its environment",
            Manager::Plain => {
                "no `uv.lock` or `poetry.lock` names a manager, so it runs with the `python3` on `PATH`"
            }
        }
    }

    /// The proposal of `command`, read from `file` (`what` it says there) and the manager's file.
    fn proposal(&self, command: Vec<String>, file: &str, what: &str) -> Proposal {
        Proposal {
            command,
            ecosystem: "python",
            files: std::iter::once(file)
                .chain(self.file().filter(|f| *f != file))
                .map(str::to_owned)
                .collect(),
            reason: format!("{what}, and {}", self.how()),
        }
    }
}

/// What runs.
#[derive(Clone, Copy)]
enum Run<'a> {
    Pytest(&'a Place),
    Unittest(&'a [&'a str]),
}

/// pytest, else `unittest`, in the project's environment.
pub(super) fn detect(root: &Path) -> Option<Proposal> {
    let pyproject: Option<Table> = read(root, "pyproject.toml").and_then(|t| t.parse().ok());
    let manager = Manager::of(root, pyproject.as_ref());
    if let Some(e) = pytest(root, pyproject.as_ref()) {
        let asked = match (&manager, &e.place) {
            (Manager::Uv, Place::Group(g)) => {
                format!(" (`uv run` syncs the `{g}` group only when asked: `--group {g}`)")
            }
            (Manager::Uv, Place::Extra(x)) => {
                format!(" (`uv run` installs the `{x}` extra only when asked: `--extra {x}`)")
            }
            _ => String::new(),
        };
        let what = format!("{} {}{asked}", tick(e.file), e.what);
        return Some(manager.proposal(manager.command(Run::Pytest(&e.place)), e.file, &what));
    }
    let (dir, file) = unittest(root)?;
    let args: &[&str] = if dir.is_empty() || exists(root, &format!("{dir}/__init__.py")) {
        &[]
    } else {
        // Discovery from the root only enters packages; a plain folder is named.
        &["discover", "-s", dir]
    };
    let shown = if dir.is_empty() {
        file
    } else {
        format!("{dir}/{file}")
    };
    let what = format!(
        "{} uses `unittest` and nothing declares pytest",
        tick(&shown)
    );
    Some(manager.proposal(manager.command(Run::Unittest(args)), &shown, &what))
}

/// The first sign that the project uses pytest, the most telling first.
fn pytest(root: &Path, pyproject: Option<&Table>) -> Option<Evidence> {
    if let Some(p) = pyproject
        && let Some(e) = declared(p).or_else(|| configured(p))
    {
        return Some(e);
    }
    let section = |file: &'static str, header: &str| {
        read(root, file)
            .is_some_and(|t| t.lines().any(|l| l.trim() == header))
            .then(|| Evidence {
                file,
                what: format!("has a `{header}` section"),
                place: Place::Elsewhere,
            })
    };
    if exists(root, "pytest.ini") {
        return Some(Evidence {
            file: "pytest.ini",
            what: "configures pytest".to_owned(),
            place: Place::Elsewhere,
        });
    }
    if let Some(e) =
        section("tox.ini", "[pytest]").or_else(|| section("setup.cfg", "[tool:pytest]"))
    {
        return Some(e);
    }
    for file in ["conftest.py", "tests/conftest.py", "test/conftest.py"] {
        if exists(root, file) {
            return Some(Evidence {
                file,
                what: "is pytest's".to_owned(),
                place: Place::Elsewhere,
            });
        }
    }
    REQUIREMENTS.into_iter().find_map(|file| {
        read(root, file)?
            .lines()
            .map(|l| l.split('#').next().unwrap_or_default().trim())
            .any(is_pytest)
            .then(|| Evidence {
                file,
                what: "lists pytest".to_owned(),
                place: Place::Elsewhere,
            })
    })
}

/// pytest declared as a dependency in `pyproject.toml`, where a plain sync installs it first.
fn declared(p: &Table) -> Option<Evidence> {
    let found = |what: String, place: Place| {
        Some(Evidence {
            file: "pyproject.toml",
            what: format!("declares pytest in {what}"),
            place,
        })
    };
    if any_pytest(array(p, &["project", "dependencies"])) {
        return found("`[project] dependencies`".to_owned(), Place::Synced);
    }
    let groups = table(p, &["dependency-groups"]);
    let defaults = default_groups(p);
    let mut with_pytest: Vec<&String> = groups
        .map(|g| g.keys().filter(|k| group_has_pytest(g, k, 0)).collect())
        .unwrap_or_default();
    // A group uv syncs by default first, then by name.
    with_pytest.sort_by_key(|g| !defaults.as_ref().is_none_or(|d| d.contains(g)));
    if let Some(g) = with_pytest.first() {
        let place = if defaults.as_ref().is_none_or(|d| d.contains(g)) {
            Place::Synced
        } else {
            Place::Group((*g).clone())
        };
        return found(format!("`[dependency-groups] {g}`"), place);
    }
    if any_pytest(array(p, &["tool", "uv", "dev-dependencies"])) {
        return found("`[tool.uv] dev-dependencies`".to_owned(), Place::Synced);
    }
    let poetry_keys = |t: Option<&Table>| t.is_some_and(|t| t.keys().any(|k| is_pytest(k)));
    if poetry_keys(table(p, &["tool", "poetry", "dependencies"])) {
        return found("`[tool.poetry.dependencies]`".to_owned(), Place::Synced);
    }
    if poetry_keys(table(p, &["tool", "poetry", "dev-dependencies"])) {
        return found("`[tool.poetry.dev-dependencies]`".to_owned(), Place::Synced);
    }
    if let Some(groups) = table(p, &["tool", "poetry", "group"]) {
        for (name, group) in groups {
            if poetry_keys(group.get("dependencies").and_then(Value::as_table)) {
                return found(
                    format!("`[tool.poetry.group.{name}.dependencies]`"),
                    Place::Synced,
                );
            }
        }
    }
    if let Some(groups) = table(p, &["tool", "pdm", "dev-dependencies"]) {
        for (name, list) in groups {
            if any_pytest(list.as_array()) {
                return found(
                    format!("`[tool.pdm.dev-dependencies] {name}`"),
                    Place::Synced,
                );
            }
        }
    }
    if let Some(extras) = table(p, &["project", "optional-dependencies"]) {
        for (name, list) in extras {
            if any_pytest(list.as_array()) {
                return found(
                    format!("the `{name}` extra of `[project.optional-dependencies]`"),
                    Place::Extra(name.clone()),
                );
            }
        }
    }
    None
}

/// pytest's own table in `pyproject.toml`.
fn configured(p: &Table) -> Option<Evidence> {
    let pytest = table(p, &["tool", "pytest"])?;
    let what = if pytest.contains_key("ini_options") {
        "configures pytest (`[tool.pytest.ini_options]`)"
    } else {
        "configures pytest (`[tool.pytest]`)"
    };
    Some(Evidence {
        file: "pyproject.toml",
        what: what.to_owned(),
        place: Place::Elsewhere,
    })
}

/// The groups `uv run` syncs: `[tool.uv] default-groups`, else `dev`; `None` for all of them.
fn default_groups(p: &Table) -> Option<Vec<String>> {
    match table(p, &["tool", "uv"]).and_then(|uv| uv.get("default-groups")) {
        Some(Value::String(all)) if all == "all" => None,
        Some(Value::Array(list)) => Some(
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        ),
        _ => Some(vec!["dev".to_owned()]),
    }
}

/// Whether the dependency group `name` lists pytest, itself or through `include-group`.
fn group_has_pytest(groups: &Table, name: &str, depth: usize) -> bool {
    let Some(entries) = groups.get(name).and_then(Value::as_array) else {
        return false;
    };
    depth < 8
        && entries.iter().any(|entry| match entry {
            Value::String(req) => is_pytest(req),
            Value::Table(t) => t
                .get("include-group")
                .and_then(Value::as_str)
                .is_some_and(|g| group_has_pytest(groups, g, depth + 1)),
            _ => false,
        })
}

/// Whether the requirement `req` (`pytest>=8`, `pytest-cov`, `PyTest[extra]; python_version>"3"`)
/// brings pytest: pytest itself, or a `pytest-*` plugin, which depends on it.
fn is_pytest(req: &str) -> bool {
    let name: String = req
        .trim()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .map(|c| match c {
            '_' | '.' => '-',
            c => c.to_ascii_lowercase(),
        })
        .collect();
    name == "pytest" || name.starts_with("pytest-")
}

fn any_pytest(list: Option<&Vec<Value>>) -> bool {
    list.is_some_and(|l| l.iter().filter_map(Value::as_str).any(is_pytest))
}

fn table<'a>(t: &'a Table, path: &[&str]) -> Option<&'a Table> {
    path.iter()
        .try_fold(t, |t, key| t.get(*key).and_then(Value::as_table))
}

fn array<'a>(t: &'a Table, path: &[&str]) -> Option<&'a Vec<Value>> {
    let (last, parents) = path.split_last()?;
    table(t, parents)?.get(*last).and_then(Value::as_array)
}

/// The first folder of [`TEST_DIRS`] holding a `test*.py` file that imports `unittest`, and
/// that file's name.
fn unittest(root: &Path) -> Option<(&'static str, String)> {
    TEST_DIRS.into_iter().find_map(|dir| {
        let folder = root.join(dir);
        file_names(&folder)
            .into_iter()
            .filter(|n| n.starts_with("test") && n.ends_with(".py"))
            .take(MAX_TEST_FILES)
            .find(|n| {
                read(&folder, n).is_some_and(|text| {
                    text.lines().any(|l| {
                        let l = l.trim_start();
                        l.starts_with("import unittest") || l.starts_with("from unittest")
                    })
                })
            })
            .map(|n| (dir, n))
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::{commands, project};
    use super::*;

    fn pyproject(text: &str, lock: Option<&str>) -> Vec<String> {
        let mut files = vec![("pyproject.toml", text)];
        if let Some(lock) = lock {
            files.push((lock, ""));
        }
        commands(&files)
    }

    #[test]
    fn the_manager_comes_from_the_lockfile() {
        let groups = "[dependency-groups]\ndev = [\"pytest>=8\"]\n";
        assert_eq!(pyproject(groups, Some("uv.lock")), ["uv run pytest"]);
        assert_eq!(
            pyproject(groups, Some("poetry.lock")),
            ["poetry run pytest"]
        );
        assert_eq!(pyproject(groups, None), ["python3 -m pytest"]);
        let poetry =
            "[tool.poetry]\nname = \"x\"\n[tool.poetry.group.test.dependencies]\npytest = \"^8\"\n";
        assert_eq!(pyproject(poetry, None), ["poetry run pytest"]);
    }

    #[test]
    fn uv_is_told_the_group_or_extra_it_would_not_sync() {
        for (text, command) in [
            ("[project]\ndependencies = [\"pytest\"]\n", "uv run pytest"),
            (
                "[dependency-groups]\ntest = [\"pytest\"]\n",
                "uv run --group test pytest",
            ),
            (
                "[dependency-groups]\ntest = [\"pytest\"]\ndev = [{include-group = \"test\"}]\n",
                "uv run pytest",
            ),
            (
                "[dependency-groups]\ntest = [\"pytest\"]\n[tool.uv]\ndefault-groups = [\"test\"]\n",
                "uv run pytest",
            ),
            (
                "[dependency-groups]\nci = [\"pytest\"]\n[tool.uv]\ndefault-groups = \"all\"\n",
                "uv run pytest",
            ),
            (
                "[project.optional-dependencies]\ntest = [\"pytest-cov\", \"hypothesis\"]\n",
                "uv run --extra test pytest",
            ),
            (
                "[tool.uv]\ndev-dependencies = [\"pytest\"]\n",
                "uv run pytest",
            ),
            (
                "[tool.pytest.ini_options]\naddopts = \"-q\"\n",
                "uv run pytest",
            ),
        ] {
            assert_eq!(pyproject(text, Some("uv.lock")), [command], "{text}");
        }
    }

    #[test]
    fn pytest_is_found_in_its_other_files() {
        for files in [
            &[("pytest.ini", "")][..],
            &[("tox.ini", "[tox]\n[pytest]\naddopts = -q\n")],
            &[("setup.cfg", "[metadata]\n[tool:pytest]\n")],
            &[("conftest.py", "")],
            &[("tests/conftest.py", "")],
            &[(
                "requirements-dev.txt",
                "# tools\nPyTest==8.3 ; python_version > '3.8'\n",
            )],
            &[("pyproject.toml", "[tool.pytest]\nminversion = \"9.0\"\n")],
        ] {
            assert_eq!(commands(files), ["python3 -m pytest"], "{files:?}");
        }
        for files in [
            &[("tox.ini", "[tox]\nenvlist = py3\n")][..],
            &[("setup.cfg", "[flake8]\n")],
            &[("requirements.txt", "pytesting==1\nrequests\n")],
            &[(
                "pyproject.toml",
                "[project]\nname = \"x\"\ndependencies = [\"pytestify\"]\n",
            )],
        ] {
            assert!(commands(files).is_empty(), "{files:?}");
        }
    }

    #[test]
    fn unittest_without_pytest() {
        let test = "import unittest\n\nclass T(unittest.TestCase):\n    pass\n";
        assert_eq!(commands(&[("test_app.py", test)]), ["python3 -m unittest"]);
        assert_eq!(
            commands(&[("tests/__init__.py", ""), ("tests/test_app.py", test)]),
            ["python3 -m unittest"]
        );
        assert_eq!(
            commands(&[("tests/test_app.py", "from unittest import TestCase\n")]),
            ["python3 -m unittest discover -s tests"]
        );
        assert_eq!(
            commands(&[("tests/test_app.py", test), ("uv.lock", "")]),
            ["uv run python -m unittest discover -s tests"]
        );
        assert_eq!(
            commands(&[("test_app.py", test), ("poetry.lock", "")]),
            ["poetry run python -m unittest"]
        );
        // pytest wins over unittest; a `test*.py` that does not import unittest is not a sign.
        assert_eq!(
            commands(&[("test_app.py", test), ("pytest.ini", "")]),
            ["python3 -m pytest"]
        );
        assert!(commands(&[("tests/test_app.py", "def test_x():\n    pass\n")]).is_empty());
    }

    #[test]
    fn the_reason_names_the_files_read() {
        let dir = project(&[
            (
                "pyproject.toml",
                "[project.optional-dependencies]\ntest = [\"pytest\"]\n",
            ),
            ("uv.lock", ""),
        ]);
        let p = detect(dir.path()).unwrap();
        assert_eq!(p.files, ["pyproject.toml", "uv.lock"]);
        assert_eq!(
            p.reason,
            "`pyproject.toml` declares pytest in the `test` extra of \
             `[project.optional-dependencies]` (`uv run` installs the `test` extra only when \
             asked: `--extra test`), and `uv.lock` says uv manages its environment"
        );
        let dir = project(&[("tests/test_a.py", "import unittest\n")]);
        let p = detect(dir.path()).unwrap();
        assert_eq!(p.files, ["tests/test_a.py"]);
    }

    #[test]
    fn requirement_names_are_normalised() {
        for (req, yes) in [
            ("pytest", true),
            ("pytest>=8", true),
            ("PyTest[testing]", true),
            ("pytest_asyncio", true),
            ("pytest-cov==5", true),
            ("pytestify", false),
            ("requests", false),
            ("", false),
        ] {
            assert_eq!(is_pytest(req), yes, "{req}");
        }
    }
}
