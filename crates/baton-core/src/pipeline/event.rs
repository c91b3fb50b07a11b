//! Which issues a PM pass must look at, read from the webhook event that started it (GitHub
//! Actions' `GITHUB_EVENT_NAME` and the JSON at `GITHUB_EVENT_PATH`), and the branch naming
//! that ties a pull request to its issue (`baton/issue-42`, [`branch_of_issue`]).
//!
//! [`scope`] answers with a [`Scope`]:
//! - [`Scope::All`]: every open issue. A cron sweep (`schedule`), a manual run
//!   (`workflow_dispatch`, unless its `issue` input names one), `repository_dispatch`, and any
//!   event this module does not know: a full pass is always correct, only slower, so an event a
//!   workflow was given on purpose is never dropped. Also an issue that was deleted or
//!   transferred away, which can no longer be read by its number here.
//! - [`Scope::Issues`]: the issues the event is about. `issues` and `issue_comment` name theirs;
//!   a pull request (`pull_request`, its reviews, review comments and threads) maps to its
//!   issue by its head branch `baton/issue-N` when the branch is in the repository itself (a
//!   fork can name a branch so too; it is not the PM's), else by a closing keyword in its body
//!   (`Closes #42`, `fixes: #42`, `Resolves OWNER/REPO#42` for this repository); CI results
//!   (`check_suite`, `check_run`, `workflow_run` once completed, `status`) and `push` map by
//!   the branches and pull requests they carry.
//! - [`Scope::PullRequests`]: pull requests whose issue the payload does not tell (a comment on
//!   a pull request carries its number and body, not its branch): the pass reads each one's
//!   head through the API and maps it with [`issue_of_branch`].
//! - [`Scope::Ignore`], with the reason to log: a pull request or CI result that is not the
//!   pipeline's (another branch, a fork), a check that has not finished, and a change to the
//!   PM's own status comment (which carries nothing the PM did not write, and would otherwise
//!   start pass after pass when the PM runs with a token whose events start workflows).
//!
//! Who sent the event decides nothing here. Labels and comments from bots are the pipeline
//! itself: an agent removing its `agent/*` label is the handback the PM waits for, and the PM's
//! own label changes are harmless to look at again (a pass on an unchanged issue does nothing).
//! The sender's login and the `author_association` on the payload are kept in the [`Trigger`]
//! for the log only; whose words may route work is decided from the REST API, never from an
//! event a fork or a replay could shape. Text in a payload (bodies, titles) is data: a closing
//! keyword only widens what the pass looks at.

use serde_json::Value;
use std::sync::LazyLock;

/// The prefix of every branch the pipeline opens for an issue.
pub const BRANCH_PREFIX: &str = "baton/issue-";

/// The branch the pipeline works on for issue `n`: `baton/issue-42`.
pub fn branch_of_issue(n: u64) -> String {
    format!("{BRANCH_PREFIX}{n}")
}

/// The issue a pipeline branch is for: `baton/issue-42` → 42. Exactly the names
/// [`branch_of_issue`] writes: no `refs/heads/`, no leading zero, no suffix, no issue 0.
pub fn issue_of_branch(branch: &str) -> Option<u64> {
    let digits = branch.strip_prefix(BRANCH_PREFIX)?;
    if digits.is_empty() || digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// What a pass must look at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every open issue in the pipeline.
    All,
    /// These issues (ascending, no duplicates, never empty).
    Issues(Vec<u64>),
    /// The issues of these pull requests, to be found through their head branches (ascending,
    /// no duplicates, never empty).
    PullRequests(Vec<u64>),
    /// Nothing: the event is not the pipeline's, for this reason.
    Ignore(String),
}

/// The triggering event, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trigger {
    /// The event's name (`issues`).
    pub event: String,
    /// Its action (`labeled`), when it has one.
    pub action: Option<String>,
    /// What the pass must look at.
    pub scope: Scope,
    /// The issue or pull request the event is about, when it is about one.
    pub number: Option<u64>,
    /// The label added or removed, for `labeled` and `unlabeled`.
    pub label: Option<String>,
    /// Who sent it (the login), for the log.
    pub sender: Option<String>,
    /// Whether the sender is a bot account (`type: Bot`), for the log.
    pub sender_is_bot: bool,
    /// The `author_association` of the comment, review, issue or pull request the event is
    /// about: its author's standing, which is not the sender's on `labeled`. For the log only.
    pub author_association: Option<String>,
}

/// A payload that does not read.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    /// No event name (`GITHUB_EVENT_NAME` unset or empty).
    #[error("no event name: the pass was not started by a GitHub event (GITHUB_EVENT_NAME)")]
    NoName,
    /// The payload is not JSON.
    #[error("the `{event}` event's payload is not JSON")]
    Json {
        /// The event.
        event: String,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// The payload is JSON, but not an object.
    #[error("the `{event}` event's payload is not a JSON object")]
    NotObject {
        /// The event.
        event: String,
    },
    /// A field the event must have is missing, or of another type.
    #[error("the `{event}` event's payload has no {want} at `{field}`")]
    Missing {
        /// The event.
        event: String,
        /// The field's path (`pull_request.head.ref`).
        field: String,
        /// What was expected there (`number`).
        want: &'static str,
    },
    /// A field holds a value that cannot be right.
    #[error("the `{event}` event's `{field}` is `{value}`, not {want}")]
    Invalid {
        /// The event.
        event: String,
        /// The field's path.
        field: String,
        /// What it holds.
        value: String,
        /// What was expected there.
        want: &'static str,
    },
}

/// Reads the triggering event: its name (`GITHUB_EVENT_NAME`) and payload (the JSON at
/// `GITHUB_EVENT_PATH`).
pub fn scope(event_name: &str, payload: &str) -> Result<Trigger, EventError> {
    let event = event_name.trim();
    if event.is_empty() {
        return Err(EventError::NoName);
    }
    let root: Value = serde_json::from_str(payload).map_err(|source| EventError::Json {
        event: event.to_owned(),
        source,
    })?;
    let p = Payload { event, root: &root };
    if !root.is_object() {
        return Err(EventError::NotObject {
            event: event.to_owned(),
        });
    }
    let action = p.opt_str("action")?.map(str::to_owned);
    let sender = p.opt_str("sender.login")?.map(str::to_owned);
    let sender_is_bot = p.opt_str("sender.type")? == Some("Bot");
    let mut t = Trigger {
        event: event.to_owned(),
        action,
        scope: Scope::All,
        number: None,
        label: None,
        sender,
        sender_is_bot,
        author_association: None,
    };
    let action = t.action.as_deref().unwrap_or("");
    match event {
        "schedule" | "repository_dispatch" => {}
        "workflow_dispatch" => t.scope = dispatch(&p)?,
        "issues" => {
            let n = p.number("issue.number")?;
            t.number = Some(n);
            t.label = p.opt_str("label.name")?.map(str::to_owned);
            t.author_association = p.opt_str("issue.author_association")?.map(str::to_owned);
            t.scope = if p.has("issue.pull_request") {
                pr_by_text(&p, "issue.body", n)?
            } else if matches!(action, "deleted" | "transferred") {
                Scope::All
            } else {
                Scope::Issues(vec![n])
            };
        }
        "issue_comment" => {
            let n = p.number("issue.number")?;
            t.number = Some(n);
            t.author_association = p.opt_str("comment.author_association")?.map(str::to_owned);
            let body = p.opt_str("comment.body")?.unwrap_or("");
            t.scope = if action != "deleted"
                && body.trim_start().starts_with(super::status_comment::MARKER)
            {
                Scope::Ignore(format!(
                    "the PM's status comment on #{n} was {action}: it holds only what the PM wrote"
                ))
            } else if p.has("issue.pull_request") {
                pr_by_text(&p, "issue.body", n)?
            } else {
                Scope::Issues(vec![n])
            };
        }
        "pull_request"
        | "pull_request_target"
        | "pull_request_review"
        | "pull_request_review_comment"
        | "pull_request_review_thread" => {
            let n = p.number("pull_request.number")?;
            t.number = Some(n);
            t.label = p.opt_str("label.name")?.map(str::to_owned);
            let assoc = match event {
                "pull_request_review" => "review.author_association",
                "pull_request_review_comment" => "comment.author_association",
                _ => "pull_request.author_association",
            };
            t.author_association = p.opt_str(assoc)?.map(str::to_owned);
            t.scope = pull_request(&p, n)?;
        }
        "check_suite" | "check_run" | "workflow_run" => {
            t.scope = if action != "completed" {
                Scope::Ignore(format!(
                    "{} {action}: nothing has finished yet",
                    words(event)
                ))
            } else {
                let branch = if event == "check_run" {
                    p.opt_str("check_run.check_suite.head_branch")?
                } else {
                    p.opt_str(&format!("{event}.head_branch"))?
                };
                // A workflow run names a fork's branch as it is (a check suite leaves it out).
                let fork = match (
                    p.get("workflow_run.head_repository.id"),
                    p.get("workflow_run.repository.id"),
                ) {
                    (Some(head), Some(repo)) => head != repo,
                    _ => false,
                };
                let pulls = p.array_or_empty(&format!("{event}.pull_requests"))?;
                checks(&p, branch.filter(|_| !fork), pulls)?
            };
        }
        "status" => {
            let mut issues = Vec::new();
            for (i, b) in p.array_or_empty("branches")?.iter().enumerate() {
                let name = p.str_in(b, &format!("branches[{i}]"), "name")?;
                issues.extend(issue_of_branch(name));
            }
            t.scope = issues_or(issues, || "a commit status on no issue's branch".to_owned());
        }
        "push" => {
            let r = p.str("ref")?;
            t.scope = match r.strip_prefix("refs/heads/").and_then(issue_of_branch) {
                Some(n) => Scope::Issues(vec![n]),
                None => Scope::Ignore(format!("a push to `{r}`, not an issue's branch")),
            };
        }
        _ => {}
    }
    Ok(t)
}

/// `workflow_dispatch`: the `issue` input when given (a string, as GitHub sends inputs, or a
/// number), else every issue.
fn dispatch(p: &Payload<'_>) -> Result<Scope, EventError> {
    let Some(v) = p.get("inputs.issue") else {
        return Ok(Scope::All);
    };
    let text = match v {
        Value::Null => return Ok(Scope::All),
        Value::String(s) => s.trim().trim_start_matches('#').to_owned(),
        Value::Number(n) => n.to_string(),
        other => other.to_string(),
    };
    if text.is_empty() {
        return Ok(Scope::All);
    }
    match text.parse::<u64>() {
        Ok(n) if n > 0 => Ok(Scope::Issues(vec![n])),
        _ => Err(EventError::Invalid {
            event: p.event.to_owned(),
            field: "inputs.issue".to_owned(),
            value: v.to_string(),
            want: "an issue number",
        }),
    }
}

/// A pull request event: its head branch when the branch is the repository's own, else the
/// closing keywords in its body.
fn pull_request(p: &Payload<'_>, n: u64) -> Result<Scope, EventError> {
    let head = p.str("pull_request.head.ref")?;
    let base_repo = p.number("pull_request.base.repo.id")?;
    // `head.repo` is null when the fork was deleted.
    let head_repo = match p.get("pull_request.head.repo") {
        None | Some(Value::Null) => None,
        Some(_) => Some(p.number("pull_request.head.repo.id")?),
    };
    let own = head_repo == Some(base_repo);
    if own && let Some(issue) = issue_of_branch(head) {
        return Ok(Scope::Issues(vec![issue]));
    }
    let body = p.opt_str("pull_request.body")?.unwrap_or("");
    let issues = closing_refs(body, p.opt_str("repository.full_name")?);
    Ok(issues_or(issues, || {
        let whose = if own { "" } else { " of a fork" };
        format!("pull request #{n} is not the pipeline's: head `{head}`{whose}, no closing keyword")
    }))
}

/// A pull request known only as an issue (a comment on it): its closing keywords, else its
/// number for the pass to map through the API.
fn pr_by_text(p: &Payload<'_>, body: &str, n: u64) -> Result<Scope, EventError> {
    let body = p.opt_str(body)?.unwrap_or("");
    let issues = closing_refs(body, p.opt_str("repository.full_name")?);
    Ok(if issues.is_empty() {
        Scope::PullRequests(vec![n])
    } else {
        sorted(issues)
    })
}

/// A finished CI result: the pipeline branches among its head branch and its pull requests'
/// heads (those in the repository itself).
fn checks(p: &Payload<'_>, branch: Option<&str>, pulls: &[Value]) -> Result<Scope, EventError> {
    let mut issues: Vec<u64> = branch.and_then(issue_of_branch).into_iter().collect();
    let field = format!("{}.pull_requests", p.event);
    for (i, pr) in pulls.iter().enumerate() {
        let at = format!("{field}[{i}]");
        let head = p.str_in(pr, &at, "head.ref")?;
        let head_repo = p.number_in(pr, &at, "head.repo.id")?;
        let base_repo = p.number_in(pr, &at, "base.repo.id")?;
        if head_repo == base_repo {
            issues.extend(issue_of_branch(head));
        }
    }
    Ok(issues_or(issues, || match branch {
        Some(b) => format!(
            "{} on `{b}`, not an issue's branch, and no pipeline pull request",
            words(p.event)
        ),
        // GitHub leaves the branch out (and the pull requests empty) for a fork's commit.
        None => format!("{} on a fork's commit", words(p.event)),
    }))
}

fn words(event: &str) -> String {
    event.replace('_', " ")
}

fn sorted(mut v: Vec<u64>) -> Scope {
    v.sort_unstable();
    v.dedup();
    Scope::Issues(v)
}

fn issues_or(v: Vec<u64>, reason: impl FnOnce() -> String) -> Scope {
    if v.is_empty() {
        Scope::Ignore(reason())
    } else {
        sorted(v)
    }
}

// GitHub's closing keywords, each followed by `#N` or `OWNER/REPO#N`.
static CLOSING: LazyLock<Option<regex::Regex>> = LazyLock::new(|| {
    regex::Regex::new(
        r"(?i)\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s*:?\s+([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)?#([0-9]+)\b",
    )
    .ok()
});

/// The issues a pull request's body closes by keyword (`Closes #42`, `fixes: #7`,
/// `Resolves octo/repo#9` when `repo` is `octo/repo`; another repository's issue is not
/// this pipeline's).
pub fn closing_refs(body: &str, repo: Option<&str>) -> Vec<u64> {
    let Some(re) = CLOSING.as_ref() else {
        return Vec::new();
    };
    let mut out: Vec<u64> = re
        .captures_iter(body)
        .filter(|c| match (c.get(1), repo) {
            (None, _) => true,
            (Some(other), Some(repo)) => other.as_str().eq_ignore_ascii_case(repo),
            (Some(_), None) => false,
        })
        .filter_map(|c| c.get(2)?.as_str().parse().ok())
        .filter(|&n| n > 0)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The payload, with the event's name for errors.
struct Payload<'a> {
    event: &'a str,
    root: &'a Value,
}

impl<'a> Payload<'a> {
    fn get(&self, path: &str) -> Option<&'a Value> {
        walk(self.root, path)
    }

    /// Present and not null.
    fn has(&self, path: &str) -> bool {
        self.get(path).is_some_and(|v| !v.is_null())
    }

    fn missing(&self, field: &str, want: &'static str) -> EventError {
        EventError::Missing {
            event: self.event.to_owned(),
            field: field.to_owned(),
            want,
        }
    }

    fn number(&self, path: &str) -> Result<u64, EventError> {
        self.get(path)
            .and_then(Value::as_u64)
            .ok_or_else(|| self.missing(path, "number"))
    }

    fn str(&self, path: &str) -> Result<&'a str, EventError> {
        self.get(path)
            .and_then(Value::as_str)
            .ok_or_else(|| self.missing(path, "string"))
    }

    /// A string that may be absent or null; another type is an error.
    fn opt_str(&self, path: &str) -> Result<Option<&'a str>, EventError> {
        match self.get(path) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.missing(path, "string")),
        }
    }

    /// An array that may be absent or null (then empty); another type is an error.
    fn array_or_empty(&self, path: &str) -> Result<&'a [Value], EventError> {
        match self.get(path) {
            None | Some(Value::Null) => Ok(&[]),
            Some(Value::Array(a)) => Ok(a),
            Some(_) => Err(self.missing(path, "list")),
        }
    }

    /// A number at `rel` inside `v`, an element of the list at `list[i]` (for the error).
    fn number_in(&self, v: &'a Value, at: &str, rel: &str) -> Result<u64, EventError> {
        walk(v, rel)
            .and_then(Value::as_u64)
            .ok_or_else(|| self.missing(&format!("{at}.{rel}"), "number"))
    }

    /// A string at `rel` inside `v`, an element of the list at `list[i]` (for the error).
    fn str_in(&self, v: &'a Value, at: &str, rel: &str) -> Result<&'a str, EventError> {
        walk(v, rel)
            .and_then(Value::as_str)
            .ok_or_else(|| self.missing(&format!("{at}.{rel}"), "string"))
    }
}

fn walk<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |v, key| v.get(key))
}

#[cfg(test)]
mod examples;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_names_round_trip() {
        for n in [1, 42, 1000, u64::MAX] {
            assert_eq!(issue_of_branch(&branch_of_issue(n)), Some(n));
        }
        assert_eq!(branch_of_issue(42), "baton/issue-42");
        for b in [
            "baton/issue-",
            "baton/issue-0",
            "baton/issue-042",
            "baton/issue-42-retry",
            "baton/issue-42/x",
            "baton/issue-+42",
            "baton/issue- 42",
            "baton/issue-４２",
            "baton/issue-18446744073709551616",
            "refs/heads/baton/issue-42",
            "Baton/Issue-42",
            "baton/issues-42",
            "issue-42",
            "changes",
            "",
        ] {
            assert_eq!(issue_of_branch(b), None, "{b}");
        }
    }

    #[test]
    fn closing_keywords() {
        let repo = Some("octo/repo");
        let table: [(&str, &[u64]); 14] = [
            ("Closes #42", &[42]),
            ("closes #42", &[42]),
            ("FIXES #7 and resolves #3", &[3, 7]),
            ("Fixed: #9", &[9]),
            ("close #1\nfix #1\nresolved #1", &[1]),
            ("Resolves octo/repo#12", &[12]),
            ("Resolves OCTO/Repo#12", &[12]),
            ("Resolves other/repo#12", &[]),
            ("See #42", &[]),
            ("Prefixes #42", &[]),
            ("Closes#42", &[]),
            ("Closes #0", &[]),
            ("closes #42x", &[]),
            ("", &[]),
        ];
        for (body, want) in table {
            assert_eq!(closing_refs(body, repo), want, "{body:?}");
        }
        assert_eq!(
            closing_refs("Resolves octo/repo#12", None),
            Vec::<u64>::new()
        );
    }

    fn pr_payload(head: &str, same_repo: bool, body: &str) -> String {
        serde_json::json!({
            "action": "opened",
            "number": 5,
            "pull_request": {
                "number": 5,
                "body": body,
                "author_association": "CONTRIBUTOR",
                "head": {"ref": head, "repo": {"id": if same_repo { 1 } else { 2 }}},
                "base": {"ref": "main", "repo": {"id": 1}},
            },
            "repository": {"id": 1, "full_name": "octo/repo"},
            "sender": {"login": "baton-pm[bot]", "type": "Bot"},
        })
        .to_string()
    }

    #[test]
    fn pull_requests_map_by_branch_then_keyword() {
        let issues = |v: &[u64]| Scope::Issues(v.to_vec());
        let table = [
            (pr_payload("baton/issue-42", true, ""), issues(&[42])),
            // The branch wins over the body.
            (
                pr_payload("baton/issue-42", true, "Closes #7"),
                issues(&[42]),
            ),
            (pr_payload("feature", true, "Fixes #7"), issues(&[7])),
            // A fork's branch named like the pipeline's is not the pipeline's.
            (
                pr_payload("baton/issue-42", false, "Fixes #7"),
                issues(&[7]),
            ),
        ];
        for (payload, want) in table {
            let t = scope("pull_request", &payload).unwrap();
            assert_eq!(t.scope, want, "{payload}");
            assert_eq!(t.number, Some(5));
            assert_eq!(t.sender.as_deref(), Some("baton-pm[bot]"));
            assert!(t.sender_is_bot);
            assert_eq!(t.author_association.as_deref(), Some("CONTRIBUTOR"));
        }
        let Scope::Ignore(why) = scope("pull_request", &pr_payload("baton/issue-42", false, ""))
            .unwrap()
            .scope
        else {
            panic!("a fork's pull request without a keyword is not the pipeline's")
        };
        assert!(why.contains("#5") && why.contains("fork"), "{why}");
    }

    #[test]
    fn sweeps_and_unknown_events_look_at_everything() {
        // What GitHub Actions writes to GITHUB_EVENT_PATH on a cron run.
        let cron = r#"{"schedule": "*/15 * * * *", "repository": {"full_name": "o/r"}}"#;
        for (event, payload) in [
            ("schedule", cron),
            ("workflow_dispatch", r#"{"inputs": {}}"#),
            ("workflow_dispatch", r#"{"inputs": {"issue": ""}}"#),
            ("workflow_dispatch", r#"{}"#),
            ("repository_dispatch", r#"{"action": "go"}"#),
            ("merge_group", r#"{"action": "checks_requested"}"#),
        ] {
            assert_eq!(scope(event, payload).unwrap().scope, Scope::All, "{event}");
        }
        for (input, n) in [(r#""42""#, 42), (r##""#42""##, 42), ("42", 42)] {
            let payload = format!(r#"{{"inputs": {{"issue": {input}}}}}"#);
            let t = scope("workflow_dispatch", &payload).unwrap();
            assert_eq!(t.scope, Scope::Issues(vec![n]), "{input}");
        }
    }

    #[test]
    fn status_comments_of_the_pm_are_not_news() {
        let comment = |action: &str, body: &str| {
            serde_json::json!({
                "action": action,
                "issue": {"number": 3},
                "comment": {"body": body, "author_association": "NONE"},
            })
            .to_string()
        };
        let status = format!("{}\n## PM Status", super::super::status_comment::MARKER);
        let t = scope("issue_comment", &comment("edited", &status)).unwrap();
        assert!(matches!(t.scope, Scope::Ignore(_)), "{:?}", t.scope);
        // Deleted, the PM must write it again.
        let t = scope("issue_comment", &comment("deleted", &status)).unwrap();
        assert_eq!(t.scope, Scope::Issues(vec![3]));
        // A handback from an agent is what the PM waits for.
        let t = scope(
            "issue_comment",
            &comment("created", "[Backend → Product Manager] Done."),
        );
        assert_eq!(t.unwrap().scope, Scope::Issues(vec![3]));
    }

    #[test]
    fn bad_payloads_are_errors_naming_the_field() {
        let table: [(&str, &str, &str); 12] = [
            ("issues", "not json", "not JSON"),
            ("issues", "[1, 2]", "not a JSON object"),
            ("issues", r#"{"action": "opened"}"#, "`issue.number`"),
            (
                "issues",
                r#"{"issue": {"number": "7"}}"#,
                "no number at `issue.number`",
            ),
            ("issues", r#"{"issue": {"number": -7}}"#, "`issue.number`"),
            (
                "issues",
                r#"{"action": 3, "issue": {"number": 7}}"#,
                "`action`",
            ),
            ("issue_comment", r#"{"issue": {}}"#, "`issue.number`"),
            (
                "pull_request",
                r#"{"pull_request": {"number": 1, "head": {}}}"#,
                "`pull_request.head.ref`",
            ),
            (
                "check_suite",
                r#"{"action": "completed", "check_suite": {"pull_requests": [{"head": {"ref": "x"}}]}}"#,
                "`check_suite.pull_requests[0].head.repo.id`",
            ),
            (
                "check_run",
                r#"{"action": "completed", "check_run": {"pull_requests": 3}}"#,
                "no list at `check_run.pull_requests`",
            ),
            ("push", r#"{}"#, "`ref`"),
            (
                "workflow_dispatch",
                r#"{"inputs": {"issue": "forty-two"}}"#,
                "`inputs.issue` is `\"forty-two\"`, not an issue number",
            ),
        ];
        for (event, payload, says) in table {
            let err = scope(event, payload).unwrap_err().to_string();
            assert!(err.contains(event), "{err}");
            assert!(err.contains(says), "{payload}: {err}");
        }
        assert!(matches!(scope(" ", "{}"), Err(EventError::NoName)));
    }
}
