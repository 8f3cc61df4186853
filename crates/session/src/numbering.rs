//! Every record of a journal carries its sequence number, written first on its line
//! (`{"seq":7,"type":"append",…}`). Replay skips a line whose number is not above
//! every number before it: the same record written twice (a copy, a sync tool's
//! merge) loads once, while two records that merely read alike (the same request
//! asked twice, a provider that reuses call ids) both load, since each has its own
//! number. Lines without a number come from journals written before numbering and are
//! always applied.

/// How a numbered line begins; the number and a comma or the closing brace follow.
const PREFIX: &[u8] = br#"{"seq":"#;

/// `object` (one JSON object, as a record serialises) with `seq` put first.
pub(super) fn numbered(object: &[u8], seq: u64) -> Vec<u8> {
    let rest = object.strip_prefix(b"{").unwrap_or(object);
    let mut line = Vec::with_capacity(object.len() + PREFIX.len() + 21);
    line.extend_from_slice(PREFIX);
    line.extend_from_slice(seq.to_string().as_bytes());
    if rest.first() != Some(&b'}') {
        line.push(b',');
    }
    line.extend_from_slice(rest);
    line
}

/// The sequence number a line was written with, if it has one in the place
/// [`numbered`] puts it.
pub(super) fn number_of(line: &[u8]) -> Option<u64> {
    let rest = line.strip_prefix(PREFIX)?;
    let digits = rest.iter().take_while(|byte| byte.is_ascii_digit()).count();
    if digits == 0 || !matches!(rest.get(digits), Some(b',' | b'}')) {
        return None;
    }
    std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_is_read_back_from_where_it_was_written() {
        for seq in [0, 1, 9, 10, 12_345, u64::MAX] {
            let line = numbered(br#"{"type":"append","message":{}}"#, seq);
            assert_eq!(number_of(&line), Some(seq));
            let value: serde_json::Value = serde_json::from_slice(&line).unwrap();
            assert_eq!(value["seq"], seq);
            assert_eq!(value["type"], "append");
        }
        assert_eq!(number_of(&numbered(b"{}", 4)), Some(4));
        assert_eq!(numbered(b"{}", 4), br#"{"seq":4}"#);
    }

    #[test]
    fn a_line_without_a_number_in_its_place_has_none() {
        for line in [
            &br#"{"type":"append"}"#[..],
            br#"{"seq":,"type":"x"}"#,
            br#"{"seq":-1,"type":"x"}"#,
            br#"{"seq":"3","type":"x"}"#,
            br#"{"seq":3x}"#,
            br#"{"seq":99999999999999999999999,"type":"x"}"#,
            br#"{ "seq":3,"type":"x"}"#,
            b"",
        ] {
            assert_eq!(number_of(line), None, "{}", String::from_utf8_lossy(line));
        }
    }
}
