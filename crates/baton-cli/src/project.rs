//! Finding the project and opening its state: config, sprint document, journal, ledger.
//!
//! Paths that `baton.toml` does not set are found the way BMad finds them
//! ([`Config::locate_unset`]), so a v6-alpha project with
//! `docs/sprint-artifacts/sprint-status.yaml` works without any setting.

use crate::config::{self, Config};
use anyhow::{Context, Result};
use baton_store::journal::{BoxedStore, SqliteJournal};
use baton_store::ledger::{Ledger, LedgerOptions};
use baton_store::locate::{self, Layout};
use std::path::{Path, PathBuf};

/// The project root: `-C DIR`, else the nearest ancestor with `baton.toml`, else the cwd.
pub fn root(flag: Option<&Path>) -> Result<PathBuf> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    if let Some(dir) = flag {
        let dir = cwd.join(dir);
        anyhow::ensure!(
            dir.is_dir(),
            "project directory `{}` does not exist",
            dir.display()
        );
        return Ok(dir);
    }
    Ok(cwd
        .ancestors()
        .find(|d| d.join(config::FILE_NAME).is_file())
        .unwrap_or(&cwd)
        .to_path_buf())
}

/// Loads `baton.toml` and fills the paths it leaves unset from the project's BMad layout.
pub fn config(root: &Path) -> Result<Config> {
    Ok(located(root)?.0)
}

/// Loads `baton.toml`; for each of `paths.sprint_status`, `paths.stories` and
/// `paths.planning` it does not set, takes what [`locate::locate`] finds
/// ([`Config::locate_unset`]). Returns the layout when it was consulted.
pub fn located(root: &Path) -> Result<(Config, Option<Layout>)> {
    let mut cfg = config::load(root)?;
    let layout = cfg.locate_unset();
    Ok((cfg, layout))
}

/// Fails with a helpful message when the sprint file is missing.
pub fn require_sprint(cfg: &Config) -> Result<()> {
    if cfg.sprint_status.exists() && !cfg.sprint_status.is_file() {
        anyhow::bail!(
            "the sprint file `{}` is not a regular file (a directory, device, FIFO or a link to \
             one); point `paths.sprint_status` in `{}` at the real file",
            cfg.sprint_status.display(),
            cfg.root.join(config::FILE_NAME).display()
        );
    }
    if !cfg.sprint_status.is_file() {
        anyhow::bail!(
            "no sprint file at `{}`; run `baton init` to create one, or set `paths.sprint_status` in `{}`",
            cfg.sprint_status.display(),
            cfg.root.join(config::FILE_NAME).display()
        );
    }
    Ok(())
}

/// Fails with one sentence when the sprint file is not a BMad sprint file (another tool's
/// `sprint-status.yaml`, without `development_status`): reading it as an empty plan would claim
/// that everything is done.
pub fn require_bmad_sprint(cfg: &Config) -> Result<()> {
    let path = &cfg.sprint_status;
    let text = baton_store::bounded::read(path, baton_store::bounded::DOCUMENT_LIMIT)
        .with_context(|| format!("cannot read `{}`", path.display()))?;
    let text = String::from_utf8_lossy(&text);
    if baton_store::sprint_file::cr_only(&text) {
        anyhow::bail!(baton_store::sprint_file::LoadError::CrLineEndings { path: path.clone() });
    }
    if !locate::looks_like_sprint_file(&text) {
        anyhow::bail!(
            "`{}` is not a BMad sprint file (it has no `development_status` mapping); create one with BMad's sprint-planning workflow, or set `paths.sprint_status` in `{}` to your BMad sprint file",
            path.display(),
            cfg.root.join(config::FILE_NAME).display()
        );
    }
    Ok(())
}

/// Opens the journal, creating `.baton/` (ignoring itself) first if needed.
pub fn journal(cfg: &Config) -> Result<SqliteJournal> {
    ensure_state_dir(&cfg.state_dir)?;
    Ok(SqliteJournal::open(&cfg.journal_path())?)
}

/// Creates the state directory with the `.gitignore` that keeps it out of git, or writes the
/// `.gitignore` a clone of the project lacks (it is never committed).
pub fn ensure_state_dir(dir: &Path) -> Result<()> {
    baton_store::state_dir::ensure(dir)
        .with_context(|| format!("cannot write `{}`", dir.join(".gitignore").display()))?;
    Ok(())
}

/// Opens the ledger (sprint file + journal), reconciling anything left pending.
pub fn ledger(cfg: &Config) -> Result<Ledger<BoxedStore>> {
    require_sprint(cfg)?;
    require_bmad_sprint(cfg)?;
    let journal = journal(cfg)?;
    let opts = LedgerOptions {
        lock_path: cfg.lock_path(),
        stories_dir: Some(cfg.stories.clone()),
        write_extended: cfg.write_extended_statuses,
        auto_epic_done: cfg.auto_epic_done,
    };
    let journal: BoxedStore = Box::new(journal);
    Ok(Ledger::open(&cfg.sprint_status, journal, opts)?)
}
