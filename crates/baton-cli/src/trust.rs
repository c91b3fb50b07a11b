//! Which projects the user trusts ([`baton_config::trust`]), in the user's configuration
//! directory as the environment names it.

use anyhow::{Context, Result};
use std::path::Path;

/// Whether `root` is trusted.
pub fn is_trusted(root: &Path) -> bool {
    baton_config::trust::is_trusted(crate::env::config_dir().as_deref(), root)
}

/// Trusts (or, with `revoke`, distrusts) `root`; returns whether anything changed.
pub fn set(root: &Path, trusted: bool) -> Result<bool> {
    let dir = crate::env::config_dir()
        .context("cannot find a configuration directory: set BATON_CONFIG_DIR or HOME")?;
    Ok(baton_config::trust::set(&dir, root, trusted)?)
}
