//! An incremental Server-Sent Events parser over byte chunks.
//!
//! Both model APIs stream `text/event-stream` bodies, and the network may split them anywhere —
//! between lines, inside a `\r\n`, inside a UTF-8 character. [`SseParser`] follows the WHATWG
//! "event stream interpretation" rules: lines end in CRLF, LF or CR; `event:`, `data:` (several
//! lines joined with `\n`), `id:` and `retry:` fields; `:` comments; a blank line dispatches the
//! event; an event cut off by the end of the stream is never dispatched. Lines are split as bytes
//! and decoded only once complete, so a chunk boundary inside a character is harmless.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field, if the event had a non-empty one.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The last event id seen on the stream (it persists across events, as in the spec).
    pub id: Option<String>,
}

/// Incremental parser: feed it chunks with [`SseParser::push`], collect the complete events.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the current, unfinished line.
    line: Vec<u8>,
    /// The previous byte was a CR, so a following LF belongs to the same line ending.
    after_cr: bool,
    /// No line has been completed yet (a leading BOM is stripped from the first line).
    started: bool,
    event_type: String,
    /// Data buffer, each line followed by `\n` (the last one is removed at dispatch).
    data: String,
    last_id: String,
    retry: Option<u64>,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// The last valid `retry:` value (milliseconds), if the stream sent one.
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// Feeds the next chunk of the body; returns the events it completed, in order.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        let mut rest = chunk;
        while !rest.is_empty() {
            if self.after_cr {
                self.after_cr = false;
                if rest[0] == b'\n' {
                    rest = &rest[1..];
                    continue;
                }
            }
            match rest.iter().position(|&b| b == b'\n' || b == b'\r') {
                Some(end) => {
                    self.line.extend_from_slice(&rest[..end]);
                    self.after_cr = rest[end] == b'\r';
                    rest = &rest[end + 1..];
                    let line = std::mem::take(&mut self.line);
                    if let Some(event) = self.process_line(&line) {
                        events.push(event);
                    }
                }
                None => {
                    self.line.extend_from_slice(rest);
                    rest = &[];
                }
            }
        }
        events
    }

    fn process_line(&mut self, raw: &[u8]) -> Option<SseEvent> {
        let decoded = String::from_utf8_lossy(raw);
        let mut line: &str = &decoded;
        if !self.started {
            self.started = true;
            line = line.strip_prefix('\u{feff}').unwrap_or(line);
        }
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => value.clone_into(&mut self.event_type),
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
            }
            "id" if !value.contains('\0') => value.clone_into(&mut self.last_id),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                self.retry = value.parse().ok();
            }
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event_type = std::mem::take(&mut self.event_type);
        if self.data.is_empty() {
            return None;
        }
        let mut data = std::mem::take(&mut self.data);
        data.pop();
        Some(SseEvent {
            event: (!event_type.is_empty()).then_some(event_type),
            data,
            id: (!self.last_id.is_empty()).then(|| self.last_id.clone()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: Option<&str>, data: &str, id: Option<&str>) -> SseEvent {
        SseEvent {
            event: event.map(str::to_owned),
            data: data.to_owned(),
            id: id.map(str::to_owned),
        }
    }

    fn parse_all(parts: &[&[u8]]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        parts.iter().flat_map(|p| parser.push(p)).collect()
    }

    const SAMPLE: &str = "\u{feff}: comment line\r\n\
        event: message_start\r\n\
        data: {\"text\":\"héllo – 🦀\"}\r\n\
        \r\n\
        data: first\n\
        data:second\n\
        id: 7\n\
        retry: 1500\n\
        \n\
        event: ping\r\
        data\r\
        \r\
        event: no_data\n\
        \n\
        data: after-id\r\n\
        unknown: field\r\n\
        \r\n\
        data: never dispatched";

    fn sample_expected() -> Vec<SseEvent> {
        vec![
            ev(Some("message_start"), "{\"text\":\"héllo – 🦀\"}", None),
            ev(None, "first\nsecond", Some("7")),
            ev(Some("ping"), "", Some("7")),
            ev(None, "after-id", Some("7")),
        ]
    }

    #[test]
    fn parses_the_sample_in_one_chunk() {
        let mut parser = SseParser::new();
        assert_eq!(parser.push(SAMPLE.as_bytes()), sample_expected());
        assert_eq!(parser.retry(), Some(1500));
    }

    #[test]
    fn every_split_point_gives_the_same_events() {
        let bytes = SAMPLE.as_bytes();
        for split in 0..=bytes.len() {
            let (a, b) = bytes.split_at(split);
            assert_eq!(
                parse_all(&[a, b]),
                sample_expected(),
                "split at byte {split}"
            );
        }
    }

    #[test]
    fn every_pair_of_split_points_gives_the_same_events() {
        let bytes = SAMPLE.as_bytes();
        for i in 0..=bytes.len() {
            for j in i..=bytes.len() {
                let parts = [&bytes[..i], &bytes[i..j], &bytes[j..]];
                assert_eq!(
                    parse_all(&parts),
                    sample_expected(),
                    "splits at {i} and {j}"
                );
            }
        }
    }

    #[test]
    fn byte_at_a_time_gives_the_same_events() {
        let parts: Vec<&[u8]> = SAMPLE.as_bytes().chunks(1).collect();
        assert_eq!(parse_all(&parts), sample_expected());
    }

    #[test]
    fn crlf_split_between_cr_and_lf_is_one_line_ending() {
        let events = parse_all(&[b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n"]);
        assert_eq!(events, vec![ev(None, "a", None), ev(None, "b", None)]);
    }

    #[test]
    fn only_one_leading_space_is_stripped_and_colons_in_values_survive() {
        let events = parse_all(&[b"data:  two spaces: yes\n\n"]);
        assert_eq!(events, vec![ev(None, " two spaces: yes", None)]);
    }

    #[test]
    fn invalid_retry_and_nul_id_are_ignored() {
        let mut parser = SseParser::new();
        let events = parser.push(b"retry: 12a\nid: a\0b\ndata: x\n\n");
        assert_eq!(events, vec![ev(None, "x", None)]);
        assert_eq!(parser.retry(), None);
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        let events = parse_all(&[b"data: a\xffb\n\n"]);
        assert_eq!(events, vec![ev(None, "a\u{fffd}b", None)]);
    }
}
