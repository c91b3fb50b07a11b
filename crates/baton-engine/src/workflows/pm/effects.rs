//! A pass, and the effects of the PM's decisions on GitHub, each exactly once.
//!
//! Every effect is journaled (`begin_step` under the issue's unit, its idempotency key in the
//! detail) before it is sent and closed after. The key is the issue, the length of its history
//! when the pass read it, and the action's place in the decision: a rerun after a kill reads
//! the same state (the status comment is written last), decides the same actions, and gets the
//! same keys. Before a comment is posted, the issue's comments are searched for its key's
//! hidden marker; labels are added only when missing and removed only when present; a seat is
//! looked up before one is taken; a pull request is read before it is published. So an effect
//! that reached GitHub before the kill is found, not repeated, and none is retried blindly.

use super::facts::{self, Read, Trust};
use super::seats::{self, Seats};
use super::{IssueReport, PassReport, PmError, PmPass};
use crate::protocol::{EventBody, UnitKey};
use crate::run::Run;
use baton_core::pipeline::comments::{effect_marker, role_title};
use baton_core::pipeline::decide::{self, Action, Board, Ci, Review, Secs};
use baton_core::pipeline::status_comment::{self, State};
use baton_core::pipeline::{PM, Phase};
use baton_core::story::StepOutcome;
use baton_github::{Forge, ForgeError, Issue, ProjectField};
use std::sync::Arc;

const SKILLS: &[&str] = &["agent-pipeline"];

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

/// One pass over the open issues.
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
        .filter(|i| only.as_ref().is_none_or(|o| o.contains(&i.number)))
        .collect();
    issues.sort_by_key(|i| i.number);
    // Issues holding a seat that are gone (closed by hand) give it back.
    for holder in seats.holders() {
        if !open.iter().any(|i| i.number == holder)
            && !pass.dry_run
            && let Some(k) = seats.release(forge, holder).await?
        {
            report
                .notes
                .push(format!("seat {k} given back: #{holder} is no longer open"));
        }
    }
    let mut trust = Trust::default();
    for issue in issues {
        let lock = if pass.dry_run {
            None
        } else {
            match seats::lock(
                forge,
                &tree,
                issue.number,
                &run.id,
                jiff::Timestamp::from_second(now).unwrap_or(jiff::Timestamp::UNIX_EPOCH),
            )
            .await?
            {
                Some(l) => Some(l),
                None => {
                    report.issues.push(IssueReport {
                        number: issue.number,
                        title: issue.title.clone(),
                        from: "?".into(),
                        to: "?".into(),
                        did: Vec::new(),
                        waits: Some("another PM pass is working on it".into()),
                    });
                    continue;
                }
            }
        };
        let outcome = one(
            pass,
            run,
            &mut trust,
            &mut seats,
            project.as_ref(),
            issue,
            now,
            escalation_waiting,
        )
        .await;
        if let Some(l) = lock {
            seats::unlock(forge, l).await?;
        }
        match outcome {
            Ok((r, notes)) => {
                if r.to == Phase::AwaitingOwner.title() {
                    escalation_waiting = true;
                }
                report.notes.extend(notes);
                report.issues.push(r);
            }
            // An issue deleted or transferred mid-pass: say so and go on.
            Err(PmError::Forge(ForgeError::NotFound { call })) => report.notes.push(format!(
                "#{}: gone while the pass read it ({call}); skipped",
                issue.number
            )),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The PM's own comment: header, text, the effect's marker, the footer.
fn pm_comment(pass: &PmPass, to: &str, text: &str, key: &str) -> String {
    format!(
        "[{PM} → {to}] {text}\n\n{}{}",
        effect_marker(key),
        pass.pipeline.footer("product-manager", SKILLS)
    )
}

struct Ctx<'a> {
    pass: &'a PmPass,
    project: Option<&'a ProjectField>,
    node: String,
    run: &'a Arc<Run>,
    unit: UnitKey,
    read: Read,
    number: u64,
    labels: Vec<String>,
    now: Secs,
    notes: Vec<String>,
}

impl Ctx<'_> {
    fn forge(&self) -> &dyn Forge {
        self.pass.forge.as_ref()
    }

    /// Journals the start of an effect; notes when an earlier pass began it and never closed it.
    fn begin(&mut self, key: &str, what: &str) -> Result<i64, PmError> {
        let detail = serde_json::json!({ "key": key, "effect": what }).to_string();
        let unit = self.unit.journal_key();
        let interrupted = self.run.with_journal(|j| {
            Ok(j.steps_for_key(&unit)?.iter().any(|s| {
                s.ended_at.is_none()
                    && s.detail
                        .as_deref()
                        .is_some_and(|d| d.contains(&format!("\"key\":\"{key}\"")))
            }))
        })?;
        if interrupted {
            self.notes.push(format!(
                "#{}: `{what}` was begun by a pass that was stopped; checked GitHub for it first",
                self.number
            ));
        }
        Ok(self
            .run
            .begin_step(&self.unit, &format!("pm:{what}"), 0, Some(detail))?)
    }

    fn end(&self, id: i64, done: &str) -> Result<(), PmError> {
        let detail = serde_json::json!({ "result": done }).to_string();
        Ok(self
            .run
            .end_step(id, StepOutcome::Completed, Some(detail))?)
    }

    async fn add_label(&mut self, label: &str) -> Result<(), PmError> {
        if self.labels.iter().any(|l| l == label) {
            return Ok(());
        }
        let labels = self
            .forge()
            .add_labels(self.number, &[label.to_owned()])
            .await?;
        self.labels = labels.into_iter().map(|l| l.name).collect();
        Ok(())
    }

    async fn remove_label(&mut self, label: &str) -> Result<(), PmError> {
        if !self.labels.iter().any(|l| l == label) {
            return Ok(());
        }
        match self.forge().remove_label(self.number, label).await {
            Ok(labels) => self.labels = labels.into_iter().map(|l| l.name).collect(),
            Err(ForgeError::NotFound { .. }) => self.labels.retain(|l| l != label),
            Err(e) => return Err(e.into()),
        }
        Ok(())
    }

    async fn comment_once(&mut self, key: &str, body: &str) -> Result<bool, PmError> {
        let marker = effect_marker(key);
        if self.read.comments.iter().any(|c| c.body.contains(&marker)) {
            return Ok(false);
        }
        let c = self.forge().create_comment(self.number, body).await?;
        self.read.comments.push(c);
        Ok(true)
    }
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
    let read = facts::read(forge, p, trust, issue.number, &issue.labels).await?;
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
            did.push(format!("would {}", describe(action)));
            continue;
        }
        match apply(&mut cx, &mut state, seats, action, &key).await? {
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
        tidy_labels(&mut cx, &state).await?;
        write_status(&mut cx, &state).await?;
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

fn describe(a: &Action) -> String {
    match a {
        Action::Move(p) => format!("move to {p}"),
        Action::Assign(r) => format!("assign `agent/{r}`"),
        Action::TakeSeat => "take an implementation seat".into(),
        Action::ReleaseSeat => "give back its seat".into(),
        Action::RoundTrip => "count a round trip".into(),
        Action::ResetRoundTrips => "reset the round trips".into(),
        Action::AskedBy(Some(r)) => format!("route the answer back to {r}"),
        Action::AskedBy(None) => "close the question".into(),
        Action::Ping(r) => format!("ping {r} and start it again"),
        Action::RemindOwner => "remind the owner".into(),
        Action::Escalate(why) => format!("escalate to the owner: {why}"),
        Action::Publish => "publish the pull request (ready for review, auto-merge)".into(),
        Action::Wait(why) => format!("wait: {why}"),
    }
}

enum Applied {
    Did(String),
    Quiet,
    Stop(String),
}

async fn apply(
    cx: &mut Ctx<'_>,
    state: &mut State,
    seats: &mut Seats,
    action: &Action,
    key: &str,
) -> Result<Applied, PmError> {
    let now = cx.now;
    let p = &cx.pass.pipeline;
    let owner = p.owner.clone();
    Ok(match action {
        Action::Move(to) => {
            let id = cx.begin(key, "move")?;
            let from = state.phase();
            let stale: Vec<String> = cx
                .labels
                .iter()
                .filter(|l| l.starts_with("status/") && **l != to.label())
                .cloned()
                .collect();
            cx.add_label(&to.label()).await?;
            for l in stale {
                cx.remove_label(&l).await?;
            }
            if let Some(field) = cx.project {
                match field
                    .options
                    .iter()
                    .find(|(_, name)| name.eq_ignore_ascii_case(to.title()))
                {
                    Some((option, _)) => {
                        cx.forge()
                            .set_project_field(field, &cx.node, option)
                            .await?;
                    }
                    None => cx.notes.push(format!(
                        "#{}: the project's field has no option `{}`; add it to mirror the phase",
                        cx.number,
                        to.title()
                    )),
                }
            }
            if *to == Phase::AwaitingOwner {
                if state.awaiting.is_none() {
                    let left = from.unwrap_or(Phase::Triage);
                    state.awaiting = Some((now, left.label()));
                }
            } else {
                state.awaiting = None;
                state.last_reminder = None;
            }
            if matches!(
                to,
                Phase::Done
                    | Phase::AwaitingOwner
                    | Phase::Ready
                    | Phase::CiPending
                    | Phase::ReadyToMerge
            ) {
                // Nobody works on it in these phases.
                for role in p.roles.all() {
                    cx.remove_label(&format!("agent/{role}")).await?;
                }
                state.assigned = None;
            }
            state.phase = to.label();
            let text = format!(
                "{} → {to}",
                from.map_or("?".to_owned(), |f| f.title().to_owned())
            );
            state.record(now, text.clone());
            cx.end(id, "moved")?;
            Applied::Did(text)
        }
        Action::Assign(role) => {
            let id = cx.begin(key, "assign")?;
            for other in p.roles.all().iter().filter(|r| *r != role) {
                cx.remove_label(&format!("agent/{other}")).await?;
            }
            cx.add_label(&format!("agent/{role}")).await?;
            state.assigned = Some((role.clone(), now));
            state.last_ping = None;
            let text = format!("`agent/{role}` assigned");
            state.record(now, text.clone());
            cx.end(id, "assigned")?;
            Applied::Did(text)
        }
        Action::TakeSeat => {
            let id = cx.begin(key, "take-seat")?;
            let taken = seats.take(cx.forge(), cx.number).await?;
            cx.end(
                id,
                if taken.is_some() {
                    "taken"
                } else {
                    "none free"
                },
            )?;
            match taken {
                Some(k) => {
                    cx.run.emit_unit(
                        &cx.unit,
                        EventBody::PmSeatTaken {
                            issue: cx.number,
                            seat: k,
                        },
                    );
                    let text = format!("took implementation seat {k} of {}", p.seats);
                    state.record(now, text.clone());
                    Applied::Did(text)
                }
                None => Applied::Stop("every implementation seat is taken".into()),
            }
        }
        Action::ReleaseSeat => {
            let id = cx.begin(key, "release-seat")?;
            let k = seats.release(cx.forge(), cx.number).await?;
            cx.end(id, "released")?;
            match k {
                Some(k) => {
                    cx.run.emit_unit(
                        &cx.unit,
                        EventBody::PmSeatReleased {
                            issue: cx.number,
                            seat: k,
                        },
                    );
                    let text = format!("gave back implementation seat {k}");
                    state.record(now, text.clone());
                    Applied::Did(text)
                }
                None => Applied::Quiet,
            }
        }
        Action::RoundTrip => {
            state.round_trips += 1;
            Applied::Did(format!(
                "round trip {}/{}",
                state.round_trips, p.limits.round_trips
            ))
        }
        Action::ResetRoundTrips => {
            state.round_trips = 0;
            Applied::Quiet
        }
        Action::AskedBy(who) => {
            state.asked_by = who.clone();
            Applied::Quiet
        }
        Action::Ping(role) => {
            let id = cx.begin(key, "ping")?;
            let since = state
                .last_ping
                .or(state.assigned.as_ref().map(|(_, at)| *at))
                .unwrap_or(now);
            let hours = (now - since) / 3600;
            let body = pm_comment(
                cx.pass,
                &role_title(role),
                &format!(
                    "No word on this issue for {hours} h since it was assigned to you; starting your turn again."
                ),
                key,
            );
            cx.comment_once(key, &body).await?;
            // Re-trigger: the label's `labeled` event starts the agent's workflow again.
            let label = format!("agent/{role}");
            cx.remove_label(&label).await?;
            cx.add_label(&label).await?;
            state.last_ping = Some(now);
            let text = format!("pinged {} after {hours} h of silence", role_title(role));
            state.record(now, text.clone());
            cx.end(id, "pinged")?;
            Applied::Did(text)
        }
        Action::RemindOwner => {
            let id = cx.begin(key, "remind")?;
            let since = state.awaiting.as_ref().map_or(now, |(s, _)| *s);
            let body = pm_comment(
                cx.pass,
                &format!("@{owner}"),
                &format!(
                    "Reminder: this issue has waited for your decision for {} h. Reply here and the PM picks it up again.",
                    (now - since) / 3600
                ),
                key,
            );
            cx.comment_once(key, &body).await?;
            state.last_reminder = Some(now);
            let text = format!("reminded @{owner}");
            state.record(now, text.clone());
            cx.end(id, "reminded")?;
            Applied::Did(text)
        }
        Action::Escalate(why) => {
            let id = cx.begin(key, "escalate")?;
            let body = pm_comment(
                cx.pass,
                &format!("@{owner}"),
                &format!(
                    "{why}; this needs your decision. Reply on this issue and the PM picks it up again."
                ),
                key,
            );
            cx.comment_once(key, &body).await?;
            let text = format!("escalated to @{owner}: {why}");
            state.record(now, text.clone());
            cx.end(id, "escalated")?;
            Applied::Did(text)
        }
        Action::Publish => {
            let Some(pull) = cx.read.pull.clone() else {
                return Ok(Applied::Stop("no pull request to publish".into()));
            };
            // Decided in code, checked again here: green CI, an approved review, not merged.
            let pr = cx.read.issue.pr;
            if !pr.is_some_and(|p| {
                p.ci == Ci::Green && p.review == Review::Approved && !p.merged && !p.closed
            }) {
                return Ok(Applied::Stop(
                    "not publishable: CI must be green and the review approved".into(),
                ));
            }
            let id = cx.begin(key, "publish")?;
            let fresh = cx.forge().get_pull(pull.number).await?;
            if fresh.draft {
                cx.forge().mark_ready_for_review(&fresh).await?;
            }
            if fresh.auto_merge.is_none() && !fresh.is_merged() {
                cx.forge().enable_auto_merge(&fresh, p.merge).await?;
            }
            let text = format!(
                "published #{} (ready for review, auto-merge on)",
                pull.number
            );
            state.record(now, text.clone());
            cx.end(id, "published")?;
            Applied::Did(text)
        }
        Action::Wait(_) => Applied::Quiet,
    })
}

/// Leaves exactly the state's `status/*` label: a label a person removed while a pass removed
/// it too, or one a stopped pass left beside the new one, is settled here.
async fn tidy_labels(cx: &mut Ctx<'_>, state: &State) -> Result<(), PmError> {
    let Some(phase) = state.phase() else {
        return Ok(());
    };
    let stale: Vec<String> = cx
        .labels
        .iter()
        .filter(|l| l.starts_with("status/") && **l != phase.label() && Phase::parse(l).is_some())
        .cloned()
        .collect();
    cx.add_label(&phase.label()).await?;
    for l in stale {
        cx.remove_label(&l).await?;
    }
    Ok(())
}

/// Writes the status comment (once; edited in place after), and removes duplicates.
async fn write_status(cx: &mut Ctx<'_>, state: &State) -> Result<(), PmError> {
    let body = status_comment::render(state, &cx.pass.pipeline.footer("product-manager", SKILLS));
    let forge = cx.pass.forge.clone();
    match cx.read.status {
        Some(id) => {
            let same = cx
                .read
                .comments
                .iter()
                .any(|c| c.id == id && c.body == body);
            if !same {
                match forge.edit_comment(id, &body).await {
                    Ok(_) => {}
                    // Deleted by a person meanwhile: write it again.
                    Err(ForgeError::NotFound { .. }) => {
                        forge.create_comment(cx.number, &body).await?;
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        }
        None => {
            forge.create_comment(cx.number, &body).await?;
        }
    }
    for id in cx.read.duplicates.clone() {
        match forge.delete_comment(id).await {
            Ok(()) | Err(ForgeError::NotFound { .. }) => {
                cx.notes.push(format!(
                    "#{}: removed a second status comment ({id})",
                    cx.number
                ));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
