//! Timestamps are i64 nanoseconds since the Unix epoch, UTC (decision D14 in docs/decisions.md).
//! This module converts them to and from RFC 3339 text (`2025-02-10T08:00:00Z`,
//! `2025-02-10T08:00:00.5+01:00`).

const NANOS_PER_SECOND: i64 = 1_000_000_000;
const SECONDS_PER_DAY: i64 = 86_400;

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = month as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The (year, month, day) of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Formats nanoseconds since the epoch as RFC 3339 in UTC; fractional seconds are written
/// only when non-zero, with trailing zeros trimmed.
pub fn format_rfc3339(unix_nanos: i64) -> String {
    let seconds = unix_nanos.div_euclid(NANOS_PER_SECOND);
    let nanos = unix_nanos.rem_euclid(NANOS_PER_SECOND);
    let days = seconds.div_euclid(SECONDS_PER_DAY);
    let secs_of_day = seconds.rem_euclid(SECONDS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    let (h, m, s) = (secs_of_day / 3600, secs_of_day / 60 % 60, secs_of_day % 60);
    let mut out = format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}");
    if nanos != 0 {
        let fraction = format!("{nanos:09}");
        out.push('.');
        out.push_str(fraction.trim_end_matches('0'));
    }
    out.push('Z');
    out
}

/// Parses an RFC 3339 date-time with a `Z` or `±HH:MM` offset (seconds may be omitted, as
/// TOML 1.1 allows; up to 9 fractional digits) into nanoseconds since the epoch. Returns
/// `None` for malformed text or an instant outside the i64 range.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(range)?;
        if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    let year = digits(0..4)?;
    let month = digits(5..7)? as u32;
    let day = digits(8..10)? as u32;
    if b.get(4) != Some(&b'-')
        || b.get(7) != Some(&b'-')
        || !matches!(b.get(10), Some(b'T' | b't' | b' '))
    {
        return None;
    }
    let hour = digits(11..13)?;
    let minute = digits(14..16)?;
    if b.get(13) != Some(&b':') {
        return None;
    }
    let mut pos = 16;
    let mut second = 0;
    let mut nanos = 0i64;
    if b.get(pos) == Some(&b':') {
        second = digits(pos + 1..pos + 3)?;
        pos += 3;
        if b.get(pos) == Some(&b'.') {
            let start = pos + 1;
            let mut end = start;
            while b.get(end).is_some_and(u8::is_ascii_digit) {
                end += 1;
            }
            if end == start || end - start > 9 {
                return None;
            }
            nanos = digits(start..end)? * 10i64.pow((9 - (end - start)) as u32);
            pos = end;
        }
    }
    let offset_seconds = match b.get(pos)? {
        b'Z' | b'z' if pos + 1 == b.len() => 0,
        sign @ (b'+' | b'-') if pos + 6 == b.len() && b[pos + 3] == b':' => {
            let minutes = digits(pos + 1..pos + 3)? * 60 + digits(pos + 4..pos + 6)?;
            if *sign == b'+' {
                minutes * 60
            } else {
                -minutes * 60
            }
        }
        _ => return None,
    };
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        _ => return None,
    };
    if day == 0 || day > days_in_month || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let seconds =
        days_from_civil(year, month, day) * SECONDS_PER_DAY + hour * 3600 + minute * 60 + second
            - offset_seconds;
    seconds.checked_mul(NANOS_PER_SECOND)?.checked_add(nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for ns in [
            0,
            1,
            -1,
            1_700_000_000_123_456_789,
            -86_400_000_000_001,
            i64::MAX,
            i64::MIN + 1_000_000_000,
        ] {
            let text = format_rfc3339(ns);
            assert_eq!(parse_rfc3339(&text), Some(ns), "{text}");
        }
        assert_eq!(format_rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_rfc3339(1_500_000_000), "1970-01-01T00:00:01.5Z");
    }

    #[test]
    fn parses_offsets_and_short_forms() {
        let z = parse_rfc3339("2024-05-01T10:00:00Z").unwrap();
        assert_eq!(parse_rfc3339("2024-05-01T12:00:00+02:00"), Some(z));
        assert_eq!(parse_rfc3339("2024-05-01T10:00Z"), Some(z));
        assert_eq!(
            parse_rfc3339("2025-01-01T12:00:00Z"),
            Some(1_735_732_800 * NANOS_PER_SECOND)
        );
        for bad in [
            "",
            "2024-13-01T00:00Z",
            "2024-02-30T00:00Z",
            "2024-05-01",
            "2024-05-01T10:00:00",
            "2024-05-01T10:00:00.Z",
            "x024-05-01T10:00Z",
            "2024-05-01T10:00:00Zjunk",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn civil_conversion_matches_known_days() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        for d in [-1_000_000, -1, 0, 1, 59, 60, 10_957, 2_000_000] {
            let (y, m, dd) = civil_from_days(d);
            assert_eq!(days_from_civil(y, m, dd), d);
        }
    }
}
