//! Reading a file whole into memory: the buffer sized from the file once, so a long
//! history is read without growing it.

use std::fs::File;
use std::io::Read;

/// `file` from where it stands to its end, or the first `limit + 1` bytes when it is
/// longer (the caller refuses it then).
pub(super) fn read_whole(file: &mut File, limit: u64) -> std::io::Result<Vec<u8>> {
    let expected = file
        .metadata()
        .map_or(0, |meta| meta.len())
        .min(limit.saturating_add(1));
    let expected = usize::try_from(expected).unwrap_or(0);
    // One byte more than the size, for `read_to_end` to find the end without growing.
    let mut bytes = Vec::with_capacity(expected.saturating_add(1));
    Read::by_ref(file)
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use std::io::{Seek, SeekFrom, Write};

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
    fn a_file_is_read_whole() {
        for len in [0, 1, 4095, 1 << 20, (5 << 20) + 7] {
            let bytes = pattern(len);
            assert!(
                read_whole(&mut file_of(&bytes), u64::MAX).unwrap() == bytes,
                "{len} bytes"
            );
        }
    }

    #[test]
    fn a_file_over_the_limit_is_read_one_byte_past_it() {
        let bytes = pattern((4 << 20) + 10);
        for limit in [0, 100, 4 << 20, (4 << 20) + 9] {
            let read = read_whole(&mut file_of(&bytes), limit).unwrap();
            assert_eq!(read.len() as u64, limit + 1, "limit {limit}");
            assert!(read[..] == bytes[..read.len()]);
        }
    }
}
