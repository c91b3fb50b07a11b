//! What one pass reads of an issue: its status comment (or, when that is missing or
//! unreadable, a state rebuilt from the labels), the comments since the last pass from authors
//! allowed to route work, the handback, question or escalation they hold, and the issue's pull
//! request with its checks. The result is [`decide::Issue`], the pure decision's input, and the
//! state the PM keeps.
//!
//! Trust: a comment routes work only when its author may write to the repository (the
//! account the PM and the agents post as, an `OWNER` or `MEMBER`, or a user GitHub reports
//! with write permission). Everything else is read as nothing: text is never an instruction.

use super::Pipeline;
use baton_core::pipeline::comments::{footer_agent, role_named, verdict};
use baton_core::pipeline::decide::{self, Ci, Handback, Pr, Review, Secs};
use baton_core::pipeline::status_comment::{self, Pick, State};
use baton_core::pipeline::{Phase, To, parse_header};
use baton_github::{CheckRun, Comment, Forge, ForgeError, PullRequest};
use std::collections::BTreeMap;

pub use baton_core::pipeline::event::branch_of_issue as branch_of;

/// Who may route work, asked of GitHub once per author per pass.
#[derive(Default)]
pub struct Trust {
    known: BTreeMap<String, bool>,
}

impl Trust {
    /// Whether `c`'s author may route work.
    pub async fn routes(&mut self, forge: &dyn Forge, p: &Pipeline, c: &Comment) -> bool {
        let Some(login) = c.user.as_ref().map(|u| u.login.clone()) else {
            return false;
        };
        if login == p.login || matches!(c.author_association.as_str(), "OWNER" | "MEMBER") {
            return true;
        }
        if let Some(known) = self.known.get(&login) {
            return *known;
        }
        let can = match forge.collaborator_permission(&login).await {
            Ok(perm) => perm.can_write(),
            Err(_) => false,
        };
        self.known.insert(login, can);
        can
    }
}

/// An issue as a pass read it.
pub struct Read {
    /// The PM's state for it.
    pub state: State,
    /// Its status comment, and status comments to remove.
    pub status: Option<u64>,
    /// Duplicate status comments (two passes that raced before locks existed, or a copy).
    pub duplicates: Vec<u64>,
    /// Why the state had to be rebuilt, when it did.
    pub rebuilt: Option<String>,
    /// The decision's input.
    pub issue: decide::Issue,
    /// Its comments, oldest first.
    pub comments: Vec<Comment>,
    /// Its pull request.
    pub pull: Option<PullRequest>,
    /// Comments that were ignored, and why.
    pub ignored: Vec<String>,
    /// The newest comment read.
    pub newest: u64,
}

fn secs(t: jiff::Timestamp) -> Secs {
    t.as_second()
}

/// Comments as [`status_comment::pick`] takes them: `(id, author, body)`.
pub fn triples(comments: &[Comment]) -> Vec<(u64, &str, &str)> {
    comments
        .iter()
        .map(|c| {
            (
                c.id,
                c.user.as_ref().map_or("", |u| u.login.as_str()),
                c.body.as_str(),
            )
        })
        .collect()
}

/// The phase a set of labels names, when exactly one `status/*` label does.
pub fn phase_of_labels(labels: &[String]) -> Option<Phase> {
    let mut phases = labels
        .iter()
        .filter(|l| l.starts_with("status/"))
        .filter_map(|l| Phase::parse(l));
    let first = phases.next()?;
    phases.next().is_none().then_some(first)
}

/// The state of a pull request's checks: the newest run of each check counts (a re-run
/// replaces the one before).
pub fn ci_of(runs: &[CheckRun]) -> Ci {
    if runs.is_empty() {
        return Ci::Pending;
    }
    let mut newest: BTreeMap<&str, &CheckRun> = BTreeMap::new();
    for r in runs {
        let e = newest.entry(r.name.as_str()).or_insert(r);
        if r.id > e.id {
            *e = r;
        }
    }
    let mut pending = false;
    for r in newest.values() {
        match (r.status.as_str(), r.conclusion.as_deref()) {
            ("completed", Some("success" | "neutral" | "skipped")) => {}
            ("completed", _) => return Ci::Red,
            _ => pending = true,
        }
    }
    if pending { Ci::Pending } else { Ci::Green }
}

/// Whether an owner's reply says the issue is done: its first word is "done", in any case
/// ("Done.", "done — shipped by hand").
pub fn says_done(text: &str) -> bool {
    text.split_whitespace()
        .next()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .is_some_and(|w| w.eq_ignore_ascii_case("done"))
}

/// Reads `issue` for a pass: its labels and state as GitHub answered after the lock was
/// taken, its comments, pull request, checks and reviews read here.
pub async fn read(
    forge: &dyn Forge,
    p: &Pipeline,
    trust: &mut Trust,
    issue: &baton_github::Issue,
) -> Result<Read, ForgeError> {
    let number = issue.number;
    let labels = &issue.labels;
    let comments = forge.list_comments(number).await?;
    let triples = triples(&comments);
    let labelled = phase_of_labels(labels);
    let (mut state, status, duplicates, mut rebuilt) =
        match status_comment::pick(&triples, &p.login) {
            Pick::None => (
                State::new(labelled.unwrap_or(Phase::Triage)),
                None,
                Vec::new(),
                None,
            ),
            Pick::One { keep, extra } => {
                let body = comments
                    .iter()
                    .find(|c| c.id == keep)
                    .map_or("", |c| c.body.as_str());
                match status_comment::parse(body) {
                    Ok(s) => (s, Some(keep), extra, None),
                    Err(e) => {
                        let mut s = State::new(labelled.unwrap_or(Phase::Triage));
                        // Comments before the broken one were acted on when it was written.
                        s.seen = keep;
                        (s, Some(keep), extra, Some(e.to_string()))
                    }
                }
            }
        };
    if let Some(why) = &rebuilt {
        let at = comments.last().map_or(0, |c| secs(c.updated_at));
        state.record(
            at,
            format!(
                "the status comment did not read ({why}); its state was rebuilt from the labels"
            ),
        );
    }
    // A person who moved the `status/*` label moved the issue.
    if let Some(l) = labelled
        && state.phase() != Some(l)
        && rebuilt.is_none()
    {
        let at = comments.last().map_or(0, |c| secs(c.updated_at));
        state.record(
            at,
            format!(
                "the label `{}` moved it from {} to {l}",
                l.label(),
                state.phase().map_or("?".to_owned(), |p| p.to_string())
            ),
        );
        if l != Phase::AwaitingOwner {
            state.awaiting = None;
        }
        state.phase = l.label();
        rebuilt = None;
    }
    let roles = p.roles.all();
    let mut ignored = Vec::new();
    let mut handback: Option<Handback> = None;
    let mut handback_text = String::new();
    let mut asks: Option<String> = None;
    let mut owner_replied = false;
    let mut owner_says_done = false;
    let mut last_agent: Option<Secs> = None;
    let assigned_role = state.assigned.as_ref().map(|(r, _)| r.clone());
    let awaiting_since = state.awaiting.as_ref().map(|(s, _)| *s);
    let mut newest = state.seen;
    for c in &comments {
        if status_comment::is_status(&c.body) {
            continue;
        }
        let new = c.id > state.seen;
        let header = parse_header(&c.body);
        let by_agent = footer_agent(&c.body).filter(|a| roles.iter().any(|r| r == a));
        if !trust.routes(forge, p, c).await {
            if new {
                ignored.push(format!(
                    "comment {} by {}: the author may not write to the repository",
                    c.id,
                    c.user.as_ref().map_or("?", |u| u.login.as_str())
                ));
            }
            continue;
        }
        if let (Some(role), Some(a)) = (&assigned_role, by_agent)
            && a == role
        {
            last_agent = Some(last_agent.map_or(secs(c.created_at), |l| l.max(secs(c.created_at))));
        }
        if !new {
            continue;
        }
        newest = newest.max(c.id);
        let Some(h) = header else {
            // Plain text from a person: in Awaiting Owner, the owner's answer.
            let login = c.user.as_ref().map_or("", |u| u.login.as_str());
            if by_agent.is_none()
                && login != p.login
                && (login.eq_ignore_ascii_case(&p.owner) || c.author_association == "OWNER")
                && awaiting_since.is_some_and(|s| secs(c.created_at) >= s)
            {
                owner_replied = true;
                owner_says_done = says_done(&c.body);
            }
            continue;
        };
        let from_role = by_agent
            .map(str::to_owned)
            .or_else(|| role_named(&h.from, &roles).map(str::to_owned));
        let Some(from) = from_role else {
            // The owner answering in the format, or the PM's own comment.
            let login = c.user.as_ref().map_or("", |u| u.login.as_str());
            if login.eq_ignore_ascii_case(&p.owner) && awaiting_since.is_some() {
                owner_replied = true;
                owner_says_done = says_done(&h.text);
            }
            continue;
        };
        match &h.to {
            Some(To::Pm) => {
                handback = Some(Handback {
                    from: from.clone(),
                    asks: asks.take(),
                    blocked: baton_core::pipeline::says_blocked(&h.text),
                });
                handback_text = c.body.clone();
            }
            Some(To::Agent(other)) => {
                asks = role_named(other, &roles).map(str::to_owned);
            }
            Some(To::Owner(_)) => {
                handback = Some(Handback {
                    from: from.clone(),
                    asks: None,
                    blocked: true,
                });
                handback_text = c.body.clone();
            }
            None => {}
        }
    }
    // The pull request, its checks and its review.
    let pulls = forge.list_pulls_for_branch(&branch_of(number)).await?;
    let pull = pulls
        .iter()
        .find(|p| p.state == "open")
        .or_else(|| pulls.iter().max_by_key(|p| p.number))
        .cloned();
    let mut pr = None;
    if let Some(pull) = &pull {
        let runs = forge.list_check_runs(&pull.head.sha).await?;
        if let Some(h) = &handback
            && h.from == p.roles.reviewer
        {
            match verdict(&handback_text) {
                Some(Review::Approved) => state.approved_head = Some(pull.head.sha.clone()),
                Some(_) => state.approved_head = None,
                None => {}
            }
        }
        let mut review = match &handback {
            Some(h) if h.from == p.roles.reviewer => {
                verdict(&handback_text).unwrap_or(Review::None)
            }
            _ if state.approved_head.as_deref() == Some(pull.head.sha.as_str()) => Review::Approved,
            _ => Review::None,
        };
        // A person with write access who asked for changes on GitHub outranks an approval.
        for r in forge.list_reviews(pull.number).await? {
            if r.state == "CHANGES_REQUESTED"
                && r.commit_id.as_deref() == Some(pull.head.sha.as_str())
                && matches!(
                    r.author_association.as_str(),
                    "OWNER" | "MEMBER" | "COLLABORATOR"
                )
            {
                review = Review::ChangesRequested;
            }
        }
        pr = Some(Pr {
            draft: pull.draft,
            ci: ci_of(&runs),
            review,
            merged: pull.is_merged(),
            closed: pull.state == "closed" && !pull.is_merged(),
        });
    }
    if let Some(h) = &mut handback
        && h.from == p.roles.reviewer
        && pr.is_some_and(|p| p.review == Review::None)
    {
        // A review without a verdict is not trusted as one.
        h.blocked = true;
    }
    let issue = decide::Issue {
        phase: state.phase().unwrap_or(Phase::Triage),
        assigned: state.assigned.clone(),
        last_agent_comment: last_agent,
        last_ping: state.last_ping,
        handback,
        asked_by: state.asked_by.clone(),
        round_trips: state.round_trips,
        pr,
        awaiting: state
            .awaiting
            .as_ref()
            .and_then(|(s, ph)| Phase::parse(ph).map(|ph| (*s, ph))),
        last_reminder: state.last_reminder,
        owner_replied,
        closed: issue.state == "closed",
        owner_says_done,
    };
    Ok(Read {
        state,
        status,
        duplicates,
        rebuilt,
        issue,
        comments,
        pull,
        ignored,
        newest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_status_label_names_the_phase() {
        let l = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            phase_of_labels(&l(&["bug", "status/ready"])),
            Some(Phase::Ready)
        );
        assert_eq!(phase_of_labels(&l(&["status/ready", "status/done"])), None);
        assert_eq!(phase_of_labels(&l(&["status/shipped"])), None);
        assert_eq!(phase_of_labels(&l(&[])), None);
    }

    #[test]
    fn the_owner_says_done_with_the_first_word() {
        assert!(says_done("Done."));
        assert!(says_done("  done — shipped by hand"));
        assert!(says_done("DONE"));
        assert!(!says_done("not done yet"));
        assert!(!says_done("Doneness matters"));
        assert!(!says_done(""));
    }
}
