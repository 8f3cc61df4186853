//! Civil time from Unix seconds (UTC), for file names and the browser.

/// `20261202-163748` for the given Unix time.
pub fn compact_stamp(unix: u64) -> String {
    let (y, m, d, hh, mm, ss) = civil(unix);
    format!("{y:04}{m:02}{d:02}-{hh:02}{mm:02}{ss:02}")
}

/// `2026-12-02 16:37` for the given Unix time.
pub fn short_stamp(unix: u64) -> String {
    let (y, m, d, hh, mm, _) = civil(unix);
    format!("{y:04}-{m:02}-{d:02} {hh:02}:{mm:02}")
}

fn civil(unix: u64) -> (i64, u32, u32, u64, u64, u64) {
    let days = (unix / 86_400) as i64;
    let secs = unix % 86_400;
    // Howard Hinnant's days-to-civil algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d, secs / 3_600, secs % 3_600 / 60, secs % 60)
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_dates() {
        assert_eq!(super::compact_stamp(0), "19700101-000000");
        assert_eq!(super::compact_stamp(1_796_229_468), "20261202-163748");
        assert_eq!(super::short_stamp(951_782_400), "2000-02-29 00:00");
    }
}
