//! The time now, and civil time from Unix seconds (UTC) for file names and the
//! browser, by `jiff`.

use jiff::Timestamp;
use jiff::tz::TimeZone;

/// `unix` in UTC as `format`; the epoch when it is out of range (times after the
/// year 9999 come from no clock we read).
fn formatted(unix: u64, format: &str) -> String {
    let seconds = i64::try_from(unix).unwrap_or(i64::MAX);
    let timestamp = Timestamp::from_second(seconds).unwrap_or(Timestamp::UNIX_EPOCH);
    timestamp.to_zoned(TimeZone::UTC).strftime(format).to_string()
}

/// Seconds since the Unix epoch now (0 for a clock set before it).
pub fn unix_now() -> u64 {
    unix_of(std::time::SystemTime::now())
}

/// `time` in seconds since the Unix epoch (0 for a time before it).
pub fn unix_of(time: std::time::SystemTime) -> u64 {
    time.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// `20261202-163748` for the given Unix time.
pub fn compact_stamp(unix: u64) -> String {
    formatted(unix, "%Y%m%d-%H%M%S")
}

/// `2026-12-02 16:37` for the given Unix time.
pub fn short_stamp(unix: u64) -> String {
    formatted(unix, "%Y-%m-%d %H:%M")
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_dates() {
        assert_eq!(super::compact_stamp(0), "19700101-000000");
        assert_eq!(super::compact_stamp(1_796_229_468), "20261202-163748");
        assert_eq!(super::short_stamp(951_782_400), "2000-02-29 00:00");
        assert_eq!(super::compact_stamp(u64::MAX), "19700101-000000", "out of range");
    }
}
