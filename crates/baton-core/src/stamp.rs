//! Date stamps of the sprint file (`generated`, `last_updated`).
//!
//! BMad writes `MM-DD-YYYY HH:MM` and readers must also accept `YYYY-MM-DD HH:MM`, `YYYY-MM-DD`
//! and (seen in the wild) ISO 8601 with a `T`, seconds and an offset (BMAD-FORMAT.md §2.1). The
//! clock itself is not read here: callers pass the current time in.

use std::fmt;

/// A minute-precision local time stamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Stamp {
    /// Year (four digits).
    pub year: u16,
    /// Month 1–12.
    pub month: u8,
    /// Day 1–31.
    pub day: u8,
    /// Hour 0–23.
    pub hour: u8,
    /// Minute 0–59.
    pub minute: u8,
}

impl Stamp {
    /// Builds a stamp, checking ranges.
    pub fn new(year: u16, month: u8, day: u8, hour: u8, minute: u8) -> Option<Stamp> {
        let ok = (1..=12).contains(&month)
            && (1..=days_in_month(year, month)).contains(&day)
            && hour < 24
            && minute < 60;
        ok.then_some(Stamp {
            year,
            month,
            day,
            hour,
            minute,
        })
    }

    /// Parses every accepted format; `None` if none fits.
    pub fn parse(text: &str) -> Option<Stamp> {
        let t = text.trim().trim_matches(|c| c == '"' || c == '\'');
        let (date, time) = match t.find([' ', 'T']) {
            Some(i) => (&t[..i], Some(t[i + 1..].trim())),
            None => (t, None),
        };
        let parts: Vec<&str> = date.split('-').collect();
        let (y, m, d) = match parts.as_slice() {
            [y, m, d] if y.len() == 4 => (*y, *m, *d),
            [m, d, y] if y.len() == 4 && m.len() <= 2 => (*y, *m, *d),
            _ => return None,
        };
        let (hour, minute) = match time {
            None | Some("") => (0, 0),
            Some(time) => {
                let mut hm = time.split(':');
                let h = hm.next()?;
                let mi = hm.next()?;
                (num(h)?, num(mi.get(..2)?)?)
            }
        };
        Stamp::new(num(y)?, num(m)?, num(d)?, hour, minute)
    }

    /// The UTC minute of `secs` seconds since 1970-01-01 (the inverse of
    /// [`Stamp::days_since_epoch`], with the time of day); `None` outside years 0–9999.
    pub fn from_unix(secs: i64) -> Option<Stamp> {
        let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        let year = yoe + era * 400 + i64::from(month <= 2);
        Stamp::new(
            u16::try_from(year).ok().filter(|y| *y <= 9999)?,
            u8::try_from(month).ok()?,
            u8::try_from(day).ok()?,
            u8::try_from(rest / 3_600).ok()?,
            u8::try_from(rest % 3_600 / 60).ok()?,
        )
    }

    /// Days since 1970-01-01 (proleptic Gregorian), for staleness checks.
    pub fn days_since_epoch(&self) -> i64 {
        let (y, m, d) = (
            i64::from(self.year),
            i64::from(self.month),
            i64::from(self.day),
        );
        let y = if m <= 2 { y - 1 } else { y };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let mp = (m + 9) % 12;
        let doy = (153 * mp + 2) / 5 + d - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe - 719_468
    }
}

impl fmt::Display for Stamp {
    /// BMad's canonical `MM-DD-YYYY HH:MM`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:02}-{:02}-{:04} {:02}:{:02}",
            self.month, self.day, self.year, self.hour, self.minute
        )
    }
}

fn num<T: std::str::FromStr>(s: &str) -> Option<T> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn days_in_month(year: u16, month: u8) -> u8 {
    match month {
        2 if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_every_documented_format() {
        let want = Stamp::new(2026, 3, 14, 9, 5).unwrap();
        assert_eq!(Stamp::parse("03-14-2026 09:05"), Some(want));
        assert_eq!(Stamp::parse("2026-03-14 09:05"), Some(want));
        assert_eq!(Stamp::parse("2026-03-14T09:05:33+01:00"), Some(want));
        assert_eq!(
            Stamp::parse("2026-03-14"),
            Some(Stamp::new(2026, 3, 14, 0, 0).unwrap())
        );
        assert_eq!(Stamp::parse("'03-14-2026 09:05'"), Some(want));
    }

    #[test]
    fn unix_seconds_read_back_as_the_day_they_count() {
        // 2026-01-05 09:00:00 UTC, and a leap day.
        assert_eq!(
            Stamp::from_unix(1_767_603_600),
            Stamp::new(2026, 1, 5, 9, 0)
        );
        assert_eq!(
            Stamp::from_unix(951_782_399),
            Stamp::new(2000, 2, 28, 23, 59)
        );
        assert_eq!(Stamp::from_unix(951_782_400), Stamp::new(2000, 2, 29, 0, 0));
        assert_eq!(Stamp::from_unix(0), Stamp::new(1970, 1, 1, 0, 0));
        for days in [-719_468_i64, -1, 0, 59, 10_957, 20_458, 2_932_896] {
            let t = Stamp::from_unix(days * 86_400 + 3_600).expect("in range");
            assert_eq!(t.days_since_epoch(), days, "{t}");
            assert_eq!(t.hour, 1);
        }
        assert_eq!(Stamp::from_unix(-719_529 * 86_400), None, "before year 0");
    }

    #[test]
    fn rejects_the_malformed_template_example() {
        assert_eq!(Stamp::parse("05-06-2-2025 21:30"), None);
        assert_eq!(Stamp::parse("{ date }"), None);
        assert_eq!(Stamp::parse("2026-02-30"), None);
    }

    #[test]
    fn formats_as_bmad_writes() {
        let s = Stamp::new(2026, 11, 2, 7, 0).unwrap();
        assert_eq!(s.to_string(), "11-02-2026 07:00");
        assert_eq!(Stamp::parse(&s.to_string()), Some(s));
    }

    #[test]
    fn epoch_days() {
        assert_eq!(Stamp::new(1970, 1, 1, 0, 0).unwrap().days_since_epoch(), 0);
        assert_eq!(
            Stamp::new(2000, 3, 1, 0, 0).unwrap().days_since_epoch(),
            11_017
        );
    }
}
