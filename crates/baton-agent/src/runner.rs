//! The native tool-calling loop.
//!
//! System prompt (agent body + execution-mode line) and task → model turn → tool calls → guard
//! chain → execution → results → next turn, until a final answer, the turn limit, the agent's
//! timeout, the budget, an escalation, or cancellation. The budget is checked before each model
//! call and on every streamed delta (with the stream's estimated cost), so a hard limit aborts a
//! stream mid-way. Before each model call the guard chain's context sources see the tail of the
//! agent's recent output and may add a late user-context message. Old tool results are compacted
//! into stubs past a threshold ([`crate::compaction`]) in what is sent, never in the transcript.
//! Every call's usage is reported for the cost ledger; every step is written to the transcript;
//! the outcome's changed files come from git.

use crate::compaction::{Compaction, Compactor};
use crate::definition::AgentDef;
use crate::guard::{GuardChain, Inspected, Verdict};
use crate::outcome::{Outcome, Status, Stop, halt_reason};
use crate::tools::{Escalation, ToolContext, Toolbox};
use crate::transcript::Transcript;
use crate::workspace::Workspace;
use baton_core::budget::{Admission, BudgetLimits, BudgetState, Spend};
use baton_llm::pricing::{Price, cost_usd};
use baton_llm::{
    ChatRequest, LlmError, Message, ModelClient, ModelSpec, StopReason, StreamEvent, Usage,
};
use serde::Serialize;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// Standard mode stops at checkpoints; YOLO auto-confirms them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Wait for confirmation at checkpoints.
    Standard,
    /// Auto-confirm checkpoints and proceed with the recommended path.
    Yolo,
}

impl Mode {
    /// The line appended to every system prompt.
    pub fn system_line(self) -> &'static str {
        match self {
            Mode::Standard => {
                "Execution mode: standard mode: wait for confirmation at checkpoints."
            }
            Mode::Yolo => {
                "Execution mode: YOLO mode: auto-confirm checkpoints and proceed with the recommended path."
            }
        }
    }
}

/// A budget shared by every agent of a run.
#[derive(Debug, Default)]
pub struct Budget {
    limits: BudgetLimits,
    spent: Mutex<Spend>,
    /// Providers already reported as streaming no usage (the warning is given once each).
    estimated: Mutex<std::collections::BTreeSet<String>>,
    /// Runs and spending of each agent, for projecting its next run.
    per_agent: Mutex<std::collections::BTreeMap<String, (u32, f64)>>,
}

impl Budget {
    /// A budget with these limits and nothing spent.
    pub fn new(limits: BudgetLimits) -> Budget {
        Budget {
            limits,
            spent: Mutex::new(Spend::default()),
            estimated: Mutex::new(Default::default()),
            per_agent: Mutex::new(Default::default()),
        }
    }

    /// The limits.
    pub fn limits(&self) -> BudgetLimits {
        self.limits
    }

    /// Records what a finished run of `agent` cost.
    pub fn record_run(&self, agent: &str, usd: f64) {
        if let Ok(mut m) = self.per_agent.lock() {
            let e = m.entry(agent.to_owned()).or_insert((0, 0.0));
            e.0 += 1;
            e.1 += usd;
        }
    }

    /// What the next run of `agent` is expected to cost: its average so far.
    pub fn projected(&self, agent: &str) -> Option<f64> {
        let m = self.per_agent.lock().ok()?;
        let (runs, usd) = m.get(agent)?;
        (*runs > 0).then(|| usd / f64::from(*runs))
    }

    /// Whether `agent` may be dispatched now ([`BudgetLimits::admit`]).
    pub fn admit(&self, agent: &str) -> Admission {
        self.limits
            .admit(agent, self.spent().usd, self.projected(agent))
    }

    /// Records that `provider` streamed no usage; `true` the first time for that provider.
    pub fn first_estimate(&self, provider: &str) -> bool {
        self.estimated
            .lock()
            .map(|mut seen| seen.insert(provider.to_owned()))
            .unwrap_or(false)
    }

    /// What has been spent.
    pub fn spent(&self) -> Spend {
        self.spent.lock().map(|s| *s).unwrap_or_default()
    }

    /// Records a spend.
    pub fn add(&self, s: Spend) {
        if let Ok(mut spent) = self.spent.lock() {
            *spent = spent.plus(s);
        }
    }

    /// Where the run would stand with `extra` spent on top.
    pub fn check(&self, extra: Spend) -> BudgetState {
        self.limits.assess(self.spent().plus(extra))
    }
}

/// Something that happened, for progress displays.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum AgentEvent {
    /// The agent started.
    Started {
        /// Agent.
        agent: String,
        /// Model.
        model: String,
    },
    /// A model turn started.
    Turn {
        /// Agent.
        agent: String,
        /// Turn number from 1.
        turn: u32,
    },
    /// A tool call is about to run.
    ToolCall {
        /// Agent.
        agent: String,
        /// Tool.
        tool: String,
    },
    /// A tool call was refused by a guard.
    Refused {
        /// Agent.
        agent: String,
        /// Tool.
        tool: String,
        /// Why.
        reason: String,
    },
    /// Usage of one model call.
    Usage {
        /// Agent.
        agent: String,
        /// Tokens.
        usage: Usage,
        /// Cost in US dollars.
        cost_usd: f64,
        /// Estimated from the text (the provider reported none).
        #[serde(default)]
        estimated: bool,
    },
    /// A model answer is streaming in (sent every [`PROGRESS_EVERY_TOKENS`] tokens or so).
    Streaming {
        /// Agent.
        agent: String,
        /// Turn from 1.
        turn: u32,
        /// Output tokens so far (the provider's count if it sent one, else estimated).
        output_tokens: u64,
        /// Seconds since the call started.
        elapsed_secs: u64,
    },
    /// A provider streamed no usage: its token counts and budgets are estimates from now on.
    /// Sent once per provider and run.
    UsageEstimated {
        /// Agent.
        agent: String,
        /// The provider.
        provider: String,
    },
    /// The budget's warning line was crossed.
    BudgetWarning {
        /// Agent.
        agent: String,
        /// Message.
        message: String,
    },
    /// The agent ended.
    Finished {
        /// Agent.
        agent: String,
        /// Outcome status.
        status: Status,
    },
}

/// One model call's cost, for the cost ledger.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallRecord {
    /// Agent.
    pub agent: String,
    /// `provider/model`.
    pub model: String,
    /// Tokens.
    pub usage: Usage,
    /// US dollars.
    pub cost_usd: f64,
    /// Estimated from the text (the provider reported no usage).
    #[serde(default)]
    pub estimated: bool,
}

/// A streaming-progress event is sent each time this many more output tokens arrived.
pub const PROGRESS_EVERY_TOKENS: u64 = 50;

/// Characters per token when a count has to be estimated from text.
pub const CHARS_PER_TOKEN: usize = 4;

/// Callback for events.
pub type EventFn = Arc<dyn Fn(&AgentEvent) + Send + Sync>;
/// Callback for call records.
pub type CallFn = Arc<dyn Fn(&CallRecord) + Send + Sync>;

/// Everything one agent run needs.
pub struct Runner {
    /// The model client.
    pub client: Arc<dyn ModelClient>,
    /// The model.
    pub model: ModelSpec,
    /// Its price (`None`: free, e.g. local models).
    pub price: Option<Price>,
    /// Standard or YOLO.
    pub mode: Mode,
    /// The run's shared budget.
    pub budget: Arc<Budget>,
    /// The agent's tools (already restricted to its definition).
    pub tools: Toolbox,
    /// The guard chain.
    pub guards: GuardChain,
    /// Tool context (root, sandbox, commands, cancellation).
    pub ctx: ToolContext,
    /// The tree the agent works in (its changed files are computed there).
    pub workspace: Arc<Workspace>,
    /// Directory for transcripts (`None`: no transcript).
    pub transcript_dir: Option<PathBuf>,
    /// Turn limit when the definition sets none.
    pub default_max_turns: u32,
    /// Timeout when the definition sets none.
    pub default_timeout: Duration,
    /// Output cap of one model turn, in tokens (`None`: the provider's default).
    pub max_tokens: Option<u32>,
    /// When old tool results are replaced by stubs in what the model is sent.
    pub compaction: Compaction,
    /// Progress events.
    pub on_event: Option<EventFn>,
    /// Cost ledger entries.
    pub on_call: Option<CallFn>,
}

enum TurnEnd {
    Final(String),
    Escalated(Escalation, String),
}

fn spend_of(usage: &Usage, price: Option<&Price>) -> Spend {
    Spend {
        usd: price.map_or(0.0, |p| cost_usd(usage, p)),
        input_tokens: usage.total_input(),
        output_tokens: usage.output_tokens,
    }
}

impl Runner {
    fn emit(&self, e: AgentEvent) {
        if let Some(f) = &self.on_event {
            f(&e);
        }
    }

    /// Runs `def` on `task` to its outcome. Never panics and never returns an error: every way
    /// a run can end is an [`Outcome`].
    pub async fn run(&self, def: &AgentDef, task: &str) -> Outcome {
        let mut transcript = match &self.transcript_dir {
            Some(dir) => Transcript::create(dir, &def.name).unwrap_or_else(|_| Transcript::none()),
            None => Transcript::none(),
        };
        let before = self.workspace.snapshot().await;
        let mut state = RunState {
            compactor: Compactor::new(self.compaction),
            ..RunState::default()
        };
        self.emit(AgentEvent::Started {
            agent: def.name.clone(),
            model: self.model.to_string(),
        });
        let system = format!("{}\n\n{}", def.prompt, self.mode.system_line());
        transcript.write("system", serde_json::json!({ "agent": def.name, "model": self.model.to_string(), "prompt": system }));
        transcript.write("task", serde_json::json!({ "text": task }));
        let max_turns = def.max_turns.unwrap_or(self.default_max_turns).max(1);
        let timeout = def
            .timeout
            .map_or(self.default_timeout, Duration::from_secs);
        // A timeout too large for the clock means "no deadline" in practice: a year is as good.
        let now = Instant::now();
        let deadline = now
            .checked_add(timeout)
            .or_else(|| now.checked_add(Duration::from_secs(365 * 24 * 3600)))
            .unwrap_or(now);
        let (status, reason) = match tokio::time::timeout_at(
            deadline,
            self.turns(def, &system, task, max_turns, &mut state, &mut transcript),
        )
        .await
        {
            Ok(Ok(TurnEnd::Final(text))) => match halt_reason(&text) {
                Some(r) => {
                    state.summary = text;
                    (Status::Halted, Some(r))
                }
                None => {
                    state.summary = text;
                    (Status::Completed, None)
                }
            },
            Ok(Ok(TurnEnd::Escalated(e, text))) => {
                state.summary = text;
                let reason = format!("escalated: {}", e.title);
                state.escalation = Some(e);
                (Status::Escalated, Some(reason))
            }
            Ok(Err((status, reason))) => (status, Some(reason)),
            Err(_) => (
                Status::TimedOut,
                Some(format!("no final answer within {} s", timeout.as_secs())),
            ),
        };
        let (status, reason) =
            self.settle_in_flight(def, status, reason, &mut state, &mut transcript);
        // An agent whose every write named its file asks git about those files only.
        let files_changed = match &state.writes {
            Writes::Confined(paths) => self.workspace.changed_since_writes(&before, paths).await,
            Writes::Anything => self.workspace.changed_since(&before).await,
        };
        let outcome = Outcome {
            agent: def.name.clone(),
            model: self.model.to_string(),
            status,
            reason,
            summary: state.summary,
            files_changed,
            usage: state.usage,
            cost_usd: state.cost,
            turns: state.turns,
            transcript: transcript.path().map(Path::to_path_buf),
            escalation: state.escalation,
            usage_estimated: state.usage_estimated,
            stop: match status {
                Status::Cancelled if state.budget_stop => Some(Stop::Budget),
                Status::Cancelled => Some(Stop::Cancelled),
                _ => None,
            },
            compaction: state.compactor.stats(),
        };
        transcript.write("outcome", &outcome);
        if outcome.turns > 0 {
            self.budget.record_run(&def.name, outcome.cost_usd);
        }
        self.emit(AgentEvent::Finished {
            agent: def.name.clone(),
            status,
        });
        outcome
    }

    /// Accounts and keeps what a call cut off by a timeout or cancellation had streamed, and
    /// turns a completion without a single tool call into a failure when the agent's work needs
    /// its writing tools (the model answered in prose: usually a server that drops `tools`).
    fn settle_in_flight(
        &self,
        def: &AgentDef,
        status: Status,
        reason: Option<String>,
        state: &mut RunState,
        transcript: &mut Transcript,
    ) -> (Status, Option<String>) {
        if let Some(flight) = state.in_flight.take()
            && (flight.chars > 0 || flight.known.is_some())
        {
            let usage = flight.estimate();
            self.account(def, &usage, flight.known.is_none(), state, transcript);
            transcript.write("partial", serde_json::json!({ "text": flight.text }));
            if !flight.text.trim().is_empty() {
                state.summary = flight.text;
            }
        }
        let writing = self.tools.writing_names();
        if status == Status::Completed
            && state.tool_calls == 0
            && !writing.is_empty()
            && !def.converses
        {
            let why = format!(
                "made no tool call although its work needs tools ({}): the model answered in \
                 prose only; the provider may not support tool calling (run `baton doctor`)",
                writing.join(", ")
            );
            return (Status::Failed, Some(why));
        }
        (status, reason)
    }

    async fn turns(
        &self,
        def: &AgentDef,
        system: &str,
        task: &str,
        max_turns: u32,
        st: &mut RunState,
        transcript: &mut Transcript,
    ) -> Result<TurnEnd, (Status, String)> {
        let mut messages = vec![Message::User {
            text: task.to_owned(),
        }];
        let specs = self.tools.specs();
        let mut warned = false;
        match self.budget.admit(&def.name) {
            Admission::Go => {}
            Admission::Warn(why) => self.emit(AgentEvent::BudgetWarning {
                agent: def.name.clone(),
                message: why,
            }),
            Admission::Refuse(why) => {
                st.budget_stop = true;
                return Err((Status::Cancelled, format!("budget: {why}")));
            }
        }
        // The tail of the agent's own words, for the context sources.
        let mut recent = String::new();
        loop {
            if st.turns >= max_turns {
                return Err((
                    Status::Failed,
                    format!("reached max_turns ({max_turns}) without a final answer"),
                ));
            }
            if self.ctx.cancel.is_cancelled() {
                return Err((Status::Cancelled, "cancelled".into()));
            }
            match self.budget.check(Spend::default()) {
                BudgetState::Exhausted(why) => {
                    st.budget_stop = true;
                    return Err((Status::Cancelled, format!("budget: {why}")));
                }
                BudgetState::Warn(why) if !warned => {
                    warned = true;
                    self.emit(AgentEvent::BudgetWarning {
                        agent: def.name.clone(),
                        message: why,
                    });
                }
                _ => {}
            }
            st.turns += 1;
            self.emit(AgentEvent::Turn {
                agent: def.name.clone(),
                turn: st.turns,
            });
            let late = self.guards.late_context(&recent, st.turns);
            if !late.is_empty() {
                let text = late.join("\n\n");
                transcript.write("context", serde_json::json!({ "text": text }));
                messages.push(Message::User { text });
            }
            // What is sent, not what is recorded: the transcript already holds every result.
            if let Some(batch) = st.compactor.prepare(&mut messages) {
                transcript.write(
                    "compaction",
                    serde_json::json!({ "before_turn": st.turns, "results": batch.results, "bytes": batch.bytes, "stub_bytes": batch.stub_bytes }),
                );
            }
            let request = ChatRequest {
                model: self.model.model.clone(),
                system: system.to_owned(),
                messages: messages.clone(),
                tools: specs.clone(),
                max_tokens: self.max_tokens,
                temperature: None,
                agent: def.name.clone(),
                // The runner knows no story key: the task names the unit of work, and is the
                // same on every turn of this run.
                unit: Some(task.to_owned()),
            };
            let price = self.price.as_ref();
            let budget = &self.budget;
            st.in_flight = Some(InFlight {
                input_estimate: estimate_input(&request),
                ..InFlight::default()
            });
            let call_started = Instant::now();
            let turn = st.turns;
            let flight = &mut st.in_flight;
            let mut sink = |ev: &StreamEvent| -> ControlFlow<String> {
                let Some(f) = flight.as_mut() else {
                    return ControlFlow::Continue(());
                };
                match ev {
                    StreamEvent::TextDelta(t) => {
                        f.chars += t.len();
                        f.text.push_str(t);
                    }
                    StreamEvent::ToolArgumentsDelta(t) => f.chars += t.len(),
                    StreamEvent::Usage(u) => f.known = Some(*u),
                    StreamEvent::Retrying { .. } => {
                        f.chars = 0;
                        f.text.clear();
                        f.reported = 0;
                    }
                    StreamEvent::ToolCallStarted { .. } => {}
                }
                let estimate = f.estimate();
                if estimate.output_tokens >= f.reported + PROGRESS_EVERY_TOKENS {
                    f.reported = estimate.output_tokens;
                    self.emit(AgentEvent::Streaming {
                        agent: def.name.clone(),
                        turn,
                        output_tokens: estimate.output_tokens,
                        elapsed_secs: call_started.elapsed().as_secs(),
                    });
                }
                match budget.check(spend_of(&estimate, price)) {
                    BudgetState::Exhausted(why) => ControlFlow::Break(format!("budget: {why}")),
                    _ => ControlFlow::Continue(()),
                }
            };
            let result = self
                .client
                .chat(&request, &mut sink, &self.ctx.cancel)
                .await;
            let response = match result {
                Ok(r) => {
                    st.in_flight = None;
                    r
                }
                Err(LlmError::Aborted { reason, partial }) => {
                    // What the stream had cost when it was stopped: the provider's usage arrives
                    // last, so a stopped stream is accounted from the same estimate that
                    // stopped it.
                    let flight = st.in_flight.take().unwrap_or_default();
                    let (usage, estimated) = if partial.usage == Usage::default() {
                        (flight.estimate(), flight.known.is_none())
                    } else {
                        (partial.usage, false)
                    };
                    self.account(def, &usage, estimated, st, transcript);
                    if !partial.text.trim().is_empty() {
                        st.summary = partial.text.clone();
                    }
                    transcript.write(
                        "aborted",
                        serde_json::json!({ "reason": reason, "partial_text": partial.text }),
                    );
                    // Only the budget stops a stream mid-way (the sink above).
                    st.budget_stop = true;
                    return Err((Status::Cancelled, reason));
                }
                // The partial answer in `st.in_flight` is accounted and kept by `run`.
                Err(LlmError::Cancelled) => return Err((Status::Cancelled, "cancelled".into())),
                Err(LlmError::Timeout { seconds, .. }) => {
                    return Err((
                        Status::TimedOut,
                        format!("model call took longer than {seconds} s"),
                    ));
                }
                Err(e) => {
                    st.in_flight = None;
                    transcript.write("model_error", serde_json::json!({ "error": e.to_string() }));
                    return Err((Status::Failed, format!("model error: {e}")));
                }
            };
            let produced = !response.text.is_empty() || !response.tool_calls.is_empty();
            let (usage, estimated) = if response.usage == Usage::default() && produced {
                let chars = response.text.len()
                    + response
                        .tool_calls
                        .iter()
                        .map(|c| c.name.len() + c.raw_arguments.len())
                        .sum::<usize>();
                let usage = Usage {
                    input_tokens: estimate_input(&request),
                    output_tokens: tokens_of(chars),
                    ..Usage::default()
                };
                (usage, true)
            } else {
                (response.usage, false)
            };
            if estimated && self.budget.first_estimate(&self.model.provider) {
                transcript.write(
                    "usage_estimated",
                    serde_json::json!({ "provider": self.model.provider }),
                );
                self.emit(AgentEvent::UsageEstimated {
                    agent: def.name.clone(),
                    provider: self.model.provider.clone(),
                });
            }
            st.tool_calls += response.tool_calls.len() as u32;
            self.account(def, &usage, estimated, st, transcript);
            transcript.write(
                "assistant",
                serde_json::json!({ "text": response.text, "tool_calls": response.tool_calls, "stop": response.stop }),
            );
            if !response.text.trim().is_empty() {
                st.summary = response.text.clone();
                recent.push_str(&response.text);
                recent.push('\n');
                keep_tail(&mut recent, RECENT_CHARS);
            }
            messages.push(Message::Assistant {
                text: response.text.clone(),
                tool_calls: response.tool_calls.clone(),
            });
            if response.tool_calls.is_empty() {
                if response.stop == StopReason::MaxTokens {
                    let cap = self
                        .max_tokens
                        .map_or_else(|| "the provider's".to_owned(), |n| n.to_string());
                    return Err((
                        Status::Failed,
                        format!(
                            "the answer was cut off at the output cap ({cap} tokens) without a \
                             tool call or a final answer; the model may be looping (raise \
                             `max_tokens` in baton.toml if the answer is legitimately long)"
                        ),
                    ));
                }
                if response.text.trim().is_empty() {
                    return Err((Status::Failed, "the model returned an empty answer".into()));
                }
                return Ok(TurnEnd::Final(response.text));
            }
            let mut escalation = None;
            for call in &response.tool_calls {
                let result = self.execute(def, call, transcript, &mut st.writes).await;
                if escalation.is_none() {
                    escalation = result.escalation.clone();
                }
                messages.push(Message::ToolResult {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    content: result.content,
                    is_error: result.is_error,
                });
            }
            if let Some(e) = escalation {
                return Ok(TurnEnd::Escalated(e, response.text));
            }
        }
    }

    fn account(
        &self,
        def: &AgentDef,
        usage: &Usage,
        estimated: bool,
        st: &mut RunState,
        transcript: &mut Transcript,
    ) {
        let spend = spend_of(usage, self.price.as_ref());
        self.budget.add(spend);
        st.usage.add(usage);
        st.cost += spend.usd;
        st.usage_estimated |= estimated;
        let record = CallRecord {
            agent: def.name.clone(),
            model: self.model.to_string(),
            usage: *usage,
            cost_usd: spend.usd,
            estimated,
        };
        transcript.write("usage", &record);
        if let Some(f) = &self.on_call {
            f(&record);
        }
        self.emit(AgentEvent::Usage {
            agent: def.name.clone(),
            usage: *usage,
            cost_usd: spend.usd,
            estimated,
        });
    }

    async fn execute(
        &self,
        def: &AgentDef,
        call: &baton_llm::ToolCall,
        transcript: &mut Transcript,
        writes: &mut Writes,
    ) -> crate::tools::ToolResult {
        use crate::tools::ToolResult;
        transcript.write("tool_call", serde_json::json!({ "id": call.id, "name": call.name, "arguments": call.raw_arguments }));
        let result = match (&call.arguments, self.tools.get(&call.name)) {
            (Err(e), _) => ToolResult::error(format!(
                "the arguments of `{}` are not valid JSON ({e}); call it again with a JSON object",
                call.name
            )),
            (_, None) => ToolResult::error(format!(
                "tool `{}` is not available to agent `{}`; available: {}",
                call.name,
                def.name,
                self.tools.names().join(", ")
            )),
            (Ok(args), Some(tool)) => {
                let inspected = Inspected {
                    name: &call.name,
                    tool: tool.as_ref(),
                    args,
                    ctx: &self.ctx,
                };
                let (verdict, by) = self.guards.check(&inspected);
                let refusal = match verdict {
                    Verdict::Allow => None,
                    Verdict::Ask(why) if self.mode == Mode::Yolo => {
                        transcript.write("guard", serde_json::json!({ "verdict": "ask-auto-confirmed", "by": by, "reason": why }));
                        None
                    }
                    Verdict::Ask(why) => Some(format!(
                        "needs a human's confirmation (standard mode): {why}"
                    )),
                    Verdict::Deny(why) => Some(why),
                };
                match refusal {
                    Some(why) => {
                        transcript.write("guard", serde_json::json!({ "verdict": "deny", "by": by, "tool": call.name, "reason": why }));
                        self.emit(AgentEvent::Refused {
                            agent: def.name.clone(),
                            tool: call.name.clone(),
                            reason: why.clone(),
                        });
                        ToolResult::error(format!("refused: {why}"))
                    }
                    None => {
                        self.emit(AgentEvent::ToolCall {
                            agent: def.name.clone(),
                            tool: call.name.clone(),
                        });
                        // Recorded before the call: a call cut off half way may have written.
                        writes.record(tool.as_ref(), args, &self.ctx);
                        let done = tool.call(args, &self.ctx).await;
                        self.guards.observe(&inspected, &done);
                        done
                    }
                }
            }
        };
        transcript.write(
            "tool_result",
            serde_json::json!({ "id": call.id, "name": call.name, "is_error": result.is_error, "content": result.content }),
        );
        result
    }
}

/// How much of the agent's recent output the context sources see.
const RECENT_CHARS: usize = 2_000;

/// Cuts `s` to its last `max` bytes or fewer, on a character boundary.
fn keep_tail(s: &mut String, max: usize) {
    if s.len() <= max {
        return;
    }
    let mut cut = s.len() - max;
    while !s.is_char_boundary(cut) {
        cut += 1;
    }
    s.drain(..cut);
}

/// What an agent's tool calls may have written, so its changed files can be asked of git at the
/// cost of those files: the paths of tools confined to the files they name (root-relative), or
/// anything, once a tool that can write anywhere (a command) ran.
#[derive(Debug)]
enum Writes {
    Confined(std::collections::BTreeSet<String>),
    Anything,
}

impl Default for Writes {
    fn default() -> Writes {
        Writes::Confined(std::collections::BTreeSet::new())
    }
}

impl Writes {
    fn record(
        &mut self,
        tool: &dyn crate::tools::Tool,
        args: &serde_json::Value,
        ctx: &ToolContext,
    ) {
        if !tool.writes() {
            return;
        }
        let Writes::Confined(paths) = self else {
            return;
        };
        if !tool.writes_only_its_paths() {
            *self = Writes::Anything;
            return;
        }
        for arg in tool.path_args() {
            let Some(raw) = args.get(*arg).and_then(|v| v.as_str()) else {
                continue;
            };
            let resolved = ctx
                .sandbox
                .resolve(raw, crate::sandbox::Access::Write)
                .ok()
                .and_then(|abs| {
                    abs.strip_prefix(ctx.sandbox.root())
                        .ok()
                        .map(|r| r.to_string_lossy().replace('\\', "/"))
                });
            match resolved {
                Some(rel) if !rel.is_empty() => {
                    paths.insert(rel);
                }
                // A path the sandbox would not resolve the same way: look at everything.
                _ => {
                    *self = Writes::Anything;
                    return;
                }
            }
        }
    }
}

#[derive(Default)]
struct RunState {
    /// The budget stopped the run.
    budget_stop: bool,
    turns: u32,
    usage: Usage,
    usage_estimated: bool,
    cost: f64,
    summary: String,
    escalation: Option<Escalation>,
    /// Tool calls the model made, in all turns.
    tool_calls: u32,
    /// The model call under way: what has streamed in so far (kept when a timeout or
    /// cancellation cuts the call off).
    in_flight: Option<InFlight>,
    /// Old tool results replaced by stubs in the conversation sent.
    compactor: Compactor,
    /// What the tool calls may have written.
    writes: Writes,
}

/// What one model call has streamed so far.
#[derive(Debug, Default)]
struct InFlight {
    /// Answer text so far.
    text: String,
    /// Characters of text and tool arguments so far.
    chars: usize,
    /// Usage the provider reported so far.
    known: Option<Usage>,
    /// The request's size in tokens, estimated.
    input_estimate: u64,
    /// Output tokens at the last progress event.
    reported: u64,
}

impl InFlight {
    /// The call's usage so far: the provider's, with output at least what the text suggests;
    /// the input estimated when the provider said nothing yet.
    fn estimate(&self) -> Usage {
        let mut usage = self.known.unwrap_or(Usage {
            input_tokens: self.input_estimate,
            ..Usage::default()
        });
        usage.output_tokens = usage.output_tokens.max(tokens_of(self.chars));
        usage
    }
}

/// Tokens of `chars` characters of text, estimated.
fn tokens_of(chars: usize) -> u64 {
    chars.div_ceil(CHARS_PER_TOKEN) as u64
}

/// The tokens a request sends, estimated from its text: system prompt, messages, tool schemas.
fn estimate_input(request: &ChatRequest) -> u64 {
    let messages: usize = request
        .messages
        .iter()
        .map(|m| match m {
            Message::User { text } => text.len(),
            Message::Assistant { text, tool_calls } => {
                text.len()
                    + tool_calls
                        .iter()
                        .map(|c| c.name.len() + c.raw_arguments.len())
                        .sum::<usize>()
            }
            Message::ToolResult { content, name, .. } => content.len() + name.len(),
        })
        .sum();
    let tools: usize = request
        .tools
        .iter()
        .map(|t| t.name.len() + t.description.len() + t.parameters.to_string().len())
        .sum();
    tokens_of(request.system.len() + messages + tools)
}
