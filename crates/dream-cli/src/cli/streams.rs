//! The standard streams. Input: a named file, or standard input when it is piped
//! (a terminal is refused, where a command would wait silently). Output for
//! people: control characters from stored content escaped, colour only on a
//! terminal, columns aligned. Output for programs is JSON and goes through serde.
//! Both reach standard output through [`write_stdout`] alone.

use std::borrow::Cow;
use std::fmt;
use std::io::{IsTerminal, Write as _};

use clap::{Args, ValueEnum};
use serde::Serialize;

use super::CliError;

/// How a command prints what it reports: one spelling, `--format`, for every
/// command that prints records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum Format {
    /// Tables and sentences for people (the default).
    #[default]
    Text,
    /// One JSON document: an array for a list, an object for one result.
    Json,
    /// JSON lines: a list's items one a line; one result on one line.
    Jsonl,
}

/// `--format text|json|jsonl`, with `--json` as the short way to say `--format json`
/// (also taken after a command's own subcommand: `dream quarantine list --json`).
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct FormatArg {
    /// Output: text (for people), json (one document) or jsonl (one JSON value a line).
    #[arg(
        long,
        global = true,
        value_enum,
        value_name = "FORMAT",
        default_value_t
    )]
    format: Format,
    /// The same as --format json.
    #[arg(long, global = true, conflicts_with = "format")]
    json: bool,
}

impl FormatArg {
    /// The format asked for.
    pub fn get(self) -> Format {
        if self.json { Format::Json } else { self.format }
    }

    /// Whether people's text was asked for.
    pub fn is_text(self) -> bool {
        self.get() == Format::Text
    }

    /// Prints a list: a JSON array, one JSON line per item, or `text()` for people.
    pub fn list<T: Serialize>(
        self,
        items: &[T],
        text: impl FnOnce() -> Result<(), CliError>,
    ) -> Result<(), CliError> {
        match self.get() {
            Format::Text => text(),
            Format::Json => print_json(&items),
            Format::Jsonl => items.iter().try_for_each(print_json),
        }
    }

    /// Prints one result: one line of JSON (for json and jsonl alike), or `text()`.
    pub fn one<T: Serialize>(
        self,
        value: &T,
        text: impl FnOnce() -> Result<(), CliError>,
    ) -> Result<(), CliError> {
        match self.get() {
            Format::Text => text(),
            Format::Json | Format::Jsonl => print_json(value),
        }
    }
}

/// Escapes control and invisible characters (bidi, zero-width, tag characters) so
/// stored content can neither move the cursor, recolour the terminal nor hide text
/// (seed 002's T4).
pub fn escape(text: &str) -> Cow<'_, str> {
    dream::core::display::escape_for_display(text, false)
}

/// A count and its noun, singular for one: `1 session`, `3 sessions`;
/// `noun` is the singular, and a plural other than `noun` + `s` follows a `|`
/// (`"memory|memories"`).
pub fn count(n: usize, noun: &str) -> String {
    let (one, many) = match noun.split_once('|') {
        Some((one, many)) => (one, many.to_owned()),
        None => (noun, format!("{noun}s")),
    };
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {many}")
    }
}

/// Escapes like [`escape`] but keeps newlines and tabs, for multi-line bodies.
pub fn escape_body(text: &str) -> Cow<'_, str> {
    dream::core::display::escape_for_display(text, true)
}

/// Writes to standard output (see [`out!`]); a closed stdout is
/// [`CliError::closed_stdout`].
pub fn write_stdout(args: fmt::Arguments<'_>) -> Result<(), CliError> {
    std::io::stdout()
        .lock()
        .write_fmt(args)
        .map_err(CliError::stdout)
}

/// Flushes standard output; a closed stdout is [`CliError::closed_stdout`].
pub fn flush_stdout() -> Result<(), CliError> {
    std::io::stdout().flush().map_err(CliError::stdout)
}

/// Prints a value as one line of JSON.
pub fn print_json<T: serde::Serialize>(value: &T) -> Result<(), CliError> {
    outln!("{}", serde_json::to_string(value)?)
}

/// Whether a stream that is (or is not) a terminal may be coloured: only a
/// terminal, and never with a non-empty `NO_COLOR` (https://no-color.org).
pub fn colour_allowed(is_terminal: bool) -> bool {
    is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Styles for people's output; plain unless stdout is a terminal and NO_COLOR is unset.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    color: bool,
}

impl Style {
    /// Detects whether stdout is a colour terminal.
    pub fn detect() -> Self {
        Style {
            color: colour_allowed(std::io::stdout().is_terminal()),
        }
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    /// Bold text.
    pub fn bold(self, text: &str) -> String {
        self.paint("1", text)
    }

    /// Green text (used, clean).
    pub fn good(self, text: &str) -> String {
        self.paint("32", text)
    }

    /// Yellow text (held, ignored, suspicious).
    pub fn warn(self, text: &str) -> String {
        self.paint("33", text)
    }

    /// Red text (quarantined, rejected, secrets).
    pub fn bad(self, text: &str) -> String {
        self.paint("31", text)
    }
}

/// Renders rows as aligned columns (cells already escaped). The last column is not padded.
pub fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        for (c, cell) in row.iter().enumerate() {
            out.push_str(cell);
            if c + 1 < row.len() {
                out.extend(std::iter::repeat_n(
                    ' ',
                    widths[c] - cell.chars().count() + 2,
                ));
            }
        }
        out.push('\n');
    }
    out
}

/// Refuses to read `what` from standard input when it is a terminal, where the
/// command would wait silently; `how` says how to provide it instead.
pub fn stdin_not_terminal(stdin_is_terminal: bool, what: &str, how: &str) -> Result<(), CliError> {
    if stdin_is_terminal {
        return Err(CliError::usage(format!(
            "expected {what} on standard input, but it is a terminal: {how}"
        )));
    }
    Ok(())
}

/// Reads standard input for `what`, refusing a terminal (see [`stdin_not_terminal`]).
pub fn read_piped_stdin(what: &str, how: &str) -> Result<String, CliError> {
    stdin_not_terminal(std::io::stdin().is_terminal(), what, how)?;
    read_input(None)
}

/// Reads a named file, or standard input for `-` or no file.
pub fn read_input(file: Option<&std::path::Path>) -> Result<String, CliError> {
    use std::io::Read;
    match file {
        Some(path) if path.as_os_str() != "-" => std::fs::read_to_string(path).map_err(|e| {
            CliError::usage(format!(
                "cannot read {}: {e}",
                escape(&path.display().to_string())
            ))
        }),
        _ => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| CliError::usage(format!("cannot read standard input: {e}")))?;
            Ok(text)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdin_is_read_only_when_it_is_not_a_terminal() {
        assert!(stdin_not_terminal(false, "a session", "give a file").is_ok());
        let refused = stdin_not_terminal(true, "a session", "give a file (dream log FILE)")
            .expect_err("a terminal is refused");
        assert_eq!(
            refused.to_string(),
            "expected a session on standard input, but it is a terminal: give a file (dream log FILE)"
        );
        assert!(!refused.closed_stdout);
    }

    #[test]
    fn escapes_terminal_controls() {
        assert_eq!(escape("plain text é 日本"), "plain text é 日本");
        assert_eq!(escape("a\x1b[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(escape("line\nbreak"), "line\\u{a}break");
        assert_eq!(escape("rtl\u{202E}txt"), "rtl\\u{202e}txt");
        assert_eq!(escape_body("keep\nlines\x07"), "keep\nlines\\u{7}");
    }

    #[test]
    fn aligns_columns() {
        let rows = vec![
            vec!["a".to_owned(), "bb".to_owned(), "c".to_owned()],
            vec!["ddd".to_owned(), "e".to_owned(), "f".to_owned()],
        ];
        assert_eq!(table(&rows), "a    bb  c\nddd  e   f\n");
    }
}
