//! Time in a query: the first expression naming days (`today`, `yesterday`,
//! `this week`, `last month`, `in March`, `March 2026`, `on 2026-03-14`) read as a
//! span of days against the clock, and whether a memory belongs to that span —
//! created or updated in it, or an absolute date in its text (the dates the
//! consolidator writes for "tomorrow" or "last week") inside it.
//!
//! Weeks start on Monday; "this week" and "this month" end today; a month
//! without a year is its latest occurrence not after today. A month name counts
//! only after `in`, `during`, `of` or `on`, or before a year (`may` and `march`
//! are also verbs).

use std::ops::Range;
use std::sync::LazyLock;

use chrono::{Datelike, Duration, NaiveDate};
use regex::Regex;

use super::analyze::Valid;

/// Days from `first` to `last`, both included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub first: NaiveDate,
    pub last: NaiveDate,
}

impl Span {
    fn holds(&self, day: NaiveDate) -> bool {
        self.first <= day && day <= self.last
    }
}

/// A time expression found in a query: the days it names, and the byte range
/// of its words.
type TimeExpression = (Span, Range<usize>);

/// The English months, in order.
pub(crate) const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// An ISO date as the consolidator writes it.
static ISO_DATE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(\d{4})-(\d{2})-(\d{2})\b").expect("static regex"));

/// The days named by the first time expression of `query`, read against `today`.
pub(crate) fn find(query: &str, today: NaiveDate) -> Option<Span> {
    expression(query, today).map(|(span, _)| span)
}

fn expression(query: &str, today: NaiveDate) -> Option<TimeExpression> {
    let words: Vec<(Range<usize>, String)> = query
        .split_inclusive(|c: char| !(c.is_alphanumeric() || c == '-'))
        .scan(0usize, |at, piece| {
            let start = *at;
            *at += piece.len();
            let word = piece.trim_end_matches(|c: char| !(c.is_alphanumeric() || c == '-'));
            Some((start..start + word.len(), word.to_lowercase()))
        })
        .filter(|(_, w)| !w.is_empty())
        .collect();
    let word = |i: usize| words.get(i).map_or("", |(_, w)| w.as_str());
    let from = |i: usize, j: usize| words[i].0.start..words[j].0.end;
    for i in 0..words.len() {
        let w = word(i);
        let before = i.checked_sub(1).map_or("", word);
        let opener = i > 0 && matches!(before, "in" | "during" | "of" | "on");
        let start = if opener { i - 1 } else { i };
        if let Some(day) = iso_day(w) {
            return Some((
                Span {
                    first: day,
                    last: day,
                },
                from(start, i),
            ));
        }
        let span = match w {
            "today" => Some((today, today)),
            "yesterday" => Some((today - Duration::days(1), today - Duration::days(1))),
            _ => None,
        };
        if let Some((first, last)) = span {
            return Some((Span { first, last }, from(i, i)));
        }
        if matches!(w, "this" | "last") {
            let last_one = w == "last";
            let span = match word(i + 1) {
                "week" => {
                    let monday =
                        today - Duration::days(i64::from(today.weekday().num_days_from_monday()));
                    Some(if last_one {
                        (monday - Duration::days(7), monday - Duration::days(1))
                    } else {
                        (monday, today)
                    })
                }
                "month" => {
                    let first = today.with_day(1)?;
                    Some(if last_one {
                        let end = first - Duration::days(1);
                        (end.with_day(1)?, end)
                    } else {
                        (first, today)
                    })
                }
                "year" => {
                    let year = today.year() - i32::from(last_one);
                    let first = NaiveDate::from_ymd_opt(year, 1, 1)?;
                    Some(if last_one {
                        (first, NaiveDate::from_ymd_opt(year, 12, 31)?)
                    } else {
                        (first, today)
                    })
                }
                _ => None,
            };
            if let Some((first, last)) = span {
                return Some((Span { first, last }, from(i, i + 1)));
            }
        }
        if let Some(month) = MONTHS.iter().position(|m| *m == w) {
            let month = month as u32 + 1;
            let given = word(i + 1)
                .parse::<i32>()
                .ok()
                .filter(|y| (1900..=9999).contains(y));
            if !opener && given.is_none() {
                continue;
            }
            let year = given.unwrap_or(if month <= today.month() {
                today.year()
            } else {
                today.year() - 1
            });
            let first = NaiveDate::from_ymd_opt(year, month, 1)?;
            let next = if month == 12 {
                NaiveDate::from_ymd_opt(year + 1, 1, 1)?
            } else {
                NaiveDate::from_ymd_opt(year, month + 1, 1)?
            };
            let end = if given.is_some() { i + 1 } else { i };
            return Some((
                Span {
                    first,
                    last: next - Duration::days(1),
                },
                from(start, end),
            ));
        }
    }
    None
}

fn iso_day(word: &str) -> Option<NaiveDate> {
    let caps = ISO_DATE.captures(word)?;
    (caps.get(0)?.as_str() == word).then_some(())?;
    NaiveDate::from_ymd_opt(
        caps[1].parse().ok()?,
        caps[2].parse().ok()?,
        caps[3].parse().ok()?,
    )
}

/// The days the ISO dates of `texts` name, sorted, each once.
pub(crate) fn days_named(texts: [&str; 3]) -> Box<[NaiveDate]> {
    let mut days: Vec<NaiveDate> = texts
        .into_iter()
        .flat_map(|text| ISO_DATE.captures_iter(text))
        .filter_map(|c| {
            NaiveDate::from_ymd_opt(c[1].parse().ok()?, c[2].parse().ok()?, c[3].parse().ok()?)
        })
        .collect();
    days.sort_unstable();
    days.dedup();
    days.into_boxed_slice()
}

/// Whether a valid record was created or updated in `span`, or its name,
/// description or content holds an ISO date inside it ([`days_named`]).
pub(crate) fn dated_in(valid: &Valid, span: &Span) -> bool {
    span.holds(valid.created_at.date_naive())
        || span.holds(valid.updated_at.date_naive())
        || valid.days.iter().any(|d| span.holds(*d))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    fn span(query: &str, today: &str) -> Option<(String, String, String)> {
        expression(query, day(today)).map(|(span, words)| {
            (
                span.first.to_string(),
                span.last.to_string(),
                query[words].to_owned(),
            )
        })
    }

    fn s(a: &str, b: &str, w: &str) -> Option<(String, String, String)> {
        Some((a.to_owned(), b.to_owned(), w.to_owned()))
    }

    #[test]
    fn expressions_become_spans_of_days() {
        // 2026-03-18 is a Wednesday.
        let today = "2026-03-18";
        assert_eq!(
            span("what did we decide yesterday", today),
            s("2026-03-17", "2026-03-17", "yesterday")
        );
        assert_eq!(
            span("Today's deploy", today),
            s("2026-03-18", "2026-03-18", "Today")
        );
        assert_eq!(
            span("notes from last week", today),
            s("2026-03-09", "2026-03-15", "last week")
        );
        assert_eq!(
            span("this week's plan", today),
            s("2026-03-16", "2026-03-18", "this week")
        );
        assert_eq!(
            span("last month", today),
            s("2026-02-01", "2026-02-28", "last month")
        );
        assert_eq!(
            span("this month", today),
            s("2026-03-01", "2026-03-18", "this month")
        );
        assert_eq!(
            span("last year", today),
            s("2025-01-01", "2025-12-31", "last year")
        );
        assert_eq!(
            span("what shipped in March", today),
            s("2026-03-01", "2026-03-31", "in March")
        );
        // A month after this one is last year's.
        assert_eq!(
            span("the offsite in May", today),
            s("2025-05-01", "2025-05-31", "in May")
        );
        assert_eq!(
            span("December 2024 outage", today),
            s("2024-12-01", "2024-12-31", "December 2024")
        );
        assert_eq!(
            span("released on 2026-03-14?", today),
            s("2026-03-14", "2026-03-14", "on 2026-03-14")
        );
        assert_eq!(span("2026-02-30 is no day", today), None);
        // Verbs and other words are not months.
        assert_eq!(span("may I deploy", today), None);
        assert_eq!(span("march the tests forward", today), None);
        assert_eq!(span("the last weekday", today), None);
        assert_eq!(span("", today), None);
        // Odd input never panics and names no day it cannot be.
        assert_eq!(span("ünïcödé — im März, 東京 in", today), None);
        assert_eq!(
            span("in december 9999", today),
            s("9999-12-01", "9999-12-31", "in december 9999")
        );
        assert_eq!(
            span("in may 99999", today),
            s("2025-05-01", "2025-05-31", "in may")
        );
        assert_eq!(
            span("on 0000-01-01", today),
            s("0000-01-01", "0000-01-01", "on 0000-01-01")
        );
    }

    #[test]
    fn a_memory_is_dated_by_its_times_and_the_dates_in_its_text() {
        use chrono::{TimeZone, Utc};
        use dream_core::{Memory, MemoryId, MemoryKind};
        let at = Utc.with_ymd_and_hms(2026, 1, 5, 9, 0, 0).unwrap();
        let mut m = Memory::new(
            MemoryId::new("m").unwrap(),
            MemoryKind::Project,
            "Freeze",
            "code freeze",
            "Code freeze on 2026-03-14 before the release.",
            at,
        );
        let march = Span {
            first: day("2026-03-01"),
            last: day("2026-03-31"),
        };
        let january = Span {
            first: day("2026-01-01"),
            last: day("2026-01-31"),
        };
        let april = Span {
            first: day("2026-04-01"),
            last: day("2026-04-30"),
        };
        let dated = |m: &Memory, span: &Span| dated_in(&Valid::of(m, None, true), span);
        assert!(dated(&m, &march), "the date in its text");
        assert!(dated(&m, &january), "its creation");
        assert!(!dated(&m, &april));
        m.updated_at = Utc.with_ymd_and_hms(2026, 4, 2, 9, 0, 0).unwrap();
        assert!(dated(&m, &april), "its update");
        m.content = "Code freeze on 2026-13-40.".into();
        assert!(!dated(&m, &march), "not a day");
        m.description = "from 2026-03-20 to 2026-04-02, again 2026-03-20".into();
        assert_eq!(
            days_of(&m),
            [day("2026-03-20"), day("2026-04-02")],
            "sorted, each once"
        );
    }

    fn days_of(m: &dream_core::Memory) -> Vec<NaiveDate> {
        days_named([&m.name, &m.description, &m.content]).into_vec()
    }
}
