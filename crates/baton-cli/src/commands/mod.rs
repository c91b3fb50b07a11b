//! One module per command; each returns the exit code it ends with.

mod agents;
mod bmad;
mod budget_args;
mod check;
mod demo;
mod demo_plan;
mod doctor;
mod example_project;
mod guard;
mod in_flight;
mod init;
mod log;
mod memory;
mod plan;
pub(crate) mod plumbing;
mod pm;
mod pm_init;
mod policy;
mod sdd;
mod serve;
mod set;
mod sprint;
mod sprint_plan;
mod sprint_skeleton;
mod status;
mod tdd;
mod tdd_hook;
mod team;

use crate::cli::{Cli, Command};
use anyhow::Result;

/// Exit codes (DESIGN.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// Done.
    Ok = 0,
    /// An error, or an invalid sprint file under `--validate`.
    Error = 1,
    /// Paused on an escalation awaiting an answer.
    Paused = 3,
    /// Stopped by the budget.
    Budget = 4,
}

impl From<Code> for std::process::ExitCode {
    fn from(c: Code) -> Self {
        std::process::ExitCode::from(c as u8)
    }
}

/// Runs the parsed command. Around every command that may make state in the project, a `.baton/`
/// without its `.gitignore` (a clone of a project where baton ran: the file ignores itself, so
/// it was never committed) gets one, before and after, so git never lists baton's state.
pub fn run(cli: Cli) -> Result<Code> {
    let root = crate::project::root(cli.project.as_deref())?;
    // `init` writes its own, `demo` works elsewhere, `doctor` writes nothing (it reports a
    // `.baton/` git would commit), and `guard` answers an agent's hook inside a run.
    let keeps_state = !matches!(
        cli.command,
        Command::Init(_) | Command::Demo(_) | Command::Doctor(_) | Command::Guard(_)
    );
    let state = root.join(crate::config::STATE_DIR);
    if keeps_state {
        let _ = baton_store::state_dir::ignore_if_present(&state);
    }
    let code = dispatch(&root, cli.command);
    if keeps_state {
        let _ = baton_store::state_dir::ignore_if_present(&state);
    }
    code
}

fn dispatch(root: &std::path::Path, command: Command) -> Result<Code> {
    let root = root.to_path_buf();
    match command {
        Command::Init(args) => init::run(&root, &args),
        Command::Demo(args) => demo::run(&args),
        Command::Status(args) => status::run(&root, &args),
        Command::Set(args) => set::run(&root, &args),
        Command::Log(args) => log::run(&root, &args),
        Command::Doctor(args) => doctor::run(&root, &args),
        Command::Agents(args) => agents::run(&root, &args),
        Command::Trust(args) => agents::trust(&root, &args),
        Command::Team(args) => team::run(&root, &args),
        Command::Sprint(args) => sprint::run(&root, &args),
        Command::Sdd(args) => sdd::run(&root, &args),
        Command::Escalations(args) => sprint::escalations(&root, &args),
        Command::Answer(args) => sprint::answer(&root, &args),
        Command::Remember(args) => memory::remember(&root, &args),
        Command::Forget(args) => memory::forget(&root, &args),
        Command::Memory(cmd) => memory::run(&root, &cmd),
        Command::Bmad(cmd) => bmad::run(&root, &cmd),
        Command::Pm(cmd) => pm::run(&root, &cmd),
        Command::Serve(args) => serve::run(&root, &args),
        Command::Tdd(args) => tdd::run(&root, &args),
        Command::Guard(args) => guard::run(&root, &args),
        Command::Plan(args) | Command::Chat(args) => plan::run(&root, &args),
        Command::Check(args) => check::run(&root, &args),
        Command::SprintPlan(args) => sprint_plan::run(&root, &args),
    }
}
