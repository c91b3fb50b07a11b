//! The command-line grammar: every command, flag and help text.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// baton runs a team of AI agents through a disciplined development lifecycle, keeping its state
/// in your BMad `sprint-status.yaml` and a journal of every change.
#[derive(Debug, Parser)]
#[command(
    name = "baton",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    /// Project directory (default: the nearest directory upwards holding `baton.toml`, else the
    /// current one).
    #[arg(
        short = 'C',
        long = "project",
        global = true,
        env = crate::env::BATON_PROJECT,
        value_name = "DIR"
    )]
    pub project: Option<PathBuf>,

    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// baton's commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the whole sprint loop on a bundled example project, in a fresh temp directory.
    #[command(
        after_help = "Examples:\n  baton demo                                      # replays a recorded model session\n  \
        baton demo --model anthropic/claude-sonnet-4-5  # the same run with a live model\n  \
        baton demo --dir /tmp/tally-demo --json\n\n\
        The demo copies a tiny Rust crate with two epics and three stories, initialises git and runs \
        `baton sprint --yolo` on it: real files, real `cargo test` runs, real commits and a real \
        journal. By default the model is replayed from a recorded session; no API is called."
    )]
    Demo(DemoArgs),

    /// Set up baton in a project: `baton.toml`, `.baton/`, and a sprint-status skeleton if absent.
    #[command(
        after_help = "Example:\n  baton init\n  baton -C ../other-project init\n\n\
        Running it again changes nothing. It reports whether the project looks greenfield or \
        brownfield, and which signals decided it."
    )]
    Init(InitArgs),

    /// Show the sprint board: epics, stories, statuses and counts.
    #[command(after_help = "Examples:\n  baton status\n  baton status --json\n  \
        baton status --validate     # exit 1 and list every problem with file:line\n\n\
        The JSON schema is documented in docs/status-json.md.")]
    Status(StatusArgs),

    /// Change one status: validated against the transition table and journaled.
    #[command(after_help = "Examples:\n  baton set 1-2-login in-progress\n  \
        baton set 1-2-login review --note \"ready for a second pair of eyes\"\n  \
        baton set 1-2-login backlog --force --reason \"re-plan\"   # lowering needs --force\n\n\
        Statuses: backlog, ready-for-dev, in-progress, review, done (stories); backlog, \
        in-progress, done (epics); optional, done (retrospectives); and baton's extended states \
        story-doc-review, story-doc-improved, e2e-verify, needs-intervention.")]
    Set(SetArgs),

    /// List the agents: bundled, user (~/.config/baton/agents/) and trusted project ones.
    #[command(after_help = "Examples:\n  baton agents\n  baton agents --json")]
    Agents(AgentsArgs),

    /// Trust this project to supply its own agents (`.baton/agents/`), after reviewing them.
    #[command(
        after_help = "Examples:\n  baton trust            # trust the current project\n  baton trust --revoke\n\n\
        Trust is recorded in your configuration directory, never in the project."
    )]
    Trust(TrustArgs),

    /// Dispatch agents on a task, without any sprint: one, several in parallel, or a chain.
    #[command(after_help = "Examples:\n  baton team scout \"find the tests\"\n  \
        baton team --parallel security-reviewer,performance-reviewer \"review src/\"\n  \
        baton team --chain scout,implementer \"add a --verbose flag; context: {previous}\"\n  \
        baton team scout \"map the code\" --model ollama/qwen2.5-coder:14b --json\n\n\
        In a chain, each step's final answer replaces {previous} in the next step's task.\n\
        Exit codes: 0 all completed, 1 a step failed, 3 an agent escalated, 4 the budget stopped it.")]
    Team(TeamArgs),

    /// Drive stories through the team until each is done or needs a human.
    #[command(
        after_help = "Examples:\n  baton sprint                       # the next 3 unfinished stories\n  \
        baton sprint --batch 5 --yolo\n  baton sprint --stories 1-2-login,1-3-logout\n  \
        baton sprint --json                # events as JSON lines, then the report\n\n\
        Exit codes: 0 all done, 1 a story needs intervention, 3 paused on an escalation \
        (answer with `baton answer`), 4 stopped by the budget.\n\
        A run killed at any moment resumes where it stood: run `baton sprint` again."
    )]
    Sprint(SprintArgs),

    /// Develop a plan file task by task: implementer, spec and quality reviews, fix rounds.
    #[command(
        after_help = "Examples:\n  baton sdd PLAN.md\n  baton sdd PLAN.md --security --performance --max-iterations 2\n  \
        baton sdd PLAN.md --hard-usd 5 --json\n\n\
        Tasks come from a ```baton-tasks block (or `### Task N: Title` headings). Exit codes: 0 every \
        task complete, 1 an error or an aborted run, 3 paused on an escalation (answer with `baton \
        answer`), 4 stopped by the budget. A run killed at any moment resumes where it stood: run \
        the same command again. See docs/sdd.md."
    )]
    Sdd(SddArgs),

    /// List escalations waiting for an answer (all with --all).
    #[command(after_help = "Examples:\n  baton escalations\n  baton escalations --all --json")]
    Escalations(EscalationsArgs),

    /// Answer an escalation; the workflow that raised it acts on it when it runs next.
    #[command(
        after_help = "Examples:\n  baton answer 3 1                   # the first option\n  \
        baton answer 3 \"another fix round\"\n  \
        baton answer 3 2 --why \"the flaky test is tracked in #41\"   # remembered as a decision"
    )]
    Answer(AnswerArgs),

    /// Remember a lesson, preference or decision; agents are reminded of it where it applies.
    #[command(
        after_help = "Examples:\n  baton remember \"Don't mock the database in integration tests\"\n  \
        baton remember \"Pool connections through db::pool\" --scope 'src/db/**' --importance 9\n  \
        baton remember \"Epic 2 ships behind a flag\" --epic 2 --kind decision\n\n\
        A memory with --scope is recalled only for work touching a matching file; with --epic, only \
        in that epic. See docs/memory.md."
    )]
    Remember(RememberArgs),

    /// Forget a memory: it is no longer recalled.
    #[command(after_help = "Examples:\n  baton forget 12\n  baton forget m12")]
    Forget(ForgetArgs),

    /// See what the team learned: list, search, recalls, status; import a BMad memlog.
    #[command(subcommand)]
    Memory(MemoryCommand),

    /// Run BMad's own installed skills unattended: menus, questions, validation loops, parties,
    /// checkpoints, rollback and a task queue.
    #[command(subcommand)]
    Bmad(BmadCommand),

    /// The GitHub pipeline: a Product Manager pass that routes issues to specialist agents by
    /// label, a specialist's turn, the Actions workflows, the import of a sprint (docs/github.md).
    #[command(
        after_help = "Examples:\n  baton pm                          # one pass over the open issues\n  \
        baton pm --watch --interval 300   # a pass every 5 minutes, from a laptop\n  \
        baton pm agent --issue 42 --role backend\n  \
        baton pm init                     # write the GitHub Actions workflows\n  \
        baton pm import                   # one issue per story of the sprint\n\n\
        The token comes from GITHUB_TOKEN; the repository from --repo or GITHUB_REPOSITORY; the \
        API from GITHUB_API_URL (default https://api.github.com)."
    )]
    Pm(PmArgs),
    /// Serve a live web board of the sprint, the runs, their costs and the escalations.
    #[command(
        after_help = "Examples:\n  baton serve                       # http://127.0.0.1:8737, the link with its token is printed once\n  \
        baton serve --open\n  \
        baton serve --read-only           # nobody answers from the board\n  \
        BATON_SERVE_TOKEN=... baton serve --listen 0.0.0.0:8737   # other machines need the token\n\n\
        The board follows the journal, so it shows a `baton sprint` running in another process, \
        and a finished run. Answering an escalation needs the access token and the page's CSRF \
        token; it records the answer as `baton answer` does, and the next `baton sprint` acts on \
        it. Bound to any address but loopback, every page needs the token. See docs/board.md."
    )]
    Serve(ServeArgs),

    /// Show the journal of status changes.
    #[command(
        after_help = "Examples:\n  baton log\n  baton log --key 1-2-login\n  baton log --json --limit 20"
    )]
    Log(LogArgs),

    /// Check providers (reachable, usage, tool calls), git, tests, the sprint file and config.
    #[command(
        after_help = "Examples:\n  baton doctor\n  baton doctor --offline     # no network probes\n  \
        baton doctor --json\n\n\
        For each provider the agents use or baton.toml declares it lists the models, asks for a \
        short answer (does the server stream usage?) and for one tool call (does it come back?). \
        Exit 0 when nothing is wrong, 1 with the problems listed."
    )]
    Doctor(DoctorArgs),

    /// The test-first guard: its mode, status and one-time shell-write allowances.
    #[command(
        after_help = "Examples:\n  baton tdd on\n  baton tdd atdd\n  baton tdd status --json\n  \
        baton tdd allow-bash-write once \"regenerate the protobuf bindings\"\n\n\
        See docs/tdd.md."
    )]
    Tdd(TddArgs),

    /// Claude Code hook mode of the test-first guard (reads the hook JSON on stdin).
    #[command(
        after_help = "Examples:\n  baton guard install     # into .claude/settings.local.json\n  \
        baton guard uninstall\n  baton guard < payload.json\n\n\
        Exit codes in hook mode: 0 with a JSON decision on stdout, 2 to block (reason on stderr)."
    )]
    Guard(GuardArgs),

    /// Plan from an idea: brief, PRD, architecture, epics, readiness, sprint-status.yaml.
    #[command(
        after_help = "Examples:\n  baton plan \"a CLI that counts words\"     # stops after each artifact\n  \
        baton plan --continue                    # the next step reads your edits\n  \
        baton plan --idea-file idea.md --yolo    # straight through\n  \
        baton plan --from prd                    # redo from the PRD on\n  \
        baton plan                               # where the plan stands, what comes next\n\n\
        See docs/planning.md."
    )]
    Plan(crate::plan_args::PlanArgs),

    /// Ask the router where the plan stands and what comes next (`baton plan` without an idea).
    Chat(crate::plan_args::PlanArgs),

    /// Check the plan's documents against each other, in code: requirements, decisions, stories.
    #[command(after_help = "Examples:\n  baton check\n  baton check --json\n\n\
        Exit 1 when a finding is high severity.")]
    Check(crate::plan_args::CheckArgs),

    /// Generate or refresh sprint-status.yaml from the epics, never lowering a status.
    #[command(
        name = "sprint-plan",
        after_help = "Examples:\n  baton sprint-plan\n  baton sprint-plan --json\n  \
        baton sprint-plan --epics sharded\n\n\
        Every epics document of the planning folder is read. New stories are appended as backlog in epic order; existing entries, comments and \
        statuses are kept; keys the epics no longer name are reported, not dropped."
    )]
    SprintPlan(crate::plan_args::SprintPlanArgs),
}

/// `baton doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Skip the network probes of providers.
    #[arg(long)]
    pub offline: bool,
}

/// `baton tdd`.
#[derive(Debug, Args)]
pub struct TddArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: TddAction,
}

/// `baton tdd` actions.
#[derive(Debug, Subcommand)]
pub enum TddAction {
    /// Turn the guard on (test first).
    On,
    /// Turn the guard off.
    Off,
    /// Turn the guard on with acceptance tests first (warned).
    Atdd,
    /// Show the mode in force, the test commands and the guard's recent log.
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// How many log entries to show.
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// Let one shell command write an implementation file (`once "reason"`), journaled.
    AllowBashWrite {
        /// `once`.
        how: String,
        /// Why (kept in the journal).
        reason: String,
    },
}

/// `baton guard`.
#[derive(Debug, Args)]
pub struct GuardArgs {
    /// `install` or `uninstall` the hooks; without one, answer one hook call from stdin.
    #[command(subcommand)]
    pub action: Option<GuardAction>,
    /// Also apply baton's path policy (workspace, protected paths, story statuses): the hook
    /// baton gives the Claude Code workers it runs.
    #[arg(long)]
    pub policy: bool,
    /// With `--policy`: the worktree the agent works in (a story worked in parallel, under
    /// `.baton/worktrees/`), where the project's protected paths hold at the same places.
    #[arg(long, value_name = "DIR", requires = "policy")]
    pub tree: Option<PathBuf>,
}

/// `baton guard` actions.
#[derive(Debug, Subcommand)]
pub enum GuardAction {
    /// Add baton's hooks to `.claude/settings.local.json` (merging with what is there).
    Install,
    /// Remove baton's hooks from `.claude/settings.local.json`, and nothing else.
    Uninstall,
}

/// `baton init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Print what was done as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `baton status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print JSON (schema in docs/status-json.md).
    #[arg(long)]
    pub json: bool,
    /// Check the file and report every problem; exit 1 if any is an error.
    #[arg(long)]
    pub validate: bool,
}

/// `baton set`.
#[derive(Debug, Args)]
pub struct SetArgs {
    /// The key to change (`1-2-login`, `epic-1`, `epic-1-retrospective`).
    pub key: String,
    /// The new status.
    pub status: String,
    /// A note kept as a YAML comment on that line.
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
    /// Why (kept in the journal).
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    /// Allow a move the transition table forbids (lowering, skipping ahead); journaled as forced.
    #[arg(long)]
    pub force: bool,
    /// Print the changes as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `baton log`.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// Only this key.
    #[arg(long, value_name = "KEY")]
    pub key: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Show only the newest N events.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Include pending and abandoned events (writes interrupted or lost to a concurrent edit).
    #[arg(long)]
    pub all: bool,
}

/// `baton agents`.
#[derive(Debug, Args)]
pub struct AgentsArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `baton trust`.
#[derive(Debug, Args)]
pub struct TrustArgs {
    /// Withdraw trust instead.
    #[arg(long)]
    pub revoke: bool,
}

/// `baton team`.
#[derive(Debug, Args)]
pub struct TeamArgs {
    /// `AGENT TASK`, or just `TASK` with `--parallel` / `--chain`.
    #[arg(required = true, num_args = 1..=2, value_name = "AGENT TASK")]
    pub args: Vec<String>,
    /// Run the same task on these agents concurrently (comma-separated).
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "AGENTS",
        conflicts_with = "chain"
    )]
    pub parallel: Option<Vec<String>>,
    /// Run these agents in order, each step's answer replacing `{previous}` (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "AGENTS")]
    pub chain: Option<Vec<String>>,
    /// Use this `provider/model` for every agent instead of their own.
    #[arg(long, value_name = "PROVIDER/MODEL")]
    pub model: Option<String>,
    /// Auto-confirm checkpoints and proceed with the recommended path.
    #[arg(long)]
    pub yolo: bool,
    /// Cost limits of this run.
    #[command(flatten)]
    pub budget: BudgetArgs,
    /// Print the report as JSON (progress lines are not printed).
    #[arg(long)]
    pub json: bool,
}

/// `baton sprint`.
#[derive(Debug, Args)]
pub struct SprintArgs {
    /// Stories in this run (default: `[sprint] batch`, 3).
    #[arg(long, value_name = "N")]
    pub batch: Option<usize>,
    /// Stories in flight at once, each in its own git worktree on branch `baton/<key>`, merged
    /// into the current branch one at a time (default: `[sprint] parallel`, 1).
    #[arg(long, value_name = "N")]
    pub parallel: Option<usize>,
    /// Work exactly these stories, in this order (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "KEYS")]
    pub stories: Option<Vec<String>>,
    /// Auto-confirm checkpoints and proceed with the recommended path.
    #[arg(long)]
    pub yolo: bool,
    /// The model, dirty-tree, budget and output flags.
    #[command(flatten)]
    pub run: RunArgs,
}

/// `baton sdd`.
#[derive(Debug, Args)]
pub struct SddArgs {
    /// The plan file.
    pub plan: PathBuf,
    /// Fix rounds per review before a human is asked (default 3).
    #[arg(long, value_name = "N")]
    pub max_iterations: Option<u32>,
    /// Also run the security review (with the performance review, concurrently).
    #[arg(long)]
    pub security: bool,
    /// Also run the performance review.
    #[arg(long)]
    pub performance: bool,
    /// Run the implementer without the test-first guard (on by default for `baton sdd`).
    #[arg(long)]
    pub no_tdd: bool,
    /// The model, dirty-tree, budget and output flags.
    #[command(flatten)]
    pub run: RunArgs,
}

/// The flags a workflow run shares (`baton sprint`, `baton sdd`).
#[derive(Debug, Clone, Default, Args)]
pub struct RunArgs {
    /// Use this `provider/model` for every agent.
    #[arg(long, value_name = "PROVIDER/MODEL")]
    pub model: Option<String>,
    /// Start even if the git working tree has uncommitted changes.
    #[arg(long)]
    pub allow_dirty: bool,
    /// Cost limits of this run.
    #[command(flatten)]
    pub budget: BudgetArgs,
    /// Stream events as JSON lines and end with the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Cost limits given on the command line (they replace `[budget]`'s).
#[derive(Debug, Clone, Default, Args)]
pub struct BudgetArgs {
    /// Warn before a dispatch that would take spending past this many US dollars.
    #[arg(long, value_name = "USD")]
    pub warn_usd: Option<f64>,
    /// Refuse a dispatch that would take spending past this, and stop a stream that does.
    #[arg(long, value_name = "USD")]
    pub hard_usd: Option<f64>,
    /// Dispatch even when the projected cost crosses `hard_usd` (a stream is still stopped there).
    #[arg(long)]
    pub allow_over_budget: bool,
}

/// `baton escalations`.
#[derive(Debug, Args)]
pub struct EscalationsArgs {
    /// Include answered ones.
    #[arg(long)]
    pub all: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `baton serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The address to listen on; any but a loopback one needs the access token for every page.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8737")]
    pub listen: std::net::SocketAddr,
    /// Open the board in the desktop's browser.
    #[arg(long)]
    pub open: bool,
    /// Turn answering off: the board only shows.
    #[arg(long)]
    pub read_only: bool,
}

/// `baton answer`.
#[derive(Debug, Args)]
pub struct AnswerArgs {
    /// The escalation's number.
    pub id: i64,
    /// The option's number (from 1) or its exact text.
    pub choice: String,
    /// Why: the answer and its reason are remembered as a decision for later work.
    #[arg(long, value_name = "REASON")]
    pub why: Option<String>,
    /// Remember a choice other than the recommended (first) option as a preference, without
    /// asking.
    #[arg(long, conflicts_with = "no_remember")]
    pub remember: bool,
    /// Do not offer to remember the choice.
    #[arg(long)]
    pub no_remember: bool,
}

/// `baton remember`.
#[derive(Debug, Args)]
pub struct RememberArgs {
    /// The lesson, preference or decision, in a sentence or two.
    pub text: String,
    /// Only for work touching files matching this glob (repeatable): `src/db/**`.
    #[arg(long = "scope", value_name = "GLOB")]
    pub scopes: Vec<String>,
    /// Only in this epic.
    #[arg(long, value_name = "N")]
    pub epic: Option<String>,
    /// 1 (a detail) to 10 (never forget); default: the kind's usual level.
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=10))]
    pub importance: Option<u8>,
    /// preference (default), decision, pattern, problem-solution or milestone.
    #[arg(long, default_value = "preference")]
    pub kind: String,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `baton forget`.
#[derive(Debug, Args)]
pub struct ForgetArgs {
    /// The memory's id (`12` or `m12`, as `baton memory list` shows it).
    pub id: String,
}

/// `baton memory`.
#[derive(Debug, clap::Subcommand)]
pub enum MemoryCommand {
    /// List memories, most recently learned first.
    #[command(
        after_help = "Examples:\n  baton memory list\n  baton memory list --kind decision --json"
    )]
    List(MemoryListArgs),
    /// Search memories by words.
    #[command(after_help = "Examples:\n  baton memory search pool connections")]
    Search(MemorySearchArgs),
    /// What a unit (a story, `sdd:PLAN#N`, `plan:prd`) was reminded of, step by step.
    #[command(after_help = "Examples:\n  baton memory recalls 1-2-login")]
    Recalls(MemoryRecallsArgs),
    /// Read a BMad `.memlog.md` (as BMad's memlog.py writes it): its decisions, insights and
    /// preferences become memories.
    #[command(
        after_help = "Examples:\n  baton memory import _bmad-output/brainstorming/.memlog.md"
    )]
    Import(MemoryImportArgs),
    /// Where the memory lives, how many memories it holds, and the external backend's health.
    Status(MemoryStatusArgs),
}

/// `baton memory list`.
#[derive(Debug, Args)]
pub struct MemoryListArgs {
    /// Only this kind.
    #[arg(long)]
    pub kind: Option<String>,
    /// At most this many.
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `baton memory search`.
#[derive(Debug, Args)]
pub struct MemorySearchArgs {
    /// Words to look for.
    #[arg(required = true, num_args = 1..)]
    pub words: Vec<String>,
    /// At most this many.
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `baton memory recalls`.
#[derive(Debug, Args)]
pub struct MemoryRecallsArgs {
    /// The unit's key.
    pub unit: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `baton memory import`.
#[derive(Debug, Args)]
pub struct MemoryImportArgs {
    /// The memlog file.
    pub memlog: std::path::PathBuf,
}

/// `baton memory status`.
#[derive(Debug, Args)]
pub struct MemoryStatusArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `baton demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Use this live `provider/model` instead of the recorded session.
    #[arg(long, value_name = "PROVIDER/MODEL")]
    pub model: Option<String>,
    /// Where to create the example project (must not exist or be empty; default: a new temp dir).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<std::path::PathBuf>,
    /// Show the planning pipeline instead: from an idea to the example's plan and sprint file.
    #[arg(long, conflicts_with = "json")]
    pub plan: bool,
    /// Stream events as JSON lines and end with the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `baton bmad`.
#[derive(Debug, clap::Subcommand)]
pub enum BmadCommand {
    /// Run an installed BMad skill (headless when it has a headless mode), or resume its
    /// unfinished session.
    #[command(
        after_help = "Examples:\n  baton bmad run bmad-prd --input-file brief.md\n  \
        baton bmad run bmad-create-epics-and-stories --tier 1\n  \
        baton bmad run bmad-prd --input \"a todo app for teams\" --profile careful\n\n\
        Tier: --tier, then --profile (fast 1, balanced 2, careful 4), then `[bmad] tier`, then \
        --hint, then a suggestion from the project and the input. A session keeps its tier.\n\
        Exit codes: 0 the skill finished, 1 it failed, 3 paused for a person (`baton answer`, \
        then run again), 4 the budget stopped it."
    )]
    Run(BmadRunArgs),
    /// The sessions of each skill: turns taken, menus answered, parties, how each ended.
    #[command(after_help = "Examples:\n  baton bmad status\n  baton bmad status bmad-prd --json")]
    Status(BmadStatusArgs),
    /// Restore a session's artifacts to a checkpoint; later outputs are archived, never deleted.
    #[command(after_help = "Examples:\n  baton bmad rollback --to 2\n  \
        baton bmad rollback --session bmad-prd-1 --to 1\n\n\
        Checkpoint N holds the artifacts as they stood before turn N+1 (0: before the first).")]
    Rollback(BmadRollbackArgs),
    /// Pending skill runs: add, list, run, remove (at most 100, by priority then first in).
    #[command(subcommand)]
    Queue(BmadQueueCommand),
    /// The BMad skills installed in this project, and which run headless.
    #[command(after_help = "Examples:\n  baton bmad skills")]
    Skills(BmadSkillsArgs),
    /// Watch the sprint file and report its status changes made outside a run: debounced
    /// (500 ms), the same change once per 30 s, a key that keeps cycling reported.
    #[command(after_help = "Examples:\n  baton bmad watch\n  baton bmad watch --json --for 60")]
    Watch(BmadWatchArgs),
}

/// `baton bmad watch`.
#[derive(Debug, Args)]
pub struct BmadWatchArgs {
    /// One JSON object per change.
    #[arg(long)]
    pub json: bool,
    /// Stop after this many seconds (default: until interrupted).
    #[arg(long = "for", value_name = "SECS")]
    pub for_secs: Option<u64>,
}

/// `baton bmad run`.
#[derive(Debug, Args)]
pub struct BmadRunArgs {
    /// The skill (`bmad-prd`).
    pub skill: String,
    /// The input given to the skill up front.
    #[arg(long, value_name = "TEXT", conflicts_with = "input_file")]
    pub input: Option<String>,
    /// Read the input from this file.
    #[arg(long, value_name = "FILE")]
    pub input_file: Option<PathBuf>,
    /// The tier, 0 (a fix) to 4 (an enterprise system).
    #[arg(long, value_name = "0-4", value_parser = clap::value_parser!(u8).range(0..=4))]
    pub tier: Option<u8>,
    /// A tier profile: fast (1), balanced (2), careful (4).
    #[arg(long, value_name = "PROFILE")]
    pub profile: Option<String>,
    /// Words that describe the work, to pick a tier from ("a quick fix", "an enterprise platform").
    #[arg(long, value_name = "TEXT")]
    pub hint: Option<String>,
    /// Talk to the skill even when it has a headless mode.
    #[arg(long)]
    pub conversational: bool,
    /// Start a new session even when the last one is unfinished.
    #[arg(long)]
    pub fresh: bool,
    /// Run it with this agent (default `[bmad] agent`, else `bmad-skill`).
    #[arg(long, value_name = "AGENT")]
    pub agent: Option<String>,
    /// Use this `provider/model` instead of the agent's.
    #[arg(long, value_name = "PROVIDER/MODEL")]
    pub model: Option<String>,
    /// Auto-confirm what the tools ask, as in `baton sprint --yolo`.
    #[arg(long)]
    pub yolo: bool,
    /// Progress: verbose (every event as a line), summary (a live status line in a terminal,
    /// the lines that matter above it; the default), silent (the report only), stream (JSON
    /// lines).
    #[arg(long, value_name = "MODE", default_value = "summary")]
    pub progress: String,
    /// Cost limits of this run.
    #[command(flatten)]
    pub budget: BudgetArgs,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `baton bmad status`.
#[derive(Debug, Args)]
pub struct BmadStatusArgs {
    /// Only this skill.
    pub skill: Option<String>,
    /// As JSON.
    #[arg(long)]
    pub json: bool,
}

/// `baton bmad rollback`.
#[derive(Debug, Args)]
pub struct BmadRollbackArgs {
    /// The checkpoint to restore (default: the one before the last turn).
    #[arg(long, value_name = "STEP")]
    pub to: Option<u32>,
    /// The session (default: the most recent).
    #[arg(long, value_name = "SESSION")]
    pub session: Option<String>,
}

/// `baton bmad skills`.
#[derive(Debug, Args)]
pub struct BmadSkillsArgs {
    /// As JSON.
    #[arg(long)]
    pub json: bool,
    /// As the markdown tables of docs/bmad.md: each tool target BMad's installer offers, and
    /// each installed skill with how it runs.
    #[arg(long, conflicts_with = "json")]
    pub markdown: bool,
}

/// `baton bmad queue`.
#[derive(Debug, clap::Subcommand)]
pub enum BmadQueueCommand {
    /// Queue a skill run.
    #[command(
        after_help = "Examples:\n  baton bmad queue add bmad-prd --input-file brief.md --priority high"
    )]
    Add(BmadQueueAddArgs),
    /// The queue, in the order it runs.
    List(BmadStatusArgs),
    /// Run queued tasks in order until one does not finish (or the queue is empty).
    Run(BmadQueueRunArgs),
    /// Take a task off the queue.
    Remove(BmadQueueRemoveArgs),
}

/// `baton bmad queue add`.
#[derive(Debug, Args)]
pub struct BmadQueueAddArgs {
    /// The skill.
    pub skill: String,
    /// Its input.
    #[arg(long, value_name = "TEXT", conflicts_with = "input_file")]
    pub input: Option<String>,
    /// Read its input from this file (now).
    #[arg(long, value_name = "FILE")]
    pub input_file: Option<PathBuf>,
    /// Its tier.
    #[arg(long, value_name = "0-4", value_parser = clap::value_parser!(u8).range(0..=4))]
    pub tier: Option<u8>,
    /// high, normal or low.
    #[arg(long, default_value = "normal")]
    pub priority: String,
}

/// `baton bmad queue run`.
#[derive(Debug, Args)]
pub struct BmadQueueRunArgs {
    /// Run at most this many tasks.
    #[arg(long, value_name = "N")]
    pub max: Option<usize>,
}

/// `baton bmad queue remove`.
#[derive(Debug, Args)]
pub struct BmadQueueRemoveArgs {
    /// The task's id.
    pub id: u64,
}

/// `baton pm`: one pass when no subcommand is given.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct PmArgs {
    /// What to do other than a pass.
    #[command(subcommand)]
    pub command: Option<PmCommand>,
    /// The pass's options.
    #[command(flatten)]
    pub pass: PmPassArgs,
}

/// `baton pm` (a pass).
#[derive(Debug, Args, Default)]
pub struct PmPassArgs {
    /// The repository, `OWNER/NAME` (default: GITHUB_REPOSITORY).
    #[arg(long, value_name = "OWNER/NAME")]
    pub repo: Option<String>,
    /// Look only at this issue (default: every open issue in the pipeline, or the ones the
    /// triggering event names).
    #[arg(long, value_name = "N")]
    pub issue: Option<u64>,
    /// Pass after pass until interrupted, for running the pipeline from a laptop.
    #[arg(long)]
    pub watch: bool,
    /// Seconds between passes with --watch.
    #[arg(long, default_value_t = 300, value_name = "SECS")]
    pub interval: u64,
    /// Say what the pass would do, and change nothing on GitHub.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the pass's report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `baton pm …`.
#[derive(Debug, clap::Subcommand)]
pub enum PmCommand {
    /// A specialist's turn on an issue: run the role's agent in this checkout, push the issue's
    /// branch, open or update its draft pull request, hand back to the PM with a comment, and
    /// remove the role's label.
    #[command(
        after_help = "Examples:\n  baton pm agent --issue 42 --role backend\n  \
        baton pm agent --issue 42 --role reviewer --remote origin\n\n\
        The agent sees the issue's text as quoted data, never the token; it has no tool that \
        merges, approves or publishes a pull request."
    )]
    Agent(PmAgentArgs),
    /// Write the GitHub Actions workflows that run the pipeline: the PM pass on events and a
    /// schedule, and the specialists' turns on their labels.
    #[command(
        after_help = "Examples:\n  baton pm init\n  baton pm init --force   # replace workflows written before"
    )]
    Init(PmInitArgs),
    /// Open one issue per unfinished story of the sprint file, its story file as the body and
    /// the `status/*` label of its phase; stories already imported are left alone.
    #[command(
        after_help = "Examples:\n  GITHUB_TOKEN=... baton pm import --repo acme/shop\n  \
        baton pm import --dry-run\n\n\
        The token comes from GITHUB_TOKEN (it needs `issues: write`); the repository from --repo \
        or GITHUB_REPOSITORY; the API from GITHUB_API_URL (default https://api.github.com)."
    )]
    Import(PmImportArgs),
}

/// `baton pm agent`.
#[derive(Debug, Args)]
pub struct PmAgentArgs {
    /// The issue.
    #[arg(long, value_name = "N")]
    pub issue: u64,
    /// The role (`backend`, or the label `agent/backend`).
    #[arg(long, value_name = "ROLE")]
    pub role: String,
    /// The repository, `OWNER/NAME` (default: GITHUB_REPOSITORY).
    #[arg(long, value_name = "OWNER/NAME")]
    pub repo: Option<String>,
    /// The git remote the issue's branch is pushed to.
    #[arg(long, default_value = "origin", value_name = "REMOTE")]
    pub remote: String,
    /// Print the turn's report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `baton pm init`.
#[derive(Debug, Args)]
pub struct PmInitArgs {
    /// Replace workflow files written before.
    #[arg(long)]
    pub force: bool,
    /// The cron schedule of the PM's sweep.
    #[arg(long, default_value = "*/15 * * * *", value_name = "CRON")]
    pub schedule: String,
}

/// `baton pm import`.
#[derive(Debug, Args)]
pub struct PmImportArgs {
    /// The repository, `OWNER/NAME` (default: GITHUB_REPOSITORY).
    #[arg(long, value_name = "OWNER/NAME")]
    pub repo: Option<String>,
    /// Say what would be opened, and open nothing.
    #[arg(long)]
    pub dry_run: bool,
}
