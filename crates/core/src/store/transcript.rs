//! Writing a transcript: messages as JSON lines, hashed as they are written, its
//! pages sent to disk as they go.

use std::borrow::Cow;
use std::io::{self, Write};

use crate::message::Message;

/// Bytes gathered into one batch before it goes to the threads that hash and write it.
pub(super) const TRANSCRIPT_CHUNK: usize = 1 << 20;

/// Pieces in one batch: each becomes one buffer of a vectored write, and the kernel
/// takes at most 1,024 of those a call.
const PIECES_PER_BATCH: usize = 1_000;

/// Messages as JSON lines, as transcripts hold them, into `out`, and the digest of
/// every byte ([`crate::digest`]). A message kept as its text goes out as that text,
/// read where it lies; a parsed one is serialised. Gathering, hashing and writing each
/// take a while on a long history, so they run on three threads, a batch apart. When
/// `out` is the file `disk`, each batch is put on its way to disk once written.
pub(super) fn write_jsonl_hashed<W: Write + Send>(
    out: W,
    disk: Option<std::os::fd::BorrowedFd<'_>>,
    messages: &[Message],
) -> io::Result<String> {
    let (batches, to_hash) = std::sync::mpsc::sync_channel::<Batch<'_>>(2);
    let (hashed, to_write) = std::sync::mpsc::sync_channel::<Batch<'_>>(2);
    std::thread::scope(|scope| {
        let writer = scope.spawn(move || -> io::Result<()> {
            let mut out = out;
            let mut written = 0;
            for batch in to_write {
                let mut slices: Vec<io::IoSlice<'_>> =
                    batch.pieces.iter().map(|piece| io::IoSlice::new(piece)).collect();
                write_all_vectored(&mut out, &mut slices)?;
                if let Some(file) = disk {
                    start_writeback(file, written, batch.bytes);
                }
                written += batch.bytes;
            }
            out.flush()
        });
        let hasher = scope.spawn(move || -> String {
            let mut hasher = crate::digest::Hasher::default();
            for batch in to_hash {
                for piece in &batch.pieces {
                    hasher.update(piece);
                }
                // The writer stopped on an error, which it reports.
                if hashed.send(batch).is_err() {
                    break;
                }
            }
            hasher.finish()
        });
        let gathered = gather_jsonl(messages, &batches);
        drop(batches);
        let digest = hasher
            .join()
            .map_err(|_| io::Error::other("the transcript hasher panicked"))?;
        // A failed write ends the writer's loop, so a send fails too: the write's own
        // error is the one that says what went wrong.
        writer
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the transcript writer panicked")))?;
        gathered.map(|()| digest)
    })
}

/// A run of a transcript's bytes, in order, each piece one buffer of a vectored
/// write: borrowed, the text of a message kept as text (or a newline) where it lies;
/// owned, parsed messages in a row, serialised, each with its newline.
#[derive(Default)]
struct Batch<'a> {
    pieces: Vec<Cow<'a, [u8]>>,
    bytes: usize,
}

impl<'a> Batch<'a> {
    fn push_borrowed(&mut self, bytes: &'a [u8]) {
        self.bytes += bytes.len();
        self.pieces.push(Cow::Borrowed(bytes));
    }

    /// Serialise `message` and a newline onto the batch's last piece when that is one
    /// of serialised messages, else onto a new one.
    fn push_serialised(&mut self, message: &Message) -> io::Result<()> {
        if !matches!(self.pieces.last(), Some(Cow::Owned(_))) {
            self.pieces.push(Cow::Owned(Vec::new()));
        }
        let Some(Cow::Owned(owned)) = self.pieces.last_mut() else {
            unreachable!("an owned piece was just made last");
        };
        let before = owned.len();
        crate::json::to_writer(&mut *owned, message)?;
        owned.push(b'\n');
        self.bytes += owned.len() - before;
        Ok(())
    }

    fn is_full(&self) -> bool {
        self.bytes >= TRANSCRIPT_CHUNK || self.pieces.len() + 2 > PIECES_PER_BATCH
    }
}

/// `messages` as JSON lines, a batch at a time, to `batches`.
fn gather_jsonl<'a>(messages: &'a [Message], batches: &std::sync::mpsc::SyncSender<Batch<'a>>) -> io::Result<()> {
    let stopped = || io::Error::new(io::ErrorKind::BrokenPipe, "the transcript writer stopped");
    let mut batch = Batch::default();
    for message in messages {
        match message.raw() {
            Some(text) => {
                batch.push_borrowed(text.as_str().as_bytes());
                batch.push_borrowed(b"\n");
            }
            None => batch.push_serialised(message)?,
        }
        if batch.is_full() {
            batches.send(std::mem::take(&mut batch)).map_err(|_| stopped())?;
        }
    }
    if batch.bytes > 0 {
        batches.send(batch).map_err(|_| stopped())?;
    }
    Ok(())
}

/// Every byte of `slices` into `out`, in as few calls as it takes.
fn write_all_vectored(out: &mut impl Write, mut slices: &mut [io::IoSlice<'_>]) -> io::Result<()> {
    while !slices.is_empty() {
        match out.write_vectored(slices) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "failed to write the whole transcript",
                ));
            }
            Ok(written) => io::IoSlice::advance_slices(&mut slices, written),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// Ask the kernel to start putting `len` bytes at `offset` of `file` on disk now, so
/// that the sync making a transcript durable finds most of it there already (after
/// the write of a 46 MB transcript, its sync took 26 ms). Only a hint: the sync is
/// what makes it durable, so a refusal changes nothing.
fn start_writeback(file: std::os::fd::BorrowedFd<'_>, offset: usize, len: usize) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let (Ok(offset), Ok(len)) = (libc::off64_t::try_from(offset), libc::off64_t::try_from(len)) else {
            return;
        };
        // SAFETY: the call only reads its arguments; `file` is open while borrowed.
        unsafe {
            libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, offset, len);
}
