//! Node: `package.json`'s `test` script, run by the project's package manager.
//!
//! The package manager is the one `package.json`'s `packageManager` field names (Corepack's
//! field, what the project asks for explicitly), else the one whose lockfile is at the root,
//! else npm. Each runs the script its own way: `npm test`, `pnpm test`, `yarn test`, and
//! `bun run test` (`bun test` would run Bun's own test runner, not the script). npm's placeholder
//! script (`echo "Error: no test specified" && exit 1`) is not a test script.

use super::{Proposal, exists, read, tick};
use std::path::Path;

/// Lockfiles and the package manager each belongs to, in the order they are looked for.
const LOCKFILES: [(&str, Manager); 6] = [
    ("pnpm-lock.yaml", Manager::Pnpm),
    ("yarn.lock", Manager::Yarn),
    ("bun.lock", Manager::Bun),
    ("bun.lockb", Manager::Bun),
    ("package-lock.json", Manager::Npm),
    ("npm-shrinkwrap.json", Manager::Npm),
];

/// What npm writes into a new `package.json` as its test script.
const NPM_PLACEHOLDER: &str = "Error: no test specified";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Manager {
    Npm,
    Pnpm,
    Yarn,
    Bun,
}

impl Manager {
    fn named(name: &str) -> Option<Manager> {
        Some(match name {
            "npm" => Manager::Npm,
            "pnpm" => Manager::Pnpm,
            "yarn" => Manager::Yarn,
            "bun" => Manager::Bun,
            _ => return None,
        })
    }

    fn command(self) -> &'static [&'static str] {
        match self {
            Manager::Npm => &["npm", "test"],
            Manager::Pnpm => &["pnpm", "test"],
            Manager::Yarn => &["yarn", "test"],
            Manager::Bun => &["bun", "run", "test"],
        }
    }
}

/// The package manager's command for `package.json`'s `test` script, if it has a real one.
pub(super) fn detect(root: &Path) -> Option<Proposal> {
    let manifest: serde_json::Value = serde_json::from_str(&read(root, "package.json")?).ok()?;
    let script = manifest.get("scripts")?.get("test")?.as_str()?;
    if script.trim().is_empty() || script.contains(NPM_PLACEHOLDER) {
        return None;
    }
    let declared = manifest
        .get("packageManager")
        .and_then(serde_json::Value::as_str)
        .and_then(|field| {
            let name = field.split('@').next().unwrap_or_default();
            Manager::named(name).map(|m| (m, field))
        });
    let (manager, files, how) = if let Some((manager, field)) = declared {
        (
            manager,
            vec!["package.json"],
            format!("its `packageManager` field names `{field}`"),
        )
    } else if let Some((lock, manager)) = LOCKFILES.into_iter().find(|(f, _)| exists(root, f)) {
        (
            manager,
            vec!["package.json", lock],
            format!("{} is the lockfile", tick(lock)),
        )
    } else {
        (
            Manager::Npm,
            vec!["package.json"],
            "no lockfile names another package manager than npm".to_owned(),
        )
    };
    Some(Proposal::new(
        manager.command(),
        "node",
        &files,
        format!("`package.json` has a `test` script, and {how}"),
    ))
}

#[cfg(test)]
mod tests {
    use super::super::tests::commands;

    const SCRIPT: &str = r#"{"scripts": {"test": "vitest run"}}"#;

    #[test]
    fn the_lockfile_picks_the_package_manager() {
        for (lock, command) in [
            ("pnpm-lock.yaml", "pnpm test"),
            ("yarn.lock", "yarn test"),
            ("bun.lock", "bun run test"),
            ("bun.lockb", "bun run test"),
            ("package-lock.json", "npm test"),
        ] {
            assert_eq!(
                commands(&[("package.json", SCRIPT), (lock, "")]),
                [command],
                "{lock}"
            );
        }
        assert_eq!(commands(&[("package.json", SCRIPT)]), ["npm test"]);
    }

    #[test]
    fn the_package_manager_field_wins_over_a_lockfile() {
        let manifest =
            r#"{"packageManager": "pnpm@9.1.0+sha512.abc", "scripts": {"test": "jest"}}"#;
        assert_eq!(
            commands(&[("package.json", manifest), ("package-lock.json", "{}")]),
            ["pnpm test"]
        );
        let unknown = r#"{"packageManager": "deno@2", "scripts": {"test": "jest"}}"#;
        assert_eq!(
            commands(&[("package.json", unknown), ("yarn.lock", "")]),
            ["yarn test"]
        );
    }

    #[test]
    fn no_test_script_or_npms_placeholder_proposes_nothing() {
        for manifest in [
            r#"{"name": "x"}"#,
            r#"{"scripts": {"build": "tsc"}}"#,
            r#"{"scripts": {"test": ""}}"#,
            r#"{"scripts": {"test": 3}}"#,
            r#"{"scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}"#,
            "not json",
        ] {
            assert!(
                commands(&[("package.json", manifest)]).is_empty(),
                "{manifest}"
            );
        }
    }
}
