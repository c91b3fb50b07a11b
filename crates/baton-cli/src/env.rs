//! Every environment variable baton reads, in one place.

/// The project directory (same as `-C`).
pub const BATON_PROJECT: &str = "BATON_PROJECT";
/// baton's user configuration directory (default: `$XDG_CONFIG_HOME/baton`, else `~/.config/baton`).
pub const BATON_CONFIG_DIR: &str = "BATON_CONFIG_DIR";
/// The XDG configuration base directory.
pub const XDG_CONFIG_HOME: &str = "XDG_CONFIG_HOME";
/// The web board's access token (`baton serve`); generated when unset.
pub const BATON_SERVE_TOKEN: &str = "BATON_SERVE_TOKEN";
/// The home directory.
pub const HOME: &str = "HOME";

/// baton's user configuration directory, if one can be named.
pub fn config_dir() -> Option<std::path::PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(d) = var(BATON_CONFIG_DIR) {
        return Some(d.into());
    }
    if let Some(d) = var(XDG_CONFIG_HOME) {
        return Some(std::path::PathBuf::from(d).join("baton"));
    }
    var(HOME).map(|h| std::path::PathBuf::from(h).join(".config").join("baton"))
}
