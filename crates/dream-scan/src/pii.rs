//! Personal data: e-mail addresses, phone numbers (international, North American,
//! and national numbers with a leading 0 when a phone word is near) and payment card
//! numbers (valid Luhn checksum and a known issuer prefix, or any 16 digits when a
//! card word is near). A milder category: it makes a text suspicious, never an
//! instruction.
//!
//! Not personal data here: reserved example domains (`example.com`, `*.test`, …),
//! SSH remotes (`git@host:…`), versions and file names (`react@18.2.0`,
//! `logo@2x.png`), dates, IP addresses, ISBNs, Luhn-invalid numbers and the public
//! test card numbers of card networks and payment gateways (`4111 1111 1111 1111`).

use std::ops::Range;
use std::sync::LazyLock;

use regex_automata::Input;
use regex_automata::meta::Regex;

use crate::Severity;

/// A personal-data hit: rule id, severity, span in the original text.
pub(crate) type PiiHit = (&'static str, Severity, Range<usize>);

static PHONE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?:^|[^\w+])(\+\d{1,3}[ .\-]?(?:\(\d{1,4}\)|\d{1,4})(?:[ .\-]?\d{2,5}){1,5}|\(\d{3}\)[ ]?\d{3}[ .\-]\d{4}|\d{3}-\d{3}-\d{4}|\d{3}\.\d{3}\.\d{4}|01[5-7]\d{1,2}[ /\-]?\d{6,8}|\(\d{2}\)[ ]?9\d{4}[ \-]\d{4})(?:$|[^\w])",
    )
    .expect("static regex")
});

static CARD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[^\w.,])(\d(?:[ \-]?\d){12,18})(?:$|[^\w.,]|[.,](?:\s|$))")
        .expect("static regex")
});

/// A national number: a leading 0 (not `00`), then digits in groups.
static NATIONAL_PHONE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[^\w+\-./])(0[1-9]\d{0,4}(?:[ .\-]?\d{2,8}){1,4})(?:$|[^\w])")
        .expect("static regex")
});

/// Finds personal data in `text`, appending to `out`. Fullwidth forms (`＋４９`,
/// `ｍａｉｌ＠…`) and the ideographic space are read as their ASCII letters, so a
/// number written in them is found too; spans are those of the original.
pub(crate) fn scan(text: &str, out: &mut Vec<PiiHit>) {
    if text.is_ascii() || !text.chars().any(is_fullwidth) {
        scan_ascii(text, out);
        return;
    }
    // Fold to ASCII, remembering where each folded byte came from.
    let mut folded = String::with_capacity(text.len());
    let mut origin: Vec<usize> = Vec::with_capacity(text.len() + 1);
    for (i, c) in text.char_indices() {
        let f = match c as u32 {
            0xFF01..=0xFF5E => char::from_u32(c as u32 - 0xFF01 + 0x21).unwrap_or(c),
            0x3000 => ' ',
            _ => c,
        };
        let start = folded.len();
        folded.push(f);
        origin.extend(std::iter::repeat_n(i, folded.len() - start));
    }
    origin.push(text.len());
    let mut hits = Vec::new();
    scan_ascii(&folded, &mut hits);
    for (rule, severity, span) in hits {
        let start = origin[span.start];
        let end = if span.end == 0 {
            0
        } else {
            let last = origin[span.end - 1];
            last + text[last..].chars().next().map_or(0, char::len_utf8)
        };
        out.push((rule, severity, start..end));
    }
}

fn is_fullwidth(c: char) -> bool {
    matches!(c as u32, 0xFF01..=0xFF5E | 0x3000)
}

fn scan_ascii(text: &str, out: &mut Vec<PiiHit>) {
    emails(text, out);
    for cluster in digit_clusters(text) {
        let input = Input::new(text).range(cluster.clone());
        for caps in PHONE.captures_iter(input) {
            if let Some(g) = caps.get_group(1) {
                let s = &text[g.range()];
                let digits = s.bytes().filter(u8::is_ascii_digit).count();
                let plus = s.starts_with('+');
                // Ten digits (North American), or eleven in the trunk-prefixed
                // German mobile and Brazilian mobile shapes.
                if (plus && (8..=15).contains(&digits)) || (!plus && (10..=11).contains(&digits)) {
                    out.push(("phone_number", Severity::Low, g.range()));
                }
            }
        }
        let input = Input::new(text).range(cluster.clone());
        for caps in NATIONAL_PHONE.captures_iter(input) {
            if let Some(g) = caps.get_group(1)
                && is_national_phone(text, g.range())
            {
                out.push(("phone_number", Severity::Low, g.range()));
            }
        }
        let input = Input::new(text).range(cluster);
        for caps in CARD.captures_iter(input) {
            if let Some(g) = caps.get_group(1)
                && is_card(&text[g.range()], || word_near(text, g.range(), CARD_WORDS))
            {
                out.push(("payment_card", Severity::Medium, g.range()));
            }
        }
    }
}

/// Byte ranges around runs of at least seven digits joined by phone/card punctuation.
fn digit_clusters(text: &str) -> Vec<Range<usize>> {
    let b = text.as_bytes();
    let n = b.len();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(start) = crate::normalize::next_byte(b, i, |c| c.is_ascii_digit()) {
        i = start;
        let mut digits = 0;
        let mut last_digit = i;
        let mut gap = 0;
        let mut j = i;
        while j < n {
            let c = b[j];
            if c.is_ascii_digit() {
                digits += 1;
                last_digit = j;
                gap = 0;
            } else if matches!(c, b' ' | b'+' | b'(' | b')' | b'.' | b'-' | b'/') && gap < 3 {
                gap += 1;
            } else {
                break;
            }
            j += 1;
        }
        if digits >= 7 {
            let from = start.saturating_sub(3);
            let to = (last_digit + 3).min(n);
            out.push(
                crate::normalize::floor_boundary(text, from)
                    ..crate::normalize::ceil_boundary(text, to),
            );
        }
        i = j.max(i + 1);
    }
    out
}

/// Words near a number that make it a phone number (stems; `*`: the whole word).
const PHONE_WORDS: &[&str] = &[
    "call*",
    "calling",
    "ring*",
    "ringing",
    "phone",
    "telephon",
    "tel*",
    "number",
    "mobile",
    "cell*",
    "cellphone",
    "whatsapp",
    "sms*",
    "text*",
    "dial*",
    "telefon",
    "handy",
    "nummer",
    "anruf",
    "ruf*",
    "téléphon",
    "tél*",
    "portable",
    "numéro",
    "appel",
    "teléfono",
    "móvil",
    "movil",
    "celular",
    "número",
    "llama",
    "llámame",
    "telefono",
    "cellulare",
    "numero",
    "chiama",
    "telefone",
    "telemóvel",
    "ligue*",
    "ligar*",
];

/// Words near a number that make it something else: an order, an invoice, an account.
const NOT_PHONE_WORDS: &[&str] = &[
    "order",
    "invoice",
    "ticket",
    "case*",
    "tracking",
    "account",
    "acct*",
    "iban*",
    "ref*",
    "reference",
    "customer",
    "booking",
    "reservation",
    "policy",
    "serial",
    "sku*",
    "article",
    "item*",
    "bestell",
    "rechnung",
    "kunden",
    "auftrag",
    "commande",
    "facture",
    "référence",
    "pedido",
    "factura",
    "ordine",
    "fattura",
    "encomenda",
    "fatura",
    "version",
    "build*",
];

/// Words near a number that make it a payment card.
const CARD_WORDS: &[&str] = &[
    "card",
    "carta",
    "tarjeta",
    "cartão",
    "cartao",
    "karte",
    "carte",
    "cc*",
    "credit",
    "crédit",
    "kredit",
    "exp*",
    "expir",
    "scadenza",
    "vencimiento",
    "validade",
    "gültig",
    "cvv*",
    "cvc*",
];

/// Whether one of `words` occurs in the 48 bytes before `span` or the 32 after it (a
/// stem matches the start of a word, a `*` entry only the whole word).
fn word_near(text: &str, span: Range<usize>, words: &[&str]) -> bool {
    let from = crate::normalize::floor_boundary(text, span.start.saturating_sub(48));
    let to = crate::normalize::ceil_boundary(text, (span.end + 32).min(text.len()));
    let around = [&text[from..span.start], &text[span.end..to]];
    around.iter().any(|part| {
        part.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .any(|w| {
                let w = w.to_lowercase();
                words.iter().any(|k| match k.strip_suffix('*') {
                    Some(whole) => w == whole,
                    None => w.starts_with(k),
                })
            })
    })
}

/// A national number (`0612 345 897`, `06 12 34 56 78`, `030 1234567`): nine to
/// eleven digits, not part of a longer run of digit groups, a phone word near it
/// and no word that makes it an order, invoice or account number.
fn is_national_phone(text: &str, span: Range<usize>) -> bool {
    let digits = text[span.clone()]
        .bytes()
        .filter(u8::is_ascii_digit)
        .count();
    let b = text.as_bytes();
    let joined = |i: Option<usize>, j: Option<usize>| {
        matches!(i.and_then(|i| b.get(i)), Some(b' ' | b'.' | b'-'))
            && j.and_then(|j| b.get(j)).is_some_and(u8::is_ascii_digit)
    };
    let longer = joined(span.start.checked_sub(1), span.start.checked_sub(2))
        || joined(Some(span.end), Some(span.end + 1));
    (9..=11).contains(&digits)
        && !longer
        && word_near(text, span.clone(), PHONE_WORDS)
        && !word_near(text, span, NOT_PHONE_WORDS)
}

/// Test numbers that card networks and payment gateways publish (Visa, Mastercard,
/// Amex, Discover, Diners, JCB, UnionPay).
const TEST_CARDS: &[&str] = &[
    "4111111111111111",
    "4012888888881881",
    "4222222222222",
    "4242424242424242",
    "4000056655665556",
    "4000000000000002",
    "4917610000000000",
    "5555555555554444",
    "5105105105105100",
    "5200828282828210",
    "2223003122003222",
    "378282246310005",
    "371449635398431",
    "378734493671000",
    "6011111111111117",
    "6011000990139424",
    "30569309025904",
    "38520000023237",
    "3530111333300000",
    "3566002020360505",
    "6200000000000005",
];

/// A payment card number: issuer-style groups, a valid checksum, not a public test
/// number, and a known issuer prefix — or any 16 digits when `card_word_near`.
fn is_card(s: &str, card_word_near: impl FnOnce() -> bool) -> bool {
    let digits: Vec<u8> = s
        .bytes()
        .filter(u8::is_ascii_digit)
        .map(|d| d - b'0')
        .collect();
    if !(13..=19).contains(&digits.len()) {
        return false;
    }
    // Separators, when present, must cut the number into issuer-style groups.
    let groups: Vec<usize> = s.split([' ', '-']).map(str::len).collect();
    if groups.len() > 1 {
        let four =
            groups[..groups.len() - 1].iter().all(|&g| g == 4) && groups[groups.len() - 1] <= 4;
        let amex = groups == [4, 6, 5] || groups == [4, 6, 4];
        // Every digit set apart ("4 5 3 9 …"): the number spaced out to hide it.
        let spaced = groups.iter().all(|&g| g == 1);
        if !(four || amex || spaced) {
            return false;
        }
    }
    let prefix = |n: usize| digits[..n].iter().fold(0u32, |a, &d| a * 10 + u32::from(d));
    let len = digits.len();
    let issuer = match digits[0] {
        4 => matches!(len, 13 | 16 | 19),
        5 => (51..=55).contains(&prefix(2)) && len == 16,
        2 => (2221..=2720).contains(&prefix(4)) && len == 16,
        3 => {
            (matches!(prefix(2), 34 | 37) && len == 15)
                || (prefix(2) == 35 && (16..=19).contains(&len))
                || ((matches!(prefix(2), 36 | 38) || (300..=305).contains(&prefix(3)))
                    && (14..=16).contains(&len))
        }
        6 => {
            (prefix(4) == 6011
                || prefix(2) == 65
                || (644..=649).contains(&prefix(3))
                || prefix(2) == 62)
                && (16..=19).contains(&len)
        }
        _ => false,
    };
    let test = TEST_CARDS
        .iter()
        .any(|t| t.bytes().map(|c| c - b'0').eq(digits.iter().copied()));
    luhn(&digits) && !test && (issuer || (len == 16 && card_word_near()))
}

fn luhn(digits: &[u8]) -> bool {
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            let d = u32::from(d);
            if i % 2 == 1 {
                let x = d * 2;
                if x > 9 { x - 9 } else { x }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

fn is_local(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'%' | b'+' | b'-')
}

fn is_domain(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-')
}

const FILE_EXTENSIONS: &[&str] = &[
    "png", "jpg", "jpeg", "gif", "svg", "webp", "ico", "bmp", "js", "mjs", "cjs", "ts", "tsx",
    "jsx", "css", "scss", "json", "md", "txt", "rs", "py", "toml", "yaml", "yml", "lock", "html",
    "htm", "xml", "pdf", "zip", "gz", "sh", "go", "rb", "java", "kt", "swift", "cpp", "hpp",
    "wasm", "map", "woff", "woff2", "ttf",
];

fn emails(text: &str, out: &mut Vec<PiiHit>) {
    let b = text.as_bytes();
    for at in memchr::memchr_iter(b'@', b) {
        let mut ls = at;
        while ls > 0 && at - ls < 64 && is_local(b[ls - 1]) {
            ls -= 1;
        }
        let local = &text[ls..at];
        if local.is_empty()
            || local.starts_with('.')
            || local.ends_with('.')
            || local.eq_ignore_ascii_case("git")
        {
            continue;
        }
        let mut de = at + 1;
        while de < b.len() && de - at < 254 && is_domain(b[de]) {
            de += 1;
        }
        let domain = text[at + 1..de].trim_end_matches(['.', '-']);
        let end = at + 1 + domain.len();
        let labels: Vec<&str> = domain.split('.').collect();
        if labels.len() < 2 || labels.iter().any(|l| l.is_empty() || l.starts_with('-')) {
            continue;
        }
        let tld = labels[labels.len() - 1].to_ascii_lowercase();
        if !(2..=24).contains(&tld.len()) || !tld.bytes().all(|c| c.is_ascii_alphabetic()) {
            continue;
        }
        if FILE_EXTENSIONS.contains(&tld.as_str())
            || is_reserved(&domain.to_ascii_lowercase())
            || is_role_account(local)
        {
            continue;
        }
        // `user@host:path` is an SSH remote, not a mailbox.
        if b.get(end) == Some(&b':')
            && b.get(end + 1)
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'/' || *c == b'~')
        {
            continue;
        }
        out.push(("email_address", Severity::Low, ls..end));
    }
}

/// Mailboxes of a function, not a person (`support@`, `info@`, `noreply@`).
fn is_role_account(local: &str) -> bool {
    const ROLES: &[&str] = &[
        "support",
        "info",
        "contact",
        "sales",
        "admin",
        "billing",
        "noreply",
        "no-reply",
        "donotreply",
        "hello",
        "team",
        "help",
        "helpdesk",
        "office",
        "jobs",
        "careers",
        "press",
        "media",
        "security",
        "abuse",
        "postmaster",
        "webmaster",
        "hostmaster",
        "hr",
        "legal",
        "privacy",
        "feedback",
        "accounts",
        "accounting",
        "finance",
        "invoices",
        "orders",
        "service",
        "customerservice",
        "marketing",
        "newsletter",
        "notifications",
        "buchhaltung",
        "kontakt",
        "rechnung",
        "vertrieb",
        "contacto",
        "ventas",
        "soporte",
        "contatti",
        "assistenza",
        "contato",
        "suporte",
        "vendas",
        "facturation",
        "compta",
    ];
    ROLES.contains(&local.to_ascii_lowercase().as_str())
}

fn is_reserved(domain: &str) -> bool {
    matches!(
        domain,
        "example.com" | "example.net" | "example.org" | "localhost"
    ) || [
        ".example",
        ".test",
        ".invalid",
        ".localhost",
        ".example.com",
        ".example.org",
        ".example.net",
        ".local",
        ".tld",
    ]
    .iter()
    .any(|s| domain.ends_with(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(text: &str) -> Vec<&'static str> {
        let mut out = Vec::new();
        scan(text, &mut out);
        out.into_iter().map(|h| h.0).collect()
    }

    #[test]
    fn finds_emails_phones_and_cards() {
        assert_eq!(rules("mail marta.k@gmail.com now"), ["email_address"]);
        assert_eq!(rules("call +44 7700 900123 today"), ["phone_number"]);
        assert_eq!(rules("call (415) 555-0134 today"), ["phone_number"]);
        assert_eq!(rules("card 4539 5787 6362 1486 ok"), ["payment_card"]);
        assert_eq!(rules("card 4539-5787-6362-1486."), ["payment_card"]);
        assert_eq!(rules("MasterCard 5169 0743 9150 0080"), ["payment_card"]);
    }

    #[test]
    fn benign_look_alikes() {
        for t in [
            "npm install @types/node",
            "react@18.2.0 and logo@2x.png",
            "git clone git@github.com:acme/widgets.git",
            "Set EMAIL=you@example.com",
            "Version 10.0.19045.3693",
            "192.168.10.254",
            "ISBN 978-0-13-110362-7",
            "2024-03-15 to 2024-04-01",
            "Order #4111111111111112",
            "1,234,567 to 2,345,678",
            "@channel please",
            "write to support@vendor.com or buchhaltung@firma.de",
        ] {
            assert!(rules(t).is_empty(), "{t}: {:?}", rules(t));
        }
    }

    #[test]
    fn luhn_checks() {
        assert!(luhn(&[4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]));
        assert!(!luhn(&[4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2]));
    }
}
