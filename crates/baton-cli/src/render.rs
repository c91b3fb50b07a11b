//! The one renderer of a run's events, for every workflow: a plain line per event that matters
//! (or, in a terminal, a live status line per unit with the lines that matter above it), JSON
//! lines with `--json`; the human's answers at a terminal; and the one event loop that drives a
//! session to its report, sending answers back as operations.

use anyhow::{Context, Result};
use baton_core::escalation::{EscalationKind, choose};
use baton_engine::protocol::{EscalationView, Event, EventBody, MergePhase, Op, Scope, UnitKey};
use baton_engine::run::{Run, RunSpec};
use baton_engine::session::{self, Session};
use baton_engine::workflow::Workflow;
use std::io::{BufRead, Write};

/// Asks the human at the terminal; `None`: answer later.
pub fn ask(e: &EscalationView) -> Option<String> {
    eprintln!("\nescalation #{}: {}\n{}", e.id, e.title, e.finding);
    for (i, o) in e.options.iter().enumerate() {
        eprintln!("  {}. {o}", i + 1);
    }
    let kind = EscalationKind::parse(&e.kind);
    let stored: Vec<String> = e.choices.iter().map(|c| c.id.clone()).collect();
    loop {
        eprint!(
            "choose 1-{} (or press Enter to answer later): ",
            e.options.len()
        );
        let _ = std::io::stderr().flush();
        let mut line = String::new();
        if std::io::stdin().lock().read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim();
        if line.is_empty() {
            return None;
        }
        match choose(kind, &stored, line) {
            Ok(choice) => return Some(choice),
            Err(msg) => eprintln!("{msg}"),
        }
    }
}

pub fn print_event(event: &Event) {
    let who = label(&event.scope);
    // An agent of a story is named with it: with stories in parallel, two developers work at once.
    let by = |agent: &str| match &event.scope {
        Scope::Agent { unit: Some(_), .. } => format!("{who} · {agent}"),
        _ => agent.to_owned(),
    };
    match &event.body {
        EventBody::RunStarted {
            run_id,
            stories,
            yolo,
        } => {
            let mode = if *yolo { "YOLO" } else { "standard" };
            eprintln!("run {run_id} ({mode} mode): {}", stories.join(", "));
        }
        EventBody::Notice { message } => eprintln!("note: {message}"),
        EventBody::Stage {
            key,
            stage,
            round,
            agent,
        } => {
            let r = if *round > 1 {
                format!(" round {round}")
            } else {
                String::new()
            };
            eprintln!("[{key}] {stage}{r} by {agent}");
        }
        EventBody::Transition { key, from, to } => eprintln!("[{key}] {from} → {to}"),
        EventBody::Tests {
            key,
            passed,
            interrupted,
        } => {
            let what = match (passed, interrupted) {
                (true, _) => "pass",
                (false, true) => "interrupted",
                (false, false) => "FAIL",
            };
            eprintln!("[{key}] tests {what}");
        }
        EventBody::Commit { key, message } if key == "-" => {
            eprintln!("committed baton's own changes: {message}")
        }
        EventBody::Commit { message, .. } => eprintln!("[{who}] committed: {message}"),
        EventBody::CommitFailed { message, error, .. } => {
            eprintln!("[{who}] warning: could not commit `{message}`: {error}");
        }
        EventBody::Escalation { escalation } => {
            eprintln!(
                "[{}] escalation #{}: {}",
                escalation.key.as_deref().unwrap_or("-"),
                escalation.id,
                escalation.title
            );
        }
        EventBody::StoryFinished {
            key,
            status,
            reason,
        } => {
            eprintln!(
                "[{key}] {status}{}",
                reason
                    .as_deref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            );
        }
        EventBody::AgentStarted { agent, model } => {
            eprintln!("[{}] started on {model}", by(agent))
        }
        EventBody::Turn { agent, turn } => eprintln!("[{}] turn {turn}", by(agent)),
        EventBody::ToolCall { agent, tool } => eprintln!("[{}] {tool}", by(agent)),
        EventBody::Refused {
            agent,
            tool,
            reason,
        } => eprintln!("[{}] {tool} refused: {reason}", by(agent)),
        EventBody::BudgetWarning { agent, message } => {
            eprintln!("[{}] budget warning: {message}", by(agent))
        }
        EventBody::AgentFinished { agent, status } => eprintln!("[{}] {status}", by(agent)),
        EventBody::UsageEstimated { agent, provider } => {
            eprintln!("[{}] warning: {}", by(agent), estimated_warning(provider))
        }
        // Without a live line, a long answer shows a line every thousand tokens or so.
        EventBody::Streaming {
            agent,
            turn,
            output_tokens,
            elapsed_secs,
        } if output_tokens % 1000 < baton_agent::runner::PROGRESS_EVERY_TOKENS => eprintln!(
            "[{}] turn {turn}: answering, {output_tokens} tokens in {}:{:02}",
            by(agent),
            elapsed_secs / 60,
            elapsed_secs % 60
        ),
        EventBody::Usage { .. } | EventBody::Streaming { .. } => {}
        EventBody::TasksStarted {
            run_id,
            plan,
            tasks,
        } => eprintln!("run {run_id}: {plan}, {tasks} task(s)"),
        EventBody::TaskStatus { line, .. } => eprintln!("{line}"),
        EventBody::TaskStage {
            task,
            stage,
            round,
            agent,
        } => eprintln!("[task {task}] {stage} round {round} by {agent}"),
        EventBody::TaskStageEnded {
            task,
            stage,
            outcome,
        } => eprintln!("[task {task}] {stage}: {outcome}"),
        EventBody::PlanStep { step, agent } => match agent {
            Some(agent) => eprintln!("[{step}] by {agent}"),
            None => eprintln!("[{step}]"),
        },
        EventBody::PlanStepEnded { step, ok, detail } => {
            if *ok {
                eprintln!("[{step}] wrote {detail}");
            } else {
                eprintln!("[{step}] failed: {detail}");
            }
        }
        EventBody::OpRejected { reason, .. } => eprintln!("warning: {reason}"),
        EventBody::Review {
            key,
            round,
            passed,
            findings,
        } => {
            let blocking = findings.iter().filter(|f| f.severity.is_blocking()).count();
            eprintln!(
                "[{key}] review round {round}: {} ({} findings, {blocking} blocking)",
                if *passed {
                    "passed"
                } else {
                    "changes requested"
                },
                findings.len()
            );
        }
        EventBody::Merge { key, phase, detail } => {
            let line = match phase {
                MergePhase::Worktree => format!("works in its own worktree, on `{detail}`"),
                MergePhase::Queued => format!("joins the merge lane ({detail})"),
                MergePhase::Rebasing => format!("rebasing onto `{detail}`"),
                MergePhase::Conflict => format!("merge conflict in {detail}"),
                MergePhase::Testing => format!("tests on the updated branch: {detail}"),
                MergePhase::Merged => format!("merged into `{detail}`"),
                MergePhase::Kept => format!("kept: {detail}"),
            };
            eprintln!("[{key}] {line}");
        }
        // A workflow's own progress (a team task, a BMad turn, menu, party or end, a PM effect,
        // seat or turn) and an answer are for `--json`, the journal and the board: the lines
        // above (the agents', the escalation's, the report) already tell a terminal.
        EventBody::EscalationAnswered { .. }
        | EventBody::TeamTaskStarted { .. }
        | EventBody::TeamTaskFinished { .. }
        | EventBody::BmadTurn { .. }
        | EventBody::BmadMenuAnswered { .. }
        | EventBody::BmadParty { .. }
        | EventBody::BmadSessionEnded { .. }
        | EventBody::PmEffectApplied { .. }
        | EventBody::PmSeatTaken { .. }
        | EventBody::PmSeatReleased { .. }
        | EventBody::PmTurn { .. } => {}
    }
}

/// How a line names whom an event concerns: a story by its key, a plan task as `task N`, a
/// planning step by its name, an agent by its name.
fn label(scope: &Scope) -> String {
    match scope {
        Scope::Run => "-".to_owned(),
        Scope::Unit(unit)
        | Scope::Agent {
            unit: Some(unit), ..
        } => match unit {
            UnitKey::Story(k) | UnitKey::Retrospective(k) | UnitKey::PlanStep(k) => k.clone(),
            UnitKey::PlanTask { id, .. } => format!("task {id}"),
            UnitKey::TeamTask(n) => format!("task {n}"),
            UnitKey::Bmad(s) => format!("skill {s}"),
            UnitKey::Issue(n) => format!("issue #{n}"),
        },
        Scope::Agent { unit: None, agent } => agent.clone(),
    }
}

/// The one-time warning for a provider that streams no usage.
pub fn estimated_warning(provider: &str) -> String {
    format!(
        "provider `{provider}` streams no token usage: its token counts, costs and token \
         budgets are estimated from the text (about 4 characters a token)"
    )
}

/// A live status line per story in a terminal (several at once when stories run in parallel):
/// stage, round, tokens, cost, elapsed. Events that matter later (transitions, tests, commits,
/// merges, escalations) are printed above the lines.
#[derive(Default)]
pub struct Live {
    /// One line per story in flight, by key.
    lines: std::collections::BTreeMap<String, LiveLine>,
    /// How many lines were drawn last time (to be cleared before the next drawing).
    drawn: usize,
}

/// One story's live line.
#[derive(Default)]
struct LiveLine {
    stage: String,
    round: u32,
    tokens: u64,
    cost: f64,
    started: Option<std::time::Instant>,
    /// The answer streaming in: (turn, output tokens so far, seconds since the call started).
    streaming: Option<(u32, u64, u64)>,
}

impl LiveLine {
    fn text(&self, key: &str) -> String {
        let secs = self.started.map_or(0, |s| s.elapsed().as_secs());
        let answering = self
            .streaming
            .map(|(turn, tokens, call_secs)| {
                format!(
                    " · turn {turn}: answering, {tokens} tokens in {}:{:02}",
                    call_secs / 60,
                    call_secs % 60
                )
            })
            .unwrap_or_default();
        format!(
            "[{key}] {} · round {} · {} tokens · ${:.4} · {}:{:02}{answering}",
            self.stage,
            self.round.max(1),
            self.tokens,
            self.cost,
            secs / 60,
            secs % 60
        )
    }
}

impl Live {
    pub fn show(&mut self, event: &Event) {
        let e = &event.body;
        let who = label(&event.scope);
        let permanent = match e {
            EventBody::Stage {
                key,
                stage,
                round,
                agent,
            } => {
                let line = self.lines.entry(key.clone()).or_default();
                line.started.get_or_insert_with(std::time::Instant::now);
                line.stage = format!("{stage} ({agent})");
                line.round = *round;
                false
            }
            EventBody::Usage {
                input_tokens,
                output_tokens,
                cost_usd,
                ..
            } => {
                if let Some(line) = self.lines.get_mut(&who) {
                    line.tokens += input_tokens + output_tokens;
                    line.cost += cost_usd;
                    line.streaming = None;
                }
                false
            }
            EventBody::Streaming {
                turn,
                output_tokens,
                elapsed_secs,
                ..
            } => {
                if let Some(line) = self.lines.get_mut(&who) {
                    line.streaming = Some((*turn, *output_tokens, *elapsed_secs));
                }
                false
            }
            EventBody::ToolCall { tool, .. } => {
                if let Some(line) = self.lines.get_mut(&who) {
                    line.stage = format!(
                        "{} · {tool}",
                        line.stage.split(" · ").next().unwrap_or_default()
                    );
                }
                false
            }
            EventBody::Turn { .. } => {
                if let Some(line) = self.lines.get_mut(&who) {
                    line.streaming = None;
                }
                false
            }
            EventBody::AgentStarted { .. }
            | EventBody::Refused { .. }
            | EventBody::BudgetWarning { .. }
            | EventBody::AgentFinished { .. } => false,
            EventBody::StoryFinished { key, .. } => {
                self.lines.remove(key);
                true
            }
            _ => true,
        };
        let mut err = std::io::stderr().lock();
        // Clear the lines drawn last time, bottom up.
        let _ = write!(err, "\r\x1b[2K");
        for _ in 1..self.drawn {
            let _ = write!(err, "\x1b[1A\x1b[2K");
        }
        if permanent {
            let _ = err.flush();
            drop(err);
            print_event(event);
            err = std::io::stderr().lock();
        }
        let text: Vec<String> = self.lines.iter().map(|(k, l)| l.text(k)).collect();
        let _ = write!(err, "{}", text.join("\n"));
        self.drawn = text.len();
        let _ = err.flush();
    }
}

/// How events are shown.
pub enum Style {
    /// One JSON line per event on stdout.
    Json,
    /// A live status line in a terminal, the lines that matter above it.
    Live(Box<Live>),
    /// Plain lines on stderr.
    Plain,
    /// Nothing until the report.
    Quiet,
}

impl Style {
    /// JSON lines when asked, a live line when stderr is a terminal, plain lines otherwise.
    pub fn pick(json: bool, live: bool) -> Style {
        if json {
            Style::Json
        } else if live {
            Style::Live(Box::default())
        } else {
            Style::Plain
        }
    }

    /// Shows one event, every configured key's value masked.
    pub fn show(&mut self, e: &Event) {
        let masked = masked(e);
        let e = masked.as_ref().unwrap_or(e);
        match self {
            Style::Json => {
                if let Ok(line) = serde_json::to_string(e) {
                    println!("{line}");
                }
            }
            Style::Live(live) => live.show(e),
            Style::Plain => print_event(e),
            Style::Quiet => {}
        }
    }
}

/// Runs `workflow` as the run `spec` describes, on a fresh runtime, rendering its events in
/// `style` and (when the run is interactive) asking the human at the terminal; the report.
/// Ctrl-C and SIGTERM are listened for once, for the whole run ([`crate::interrupt`]).
pub fn run<W: Workflow>(spec: RunSpec, workflow: W, style: Style) -> Result<W::Report> {
    let interactive = spec.interactive;
    let rt = crate::commands::plumbing::runtime()?;
    crate::interrupt::cancel_on_signal(&rt, spec.setup.cancel.clone())?;
    rt.block_on(async {
        let (run, io) = Run::new(spec);
        let session = session::start(workflow, run, io).await?;
        drive(session, interactive, style).await
    })
}

/// Renders the session's events and asks the human at the terminal (when `interactive`) until
/// the run ends. Interrupts are not this loop's: a listener made afresh on each pass would miss
/// a signal between two passes ([`crate::interrupt`] listens once for the whole run).
pub async fn drive<R>(mut s: Session<R>, interactive: bool, mut style: Style) -> Result<R> {
    let mut done = s.done;
    let report = loop {
        tokio::select! {
            report = &mut done => break report.context("the run stopped unexpectedly")?,
            Some(e) = s.events.recv() => {
                style.show(&e);
                if let EventBody::Escalation { escalation } = &e.body
                    && escalation.awaiting
                    && interactive
                {
                    // The question is asked on a thread of its own, so events go on being
                    // shown (other stories in flight, an answer given on the board) and a run
                    // that ends while it waits is not held by it.
                    let view = escalation.clone();
                    let id = view.id;
                    let ops = s.ops.clone();
                    std::thread::spawn(move || {
                        let op = match ask(&view) {
                            Some(choice) => Op::Answer { id, choice },
                            None => Op::Defer { id },
                        };
                        let _ = ops.send(op);
                    });
                }
            }
        }
    };
    while let Ok(e) = s.events.try_recv() {
        style.show(&e);
    }
    Ok(report)
}

/// `e` with every configured key's value masked (`None` when it holds none).
fn masked(e: &Event) -> Option<Event> {
    let line = serde_json::to_string(e).ok()?;
    match baton_core::secrets::redact(&line) {
        std::borrow::Cow::Borrowed(_) => None,
        std::borrow::Cow::Owned(text) => serde_json::from_str(&text).ok(),
    }
}
