//! Encoded payloads: base64 (standard and URL-safe), hex (contiguous or as separate
//! bytes, `79 6f 75`, `0x79, 0x6f`), lines carrying URL escapes, HTML entities or
//! `\x`/`\u` escapes, and Unicode tag characters. Candidates are decoded — bounded in
//! depth, in size per candidate and in total per scan — and the decoded text is
//! scanned again. Binary results are ignored: only text can carry an instruction.

use std::ops::Range;

/// How a candidate is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Base64,
    Hex,
    /// Hex bytes separated by spaces or commas, each optionally `0x`/`\x`-prefixed.
    HexBytes,
    Escapes,
    /// The extra encodings of `encoded_extra.rs`.
    Base32,
    Binary,
    Morse,
    Ascii85,
    Rot13,
    Reversed,
}

impl Kind {
    pub(crate) fn rule(self) -> &'static str {
        match self {
            Kind::Base64 => "encoded.base64",
            Kind::Hex | Kind::HexBytes => "encoded.hex",
            Kind::Escapes => "encoded.escapes",
            Kind::Base32 => "encoded.base32",
            Kind::Binary => "encoded.binary",
            Kind::Morse => "encoded.morse",
            Kind::Ascii85 => "encoded.ascii85",
            Kind::Rot13 => "encoded.rot13",
            Kind::Reversed => "encoded.reversed",
        }
    }
}

/// A candidate span of the original text.
#[derive(Debug)]
pub(crate) struct Candidate {
    pub range: Range<usize>,
    pub kind: Kind,
}

/// Shortest base64/hex run worth decoding.
const MIN_RUN: usize = 16;
/// Fewest separate hex bytes worth decoding.
const MIN_BYTES: usize = 8;
/// Most bytes of one candidate that are decoded.
pub(crate) const MAX_CANDIDATE: usize = 256 * 1024;

static B64: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        let c = i as u8;
        t[i] = c.is_ascii_alphanumeric() || c == b'+' || c == b'/' || c == b'-' || c == b'_';
        i += 1;
    }
    t
};

/// ASCII letters and digits, as a table (the hot loops of prose read every word).
static ALNUM: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = (i as u8).is_ascii_alphanumeric();
        i += 1;
    }
    t
};

/// Finds base64 and hex runs and lines with escapes.
pub(crate) fn candidates(text: &str) -> Vec<Candidate> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let n = b.len();
    let mut i = 0;
    // Any run of at least MIN_RUN bytes starting at or after `i` covers byte
    // `i + MIN_RUN - 1`: probe that byte and skip ahead when it cannot be one.
    while i + MIN_RUN <= n {
        let probe = i + MIN_RUN - 1;
        if !B64[b[probe] as usize] {
            i = probe + 1;
            continue;
        }
        let mut end = probe + 1;
        while end < n && B64[b[end] as usize] {
            end += 1;
        }
        let mut padded = end;
        while padded < n && padded - end < 2 && b[padded] == b'=' {
            padded += 1;
        }
        i = padded + 1;
        // A run of MIN_RUN or more holds the byte MIN_RUN before its end: where that
        // byte is not base64 (as for every word of prose), it is shorter.
        if !B64[b[end - MIN_RUN] as usize] {
            continue;
        }
        // The run starts at or after the `i` this probe was taken for.
        let mut start = probe;
        while start > probe + 1 - MIN_RUN && B64[b[start - 1] as usize] {
            start -= 1;
        }
        let run = &b[start..end];
        if run.len() < MIN_RUN {
            continue;
        }
        if run.iter().all(u8::is_ascii_hexdigit) && run.len().is_multiple_of(2) {
            out.push(Candidate {
                range: start..end,
                kind: Kind::Hex,
            });
            continue;
        }
        let upper = run.iter().any(u8::is_ascii_uppercase);
        let lower = run.iter().any(u8::is_ascii_lowercase);
        if upper && lower && run.len() % 4 != 1 {
            out.push(Candidate {
                range: start..padded,
                kind: Kind::Base64,
            });
        }
    }
    hex_bytes(text, &mut out);
    escape_lines(text, &mut out);
    crate::encoded_extra::candidates(text, &mut out);
    out
}

/// Runs of at least [`MIN_BYTES`] hex bytes separated by spaces or commas.
fn hex_bytes(text: &str, out: &mut Vec<Candidate>) {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let starts = (b[i].is_ascii_hexdigit() || b[i] == b'\\')
            && (i == 0 || !b[i - 1].is_ascii_alphanumeric());
        let Some(len) = starts.then(|| hex_byte_at(b, i)).flatten() else {
            // No hex byte starts inside a word: skip to the word's end.
            i += if ALNUM[b[i] as usize] {
                b[i..]
                    .iter()
                    .position(|&c| !ALNUM[c as usize])
                    .unwrap_or(b.len() - i)
            } else {
                1
            };
            continue;
        };
        let mut end = i + len;
        let mut count = 1;
        loop {
            let mut next = end;
            while next < b.len() && next - end < 3 && matches!(b[next], b' ' | b',') {
                next += 1;
            }
            match hex_byte_at(b, next).filter(|_| next > end) {
                Some(len) => {
                    end = next + len;
                    count += 1;
                }
                None => break,
            }
        }
        if count >= MIN_BYTES {
            out.push(Candidate {
                range: i..end,
                kind: Kind::HexBytes,
            });
        }
        i = end;
    }
}

/// The length of a whole-word hex byte (`6f`, `0x6f`, `\x6f`) starting at `i`.
fn hex_byte_at(b: &[u8], i: usize) -> Option<usize> {
    let rest = b.get(i..)?;
    let prefix = if rest.starts_with(b"0x") || rest.starts_with(b"0X") || rest.starts_with(b"\\x") {
        2
    } else {
        0
    };
    let digits = rest.get(prefix..prefix + 2)?;
    let whole = rest
        .get(prefix + 2)
        .is_none_or(|c| !c.is_ascii_alphanumeric());
    (digits.iter().all(u8::is_ascii_hexdigit) && whole).then_some(prefix + 2)
}

/// Lines holding at least three escape sequences of one of the supported kinds.
fn escape_lines(text: &str, out: &mut Vec<Candidate>) {
    let b = text.as_bytes();
    // The line of the last hit: later hits on the same line are skipped in O(1).
    let mut line_end = 0;
    for pos in memchr::memchr3_iter(b'%', b'&', b'\\', b) {
        if pos < line_end {
            continue;
        }
        let line_start = memchr::memrchr(b'\n', &b[..pos]).map_or(0, |p| p + 1);
        line_end = memchr::memchr(b'\n', &b[pos..]).map_or(b.len(), |p| pos + p);
        let line = &text[line_start..line_end];
        // Three escapes make an encoded line; inside markup one is enough
        // (`jav&#x09;ascript:`).
        let n = count_escapes(line);
        if n >= 3 || (n >= 1 && line.contains('<')) {
            out.push(Candidate {
                range: line_start..line_end,
                kind: Kind::Escapes,
            });
        }
    }
}

fn hexval(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

fn count_escapes(line: &str) -> usize {
    let b = line.as_bytes();
    let mut n = 0;
    let mut i = 0;
    while i < b.len() {
        match escape_at(b, i) {
            Some((_, len)) => {
                n += 1;
                i += len;
            }
            None => i += 1,
        }
    }
    n
}

/// The decoded bytes and encoded length of an escape starting at `i`.
fn escape_at(b: &[u8], i: usize) -> Option<(Vec<u8>, usize)> {
    match b[i] {
        b'%' if i + 2 < b.len() => {
            let v = hexval(b[i + 1])? * 16 + hexval(b[i + 2])?;
            Some((vec![v], 3))
        }
        b'\\' if i + 1 < b.len() => match b[i + 1] {
            b'x' if i + 3 < b.len() => {
                let v = hexval(b[i + 2])? * 16 + hexval(b[i + 3])?;
                Some((vec![v], 4))
            }
            b'u' if i + 2 < b.len() && b[i + 2] == b'{' => {
                let close = b[i + 3..].iter().take(7).position(|&c| c == b'}')?;
                let hex = &b[i + 3..i + 3 + close];
                let cp = u32::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
                let c = char::from_u32(cp)?;
                Some((c.to_string().into_bytes(), close + 4))
            }
            b'u' if i + 5 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 2..i + 6]).ok()?;
                let cp = u32::from_str_radix(hex, 16).ok()?;
                let c = char::from_u32(cp).unwrap_or('\u{FFFD}');
                Some((c.to_string().into_bytes(), 6))
            }
            _ => None,
        },
        b'&' => {
            let semi = b[i + 1..].iter().take(10).position(|&c| c == b';')?;
            let body = std::str::from_utf8(&b[i + 1..i + 1 + semi]).ok()?;
            let c = if let Some(num) = body.strip_prefix('#') {
                let cp = match num.strip_prefix(['x', 'X']) {
                    Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                    None => num.parse::<u32>().ok()?,
                };
                char::from_u32(cp)?
            } else {
                match body {
                    "lt" => '<',
                    "gt" => '>',
                    "amp" => '&',
                    "quot" => '"',
                    "apos" => '\'',
                    "nbsp" => ' ',
                    _ => return None,
                }
            };
            Some((c.to_string().into_bytes(), semi + 2))
        }
        _ => None,
    }
}

/// Decodes every escape in a line.
pub(crate) fn decode_escapes(line: &str) -> String {
    let b = line.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match escape_at(b, i) {
            Some((bytes, len)) => {
                out.extend_from_slice(&bytes);
                i += len;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The ASCII that a run of Unicode tag characters (U+E0020..U+E007E) carries.
pub(crate) fn decode_tags(run: &str) -> String {
    run.chars()
        .filter_map(|c| char::from_u32((c as u32).checked_sub(0xE0000)?))
        .collect()
}

/// Decodes standard or URL-safe base64, with or without padding.
pub(crate) fn decode_base64(input: &[u8]) -> Option<Vec<u8>> {
    let input = match input.iter().position(|&c| c == b'=') {
        Some(p) => {
            if input[p..].iter().any(|&c| c != b'=') {
                return None;
            }
            &input[..p]
        }
        None => input,
    };
    if input.len() % 4 == 1 {
        return None;
    }
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        })
    };
    let mut out = Vec::with_capacity(input.len() * 3 / 4);
    for chunk in input.chunks(4) {
        let mut acc = 0u32;
        for (k, &c) in chunk.iter().enumerate() {
            acc |= val(c)? << (18 - 6 * k);
        }
        let bytes = acc.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

/// Decodes an even-length hex string.
pub(crate) fn decode_hex(input: &[u8]) -> Option<Vec<u8>> {
    if !input.len().is_multiple_of(2) {
        return None;
    }
    input
        .chunks(2)
        .map(|p| Some(hexval(p[0])? * 16 + hexval(p[1])?))
        .collect()
}

/// Decoded bytes as text, if they are text: valid UTF-8, mostly printable.
pub(crate) fn as_text(bytes: Vec<u8>) -> Option<String> {
    if bytes.len() < 6 {
        return None;
    }
    let s = String::from_utf8(bytes).ok()?;
    let total = s.chars().count();
    let control = s
        .chars()
        .filter(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
        .count();
    if control * 10 > total {
        return None;
    }
    Some(s)
}

/// Decodes a candidate (at most [`MAX_CANDIDATE`] bytes of it) to text.
pub(crate) fn decode(text: &str, c: &Candidate) -> Option<String> {
    let raw = &text.as_bytes()[c.range.clone()];
    match c.kind {
        Kind::Base64 => {
            let take = raw.len().min(MAX_CANDIDATE) / 4 * 4;
            let slice = if take == raw.len() || take == 0 {
                raw
            } else {
                &raw[..take]
            };
            as_text(decode_base64(slice)?)
        }
        Kind::Hex => {
            let take = raw.len().min(MAX_CANDIDATE) / 2 * 2;
            as_text(decode_hex(&raw[..take])?)
        }
        Kind::HexBytes => {
            let end = c.range.start + raw.len().min(MAX_CANDIDATE);
            let digits: Vec<u8> = text.as_bytes()[c.range.start..end]
                .split(|&c| c == b' ' || c == b',')
                .filter_map(|t| t.get(t.len().checked_sub(2)?..))
                .filter(|d| d.iter().all(u8::is_ascii_hexdigit))
                .flatten()
                .copied()
                .collect();
            as_text(decode_hex(&digits)?)
        }
        Kind::Escapes => {
            let end = crate::normalize::floor_boundary(
                text,
                c.range.start + raw.len().min(MAX_CANDIDATE),
            );
            let decoded = decode_escapes(&text[c.range.start..end]);
            (decoded != text[c.range.start..end]).then_some(decoded)
        }
        kind => {
            let end = crate::normalize::floor_boundary(
                text,
                c.range.start + raw.len().min(MAX_CANDIDATE),
            );
            crate::encoded_extra::decode(&text[c.range.start..end], kind)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips() {
        assert_eq!(decode_base64(b"aGVsbG8gd29ybGQ=").unwrap(), b"hello world");
        assert_eq!(decode_base64(b"aGVsbG8gd29ybGQ").unwrap(), b"hello world");
        assert_eq!(decode_base64(b"-_-_").unwrap(), vec![0xfb, 0xff, 0xbf]);
        assert!(decode_base64(b"abcde").is_none());
        assert!(decode_base64(b"ab=c").is_none());
    }

    #[test]
    fn escapes_decode() {
        assert_eq!(decode_escapes("%69%67%6E ore"), "ign ore");
        assert_eq!(decode_escapes("&#105;&#x67;&lt;b&gt;"), "ig<b>");
        assert_eq!(decode_escapes(r"\x69\u0067\u{6e}"), "ign");
        assert_eq!(count_escapes("100% sure & more"), 0);
    }

    #[test]
    fn candidates_split_and_classify() {
        let t = "id 9f86d081884c7d659a2feaa0 and aGVsbG8gd29ybGQgaGVsbG8= end";
        let c = candidates(t);
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].kind, Kind::Hex);
        assert_eq!(c[1].kind, Kind::Base64);
        assert_eq!(&t[c[1].range.clone()], "aGVsbG8gd29ybGQgaGVsbG8=");
        assert_eq!(decode(t, &c[1]).unwrap(), "hello world hello");
    }

    #[test]
    fn a_run_is_a_candidate_from_min_run_bytes_wherever_it_stands() {
        let run = |len: usize| "xY".repeat(len).chars().take(len).collect::<String>();
        for len in [MIN_RUN - 1, MIN_RUN, MIN_RUN + 1, 3 * MIN_RUN + 2] {
            for (before, after) in [("", ""), ("see ", " now"), ("a b c d e ", "=="), ("x:", "")] {
                let text = format!("{before}{}{after}", run(len));
                let found: Vec<&str> = candidates(&text)
                    .iter()
                    .filter(|c| c.kind == Kind::Base64)
                    .map(|c| text[c.range.clone()].trim_end_matches('='))
                    .collect();
                let expected: Vec<String> = if len >= MIN_RUN && len % 4 != 1 {
                    vec![run(len)]
                } else {
                    Vec::new()
                };
                assert_eq!(found, expected, "{text:?}");
            }
        }
    }

    #[test]
    fn binary_is_not_text() {
        assert!(as_text(vec![0, 1, 2, 3, 4, 5, 6, 7]).is_none());
        assert!(as_text(vec![0xff; 12]).is_none());
        assert_eq!(as_text(b"plain words".to_vec()).unwrap(), "plain words");
    }
}
