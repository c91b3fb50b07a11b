//! The one renderer of a run's events, for every workflow: a plain line per event that matters
//! (or, in a terminal, a live status line per unit with the lines that matter above it), JSON
//! lines with `--json`; the human's answers at a terminal; and the one event loop that drives a
//! session to its report, sending answers back as operations.

use anyhow::{Context, Result};
use baton_core::escalation::{EscalationKind, choose};
use baton_engine::protocol::{EscalationView, Event, EventBody, Op, Scope, UnitKey};
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
        EventBody::AgentStarted { agent, model } => eprintln!("[{agent}] started on {model}"),
        EventBody::Turn { agent, turn } => eprintln!("[{agent}] turn {turn}"),
        EventBody::ToolCall { agent, tool } => eprintln!("[{agent}] {tool}"),
        e @ (EventBody::Refused { .. }
        | EventBody::BudgetWarning { .. }
        | EventBody::AgentFinished { .. }) => print_agent_notice(e),
        EventBody::UsageEstimated { agent, provider } => {
            eprintln!("[{agent}] warning: {}", estimated_warning(provider))
        }
        // Without a live line, a long answer shows a line every thousand tokens or so.
        EventBody::Streaming {
            agent,
            turn,
            output_tokens,
            elapsed_secs,
        } if output_tokens % 1000 < baton_agent::runner::PROGRESS_EVERY_TOKENS => eprintln!(
            "[{agent}] turn {turn}: answering, {output_tokens} tokens in {}:{:02}",
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
        },
        Scope::Agent { unit: None, agent } => agent.clone(),
    }
}

/// Prints an agent's refused tool call, budget warning or end to stderr (other events are not
/// notices and print nothing).
pub fn print_agent_notice(e: &EventBody) {
    match e {
        EventBody::Refused {
            agent,
            tool,
            reason,
        } => eprintln!("[{agent}] {tool} refused: {reason}"),
        EventBody::BudgetWarning { agent, message } => {
            eprintln!("[{agent}] budget warning: {message}")
        }
        EventBody::AgentFinished { agent, status } => eprintln!("[{agent}] {status}"),
        _ => {}
    }
}

/// The one-time warning for a provider that streams no usage.
pub fn estimated_warning(provider: &str) -> String {
    format!(
        "provider `{provider}` streams no token usage: its token counts, costs and token \
         budgets are estimated from the text (about 4 characters a token)"
    )
}

/// A live status line per story in a terminal: stage, round, tokens, cost, elapsed. Events
/// that matter later (transitions, tests, commits, escalations) are printed above it.
#[derive(Default)]
pub struct Live {
    key: String,
    stage: String,
    round: u32,
    tokens: u64,
    cost: f64,
    started: Option<std::time::Instant>,
    /// The answer streaming in: (turn, output tokens so far, seconds since the call started).
    streaming: Option<(u32, u64, u64)>,
}

impl Live {
    pub fn show(&mut self, event: &Event) {
        let e = &event.body;
        let permanent = match e {
            EventBody::Stage {
                key,
                stage,
                round,
                agent,
            } => {
                if *key != self.key {
                    *self = Live {
                        key: key.clone(),
                        started: Some(std::time::Instant::now()),
                        ..Live::default()
                    };
                }
                self.stage = format!("{stage} ({agent})");
                self.round = *round;
                false
            }
            EventBody::Usage {
                input_tokens,
                output_tokens,
                cost_usd,
                ..
            } => {
                self.tokens += input_tokens + output_tokens;
                self.cost += cost_usd;
                self.streaming = None;
                false
            }
            EventBody::Streaming {
                turn,
                output_tokens,
                elapsed_secs,
                ..
            } => {
                self.streaming = Some((*turn, *output_tokens, *elapsed_secs));
                false
            }
            EventBody::ToolCall { tool, .. } => {
                self.stage = format!(
                    "{} · {tool}",
                    self.stage.split(" · ").next().unwrap_or_default()
                );
                false
            }
            EventBody::Turn { .. } => {
                self.streaming = None;
                false
            }
            EventBody::AgentStarted { .. }
            | EventBody::Refused { .. }
            | EventBody::BudgetWarning { .. }
            | EventBody::AgentFinished { .. } => false,
            _ => true,
        };
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K");
        if permanent {
            let _ = err.flush();
            drop(err);
            print_event(event);
            err = std::io::stderr().lock();
        }
        if !self.key.is_empty() && !matches!(e, EventBody::StoryFinished { .. }) {
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
            let _ = write!(
                err,
                "[{}] {} · round {} · {} tokens · ${:.4} · {}:{:02}{answering}",
                self.key,
                self.stage,
                self.round.max(1),
                self.tokens,
                self.cost,
                secs / 60,
                secs % 60
            );
        }
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
                    let view = escalation.clone();
                    let id = view.id;
                    let op = match tokio::task::spawn_blocking(move || ask(&view)).await {
                        Ok(Some(choice)) => Op::Answer { id, choice },
                        _ => Op::Defer { id },
                    };
                    let _ = s.ops.send(op);
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
