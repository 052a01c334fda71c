//! Unicode-aware tokenisation, language detection, stop words and stemming.
//!
//! Text is split into words on Unicode (UAX #29) word boundaries, normalised to
//! NFKC and lower-cased; words are further split on `_`, `.` and apostrophes, so
//! `snake_case`, `v1.config` and `l'équipe` yield their parts. Words longer than
//! [`MAX_WORD_BYTES`] (hashes, base64 blobs) are dropped: nobody types them as a query.
//!
//! A text's language is the enabled language with the most stop-word hits among its
//! words (ties go to the earlier language in [`Language::ALL`]); with no hit at all
//! it is the configured default. Stop words of that language are removed and every
//! other word is reduced by that language's Snowball stemmer (`rust-stemmers`).
//! Stop-word lists are NLTK's (`stop-words` crate).

use std::collections::HashMap;
use std::sync::LazyLock;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfkc_quick};
use unicode_segmentation::UnicodeSegmentation;

/// Longest word kept, in bytes.
pub const MAX_WORD_BYTES: usize = 64;

/// A language with both a stemmer and a stop-word list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Language {
    /// English.
    English,
    /// German.
    German,
    /// French.
    French,
    /// Spanish.
    Spanish,
    /// Italian.
    Italian,
    /// Portuguese.
    Portuguese,
    /// Dutch.
    Dutch,
    /// Swedish.
    Swedish,
    /// Danish.
    Danish,
    /// Norwegian.
    Norwegian,
    /// Finnish.
    Finnish,
    /// Russian.
    Russian,
    /// Hungarian.
    Hungarian,
    /// Romanian.
    Romanian,
    /// Greek.
    Greek,
}

impl Language {
    /// Every supported language, in tie-breaking order.
    pub const ALL: [Language; 15] = [
        Self::English,
        Self::German,
        Self::French,
        Self::Spanish,
        Self::Italian,
        Self::Portuguese,
        Self::Dutch,
        Self::Swedish,
        Self::Danish,
        Self::Norwegian,
        Self::Finnish,
        Self::Russian,
        Self::Hungarian,
        Self::Romanian,
        Self::Greek,
    ];

    /// The ISO 639-1 code.
    pub fn code(self) -> &'static str {
        match self {
            Self::English => "en",
            Self::German => "de",
            Self::French => "fr",
            Self::Spanish => "es",
            Self::Italian => "it",
            Self::Portuguese => "pt",
            Self::Dutch => "nl",
            Self::Swedish => "sv",
            Self::Danish => "da",
            Self::Norwegian => "no",
            Self::Finnish => "fi",
            Self::Russian => "ru",
            Self::Hungarian => "hu",
            Self::Romanian => "ro",
            Self::Greek => "el",
        }
    }

    fn algorithm(self) -> Algorithm {
        match self {
            Self::English => Algorithm::English,
            Self::German => Algorithm::German,
            Self::French => Algorithm::French,
            Self::Spanish => Algorithm::Spanish,
            Self::Italian => Algorithm::Italian,
            Self::Portuguese => Algorithm::Portuguese,
            Self::Dutch => Algorithm::Dutch,
            Self::Swedish => Algorithm::Swedish,
            Self::Danish => Algorithm::Danish,
            Self::Norwegian => Algorithm::Norwegian,
            Self::Finnish => Algorithm::Finnish,
            Self::Russian => Algorithm::Russian,
            Self::Hungarian => Algorithm::Hungarian,
            Self::Romanian => Algorithm::Romanian,
            Self::Greek => Algorithm::Greek,
        }
    }

    fn index(self) -> usize {
        Self::ALL.iter().position(|l| *l == self).unwrap_or(0)
    }

    /// This language's bit in a [`LanguageSet`].
    pub fn bit(self) -> u16 {
        1 << self.index()
    }
}

/// A set of languages as a bit mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LanguageSet(pub u16);

impl LanguageSet {
    /// Every supported language.
    pub fn all() -> Self {
        LanguageSet(Language::ALL.iter().fold(0, |m, l| m | l.bit()))
    }

    /// The set holding exactly `languages`.
    pub fn of(languages: &[Language]) -> Self {
        LanguageSet(languages.iter().fold(0, |m, l| m | l.bit()))
    }

    /// Whether `language` is in the set.
    pub fn contains(self, language: Language) -> bool {
        self.0 & language.bit() != 0
    }

    /// Adds `language`.
    pub fn insert(&mut self, language: Language) {
        self.0 |= language.bit();
    }

    /// The languages in the set, in [`Language::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Language> {
        Language::ALL.into_iter().filter(move |l| self.contains(*l))
    }
}

struct Tables {
    stemmers: Vec<Stemmer>,
    /// Word → the languages whose stop-word list holds it.
    stop: HashMap<String, u16>,
}

static TABLES: LazyLock<Tables> = LazyLock::new(|| {
    let stemmers = Language::ALL
        .iter()
        .map(|l| Stemmer::create(l.algorithm()))
        .collect();
    let mut stop: HashMap<String, u16> = HashMap::new();
    for language in Language::ALL {
        for word in stop_words::lookup(language.code()).unwrap_or(&[]) {
            let word: String = word.nfkc().flat_map(char::to_lowercase).collect();
            *stop.entry(word).or_default() |= language.bit();
        }
    }
    Tables { stemmers, stop }
});

/// Calls `f` with each normalised, lower-cased word of `text`.
pub(crate) fn for_each_word(text: &str, mut f: impl FnMut(&str)) {
    let normalized;
    let text = if is_nfkc_quick(text.chars()) == IsNormalized::Yes {
        text
    } else {
        normalized = text.nfkc().collect::<String>();
        &normalized
    };
    let mut lower = String::new();
    for word in text.unicode_words() {
        for part in word.split(['_', '.', '\'', '\u{2019}']) {
            if part.is_empty() || part.len() > MAX_WORD_BYTES {
                continue;
            }
            if part.bytes().any(|b| b.is_ascii_uppercase() || b >= 0x80) {
                lower.clear();
                lower.extend(part.chars().flat_map(char::to_lowercase));
                f(&lower);
            } else {
                f(part);
            }
        }
    }
}

/// Splits `text` into normalised, lower-cased words, appending them to `out`.
pub fn words(text: &str, out: &mut Vec<String>) {
    for_each_word(text, |w| out.push(w.to_owned()));
}

/// The languages whose stop-word list holds `word`, as a [`LanguageSet`] mask.
pub(crate) fn stop_mask(word: &str) -> u16 {
    TABLES.stop.get(word).copied().unwrap_or(0)
}

/// Whether `word` is a stop word of `language`.
pub fn is_stop_word(word: &str, language: Language) -> bool {
    stop_mask(word) & language.bit() != 0
}

/// Words that say what the asker wants rather than what about (English, beyond
/// the stop-word list): kept in a query, at a lower weight.
const INTENT_WORDS: &[&str] = &[
    "tell",
    "remember",
    "recall",
    "remind",
    "know",
    "use",
    "uses",
    "used",
    "using",
    "anything",
    "something",
    "please",
    "way",
    "ways",
    "thing",
    "things",
    "think",
    "say",
    "said",
    "us",
    "again",
    "ok",
    "okay",
    "hey",
    "supposed",
    "usually",
    "ever",
    "also",
    "actually",
    "guess",
    "someone",
    "need",
    "want",
    "like",
    "get",
    "got",
];

/// Whether `word` (lower-cased) is an intent word of a query.
pub(crate) fn is_intent_word(word: &str) -> bool {
    INTENT_WORDS.contains(&word)
}

/// Counts stop-word hits per language, to detect a text's language.
#[derive(Debug, Clone, Default)]
pub(crate) struct Detector {
    hits: [u32; Language::ALL.len()],
    any: bool,
}

impl Detector {
    /// Counts one word.
    pub fn add(&mut self, word: &str) {
        let mask = stop_mask(word);
        if mask == 0 {
            return;
        }
        self.any = true;
        for (i, hit) in self.hits.iter_mut().enumerate() {
            if mask & (1 << i) != 0 {
                *hit += 1;
            }
        }
    }

    /// The enabled language with the most hits; `default` when none hits
    /// (ties go to `default`, then to the earlier language in [`Language::ALL`]).
    pub fn language(&self, enabled: LanguageSet, default: Language) -> Language {
        if !self.any {
            return default;
        }
        let mut best = default;
        let mut best_hits = self.hits[default.index()];
        for language in enabled.iter() {
            if self.hits[language.index()] > best_hits {
                best = language;
                best_hits = self.hits[language.index()];
            }
        }
        best
    }
}

/// The language of a text, from its words: the enabled language with the most
/// stop-word hits, `default` when none hits.
pub fn detect(words: &[String], enabled: LanguageSet, default: Language) -> Language {
    let mut detector = Detector::default();
    for word in words {
        detector.add(word);
    }
    detector.language(enabled, default)
}

/// `word` reduced by `language`'s stemmer. Words holding a digit are kept whole.
pub fn stem(word: &str, language: Language) -> String {
    if word.bytes().any(|b| b.is_ascii_digit()) {
        return word.to_owned();
    }
    TABLES.stemmers[language.index()].stem(word).into_owned()
}

/// Index terms of one text in `language`: stop words removed, the rest stemmed.
pub fn terms(words: &[String], language: Language, out: &mut Vec<String>) {
    for word in words {
        if !is_stop_word(word, language) {
            out.push(stem(word, language));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        words(text, &mut out);
        out
    }

    #[test]
    fn splits_on_unicode_word_boundaries() {
        assert_eq!(
            w("Hello, WORLD! snake_case l'équipe Ｆｕｌｌwidth"),
            [
                "hello",
                "world",
                "snake",
                "case",
                "l",
                "équipe",
                "fullwidth"
            ]
        );
        assert_eq!(w("Grüße aus Köln"), ["grüße", "aus", "köln"]);
        assert_eq!(w("Привет мир"), ["привет", "мир"]);
        assert!(w(&"x".repeat(65)).is_empty());
        assert!(w("  ,;: -- ").is_empty());
    }

    #[test]
    fn detects_languages_from_stop_words() {
        let all = LanguageSet::all();
        let en = Language::English;
        assert_eq!(detect(&w("we use it for the tests"), all, en), en);
        assert_eq!(
            detect(&w("wir benutzen das für die Tests und nicht Jest"), all, en),
            Language::German
        );
        assert_eq!(
            detect(&w("nous utilisons le moteur pour les tests"), all, en),
            Language::French
        );
        assert_eq!(detect(&w("Vitest Jest"), all, en), en);
        assert_eq!(
            detect(&w("wir benutzen das"), LanguageSet::of(&[en]), en),
            en
        );
    }

    #[test]
    fn stems_and_drops_stop_words_per_language() {
        let mut out = Vec::new();
        terms(&w("the running tests"), Language::English, &mut out);
        assert_eq!(out, ["run", "test"]);
        out.clear();
        terms(&w("die Häuser und die Katzen"), Language::German, &mut out);
        assert_eq!(out, ["haus", "katz"]);
        assert_eq!(stem("v2", Language::English), "v2");
    }
}
