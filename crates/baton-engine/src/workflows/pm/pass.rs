//! One pass of the Product Manager: the open issues, and the closed ones still carrying a
//! pipeline label short of Done (GitHub closes an issue when a pull request naming it with a
//! closing keyword merges, and leaves its labels on), each locked, then read, decided and
//! acted on.
//!
//! The list only says which issues to look at. Everything a decision uses about one issue
//! (its labels and state, comments, pull request, checks, reviews, the seats) is read after
//! its lock is taken, so a pass that stalled between its list and its lock never takes the
//! label it listed for a person's move and undoes what another pass did meanwhile.

use super::effects::{self, Applied, Ctx, SKILLS};
use super::facts::{self, Trust};
use super::seats::{self, Seats};
use super::{IssueReport, PassReport, PmError, PmPass};
use crate::protocol::{EventBody, UnitKey};
use crate::run::Run;
use baton_core::pipeline::Phase;
use baton_core::pipeline::comments::role_title;
use baton_core::pipeline::decide::{self, Action, Board, Secs};
use baton_core::pipeline::status_comment;
use baton_github::{ForgeError, Issue, ProjectField};
use std::sync::Arc;

/// Creates the labels the pipeline uses that the repository lacks; returns notes.
async fn ensure_labels(pass: &PmPass) -> Result<Vec<String>, ForgeError> {
    let have: Vec<String> = pass
        .forge
        .list_labels()
        .await?
        .into_iter()
        .map(|l| l.name.to_lowercase())
        .collect();
    let mut notes = Vec::new();
    for l in pass.pipeline.labels() {
        if have.contains(&l.name.to_lowercase()) {
            continue;
        }
        if pass.dry_run {
            notes.push(format!("would create the label `{}`", l.name));
            continue;
        }
        match pass.forge.create_label(&l).await {
            Ok(_) => notes.push(format!("created the label `{}`", l.name)),
            // Created meanwhile by another pass.
            Err(ForgeError::Rejected { status: 422, .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(notes)
}

/// The tree seat and lock commits are written with: the base branch's.
async fn base_tree(pass: &PmPass) -> Result<String, PmError> {
    let base = &pass.pipeline.base;
    let r = pass
        .forge
        .get_ref(&format!("heads/{base}"))
        .await
        .map_err(|e| match e {
            ForgeError::NotFound { .. } => PmError::Other(format!(
                "the base branch `{base}` does not exist on GitHub; set `[pipeline] base` in baton.toml"
            )),
            e => PmError::Forge(e),
        })?;
    Ok(pass.forge.get_commit(&r.object.sha).await?.tree.sha)
}

/// Whether `labels` hold a pipeline phase short of Done: a closed issue the pass still follows.
fn followed_when_closed(labels: &[String]) -> bool {
    facts::phase_of_labels(labels).is_some_and(|p| p != Phase::Done)
}

/// One pass over the open issues and the closed ones still in the pipeline.
pub async fn pass(pass: &PmPass, run: &Arc<Run>, report: &mut PassReport) -> Result<(), PmError> {
    let forge = pass.forge.as_ref();
    let mut only = pass.only.clone();
    if !pass.pulls.is_empty() {
        only.get_or_insert_with(Vec::new);
    }
    for n in &pass.pulls {
        let pull = forge.get_pull(*n).await?;
        match baton_core::pipeline::event::issue_of_branch(&pull.head.name) {
            Some(issue) => only.get_or_insert_with(Vec::new).push(issue),
            None => report.notes.push(format!(
                "pull request #{n} is not on a pipeline branch (`{}`); nothing to do for it",
                pull.head.name
            )),
        }
    }
    if only.as_ref().is_some_and(Vec::is_empty) {
        return Ok(());
    }
    let open = forge.list_open_issues().await?;
    // Closed with a phase label short of Done: merged (GitHub closed it) or closed by hand.
    let mut closed: Vec<Issue> = Vec::new();
    for phase in Phase::ALL.into_iter().filter(|p| *p != Phase::Done) {
        for i in forge.list_closed_issues(&phase.label()).await? {
            if !closed.iter().any(|c| c.number == i.number) && followed_when_closed(&i.labels) {
                closed.push(i);
            }
        }
    }
    let now = forge
        .server_time()
        .map_or_else(|| jiff::Timestamp::now().as_second(), |t| t.as_second());
    report.notes.extend(ensure_labels(pass).await?);
    let tree = base_tree(pass).await?;
    let project = match &pass.pipeline.project {
        Some((owner, number, field)) => Some(
            forge
                .project_field(owner, *number, field)
                .await
                .map_err(|e| match e {
                    ForgeError::NotFound { .. } => PmError::Other(format!(
                        "project {number} of {owner} has no single-select field `{field}`; check \
                         `[pipeline] project` and `project_field` in baton.toml"
                    )),
                    e => PmError::Forge(e),
                })?,
        ),
        None => None,
    };
    let mut seats = Seats::load(forge, pass.pipeline.seats, tree.clone()).await?;
    let in_pipeline = |i: &Issue| match &pass.pipeline.intake_label {
        Some(l) => i.labels.iter().any(|x| x == l) || facts::phase_of_labels(&i.labels).is_some(),
        None => true,
    };
    let mut escalation_waiting = open
        .iter()
        .any(|i| in_pipeline(i) && facts::phase_of_labels(&i.labels) == Some(Phase::AwaitingOwner));
    let mut issues: Vec<&Issue> = open
        .iter()
        .filter(|i| in_pipeline(i))
        .chain(closed.iter())
        .filter(|i| only.as_ref().is_none_or(|o| o.contains(&i.number)))
        .collect();
    issues.sort_by_key(|i| i.number);
    // Issues holding a seat that are gone (deleted, transferred, or closed out of the
    // pipeline) give it back; a followed closed issue gives it back in its own history.
    for holder in seats.holders() {
        if !open.iter().any(|i| i.number == holder)
            && !closed.iter().any(|i| i.number == holder)
            && !pass.dry_run
            && let Some(k) = seats.release(forge, holder).await?
        {
            report
                .notes
                .push(format!("seat {k} given back: #{holder} is no longer open"));
        }
    }
    let mut trust = Trust::default();
    for listed in issues {
        let lock = if pass.dry_run {
            None
        } else {
            match seats::lock(
                forge,
                &tree,
                listed.number,
                &run.id,
                jiff::Timestamp::from_second(now).unwrap_or(jiff::Timestamp::UNIX_EPOCH),
            )
            .await?
            {
                Some(l) => Some(l),
                None => {
                    report.issues.push(IssueReport {
                        number: listed.number,
                        title: listed.title.clone(),
                        from: "?".into(),
                        to: "?".into(),
                        did: Vec::new(),
                        waits: Some("another PM pass is working on it".into()),
                    });
                    continue;
                }
            }
        };
        let outcome = locked(
            pass,
            run,
            &mut trust,
            &mut seats,
            project.as_ref(),
            listed.number,
            now,
            escalation_waiting,
        )
        .await;
        if let Some(l) = lock {
            seats::unlock(forge, l).await?;
        }
        match outcome {
            Ok(None) => {}
            Ok(Some((r, notes, open))) => {
                if open && r.to == Phase::AwaitingOwner.title() {
                    escalation_waiting = true;
                }
                report.notes.extend(notes);
                report.issues.push(r);
            }
            // An issue deleted or transferred mid-pass: say so and go on.
            Err(PmError::Forge(ForgeError::NotFound { call })) => report.notes.push(format!(
                "#{}: gone while the pass read it ({call}); skipped",
                listed.number
            )),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// With the issue locked: reads it afresh (labels, state, seats) and, when it is still the
/// pipeline's, decides and acts. `None` when it left the pipeline since the list; with the
/// report, whether the issue is open.
#[allow(clippy::too_many_arguments)]
async fn locked(
    pass: &PmPass,
    run: &Arc<Run>,
    trust: &mut Trust,
    seats: &mut Seats,
    project: Option<&ProjectField>,
    number: u64,
    now: Secs,
    escalation_waiting: bool,
) -> Result<Option<(IssueReport, Vec<String>, bool)>, PmError> {
    let forge = pass.forge.as_ref();
    let issue = forge.get_issue(number).await?;
    let open = issue.state != "closed";
    let still = if open {
        match &pass.pipeline.intake_label {
            Some(l) => {
                issue.labels.iter().any(|x| x == l)
                    || facts::phase_of_labels(&issue.labels).is_some()
            }
            None => true,
        }
    } else {
        followed_when_closed(&issue.labels)
    };
    if !still || issue.pull_request.is_some() {
        return Ok(None);
    }
    seats.reload(forge).await?;
    let (r, notes) = one(
        pass,
        run,
        trust,
        seats,
        project,
        &issue,
        now,
        escalation_waiting,
    )
    .await?;
    Ok(Some((r, notes, open)))
}

/// Reads, decides and acts on one issue.
#[allow(clippy::too_many_arguments)]
async fn one(
    pass: &PmPass,
    run: &Arc<Run>,
    trust: &mut Trust,
    seats: &mut Seats,
    project: Option<&ProjectField>,
    issue: &Issue,
    now: Secs,
    escalation_waiting: bool,
) -> Result<(IssueReport, Vec<String>), PmError> {
    let forge = pass.forge.as_ref();
    let p = &pass.pipeline;
    let read = facts::read(forge, p, trust, issue).await?;
    let board = Board {
        seat_free: seats.may_take(issue.number),
        escalation_waiting,
    };
    let actions = decide::decide(&read.issue, board, &p.roles, p.limits, now);
    let from = read.issue.phase;
    let mut cx = Ctx {
        pass,
        project,
        node: issue.node_id.clone(),
        run,
        unit: UnitKey::Issue(issue.number),
        number: issue.number,
        labels: issue.labels.clone(),
        now,
        notes: read
            .ignored
            .iter()
            .map(|i| format!("#{}: ignored {i}", issue.number))
            .collect(),
        read,
    };
    let mut state = cx.read.state.clone();
    let base = state.history.len();
    // An issue new to the pipeline gets its status comment before any effect: a pass stopped
    // half way then leaves the phase it started from, not only labels to guess it from.
    if cx.read.status.is_none() && !pass.dry_run {
        let body = status_comment::render(&state, &p.footer("product-manager", SKILLS));
        let c = forge.create_comment(issue.number, &body).await?;
        // Found again by its author on the next pass: it must be the account `login` names.
        let author = c.user.as_ref().map(|u| u.login.clone()).unwrap_or_default();
        if author != p.login {
            let _ = forge.delete_comment(c.id).await;
            return Err(PmError::Other(format!(
                "the token posts as `{author}`, but `[pipeline] login` is `{}`: set \
                 `login = \"{author}\"` under [pipeline] in baton.toml, or the PM would not \
                 find its status comments again",
                p.login
            )));
        }
        cx.read.status = Some(c.id);
        cx.read.comments.push(c);
    }
    // The handback and everything before it are now acted on; the agent that handed back is done.
    if let Some(h) = &cx.read.issue.handback {
        if state.assigned.as_ref().is_some_and(|(r, _)| *r == h.from) {
            state.assigned = None;
        }
        state.record(
            now,
            format!(
                "{} handed back{}",
                role_title(&h.from),
                if h.blocked { ", blocked" } else { "" }
            ),
        );
    }
    if cx.read.issue.owner_replied {
        state.record(now, "the owner replied");
    }
    state.seen = state.seen.max(cx.read.newest);
    let mut did = Vec::new();
    let mut waits = None;
    if let Some(why) = &cx.read.rebuilt {
        did.push(format!(
            "rebuilt the state: the status comment did not read ({why})"
        ));
    }
    for (i, action) in actions.iter().enumerate() {
        let key = format!("#{}/{base}/{i}", issue.number);
        if pass.dry_run {
            did.push(format!("would {}", effects::describe(action)));
            continue;
        }
        match effects::apply(&mut cx, &mut state, seats, action, &key).await? {
            Applied::Did(text) => {
                cx.run.emit_unit(
                    &cx.unit,
                    EventBody::PmEffectApplied {
                        issue: cx.number,
                        effect: text.clone(),
                    },
                );
                did.push(text);
            }
            Applied::Quiet => {}
            Applied::Stop(why) => {
                waits = Some(why);
                break;
            }
        }
        if let Action::Wait(why) = action {
            waits = Some(why.clone());
        }
    }
    if !pass.dry_run {
        effects::tidy_labels(&mut cx, &state).await?;
        effects::write_status(&mut cx, &state).await?;
    }
    let to = state.phase().unwrap_or(from);
    Ok((
        IssueReport {
            number: issue.number,
            title: issue.title.clone(),
            from: from.title().to_owned(),
            to: to.title().to_owned(),
            did,
            waits,
        },
        cx.notes,
    ))
}
