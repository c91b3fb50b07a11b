//! `baton.toml` in the binary: [`baton_config`] reads, checks, narrows and resolves it; this
//! module looks up the project's trust and says, once per process, what an untrusted project's
//! file did not get.

pub use baton_config::{Config, ConfigError, FILE_NAME, STATE_DIR, TEMPLATE};
use std::path::Path;

/// Loads `root/baton.toml` (defaults if absent) with the project's trust, reporting once on
/// stderr what an untrusted project asked for and did not get.
pub fn load(root: &Path) -> Result<Config, ConfigError> {
    let cfg = Config::load_as(root, crate::trust::is_trusted(root))?;
    register_secrets(&cfg);
    if let Some(warning) = cfg.ignored_warning() {
        warn_once(&warning);
    }
    Ok(cfg)
}

/// [`load`] without the warning, for `baton init`: it has just written the file and says itself
/// what applies only once the project is trusted.
pub fn load_quietly(root: &Path) -> Result<Config, ConfigError> {
    let cfg = Config::load_as(root, crate::trust::is_trusted(root))?;
    register_secrets(&cfg);
    Ok(cfg)
}

/// Registers every secret the configuration holds with the one mask
/// ([`baton_core::secrets`]): the value of every API key variable it names (providers', the
/// coding-agent CLIs', the GitHub token variables) and the credentials written into the
/// providers' and CLIs' `base_url`s, so that no terminal line, `--json` output, transcript,
/// stream file, journal record, event or board page shows them.
fn register_secrets(cfg: &Config) {
    let vars = cfg
        .providers
        .values()
        .filter_map(|p| p.api_key_env.clone())
        .chain(cfg.cli.values().filter_map(|c| c.api_key_env.clone()))
        .chain(baton_config::resolve::GITHUB_TOKENS.map(str::to_owned));
    let mut values: Vec<String> = vars.filter_map(|n| std::env::var(n).ok()).collect();
    let urls = cfg
        .providers
        .values()
        .filter_map(|p| p.base_url.as_deref())
        .chain(cfg.cli.values().filter_map(|c| c.base_url.as_deref()));
    for url in urls {
        values.extend(baton_core::secrets::in_url(url));
    }
    baton_core::secrets::register(values);
}

fn warn_once(warning: &str) {
    use std::sync::atomic::{AtomicBool, Ordering};
    static WARNED: AtomicBool = AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::Relaxed) {
        eprintln!("{warning}");
    }
}
