//! baton's GitHub client: the REST calls the PM pipeline makes (issues, labels, comments, pull
//! requests, reviews, check runs, permissions), behind the [`Forge`] trait so the pipeline can
//! be driven against a fake. [`GitHub`] is the real client, hand-written on reqwest: it never
//! repeats a POST, PATCH or DELETE (a repeated POST would post a comment twice), repeats a GET
//! with backoff on a 5xx, honours GitHub's rate limits (`retry-after`,
//! `x-ratelimit-remaining`/`x-ratelimit-reset`, secondary limits on 403/429) up to a cap, and
//! polls with conditional GETs (`If-None-Match` from a small ETag cache). The token is the
//! caller's, sent only in the `Authorization` header, never logged or shown by `Debug`.
//!
//! Two pipeline steps have no REST call: marking a draft ready for review and enabling
//! auto-merge exist only as GraphQL mutations (`markPullRequestReadyForReview`,
//! `enablePullRequestAutoMerge`; the REST "update a pull request" ignores `draft`). The client
//! sends exactly those two mutations to the GraphQL endpoint next to the REST base, never
//! repeated like any POST.

mod client;
mod error;
mod model;

use std::future::Future;
use std::pin::Pin;

pub use client::{GitHub, Policy, Token};
pub use error::ForgeError;
pub use model::{
    AutoMerge, Branch, CheckRun, Comment, GitCommit, GitObject, GitPerson, GitRef, Issue, Label,
    MergeMethod, NewIssue, NewLabel, NewPull, Permission, ProjectField, PullMarker, PullRequest,
    PullUpdate, Review, User,
};

/// What a [`Forge`] call returns: a boxed future, so the trait can be used as `dyn Forge`.
pub type ForgeFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, ForgeError>> + Send + 'a>>;

/// The calls the pipeline makes on one repository.
///
/// Reads may be repeated by the implementation; writes never are: a write that fails with an
/// unknown outcome (a 5xx, a dropped connection) is the caller's to check (by the effect's
/// marker) before sending it again.
pub trait Forge: Send + Sync {
    /// Open issues, every page, pull requests left out.
    fn list_open_issues(&self) -> ForgeFuture<'_, Vec<Issue>>;
    /// One issue (or pull request, as an issue).
    fn get_issue(&self, number: u64) -> ForgeFuture<'_, Issue>;
    /// Every issue, open or closed (pull requests left out), every page.
    fn list_all_issues(&self) -> ForgeFuture<'_, Vec<Issue>>;
    /// Closed issues (not pull requests) carrying `label`, every page.
    fn list_closed_issues(&self, label: &str) -> ForgeFuture<'_, Vec<Issue>>;
    /// Opens an issue.
    fn create_issue<'a>(&'a self, issue: &'a NewIssue) -> ForgeFuture<'a, Issue>;
    /// Every comment of an issue, oldest first, every page.
    fn list_comments(&self, issue: u64) -> ForgeFuture<'_, Vec<Comment>>;
    /// Posts a comment.
    fn create_comment<'a>(&'a self, issue: u64, body: &'a str) -> ForgeFuture<'a, Comment>;
    /// Replaces a comment's text in place.
    fn edit_comment<'a>(&'a self, comment_id: u64, body: &'a str) -> ForgeFuture<'a, Comment>;
    /// Adds labels to an issue (GitHub creates unknown ones); returns the issue's labels.
    fn add_labels<'a>(&'a self, issue: u64, labels: &'a [String]) -> ForgeFuture<'a, Vec<Label>>;
    /// Removes a label from an issue; returns the issue's remaining labels
    /// ([`ForgeError::NotFound`] when the issue did not have it).
    fn remove_label<'a>(&'a self, issue: u64, label: &'a str) -> ForgeFuture<'a, Vec<Label>>;
    /// Creates a repository label.
    fn create_label<'a>(&'a self, label: &'a NewLabel) -> ForgeFuture<'a, Label>;
    /// Every repository label.
    fn list_labels(&self) -> ForgeFuture<'_, Vec<Label>>;
    /// Pull requests, open or closed, whose head is `branch` in this repository.
    fn list_pulls_for_branch<'a>(&'a self, branch: &'a str) -> ForgeFuture<'a, Vec<PullRequest>>;
    /// One pull request, with `mergeable`.
    fn get_pull(&self, number: u64) -> ForgeFuture<'_, PullRequest>;
    /// Opens a pull request.
    fn create_pull<'a>(&'a self, pull: &'a NewPull) -> ForgeFuture<'a, PullRequest>;
    /// Changes a pull request's title, text, state or base.
    fn update_pull<'a>(
        &'a self,
        number: u64,
        update: &'a PullUpdate,
    ) -> ForgeFuture<'a, PullRequest>;
    /// Marks a draft ready for review (GraphQL `markPullRequestReadyForReview`).
    fn mark_ready_for_review<'a>(&'a self, pull: &'a PullRequest) -> ForgeFuture<'a, ()>;
    /// Enables auto-merge (GraphQL `enablePullRequestAutoMerge`): GitHub merges once the
    /// branch protection's requirements (reviews, checks) are met.
    fn enable_auto_merge<'a>(
        &'a self,
        pull: &'a PullRequest,
        method: MergeMethod,
    ) -> ForgeFuture<'a, ()>;
    /// Every review of a pull request, oldest first.
    fn list_reviews(&self, pull: u64) -> ForgeFuture<'_, Vec<Review>>;
    /// Every check run on a commit (a sha, a branch or a tag).
    fn list_check_runs<'a>(&'a self, git_ref: &'a str) -> ForgeFuture<'a, Vec<CheckRun>>;
    /// A user's permission on the repository.
    fn collaborator_permission<'a>(&'a self, user: &'a str) -> ForgeFuture<'a, Permission>;
    /// The time on GitHub's clock when it last answered (its `date` header): the pipeline's
    /// "now", so timestamps and the clock they are compared with come from one place.
    fn server_time(&self) -> Option<jiff::Timestamp> {
        None
    }
    /// Deletes a comment ([`ForgeError::NotFound`] when it is already gone).
    fn delete_comment(&self, comment_id: u64) -> ForgeFuture<'_, ()>;
    /// One reference, by its name without `refs/` (`heads/main`).
    fn get_ref<'a>(&'a self, name: &'a str) -> ForgeFuture<'a, GitRef>;
    /// Every reference whose name (without `refs/`) starts with `prefix` (`baton/seats/`).
    fn matching_refs<'a>(&'a self, prefix: &'a str) -> ForgeFuture<'a, Vec<GitRef>>;
    /// Creates a reference (a full name, `refs/baton/seats/1`). It is a compare-and-swap: when
    /// the reference exists GitHub refuses with 422 ([`ForgeError::Rejected`]) and nothing
    /// changes, so of two callers exactly one gets it.
    fn create_ref<'a>(&'a self, name: &'a str, sha: &'a str) -> ForgeFuture<'a, GitRef>;
    /// Deletes a reference, by its name without `refs/`.
    fn delete_ref<'a>(&'a self, name: &'a str) -> ForgeFuture<'a, ()>;
    /// Writes a commit object (no branch moves).
    fn create_commit<'a>(
        &'a self,
        message: &'a str,
        tree: &'a str,
        parents: &'a [String],
    ) -> ForgeFuture<'a, GitCommit>;
    /// Reads a commit object.
    fn get_commit<'a>(&'a self, sha: &'a str) -> ForgeFuture<'a, GitCommit>;
    /// The single-select field `field` of project (v2) `number` of `owner` (a user or an
    /// organisation), by GraphQL; [`ForgeError::NotFound`] when either is missing.
    fn project_field<'a>(
        &'a self,
        owner: &'a str,
        number: u64,
        field: &'a str,
    ) -> ForgeFuture<'a, ProjectField>;
    /// Puts the issue (its node id) on the project, once, and sets its field to `option` (an
    /// option's node id). Both mutations are idempotent on GitHub.
    fn set_project_field<'a>(
        &'a self,
        field: &'a ProjectField,
        issue_node: &'a str,
        option: &'a str,
    ) -> ForgeFuture<'a, ()>;
}
