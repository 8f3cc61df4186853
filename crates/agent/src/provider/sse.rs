//! A server-sent-events decoder that takes bytes in chunks of any size (a stream may
//! split anywhere, even inside a UTF-8 character) and yields whole events.

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, `message` when absent.
    pub event: String,
    pub data: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("the event stream is not valid UTF-8")]
pub struct SseError;

#[derive(Debug, Default)]
pub struct SseDecoder {
    buffer: Vec<u8>,
    event: Option<String>,
    data: Vec<String>,
    /// A `\r` ended the previous chunk: a `\n` starting the next one belongs to it.
    pending_cr: bool,
    /// `buffer` holds no line end before this index: a long line arriving in many
    /// chunks is scanned once, not again with every chunk.
    scanned: usize,
}

impl SseDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed bytes; returns the events completed by them.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        let mut events = Vec::new();
        let mut bytes = chunk;
        if self.pending_cr {
            self.pending_cr = false;
            if bytes.first() == Some(&b'\n') {
                bytes = &bytes[1..];
            }
        }
        self.buffer.extend_from_slice(bytes);
        let mut start = 0;
        let mut at = self.scanned;
        while at < self.buffer.len() {
            let byte = self.buffer[at];
            if byte == b'\n' || byte == b'\r' {
                let line = std::str::from_utf8(&self.buffer[start..at])
                    .map_err(|_| SseError)?
                    .to_string();
                if byte == b'\r' {
                    if at + 1 < self.buffer.len() {
                        if self.buffer[at + 1] == b'\n' {
                            at += 1;
                        }
                    } else {
                        self.pending_cr = true;
                    }
                }
                at += 1;
                start = at;
                if let Some(event) = self.line(&line) {
                    events.push(event);
                }
            } else {
                at += 1;
            }
        }
        self.buffer.drain(..start);
        self.scanned = self.buffer.len();
        Ok(events)
    }

    /// The end of the stream: a final event without its blank line still counts.
    pub fn finish(&mut self) -> Result<Option<SseEvent>, SseError> {
        if !self.buffer.is_empty() {
            let line = std::str::from_utf8(&self.buffer).map_err(|_| SseError)?.to_string();
            self.buffer.clear();
            self.scanned = 0;
            if let Some(event) = self.line(&line) {
                return Ok(Some(event));
            }
        }
        Ok(self.dispatch())
    }

    fn line(&mut self, line: &str) -> Option<SseEvent> {
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
            "event" => self.event = Some(value.to_string()),
            "data" => self.data.push(value.to_string()),
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        if self.data.is_empty() {
            return None;
        }
        let data = std::mem::take(&mut self.data).join("\n");
        Some(SseEvent {
            event: event.unwrap_or_else(|| "message".to_string()),
            data,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: &str =
        "event: a\ndata: {\"x\":\"é\"}\n\n: comment\r\nevent: b\r\ndata: one\r\ndata: two\r\n\r\ndata: plain\n\n";

    fn all_at_once() -> Vec<SseEvent> {
        let mut decoder = SseDecoder::new();
        let mut events = decoder.feed(STREAM.as_bytes()).unwrap();
        events.extend(decoder.finish().unwrap());
        events
    }

    #[test]
    fn parses_fields_comments_and_line_endings() {
        let events = all_at_once();
        assert_eq!(
            events,
            vec![
                SseEvent {
                    event: "a".into(),
                    data: "{\"x\":\"é\"}".into()
                },
                SseEvent {
                    event: "b".into(),
                    data: "one\ntwo".into()
                },
                SseEvent {
                    event: "message".into(),
                    data: "plain".into()
                },
            ]
        );
    }

    #[test]
    fn any_split_gives_the_same_events() {
        let bytes = STREAM.as_bytes();
        for split in 0..bytes.len() {
            let mut decoder = SseDecoder::new();
            let mut events = decoder.feed(&bytes[..split]).unwrap();
            events.extend(decoder.feed(&bytes[split..]).unwrap());
            events.extend(decoder.finish().unwrap());
            assert_eq!(events, all_at_once(), "split at {split}");
        }
        let mut decoder = SseDecoder::new();
        let mut events = Vec::new();
        for byte in bytes {
            events.extend(decoder.feed(std::slice::from_ref(byte)).unwrap());
        }
        events.extend(decoder.finish().unwrap());
        assert_eq!(events, all_at_once());
    }

    #[test]
    fn invalid_utf8_is_an_error() {
        let mut decoder = SseDecoder::new();
        assert_eq!(decoder.feed(b"data: \xff\xfe\n\n"), Err(SseError));
    }

    #[test]
    fn a_last_event_without_blank_line_is_kept() {
        let mut decoder = SseDecoder::new();
        assert!(decoder.feed(b"data: tail").unwrap().is_empty());
        assert_eq!(decoder.finish().unwrap().map(|e| e.data), Some("tail".into()));
    }

    #[test]
    fn a_line_split_over_many_chunks_is_decoded_whole() {
        let payload = "x".repeat(3_000_000);
        let stream = format!("event: big\ndata: {payload}\n\n");
        let mut decoder = SseDecoder::new();
        let mut events = Vec::new();
        for chunk in stream.as_bytes().chunks(1_024) {
            events.extend(decoder.feed(chunk).unwrap());
        }
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].event, "big");
        assert_eq!(events[0].data.len(), 3_000_000);
    }
}
