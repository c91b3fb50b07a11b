//! Finding the project and opening its state: config, sprint document, journal, ledger.

use crate::config::{self, Config};
use anyhow::{Context, Result};
use baton_store::journal::SqliteJournal;
use baton_store::ledger::{Ledger, LedgerOptions};
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

/// Loads `baton.toml`.
pub fn config(root: &Path) -> Result<Config> {
    Ok(Config::load(root)?)
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

/// Opens the journal.
pub fn journal(cfg: &Config) -> Result<SqliteJournal> {
    Ok(SqliteJournal::open(&cfg.journal_path())?)
}

/// Opens the ledger (sprint file + journal), reconciling anything left pending.
pub fn ledger(cfg: &Config) -> Result<Ledger<SqliteJournal>> {
    require_sprint(cfg)?;
    let journal = journal(cfg)?;
    let opts = LedgerOptions {
        lock_path: cfg.lock_path(),
        stories_dir: Some(cfg.stories.clone()),
        write_extended: cfg.write_extended_statuses,
        auto_epic_done: cfg.auto_epic_done,
    };
    Ok(Ledger::open(&cfg.sprint_status, journal, opts)?)
}
