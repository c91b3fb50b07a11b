//! A stateful fake GitHub for one repository, served over HTTP on `127.0.0.1:0` by axum, for
//! driving the GitHub client and the PM pipeline without the network.
//!
//! It models what the pipeline touches: issues (pull requests are issues too, sharing their
//! numbers, and the issue list returns them with a `pull_request` key as GitHub does), labels,
//! comments (created, edited in place, with ids, `author_association` and timestamps), pull
//! requests (draft or ready, head branch and sha, reviews, merged state, auto-merge), check
//! runs per head sha and collaborators with their roles. Answers carry the fields GitHub's
//! OpenAPI description requires, `link` headers for pagination (`per_page`, `page`), ETags with
//! 304s for `If-None-Match`, and rate-limit headers. Marking a draft ready and enabling
//! auto-merge are GraphQL-only on GitHub; `POST /graphql` answers exactly those two mutations.
//!
//! Tests seed it (`add_issue`, `add_comment`, `add_pull`, `add_review`, `add_check_run`,
//! `set_collaborator`), inject failures ([`FakeGitHub::fail_next`]: a secondary or primary
//! rate limit, a 429, a 5xx, a flaky 404, or a write carried out before a 500), make a pull
//! request conflict, merge it as the owner, and read back every request with its answer
//! ([`FakeGitHub::calls`]). With [`FakeGitHub::protect_base`] a pull request is `blocked`
//! until its approvals and required checks are in; auto-merge is refused for one that could
//! merge at once (`clean`), as GitHub refuses it, and merges it as soon as it turns `clean`.
//! A merge into the default branch closes the issues the pull request's body or commits (read
//! from the attached git repository) name with a closing keyword, leaving their labels on, as
//! GitHub does. [`FakeGitHub::hold_request`] stalls one request until it is released, so a test
//! can run one client whole while another waits at any step.
//! The clock is its own: it starts at 2026-01-05T09:00:00Z, moves one
//! second with each write and jumps with [`FakeGitHub::advance`], so timestamps are
//! reproducible.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State as AxumState;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::task::JoinHandle;

/// A failure the next matching requests get instead of their answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// 403 with `retry-after` and GitHub's secondary-rate-limit message.
    SecondaryLimit {
        /// Seconds to wait.
        retry_after: u64,
    },
    /// 429 with `retry-after`.
    TooManyRequests {
        /// Seconds to wait.
        retry_after: u64,
    },
    /// 403 with `x-ratelimit-remaining: 0` and `x-ratelimit-reset` at this Unix second.
    PrimaryLimit {
        /// When the limit resets.
        reset: i64,
    },
    /// This status (500, 502, a flaky 404…) with a GitHub error body; nothing is changed.
    Status(u16),
    /// The request is carried out, then answered with this status (a write whose outcome the
    /// client cannot know).
    AppliedThen(u16),
    /// The request is carried out and recorded, and the answer never comes (the moment to
    /// kill a client between a write and what it does next).
    AppliedThenHang,
}

/// A request the fake received, with its answer.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCall {
    /// `GET`, `POST`…
    pub method: String,
    /// The path, each segment percent-decoded (`/repos/acme/widgets/issues/1/labels/agent/backend`
    /// for a request to remove `agent/backend`); [`RecordedCall::raw_path`] has it as sent.
    pub path: String,
    /// The path as sent.
    pub raw_path: String,
    /// The query pairs, decoded, in order.
    pub query: Vec<(String, String)>,
    /// Headers, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The JSON body (`None` when there was none).
    pub body: Option<Value>,
    /// GitHub's path template of the route it hit (`/repos/{owner}/{repo}/issues`), or `None`.
    pub route: Option<&'static str>,
    /// The status answered.
    pub status: u16,
    /// The JSON body answered (`None` for a 304 or an empty body).
    pub response: Option<Value>,
    /// The response headers, names lower-cased.
    pub response_headers: Vec<(String, String)>,
}

impl RecordedCall {
    /// The first value of request header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The value of query parameter `name`.
    pub fn query_value(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Clone)]
struct LabelRec {
    id: u64,
    name: String,
    color: String,
    description: String,
}

#[derive(Debug, Clone)]
struct IssueRec {
    number: u64,
    id: u64,
    title: String,
    body: String,
    author: String,
    labels: Vec<String>,
    state: String,
    created_at: Timestamp,
    updated_at: Timestamp,
    closed_at: Option<Timestamp>,
    /// `completed` or `not_planned` once closed.
    state_reason: Option<String>,
}

#[derive(Debug, Clone)]
struct CommentRec {
    id: u64,
    issue: u64,
    author: String,
    association: String,
    body: String,
    created_at: Timestamp,
    updated_at: Timestamp,
}

#[derive(Debug, Clone)]
struct PullRec {
    number: u64,
    id: u64,
    head: String,
    head_sha: String,
    base: String,
    draft: bool,
    merged_at: Option<Timestamp>,
    merged_by: Option<String>,
    merge_commit_sha: Option<String>,
    auto_merge: Option<(String, String)>,
    conflict: bool,
}

#[derive(Debug, Clone)]
struct ReviewRec {
    id: u64,
    pull: u64,
    author: String,
    state: String,
    body: String,
    commit: String,
    submitted_at: Timestamp,
}

#[derive(Debug, Clone)]
struct CheckRec {
    id: u64,
    sha: String,
    name: String,
    status: String,
    conclusion: Option<String>,
    started_at: Timestamp,
    completed_at: Option<Timestamp>,
}

/// Branch protection on every base: approvals and checks a pull request needs before it can
/// merge.
#[derive(Debug, Clone)]
struct Protection {
    approvals: usize,
    checks: Vec<String>,
}

#[derive(Debug)]
struct Rule {
    method: String,
    route: String,
    times: usize,
    failure: Failure,
}

#[derive(Debug)]
struct State {
    base: String,
    owner: String,
    repo: String,
    viewer: String,
    now: Timestamp,
    next_number: u64,
    next_id: u64,
    issues: BTreeMap<u64, IssueRec>,
    labels: Vec<LabelRec>,
    comments: Vec<CommentRec>,
    pulls: BTreeMap<u64, PullRec>,
    reviews: Vec<ReviewRec>,
    checks: Vec<CheckRec>,
    collaborators: BTreeMap<String, String>,
    rules: Vec<Rule>,
    calls: Vec<RecordedCall>,
    served: u64,
    spent_until: Option<i64>,
    protection: Option<Protection>,
    /// Git references by full name (`refs/heads/main`, `refs/baton/seats/1`) → sha.
    refs: BTreeMap<String, String>,
    /// Commit objects written through the git database API (and the seeded base), by sha.
    commits: BTreeMap<String, CommitRec>,
    /// A bare repository whose branches are this repository's branches.
    git: Option<std::path::PathBuf>,
    /// Projects (v2) of the owner.
    projects: Vec<ProjectRec>,
    /// Requests still to answer before the next one is held ([`FakeGitHub::hold_request`]).
    hold_in: Option<u64>,
    /// A request is held now.
    holding: bool,
}

/// A project (v2) with one single-select field.
#[derive(Debug, Clone)]
struct ProjectRec {
    number: u64,
    field: String,
    /// Option names; an option's node id is `PVTSSF_<number>_<index>`.
    options: Vec<String>,
    /// Issue node id → (item id, option chosen).
    items: BTreeMap<String, (String, Option<usize>)>,
}

#[derive(Debug, Clone)]
struct CommitRec {
    message: String,
    tree: String,
    parents: Vec<String>,
    date: Timestamp,
}

/// The fake GitHub; stops serving when dropped.
#[derive(Debug)]
pub struct FakeGitHub {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    gate: Arc<tokio::sync::Notify>,
    task: JoinHandle<()>,
}

impl Drop for FakeGitHub {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The owner the fake serves by default.
pub const OWNER: &str = "acme";
/// The repository the fake serves by default.
pub const REPO: &str = "widgets";
/// The repository's default branch: a merge into it closes the issues it names.
pub const DEFAULT_BRANCH: &str = "main";
/// The login the token acts as by default (what comments posted through the API are by).
pub const VIEWER: &str = "baton-pm[bot]";

fn fnv(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A stable numeric id for a login.
fn user_id(login: &str) -> u64 {
    fnv(login) % 90_000_000 + 1_000
}

/// A 40-hex-digit sha derived from `seed`.
pub fn sha_of(seed: &str) -> String {
    let a = fnv(seed);
    let b = fnv(&format!("{seed}#"));
    let c = fnv(&format!("{seed}##"));
    format!("{a:016x}{b:016x}{c:016x}")[..40].to_owned()
}

fn stamp(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn opt_stamp(t: Option<Timestamp>) -> Value {
    t.map_or(Value::Null, |t| Value::String(stamp(t)))
}

fn pct(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn unpct(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The issues `text` closes with GitHub's closing keywords (`close`, `closes`, `closed`, `fix`,
/// `fixes`, `fixed`, `resolve`, `resolves`, `resolved`, any case, an optional colon, then
/// `#N` or `owner/repo#N` of this repository).
fn closing_refs(text: &str, owner: &str, repo: &str) -> Vec<u64> {
    const KEYWORDS: [&str; 9] = [
        "close", "closes", "closed", "fix", "fixes", "fixed", "resolve", "resolves", "resolved",
    ];
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut out = Vec::new();
    for pair in words.windows(2) {
        let word = pair[0].trim_start_matches(|c: char| !c.is_alphanumeric());
        let word = word.strip_suffix(':').unwrap_or(word);
        if !KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(word)) {
            continue;
        }
        let target = pair[1].trim_end_matches(|c: char| !c.is_ascii_digit());
        let number = match target.split_once('#') {
            Some(("", n)) => n,
            Some((full, n)) if full.eq_ignore_ascii_case(&format!("{owner}/{repo}")) => n,
            _ => continue,
        };
        if let Ok(n) = number.parse::<u64>()
            && !out.contains(&n)
        {
            out.push(n);
        }
    }
    out
}

/// The legacy `permission` for a role.
fn legacy_permission(role: &str) -> &'static str {
    match role {
        "admin" => "admin",
        "maintain" | "write" => "write",
        "triage" | "read" => "read",
        _ => "none",
    }
}

/// An answer before it is recorded and sent.
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Option<Value>,
}

impl Reply {
    fn json(status: u16, body: Value) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: Some(body),
        }
    }

    fn error(status: u16, message: &str) -> Reply {
        Reply::json(
            status,
            json!({
                "message": message,
                "documentation_url": "https://docs.github.com/rest",
                "status": status.to_string(),
            }),
        )
    }

    fn not_found() -> Reply {
        Reply::error(404, "Not Found")
    }

    fn no_content() -> Reply {
        Reply {
            status: 204,
            headers: Vec::new(),
            body: None,
        }
    }

    fn invalid(resource: &str, field: &str, code: &str, message: Option<&str>) -> Reply {
        let mut error = json!({ "resource": resource, "field": field, "code": code });
        if let Some(message) = message {
            error["message"] = Value::String(message.to_owned());
        }
        Reply::json(
            422,
            json!({
                "message": "Validation Failed",
                "errors": [error],
                "documentation_url": "https://docs.github.com/rest",
                "status": "422",
            }),
        )
    }

    fn header(mut self, name: &str, value: impl Into<String>) -> Reply {
        self.headers.push((name.to_owned(), value.into()));
        self
    }
}

impl State {
    fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
        state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn git_ref(&self, name: &str, sha: &str) -> Value {
        json!({
            "ref": name,
            "node_id": format!("REF_{}", &sha_of(name)[..12]),
            "url": format!("{}/git/{name}", self.repo_api()),
            "object": {
                "type": "commit",
                "sha": sha,
                "url": format!("{}/git/commits/{sha}", self.repo_api()),
            },
        })
    }

    fn git_commit(&self, sha: &str, c: &CommitRec) -> Value {
        let person = json!({
            "name": self.viewer,
            "email": format!("{}@users.noreply.github.com", self.viewer),
            "date": c.date.to_string(),
        });
        json!({
            "sha": sha,
            "node_id": format!("C_{}", &sha[..12.min(sha.len())]),
            "url": format!("{}/git/commits/{sha}", self.repo_api()),
            "html_url": format!("{}/commit/{sha}", self.repo_html()),
            "author": person,
            "committer": person,
            "tree": { "sha": c.tree, "url": format!("{}/git/trees/{}", self.repo_api(), c.tree) },
            "message": c.message,
            "parents": c.parents.iter().map(|p| json!({
                "sha": p,
                "url": format!("{}/git/commits/{p}", self.repo_api()),
                "html_url": format!("{}/commit/{p}", self.repo_html()),
            })).collect::<Vec<_>>(),
            "verification": {
                "verified": false, "reason": "unsigned", "signature": null, "payload": null,
                "verified_at": null,
            },
        })
    }

    /// Reads the attached bare repository's branches into the references, and moves each
    /// pull request's head to its branch (as GitHub does on a push).
    fn sync_git(&mut self) {
        let Some(dir) = self.git.clone() else {
            return;
        };
        let Ok(out) = std::process::Command::new("git")
            .arg("-C")
            .arg(&dir)
            .args([
                "for-each-ref",
                "--format=%(refname) %(objectname) %(tree)",
                "refs/heads/",
            ])
            .output()
        else {
            return;
        };
        self.refs.retain(|n, _| !n.starts_with("refs/heads/"));
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let mut parts = line.split(' ');
            let (Some(name), Some(sha), Some(tree)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            self.refs.insert(name.to_owned(), sha.to_owned());
            let now = self.now;
            self.commits.entry(sha.to_owned()).or_insert(CommitRec {
                message: String::new(),
                tree: tree.to_owned(),
                parents: Vec::new(),
                date: now,
            });
        }
        let heads: Vec<(u64, String)> = self
            .pulls
            .values()
            .filter(|p| p.merged_at.is_none())
            .filter_map(|p| {
                self.refs
                    .get(&format!("refs/heads/{}", p.head))
                    .filter(|sha| **sha != p.head_sha)
                    .map(|sha| (p.number, sha.clone()))
            })
            .collect();
        for (n, sha) in heads {
            if let Some(p) = self.pulls.get_mut(&n) {
                p.head_sha = sha;
            }
        }
    }

    fn tick(&mut self) -> Timestamp {
        self.now += SignedDuration::from_secs(1);
        self.now
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn repo_api(&self) -> String {
        format!("{}/repos/{}/{}", self.base, self.owner, self.repo)
    }

    fn repo_html(&self) -> String {
        format!("https://github.com/{}/{}", self.owner, self.repo)
    }

    fn association(&self, login: &str) -> String {
        if login == self.owner {
            "OWNER".into()
        } else if self.collaborators.contains_key(login) {
            "COLLABORATOR".into()
        } else {
            "NONE".into()
        }
    }

    fn user(&self, login: &str) -> Value {
        let id = user_id(login);
        let api = format!("{}/users/{}", self.base, pct(login));
        json!({
            "login": login,
            "id": id,
            "node_id": format!("U_kgDO{id}"),
            "avatar_url": format!("https://avatars.githubusercontent.com/u/{id}?v=4"),
            "gravatar_id": "",
            "url": api,
            "html_url": format!("https://github.com/{}", pct(login)),
            "followers_url": format!("{api}/followers"),
            "following_url": format!("{api}/following{{/other_user}}"),
            "gists_url": format!("{api}/gists{{/gist_id}}"),
            "starred_url": format!("{api}/starred{{/owner}}{{/repo}}"),
            "subscriptions_url": format!("{api}/subscriptions"),
            "organizations_url": format!("{api}/orgs"),
            "repos_url": format!("{api}/repos"),
            "events_url": format!("{api}/events{{/privacy}}"),
            "received_events_url": format!("{api}/received_events"),
            "type": if login.ends_with("[bot]") { "Bot" } else { "User" },
            "user_view_type": "public",
            "site_admin": false,
        })
    }

    fn repository(&self) -> Value {
        let api = self.repo_api();
        let t = stamp(Timestamp::from_second(1_735_689_600).unwrap_or(self.now));
        let open = self.issues.values().filter(|i| i.state == "open").count();
        let mut v = json!({
            "id": user_id(&format!("{}/{}", self.owner, self.repo)),
            "node_id": "R_kgDOfake",
            "name": self.repo,
            "full_name": format!("{}/{}", self.owner, self.repo),
            "owner": self.user(&self.owner),
            "private": false,
            "html_url": self.repo_html(),
            "description": null,
            "fork": false,
            "url": api,
            "git_url": format!("git://github.com/{}/{}.git", self.owner, self.repo),
            "ssh_url": format!("git@github.com:{}/{}.git", self.owner, self.repo),
            "clone_url": format!("{}.git", self.repo_html()),
            "mirror_url": null,
            "svn_url": self.repo_html(),
            "homepage": null,
            "language": null,
            "forks": 0,
            "forks_count": 0,
            "stargazers_count": 0,
            "watchers_count": 0,
            "watchers": 0,
            "size": 0,
            "default_branch": "main",
            "open_issues": open,
            "open_issues_count": open,
            "is_template": false,
            "topics": [],
            "has_issues": true,
            "has_projects": true,
            "has_wiki": false,
            "has_pages": false,
            "has_downloads": true,
            "archived": false,
            "disabled": false,
            "visibility": "public",
            "pushed_at": t,
            "created_at": t,
            "updated_at": t,
            "allow_auto_merge": true,
            "license": null,
        });
        let urls = [
            ("archive_url", "/{archive_format}{/ref}"),
            ("assignees_url", "/assignees{/user}"),
            ("blobs_url", "/git/blobs{/sha}"),
            ("branches_url", "/branches{/branch}"),
            ("collaborators_url", "/collaborators{/collaborator}"),
            ("comments_url", "/comments{/number}"),
            ("commits_url", "/commits{/sha}"),
            ("compare_url", "/compare/{base}...{head}"),
            ("contents_url", "/contents/{+path}"),
            ("contributors_url", "/contributors"),
            ("deployments_url", "/deployments"),
            ("downloads_url", "/downloads"),
            ("events_url", "/events"),
            ("forks_url", "/forks"),
            ("git_commits_url", "/git/commits{/sha}"),
            ("git_refs_url", "/git/refs{/sha}"),
            ("git_tags_url", "/git/tags{/sha}"),
            ("hooks_url", "/hooks"),
            ("issue_comment_url", "/issues/comments{/number}"),
            ("issue_events_url", "/issues/events{/number}"),
            ("issues_url", "/issues{/number}"),
            ("keys_url", "/keys{/key_id}"),
            ("labels_url", "/labels{/name}"),
            ("languages_url", "/languages"),
            ("merges_url", "/merges"),
            ("milestones_url", "/milestones{/number}"),
            (
                "notifications_url",
                "/notifications{?since,all,participating}",
            ),
            ("pulls_url", "/pulls{/number}"),
            ("releases_url", "/releases{/id}"),
            ("stargazers_url", "/stargazers"),
            ("statuses_url", "/statuses/{sha}"),
            ("subscribers_url", "/subscribers"),
            ("subscription_url", "/subscription"),
            ("tags_url", "/tags"),
            ("teams_url", "/teams"),
            ("trees_url", "/git/trees{/sha}"),
        ];
        if let Some(map) = v.as_object_mut() {
            for (key, tail) in urls {
                map.insert(key.to_owned(), Value::String(format!("{api}{tail}")));
            }
        }
        v
    }

    fn label(&self, name: &str) -> Value {
        match self.labels.iter().find(|l| l.name == name) {
            Some(l) => json!({
                "id": l.id,
                "node_id": format!("LA_kwDO{}", l.id),
                "url": format!("{}/labels/{}", self.repo_api(), pct(&l.name)),
                "name": l.name,
                // GitHub answers `null` for a label created without one.
                "description": if l.description.is_empty() { Value::Null } else { Value::String(l.description.clone()) },
                "color": l.color,
                "default": false,
            }),
            None => Value::Null,
        }
    }

    fn issue(&self, number: u64) -> Value {
        let Some(i) = self.issues.get(&number) else {
            return Value::Null;
        };
        let api = format!("{}/issues/{number}", self.repo_api());
        let comments = self.comments.iter().filter(|c| c.issue == number).count();
        let mut v = json!({
            "id": i.id,
            "node_id": format!("I_kwDO{}", i.id),
            "url": api,
            "repository_url": self.repo_api(),
            "labels_url": format!("{api}/labels{{/name}}"),
            "comments_url": format!("{api}/comments"),
            "events_url": format!("{api}/events"),
            "html_url": format!("{}/issues/{number}", self.repo_html()),
            "number": number,
            "state": i.state,
            "state_reason": i.state_reason,
            "title": i.title,
            "body": i.body,
            "user": self.user(&i.author),
            "labels": i.labels.iter().map(|l| self.label(l)).collect::<Vec<_>>(),
            "assignee": null,
            "assignees": [],
            "milestone": null,
            "locked": false,
            "active_lock_reason": null,
            "comments": comments,
            "closed_at": opt_stamp(i.closed_at),
            "created_at": stamp(i.created_at),
            "updated_at": stamp(i.updated_at),
            "author_association": self.association(&i.author),
            "closed_by": null,
            "timeline_url": format!("{api}/timeline"),
            "performed_via_github_app": null,
            "reactions": {
                "url": format!("{api}/reactions"),
                "total_count": 0, "+1": 0, "-1": 0, "laugh": 0, "hooray": 0, "confused": 0,
                "heart": 0, "rocket": 0, "eyes": 0,
            },
        });
        if let Some(p) = self.pulls.get(&number) {
            let html = format!("{}/pull/{number}", self.repo_html());
            v["draft"] = Value::Bool(p.draft);
            v["pull_request"] = json!({
                "url": format!("{}/pulls/{number}", self.repo_api()),
                "html_url": html,
                "diff_url": format!("{html}.diff"),
                "patch_url": format!("{html}.patch"),
                "merged_at": opt_stamp(p.merged_at),
            });
        }
        v
    }

    fn comment(&self, c: &CommentRec) -> Value {
        json!({
            "id": c.id,
            "node_id": format!("IC_kwDO{}", c.id),
            "url": format!("{}/issues/comments/{}", self.repo_api(), c.id),
            "html_url": format!("{}/issues/{}#issuecomment-{}", self.repo_html(), c.issue, c.id),
            "body": c.body,
            "user": self.user(&c.author),
            "created_at": stamp(c.created_at),
            "updated_at": stamp(c.updated_at),
            "issue_url": format!("{}/issues/{}", self.repo_api(), c.issue),
            "author_association": c.association,
        })
    }

    /// A pull request as the list (`full = false`) or the single-object calls show it.
    fn pull(&self, number: u64, full: bool) -> Value {
        let (Some(p), Some(i)) = (self.pulls.get(&number), self.issues.get(&number)) else {
            return Value::Null;
        };
        let api = format!("{}/pulls/{number}", self.repo_api());
        let html = format!("{}/pull/{number}", self.repo_html());
        let issue_api = format!("{}/issues/{number}", self.repo_api());
        let end = |name: &str, sha: &str| {
            json!({
                "label": format!("{}:{name}", self.owner),
                "ref": name,
                "sha": sha,
                "user": self.user(&self.owner),
                "repo": self.repository(),
            })
        };
        let link = |href: String| json!({ "href": href });
        let auto_merge = match &p.auto_merge {
            Some((method, by)) => json!({
                "enabled_by": self.user(by),
                "merge_method": method,
                "commit_title": format!("{} (#{number})", i.title),
                "commit_message": "",
            }),
            None => Value::Null,
        };
        let links = json!({
            "self": link(api.clone()),
            "html": link(html.clone()),
            "issue": link(issue_api.clone()),
            "comments": link(format!("{issue_api}/comments")),
            "review_comments": link(format!("{api}/comments")),
            "review_comment": link(format!("{}/pulls/comments{{/number}}", self.repo_api())),
            "commits": link(format!("{api}/commits")),
            "statuses": link(format!("{}/statuses/{}", self.repo_api(), p.head_sha)),
        });
        let mut v = json!({
            "url": api,
            "id": p.id,
            "node_id": format!("PR_kwDO{number}"),
            "html_url": html,
            "diff_url": format!("{html}.diff"),
            "patch_url": format!("{html}.patch"),
            "issue_url": issue_api,
            "commits_url": format!("{api}/commits"),
            "review_comments_url": format!("{api}/comments"),
            "review_comment_url": format!("{}/pulls/comments{{/number}}", self.repo_api()),
            "comments_url": format!("{issue_api}/comments"),
            "statuses_url": format!("{}/statuses/{}", self.repo_api(), p.head_sha),
            "number": number,
            "state": i.state,
            "locked": false,
            "title": i.title,
            "user": self.user(&i.author),
            "body": i.body,
            "labels": i.labels.iter().map(|l| self.label(l)).collect::<Vec<_>>(),
            "milestone": null,
            "active_lock_reason": null,
            "created_at": stamp(i.created_at),
            "updated_at": stamp(i.updated_at),
            "closed_at": opt_stamp(i.closed_at),
            "merged_at": opt_stamp(p.merged_at),
            "merge_commit_sha": p.merge_commit_sha,
            "assignee": null,
            "assignees": [],
            "requested_reviewers": [],
            "requested_teams": [],
            "head": end(&p.head, &p.head_sha),
            "base": end(&p.base, &sha_of(&p.base)),
            "_links": links,
            "author_association": self.association(&i.author),
            "auto_merge": auto_merge,
            "draft": p.draft,
        });
        if full {
            let merged = p.merged_at.is_some();
            let state = self.merge_state(number);
            let mergeable = match state {
                "unknown" => Value::Null,
                "dirty" => Value::Bool(false),
                _ => Value::Bool(true),
            };
            let extra = json!({
                "merged": merged,
                "mergeable": mergeable,
                "rebaseable": mergeable,
                "mergeable_state": state,
                "merged_by": p.merged_by.as_deref().map_or(Value::Null, |u| self.user(u)),
                "comments": self.comments.iter().filter(|c| c.issue == number).count(),
                "review_comments": 0,
                "maintainer_can_modify": false,
                "commits": 1,
                "additions": 1,
                "deletions": 0,
                "changed_files": 1,
            });
            if let (Some(v), Value::Object(extra)) = (v.as_object_mut(), extra) {
                v.extend(extra);
            }
        }
        v
    }

    /// GitHub's `mergeable_state`: `dirty` (a conflict), `draft`, `blocked` (the protection's
    /// approvals or checks missing, or changes requested), `clean` (it could merge now), or
    /// `unknown` once merged.
    fn merge_state(&self, number: u64) -> &'static str {
        let Some(p) = self.pulls.get(&number) else {
            return "unknown";
        };
        if p.merged_at.is_some() {
            return "unknown";
        }
        if p.conflict {
            return "dirty";
        }
        if p.draft {
            return "draft";
        }
        let Some(protection) = &self.protection else {
            return "clean";
        };
        // Each reviewer's latest verdict counts.
        let mut verdicts: BTreeMap<&str, &str> = BTreeMap::new();
        for r in self.reviews.iter().filter(|r| r.pull == number) {
            if r.state != "COMMENTED" {
                verdicts.insert(&r.author, &r.state);
            }
        }
        let approvals = verdicts.values().filter(|v| **v == "APPROVED").count();
        let changes = verdicts.values().any(|v| *v == "CHANGES_REQUESTED");
        let checks = protection.checks.iter().all(|name| {
            let latest = self
                .checks
                .iter()
                .rev()
                .find(|c| c.sha == p.head_sha && c.name == *name);
            latest.is_some_and(|c| c.conclusion.as_deref() == Some("success"))
        });
        if approvals < protection.approvals || changes || !checks {
            "blocked"
        } else {
            "clean"
        }
    }

    fn do_merge(&mut self, number: u64, by: &str) {
        let now = self.tick();
        let mut into_default = false;
        let mut texts = Vec::new();
        if let Some(p) = self.pulls.get_mut(&number) {
            p.merged_at = Some(now);
            p.merged_by = Some(by.to_owned());
            p.merge_commit_sha = Some(sha_of(&format!("merge-{number}")));
            into_default = p.base == DEFAULT_BRANCH;
            let (base, head) = (p.base.clone(), p.head_sha.clone());
            texts.extend(self.commit_messages(&base, &head));
        }
        if let Some(i) = self.issues.get_mut(&number) {
            i.state = "closed".into();
            i.closed_at = Some(now);
            i.updated_at = now;
            texts.push(i.body.clone());
        }
        // GitHub closes the issues the pull request's body or commits name with a closing
        // keyword, when it merges into the default branch; their labels stay on.
        if !into_default {
            return;
        }
        let mut closes = Vec::new();
        for t in &texts {
            for n in closing_refs(t, &self.owner, &self.repo) {
                if !closes.contains(&n) {
                    closes.push(n);
                }
            }
        }
        for n in closes {
            if self.pulls.contains_key(&n) {
                continue;
            }
            if let Some(i) = self.issues.get_mut(&n)
                && i.state == "open"
            {
                i.state = "closed".into();
                i.closed_at = Some(now);
                i.updated_at = now;
                i.state_reason = Some("completed".into());
            }
        }
    }

    /// The messages of the commits on `head` that `base` lacks (from the attached git
    /// repository; none without one).
    fn commit_messages(&self, base: &str, head: &str) -> Vec<String> {
        let Some(dir) = &self.git else {
            return Vec::new();
        };
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args([
                "log",
                "-z",
                "--format=%B",
                &format!("refs/heads/{base}..{head}"),
            ])
            .output();
        match out {
            Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout)
                .split('\0')
                .filter(|m| !m.trim().is_empty())
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Merges every open pull request with auto-merge on that could merge now, as GitHub
    /// does (by whoever enabled it).
    fn settle(&mut self) {
        let ready: Vec<(u64, String)> = self
            .pulls
            .values()
            .filter(|p| {
                self.issues
                    .get(&p.number)
                    .is_some_and(|i| i.state == "open")
            })
            .filter_map(|p| p.auto_merge.as_ref().map(|(_, by)| (p.number, by.clone())))
            .filter(|(n, _)| self.merge_state(*n) == "clean")
            .collect();
        for (number, by) in ready {
            self.do_merge(number, &by);
        }
    }

    fn review(&self, r: &ReviewRec) -> Value {
        let pull_api = format!("{}/pulls/{}", self.repo_api(), r.pull);
        let html = format!(
            "{}/pull/{}#pullrequestreview-{}",
            self.repo_html(),
            r.pull,
            r.id
        );
        json!({
            "id": r.id,
            "node_id": format!("PRR_kwDO{}", r.id),
            "user": self.user(&r.author),
            "body": r.body,
            "state": r.state,
            "html_url": html,
            "pull_request_url": pull_api,
            "_links": { "html": { "href": html }, "pull_request": { "href": pull_api } },
            "submitted_at": stamp(r.submitted_at),
            "commit_id": r.commit,
            "author_association": self.association(&r.author),
        })
    }

    fn check(&self, c: &CheckRec) -> Value {
        let api = format!("{}/check-runs/{}", self.repo_api(), c.id);
        json!({
            "id": c.id,
            "head_sha": c.sha,
            "node_id": format!("CR_kwDO{}", c.id),
            "external_id": "",
            "url": api,
            "html_url": format!("{}/runs/{}", self.repo_html(), c.id),
            "details_url": format!("{}/runs/{}", self.repo_html(), c.id),
            "status": c.status,
            "conclusion": c.conclusion,
            "started_at": stamp(c.started_at),
            "completed_at": opt_stamp(c.completed_at),
            "output": {
                "title": null,
                "summary": null,
                "text": null,
                "annotations_count": 0,
                "annotations_url": format!("{api}/annotations"),
            },
            "name": c.name,
            "check_suite": { "id": c.id + 1_000_000 },
            "app": null,
            "pull_requests": [],
        })
    }

    fn add_issue_rec(&mut self, title: &str, body: &str, labels: &[&str], author: &str) -> u64 {
        let now = self.tick();
        self.next_number += 1;
        let number = self.next_number;
        let id = self.id();
        for l in labels {
            self.ensure_label(l);
        }
        self.issues.insert(
            number,
            IssueRec {
                number,
                id,
                title: title.to_owned(),
                body: body.to_owned(),
                author: author.to_owned(),
                labels: labels.iter().map(|l| (*l).to_owned()).collect(),
                state: "open".into(),
                created_at: now,
                updated_at: now,
                closed_at: None,
                state_reason: None,
            },
        );
        number
    }

    fn ensure_label(&mut self, name: &str) {
        if !self.labels.iter().any(|l| l.name == name) {
            let id = self.id();
            self.labels.push(LabelRec {
                id,
                name: name.to_owned(),
                color: "ededed".into(),
                description: String::new(),
            });
        }
    }

    fn touch(&mut self, number: u64) {
        let now = self.now;
        if let Some(i) = self.issues.get_mut(&number) {
            i.updated_at = now;
        }
    }
}

/// Pagination: the page of `items` the query asks for, and its `link` header.
fn paginate(base: &str, path: &str, query: &[(String, String)], items: Vec<Value>) -> Reply {
    let per_page = query
        .iter()
        .find(|(k, _)| k == "per_page")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(30)
        .clamp(1, 100);
    let page = query
        .iter()
        .find(|(k, _)| k == "page")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1);
    let last = items.len().div_ceil(per_page).max(1);
    let body: Vec<Value> = items
        .into_iter()
        .skip((page - 1) * per_page)
        .take(per_page)
        .collect();
    let url_for = |n: usize| {
        let mut pairs: Vec<String> = query
            .iter()
            .filter(|(k, _)| k != "page")
            .map(|(k, v)| format!("{}={}", pct(k), pct(v)))
            .collect();
        pairs.push(format!("page={n}"));
        format!("{base}{path}?{}", pairs.join("&"))
    };
    // In GitHub's order: prev, next, last, first.
    let mut links = Vec::new();
    if page > 1 {
        links.push(format!("<{}>; rel=\"prev\"", url_for(page - 1)));
    }
    if page < last {
        links.push(format!("<{}>; rel=\"next\"", url_for(page + 1)));
        links.push(format!("<{}>; rel=\"last\"", url_for(last)));
    }
    if page > 1 {
        links.push(format!("<{}>; rel=\"first\"", url_for(1)));
    }
    let reply = Reply::json(200, Value::Array(body));
    if links.is_empty() {
        reply
    } else {
        reply.header("link", links.join(", "))
    }
}

const GRAPHQL_ROUTE: &str = "/graphql";

/// Routes one request: GitHub's template for it and its answer.
fn route(
    st: &mut State,
    method: &Method,
    segments: &[String],
    path: &str,
    query: &[(String, String)],
    body: Option<&Value>,
) -> (Option<&'static str>, Reply) {
    if segments.len() == 1 && segments[0] == "graphql" {
        let reply = if *method == Method::POST {
            graphql(st, body)
        } else {
            Reply::not_found()
        };
        return (Some(GRAPHQL_ROUTE), reply);
    }
    let [r, owner, repo, rest @ ..] = segments else {
        return (None, Reply::not_found());
    };
    if r != "repos" {
        return (None, Reply::not_found());
    }
    if *owner != st.owner || *repo != st.repo {
        return (route_template(method, segments), Reply::not_found());
    }
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    let num = |s: &str| s.parse::<u64>().ok();
    let (template, reply): (&'static str, Reply) = match (method.as_str(), rest.as_slice()) {
        ("GET", ["issues"]) => ("/repos/{owner}/{repo}/issues", list_issues(st, path, query)),
        ("POST", ["issues"]) => ("/repos/{owner}/{repo}/issues", create_issue(st, body)),
        ("GET", ["issues", "comments", id]) => (
            "/repos/{owner}/{repo}/issues/comments/{comment_id}",
            match num(id).and_then(|id| st.comments.iter().find(|c| c.id == id)) {
                Some(c) => Reply::json(200, st.comment(c)),
                None => Reply::not_found(),
            },
        ),
        ("PATCH", ["issues", "comments", id]) => (
            "/repos/{owner}/{repo}/issues/comments/{comment_id}",
            edit_comment(st, num(id), body),
        ),
        ("DELETE", ["issues", "comments", id]) => (
            "/repos/{owner}/{repo}/issues/comments/{comment_id}",
            match st.comments.iter().position(|c| Some(c.id) == num(id)) {
                Some(at) => {
                    st.tick();
                    let c = st.comments.remove(at);
                    st.touch(c.issue);
                    Reply::no_content()
                }
                None => Reply::not_found(),
            },
        ),
        // A reference's name may come percent-encoded (`heads%2Fmain`) or as segments.
        ("GET", ["git", "ref", name @ ..]) if !name.is_empty() => (
            "/repos/{owner}/{repo}/git/ref/{ref}",
            match st.refs.get(&format!("refs/{}", name.join("/"))) {
                Some(sha) => Reply::json(200, st.git_ref(&format!("refs/{}", name.join("/")), sha)),
                None => Reply::not_found(),
            },
        ),
        ("GET", ["git", "matching-refs", prefix @ ..]) if !prefix.is_empty() => {
            ("/repos/{owner}/{repo}/git/matching-refs/{ref}", {
                let prefix = format!("refs/{}", prefix.join("/"));
                let items = st
                    .refs
                    .iter()
                    .filter(|(n, _)| n.starts_with(&prefix))
                    .map(|(n, sha)| st.git_ref(n, sha))
                    .collect();
                Reply::json(200, Value::Array(items))
            })
        }
        ("POST", ["git", "refs"]) => ("/repos/{owner}/{repo}/git/refs", create_ref(st, body)),
        ("DELETE", ["git", "refs", name @ ..]) if !name.is_empty() => {
            ("/repos/{owner}/{repo}/git/refs/{ref}", {
                let full = format!("refs/{}", name.join("/"));
                if full.starts_with("refs/heads/") && st.git.is_some() {
                    Reply::error(
                        422,
                        "the fake serves branches from its git repository: push to delete",
                    )
                } else if st.refs.remove(&full).is_some() {
                    Reply::no_content()
                } else {
                    Reply::error(422, "Reference does not exist")
                }
            })
        }
        ("POST", ["git", "commits"]) => {
            ("/repos/{owner}/{repo}/git/commits", create_commit(st, body))
        }
        ("GET", ["git", "commits", sha]) => (
            "/repos/{owner}/{repo}/git/commits/{commit_sha}",
            match st.commits.get(*sha) {
                Some(c) => Reply::json(200, st.git_commit(sha, c)),
                None => Reply::not_found(),
            },
        ),
        ("GET", ["issues", n]) => (
            "/repos/{owner}/{repo}/issues/{issue_number}",
            match num(n).filter(|n| st.issues.contains_key(n)) {
                Some(n) => Reply::json(200, st.issue(n)),
                None => Reply::not_found(),
            },
        ),
        ("GET", ["issues", n, "comments"]) => (
            "/repos/{owner}/{repo}/issues/{issue_number}/comments",
            match num(n).filter(|n| st.issues.contains_key(n)) {
                Some(n) => {
                    let items = st
                        .comments
                        .iter()
                        .filter(|c| c.issue == n)
                        .map(|c| st.comment(c))
                        .collect();
                    paginate(&st.base, path, query, items)
                }
                None => Reply::not_found(),
            },
        ),
        ("POST", ["issues", n, "comments"]) => (
            "/repos/{owner}/{repo}/issues/{issue_number}/comments",
            create_comment(st, num(n), body),
        ),
        ("GET", ["issues", n, "labels"]) => (
            "/repos/{owner}/{repo}/issues/{issue_number}/labels",
            match num(n).and_then(|n| st.issues.get(&n)) {
                Some(i) => {
                    let items = i.labels.iter().map(|l| st.label(l)).collect();
                    paginate(&st.base, path, query, items)
                }
                None => Reply::not_found(),
            },
        ),
        ("POST", ["issues", n, "labels"]) => (
            "/repos/{owner}/{repo}/issues/{issue_number}/labels",
            add_labels(st, num(n), body),
        ),
        ("DELETE", ["issues", n, "labels", name]) => (
            "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}",
            remove_label(st, num(n), name),
        ),
        ("GET", ["labels"]) => ("/repos/{owner}/{repo}/labels", {
            let items = st.labels.iter().map(|l| st.label(&l.name)).collect();
            paginate(&st.base, path, query, items)
        }),
        ("POST", ["labels"]) => ("/repos/{owner}/{repo}/labels", create_label(st, body)),
        ("GET", ["pulls"]) => ("/repos/{owner}/{repo}/pulls", list_pulls(st, path, query)),
        ("POST", ["pulls"]) => ("/repos/{owner}/{repo}/pulls", create_pull(st, body)),
        ("GET", ["pulls", n]) => (
            "/repos/{owner}/{repo}/pulls/{pull_number}",
            match num(n).filter(|n| st.pulls.contains_key(n)) {
                Some(n) => Reply::json(200, st.pull(n, true)),
                None => Reply::not_found(),
            },
        ),
        ("PATCH", ["pulls", n]) => (
            "/repos/{owner}/{repo}/pulls/{pull_number}",
            update_pull(st, num(n), body),
        ),
        ("GET", ["pulls", n, "reviews"]) => (
            "/repos/{owner}/{repo}/pulls/{pull_number}/reviews",
            match num(n).filter(|n| st.pulls.contains_key(n)) {
                Some(n) => {
                    let items = st
                        .reviews
                        .iter()
                        .filter(|r| r.pull == n)
                        .map(|r| st.review(r))
                        .collect();
                    paginate(&st.base, path, query, items)
                }
                None => Reply::not_found(),
            },
        ),
        ("GET", ["commits", git_ref, "check-runs"]) => (
            "/repos/{owner}/{repo}/commits/{ref}/check-runs",
            list_checks(st, git_ref, path, query),
        ),
        ("GET", ["collaborators", user, "permission"]) => (
            "/repos/{owner}/{repo}/collaborators/{username}/permission",
            {
                let role = st.collaborators.get(*user).cloned().unwrap_or_else(|| {
                    if *user == st.owner {
                        "admin".into()
                    } else {
                        "read".into()
                    }
                });
                let mut collaborator = st.user(user);
                collaborator["role_name"] = Value::String(role.clone());
                collaborator["permissions"] = json!({
                    "pull": true,
                    "triage": role != "read",
                    "push": matches!(role.as_str(), "write" | "maintain" | "admin"),
                    "maintain": matches!(role.as_str(), "maintain" | "admin"),
                    "admin": role == "admin",
                });
                Reply::json(
                    200,
                    json!({
                        "permission": legacy_permission(&role),
                        "role_name": role,
                        "user": collaborator,
                    }),
                )
            },
        ),
        _ => return (None, Reply::not_found()),
    };
    (Some(template), reply)
}

fn list_issues(st: &State, path: &str, query: &[(String, String)]) -> Reply {
    let q = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let state = q("state").unwrap_or("open");
    let wanted: Vec<&str> = q("labels")
        .map(|l| l.split(',').filter(|s| !s.is_empty()).collect())
        .unwrap_or_default();
    let items = st
        .issues
        .values()
        .rev()
        .filter(|i| state == "all" || i.state == state)
        .filter(|i| wanted.iter().all(|w| i.labels.iter().any(|l| l == w)))
        .map(|i| st.issue(i.number))
        .collect();
    paginate(&st.base, path, query, items)
}

fn create_issue(st: &mut State, body: Option<&Value>) -> Reply {
    let Some(title) = body_str(body, "title").filter(|t| !t.trim().is_empty()) else {
        return Reply::invalid("Issue", "title", "missing_field", None);
    };
    let text = body_str(body, "body").unwrap_or_default().to_owned();
    let labels = body_strings(body, "labels");
    let refs: Vec<&str> = labels.iter().map(String::as_str).collect();
    let author = st.viewer.clone();
    let title = title.to_owned();
    let n = st.add_issue_rec(&title, &text, &refs, &author);
    Reply::json(201, st.issue(n))
}

/// The strings of the array `key` of a request body (none when missing).
fn body_strings(body: Option<&Value>, key: &str) -> Vec<String> {
    body.and_then(|b| b.get(key))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn body_str<'a>(body: Option<&'a Value>, key: &str) -> Option<&'a str> {
    body.and_then(|b| b.get(key)).and_then(Value::as_str)
}

fn create_comment(st: &mut State, issue: Option<u64>, body: Option<&Value>) -> Reply {
    let Some(issue) = issue.filter(|n| st.issues.contains_key(n)) else {
        return Reply::not_found();
    };
    let Some(text) = body_str(body, "body") else {
        return Reply::invalid("IssueComment", "body", "missing_field", None);
    };
    let now = st.tick();
    let id = st.id();
    let author = st.viewer.clone();
    let comment = CommentRec {
        id,
        issue,
        association: st.association(&author),
        author,
        body: text.to_owned(),
        created_at: now,
        updated_at: now,
    };
    st.touch(issue);
    let v = st.comment(&comment);
    st.comments.push(comment);
    Reply::json(201, v).header(
        "location",
        format!("{}/issues/comments/{id}", st.repo_api()),
    )
}

fn edit_comment(st: &mut State, id: Option<u64>, body: Option<&Value>) -> Reply {
    let Some(text) = body_str(body, "body").map(str::to_owned) else {
        return Reply::invalid("IssueComment", "body", "missing_field", None);
    };
    let now = st.tick();
    let Some(c) = st.comments.iter_mut().find(|c| Some(c.id) == id) else {
        return Reply::not_found();
    };
    c.body = text;
    c.updated_at = now;
    let c = c.clone();
    Reply::json(200, st.comment(&c))
}

fn add_labels(st: &mut State, issue: Option<u64>, body: Option<&Value>) -> Reply {
    let Some(issue) = issue.filter(|n| st.issues.contains_key(n)) else {
        return Reply::not_found();
    };
    let names: Option<Vec<String>> = body
        .and_then(|b| b.get("labels").or(Some(b)))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        });
    let Some(names) = names.filter(|n| !n.is_empty()) else {
        return Reply::invalid("Label", "labels", "missing_field", None);
    };
    st.tick();
    for name in &names {
        st.ensure_label(name);
    }
    if let Some(i) = st.issues.get_mut(&issue) {
        for name in names {
            if !i.labels.contains(&name) {
                i.labels.push(name);
            }
        }
    }
    st.touch(issue);
    let labels: Vec<Value> = st.issues[&issue]
        .labels
        .iter()
        .map(|l| st.label(l))
        .collect();
    Reply::json(200, Value::Array(labels))
}

fn create_ref(st: &mut State, body: Option<&Value>) -> Reply {
    let (Some(name), Some(sha)) = (body_str(body, "ref"), body_str(body, "sha")) else {
        return Reply::invalid("Reference", "ref", "missing_field", None);
    };
    if !name.starts_with("refs/") || name.matches('/').count() < 2 {
        return Reply::error(422, "Reference name is invalid");
    }
    if name.starts_with("refs/heads/") && st.git.is_some() {
        return Reply::error(
            422,
            "the fake serves branches from its git repository: push them",
        );
    }
    if st.refs.contains_key(name) {
        return Reply::error(422, "Reference already exists");
    }
    if !st.commits.contains_key(sha) && !st.refs.values().any(|s| s == sha) {
        return Reply::error(422, "Object does not exist");
    }
    st.tick();
    st.refs.insert(name.to_owned(), sha.to_owned());
    let v = st.git_ref(name, sha);
    Reply::json(201, v).header("location", format!("{}/git/{}", st.repo_api(), name))
}

fn create_commit(st: &mut State, body: Option<&Value>) -> Reply {
    let (Some(message), Some(tree)) = (body_str(body, "message"), body_str(body, "tree")) else {
        return Reply::invalid("Commit", "message", "missing_field", None);
    };
    let known_tree = st.commits.values().any(|c| c.tree == tree);
    if !known_tree {
        return Reply::error(422, "Tree SHA does not exist");
    }
    let parents = body_strings(body, "parents");
    let date = st.tick();
    let sha = sha_of(&format!(
        "{message}\n{tree}\n{parents:?}\n{date}\n{}",
        st.next_id
    ));
    st.id();
    let rec = CommitRec {
        message: message.to_owned(),
        tree: tree.to_owned(),
        parents,
        date,
    };
    let v = st.git_commit(&sha, &rec);
    st.commits.insert(sha.clone(), rec);
    Reply::json(201, v).header("location", format!("{}/git/commits/{sha}", st.repo_api()))
}

fn remove_label(st: &mut State, issue: Option<u64>, name: &str) -> Reply {
    let Some(issue) = issue.filter(|n| st.issues.contains_key(n)) else {
        return Reply::not_found();
    };
    let had = st
        .issues
        .get(&issue)
        .is_some_and(|i| i.labels.iter().any(|l| l == name));
    if !had {
        return Reply::error(404, "Label does not exist");
    }
    st.tick();
    if let Some(i) = st.issues.get_mut(&issue) {
        i.labels.retain(|l| l != name);
    }
    st.touch(issue);
    let labels: Vec<Value> = st.issues[&issue]
        .labels
        .iter()
        .map(|l| st.label(l))
        .collect();
    Reply::json(200, Value::Array(labels))
}

fn create_label(st: &mut State, body: Option<&Value>) -> Reply {
    let Some(name) = body_str(body, "name").map(str::to_owned) else {
        return Reply::invalid("Label", "name", "missing_field", None);
    };
    if st.labels.iter().any(|l| l.name.eq_ignore_ascii_case(&name)) {
        return Reply::invalid("Label", "name", "already_exists", None);
    }
    let color = body_str(body, "color")
        .map(|c| c.trim_start_matches('#').to_owned())
        .unwrap_or_else(|| "ededed".into());
    // GitHub takes six hex digits, and answers anything else as an invalid field.
    if color.len() != 6 || !color.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Reply::invalid("Label", "color", "invalid", None);
    }
    let description = body_str(body, "description").unwrap_or_default().to_owned();
    st.tick();
    let id = st.id();
    st.labels.push(LabelRec {
        id,
        name: name.clone(),
        color,
        description,
    });
    Reply::json(201, st.label(&name)).header(
        "location",
        format!("{}/labels/{}", st.repo_api(), pct(&name)),
    )
}

fn list_pulls(st: &State, path: &str, query: &[(String, String)]) -> Reply {
    let q = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let state = q("state").unwrap_or("open");
    let head = q("head").map(|h| match h.split_once(':') {
        Some((owner, branch)) => (Some(owner.to_owned()), branch.to_owned()),
        None => (None, h.to_owned()),
    });
    let items = st
        .pulls
        .values()
        .rev()
        .filter(|p| {
            let issue_state = st
                .issues
                .get(&p.number)
                .map_or("open", |i| i.state.as_str());
            state == "all" || issue_state == state
        })
        .filter(|p| match &head {
            None => true,
            Some((owner, branch)) => {
                owner.as_deref().is_none_or(|o| o == st.owner) && *branch == p.head
            }
        })
        .filter(|p| q("base").is_none_or(|b| b == p.base))
        .map(|p| st.pull(p.number, false))
        .collect();
    paginate(&st.base, path, query, items)
}

fn create_pull(st: &mut State, body: Option<&Value>) -> Reply {
    let (Some(head), Some(base)) = (body_str(body, "head"), body_str(body, "base")) else {
        return Reply::invalid("PullRequest", "head", "missing_field", None);
    };
    let head = head.rsplit_once(':').map_or(head, |(_, b)| b).to_owned();
    let base = base.to_owned();
    let exists = st
        .pulls
        .values()
        .any(|p| p.head == head && st.issues.get(&p.number).is_some_and(|i| i.state == "open"));
    if exists {
        let message = format!("A pull request already exists for {}:{head}.", st.owner);
        return Reply::invalid("PullRequest", "head", "custom", Some(&message));
    }
    let head_sha = match &st.git {
        Some(_) => match st.refs.get(&format!("refs/heads/{head}")) {
            Some(sha) => sha.clone(),
            None => return Reply::invalid("PullRequest", "head", "invalid", None),
        },
        None => sha_of(&head),
    };
    let title = body_str(body, "title").unwrap_or(&head).to_owned();
    let text = body_str(body, "body").unwrap_or_default().to_owned();
    let draft = body
        .and_then(|b| b.get("draft"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let viewer = st.viewer.clone();
    let number = st.add_issue_rec(&title, &text, &[], &viewer);
    let id = st.id();
    st.pulls.insert(
        number,
        PullRec {
            number,
            id,
            head_sha,
            head,
            base,
            draft,
            merged_at: None,
            merged_by: None,
            merge_commit_sha: None,
            auto_merge: None,
            conflict: false,
        },
    );
    Reply::json(201, st.pull(number, true))
        .header("location", format!("{}/pulls/{number}", st.repo_api()))
}

fn update_pull(st: &mut State, number: Option<u64>, body: Option<&Value>) -> Reply {
    let Some(number) = number.filter(|n| st.pulls.contains_key(n)) else {
        return Reply::not_found();
    };
    let now = st.tick();
    if let Some(base) = body_str(body, "base")
        && let Some(p) = st.pulls.get_mut(&number)
    {
        p.base = base.to_owned();
    }
    let merged = st.pulls.get(&number).is_some_and(|p| p.merged_at.is_some());
    if let Some(i) = st.issues.get_mut(&number) {
        if let Some(title) = body_str(body, "title") {
            i.title = title.to_owned();
        }
        if let Some(text) = body_str(body, "body") {
            i.body = text.to_owned();
        }
        match body_str(body, "state") {
            Some("closed") if i.state == "open" => {
                i.state = "closed".into();
                i.closed_at = Some(now);
            }
            Some("open") if i.state == "closed" && !merged => {
                i.state = "open".into();
                i.closed_at = None;
            }
            _ => {}
        }
        i.updated_at = now;
    }
    Reply::json(200, st.pull(number, true))
}

fn list_checks(st: &State, git_ref: &str, path: &str, query: &[(String, String)]) -> Reply {
    // A branch name resolves to its open pull request's head; anything else is taken as a sha.
    let sha = st
        .pulls
        .values()
        .find(|p| p.head == git_ref)
        .map_or_else(|| git_ref.to_owned(), |p| p.head_sha.clone());
    let all: Vec<Value> = st
        .checks
        .iter()
        .filter(|c| c.sha == sha)
        .map(|c| st.check(c))
        .collect();
    let total = all.len();
    let page = paginate(&st.base, path, query, all);
    let runs = page.body.unwrap_or(Value::Array(Vec::new()));
    Reply {
        status: 200,
        headers: page.headers,
        body: Some(json!({ "total_count": total, "check_runs": runs })),
    }
}

fn graphql(st: &mut State, body: Option<&Value>) -> Reply {
    let query = body_str(body, "query").unwrap_or_default().to_owned();
    let variables = body
        .and_then(|b| b.get("variables"))
        .cloned()
        .unwrap_or(Value::Null);
    let error = |message: &str| {
        Reply::json(
            200,
            json!({ "data": null, "errors": [{ "type": "UNPROCESSABLE", "message": message }] }),
        )
    };
    if query.contains("projectV2(number:") || query.contains("ProjectV2Item") {
        return projects(st, &query, &variables);
    }
    let id = variables
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let number = id
        .strip_prefix("PR_kwDO")
        .and_then(|n| n.parse::<u64>().ok())
        .filter(|n| st.pulls.contains_key(n));
    let Some(number) = number else {
        return error(&format!(
            "Could not resolve to a node with the global id of '{id}'"
        ));
    };
    st.tick();
    if query.contains("markPullRequestReadyForReview") {
        if let Some(p) = st.pulls.get_mut(&number) {
            p.draft = false;
        }
        st.touch(number);
        return Reply::json(
            200,
            json!({ "data": { "markPullRequestReadyForReview": { "pullRequest": { "number": number, "isDraft": false } } } }),
        );
    }
    if query.contains("enablePullRequestAutoMerge") {
        let method = variables
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("MERGE")
            .to_ascii_lowercase();
        let viewer = st.viewer.clone();
        // GitHub refuses auto-merge for a pull request that could merge right now.
        match st.merge_state(number) {
            "unknown" => return error("Pull request is already merged"),
            "dirty" => return error("Pull request is not mergeable: it has merge conflicts"),
            "clean" => return error("Pull request is in clean status"),
            _ => {}
        }
        let Some(p) = st.pulls.get_mut(&number) else {
            return error("not found");
        };
        p.auto_merge = Some((method.clone(), viewer));
        st.touch(number);
        return Reply::json(
            200,
            json!({ "data": { "enablePullRequestAutoMerge": { "pullRequest": { "number": number, "autoMergeRequest": { "mergeMethod": method.to_ascii_uppercase() } } } } }),
        );
    }
    error("this fake answers only markPullRequestReadyForReview and enablePullRequestAutoMerge")
}

/// The Project (v2) part of GraphQL: a project's field, adding an item, setting its field.
fn projects(st: &mut State, query: &str, v: &Value) -> Reply {
    let s = |k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let error = |message: String| {
        Reply::json(
            200,
            json!({ "data": null, "errors": [{ "type": "NOT_FOUND", "message": message }] }),
        )
    };
    let project_of = |st: &State, id: &str| {
        st.projects
            .iter()
            .position(|p| format!("PVT_{}", p.number) == id)
    };
    if query.contains("projectV2(number:") {
        if s("owner") != st.owner {
            return error(format!(
                "Could not resolve to a ProjectV2Owner with the login of '{}'.",
                s("owner")
            ));
        }
        let number = v.get("number").and_then(Value::as_u64).unwrap_or_default();
        let Some(p) = st.projects.iter().find(|p| p.number == number) else {
            return Reply::json(
                200,
                json!({ "data": { "repositoryOwner": { "projectV2": null } } }),
            );
        };
        let field = if p.field == s("field") {
            json!({
                "id": format!("PVTSSF_{}", p.number),
                "options": p.options.iter().enumerate().map(|(i, o)| json!({
                    "id": format!("PVTSSF_{}_{i}", p.number), "name": o,
                })).collect::<Vec<_>>(),
            })
        } else {
            Value::Null
        };
        return Reply::json(
            200,
            json!({ "data": { "repositoryOwner": { "projectV2": { "id": format!("PVT_{}", p.number), "field": field } } } }),
        );
    }
    let Some(at) = project_of(st, &s("project")) else {
        return error(format!(
            "Could not resolve to a node with the global id of '{}'",
            s("project")
        ));
    };
    if query.contains("addProjectV2ItemById") {
        let content = s("content");
        let known = st
            .issues
            .values()
            .any(|i| format!("I_kwDO{}", i.id) == content);
        if !known {
            return error(format!(
                "Could not resolve to a node with the global id of '{content}'"
            ));
        }
        st.tick();
        let p = &mut st.projects[at];
        let next = p.items.len() + 1;
        let item = p
            .items
            .entry(content)
            .or_insert((format!("PVTI_{}_{next}", p.number), None))
            .0
            .clone();
        return Reply::json(
            200,
            json!({ "data": { "addProjectV2ItemById": { "item": { "id": item } } } }),
        );
    }
    if query.contains("updateProjectV2ItemFieldValue") {
        let (item, field, option) = (s("item"), s("field"), s("option"));
        let p = &mut st.projects[at];
        if field != format!("PVTSSF_{}", p.number) {
            return error(format!(
                "Could not resolve to a node with the global id of '{field}'"
            ));
        }
        let Some(index) = option
            .rsplit('_')
            .next()
            .and_then(|i| i.parse::<usize>().ok())
            .filter(|i| *i < p.options.len() && option == format!("PVTSSF_{}_{i}", p.number))
        else {
            return error(format!(
                "The single select option Id does not belong to the field: {option}"
            ));
        };
        let Some(entry) = p.items.values_mut().find(|(id, _)| *id == item) else {
            return error(format!(
                "Could not resolve to a node with the global id of '{item}'"
            ));
        };
        entry.1 = Some(index);
        st.tick();
        return Reply::json(
            200,
            json!({ "data": { "updateProjectV2ItemFieldValue": { "projectV2Item": { "id": item } } } }),
        );
    }
    error("this fake answers only a project's field, addProjectV2ItemById and updateProjectV2ItemFieldValue".into())
}

fn failure_reply(failure: &Failure) -> Reply {
    match failure {
        Failure::SecondaryLimit { retry_after } => Reply::error(
            403,
            "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
        )
        .header("retry-after", retry_after.to_string()),
        Failure::TooManyRequests { retry_after } => {
            Reply::error(429, "Too many requests").header("retry-after", retry_after.to_string())
        }
        Failure::PrimaryLimit { reset } => Reply::error(403, "API rate limit exceeded")
            .header("x-ratelimit-remaining", "0")
            .header("x-ratelimit-reset", reset.to_string())
            .header("x-ratelimit-limit", "5000"),
        Failure::Status(404) | Failure::AppliedThen(404) => Reply::not_found(),
        // GitHub's own words for a refused token and a missing permission.
        Failure::Status(401) => Reply::error(401, "Bad credentials"),
        Failure::Status(403) => Reply::error(403, "Resource not accessible by integration"),
        Failure::Status(status) | Failure::AppliedThen(status) => {
            Reply::error(*status, "Server Error")
        }
        Failure::AppliedThenHang => Reply::error(504, "Gateway Timeout"),
    }
}

fn etag_of(body: &str) -> String {
    format!(
        "\"{:016x}{:016x}\"",
        fnv(body),
        fnv(&body.len().to_string())
    )
}

async fn handle(
    AxumState((state, gate)): AxumState<(Arc<Mutex<State>>, Arc<tokio::sync::Notify>)>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    let hold = {
        let mut st = State::lock(&state);
        match st.hold_in {
            Some(1) => {
                st.hold_in = None;
                st.holding = true;
                true
            }
            Some(n) => {
                st.hold_in = Some(n - 1);
                false
            }
            None => false,
        }
    };
    if hold {
        gate.notified().await;
        State::lock(&state).holding = false;
    }
    let (response, hang) = answer(&state, &method, &uri, &headers, &bytes);
    if hang {
        std::future::pending::<()>().await;
    }
    response
}

/// Answers a request; `true`: the answer is to be held back forever.
fn answer(
    state: &Arc<Mutex<State>>,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    bytes: &Bytes,
) -> (Response, bool) {
    let raw_path = uri.path().to_owned();
    let segments: Vec<String> = raw_path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(unpct)
        .collect();
    let path = format!("/{}", segments.join("/"));
    let query: Vec<(String, String)> = uri
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (unpct(k), unpct(v)),
            None => (unpct(p), String::new()),
        })
        .collect();
    let header_list: Vec<(String, String)> = headers
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let body: Option<Value> = if bytes.is_empty() {
        None
    } else {
        Some(
            serde_json::from_slice(bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned())),
        )
    };

    let mut st = State::lock(state);
    st.sync_git();
    let mut hang = false;
    let authorized = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("Bearer ") || v.starts_with("token "));
    let (template, mut reply) = if authorized {
        let probe = route_template(method, &segments);
        let rule = st.rules.iter_mut().find(|r| {
            r.times > 0 && r.method == method.as_str() && Some(r.route.as_str()) == probe
        });
        match rule.map(|r| {
            r.times -= 1;
            r.failure.clone()
        }) {
            Some(Failure::AppliedThen(status)) => {
                let (t, _) = route(&mut st, method, &segments, &path, &query, body.as_ref());
                (t, failure_reply(&Failure::AppliedThen(status)))
            }
            Some(Failure::AppliedThenHang) => {
                let (t, r) = route(&mut st, method, &segments, &path, &query, body.as_ref());
                hang = true;
                (t, r)
            }
            Some(failure) => (probe, failure_reply(&failure)),
            None => route(&mut st, method, &segments, &path, &query, body.as_ref()),
        }
    } else {
        (None, Reply::error(401, "Requires authentication"))
    };
    st.rules.retain(|r| r.times > 0);
    st.settle();

    let text = reply
        .body
        .as_ref()
        .map(Value::to_string)
        .unwrap_or_default();
    if method == Method::GET && reply.status == 200 {
        let etag = etag_of(&text);
        let matches = headers
            .get("if-none-match")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
        if matches {
            // A 304 carries the caching headers only: no body, and no `link`.
            reply.status = 304;
            reply.body = None;
            reply.headers.retain(|(name, _)| name != "link");
        }
        reply.headers.push(("etag".into(), etag));
    }
    if reply.status != 304 {
        st.served += 1;
    }
    let has_limit = reply
        .headers
        .iter()
        .any(|(n, _)| n == "x-ratelimit-remaining");
    if !has_limit && let Some(reset) = st.spent_until.take() {
        reply
            .headers
            .push(("x-ratelimit-limit".into(), "5000".into()));
        reply
            .headers
            .push(("x-ratelimit-remaining".into(), "0".into()));
        reply
            .headers
            .push(("x-ratelimit-reset".into(), reset.to_string()));
    } else if !has_limit {
        let reset = (st.now + SignedDuration::from_hours(1)).as_second();
        let remaining = 5000u64.saturating_sub(st.served);
        reply
            .headers
            .push(("x-ratelimit-limit".into(), "5000".into()));
        reply
            .headers
            .push(("x-ratelimit-remaining".into(), remaining.to_string()));
        reply
            .headers
            .push(("x-ratelimit-reset".into(), reset.to_string()));
    }
    reply
        .headers
        .push(("x-github-api-version-selected".into(), "2022-11-28".into()));
    // The fake's own clock, as GitHub's `date` header carries GitHub's.
    reply.headers.push((
        "date".into(),
        jiff::fmt::rfc2822::to_string(&st.now.to_zoned(jiff::tz::TimeZone::UTC))
            .map(|d| d.replace("+0000", "GMT"))
            .unwrap_or_default(),
    ));
    st.calls.push(RecordedCall {
        method: method.as_str().to_owned(),
        path,
        raw_path,
        query,
        headers: header_list,
        body,
        route: template,
        status: reply.status,
        response: reply.body.clone(),
        response_headers: reply.headers.clone(),
    });
    drop(st);

    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = if reply.status == 304 || reply.body.is_none() {
        status.into_response()
    } else {
        (status, text).into_response()
    };
    let h = response.headers_mut();
    if reply.body.is_some() && reply.status != 304 {
        h.insert(
            "content-type",
            HeaderValue::from_static("application/json; charset=utf-8"),
        );
    }
    for (name, value) in reply.headers {
        if let (Ok(name), Ok(value)) = (
            axum::http::HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            h.append(name, value);
        }
    }
    (response, hang)
}

/// The template a request would hit, without answering it (for failure rules).
fn route_template(method: &Method, segments: &[String]) -> Option<&'static str> {
    let mut probe = State::probe();
    if let [r, _, _, rest @ ..] = segments
        && r == "repos"
    {
        let mut segs = vec!["repos".to_owned(), probe.owner.clone(), probe.repo.clone()];
        segs.extend(rest.iter().cloned());
        return route(&mut probe, method, &segs, "/", &[], None).0;
    }
    route(&mut probe, method, segments, "/", &[], None).0
}

impl State {
    fn new(owner: &str, repo: &str) -> State {
        State {
            base: String::new(),
            owner: owner.to_owned(),
            repo: repo.to_owned(),
            viewer: VIEWER.to_owned(),
            now: Timestamp::from_second(1_767_603_600).unwrap_or(Timestamp::UNIX_EPOCH),
            next_number: 0,
            next_id: 1_000,
            issues: BTreeMap::new(),
            labels: Vec::new(),
            comments: Vec::new(),
            pulls: BTreeMap::new(),
            reviews: Vec::new(),
            checks: Vec::new(),
            collaborators: BTreeMap::new(),
            rules: Vec::new(),
            calls: Vec::new(),
            served: 0,
            spent_until: None,
            protection: None,
            refs: BTreeMap::new(),
            commits: BTreeMap::new(),
            git: None,
            projects: Vec::new(),
            hold_in: None,
            holding: false,
        }
    }

    /// An empty state to find a route's template in (routing an empty repository changes
    /// nothing that matters and is thrown away).
    fn probe() -> State {
        State::new("o", "r")
    }
}

impl FakeGitHub {
    /// Serves `acme/widgets` on a free loopback port; panics if none can be bound.
    pub async fn start() -> FakeGitHub {
        FakeGitHub::start_for(OWNER, REPO).await
    }

    /// Serves `owner/repo` on a free loopback port; panics if none can be bound.
    pub async fn start_for(owner: &str, repo: &str) -> FakeGitHub {
        let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
            Ok(l) => l,
            Err(e) => panic!("fake GitHub: cannot listen on 127.0.0.1: {e}"),
        };
        let addr = match listener.local_addr() {
            Ok(a) => a,
            Err(e) => panic!("fake GitHub: no local address: {e}"),
        };
        let mut state = State::new(owner, repo);
        state.base = format!("http://{addr}");
        let base = sha_of("refs/heads/main");
        let tree = sha_of("tree of main");
        let at = state.now;
        state.refs.insert("refs/heads/main".into(), base.clone());
        state.commits.insert(
            base,
            CommitRec {
                message: "Initial commit".into(),
                tree,
                parents: Vec::new(),
                date: at,
            },
        );
        let state = Arc::new(Mutex::new(state));
        let gate = Arc::new(tokio::sync::Notify::new());
        let app = Router::new()
            .fallback(handle)
            .with_state((Arc::clone(&state), Arc::clone(&gate)));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeGitHub {
            addr,
            state,
            gate,
            task,
        }
    }

    fn st(&self) -> MutexGuard<'_, State> {
        State::lock(&self.state)
    }

    /// The REST base URL (`http://127.0.0.1:PORT`), what the client takes as its API base.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The repository's owner.
    pub fn owner(&self) -> String {
        self.st().owner.clone()
    }

    /// The repository's name.
    pub fn repo(&self) -> String {
        self.st().repo.clone()
    }

    /// Sets the login the token acts as (the author of comments and pull requests created
    /// through the API; [`VIEWER`] by default).
    pub fn set_viewer(&self, login: &str) {
        self.st().viewer = login.to_owned();
    }

    /// The fake's clock.
    pub fn now(&self) -> Timestamp {
        self.st().now
    }

    /// Moves the clock forward (e.g. 25 hours, to make an assignment stale).
    pub fn advance(&self, by: SignedDuration) {
        self.st().now += by;
    }

    /// Opens an issue by `author` with these labels (created when missing); returns its number.
    pub fn add_issue(&self, title: &str, body: &str, labels: &[&str], author: &str) -> u64 {
        self.st().add_issue_rec(title, body, labels, author)
    }

    /// A person closes an issue (as completed; its labels stay on, as on GitHub).
    pub fn close_issue(&self, number: u64) {
        let mut st = self.st();
        let now = st.tick();
        if let Some(i) = st.issues.get_mut(&number) {
            i.state = "closed".into();
            i.closed_at = Some(now);
            i.updated_at = now;
            i.state_reason = Some("completed".into());
        }
    }

    /// Creates a repository label.
    pub fn add_label(&self, name: &str, color: &str, description: &str) {
        let mut st = self.st();
        st.ensure_label(name);
        if let Some(l) = st.labels.iter_mut().find(|l| l.name == name) {
            l.color = color.to_owned();
            l.description = description.to_owned();
        }
    }

    /// Posts a comment by `author`, its association derived (the owner is `OWNER`, a
    /// collaborator `COLLABORATOR`, anyone else `NONE`); returns its id.
    pub fn add_comment(&self, issue: u64, author: &str, body: &str) -> u64 {
        let association = self.st().association(author);
        self.add_comment_as(issue, author, &association, body)
    }

    /// Posts a comment by `author` with this `author_association`; returns its id.
    pub fn add_comment_as(&self, issue: u64, author: &str, association: &str, body: &str) -> u64 {
        let mut st = self.st();
        let now = st.tick();
        let id = st.id();
        st.comments.push(CommentRec {
            id,
            issue,
            author: author.to_owned(),
            association: association.to_owned(),
            body: body.to_owned(),
            created_at: now,
            updated_at: now,
        });
        st.touch(issue);
        id
    }

    /// Opens a pull request from `head` into `base` by `author`; returns its number. Its head
    /// sha is [`sha_of`]`(head)`.
    pub fn add_pull(&self, title: &str, head: &str, base: &str, draft: bool, author: &str) -> u64 {
        let mut st = self.st();
        let number = st.add_issue_rec(title, "", &[], author);
        let id = st.id();
        st.pulls.insert(
            number,
            PullRec {
                number,
                id,
                head: head.to_owned(),
                head_sha: sha_of(head),
                base: base.to_owned(),
                draft,
                merged_at: None,
                merged_by: None,
                merge_commit_sha: None,
                auto_merge: None,
                conflict: false,
            },
        );
        number
    }

    /// A new commit on a pull request's head: its head sha becomes `sha`.
    pub fn push(&self, pull: u64, sha: &str) {
        let mut st = self.st();
        st.tick();
        if let Some(p) = st.pulls.get_mut(&pull) {
            p.head_sha = sha.to_owned();
        }
        st.touch(pull);
        st.settle();
    }

    /// Serves the branches of the bare repository at `dir` (pushed to with real git) as this
    /// repository's: `refs/heads/*` are read from it before every request, a pull request's
    /// head follows its branch, and one cannot be opened for a branch that does not exist.
    pub fn attach_git(&self, dir: &std::path::Path) {
        let mut st = self.st();
        st.git = Some(dir.to_path_buf());
        st.sync_git();
    }

    /// Points reference `name` (`refs/heads/main`) at `sha`, a commit it then knows.
    pub fn seed_ref(&self, name: &str, sha: &str) {
        self.seed_commit(sha);
        self.st().refs.insert(name.to_owned(), sha.to_owned());
    }

    /// A commit object `sha` the repository holds (on no branch).
    pub fn seed_commit(&self, sha: &str) {
        let mut st = self.st();
        let date = st.now;
        let tree = sha_of(&format!("tree of {sha}"));
        st.commits.entry(sha.to_owned()).or_insert(CommitRec {
            message: String::new(),
            tree,
            parents: Vec::new(),
            date,
        });
    }

    /// Every git reference, by full name, and the sha it points at.
    pub fn refs(&self) -> BTreeMap<String, String> {
        self.st().refs.clone()
    }

    /// A commit object's message.
    pub fn commit_message(&self, sha: &str) -> Option<String> {
        self.st().commits.get(sha).map(|c| c.message.clone())
    }

    /// A project (v2) of the owner, number `number`, with a single-select field `field` whose
    /// options are `options`.
    pub fn add_project(&self, number: u64, field: &str, options: &[&str]) {
        self.st().projects.push(ProjectRec {
            number,
            field: field.to_owned(),
            options: options.iter().map(|o| (*o).to_owned()).collect(),
            items: BTreeMap::new(),
        });
    }

    /// The option issue `issue` has in project `number`'s field, if it is on the project.
    pub fn project_status(&self, number: u64, issue: u64) -> Option<String> {
        let st = self.st();
        let node = format!("I_kwDO{}", st.issues.get(&issue)?.id);
        let p = st.projects.iter().find(|p| p.number == number)?;
        let (_, option) = p.items.get(&node)?;
        option.and_then(|i| p.options.get(i).cloned())
    }

    /// A person edits comment `id` to `body`.
    pub fn edit_comment_by_hand(&self, id: u64, body: &str) {
        let mut st = self.st();
        let now = st.tick();
        if let Some(c) = st.comments.iter_mut().find(|c| c.id == id) {
            c.body = body.to_owned();
            c.updated_at = now;
        }
    }

    /// A person closes pull request `number` without merging it.
    pub fn close_pull(&self, number: u64) {
        let mut st = self.st();
        let now = st.tick();
        if let Some(i) = st.issues.get_mut(&number) {
            i.state = "closed".into();
            i.closed_at = Some(now);
            i.updated_at = now;
        }
    }

    /// A pull request's head sha.
    pub fn head_sha(&self, pull: u64) -> Option<String> {
        self.st().pulls.get(&pull).map(|p| p.head_sha.clone())
    }

    /// Submits a review (`APPROVED`, `CHANGES_REQUESTED`, `COMMENTED`) of the current head;
    /// returns its id.
    pub fn add_review(&self, pull: u64, author: &str, state: &str, body: &str) -> u64 {
        let mut st = self.st();
        let now = st.tick();
        let id = st.id();
        let commit = st
            .pulls
            .get(&pull)
            .map(|p| p.head_sha.clone())
            .unwrap_or_default();
        st.reviews.push(ReviewRec {
            id,
            pull,
            author: author.to_owned(),
            state: state.to_owned(),
            body: body.to_owned(),
            commit,
            submitted_at: now,
        });
        st.settle();
        id
    }

    /// Adds a check run on `sha` (`status` `queued`, `in_progress` or `completed`, with a
    /// `conclusion` when completed); returns its id.
    pub fn add_check_run(
        &self,
        sha: &str,
        name: &str,
        status: &str,
        conclusion: Option<&str>,
    ) -> u64 {
        let mut st = self.st();
        let now = st.tick();
        let id = st.id();
        st.checks.push(CheckRec {
            id,
            sha: sha.to_owned(),
            name: name.to_owned(),
            status: status.to_owned(),
            conclusion: conclusion.map(str::to_owned),
            started_at: now,
            completed_at: (status == "completed").then_some(now),
        });
        st.settle();
        id
    }

    /// Makes `login` a collaborator with `role` (`read`, `triage`, `write`, `maintain`,
    /// `admin`). Anyone else reads as `read` (a public repository); the owner as `admin`.
    pub fn set_collaborator(&self, login: &str, role: &str) {
        self.st()
            .collaborators
            .insert(login.to_owned(), role.to_owned());
    }

    /// Gives a pull request a merge conflict (`mergeable: false`, `dirty`), or takes it away.
    pub fn set_conflict(&self, pull: u64, conflict: bool) {
        let mut st = self.st();
        if let Some(p) = st.pulls.get_mut(&pull) {
            p.conflict = conflict;
        }
        st.settle();
    }

    /// Merges a pull request as the owner would (refused for a draft, a conflict, a pull
    /// request the branch protection blocks, or one that is not open).
    pub fn merge(&self, pull: u64) -> Result<(), String> {
        let mut st = self.st();
        let open = st.issues.get(&pull).is_some_and(|i| i.state == "open");
        let Some(p) = st.pulls.get(&pull) else {
            return Err(format!("no pull request #{pull}"));
        };
        if !open {
            return Err(format!("pull request #{pull} is not open"));
        }
        if p.draft {
            return Err(format!("pull request #{pull} is a draft"));
        }
        if p.conflict {
            return Err(format!("pull request #{pull} has a merge conflict"));
        }
        if st.merge_state(pull) == "blocked" {
            return Err(format!(
                "pull request #{pull} is blocked by the branch protection"
            ));
        }
        let owner = st.owner.clone();
        st.do_merge(pull, &owner);
        Ok(())
    }

    /// Protects every base branch: a pull request needs `approvals` approving reviews (each
    /// reviewer's latest verdict; none requesting changes) and a successful run of each of
    /// `checks` on its head before it can merge. Without protection a ready pull request
    /// without conflicts is `clean`, and GitHub refuses auto-merge for it ("in clean status").
    pub fn protect_base(&self, approvals: usize, checks: &[&str]) {
        let mut st = self.st();
        st.protection = Some(Protection {
            approvals,
            checks: checks.iter().map(|c| (*c).to_owned()).collect(),
        });
        st.settle();
    }

    /// The next `times` requests `method` sends to the route GitHub's description names
    /// `route` (e.g. `"/repos/{owner}/{repo}/issues/{issue_number}/comments"`, or
    /// `"/graphql"`) get `failure`.
    pub fn fail_next(&self, method: &str, route: &str, times: usize, failure: Failure) {
        self.st().rules.push(Rule {
            method: method.to_ascii_uppercase(),
            route: route.to_owned(),
            times,
            failure,
        });
    }

    /// The next answer (whatever it is) reports the primary rate limit spent
    /// (`x-ratelimit-remaining: 0`) until the Unix second `reset`.
    pub fn spend_rate_limit(&self, reset: i64) {
        self.st().spent_until = Some(reset);
    }

    /// Holds the `n`-th request from now (1: the next) before it is answered, until
    /// [`FakeGitHub::release`]: the client that sent it stalls there while others go on.
    pub fn hold_request(&self, n: u64) {
        let mut st = self.st();
        st.hold_in = Some(n.max(1));
        st.holding = false;
    }

    /// Whether a request is held now.
    pub fn holding(&self) -> bool {
        self.st().holding
    }

    /// Answers the held request, and holds nothing more.
    pub fn release(&self) {
        let mut st = self.st();
        st.hold_in = None;
        if st.holding {
            self.gate.notify_one();
        }
    }

    /// Every request so far, with its answer, in order.
    pub fn calls(&self) -> Vec<RecordedCall> {
        self.st().calls.clone()
    }

    /// Forgets the recorded requests.
    pub fn clear_calls(&self) {
        self.st().calls.clear();
    }

    /// An issue (or pull request) as `GET /repos/{owner}/{repo}/issues/{n}` shows it
    /// (`Value::Null` when there is none).
    pub fn issue(&self, number: u64) -> Value {
        self.st().issue(number)
    }

    /// A pull request as `GET /repos/{owner}/{repo}/pulls/{n}` shows it.
    pub fn pull(&self, number: u64) -> Value {
        self.st().pull(number, true)
    }

    /// The names of an issue's labels, in the order they were added.
    pub fn labels_of(&self, issue: u64) -> Vec<String> {
        self.st()
            .issues
            .get(&issue)
            .map(|i| i.labels.clone())
            .unwrap_or_default()
    }

    /// The repository's label names.
    pub fn label_names(&self) -> Vec<String> {
        self.st().labels.iter().map(|l| l.name.clone()).collect()
    }

    /// An issue's comments as GitHub shows them, oldest first.
    pub fn comments_of(&self, issue: u64) -> Vec<Value> {
        let st = self.st();
        st.comments
            .iter()
            .filter(|c| c.issue == issue)
            .map(|c| st.comment(c))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Sends one HTTP/1.1 request; the status, the head (lower-cased) and the body of the answer.
    async fn send(
        fake: &FakeGitHub,
        method: &str,
        target: &str,
        body: Option<&str>,
        auth: bool,
    ) -> (u16, String, String) {
        let mut stream = tokio::net::TcpStream::connect(fake.addr).await.unwrap();
        let body = body.unwrap_or_default();
        let auth = if auth {
            "Authorization: Bearer t\r\n"
        } else {
            ""
        };
        let request = format!(
            "{method} {target} HTTP/1.1\r\nHost: x\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        (status, head.to_ascii_lowercase(), body.to_owned())
    }

    #[tokio::test]
    async fn a_request_without_a_token_is_refused() {
        let fake = FakeGitHub::start().await;
        let (status, _, body) = send(&fake, "GET", "/repos/acme/widgets/issues", None, false).await;
        assert_eq!(status, 401);
        assert!(body.contains("Requires authentication"));
        assert_eq!(fake.calls()[0].status, 401);
    }

    #[tokio::test]
    async fn a_write_to_another_repository_changes_nothing() {
        let fake = FakeGitHub::start().await;
        let issue = fake.add_issue("Story", "", &[], "acme");
        let target = format!("/repos/someone/else/issues/{issue}/comments");
        let (status, _, _) = send(&fake, "POST", &target, Some(r#"{"body":"x"}"#), true).await;
        assert_eq!(status, 404);
        assert!(fake.comments_of(issue).is_empty());
        assert_eq!(
            fake.calls()[0].route,
            Some("/repos/{owner}/{repo}/issues/{issue_number}/comments")
        );
    }

    #[tokio::test]
    async fn lists_are_paged_with_link_headers() {
        let fake = FakeGitHub::start().await;
        for n in 0..5 {
            fake.add_label(&format!("l{n}"), "ffffff", "");
        }
        let target = "/repos/acme/widgets/labels?per_page=2";
        let (status, head, body) = send(&fake, "GET", target, None, true).await;
        assert_eq!(status, 200);
        let base = fake.base_url();
        let expected = format!(
            "link: <{base}{target}&page=2>; rel=\"next\", <{base}{target}&page=3>; rel=\"last\""
        );
        assert!(head.contains(&expected), "{head}");
        let page: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(page.as_array().map(Vec::len), Some(2));
        let (_, head, body) = send(&fake, "GET", &format!("{target}&page=3"), None, true).await;
        assert!(head.contains("rel=\"prev\"") && !head.contains("rel=\"next\""));
        assert_eq!(
            serde_json::from_str::<Value>(&body).unwrap()[0]["name"],
            "l4"
        );
    }

    #[tokio::test]
    async fn an_unknown_route_is_a_404_without_a_template() {
        let fake = FakeGitHub::start().await;
        let (status, _, _) = send(&fake, "GET", "/repos/acme/widgets/releases", None, true).await;
        assert_eq!(status, 404);
        assert_eq!(fake.calls()[0].route, None);
    }

    #[tokio::test]
    async fn failures_hit_their_route_the_given_number_of_times() {
        let fake = FakeGitHub::start().await;
        let route = "/repos/{owner}/{repo}/labels";
        fake.fail_next("GET", route, 2, Failure::TooManyRequests { retry_after: 7 });
        let mut statuses = Vec::new();
        for _ in 0..3 {
            let (status, head, _) =
                send(&fake, "GET", "/repos/acme/widgets/labels", None, true).await;
            statuses.push(status);
            if status == 429 {
                assert!(head.contains("retry-after: 7"), "{head}");
            }
        }
        assert_eq!(statuses, [429, 429, 200]);
        // Another route is untouched.
        let (status, _, _) = send(&fake, "GET", "/repos/acme/widgets/issues", None, true).await;
        assert_eq!(status, 200);
    }

    #[test]
    fn closing_keywords_are_githubs_in_any_case() {
        let refs = |t: &str| closing_refs(t, "acme", "widgets");
        assert_eq!(refs("Closes #1."), [1]);
        assert_eq!(
            refs("fixed #2, RESOLVES: #3 and resolve acme/widgets#4"),
            [2, 3, 4]
        );
        assert_eq!(refs("close #5\nFix #5"), [5]);
        for word in ["closes", "closed", "fix", "fixes", "resolve", "resolved"] {
            assert_eq!(refs(&format!("{word} #9")), [9], "{word}");
        }
        assert!(refs("Refs #1; see #2; closes other/repo#3; fixing #4").is_empty());
    }

    #[tokio::test]
    async fn a_merge_into_the_default_branch_closes_the_issues_it_names_and_keeps_their_labels() {
        let fake = FakeGitHub::start().await;
        let named = fake.add_issue("Named", "", &["status/ready-to-merge"], "acme");
        let other = fake.add_issue("Other", "", &[], "acme");
        let side = fake.add_issue("Side", "", &[], "acme");
        let (status, _, _) = send(
            &fake,
            "POST",
            "/repos/acme/widgets/pulls",
            Some(&format!(
                r#"{{"title":"t","head":"feature","base":"main","body":"Fixes #{named}."}}"#
            )),
            true,
        )
        .await;
        assert_eq!(status, 201);
        let pr = side + 1;
        // Into another branch: nothing closes.
        let to_dev = fake.add_pull("t", "feature-2", "develop", false, "acme");
        fake.merge(to_dev).expect("merged");
        assert_eq!(fake.issue(named)["state"], "open");
        fake.merge(pr).expect("merged");
        assert_eq!(fake.issue(named)["state"], "closed");
        assert_eq!(fake.issue(named)["state_reason"], "completed");
        assert_eq!(fake.labels_of(named), ["status/ready-to-merge"]);
        assert_eq!(fake.issue(other)["state"], "open");
    }

    #[tokio::test]
    async fn a_held_request_waits_until_it_is_released() {
        let fake = FakeGitHub::start().await;
        fake.hold_request(2);
        let (status, _, _) = send(&fake, "GET", "/repos/acme/widgets/labels", None, true).await;
        assert_eq!(status, 200, "the first goes through");
        let ((status, _, _), ()) = tokio::join!(
            send(&fake, "GET", "/repos/acme/widgets/issues", None, true),
            async {
                while !fake.holding() {
                    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                }
                assert_eq!(fake.calls().len(), 1, "held before it is answered");
                fake.release();
            }
        );
        assert_eq!(status, 200);
        assert!(!fake.holding());
        let (status, _, _) = send(&fake, "GET", "/repos/acme/widgets/issues", None, true).await;
        assert_eq!(status, 200, "nothing more is held");
    }
}
