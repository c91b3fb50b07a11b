//! `baton set KEY STATUS`: one validated, journaled transition.

use crate::cli::SetArgs;
use crate::commands::Code;
use anyhow::{Result, bail};
use baton_core::actor::Actor;
use baton_core::status::{Status, StatusValue};
use baton_store::ledger::{LedgerError, Now, Request};
use std::path::Path;

/// Runs `baton set`.
pub fn run(root: &Path, args: &SetArgs) -> Result<Code> {
    let Some(to) = Status::parse(&args.status) else {
        let names: Vec<&str> = Status::ALL.iter().map(|s| s.as_str()).collect();
        bail!(
            "unknown status `{}`; use one of: {}",
            args.status,
            names.join(", ")
        );
    };
    let cfg = crate::project::config(root)?;
    refuse_linked_sprint_file(&cfg.sprint_status)?;
    let mut ledger = crate::project::ledger(&cfg)?;
    let req = Request {
        key: args.key.clone(),
        to,
        actor: Actor::Human,
        reason: args.reason.clone().unwrap_or_default(),
        note: args.note.clone(),
        force: args.force,
        run_id: None,
    };
    let applied = match ledger.transition(&req, &Now::system()) {
        Ok(a) => a,
        Err(LedgerError::Refused { key, refusal }) => {
            let hint = if matches!(refusal, baton_core::transition::Refusal::Illegal { .. })
                && !args.force
            {
                "\nhint: `--force` overrides the table; the change is journaled as forced"
            } else {
                ""
            };
            bail!("cannot move `{key}`: {refusal}{hint}")
        }
        Err(e) => return Err(e.into()),
    };
    if let Some(w) = story_file_ahead(&cfg.stories, ledger.doc().sprint(), &args.key) {
        eprintln!("warning: {w}");
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&applied)?);
        return Ok(Code::Ok);
    }
    if applied.is_empty() {
        println!("`{}` is already {}; nothing to do", args.key, to);
    }
    for a in &applied {
        let forced = if a.forced { " (forced)" } else { "" };
        let who = if a.actor == Actor::Human.as_str() {
            String::new()
        } else {
            format!(" [{}]", a.actor)
        };
        println!("{}: {} → {}{forced}{who}", a.key, a.from, a.to);
    }
    Ok(Code::Ok)
}

/// A sentence when the story file of `key` states a status ahead of the sprint file's, which
/// the transition left as it was (a story file is never lowered silently).
fn story_file_ahead(stories: &Path, sprint: &baton_core::Sprint, key: &str) -> Option<String> {
    let entry = sprint.get(key)?;
    let kind = entry.key.kind();
    let path = baton_store::story_file::find(stories, key)?;
    let story = baton_store::story_file::read_status_at(&path).ok()??;
    let rank = |v: &str| StatusValue::parse(v, kind).0.known()?.rank(kind);
    let (s, f) = (rank(&story.value)?, rank(entry.raw.as_deref()?)?);
    (s > f).then(|| {
        format!(
            "the story file `{}` says `{}`, ahead of the sprint file; it was left as it is",
            path.display(),
            story.value
        )
    })
}

/// A sprint file that is a symlink would be edited at its target, which may lie outside the
/// project (a repository can ship such a link): refuse, saying where it points.
fn refuse_linked_sprint_file(path: &Path) -> Result<()> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(path)
            .map(|t| t.display().to_string())
            .unwrap_or_else(|_| "an unreadable target".to_owned());
        bail!(
            "the sprint file `{}` is a symlink to `{target}`; baton does not edit a file through \
             a link, which could point outside the project. Replace the link with the file, or \
             set `[paths] sprint_status` in `baton.toml` to the real file",
            path.display()
        );
    }
    Ok(())
}
