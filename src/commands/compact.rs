//! `scratchpad compact`: run `prepare` once on a recorded history. The result goes to
//! stdout as JSON, the stage events to stderr as JSON lines. What it would do, writing
//! nothing, is `simulate --now`.

use std::io::Write;
use std::path::Path;

use crate::compact::{CompactConfig, Prepared, StageEvent, Summariser, prepare};
use crate::message::Message;
use crate::store::Store;

use super::input::CommandError;
use super::input::{FromJournal, read_messages};

/// The history a journal holds now, or the messages of any other input.
fn read_messages_now(path: &Path) -> Result<Vec<Message>, CommandError> {
    read_messages(path, FromJournal::History)
}

/// Bytes gathered before each write to stdout or stderr.
const OUTPUT_BUFFER: usize = 1 << 16;

/// Where `compact` ends the summary: where the pipeline decides, or before the message
/// the user chose (`--keep-from N`, 1-based), whatever the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Until {
    Pipeline,
    KeepFrom(usize),
}

/// What `compact` is asked to do: the history to read, the request it serves (the
/// newest when none is given), where the summary ends, with which thresholds, and
/// the workspace whose archive receives what is removed.
#[derive(Clone, Copy, Debug)]
pub struct CompactJob<'a> {
    pub input: &'a Path,
    pub request: Option<&'a str>,
    pub until: Until,
    pub config: &'a CompactConfig,
    pub workspace: &'a Path,
}

/// Run `job`, asking `summariser` for any summary: the history on `stdout` as JSON,
/// each stage's event on `stderr`.
pub fn run(
    job: &CompactJob<'_>,
    summariser: &mut dyn Summariser,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<Prepared, CommandError> {
    let CompactJob {
        input,
        request,
        until,
        config,
        workspace,
    } = *job;
    config.validate().map_err(CommandError::Config)?;
    let mut messages = read_messages_now(input)?;
    let request = request.map_or_else(|| crate::compact::newest_request(&messages), str::to_string);
    let store = Store::new(workspace);
    let facts = crate::tools::session_facts();
    let ctx = crate::compact::Context {
        config,
        store: &store,
        facts: &facts,
    };
    let prepared = match until {
        Until::Pipeline => prepare(messages, &request, &ctx, summariser),
        Until::KeepFrom(keep_from) => {
            let asked = crate::compact::Asked::by("the command line (--keep-from)", &request);
            let event =
                crate::compact::compact_history::summarise_up_to(&mut messages, keep_from, asked, &ctx, summariser)
                    .map_err(CommandError::KeepFrom)?;
            Prepared {
                sizes: crate::compact::Sizes::of(&messages, config.estimate),
                messages,
                events: vec![event],
            }
        }
    };
    // Buffered: serde writes a token at a time, and stderr is unbuffered (a receipt
    // of a large history was hundreds of thousands of tiny writes).
    let mut out = std::io::BufWriter::with_capacity(OUTPUT_BUFFER, stdout);
    crate::json::to_writer(&mut out, &prepared.messages).map_err(std::io::Error::from)?;
    writeln!(out)?;
    out.flush()?;
    let mut err = std::io::BufWriter::with_capacity(OUTPUT_BUFFER, stderr);
    for event in &prepared.events {
        write_event(&mut err, event)?;
    }
    err.flush()?;
    Ok(prepared)
}

/// `event` as one JSON line.
pub(super) fn write_event(out: &mut impl Write, event: &StageEvent) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, event)?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `simulate` reads, `compact` reads too: a transcript as its messages, and a
    /// journal as the history it holds now (after its compactions), not every message
    /// it ever appended.
    #[test]
    fn compact_reads_transcripts_and_journals() {
        use crate::session::{Journal, Record};
        let dir = tempfile::tempdir().unwrap();
        let transcript = dir.path().join("transcript.jsonl");
        let messages = vec![Message::user_text("a"), Message::assistant_text("b")];
        let lines: String = messages
            .iter()
            .map(|m| format!("{}\n", serde_json::to_string(m).unwrap()))
            .collect();
        std::fs::write(&transcript, lines).unwrap();
        assert_eq!(read_messages_now(&transcript).unwrap(), messages);

        let mut journal = Journal::create(dir.path(), "demo", "m").unwrap();
        for message in &messages {
            journal
                .append(&Record::Append {
                    message: message.clone(),
                })
                .unwrap();
        }
        let compacted = vec![Message::user_text("[Compacted] a and b")];
        journal
            .append(&Record::Replace {
                messages: compacted.clone(),
            })
            .unwrap();
        journal
            .append(&Record::Append {
                message: Message::assistant_text("c"),
            })
            .unwrap();
        journal.sync().unwrap();
        assert_eq!(
            read_messages_now(journal.path()).unwrap(),
            vec![compacted[0].clone(), Message::assistant_text("c")]
        );

        let empty = dir.path().join("empty.jsonl");
        std::fs::write(&empty, "").unwrap();
        assert!(matches!(read_messages_now(&empty), Err(CommandError::Empty(_))));
    }
}
