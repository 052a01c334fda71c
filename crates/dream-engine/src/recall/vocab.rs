//! The vocabulary: index terms interned as dense ids, and a per-language cache
//! from a word to its term (or to "stop word"), so each distinct word is stemmed
//! once. Append-only and shared by every index a `Recall` builds, so the term ids
//! held by cached analyses stay valid across rebuilds. It grows with the distinct
//! words ever indexed, not with the number of records.

use std::collections::HashMap;

use super::tokenize::{self, Language};

/// Interned index terms.
#[derive(Debug, Default)]
pub(crate) struct Vocabulary {
    ids: HashMap<Box<str>, u32>,
    names: Vec<Box<str>>,
    /// Per language (in `Language::ALL` order): word → term id, `None` for a stop word.
    words: Vec<HashMap<Box<str>, Option<u32>>>,
}

impl Vocabulary {
    /// The id of `term`, interning it.
    pub fn intern(&mut self, term: &str) -> u32 {
        if let Some(id) = self.ids.get(term) {
            return *id;
        }
        let id = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        self.names.push(Box::from(term));
        self.ids.insert(Box::from(term), id);
        id
    }

    /// The term of `word` in `language` (stemmed and interned), or `None` for one
    /// of its stop words.
    pub fn term(&mut self, word: &str, language: Language) -> Option<u32> {
        let slot = Language::ALL
            .iter()
            .position(|l| *l == language)
            .unwrap_or(0);
        if self.words.len() < Language::ALL.len() {
            self.words.resize_with(Language::ALL.len(), HashMap::new);
        }
        if let Some(cached) = self.words[slot].get(word) {
            return *cached;
        }
        let term = if tokenize::is_stop_word(word, language) {
            None
        } else {
            Some(self.intern(&tokenize::stem(word, language)))
        };
        self.words[slot].insert(Box::from(word), term);
        term
    }

    /// The id of an interned term.
    pub fn lookup(&self, term: &str) -> Option<u32> {
        self.ids.get(term).copied()
    }

    /// Number of interned terms.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Up to `cap` term ids whose term starts with `prefix` (a linear scan, used
    /// only by the broader retry).
    pub fn with_prefix(&self, prefix: &str, cap: usize) -> Vec<u32> {
        self.names
            .iter()
            .enumerate()
            .filter(|(_, name)| name.starts_with(prefix))
            .take(cap)
            .filter_map(|(i, _)| u32::try_from(i).ok())
            .collect()
    }
}
