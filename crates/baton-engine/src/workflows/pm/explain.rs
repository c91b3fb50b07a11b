//! What a failed pass or turn tells the user: the repository, what GitHub refused and, for a
//! missing permission, which one the token needs (the permissions docs/github.md lists), and
//! whether running again can help (GitHub's server, the network or a rate limit: yes; a wrong
//! repository, a bad token or a missing permission: no, the configuration must change first).

use super::PmError;
use baton_github::ForgeError;

/// The token permission a call needs (a fine-grained token's, or a GitHub App's).
pub fn permission_of(call: &str) -> &'static str {
    match call {
        "list pull requests"
        | "get pull request"
        | "create pull request"
        | "update pull request"
        | "list reviews"
        | "mark ready for review"
        | "enable auto-merge" => "Pull requests: read and write",
        "list check runs" => "Checks: read",
        "get collaborator permission" => "Metadata: read",
        "get reference" | "list references" | "create reference" | "delete reference"
        | "create commit" | "get commit" => "Contents: read and write",
        "read the project's field" | "add to the project" | "set the project's field" => {
            "Projects: read and write (on the project's owner)"
        }
        _ => "Issues: read and write",
    }
}

/// Whether running the same command again, unchanged, can succeed.
pub fn transient(e: &PmError) -> bool {
    matches!(
        e,
        PmError::Forge(
            ForgeError::Server { .. }
                | ForgeError::Transport { .. }
                | ForgeError::RateLimited { .. }
                | ForgeError::Invalid { .. }
        ) | PmError::Engine(_)
    )
}

/// The message for `e` in `repo` (`OWNER/NAME`).
pub fn explain(e: &PmError, repo: &str) -> String {
    match e {
        PmError::Forge(ForgeError::NotFound { call }) if *call == "list issues" => format!(
            "GitHub has no repository `{repo}` this token can see (404 on {call}): check \
             `--repo` or GITHUB_REPOSITORY, and that the token is granted `{repo}` with {}",
            permission_of(call)
        ),
        PmError::Forge(e @ ForgeError::Unauthorized { .. }) => {
            format!("{e}, for `{repo}`: set GITHUB_TOKEN to a valid token (not expired or revoked)")
        }
        PmError::Forge(e @ ForgeError::Forbidden { call, .. }) => format!(
            "{e}, on `{repo}`: the token needs {} on `{repo}` (docs/github.md lists every \
             permission the pipeline uses)",
            permission_of(call)
        ),
        e => format!("{e} (repository `{repo}`)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_errors_name_the_repository_and_the_permission_and_are_not_retried() {
        let nf = PmError::Forge(ForgeError::NotFound {
            call: "list issues",
        });
        assert!(explain(&nf, "acme/widgetz").contains("no repository `acme/widgetz`"));
        assert!(!transient(&nf));
        let forbidden = PmError::Forge(ForgeError::Forbidden {
            call: "list check runs",
            message: "Resource not accessible by integration".into(),
        });
        let text = explain(&forbidden, "acme/widgets");
        assert!(
            text.contains("Checks: read") && text.contains("`acme/widgets`"),
            "{text}"
        );
        assert!(!transient(&forbidden));
        let server = PmError::Forge(ForgeError::Server {
            call: "list issues",
            status: 502,
        });
        assert!(transient(&server));
        assert!(explain(&server, "acme/widgets").contains("acme/widgets"));
    }
}
