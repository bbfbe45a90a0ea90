//! Transaction times as text: RFC 3339 UTC with exactly three fractional
//! digits, the form both stores write (and every reader parses back).

use crate::error::{Error, Result};

/// Milliseconds since the Unix epoch as RFC 3339 UTC with exactly three
/// fractional digits, e.g. `2025-01-02T03:04:05.678Z` (fixed width for years
/// 0000–9999, so text order is time order).
pub fn format_rfc3339_millis(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000
    )
}

/// Parse an RFC 3339 timestamp (`Z` or `±hh:mm` offset, any number of
/// fractional digits) to milliseconds since the Unix epoch, truncating below
/// a millisecond.
pub fn parse_rfc3339_millis(s: &str) -> Result<i64> {
    let bad = || Error::InvalidArgument(format!("not an RFC 3339 timestamp: {s:?}"));
    let b = s.as_bytes();
    let num = |range: std::ops::Range<usize>| -> Result<i64> {
        let part = b.get(range).ok_or_else(bad)?;
        if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
            return Err(bad());
        }
        Ok(part.iter().fold(0, |n, c| n * 10 + i64::from(c - b'0')))
    };
    let sep = |i: usize, allowed: &[u8]| b.get(i).is_some_and(|c| allowed.contains(c));
    if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt ") && sep(13, b":") && sep(16, b":")) {
        return Err(bad());
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return Err(bad());
    }
    let mut i = 19;
    let mut millis = 0;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return Err(bad());
        }
        let frac = &b[start..i.min(start + 3)];
        millis = frac.iter().fold(0, |n, c| n * 10 + i64::from(c - b'0'))
            * 10_i64.pow(3 - u32::try_from(frac.len()).map_err(|_| bad())?);
    }
    let offset_min = match b.get(i) {
        Some(b'Z' | b'z') if i + 1 == b.len() => 0,
        Some(&sign @ (b'+' | b'-')) if i + 6 == b.len() && sep(i + 3, b":") => {
            let (oh, om) = (num(i + 1..i + 3)?, num(i + 4..i + 6)?);
            if oh > 23 || om > 59 {
                return Err(bad());
            }
            let off = oh * 60 + om;
            if sign == b'-' {
                -off
            } else {
                off
            }
        }
        _ => return Err(bad()),
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_min * 60;
    Ok(secs * 1000 + millis)
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

// Howard Hinnant's days_from_civil / civil_from_days (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_round_trips_and_normalises() {
        for (text, ms) in [
            ("1970-01-01T00:00:00.000Z", 0),
            ("2000-02-29T12:34:56.789Z", 951_827_696_789),
            ("1969-12-31T23:59:59.999Z", -1),
        ] {
            assert_eq!(parse_rfc3339_millis(text).unwrap(), ms, "{text}");
            assert_eq!(format_rfc3339_millis(ms), text);
        }
        let same = parse_rfc3339_millis("2000-02-29T12:34:56.789Z").unwrap();
        for variant in [
            "2000-02-29T14:34:56.789+02:00",
            "2000-02-29t12:34:56.7891234z",
            "2000-02-29 10:04:56.789-02:30",
        ] {
            assert_eq!(parse_rfc3339_millis(variant).unwrap(), same, "{variant}");
        }
        assert_eq!(
            parse_rfc3339_millis("2024-05-06T07:08:09Z").unwrap() % 1000,
            0
        );
    }

    #[test]
    fn malformed_times_are_invalid_argument_not_panics() {
        for bad in [
            "",
            "2024",
            "2024-13-01T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2024-01-01T00:00:00",
            "2024-01-01T00:00:00.Z",
            "2024-01-01T00:00:00+0200",
            "2024-01-01T24:00:00Z",
            "2024-01-01T00:00:00Zjunk",
            "２０２４-01-01T00:00:00Z",
        ] {
            let e = parse_rfc3339_millis(bad).unwrap_err();
            assert_eq!(e.code(), "INVALID_ARGUMENT", "{bad}");
        }
    }
}
