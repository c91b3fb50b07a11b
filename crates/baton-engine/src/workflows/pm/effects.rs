//! The effects of the PM's decisions on GitHub, each exactly once.
//!
//! Every effect is journaled (`begin_step` under the issue's unit, its idempotency key in the
//! detail) before it is sent and closed after. The key is the issue, the length of its history
//! when the pass read it, and the action's place in the decision: a rerun after a kill reads
//! the same state (the status comment is written last), decides the same actions, and gets the
//! same keys. Before a comment is posted, the issue's comments are searched for its key's
//! hidden marker; labels are added only when missing and removed only when present; a seat is
//! looked up before one is taken; a pull request is read before it is published. So an effect
//! that reached GitHub before the kill is found, not repeated, and none is retried blindly.

use super::PmPass;
use super::facts::Read;
use super::seats::Seats;
use crate::protocol::{EventBody, UnitKey};
use crate::run::Run;
use baton_core::pipeline::comments::{effect_marker, role_title};
use baton_core::pipeline::decide::{Action, Ci, Review, Secs};
use baton_core::pipeline::status_comment::{self, State};
use baton_core::pipeline::{PM, Phase};
use baton_core::story::StepOutcome;
use baton_github::{Forge, ForgeError, ProjectField};
use std::sync::Arc;

use super::PmError;

pub(super) const SKILLS: &[&str] = &["agent-pipeline"];

/// The PM's own comment: header, text, the effect's marker, the footer.
fn pm_comment(pass: &PmPass, to: &str, text: &str, key: &str) -> String {
    format!(
        "[{PM} → {to}] {text}\n\n{}{}",
        effect_marker(key),
        pass.pipeline.footer("product-manager", SKILLS)
    )
}

pub(super) struct Ctx<'a> {
    pub(super) pass: &'a PmPass,
    pub(super) project: Option<&'a ProjectField>,
    pub(super) node: String,
    pub(super) run: &'a Arc<Run>,
    pub(super) unit: UnitKey,
    pub(super) read: Read,
    pub(super) number: u64,
    pub(super) labels: Vec<String>,
    pub(super) now: Secs,
    pub(super) notes: Vec<String>,
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

pub(super) fn describe(a: &Action) -> String {
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

pub(super) enum Applied {
    Did(String),
    Quiet,
    Stop(String),
}

pub(super) async fn apply(
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
pub(super) async fn tidy_labels(cx: &mut Ctx<'_>, state: &State) -> Result<(), PmError> {
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
pub(super) async fn write_status(cx: &mut Ctx<'_>, state: &State) -> Result<(), PmError> {
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
