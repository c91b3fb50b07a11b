//! The mock model server: HTTP/1.1 on loopback, one queued response per request.
//!
//! Every connection serves exactly one request and then closes (`Connection: close`), so a
//! streamed body simply ends when the server closes the socket — which is also how a dropped
//! connection looks, and lets a test cut a stream after any part. Requests are answered in the
//! order they arrive; an empty queue answers a clear 500. Dropping the server stops the accept
//! loop and every connection task with it.
//!
//! Like the real APIs, the server refuses a malformed request before anything else: every
//! `POST …/v1/messages` is checked by [`wire_rules::check_anthropic`] and every
//! `POST …/chat/completions` by [`wire_rules::check_openai`], then by the SDK types
//! ([`sdk_oracle`], when configured). A refused request gets the API's own 400 error body,
//! whatever is queued (the queue is not consumed), is still recorded, and is listed by
//! [`MockServer::refused`].

use crate::sdk_oracle::{self, Verdict, Wire};
use crate::wire_rules::{self, WireViolation};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

/// Largest request head accepted.
const MAX_HEAD: usize = 64 * 1024;

/// A request the server received.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// `POST`, `GET`…
    pub method: String,
    /// The request target, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Headers in order, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON (`Value::Null` when it is not JSON).
    pub body: Value,
    /// The body as text.
    pub raw_body: String,
}

impl RecordedRequest {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Clone)]
enum Body {
    Full(Vec<u8>),
    Stream(StreamBody),
}

#[derive(Debug, Clone)]
struct StreamBody {
    /// (delay before the part in ms, bytes)
    parts: Vec<(u64, Vec<u8>)>,
    /// Close the connection after this many parts.
    drop_after: Option<usize>,
    /// After the parts, write this chunk every this many ms until the client goes away.
    trickle: Option<(u64, Vec<u8>)>,
}

/// One queued answer.
#[derive(Debug, Clone)]
pub struct MockResponse {
    status: u16,
    headers: Vec<(String, String)>,
    body: Body,
}

impl MockResponse {
    /// A JSON body with `status` (e.g. an API error object).
    pub fn json(status: u16, body: &Value) -> MockResponse {
        MockResponse {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: Body::Full(body.to_string().into_bytes()),
        }
    }

    /// A plain-text body with `status`.
    pub fn text(status: u16, body: &str) -> MockResponse {
        MockResponse {
            status,
            headers: vec![("content-type".into(), "text/plain; charset=utf-8".into())],
            body: Body::Full(body.as_bytes().to_vec()),
        }
    }

    /// A `200 text/event-stream` body written as `(delay_ms, chunk)` parts, in order.
    pub fn sse(parts: Vec<(u64, String)>) -> MockResponse {
        MockResponse {
            status: 200,
            headers: vec![
                ("content-type".into(), "text/event-stream".into()),
                ("cache-control".into(), "no-cache".into()),
            ],
            body: Body::Stream(StreamBody {
                parts: parts
                    .into_iter()
                    .map(|(d, c)| (d, c.into_bytes()))
                    .collect(),
                drop_after: None,
                trickle: None,
            }),
        }
    }

    /// A stream writing each event as its own part, without delays.
    pub fn sse_events(events: Vec<String>) -> MockResponse {
        MockResponse::sse(events.into_iter().map(|e| (0, e)).collect())
    }

    /// The whole body as text (every part of a stream, joined).
    pub fn body_text(&self) -> String {
        match &self.body {
            Body::Full(b) => String::from_utf8_lossy(b).into_owned(),
            Body::Stream(s) => s
                .parts
                .iter()
                .map(|(_, c)| String::from_utf8_lossy(c).into_owned())
                .collect(),
        }
    }

    /// Replaces the status.
    pub fn with_status(mut self, status: u16) -> MockResponse {
        self.status = status;
        self
    }

    /// Adds a response header.
    pub fn header(mut self, name: &str, value: &str) -> MockResponse {
        self.headers
            .push((name.to_ascii_lowercase(), value.to_owned()));
        self
    }

    /// Stream only: waits `delay_ms` before every part.
    pub fn delay_each(mut self, delay_ms: u64) -> MockResponse {
        if let Body::Stream(stream) = &mut self.body {
            for part in &mut stream.parts {
                part.0 = delay_ms;
            }
        }
        self
    }

    /// Stream only: closes the connection after `parts` parts, as a dropped connection would.
    pub fn drop_after(mut self, parts: usize) -> MockResponse {
        if let Body::Stream(stream) = &mut self.body {
            stream.drop_after = Some(parts);
        }
        self
    }

    /// Stream only: after the parts, keeps writing `chunk` every `interval_ms` until the client
    /// closes the connection — a stream that never completes.
    pub fn trickle(mut self, interval_ms: u64, chunk: &str) -> MockResponse {
        if let Body::Stream(stream) = &mut self.body {
            stream.trickle = Some((interval_ms, chunk.as_bytes().to_vec()));
        }
        self
    }

    /// Stream only: re-cuts the whole body into pieces of `bytes` bytes (no delays), so event,
    /// line and UTF-8 boundaries fall inside pieces.
    pub fn rechunk(mut self, bytes: usize) -> MockResponse {
        if let Body::Stream(stream) = &mut self.body {
            let all: Vec<u8> = stream.parts.iter().flat_map(|(_, c)| c.clone()).collect();
            stream.parts = all.chunks(bytes.max(1)).map(|c| (0, c.to_vec())).collect();
        }
        self
    }
}

/// Answers a request when no response is queued.
pub type Responder = Arc<dyn Fn(&RecordedRequest) -> MockResponse + Send + Sync>;

#[derive(Default)]
struct Shared {
    queue: VecDeque<MockResponse>,
    requests: Vec<RecordedRequest>,
    responder: Option<Responder>,
    /// (path, why) of every request refused as malformed.
    refused: Vec<(String, String)>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("queue", &self.queue)
            .field("requests", &self.requests)
            .field("refused", &self.refused)
            .finish_non_exhaustive()
    }
}

/// A mock model server on `127.0.0.1`; stops when dropped.
#[derive(Debug)]
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Mutex<Shared>>,
    disconnects: watch::Receiver<usize>,
    accept: JoinHandle<()>,
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl MockServer {
    /// Starts a server on a free loopback port; panics if none can be bound.
    pub async fn start() -> MockServer {
        match MockServer::try_start().await {
            Ok(server) => server,
            Err(e) => panic!("mock server: cannot listen on 127.0.0.1: {e}"),
        }
    }

    /// Starts a server on a free loopback port (and, the first time in a test process, the SDK
    /// check's process, before the test's requests and their timeouts start).
    pub async fn try_start() -> std::io::Result<MockServer> {
        // A failed start is reported by the first check, as the answer to its request.
        let _ = tokio::task::spawn_blocking(sdk_oracle::warm_up).await;
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Mutex::new(Shared::default()));
        let (disconnect_tx, disconnects) = watch::channel(0usize);
        let disconnect_tx = Arc::new(disconnect_tx);
        let accept = tokio::spawn(accept_loop(listener, shared.clone(), disconnect_tx));
        Ok(MockServer {
            addr,
            shared,
            disconnects,
            accept,
        })
    }

    /// `http://127.0.0.1:<port>`, without a trailing slash.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Queues the answer to a future request.
    pub fn enqueue(&self, response: MockResponse) {
        self.lock().queue.push_back(response);
    }

    /// Answers every request that finds the queue empty with `responder` (a scripted model).
    pub fn respond_with(&self, responder: Responder) {
        self.lock().responder = Some(responder);
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.lock().requests.clone()
    }

    /// Every request refused as the real API would refuse it, as (request target, why), in
    /// arrival order: the rules of [`wire_rules`] and, when configured, the SDK types of
    /// [`sdk_oracle`] (those reasons start with `SDK type check:`).
    pub fn refused(&self) -> Vec<(String, String)> {
        self.lock().refused.clone()
    }

    /// Queued responses not yet served.
    pub fn pending(&self) -> usize {
        self.lock().queue.len()
    }

    /// How many streamed answers the client broke off (a write failed because it went away).
    pub fn disconnects(&self) -> usize {
        *self.disconnects.borrow()
    }

    /// Waits until the client has broken off at least `n` streamed answers.
    pub async fn wait_for_disconnects(&self, n: usize) {
        let mut rx = self.disconnects.clone();
        // An error means the server is gone, so nothing more will come.
        let _ = rx.wait_for(|count| *count >= n).await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Mutex<Shared>>,
    disconnects: Arc<watch::Sender<usize>>,
) {
    // Owned here, so aborting this task aborts every connection task too.
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                if let Ok((stream, _)) = accepted {
                    connections.spawn(serve(stream, shared.clone(), disconnects.clone()));
                }
            }
            Some(_) = connections.join_next() => {}
        }
    }
}

async fn serve(
    mut stream: TcpStream,
    shared: Arc<Mutex<Shared>>,
    disconnects: Arc<watch::Sender<usize>>,
) {
    let Ok(Some(request)) = read_request(&mut stream).await else {
        return;
    };
    let refusal = refusal(&request).await;
    let next = {
        let mut shared = shared.lock().unwrap_or_else(PoisonError::into_inner);
        let line = format!("{} {}", request.method, request.path);
        if let Some((why, response)) = refusal {
            shared.refused.push((request.path.clone(), why));
            shared.requests.push(request);
            Ok(response)
        } else {
            let scripted = match (&shared.responder, shared.queue.is_empty()) {
                (Some(r), true) => Some(r(&request)),
                _ => None,
            };
            shared.requests.push(request);
            match scripted {
                Some(r) => Ok(r),
                None => shared.queue.pop_front().ok_or(line),
            }
        }
    };
    let response = match next {
        Ok(response) => response,
        Err(line) => MockResponse::text(
            500,
            &format!("baton-test-support MockServer: no response queued for `{line}`"),
        ),
    };
    if write_response(&mut stream, &response).await.is_err() {
        disconnects.send_modify(|n| *n += 1);
    }
}

/// The wire of a model API request: `POST` to a path (query stripped) ending in `/v1/messages`
/// or `/chat/completions`. Anything else (`GET /v1/models`, `/v1/responses`…) is not checked.
fn wire_of(request: &RecordedRequest) -> Option<Wire> {
    if request.method != "POST" {
        return None;
    }
    let (path, query) = request
        .path
        .split_once('?')
        .unwrap_or((request.path.as_str(), ""));
    if path.ends_with("/v1/messages") {
        let beta = query.split('&').any(|pair| pair == "beta=true");
        Some(Wire::Anthropic { beta })
    } else if path.ends_with("/chat/completions") {
        Some(Wire::OpenAi)
    } else {
        None
    }
}

/// Why the real API would refuse `request`, and its answer; `None` when it would take it.
async fn refusal(request: &RecordedRequest) -> Option<(String, MockResponse)> {
    let wire = wire_of(request)?;
    let ruled = match wire {
        Wire::Anthropic { .. } => wire_rules::check_anthropic(&request.body),
        Wire::OpenAi => wire_rules::check_openai(&request.body),
    };
    let violation = match ruled {
        Err(violation) => violation,
        Ok(()) => {
            let body = request.body.clone();
            let verdict = tokio::task::spawn_blocking(move || sdk_oracle::check(wire, &body))
                .await
                .unwrap_or_else(|e| Err(format!("the SDK check panicked: {e}")));
            let why = match verdict {
                Ok(Verdict::Accepted | Verdict::Skipped) => return None,
                Ok(Verdict::Refused(why)) => why,
                // The check should have run and could not: the request fails, saying why.
                Err(broken) => broken,
            };
            WireViolation {
                message: format!("SDK type check: {why}"),
                param: None,
            }
        }
    };
    Some((violation.to_string(), error_response(wire, &violation)))
}

/// The 400 the real API answers a malformed request with, in its wire's error shape.
fn error_response(wire: Wire, violation: &WireViolation) -> MockResponse {
    static REQUESTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    match wire {
        Wire::Anthropic { .. } => {
            let n = REQUESTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let id = format!("req_mock{n:016}");
            MockResponse::json(
                400,
                &json!({
                    "type": "error",
                    "error": { "type": "invalid_request_error", "message": violation.to_string() },
                    "request_id": id,
                }),
            )
            .header("request-id", &id)
        }
        Wire::OpenAi => MockResponse::json(
            400,
            &json!({
                "error": {
                    "message": violation.message,
                    "type": "invalid_request_error",
                    "param": violation.param,
                    "code": null,
                }
            }),
        ),
    }
}

/// Reads one request (head and `Content-Length` body); `None` if the client sent nothing.
async fn read_request(stream: &mut TcpStream) -> std::io::Result<Option<RecordedRequest>> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(pos) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos;
        }
        if buffer.len() > MAX_HEAD {
            return Err(std::io::Error::other("request head too large"));
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next().unwrap_or("").split(' ');
    let method = request_line.next().unwrap_or("").to_owned();
    let path = request_line.next().unwrap_or("").to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let raw_body = String::from_utf8_lossy(&body).into_owned();
    Ok(Some(RecordedRequest {
        method,
        path,
        headers,
        body: serde_json::from_str(&raw_body).unwrap_or(Value::Null),
        raw_body,
    }))
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => "Status",
    }
}

async fn write_response(stream: &mut TcpStream, response: &MockResponse) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nconnection: close\r\n",
        response.status,
        reason_phrase(response.status)
    );
    for (name, value) in &response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    match &response.body {
        Body::Full(body) => {
            head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(body).await?;
            stream.flush().await?;
            stream.shutdown().await
        }
        Body::Stream(body) => {
            head.push_str("\r\n");
            stream.write_all(head.as_bytes()).await?;
            stream.flush().await?;
            for (i, (delay, part)) in body.parts.iter().enumerate() {
                if body.drop_after.is_some_and(|k| i >= k) {
                    return Ok(());
                }
                if *delay > 0 {
                    tokio::time::sleep(Duration::from_millis(*delay)).await;
                }
                stream.write_all(part).await?;
                stream.flush().await?;
            }
            if body.drop_after.is_some() {
                return Ok(());
            }
            if let Some((interval, chunk)) = &body.trickle {
                loop {
                    tokio::time::sleep(Duration::from_millis(*interval)).await;
                    stream.write_all(chunk).await?;
                    stream.flush().await?;
                }
            }
            stream.shutdown().await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sdk_oracle::configured;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Sends one request and returns (status, body as JSON or `Null`).
    async fn send(server: &MockServer, method: &str, path: &str, body: &str) -> (u16, Value) {
        let mut stream = TcpStream::connect(server.addr).await.unwrap();
        let request = format!(
            "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
             content-length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.unwrap();
        let answer = String::from_utf8(answer).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        (status, serde_json::from_str(body).unwrap_or(Value::Null))
    }

    fn anthropic(messages: Value) -> String {
        json!({ "model": "claude-sonnet-4-5", "max_tokens": 64, "messages": messages }).to_string()
    }

    fn openai(messages: Value) -> String {
        json!({ "model": "gpt-4o", "messages": messages }).to_string()
    }

    fn tool_use(id: &str) -> Value {
        json!({ "type": "tool_use", "id": id, "name": "bash", "input": { "command": "ls" } })
    }

    fn tool_result(id: &str) -> Value {
        json!({ "type": "tool_result", "tool_use_id": id, "content": "ok" })
    }

    fn call(id: &str) -> Value {
        json!({ "id": id, "type": "function", "function": { "name": "bash", "arguments": "{}" } })
    }

    /// Asserts Anthropic's error shape and returns its message.
    fn anthropic_error(status: u16, body: &Value) -> String {
        assert_eq!(status, 400, "{body}");
        assert_eq!(body["type"], "error", "{body}");
        assert_eq!(body["error"]["type"], "invalid_request_error", "{body}");
        assert!(
            body["request_id"].as_str().unwrap().starts_with("req_"),
            "{body}"
        );
        assert_eq!(body.as_object().unwrap().len(), 3, "{body}");
        body["error"]["message"].as_str().unwrap().to_owned()
    }

    /// Asserts OpenAI's error shape and returns (message, param).
    fn openai_error(status: u16, body: &Value) -> (String, Value) {
        assert_eq!(status, 400, "{body}");
        let error = &body["error"];
        assert_eq!(error["type"], "invalid_request_error", "{body}");
        assert_eq!(error["code"], Value::Null, "{body}");
        assert_eq!(error.as_object().unwrap().len(), 4, "{body}");
        (
            error["message"].as_str().unwrap().to_owned(),
            error["param"].clone(),
        )
    }

    #[tokio::test]
    async fn refuses_malformed_anthropic_requests_whatever_is_queued() {
        let server = MockServer::start().await;
        server.enqueue(MockResponse::json(200, &json!({ "queued": true })));
        let cases = [
            // A tool_use in a user message.
            (
                anthropic(json!([{ "role": "user", "content": [tool_use("toolu_1")] }])),
                "messages.0.content.0: `tool_use` blocks can only be in `assistant` messages",
            ),
            // An unanswered tool call.
            (
                anthropic(json!([
                    { "role": "user", "content": "hi" },
                    { "role": "assistant", "content": [tool_use("toolu_1")] },
                    { "role": "user", "content": "go on" },
                ])),
                "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1.",
            ),
            // A result without its call in the previous message.
            (
                anthropic(json!([
                    { "role": "user", "content": "hi" },
                    { "role": "assistant", "content": "sure" },
                    { "role": "user", "content": [tool_result("toolu_x")] },
                ])),
                "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_x. \
                 Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
            ),
            // Two user messages, the second with the assistant's tool_use in it.
            (
                anthropic(json!([
                    { "role": "user", "content": "hi" },
                    { "role": "user", "content": [tool_use("toolu_1")] },
                ])),
                "messages.1.content.0: `tool_use` blocks can only be in `assistant` messages",
            ),
        ];
        for (i, (body, expected)) in cases.iter().enumerate() {
            let path = if i % 2 == 0 {
                "/v1/messages"
            } else {
                "/v1/messages?beta=true"
            };
            let (status, answer) = send(&server, "POST", path, body).await;
            let message = anthropic_error(status, &answer);
            assert!(message.starts_with(expected), "{message}");
        }
        assert_eq!(server.pending(), 1, "a refusal does not consume the queue");
        assert_eq!(server.requests().len(), 4, "refused requests are recorded");
        let refused = server.refused();
        assert_eq!(refused.len(), 4);
        assert_eq!(refused[1].0, "/v1/messages?beta=true");
        assert!(refused[2].1.contains("toolu_x"), "{refused:?}");
        // A well-formed request still gets the queued answer.
        let ok = anthropic(json!([{ "role": "user", "content": "hi" }]));
        let (status, answer) = send(&server, "POST", "/v1/messages", &ok).await;
        assert_eq!((status, answer), (200, json!({ "queued": true })));
        assert_eq!(server.refused().len(), 4);
    }

    #[tokio::test]
    async fn refuses_malformed_chat_completions_before_the_responder() {
        let server = MockServer::start().await;
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = calls.clone();
        server.respond_with(Arc::new(move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
            MockResponse::json(200, &json!({ "ok": true }))
        }));
        let cases = [
            // An unanswered tool call.
            (
                openai(json!([
                    { "role": "user", "content": "hi" },
                    { "role": "assistant", "content": null, "tool_calls": [call("call_1")] },
                    { "role": "user", "content": "go on" },
                ])),
                "An assistant message with 'tool_calls' must be followed by tool messages",
                "messages.1.role",
            ),
            // A result without its call.
            (
                openai(json!([
                    { "role": "user", "content": "hi" },
                    { "role": "tool", "tool_call_id": "call_1", "content": "ok" },
                ])),
                "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'",
                "messages.1.role",
            ),
            // Two user messages, the second carrying a tool result's id it cannot answer.
            (
                openai(json!([
                    { "role": "user", "content": "hi" },
                    { "role": "assistant", "tool_calls": [call("call_1")] },
                    { "role": "tool", "tool_call_id": "call_2", "content": "ok" },
                ])),
                "'tool_call_id' of 'call_2' not found",
                "messages.2.tool_call_id",
            ),
        ];
        for (body, expected, param) in &cases {
            let (status, answer) = send(&server, "POST", "/v1/chat/completions", body).await;
            let (message, got_param) = openai_error(status, &answer);
            assert!(message.contains(expected), "{message}");
            assert_eq!(got_param, json!(param));
        }
        // Any prefix (an OpenAI-compatible server's base URL) and a query.
        let (status, answer) = send(&server, "POST", "/api/chat/completions?x=1", "[]").await;
        openai_error(status, &answer);
        assert_eq!(
            calls.load(Ordering::SeqCst),
            0,
            "the responder never saw them"
        );
        assert_eq!(server.refused().len(), 4);
        let ok = openai(json!([{ "role": "user", "content": "hi" }]));
        let (status, _) = send(&server, "POST", "/v1/chat/completions", &ok).await;
        assert_eq!(status, 200);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn leaves_other_endpoints_unchecked() {
        let server = MockServer::start().await;
        for _ in 0..3 {
            server.enqueue(MockResponse::json(200, &json!({ "data": [] })));
        }
        assert_eq!(send(&server, "GET", "/v1/models", "").await.0, 200);
        assert_eq!(
            send(&server, "POST", "/v1/responses", "not json").await.0,
            200
        );
        // A GET to a checked path has no body to check.
        assert_eq!(send(&server, "GET", "/v1/messages", "").await.0, 200);
        assert!(server.refused().is_empty());
    }

    #[tokio::test]
    async fn refuses_what_the_sdk_types_refuse_when_configured() {
        match configured() {
            Ok(true) => {}
            Ok(false) => {
                eprintln!(
                    "SKIPPED: the SDK check ({} is not set)",
                    sdk_oracle::DIR_ENV
                );
                return;
            }
            Err(e) => panic!("{e}"),
        }
        let server = MockServer::start().await;
        // Unknown block types pass the rules (CLIs send new ones); the SDK types know them all.
        let body = anthropic(
            json!([{ "role": "user", "content": [{ "type": "tool_resultx", "tool_use_id": "x" }] }]),
        );
        let (status, answer) = send(&server, "POST", "/v1/messages", &body).await;
        let message = anthropic_error(status, &answer);
        assert!(
            message.starts_with("SDK type check: messages.0.content.0"),
            "{message}"
        );
        // The rules leave `model` to the SDK types (local servers may not need one).
        let body = json!({ "messages": [{ "role": "user", "content": "hi" }] });
        let (status, answer) =
            send(&server, "POST", "/v1/chat/completions", &body.to_string()).await;
        let (message, _) = openai_error(status, &answer);
        assert!(message.starts_with("SDK type check: model"), "{message}");
        assert_eq!(server.refused().len(), 2);
    }
}
