//! How the archive names a file's content, so that a file is read back only while it
//! still has the bytes that were kept: a BLAKE3 hash, written `blake3:<64 hex>`.
//!
//! BLAKE3 rather than SHA-256: the hash of a long history's transcript lies on the
//! path of the compaction that writes it, and SHA-256 is one sequential stream (9 MB
//! took 5.7 ms at 1.6 GB/s, with the CPU's SHA instructions) where BLAKE3 hashes many
//! of its 1 KiB chunks at once (1.7 ms). Both are 256-bit cryptographic hashes: a
//! forged file is refused alike. Receipts recorded by earlier versions name a file
//! by its SHA-256 as bare hex; those are still checked as such.

use sha2::Digest as _;

/// What a digest of this version starts with.
const BLAKE3_PREFIX: &str = "blake3:";

/// The digest of `bytes`, as receipts and journals record it.
pub fn of(bytes: &[u8]) -> String {
    named(blake3::hash(bytes))
}

/// Whether `bytes` are what `recorded` names: a digest of this version, or the bare
/// SHA-256 hex an earlier one recorded. Anything else names no content.
pub fn matches(recorded: &str, bytes: &[u8]) -> bool {
    if let Some(hex) = recorded.strip_prefix(BLAKE3_PREFIX) {
        return blake3::Hash::from_hex(hex).is_ok_and(|hash| hash == blake3::hash(bytes));
    }
    let sha256 = recorded.len() == 64 && recorded.bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'));
    sha256 && recorded == sha256_hex(bytes)
}

/// SHA-256 of `bytes`. For what must stay comparable with what was written before
/// (a workspace's key, a trust record, a file read before an edit), never the archive.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    sha2::Sha256::digest(bytes).into()
}

/// [`sha256`] as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&sha256(bytes))
}

fn named(hash: blake3::Hash) -> String {
    format!("{BLAKE3_PREFIX}{}", hash.to_hex())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Bytes handed to BLAKE3 at once: a whole number of its 1 KiB chunks, which it
/// hashes side by side. Given a message's line at a time (about 1 KB), it hashed a
/// chunk at a time and was slower than SHA-256 (9 MB: 8.6 ms against 5.7).
const STAGED_BYTES: usize = 64 << 10;

/// The digest of bytes given in pieces of any size, the same as [`of`] of them all.
pub struct Hasher {
    hasher: blake3::Hasher,
    staged: Vec<u8>,
}

impl Default for Hasher {
    fn default() -> Self {
        Hasher {
            hasher: blake3::Hasher::new(),
            staged: Vec::with_capacity(STAGED_BYTES),
        }
    }
}

impl Hasher {
    /// Take in the next `bytes`.
    pub fn update(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.staged.is_empty() && bytes.len() >= STAGED_BYTES {
                // Everything hashed so far is a whole number of stages, so a run of
                // whole stages can go straight from where it lies.
                let whole = bytes.len() / STAGED_BYTES * STAGED_BYTES;
                self.hasher.update(&bytes[..whole]);
                bytes = &bytes[whole..];
                continue;
            }
            let taken = (STAGED_BYTES - self.staged.len()).min(bytes.len());
            self.staged.extend_from_slice(&bytes[..taken]);
            bytes = &bytes[taken..];
            if self.staged.len() == STAGED_BYTES {
                self.hasher.update(&self.staged);
                self.staged.clear();
            }
        }
    }

    /// The digest of everything taken in, as [`of`] writes it.
    pub fn finish(mut self) -> String {
        self.hasher.update(&self.staged);
        named(self.hasher.finalize())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn a_digest_names_its_algorithm_and_checks_only_its_bytes() {
        let digest = of(b"the full output");
        assert!(digest.starts_with("blake3:"), "{digest}");
        assert_eq!(digest.len(), "blake3:".len() + 64);
        assert!(matches(&digest, b"the full output"));
        assert!(!matches(&digest, b"THE full output"));
        assert!(!matches(&digest.to_uppercase(), b"the full output"));
        assert!(!matches("blake3:", b""));
        assert!(!matches("", b""));
    }

    /// A journal of an earlier version recorded the SHA-256 as bare hex: still
    /// checked, so its archive can still be browsed and undone.
    #[test]
    fn an_earlier_versions_sha256_is_still_checked() {
        let recorded = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        assert!(matches(recorded, b""), "the SHA-256 of nothing");
        assert!(!matches(recorded, b"x"));
        assert!(!matches(&recorded.to_uppercase(), b""), "only as it was written");
        assert!(!matches(&recorded[1..], b""));
    }

    proptest! {
        /// However the bytes are cut into pieces, the digest is that of them whole.
        #[test]
        fn pieces_hash_as_the_whole(
            bytes in prop::collection::vec(any::<u8>(), 0..300_000),
            cuts in prop::collection::vec(0usize..300_000, 0..40),
        ) {
            let mut cuts: Vec<usize> = cuts.into_iter().map(|cut| cut % (bytes.len() + 1)).collect();
            cuts.sort_unstable();
            let mut hasher = Hasher::default();
            let mut from = 0;
            for cut in cuts.into_iter().chain([bytes.len()]) {
                hasher.update(&bytes[from..cut]);
                from = cut;
            }
            prop_assert_eq!(hasher.finish(), of(&bytes));
        }
    }
}
