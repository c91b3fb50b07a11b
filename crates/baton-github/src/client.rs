//! The REST client: one repository, one token, and the rules every call follows.
//!
//! A GET is repeated (up to [`Policy::get_retries`] times) after a 5xx or a dropped connection,
//! with doubling backoff, and after a rate limit it can wait out within [`Policy::max_wait`];
//! a POST, PATCH or DELETE is sent once, whatever happens, because GitHub may have carried it
//! out before failing. A rate limit seen on any answer (`x-ratelimit-remaining: 0` with its
//! reset, a `retry-after`, a secondary-limit 403/429) holds every later request until it
//! lifts, or fails it at once with [`ForgeError::RateLimited`] when that is further off than
//! the cap. GETs carry `If-None-Match` from a bounded cache of ETags; a 304 is answered from
//! the cache (and costs no rate limit on GitHub).

use crate::model::{PermissionAnswer, ProjectField};
use crate::{
    CheckRun, Comment, Forge, ForgeError, ForgeFuture, GitCommit, GitRef, Issue, Label,
    MergeMethod, NewIssue, NewLabel, NewPull, Permission, PullRequest, PullUpdate, Review,
};
use jiff::{SignedDuration, Timestamp};
use reqwest::Method;
use reqwest::header::{self, HeaderMap, HeaderValue};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, Once, PoisonError};
use std::time::Duration;

/// The REST API version every request asks for.
pub const API_VERSION: &str = "2022-11-28";

/// At most this many pages are followed for one list (100 per page: 50,000 items).
const MAX_PAGES: usize = 500;

/// A GitHub token. It is sent only in the `Authorization` header; `Debug` never shows it and
/// it has no `Display`.
#[derive(Clone)]
pub struct Token(String);

impl Token {
    /// Wraps a token (from `GITHUB_TOKEN` or a named variable: the caller reads it).
    pub fn new(token: impl Into<String>) -> Token {
        Token(token.into())
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token([redacted])")
    }
}

/// How patient the client is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// How many times a GET is repeated after a 5xx, a dropped connection or a rate limit.
    pub get_retries: u32,
    /// The wait before the first repeat; it doubles with each (capped at `max_wait`).
    pub backoff: Duration,
    /// The longest the client waits for a rate limit to lift before failing with
    /// [`ForgeError::RateLimited`].
    pub max_wait: Duration,
    /// Items asked for per page (GitHub allows at most 100).
    pub per_page: u32,
    /// How many answers the ETag cache keeps.
    pub etag_entries: usize,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            get_retries: 3,
            backoff: Duration::from_secs(1),
            max_wait: Duration::from_secs(60),
            per_page: 100,
            etag_entries: 256,
        }
    }
}

/// A cached GET answer: its ETag, its body and its `link` header (a 304 carries no `link`, so
/// the next page of a cached list comes from here).
#[derive(Debug, Clone)]
struct Cached {
    etag: HeaderValue,
    link: Option<HeaderValue>,
    body: Vec<u8>,
}

/// The ETags of recent GET answers, with their bodies, oldest dropped first.
#[derive(Debug, Default)]
struct EtagCache {
    order: VecDeque<String>,
    entries: HashMap<String, Cached>,
}

impl EtagCache {
    fn get(&self, url: &str) -> Option<Cached> {
        self.entries.get(url).cloned()
    }

    fn put(&mut self, cap: usize, url: &str, answer: Cached) {
        if cap == 0 {
            return;
        }
        if self.entries.insert(url.to_owned(), answer).is_none() {
            self.order.push_back(url.to_owned());
            while self.order.len() > cap {
                if let Some(old) = self.order.pop_front() {
                    self.entries.remove(&old);
                }
            }
        }
    }
}

/// A GitHub REST client for one repository.
pub struct GitHub {
    http: reqwest::Client,
    api: String,
    graphql: String,
    owner: String,
    repo: String,
    token: Token,
    policy: Policy,
    etags: Mutex<EtagCache>,
    blocked_until: Mutex<Option<Timestamp>>,
    server_time: Mutex<Option<Timestamp>>,
}

impl std::fmt::Debug for GitHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitHub")
            .field("api", &self.api)
            .field("owner", &self.owner)
            .field("repo", &self.repo)
            .field("token", &self.token)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

/// An answer as the client keeps it.
struct Answer {
    status: u16,
    headers: HeaderMap,
    body: Vec<u8>,
}

/// Installs ring as the process-wide rustls crypto provider, once (reqwest is built with
/// `rustls-no-provider`).
fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // An error means another provider is installed already, which serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

fn is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let host = rest.split(['/', '?']).next().unwrap_or("");
    host == "localhost"
        || host.starts_with("localhost:")
        || host.starts_with("127.")
        || host.starts_with("[::1]")
}

/// Percent-encodes one path segment or query value (everything but RFC 3986's unreserved
/// characters).
pub(crate) fn enc(s: &str) -> String {
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

/// GitHub's message in an error body (`message` and any validation `errors`), or the start of
/// the text.
fn message_of(body: &[u8]) -> String {
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        let mut message = v
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if let Some(errors) = v.get("errors").and_then(Value::as_array) {
            let details: Vec<String> = errors
                .iter()
                .map(|e| match e {
                    Value::String(s) => s.clone(),
                    other => other
                        .get("message")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .or_else(|| other.get("code").and_then(Value::as_str).map(str::to_owned))
                        .unwrap_or_else(|| other.to_string()),
                })
                .collect();
            if !details.is_empty() {
                message = format!("{message} ({})", details.join("; "));
            }
        }
        if !message.is_empty() {
            return message;
        }
    }
    String::from_utf8_lossy(body).chars().take(200).collect()
}

/// When a 403/429 answer is a rate limit: the time it lifts.
fn rate_limit_until(
    status: u16,
    headers: &HeaderMap,
    body: &[u8],
    now: Timestamp,
) -> Option<Timestamp> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(secs) = text("retry-after").and_then(|s| s.parse::<i64>().ok()) {
        return Some(now + SignedDuration::from_secs(secs.max(0)));
    }
    if text("x-ratelimit-remaining") == Some("0")
        && let Some(reset) = text("x-ratelimit-reset").and_then(|s| s.parse::<i64>().ok())
    {
        return Some(Timestamp::from_second(reset).unwrap_or(now));
    }
    // A secondary limit without headers: GitHub asks for at least a minute's pause.
    if status == 429 || message_of(body).to_ascii_lowercase().contains("rate limit") {
        return Some(now + SignedDuration::from_secs(60));
    }
    None
}

/// The `rel="next"` target of a `link` header.
fn next_link(headers: &HeaderMap) -> Option<String> {
    let link = headers.get(header::LINK)?.to_str().ok()?;
    link.split(',').find_map(|part| {
        let (target, params) = part.split_once(';')?;
        let is_next = params
            .split(';')
            .any(|p| matches!(p.trim(), "rel=\"next\"" | "rel=next"));
        let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        is_next.then(|| target.to_owned())
    })
}

fn parse<T: DeserializeOwned>(call: &'static str, answer: &Answer) -> Result<T, ForgeError> {
    serde_json::from_slice(&answer.body).map_err(|e| ForgeError::Invalid {
        call,
        status: answer.status,
        detail: format!("not the expected JSON: {e}"),
    })
}

impl GitHub {
    /// A client for `owner/repo` at `base_url` (`https://api.github.com`, a GitHub Enterprise
    /// `https://HOST/api/v3`, or a fake).
    pub fn new(
        base_url: &str,
        owner: &str,
        repo: &str,
        token: Token,
    ) -> Result<GitHub, ForgeError> {
        let api = base_url.trim_end_matches('/').to_owned();
        if !(api.starts_with("https://") || api.starts_with("http://")) {
            return Err(ForgeError::Config(format!(
                "the API base `{api}` is not an http(s) URL"
            )));
        }
        for (what, name) in [("owner", owner), ("repository", repo)] {
            if name.is_empty() || name.contains('/') {
                return Err(ForgeError::Config(format!(
                    "the {what} `{name}` is not a name"
                )));
            }
        }
        let graphql = match api.strip_suffix("/api/v3") {
            Some(host) => format!("{host}/api/graphql"),
            None => format!("{api}/graphql"),
        };
        install_crypto_provider();
        let mut defaults = HeaderMap::new();
        defaults.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/vnd.github+json"),
        );
        defaults.insert(
            "x-github-api-version",
            HeaderValue::from_static(API_VERSION),
        );
        let mut builder = reqwest::Client::builder()
            .user_agent(concat!("baton/", env!("CARGO_PKG_VERSION")))
            .default_headers(defaults)
            .connect_timeout(Duration::from_secs(30))
            .timeout(Duration::from_secs(120));
        if is_loopback(&api) {
            builder = builder.no_proxy();
        }
        let http = builder
            .build()
            .map_err(|e| ForgeError::Config(format!("cannot build an HTTP client: {e}")))?;
        Ok(GitHub {
            http,
            api,
            graphql,
            owner: owner.to_owned(),
            repo: repo.to_owned(),
            token,
            policy: Policy::default(),
            etags: Mutex::new(EtagCache::default()),
            blocked_until: Mutex::new(None),
            server_time: Mutex::new(None),
        })
    }

    /// Remembers the time GitHub's last answer was sent (its `date` header).
    fn note_date(&self, headers: &HeaderMap) {
        let Some(date) = headers.get(header::DATE).and_then(|v| v.to_str().ok()) else {
            return;
        };
        let Ok(at) = jiff::fmt::rfc2822::parse(&date.replace("GMT", "+0000")) else {
            return;
        };
        *self
            .server_time
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(at.timestamp());
    }

    /// Replaces the retry and wait policy.
    pub fn with_policy(mut self, policy: Policy) -> GitHub {
        self.policy = policy;
        self
    }

    /// The repository's owner.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// The repository's name.
    pub fn repo(&self) -> &str {
        &self.repo
    }

    fn url(&self, tail: &str) -> String {
        format!(
            "{}/repos/{}/{}{tail}",
            self.api,
            enc(&self.owner),
            enc(&self.repo)
        )
    }

    fn backoff(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
        self.policy
            .backoff
            .saturating_mul(factor)
            .min(self.policy.max_wait)
    }

    fn block_until(&self, until: Timestamp) {
        let mut blocked = self
            .blocked_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if blocked.is_none_or(|b| b < until) {
            *blocked = Some(until);
        }
    }

    /// Waits while a rate limit holds, or fails when it lifts later than the cap allows.
    async fn wait_out_limit(&self, call: &'static str) -> Result<(), ForgeError> {
        let until = *self
            .blocked_until
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let Some(until) = until else { return Ok(()) };
        let now = Timestamp::now();
        if until <= now {
            let mut blocked = self
                .blocked_until
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if *blocked == Some(until) {
                *blocked = None;
            }
            return Ok(());
        }
        let wait = Duration::try_from(until.duration_since(now)).unwrap_or(Duration::MAX);
        if wait > self.policy.max_wait {
            return Err(ForgeError::RateLimited {
                call,
                status: 0,
                until,
            });
        }
        tokio::time::sleep(wait).await;
        Ok(())
    }

    /// Notes a primary limit an answer reports as spent.
    fn note_limit(&self, headers: &HeaderMap) {
        let text = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::trim)
        };
        if text("x-ratelimit-remaining") == Some("0")
            && let Some(reset) = text("x-ratelimit-reset").and_then(|s| s.parse::<i64>().ok())
            && let Ok(until) = Timestamp::from_second(reset)
        {
            self.block_until(until);
        }
    }

    /// Sends one request by the rules of the module; a 2xx (or a 304 served from the cache)
    /// is the answer, anything else a typed error.
    async fn request(
        &self,
        call: &'static str,
        method: Method,
        url: &str,
        body: Option<&Value>,
    ) -> Result<Answer, ForgeError> {
        let is_get = method == Method::GET;
        let mut attempt = 0u32;
        loop {
            self.wait_out_limit(call).await?;
            let mut auth = HeaderValue::from_str(&format!("Bearer {}", self.token.0))
                .map_err(|_| ForgeError::Config("the token is not a valid header value".into()))?;
            auth.set_sensitive(true);
            let mut req = self
                .http
                .request(method.clone(), url)
                .header(header::AUTHORIZATION, auth);
            let cached = if is_get {
                self.etags
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get(url)
            } else {
                None
            };
            if let Some(cached) = &cached {
                req = req.header(header::IF_NONE_MATCH, cached.etag.clone());
            }
            if let Some(body) = body {
                req = req.json(body);
            }
            let sent = match req.send().await {
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    let headers = resp.headers().clone();
                    resp.bytes().await.map(|b| (status, headers, b.to_vec()))
                }
                Err(e) => Err(e),
            };
            let (status, headers, bytes) = match sent {
                Ok(answer) => answer,
                Err(source) => {
                    if is_get && attempt < self.policy.get_retries {
                        attempt += 1;
                        tokio::time::sleep(self.backoff(attempt)).await;
                        continue;
                    }
                    return Err(ForgeError::Transport { call, source });
                }
            };
            self.note_limit(&headers);
            self.note_date(&headers);
            match status {
                304 if is_get => {
                    return match cached {
                        Some(cached) => {
                            let mut headers = headers;
                            headers.remove(header::LINK);
                            if let Some(link) = cached.link {
                                headers.insert(header::LINK, link);
                            }
                            Ok(Answer {
                                status: 200,
                                headers,
                                body: cached.body,
                            })
                        }
                        None => Err(ForgeError::Invalid {
                            call,
                            status,
                            detail: "304 Not Modified to a request without an ETag".into(),
                        }),
                    };
                }
                200..=299 => {
                    if is_get && let Some(etag) = headers.get(header::ETAG) {
                        self.etags
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .put(
                                self.policy.etag_entries,
                                url,
                                Cached {
                                    etag: etag.clone(),
                                    link: headers.get(header::LINK).cloned(),
                                    body: bytes.clone(),
                                },
                            );
                    }
                    return Ok(Answer {
                        status,
                        headers,
                        body: bytes,
                    });
                }
                403 | 429 => {
                    let now = Timestamp::now();
                    if let Some(until) = rate_limit_until(status, &headers, &bytes, now) {
                        self.block_until(until);
                        let wait =
                            Duration::try_from(until.duration_since(now)).unwrap_or(Duration::MAX);
                        if is_get
                            && attempt < self.policy.get_retries
                            && wait <= self.policy.max_wait
                        {
                            attempt += 1;
                            continue;
                        }
                        return Err(ForgeError::RateLimited {
                            call,
                            status,
                            until,
                        });
                    }
                    return Err(ForgeError::Forbidden {
                        call,
                        message: message_of(&bytes),
                    });
                }
                401 => {
                    return Err(ForgeError::Unauthorized {
                        call,
                        message: message_of(&bytes),
                    });
                }
                404 => return Err(ForgeError::NotFound { call }),
                500..=599 => {
                    if is_get && attempt < self.policy.get_retries {
                        attempt += 1;
                        tokio::time::sleep(self.backoff(attempt)).await;
                        continue;
                    }
                    return Err(ForgeError::Server { call, status });
                }
                _ => {
                    return Err(ForgeError::Rejected {
                        call,
                        status,
                        message: message_of(&bytes),
                    });
                }
            }
        }
    }

    async fn get<T: DeserializeOwned>(
        &self,
        call: &'static str,
        url: &str,
    ) -> Result<T, ForgeError> {
        let answer = self.request(call, Method::GET, url, None).await?;
        parse(call, &answer)
    }

    async fn send<T: DeserializeOwned>(
        &self,
        call: &'static str,
        method: Method,
        url: &str,
        body: &Value,
    ) -> Result<T, ForgeError> {
        let answer = self.request(call, method, url, Some(body)).await?;
        parse(call, &answer)
    }

    /// Every page of a list, following `link: <…>; rel="next"` (only to this API's own
    /// address: the token goes nowhere else). `key` names the array in an object answer
    /// (`check_runs`); `None` reads an array answer.
    async fn pages<T: DeserializeOwned>(
        &self,
        call: &'static str,
        first: String,
        key: Option<&str>,
    ) -> Result<Vec<T>, ForgeError> {
        let mut out = Vec::new();
        let mut url = first;
        for _ in 0..MAX_PAGES {
            let answer = self.request(call, Method::GET, &url, None).await?;
            let items: Vec<T> = match key {
                None => parse(call, &answer)?,
                Some(key) => {
                    let mut whole: Value = parse(call, &answer)?;
                    let items = whole.get_mut(key).map(Value::take).unwrap_or(Value::Null);
                    serde_json::from_value(items).map_err(|e| ForgeError::Invalid {
                        call,
                        status: answer.status,
                        detail: format!("`{key}` is not the expected list: {e}"),
                    })?
                }
            };
            out.extend(items);
            match next_link(&answer.headers) {
                None => return Ok(out),
                Some(next) if next.starts_with(&format!("{}/", self.api)) => url = next,
                Some(next) => {
                    return Err(ForgeError::Invalid {
                        call,
                        status: answer.status,
                        detail: format!("the next page `{next}` is not on {}", self.api),
                    });
                }
            }
        }
        Err(ForgeError::Invalid {
            call,
            status: 200,
            detail: format!("more than {MAX_PAGES} pages"),
        })
    }

    async fn graphql(
        &self,
        call: &'static str,
        query: &str,
        variables: Value,
    ) -> Result<Value, ForgeError> {
        let body = json!({ "query": query, "variables": variables });
        let answer = self
            .request(call, Method::POST, &self.graphql, Some(&body))
            .await?;
        let mut v: Value = parse(call, &answer)?;
        if let Some(errors) = v
            .get("errors")
            .and_then(Value::as_array)
            .filter(|e| !e.is_empty())
        {
            let message = errors
                .iter()
                .map(|e| {
                    e.get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("error")
                        .to_owned()
                })
                .collect::<Vec<_>>()
                .join("; ");
            return Err(ForgeError::Rejected {
                call,
                status: answer.status,
                message,
            });
        }
        Ok(v.get_mut("data").map(Value::take).unwrap_or(Value::Null))
    }

    fn per_page(&self) -> u32 {
        self.policy.per_page.clamp(1, 100)
    }
}

const PROJECT_FIELD: &str = "query($owner: String!, $number: Int!, $field: String!) { repositoryOwner(login: $owner) { ... on ProjectV2Owner { projectV2(number: $number) { id field(name: $field) { ... on ProjectV2SingleSelectField { id options { id name } } } } } } }";
const ADD_ITEM: &str = "mutation($project: ID!, $content: ID!) { addProjectV2ItemById(input: {projectId: $project, contentId: $content}) { item { id } } }";
const SET_FIELD: &str = "mutation($project: ID!, $item: ID!, $field: ID!, $option: String!) { updateProjectV2ItemFieldValue(input: {projectId: $project, itemId: $item, fieldId: $field, value: {singleSelectOptionId: $option}}) { projectV2Item { id } } }";
const MARK_READY: &str = "mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { number isDraft } } }";
const AUTO_MERGE: &str = "mutation($id: ID!, $method: PullRequestMergeMethod!) { enablePullRequestAutoMerge(input: {pullRequestId: $id, mergeMethod: $method}) { pullRequest { number autoMergeRequest { mergeMethod } } } }";

impl Forge for GitHub {
    fn list_open_issues(&self) -> ForgeFuture<'_, Vec<Issue>> {
        Box::pin(async move {
            let url = self.url(&format!("/issues?state=open&per_page={}", self.per_page()));
            let all: Vec<Issue> = self.pages("list issues", url, None).await?;
            Ok(all
                .into_iter()
                .filter(|i| i.pull_request.is_none())
                .collect())
        })
    }

    fn list_all_issues(&self) -> ForgeFuture<'_, Vec<Issue>> {
        Box::pin(async move {
            let url = self.url(&format!("/issues?state=all&per_page={}", self.per_page()));
            let all: Vec<Issue> = self.pages("list issues", url, None).await?;
            Ok(all
                .into_iter()
                .filter(|i| i.pull_request.is_none())
                .collect())
        })
    }

    fn list_closed_issues(&self, label: &str) -> ForgeFuture<'_, Vec<Issue>> {
        let url = self.url(&format!(
            "/issues?state=closed&labels={}&per_page={}",
            enc(label),
            self.per_page()
        ));
        Box::pin(async move {
            let all: Vec<Issue> = self.pages("list closed issues", url, None).await?;
            Ok(all
                .into_iter()
                .filter(|i| i.pull_request.is_none())
                .collect())
        })
    }

    fn create_issue<'a>(&'a self, issue: &'a NewIssue) -> ForgeFuture<'a, Issue> {
        Box::pin(async move {
            let body =
                serde_json::to_value(issue).map_err(|e| ForgeError::Config(e.to_string()))?;
            self.send("create issue", Method::POST, &self.url("/issues"), &body)
                .await
        })
    }

    fn get_issue(&self, number: u64) -> ForgeFuture<'_, Issue> {
        Box::pin(async move {
            self.get("get issue", &self.url(&format!("/issues/{number}")))
                .await
        })
    }

    fn list_comments(&self, issue: u64) -> ForgeFuture<'_, Vec<Comment>> {
        Box::pin(async move {
            let url = self.url(&format!(
                "/issues/{issue}/comments?per_page={}",
                self.per_page()
            ));
            self.pages("list comments", url, None).await
        })
    }

    fn create_comment<'a>(&'a self, issue: u64, body: &'a str) -> ForgeFuture<'a, Comment> {
        Box::pin(async move {
            let url = self.url(&format!("/issues/{issue}/comments"));
            self.send(
                "create comment",
                Method::POST,
                &url,
                &json!({ "body": body }),
            )
            .await
        })
    }

    fn edit_comment<'a>(&'a self, comment_id: u64, body: &'a str) -> ForgeFuture<'a, Comment> {
        Box::pin(async move {
            let url = self.url(&format!("/issues/comments/{comment_id}"));
            self.send(
                "edit comment",
                Method::PATCH,
                &url,
                &json!({ "body": body }),
            )
            .await
        })
    }

    fn add_labels<'a>(&'a self, issue: u64, labels: &'a [String]) -> ForgeFuture<'a, Vec<Label>> {
        Box::pin(async move {
            let url = self.url(&format!("/issues/{issue}/labels"));
            self.send(
                "add labels",
                Method::POST,
                &url,
                &json!({ "labels": labels }),
            )
            .await
        })
    }

    fn remove_label<'a>(&'a self, issue: u64, label: &'a str) -> ForgeFuture<'a, Vec<Label>> {
        Box::pin(async move {
            let url = self.url(&format!("/issues/{issue}/labels/{}", enc(label)));
            let answer = self
                .request("remove label", Method::DELETE, &url, None)
                .await?;
            parse("remove label", &answer)
        })
    }

    fn create_label<'a>(&'a self, label: &'a NewLabel) -> ForgeFuture<'a, Label> {
        Box::pin(async move {
            let body =
                serde_json::to_value(label).map_err(|e| ForgeError::Config(e.to_string()))?;
            self.send("create label", Method::POST, &self.url("/labels"), &body)
                .await
        })
    }

    fn list_labels(&self) -> ForgeFuture<'_, Vec<Label>> {
        Box::pin(async move {
            let url = self.url(&format!("/labels?per_page={}", self.per_page()));
            self.pages("list labels", url, None).await
        })
    }

    fn list_pulls_for_branch<'a>(&'a self, branch: &'a str) -> ForgeFuture<'a, Vec<PullRequest>> {
        Box::pin(async move {
            let head = format!("{}:{branch}", self.owner);
            let url = self.url(&format!(
                "/pulls?state=all&head={}&per_page={}",
                enc(&head),
                self.per_page()
            ));
            self.pages("list pull requests", url, None).await
        })
    }

    fn get_pull(&self, number: u64) -> ForgeFuture<'_, PullRequest> {
        Box::pin(async move {
            self.get("get pull request", &self.url(&format!("/pulls/{number}")))
                .await
        })
    }

    fn create_pull<'a>(&'a self, pull: &'a NewPull) -> ForgeFuture<'a, PullRequest> {
        Box::pin(async move {
            let body = serde_json::to_value(pull).map_err(|e| ForgeError::Config(e.to_string()))?;
            self.send(
                "create pull request",
                Method::POST,
                &self.url("/pulls"),
                &body,
            )
            .await
        })
    }

    fn update_pull<'a>(
        &'a self,
        number: u64,
        update: &'a PullUpdate,
    ) -> ForgeFuture<'a, PullRequest> {
        Box::pin(async move {
            let body =
                serde_json::to_value(update).map_err(|e| ForgeError::Config(e.to_string()))?;
            let url = self.url(&format!("/pulls/{number}"));
            self.send("update pull request", Method::PATCH, &url, &body)
                .await
        })
    }

    fn mark_ready_for_review<'a>(&'a self, pull: &'a PullRequest) -> ForgeFuture<'a, ()> {
        Box::pin(async move {
            self.graphql(
                "mark ready for review",
                MARK_READY,
                json!({ "id": pull.node_id }),
            )
            .await
            .map(|_| ())
        })
    }

    fn enable_auto_merge<'a>(
        &'a self,
        pull: &'a PullRequest,
        method: MergeMethod,
    ) -> ForgeFuture<'a, ()> {
        Box::pin(async move {
            let variables = json!({ "id": pull.node_id, "method": method.graphql() });
            self.graphql("enable auto-merge", AUTO_MERGE, variables)
                .await
                .map(|_| ())
        })
    }

    fn list_reviews(&self, pull: u64) -> ForgeFuture<'_, Vec<Review>> {
        Box::pin(async move {
            let url = self.url(&format!(
                "/pulls/{pull}/reviews?per_page={}",
                self.per_page()
            ));
            self.pages("list reviews", url, None).await
        })
    }

    fn list_check_runs<'a>(&'a self, git_ref: &'a str) -> ForgeFuture<'a, Vec<CheckRun>> {
        Box::pin(async move {
            let url = self.url(&format!(
                "/commits/{}/check-runs?per_page={}",
                enc(git_ref),
                self.per_page()
            ));
            self.pages("list check runs", url, Some("check_runs")).await
        })
    }

    fn collaborator_permission<'a>(&'a self, user: &'a str) -> ForgeFuture<'a, Permission> {
        Box::pin(async move {
            let url = self.url(&format!("/collaborators/{}/permission", enc(user)));
            let answer: PermissionAnswer = self.get("get collaborator permission", &url).await?;
            Ok(Permission::from_github(
                &answer.role_name,
                &answer.permission,
            ))
        })
    }

    fn server_time(&self) -> Option<Timestamp> {
        *self
            .server_time
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn delete_comment(&self, comment_id: u64) -> ForgeFuture<'_, ()> {
        Box::pin(async move {
            let url = self.url(&format!("/issues/comments/{comment_id}"));
            self.request("delete comment", Method::DELETE, &url, None)
                .await
                .map(|_| ())
        })
    }

    fn get_ref<'a>(&'a self, name: &'a str) -> ForgeFuture<'a, GitRef> {
        Box::pin(async move {
            let url = self.url(&format!("/git/ref/{}", enc(name)));
            self.get("get reference", &url).await
        })
    }

    fn matching_refs<'a>(&'a self, prefix: &'a str) -> ForgeFuture<'a, Vec<GitRef>> {
        Box::pin(async move {
            let url = self.url(&format!("/git/matching-refs/{}", enc(prefix)));
            self.get("list references", &url).await
        })
    }

    fn create_ref<'a>(&'a self, name: &'a str, sha: &'a str) -> ForgeFuture<'a, GitRef> {
        Box::pin(async move {
            let body = json!({ "ref": name, "sha": sha });
            self.send(
                "create reference",
                Method::POST,
                &self.url("/git/refs"),
                &body,
            )
            .await
        })
    }

    fn delete_ref<'a>(&'a self, name: &'a str) -> ForgeFuture<'a, ()> {
        Box::pin(async move {
            let url = self.url(&format!("/git/refs/{}", enc(name)));
            self.request("delete reference", Method::DELETE, &url, None)
                .await
                .map(|_| ())
        })
    }

    fn create_commit<'a>(
        &'a self,
        message: &'a str,
        tree: &'a str,
        parents: &'a [String],
    ) -> ForgeFuture<'a, GitCommit> {
        Box::pin(async move {
            let body = json!({ "message": message, "tree": tree, "parents": parents });
            self.send(
                "create commit",
                Method::POST,
                &self.url("/git/commits"),
                &body,
            )
            .await
        })
    }

    fn project_field<'a>(
        &'a self,
        owner: &'a str,
        number: u64,
        field: &'a str,
    ) -> ForgeFuture<'a, ProjectField> {
        Box::pin(async move {
            let call = "read the project's field";
            let v = self
                .graphql(
                    call,
                    PROJECT_FIELD,
                    json!({ "owner": owner, "number": number, "field": field }),
                )
                .await?;
            let project = v.pointer("/repositoryOwner/projectV2");
            let id = project.and_then(|p| p.get("id")).and_then(Value::as_str);
            let f = project.and_then(|p| p.get("field"));
            let fid = f.and_then(|f| f.get("id")).and_then(Value::as_str);
            let (Some(id), Some(fid)) = (id, fid) else {
                return Err(ForgeError::NotFound { call });
            };
            let options = f
                .and_then(|f| f.get("options"))
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|o| {
                            Some((
                                o.get("id")?.as_str()?.to_owned(),
                                o.get("name")?.as_str()?.to_owned(),
                            ))
                        })
                        .collect()
                })
                .unwrap_or_default();
            Ok(ProjectField {
                project: id.to_owned(),
                field: fid.to_owned(),
                options,
            })
        })
    }

    fn set_project_field<'a>(
        &'a self,
        field: &'a ProjectField,
        issue_node: &'a str,
        option: &'a str,
    ) -> ForgeFuture<'a, ()> {
        Box::pin(async move {
            let v = self
                .graphql(
                    "add to the project",
                    ADD_ITEM,
                    json!({ "project": field.project, "content": issue_node }),
                )
                .await?;
            let Some(item) = v
                .pointer("/addProjectV2ItemById/item/id")
                .and_then(Value::as_str)
            else {
                return Err(ForgeError::NotFound {
                    call: "add to the project",
                });
            };
            self.graphql(
                "set the project's field",
                SET_FIELD,
                json!({ "project": field.project, "item": item, "field": field.field, "option": option }),
            )
            .await
            .map(|_| ())
        })
    }

    fn get_commit<'a>(&'a self, sha: &'a str) -> ForgeFuture<'a, GitCommit> {
        Box::pin(async move {
            let url = self.url(&format!("/git/commits/{}", enc(sha)));
            self.get("get commit", &url).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every GraphQL document the client sends, with variables as it sends them, validated by
    /// graphql-js against GitHub's own GraphQL schema (npm `@octokit/graphql-schema`, pinned,
    /// installed by `.ci/run`): the documents parse, every field and argument exists with its
    /// type, and the variables coerce to their declared types.
    #[test]
    fn graphql_documents_are_valid_against_githubs_schema() {
        const ENV: &str = "BATON_TEST_GRAPHQL_SCHEMA";
        let Some(dir) = std::env::var_os(ENV) else {
            assert!(
                std::env::var(format!("{ENV}_REQUIRED")).as_deref() != Ok("1"),
                "{ENV}_REQUIRED=1 but {ENV} is not set"
            );
            eprintln!("SKIPPED: GitHub's GraphQL schema ({ENV} is not set)");
            return;
        };
        let id = "PR_kwDOAAA";
        let docs = json!([
            ["markPullRequestReadyForReview", MARK_READY, { "id": id }],
            ["enablePullRequestAutoMerge", AUTO_MERGE, { "id": id, "method": MergeMethod::Squash.graphql() }],
            ["projectV2 field", PROJECT_FIELD, { "owner": "acme", "number": 3, "field": "Status" }],
            ["addProjectV2ItemById", ADD_ITEM, { "project": "PVT_1", "content": "I_1" }],
            ["updateProjectV2ItemFieldValue", SET_FIELD, { "project": "PVT_1", "item": "PVTI_1", "field": "PVTSSF_1", "option": "o1" }],
            // The check must be able to fail: a field GitHub does not have, a wrong variable.
            ["a wrong field (must fail)", "query { viewer { loginName } }", {}],
            ["a wrong variable (must fail)", AUTO_MERGE, { "id": id, "method": "FAST_FORWARD" }]
        ]);
        let script = r#"
const path = require('path');
const fs = require('fs');
const dir = process.argv[1];
const g = require(path.join(dir, 'graphql'));
const { getVariableValues } = require(path.join(dir, 'graphql/execution/values'));
const schema = g.buildClientSchema(JSON.parse(fs.readFileSync(path.join(dir, '@octokit/graphql-schema/schema.json'), 'utf8')));
const out = [];
for (const [name, text, vars] of JSON.parse(fs.readFileSync(0, 'utf8'))) {
  let errors = [];
  try {
    const doc = g.parse(text);
    errors = g.validate(schema, doc).map(e => e.message);
    const op = doc.definitions[0];
    const coerced = getVariableValues(schema, op.variableDefinitions || [], vars);
    if (coerced.errors) errors.push(...coerced.errors.map(e => e.message));
  } catch (e) { errors.push(String(e)); }
  out.push([name, errors]);
}
console.log(JSON.stringify(out));
"#;
        let mut child = std::process::Command::new("node")
            .arg("-e")
            .arg(script)
            .arg(&dir)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("node runs");
        {
            use std::io::Write as _;
            let mut stdin = child.stdin.take().expect("stdin");
            stdin.write_all(docs.to_string().as_bytes()).expect("write");
        }
        let out = child.wait_with_output().expect("node ends");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        let results: Vec<(String, Vec<String>)> =
            serde_json::from_slice(&out.stdout).expect("the validator's JSON");
        for (name, errors) in &results {
            if name.ends_with("(must fail)") {
                assert!(!errors.is_empty(), "{name} passed: the check cannot fail");
            } else {
                assert!(errors.is_empty(), "{name}: {errors:#?}");
            }
        }
        assert_eq!(results.len(), 7);
    }

    #[test]
    fn next_link_is_read_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::LINK,
            HeaderValue::from_static(
                "<https://api.github.com/repositories/1/issues?page=3>; rel=\"next\", \
                 <https://api.github.com/repositories/1/issues?page=9>; rel=\"last\"",
            ),
        );
        assert_eq!(
            next_link(&headers).as_deref(),
            Some("https://api.github.com/repositories/1/issues?page=3")
        );
        headers.insert(
            header::LINK,
            HeaderValue::from_static("<https://api.github.com/x?page=1>; rel=\"prev\""),
        );
        assert_eq!(next_link(&headers), None);
    }

    #[test]
    fn segments_are_percent_encoded() {
        assert_eq!(enc("agent/backend"), "agent%2Fbackend");
        assert_eq!(enc("me:feature x"), "me%3Afeature%20x");
        assert_eq!(enc("a-b_c.d~"), "a-b_c.d~");
    }

    #[test]
    fn rate_limits_are_read_from_headers_and_messages() {
        let now = Timestamp::from_second(1_000).unwrap();
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("7"));
        assert_eq!(
            rate_limit_until(403, &headers, b"", now),
            Some(Timestamp::from_second(1_007).unwrap())
        );
        let mut headers = HeaderMap::new();
        headers.insert("x-ratelimit-remaining", HeaderValue::from_static("0"));
        headers.insert("x-ratelimit-reset", HeaderValue::from_static("1500"));
        assert_eq!(
            rate_limit_until(403, &headers, b"", now),
            Some(Timestamp::from_second(1_500).unwrap())
        );
        let secondary = br#"{"message":"You have exceeded a secondary rate limit."}"#;
        assert_eq!(
            rate_limit_until(403, &HeaderMap::new(), secondary, now),
            Some(Timestamp::from_second(1_060).unwrap())
        );
        let denied = br#"{"message":"Resource not accessible by integration"}"#;
        assert_eq!(rate_limit_until(403, &HeaderMap::new(), denied, now), None);
    }

    #[test]
    fn the_etag_cache_drops_its_oldest_entry() {
        let mut cache = EtagCache::default();
        let answer = |body: &[u8]| Cached {
            etag: HeaderValue::from_static("\"a\""),
            link: None,
            body: body.to_vec(),
        };
        cache.put(2, "u1", answer(b"1"));
        cache.put(2, "u2", answer(b"2"));
        cache.put(2, "u3", answer(b"3"));
        assert!(cache.get("u1").is_none());
        assert_eq!(cache.get("u3").map(|c| c.body), Some(b"3".to_vec()));
    }

    #[test]
    fn graphql_sits_next_to_the_rest_base() {
        let token = || Token::new("t");
        let cloud = GitHub::new("https://api.github.com/", "o", "r", token()).unwrap();
        assert_eq!(cloud.graphql, "https://api.github.com/graphql");
        let ghes = GitHub::new("https://ghe.example/api/v3", "o", "r", token()).unwrap();
        assert_eq!(ghes.graphql, "https://ghe.example/api/graphql");
        assert!(GitHub::new("ftp://x", "o", "r", token()).is_err());
        assert!(GitHub::new("https://x", "o/x", "r", token()).is_err());
    }
}
