//! The live feed: one task follows the journal's run event log (polling its newest sequence
//! number, so the run may live in any process) and fans each new event out to every browser as
//! server-sent events whose `id` is the event's journal number.
//!
//! Each event is turned into its SSE text once and shared (`Arc`) by every client: the channel
//! is a ring of fixed size, so memory does not grow with the clients or the events. A client
//! that falls further behind than the ring is dropped; its browser reconnects with
//! `Last-Event-ID` and catches up from the journal, then follows live again. A change of the
//! sprint file that no run made (`baton set`, a hand edit) is announced as a `board` event
//! without an id.

use crate::{AppState, Host, Journal};
use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use baton_protocol::EventBody;
use baton_store::journal::StoredEvent;
use futures_util::Stream;
use serde::Deserialize;
use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime};
use tokio::sync::broadcast;

/// How many events one catch-up read takes from the journal.
const PAGE: usize = 500;
/// A comment line sent when nothing happened for this long, so proxies keep the stream open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// One event as SSE text, shared by every client.
#[derive(Debug)]
pub struct Frame {
    /// The journal number (0: not a journal event).
    pub seq: i64,
    /// `id:`, `event:` and `data:` lines and the blank line that ends the event.
    pub text: Bytes,
}

impl Frame {
    /// The frame of a journal event: its typed body's name, and as data the whole event
    /// (`seq`, `run`, `at`, `scope`, `body`).
    pub fn of(e: &StoredEvent) -> Frame {
        // The name is the protocol's own: a row this build cannot read as an event is a plain
        // `message`, so no stored text reaches the `event:` line.
        let name = serde_json::from_str::<EventBody>(&e.body).map_or("message", |b| b.name());
        let data = format!(
            "{{\"seq\":{},\"run\":{},\"at\":{},\"scope\":{},\"body\":{}}}",
            e.seq,
            json_string(&e.run_id),
            json_string(&e.at),
            json_or_null(&e.scope),
            json_or_null(&e.body),
        );
        Frame {
            seq: e.seq,
            text: Bytes::from(sse(Some(e.seq), name, &data)),
        }
    }

    /// The sprint file changed outside any run.
    pub fn board() -> Frame {
        Frame {
            seq: 0,
            text: Bytes::from(sse(None, "board", "{}")),
        }
    }
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "null".to_owned())
}

/// Stored JSON as written, or `null` when it is not JSON (a hand-edited row).
fn json_or_null(s: &str) -> String {
    match serde_json::from_str::<serde::de::IgnoredAny>(s) {
        Ok(_) => s.trim().to_owned(),
        Err(_) => "null".to_owned(),
    }
}

/// One SSE event; data holding line breaks is split over `data:` lines.
fn sse(id: Option<i64>, event: &str, data: &str) -> String {
    let mut out = String::with_capacity(data.len() + 32);
    if let Some(id) = id {
        out.push_str(&format!("id: {id}\n"));
    }
    out.push_str("event: ");
    out.push_str(event);
    out.push('\n');
    for line in data.split('\n') {
        out.push_str("data: ");
        out.push_str(line.trim_end_matches('\r'));
        out.push('\n');
    }
    out.push('\n');
    out
}

/// The fan-out point of the live events.
#[derive(Debug)]
pub struct Feed {
    tx: broadcast::Sender<Arc<Frame>>,
    last: AtomicI64,
}

impl Feed {
    /// A feed whose clients may fall `queue` events behind.
    pub fn new(queue: usize) -> Arc<Feed> {
        let (tx, _) = broadcast::channel(queue.max(1));
        Arc::new(Feed {
            tx,
            last: AtomicI64::new(0),
        })
    }

    /// Sends `frame` to every client (none listening is fine).
    pub fn publish(&self, frame: Arc<Frame>) {
        if frame.seq > 0 {
            self.last.fetch_max(frame.seq, Ordering::Relaxed);
        }
        let _ = self.tx.send(frame);
    }

    /// The number of the newest event published.
    pub fn last(&self) -> i64 {
        self.last.load(Ordering::Relaxed)
    }

    /// A new client's receiver.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Frame>> {
        self.tx.subscribe()
    }

    /// How many clients listen.
    pub fn clients(&self) -> usize {
        self.tx.receiver_count()
    }
}

/// Follows the journal (and the sprint file) every `poll`, publishing what is new.
pub fn spawn_follower(feed: Arc<Feed>, host: Arc<dyn Host>, sprint_file: PathBuf, poll: Duration) {
    tokio::spawn(async move {
        let mut seen: Option<i64> = None;
        let mut stamp = file_stamp(&sprint_file);
        // One connection, kept between polls (opened again after an error).
        let mut journal: Option<Box<dyn Journal>> = None;
        loop {
            let h = Arc::clone(&host);
            let after = seen;
            let held = journal.take();
            let read = tokio::task::spawn_blocking(move || {
                let j = match held {
                    Some(j) => Some(j),
                    None => h.journal().ok().flatten(),
                };
                let new = read_new(j.as_deref(), after);
                (j, new)
            })
            .await;
            if let Ok((j, new)) = read {
                match new {
                    Some((last, events)) => {
                        for e in &events {
                            feed.publish(Arc::new(Frame::of(e)));
                        }
                        feed.last.fetch_max(last, Ordering::Relaxed);
                        seen = Some(last);
                        journal = j;
                    }
                    // A read failed: drop the connection, open a fresh one next time.
                    None => journal = None,
                }
            }
            let now = file_stamp(&sprint_file);
            if now != stamp {
                stamp = now;
                feed.publish(Arc::new(Frame::board()));
            }
            tokio::time::sleep(poll).await;
        }
    });
}

/// The events after `after` (on the first call, none: only the newest number), and the number
/// to go on from; with no journal yet, nothing. `None` when the journal cannot be read now.
fn read_new(journal: Option<&dyn Journal>, after: Option<i64>) -> Option<(i64, Vec<StoredEvent>)> {
    let Some(journal) = journal else {
        return Some((after.unwrap_or(0), Vec::new()));
    };
    let newest = journal.last_event_seq().ok()?;
    let Some(after) = after else {
        return Some((newest, Vec::new()));
    };
    if newest <= after {
        return Some((after, Vec::new()));
    }
    let mut out = Vec::new();
    let mut from = after;
    while from < newest {
        let page = journal.events_after(from, PAGE).ok()?;
        let Some(last) = page.last() else { break };
        from = last.seq;
        out.extend(page);
    }
    Some((from, out))
}

fn file_stamp(path: &std::path::Path) -> Option<(SystemTime, u64)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

/// Where a client starts: `Last-Event-ID` (a reconnecting browser), else `?after=` (the number
/// the page was rendered at), else the live tail.
#[derive(Debug, Deserialize)]
pub struct After {
    after: Option<String>,
}

/// Reads a resume point; `Err` names what is wrong with it.
pub fn parse_after(text: &str) -> Result<i64, String> {
    match text.trim().parse::<i64>() {
        Ok(n) if n >= 0 => Ok(n),
        _ => Err(format!(
            "`{}` is not an event number: Last-Event-ID and `after` take the journal number of an \
             event (0 or more)",
            text.chars().take(40).collect::<String>()
        )),
    }
}

/// `GET /events`: the live feed.
pub async fn events(
    State(state): State<Arc<AppState>>,
    Query(q): Query<After>,
    headers: HeaderMap,
) -> Response {
    if let Err(r) = state.gate.check_read(&headers) {
        return crate::pages::refusal(&r);
    }
    let last_id = headers.get("last-event-id").map(|v| {
        v.to_str()
            .map_err(|_| "Last-Event-ID is not text".to_owned())
    });
    let start = match (last_id, q.after.as_deref()) {
        (Some(Err(e)), _) => Err(e),
        (Some(Ok(t)), _) | (None, Some(t)) => parse_after(t).map(Some),
        (None, None) => Ok(None),
    };
    let start = match start {
        Ok(s) => s,
        Err(message) => return (StatusCode::BAD_REQUEST, message).into_response(),
    };
    let rx = state.feed.subscribe();
    let after = start.unwrap_or_else(|| state.feed.last());
    let body = Body::from_stream(stream(Arc::clone(&state.host), rx, after));
    let mut response = Response::new(body);
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

enum Phase {
    CatchUp,
    Live,
    Done,
}

struct Client {
    host: Arc<dyn Host>,
    rx: broadcast::Receiver<Arc<Frame>>,
    sent: i64,
    phase: Phase,
    pending: std::collections::VecDeque<Bytes>,
}

/// The stream one client reads: the journal's events after `after`, then the live ones.
pub fn stream(
    host: Arc<dyn Host>,
    rx: broadcast::Receiver<Arc<Frame>>,
    after: i64,
) -> impl Stream<Item = Result<Bytes, Infallible>> + Send + 'static {
    let client = Client {
        host,
        rx,
        sent: after,
        phase: Phase::CatchUp,
        // Tells the browser how long to wait before reconnecting.
        pending: std::collections::VecDeque::from([Bytes::from_static(b"retry: 1000\n\n")]),
    };
    futures_util::stream::unfold(client, |mut c| async move {
        loop {
            if let Some(b) = c.pending.pop_front() {
                return Some((Ok(b), c));
            }
            match c.phase {
                Phase::Done => return None,
                Phase::CatchUp => {
                    let host = Arc::clone(&c.host);
                    let from = c.sent;
                    let page = tokio::task::spawn_blocking(move || {
                        match host.journal() {
                            Ok(Some(j)) => j.events_after(from, PAGE).ok(),
                            // No journal yet: nothing to catch up on.
                            Ok(None) => Some(Vec::new()),
                            Err(_) => None,
                        }
                    })
                    .await
                    .ok()
                    .flatten();
                    let Some(page) = page else {
                        // The journal cannot be read: end, and let the browser retry.
                        c.phase = Phase::Done;
                        continue;
                    };
                    if page.len() < PAGE {
                        c.phase = Phase::Live;
                    }
                    for e in &page {
                        c.sent = e.seq;
                        c.pending.push_back(Frame::of(e).text);
                    }
                }
                Phase::Live => {
                    let next = tokio::time::timeout(KEEP_ALIVE, c.rx.recv()).await;
                    match next {
                        Err(_) => c.pending.push_back(Bytes::from_static(b": keep-alive\n\n")),
                        Ok(Ok(frame)) if frame.seq == 0 || frame.seq > c.sent => {
                            if frame.seq > 0 {
                                c.sent = frame.seq;
                            }
                            c.pending.push_back(frame.text.clone());
                        }
                        Ok(Ok(_)) => {}
                        // Too slow: dropped; the browser reconnects and catches up.
                        Ok(Err(broadcast::error::RecvError::Lagged(_)))
                        | Ok(Err(broadcast::error::RecvError::Closed)) => c.phase = Phase::Done,
                    }
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(seq: i64, body: &str) -> StoredEvent {
        StoredEvent {
            seq,
            run_id: "r1".into(),
            at: "2026-01-01T00:00:00Z".into(),
            scope: "\"run\"".into(),
            body: body.into(),
        }
    }

    #[test]
    fn a_frame_carries_the_journal_number_and_the_event_name() {
        let f = Frame::of(&stored(
            7,
            r#"{"event":"transition","key":"1-1-a","from":"in-progress","to":"review"}"#,
        ));
        let text = std::str::from_utf8(&f.text).unwrap();
        assert!(
            text.starts_with("id: 7\nevent: transition\ndata: {"),
            "{text}"
        );
        assert!(text.ends_with("\n\n"));
        let data: serde_json::Value =
            serde_json::from_str(text.lines().nth(2).unwrap().strip_prefix("data: ").unwrap())
                .unwrap();
        assert_eq!(data["seq"], 7);
        assert_eq!(data["body"]["to"], "review");
        assert_eq!(data["scope"], "run");
    }

    #[test]
    fn odd_event_names_and_broken_rows_cannot_inject_lines() {
        let f = Frame::of(&stored(1, r#"{"event":"x\nid: 99"}"#));
        let text = std::str::from_utf8(&f.text).unwrap();
        assert!(text.starts_with("id: 1\nevent: message\n"), "{text}");
        assert_eq!(text.matches("\nid:").count(), 0);
        let f = Frame::of(&stored(2, "not json\nid: 5"));
        assert!(
            std::str::from_utf8(&f.text)
                .unwrap()
                .contains("\"body\":null")
        );
    }

    #[test]
    fn resume_points_are_journal_numbers() {
        assert_eq!(parse_after("12"), Ok(12));
        assert_eq!(parse_after(" 0 "), Ok(0));
        assert!(parse_after("-1").is_err());
        assert!(parse_after("abc").is_err());
        assert!(parse_after("1e3").is_err());
    }

    struct NoJournal;

    impl Host for NoJournal {
        fn journal(&self) -> Result<Option<Box<dyn Journal>>, baton_store::journal::JournalError> {
            Ok(None)
        }
        fn in_flight(&self) -> Vec<crate::InFlight> {
            Vec::new()
        }
        fn stage_commits(&self, _key: &str) -> Vec<crate::StageCommit> {
            Vec::new()
        }
        fn answer(&self, id: i64, _choice: &str) -> Result<crate::Answered, crate::AnswerRefused> {
            Err(crate::AnswerRefused::Unknown(id))
        }
    }

    fn texts(frames: &[Bytes]) -> Vec<String> {
        frames
            .iter()
            .map(|b| {
                String::from_utf8_lossy(b)
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect()
    }

    #[tokio::test]
    async fn a_client_gets_live_events_once_in_order_and_a_slow_one_is_dropped() {
        use futures_util::StreamExt;
        let feed = Feed::new(8);
        let host: Arc<dyn Host> = Arc::new(NoJournal);
        let mut client = Box::pin(stream(Arc::clone(&host), feed.subscribe(), 2));
        assert_eq!(
            texts(&[client.next().await.unwrap().unwrap()]),
            ["retry: 1000"]
        );
        for seq in [1, 2, 3, 4] {
            feed.publish(Arc::new(Frame::of(&stored(seq, r#"{"event":"turn"}"#))));
        }
        feed.publish(Arc::new(Frame::board()));
        let mut got = Vec::new();
        for _ in 0..3 {
            got.push(client.next().await.unwrap().unwrap());
        }
        // Events up to the resume point are not sent again; the board event has no id.
        assert_eq!(texts(&got), ["id: 3", "id: 4", "event: board"]);

        let mut slow = Box::pin(stream(host, feed.subscribe(), 0));
        slow.next().await.unwrap().unwrap();
        for seq in 5..=20 {
            feed.publish(Arc::new(Frame::of(&stored(seq, r#"{"event":"turn"}"#))));
        }
        // It fell more than the ring behind: its stream ends, and the browser reconnects.
        assert!(slow.next().await.is_none());
    }

    #[test]
    fn a_ring_of_fixed_size_drops_the_slow_reader_not_the_memory() {
        let feed = Feed::new(4);
        let mut slow = feed.subscribe();
        for i in 1..=10 {
            feed.publish(Arc::new(Frame::of(&stored(i, r#"{"event":"turn"}"#))));
        }
        assert_eq!(feed.last(), 10);
        assert!(matches!(
            slow.try_recv(),
            Err(broadcast::error::TryRecvError::Lagged(6))
        ));
    }
}
