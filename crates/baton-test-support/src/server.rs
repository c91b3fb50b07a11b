//! The mock model server: HTTP/1.1 on loopback, one queued response per request.
//!
//! Every connection serves exactly one request and then closes (`Connection: close`), so a
//! streamed body simply ends when the server closes the socket — which is also how a dropped
//! connection looks, and lets a test cut a stream after any part. Requests are answered in the
//! order they arrive; an empty queue answers a clear 500. Dropping the server stops the accept
//! loop and every connection task with it.

use serde_json::Value;
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
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("queue", &self.queue)
            .field("requests", &self.requests)
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

    /// Starts a server on a free loopback port.
    pub async fn try_start() -> std::io::Result<MockServer> {
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
    let next = {
        let mut shared = shared.lock().unwrap_or_else(PoisonError::into_inner);
        let line = format!("{} {}", request.method, request.path);
        let scripted = match (&shared.responder, shared.queue.is_empty()) {
            (Some(r), true) => Some(r(&request)),
            _ => None,
        };
        shared.requests.push(request);
        match scripted {
            Some(r) => Ok(r),
            None => shared.queue.pop_front().ok_or(line),
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
