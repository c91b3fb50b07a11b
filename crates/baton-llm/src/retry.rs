//! The retry policy and the HTTP streaming loop both HTTP providers share.
//!
//! One model call is: send the request, check the status, feed the `text/event-stream` body
//! through the provider's stream decoder, and retry the whole attempt when the failure is
//! transient — HTTP 429 and 500/502/503/504/529, connection errors, a stream that ends before the
//! response is complete. Backoff is exponential with jitter, `retry-after` is honoured (capped),
//! other 4xx answers are returned at once. The whole call, retries and streaming included, runs
//! under one timeout and stops promptly when the cancellation token fires, even mid-stream or
//! while sleeping before a retry: the in-flight response is dropped, which closes the connection.

use crate::client::StreamSink;
use crate::error::LlmError;
use crate::sse::{SseEvent, SseParser};
use crate::types::{ChatResponse, StopReason, StreamEvent};
use std::hash::{BuildHasher, Hasher};
use std::ops::ControlFlow;
use std::sync::Once;
use std::time::{Duration, SystemTime};
use tokio_util::sync::CancellationToken;

/// How often and how patiently a call is retried, and how long it may take in all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (at least 1 is made).
    pub max_attempts: u32,
    /// Backoff before the first retry; doubled for each further retry.
    pub base_delay: Duration,
    /// Longest backoff.
    pub max_delay: Duration,
    /// Longest wait a server's `retry-after` may impose.
    pub max_retry_after: Duration,
    /// Limit for the whole call: every attempt, backoff and the streaming of the answer.
    pub timeout: Duration,
    /// Most bytes one streamed answer may have (an endless line or event is cut here, with
    /// [`LlmError::AnswerTooLarge`]).
    pub max_answer_bytes: u64,
}

/// The default [`RetryPolicy::max_answer_bytes`]: 8 MiB, far above any real answer.
pub const DEFAULT_MAX_ANSWER_BYTES: u64 = 8 * 1024 * 1024;

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
            timeout: Duration::from_secs(600),
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
        }
    }
}

impl RetryPolicy {
    /// The backoff before attempt `next_attempt` (2 = first retry): exponential, with jitter
    /// between half and the whole of the step.
    pub fn backoff(&self, next_attempt: u32) -> Duration {
        let exponent = next_attempt.saturating_sub(2).min(30);
        let step = self
            .base_delay
            .saturating_mul(1u32 << exponent)
            .min(self.max_delay);
        let half = step / 2;
        let jitter_nanos = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX);
        let jitter = match jitter_nanos {
            0 => 0,
            n => random_u64() % n,
        };
        half + Duration::from_nanos(jitter)
    }
}

/// A random number from the standard library's per-process hash keys (no `rand` dependency).
fn random_u64() -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.finish()
}

/// Statuses worth retrying: rate limits, server errors and Anthropic's 529 "overloaded".
pub fn is_retryable_status(status: u16) -> bool {
    matches!(status, 429 | 500 | 502 | 503 | 504 | 529)
}

/// Parses a `retry-after` value: delay-seconds or an HTTP date (IMF-fixdate, GMT), relative to
/// `now`. A date in the past gives zero.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    if let Ok(seconds) = value.parse::<f64>()
        && seconds.is_finite()
        && seconds >= 0.0
    {
        return Some(Duration::from_secs_f64(seconds.min(1e9)));
    }
    let at = parse_http_date(value)?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Parses `Sun, 06 Nov 1994 08:49:37 GMT`.
fn parse_http_date(value: &str) -> Option<SystemTime> {
    let (_, rest) = value.split_once(", ")?;
    let mut parts = rest.split_ascii_whitespace();
    let day: i64 = parts.next()?.parse().ok()?;
    let month = match parts.next()? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: i64 = parts.next()?.parse().ok()?;
    let mut clock = parts.next()?.split(':').map(|p| p.parse::<i64>().ok());
    let (h, m, s) = (clock.next()??, clock.next()??, clock.next()??);
    if parts.next()? != "GMT" || !(1..=31).contains(&day) || h > 23 || m > 59 || s > 60 {
        return None;
    }
    // Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = u64::try_from(days * 86_400 + h * 3600 + m * 60 + s).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(secs))
}

/// Installs ring as the process-wide rustls crypto provider, once (reqwest is built with
/// `rustls-no-provider`, so a client cannot make TLS connections before this ran).
fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // An error means another provider is installed already, which serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// What every HTTP provider client holds: its name (for messages), base URL, API key (never
/// printed: `Debug` redacts it), HTTP client and retry policy.
pub(crate) struct Endpoint {
    pub(crate) name: String,
    pub(crate) base_url: String,
    pub(crate) api_key: Option<String>,
    pub(crate) http: reqwest::Client,
    pub(crate) policy: RetryPolicy,
}

impl Endpoint {
    pub(crate) fn new(
        name: String,
        base_url: String,
        api_key: Option<String>,
    ) -> Result<Endpoint, LlmError> {
        let base_url = base_url.trim_end_matches('/').to_owned();
        let http = http_client(&name, &base_url)?;
        Ok(Endpoint {
            name,
            base_url,
            api_key: api_key.filter(|k| !k.is_empty()),
            http,
            policy: RetryPolicy::default(),
        })
    }
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("name", &self.name)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

/// Builds the HTTP client of a provider. Loopback servers (Ollama, llama.cpp, the test mock)
/// are reached directly, never through a proxy from the environment.
pub(crate) fn http_client(provider: &str, base_url: &str) -> Result<reqwest::Client, LlmError> {
    install_crypto_provider();
    let mut builder = reqwest::Client::builder().connect_timeout(Duration::from_secs(30));
    if is_loopback(base_url) {
        builder = builder.no_proxy();
    }
    builder.build().map_err(|e| {
        LlmError::Config(format!(
            "provider `{provider}`: cannot build an HTTP client: {e}"
        ))
    })
}

fn is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let host = rest.split(['/', '?']).next().unwrap_or("");
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    host == "localhost"
        || host.starts_with("localhost:")
        || host.starts_with("127.")
        || host.starts_with("[::1]")
}

/// What the decoder makes of the stream so far.
pub(crate) enum Flow {
    /// Keep reading.
    Continue,
    /// The provider said the answer is complete; stop reading.
    Done,
}

/// Why an attempt failed.
pub(crate) enum Failure {
    /// Worth another attempt.
    Retry {
        /// The error to report if no attempt is left.
        error: LlmError,
        /// The server's `retry-after`, if any.
        retry_after: Option<Duration>,
    },
    /// Final.
    Fatal(LlmError),
    /// The sink returned `Break(reason)`.
    Abort(String),
}

impl Failure {
    /// A dropped or truncated stream.
    pub(crate) fn dropped(provider: &str, detail: impl Into<String>) -> Failure {
        Failure::Retry {
            error: LlmError::Connection {
                provider: provider.to_owned(),
                detail: detail.into(),
            },
            retry_after: None,
        }
    }

    /// Something that is not the provider's documented wire format.
    pub(crate) fn protocol(provider: &str, detail: impl Into<String>) -> Failure {
        Failure::Fatal(LlmError::Protocol {
            provider: provider.to_owned(),
            detail: detail.into(),
        })
    }
}

/// Passes one event to the sink; `Break` becomes [`Failure::Abort`].
pub(crate) fn emit(sink: &mut StreamSink<'_>, event: StreamEvent) -> Result<(), Failure> {
    match sink(&event) {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(reason) => Err(Failure::Abort(reason)),
    }
}

/// A provider's stream format: SSE events in, a [`ChatResponse`] out.
pub(crate) trait StreamDecoder {
    /// Handles one event, reporting deltas to the sink.
    fn on_event(&mut self, event: SseEvent, sink: &mut StreamSink<'_>) -> Result<Flow, Failure>;
    /// The response, once the stream said it is done or ended; an incomplete stream is
    /// [`Failure::Retry`].
    fn finish(self, ended_by_provider: bool) -> Result<ChatResponse, Failure>;
    /// What has arrived so far (for [`LlmError::Aborted`]).
    fn partial(&self) -> ChatResponse;
}

/// One HTTP model call: who, how to build the request, and what protects it.
pub(crate) struct HttpCall<'a, B, N> {
    /// Provider name for messages.
    pub provider: &'a str,
    /// Retries and timeout.
    pub policy: &'a RetryPolicy,
    /// The API key, scrubbed from any error body.
    pub secret: Option<&'a str>,
    /// Builds a fresh request for every attempt.
    pub build: B,
    /// Makes a fresh decoder for every attempt.
    pub decoder: N,
}

/// An empty response standing for "nothing arrived" in [`LlmError::Aborted`].
pub(crate) fn empty_partial() -> ChatResponse {
    ChatResponse {
        text: String::new(),
        tool_calls: Vec::new(),
        usage: Default::default(),
        stop: StopReason::Other("aborted".into()),
    }
}

impl<B, N, D> HttpCall<'_, B, N>
where
    B: Fn() -> reqwest::RequestBuilder,
    N: Fn() -> D,
    D: StreamDecoder,
{
    /// Runs the call with retries, the timeout and cancellation.
    pub(crate) async fn run(
        self,
        sink: &mut StreamSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, LlmError> {
        let timeout = self.policy.timeout;
        let provider = self.provider;
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(LlmError::Cancelled),
            result = tokio::time::timeout(timeout, self.attempts(sink)) => match result {
                Ok(result) => result,
                Err(_) => Err(LlmError::Timeout {
                    provider: provider.to_owned(),
                    seconds: timeout.as_secs(),
                }),
            },
        }
    }

    async fn attempts(&self, sink: &mut StreamSink<'_>) -> Result<ChatResponse, LlmError> {
        let mut attempt = 1;
        loop {
            let mut decoder = (self.decoder)();
            let (error, retry_after) = match self.attempt(&mut decoder, sink).await {
                Ok(ended_by_provider) => match decoder.finish(ended_by_provider) {
                    Ok(response) => return Ok(response),
                    Err(Failure::Retry { error, retry_after }) => (error, retry_after),
                    Err(Failure::Fatal(error)) => return Err(error),
                    Err(Failure::Abort(reason)) => {
                        return Err(LlmError::Aborted {
                            reason,
                            partial: Box::new(empty_partial()),
                        });
                    }
                },
                Err(Failure::Retry { error, retry_after }) => (error, retry_after),
                Err(Failure::Fatal(error)) => return Err(error),
                Err(Failure::Abort(reason)) => return Err(aborted(reason, &decoder)),
            };
            if attempt >= self.policy.max_attempts {
                return Err(error);
            }
            attempt += 1;
            let delay = match retry_after {
                Some(wait) => wait.min(self.policy.max_retry_after),
                None => self.policy.backoff(attempt),
            };
            let mut reason = error.to_string();
            truncate_at_char(&mut reason, 300);
            let event = StreamEvent::Retrying { attempt, reason };
            if let ControlFlow::Break(reason) = sink(&event) {
                return Err(LlmError::Aborted {
                    reason,
                    partial: Box::new(empty_partial()),
                });
            }
            tokio::time::sleep(delay).await;
        }
    }

    /// One attempt; `Ok(true)` when the decoder saw the provider's end marker, `Ok(false)` when
    /// the body simply ended.
    async fn attempt(&self, decoder: &mut D, sink: &mut StreamSink<'_>) -> Result<bool, Failure> {
        let provider = self.provider;
        let mut response = match (self.build)().send().await {
            Ok(response) => response,
            Err(e) if e.is_builder() => {
                return Err(Failure::Fatal(LlmError::Config(format!(
                    "provider `{provider}`: invalid request: {}",
                    self.scrub(&error_chain(&e))
                ))));
            }
            Err(e) => return Err(Failure::dropped(provider, self.scrub(&error_chain(&e)))),
        };
        let status = response.status().as_u16();
        if !response.status().is_success() {
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| parse_retry_after(v, SystemTime::now()));
            let body = self.scrub(&read_error_body(&mut response).await);
            let error = LlmError::Http {
                provider: provider.to_owned(),
                status,
                body,
            };
            return Err(if is_retryable_status(status) {
                Failure::Retry { error, retry_after }
            } else {
                Failure::Fatal(error)
            });
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        if content_type.starts_with("application/json") {
            let body = self.scrub(&read_error_body(&mut response).await);
            return Err(Failure::protocol(
                provider,
                format!("expected a `text/event-stream` answer, got JSON: {body}"),
            ));
        }
        let mut parser = SseParser::new();
        let mut received: u64 = 0;
        loop {
            let chunk = match response.chunk().await {
                Ok(Some(chunk)) => chunk,
                // A 200 with nothing in it is the server's answer, not a dropped connection:
                // retrying gets the same.
                Ok(None) if received == 0 => {
                    return Err(Failure::Fatal(LlmError::EmptyAnswer {
                        provider: provider.to_owned(),
                    }));
                }
                Ok(None) => return Ok(false),
                Err(e) => {
                    return Err(Failure::dropped(
                        provider,
                        format!("stream broke off: {}", self.scrub(&error_chain(&e))),
                    ));
                }
            };
            // Counted before parsing: the parser buffers an unfinished line, so an endless one
            // must stop here, not in memory.
            received = received.saturating_add(u64::try_from(chunk.len()).unwrap_or(u64::MAX));
            if received > self.policy.max_answer_bytes {
                return Err(Failure::Fatal(LlmError::AnswerTooLarge {
                    provider: provider.to_owned(),
                    limit: self.policy.max_answer_bytes,
                }));
            }
            for event in parser.push(&chunk) {
                if let Flow::Done = decoder.on_event(event, sink)? {
                    return Ok(true);
                }
            }
        }
    }

    /// Removes the API key from text that may echo it.
    fn scrub(&self, text: &str) -> String {
        match self.secret {
            Some(secret) if !secret.is_empty() => text.replace(secret, "[redacted]"),
            _ => text.to_owned(),
        }
    }
}

fn aborted(reason: String, decoder: &impl StreamDecoder) -> LlmError {
    LlmError::Aborted {
        reason,
        partial: Box::new(decoder.partial()),
    }
}

/// An error with its sources, `: `-separated (reqwest hides the useful part in the chain).
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Longest error body kept, in bytes.
const MAX_ERROR_BODY: usize = 2048;

/// Reads at most a little more than [`MAX_ERROR_BODY`] of an error answer, lossily decoded.
async fn read_error_body(response: &mut reqwest::Response) -> String {
    let mut bytes = Vec::new();
    while bytes.len() <= MAX_ERROR_BODY {
        match response.chunk().await {
            Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
            Ok(None) | Err(_) => break,
        }
    }
    let mut body = String::from_utf8_lossy(&bytes).trim().to_owned();
    if body.len() > MAX_ERROR_BODY {
        truncate_at_char(&mut body, MAX_ERROR_BODY);
        body.push_str(" […]");
    }
    body
}

/// Truncates to at most `max` bytes, at a character boundary.
pub(crate) fn truncate_at_char(text: &mut String, max: usize) {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_stays_within_bounds() {
        let policy = RetryPolicy::default();
        for attempt in 2..40 {
            let step = Duration::from_millis(500)
                .saturating_mul(1 << (attempt - 2).min(30))
                .min(Duration::from_secs(30));
            let delay = policy.backoff(attempt);
            assert!(
                delay >= step / 2 && delay <= step,
                "attempt {attempt}: {delay:?}"
            );
        }
    }

    #[test]
    fn zero_base_delay_means_no_wait() {
        let policy = RetryPolicy {
            base_delay: Duration::ZERO,
            ..RetryPolicy::default()
        };
        assert_eq!(policy.backoff(5), Duration::ZERO);
    }

    #[test]
    fn retryable_statuses() {
        for status in [429, 500, 502, 503, 504, 529] {
            assert!(is_retryable_status(status), "{status}");
        }
        for status in [400, 401, 403, 404, 408, 413, 422, 501] {
            assert!(!is_retryable_status(status), "{status}");
        }
    }

    #[test]
    fn retry_after_seconds_and_http_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777); // 1994-11-06 08:49:37
        assert_eq!(parse_retry_after("0", now), Some(Duration::ZERO));
        assert_eq!(
            parse_retry_after(" 12 ", now),
            Some(Duration::from_secs(12))
        );
        assert_eq!(
            parse_retry_after("1.5", now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:50:07 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(
            parse_retry_after("Thu, 01 Jan 2026 00:00:00 GMT", SystemTime::UNIX_EPOCH),
            Some(Duration::from_secs(1_767_225_600))
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-3", now), None);
    }

    #[test]
    fn loopback_detection() {
        assert!(is_loopback("http://localhost:11434/v1"));
        assert!(is_loopback("http://127.0.0.1:8080/v1"));
        assert!(is_loopback("http://[::1]:8000"));
        assert!(!is_loopback("https://api.openai.com/v1"));
        assert!(!is_loopback("https://localhost.example.com/v1"));
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        let mut text = "aé".repeat(10);
        truncate_at_char(&mut text, 4);
        assert_eq!(text, "aéa");
    }
}
