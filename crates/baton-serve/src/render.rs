//! The page templates (minijinja, HTML auto-escaped) and the script and style sheet, all embedded
//! in the binary: nothing is read from disk at run time and there is no build step.

use minijinja::Environment;
use serde::Serialize;

/// The board's script: plain `EventSource`, no framework.
pub const SCRIPT: &str = include_str!("../assets/board.js");
/// The board's style sheet.
pub const STYLE: &str = include_str!("../assets/board.css");

const TEMPLATES: [(&str, &str); 7] = [
    ("base.html", include_str!("../templates/base.html")),
    ("board.html", include_str!("../templates/board.html")),
    ("story.html", include_str!("../templates/story.html")),
    ("runs.html", include_str!("../templates/runs.html")),
    (
        "escalations.html",
        include_str!("../templates/escalations.html"),
    ),
    ("plan.html", include_str!("../templates/plan.html")),
    ("error.html", include_str!("../templates/error.html")),
];

/// The compiled templates.
pub struct Renderer {
    env: Environment<'static>,
}

impl std::fmt::Debug for Renderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Renderer").finish_non_exhaustive()
    }
}

/// What every page gets besides its own view.
#[derive(Debug, Serialize)]
pub struct Frame<'a, T: Serialize> {
    /// The page's view.
    pub page: &'a T,
    /// Which navigation entry is current.
    pub nav: &'a str,
    /// The page title.
    pub title: &'a str,
    /// The CSRF token forms carry.
    pub csrf: &'a str,
    /// Whether answering is off.
    pub read_only: bool,
    /// The journal number live updates follow from.
    pub seq: i64,
    /// A note to show at the top (an answer recorded).
    pub notice: Option<&'a str>,
}

impl Renderer {
    /// Compiles the embedded templates.
    pub fn new() -> Result<Renderer, minijinja::Error> {
        let mut env = Environment::new();
        for (name, source) in TEMPLATES {
            env.add_template(name, source)?;
        }
        Ok(Renderer { env })
    }

    /// Renders template `name` with `ctx`, through the one mask every front end prints
    /// through ([`baton_core::secrets::redact`]).
    pub fn render<T: Serialize>(&self, name: &str, ctx: &T) -> Result<String, minijinja::Error> {
        let html = self
            .env
            .get_template(name)?
            .render(minijinja::value::Serde(ctx))?;
        Ok(baton_core::secrets::redact(&html).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_compiles() {
        let r = Renderer::new().unwrap();
        for (name, _) in TEMPLATES {
            assert!(r.env.get_template(name).is_ok(), "{name}");
        }
    }
}
