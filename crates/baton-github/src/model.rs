//! The GitHub objects the pipeline reads and the requests it sends, reduced to the fields it
//! uses. Reading is lenient (unknown fields are ignored, optional ones default) so a GitHub that
//! adds fields changes nothing; timestamps are read as RFC 3339 into [`jiff::Timestamp`].

use jiff::Timestamp;
use serde::{Deserialize, Deserializer, Serialize};

fn timestamp<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
    let s = String::deserialize(d)?;
    s.parse().map_err(serde::de::Error::custom)
}

fn opt_timestamp<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Timestamp>, D::Error> {
    match Option::<String>::deserialize(d)? {
        None => Ok(None),
        Some(s) => s.parse().map(Some).map_err(serde::de::Error::custom),
    }
}

fn null_as_empty<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

/// A GitHub account (a person or a bot).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct User {
    /// The handle, without `@`.
    pub login: String,
    /// Its numeric id.
    pub id: u64,
    /// `User`, `Bot` or `Organization`.
    #[serde(rename = "type", default)]
    pub kind: String,
}

/// A repository label.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Label {
    /// Its id.
    pub id: u64,
    /// Its name, e.g. `agent/backend`.
    pub name: String,
    /// Its colour, six hex digits without `#`.
    pub color: String,
    /// Its description.
    #[serde(default)]
    pub description: Option<String>,
}

/// A label as an issue lists it: GitHub's schema allows a bare name or the whole label.
#[derive(Deserialize)]
#[serde(untagged)]
enum IssueLabel {
    Name(String),
    Full { name: String },
}

fn label_names<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(Vec::<IssueLabel>::deserialize(d)?
        .into_iter()
        .map(|l| match l {
            IssueLabel::Name(name) | IssueLabel::Full { name } => name,
        })
        .collect())
}

/// The marker GitHub puts on an issue that is a pull request.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PullMarker {
    /// The pull request's API URL.
    #[serde(default)]
    pub url: Option<String>,
}

/// An issue (the list call also returns pull requests: see [`Issue::pull_request`]).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Issue {
    /// Its number.
    pub number: u64,
    /// Its id.
    pub id: u64,
    /// Its GraphQL node id (what a Project v2 item is added by).
    #[serde(default)]
    pub node_id: String,
    /// Its title.
    pub title: String,
    /// Its text (empty when none).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub body: String,
    /// `open` or `closed`.
    pub state: String,
    /// Its labels' names.
    #[serde(deserialize_with = "label_names")]
    pub labels: Vec<String>,
    /// Who opened it.
    pub user: Option<User>,
    /// The author's relation to the repository (`OWNER`, `MEMBER`, `COLLABORATOR`, `NONE`…).
    #[serde(default)]
    pub author_association: Option<String>,
    /// When it was opened.
    #[serde(deserialize_with = "timestamp")]
    pub created_at: Timestamp,
    /// When it last changed.
    #[serde(deserialize_with = "timestamp")]
    pub updated_at: Timestamp,
    /// Its page.
    pub html_url: String,
    /// Present when this issue is a pull request.
    #[serde(default)]
    pub pull_request: Option<PullMarker>,
}

/// A comment on an issue or pull request.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Comment {
    /// Its id (what [`crate::Forge::edit_comment`] takes).
    pub id: u64,
    /// Its text.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub body: String,
    /// Its author.
    pub user: Option<User>,
    /// The author's relation to the repository (`OWNER`, `MEMBER`, `COLLABORATOR`,
    /// `CONTRIBUTOR`, `NONE`…): comments from authors without write access do not route work.
    #[serde(default)]
    pub author_association: String,
    /// When it was posted.
    #[serde(deserialize_with = "timestamp")]
    pub created_at: Timestamp,
    /// When it was last edited (equal to `created_at` when never).
    #[serde(deserialize_with = "timestamp")]
    pub updated_at: Timestamp,
    /// Its page.
    pub html_url: String,
}

/// One end of a pull request.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Branch {
    /// The branch name.
    #[serde(rename = "ref")]
    pub name: String,
    /// The commit it points at.
    pub sha: String,
    /// `owner:branch`.
    #[serde(default)]
    pub label: String,
}

/// Auto-merge, when enabled on a pull request.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct AutoMerge {
    /// `merge`, `squash` or `rebase`.
    pub merge_method: String,
    /// Who enabled it.
    pub enabled_by: Option<User>,
}

/// A pull request (from the list, the get or an update call).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PullRequest {
    /// Its number.
    pub number: u64,
    /// Its id.
    pub id: u64,
    /// Its GraphQL node id (what marking it ready and enabling auto-merge take).
    pub node_id: String,
    /// `open` or `closed`.
    pub state: String,
    /// Still a draft.
    #[serde(default)]
    pub draft: bool,
    /// Its title.
    pub title: String,
    /// Its text (empty when none).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub body: String,
    /// The branch with the changes.
    pub head: Branch,
    /// The branch it merges into.
    pub base: Branch,
    /// When it was merged.
    #[serde(default, deserialize_with = "opt_timestamp")]
    pub merged_at: Option<Timestamp>,
    /// Whether it can merge cleanly (only on a single pull request; `None` while GitHub
    /// computes it).
    #[serde(default)]
    pub mergeable: Option<bool>,
    /// Auto-merge, when enabled.
    #[serde(default)]
    pub auto_merge: Option<AutoMerge>,
    /// Its labels' names.
    #[serde(default, deserialize_with = "label_names")]
    pub labels: Vec<String>,
    /// Its page.
    pub html_url: String,
}

impl PullRequest {
    /// Whether it was merged.
    pub fn is_merged(&self) -> bool {
        self.merged_at.is_some()
    }
}

/// A review of a pull request.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Review {
    /// Its id.
    pub id: u64,
    /// The reviewer.
    pub user: Option<User>,
    /// `APPROVED`, `CHANGES_REQUESTED`, `COMMENTED`, `DISMISSED` or `PENDING`.
    pub state: String,
    /// Its text.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub body: String,
    /// The commit it reviewed.
    #[serde(default)]
    pub commit_id: Option<String>,
    /// When it was submitted (none while pending).
    #[serde(default, deserialize_with = "opt_timestamp")]
    pub submitted_at: Option<Timestamp>,
    /// The reviewer's relation to the repository.
    #[serde(default)]
    pub author_association: String,
}

/// A check run on a commit.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CheckRun {
    /// Its id.
    pub id: u64,
    /// Its name (`test`, `clippy`…).
    pub name: String,
    /// The commit.
    pub head_sha: String,
    /// `queued`, `in_progress`, `completed`…
    pub status: String,
    /// When completed: `success`, `failure`, `neutral`, `cancelled`, `skipped`, `timed_out`,
    /// `action_required`.
    #[serde(default)]
    pub conclusion: Option<String>,
    /// When it started.
    #[serde(default, deserialize_with = "opt_timestamp")]
    pub started_at: Option<Timestamp>,
    /// When it completed.
    #[serde(default, deserialize_with = "opt_timestamp")]
    pub completed_at: Option<Timestamp>,
}

/// A user's permission on the repository (the `role_name` GitHub reports).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Permission {
    /// No access.
    None,
    /// Read.
    Read,
    /// Triage.
    Triage,
    /// Write (push).
    Write,
    /// Maintain.
    Maintain,
    /// Admin.
    Admin,
}

impl Permission {
    /// From GitHub's `role_name` (`admin`, `maintain`, `write`, `triage`, `read`), else its
    /// legacy `permission` (`admin`, `write`, `read`, `none`); a custom role counts as read.
    pub fn from_github(role_name: &str, permission: &str) -> Permission {
        match role_name {
            "admin" => Permission::Admin,
            "maintain" => Permission::Maintain,
            "write" => Permission::Write,
            "triage" => Permission::Triage,
            "read" => Permission::Read,
            _ => match permission {
                "admin" => Permission::Admin,
                "write" => Permission::Write,
                "read" => Permission::Read,
                _ => Permission::None,
            },
        }
    }

    /// Whether it may push (and so route the pipeline's work).
    pub fn can_write(self) -> bool {
        self >= Permission::Write
    }
}

/// The collaborator-permission answer as GitHub sends it.
#[derive(Deserialize)]
pub(crate) struct PermissionAnswer {
    pub(crate) permission: String,
    #[serde(default)]
    pub(crate) role_name: String,
}

/// A label to create.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewLabel {
    /// Its name.
    pub name: String,
    /// Six hex digits without `#`.
    pub color: String,
    /// Its description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// An issue to open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewIssue {
    /// Its title.
    pub title: String,
    /// Its text.
    pub body: String,
    /// Its labels' names.
    pub labels: Vec<String>,
}

/// A pull request to open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewPull {
    /// Its title.
    pub title: String,
    /// The branch with the changes.
    pub head: String,
    /// The branch to merge into.
    pub base: String,
    /// Its text.
    pub body: String,
    /// Open it as a draft (the pipeline always does: only the PM publishes).
    pub draft: bool,
}

/// Changes to a pull request; `None` fields are left as they are.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PullUpdate {
    /// A new title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A new text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// `open` or `closed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// A new base branch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
}

/// A git reference (`refs/baton/seats/1`) and the object it points at.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct GitRef {
    /// Its full name.
    #[serde(rename = "ref")]
    pub name: String,
    /// What it points at.
    pub object: GitObject,
}

/// The object a reference points at.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct GitObject {
    /// Its sha.
    pub sha: String,
}

/// A commit, as the git database API reads it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct GitCommit {
    /// Its sha.
    pub sha: String,
    /// Its message.
    pub message: String,
    /// Its tree.
    pub tree: GitObject,
    /// Its author (the date is when it was written).
    pub author: GitPerson,
}

/// A commit's author or committer.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct GitPerson {
    /// When.
    #[serde(deserialize_with = "timestamp")]
    pub date: Timestamp,
}

/// A Project (v2)'s single-select field, the pipeline's status column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectField {
    /// The project's node id.
    pub project: String,
    /// The field's node id.
    pub field: String,
    /// Its options: (node id, name).
    pub options: Vec<(String, String)>,
}

/// How auto-merge merges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeMethod {
    /// A merge commit.
    Merge,
    /// One squashed commit.
    Squash,
    /// Rebased commits.
    Rebase,
}

impl MergeMethod {
    /// Its GraphQL enum value (`SQUASH`).
    pub fn graphql(self) -> &'static str {
        match self {
            MergeMethod::Merge => "MERGE",
            MergeMethod::Squash => "SQUASH",
            MergeMethod::Rebase => "REBASE",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permission_reads_the_role_name_first() {
        assert_eq!(
            Permission::from_github("maintain", "write"),
            Permission::Maintain
        );
        assert_eq!(Permission::from_github("", "write"), Permission::Write);
        assert_eq!(
            Permission::from_github("custom-role", "read"),
            Permission::Read
        );
        assert!(Permission::Maintain.can_write());
        assert!(!Permission::Triage.can_write());
    }

    #[test]
    fn issue_labels_may_be_names_or_objects() {
        let issue: Issue = serde_json::from_value(serde_json::json!({
            "number": 1, "id": 9, "title": "t", "body": null, "state": "open",
            "labels": ["a", {"id": 1, "name": "b", "color": "ffffff"}],
            "user": null, "created_at": "2026-01-01T00:00:00Z",
            "updated_at": "2026-01-01T00:00:00Z", "html_url": "https://x/1"
        }))
        .unwrap();
        assert_eq!(issue.labels, ["a", "b"]);
        assert_eq!(issue.body, "");
        assert!(issue.pull_request.is_none());
    }
}
