//! Reading and writing the pipeline's comments beyond their header: the agent a footer names,
//! a reviewer's verdict line, the hidden markers that make every comment findable again (so a
//! rerun never posts one twice), and how a role's label name and the display name in a header
//! (`backend`, `Backend Developer`) are matched.

use super::decide::Review;

/// The hidden marker of an effect the PM sent (`<!-- baton:effect KEY -->`).
pub fn effect_marker(key: &str) -> String {
    format!("<!-- baton:effect {key} -->")
}

/// The hidden marker of a specialist's turn (`<!-- baton:turn #42 backend 3 part -->`).
pub fn turn_marker(issue: u64, role: &str, turn: usize, part: &str) -> String {
    format!("<!-- baton:turn #{issue} {role} {turn} {part} -->")
}

/// The agent a comment's metadata footer names (`_Agent: backend · Skills: …_`).
pub fn footer_agent(body: &str) -> Option<&str> {
    let line = body
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with("_Agent:"))?;
    let rest = line.strip_prefix("_Agent:")?;
    let name = rest.split('·').next()?.trim().trim_end_matches('_').trim();
    (!name.is_empty()).then_some(name)
}

/// A role's display name: `business-analyst` → `Business Analyst`.
pub fn role_title(role: &str) -> String {
    role.split(['-', '_'])
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_uppercase().chain(c).collect::<String>(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn squash(s: &str) -> String {
    s.chars()
        .filter(char::is_ascii_alphanumeric)
        .flat_map(|c| c.to_lowercase())
        .collect()
}

/// Whether `name` (from a header or a footer) names `role`: the same words, or the role's name
/// followed by a title (`Backend Developer` names `backend`; `Code Reviewer` names `reviewer`
/// only when written so: the role's words must lead).
pub fn names_role(name: &str, role: &str) -> bool {
    let (n, r) = (squash(name), squash(role));
    !r.is_empty() && n.starts_with(&r)
}

/// The role among `roles` that `name` names.
pub fn role_named<'a>(name: &str, roles: &'a [String]) -> Option<&'a str> {
    roles
        .iter()
        .filter(|r| names_role(name, r))
        .max_by_key(|r| r.len())
        .map(String::as_str)
}

/// A reviewer's verdict: a line `Verdict: approved` or `Verdict: changes-requested` (also
/// `changes requested`, `request changes`), else the reviewer agent's own ```` ```baton-review ````
/// block read by [`crate::verdict::parse_review`] (its `passed`); `None` when there is neither,
/// or it is unclear.
pub fn verdict(text: &str) -> Option<Review> {
    match verdict_line(text) {
        Line::Found(v) => return Some(v),
        Line::Unclear => return None,
        Line::None => {}
    }
    match crate::verdict::parse_review(text) {
        crate::verdict::Verdict::Pass(_) => Some(Review::Approved),
        crate::verdict::Verdict::Fail(_) => Some(Review::ChangesRequested),
        crate::verdict::Verdict::Inconclusive { .. } => None,
    }
}

enum Line {
    Found(Review),
    Unclear,
    None,
}

fn verdict_line(text: &str) -> Line {
    let mut found = None;
    for line in text.lines() {
        let l = line
            .trim()
            .trim_start_matches(['*', '#', ' '])
            .to_lowercase();
        let Some(v) = l.strip_prefix("verdict:") else {
            continue;
        };
        let v = v.trim().trim_matches(['*', '`', '.', ' ']);
        found = match v {
            "approved" | "approve" | "pass" => Some(Review::Approved),
            "changes-requested" | "changes requested" | "request changes" | "fail" => {
                Some(Review::ChangesRequested)
            }
            _ => return Line::Unclear,
        };
    }
    found.map_or(Line::None, Line::Found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footers_name_their_agent() {
        let table = [
            (
                "x\n\n---\n_Agent: backend · Skills: a, b · Run: [#1](l)_",
                Some("backend"),
            ),
            (
                "x\n---\n_Agent: product-manager · Skills: agent-pipeline_",
                Some("product-manager"),
            ),
            ("_Agent: reviewer_", Some("reviewer")),
            ("no footer", None),
            ("_Agent:  · Skills: x_", None),
        ];
        for (body, want) in table {
            assert_eq!(footer_agent(body), want, "{body}");
        }
    }

    #[test]
    fn display_names_match_roles() {
        let roles: Vec<String> = ["business-analyst", "architect", "backend", "reviewer"]
            .map(String::from)
            .to_vec();
        assert_eq!(role_named("Backend Developer", &roles), Some("backend"));
        assert_eq!(
            role_named("Business Analyst", &roles),
            Some("business-analyst")
        );
        assert_eq!(role_named("architect", &roles), Some("architect"));
        assert_eq!(role_named("Code Reviewer", &roles), None);
        assert_eq!(role_named("Product Manager", &roles), None);
        assert_eq!(role_title("business-analyst"), "Business Analyst");
        assert_eq!(role_title("backend"), "Backend");
    }

    #[test]
    fn verdicts_are_read_from_their_line_only() {
        assert_eq!(
            verdict("Looks good.\n\nVerdict: approved"),
            Some(Review::Approved)
        );
        assert_eq!(
            verdict("**Verdict:** changes-requested\n- fix x"),
            Some(Review::ChangesRequested)
        );
        assert_eq!(verdict("I approve of this."), None);
        assert_eq!(verdict("Verdict: maybe"), None);
        assert_eq!(
            verdict("Verdict: approved\nVerdict: changes requested"),
            Some(Review::ChangesRequested)
        );
        let block = |passed: bool, severity: &str| {
            format!(
                "Findings.\n\n```baton-review\n{{\"passed\": {passed}, \"findings\": [\
                 {{\"severity\": \"low\", \"file\": \"a\", \"issue\": \"x\"}},\
                 {{\"severity\": \"low\", \"file\": \"b\", \"issue\": \"y\"}},\
                 {{\"severity\": \"{severity}\", \"file\": \"c\", \"issue\": \"z\"}}],\
                 \"must_fix\": [], \"summary\": \"s\"}}\n```"
            )
        };
        assert_eq!(verdict(&block(true, "low")), Some(Review::Approved));
        assert_eq!(
            verdict(&block(false, "high")),
            Some(Review::ChangesRequested)
        );
        // A block that contradicts its own findings is not a verdict.
        assert_eq!(verdict(&block(true, "high")), None);
    }

    #[test]
    fn markers() {
        assert_eq!(effect_marker("#4/2/0"), "<!-- baton:effect #4/2/0 -->");
        assert_eq!(
            turn_marker(4, "backend", 2, "handback"),
            "<!-- baton:turn #4 backend 2 handback -->"
        );
    }
}
