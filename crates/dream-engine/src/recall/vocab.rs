//! The vocabulary: index terms interned as dense ids, and a per-language cache
//! from a word to its term (or to "stop word"), so each distinct word is stemmed
//! once. Append-only and shared by every index a `Recall` builds, so the term ids
//! held by cached analyses stay valid across rebuilds. It grows with the distinct
//! words ever indexed, not with the number of records.
//!
//! Sub-words: the vocabulary also keeps a character-trigram index over its own
//! terms (boundary-padded), extended by [`Vocabulary::index_grams`] when an index is
//! built. [`Vocabulary::similar`] uses it to find, for one query word, the indexed
//! terms that hold it or that it holds (`tests` ↔ `vitest`, `postgresql` ↔
//! `postgres`, `darkmode` ↔ `dark`, `mode`) and those one or two edits away
//! (typos). It grows with the vocabulary, never with the number of records.

use std::collections::HashMap;

use super::tokenize::{self, Language};
use super::wire::{Reader, Writer};

/// Interned index terms.
#[derive(Debug, Default)]
pub(crate) struct Vocabulary {
    ids: HashMap<Box<str>, u32>,
    names: Vec<Box<str>>,
    /// Per language (in `Language::ALL` order): word → term id, `None` for a stop word.
    words: Vec<HashMap<Box<str>, Option<u32>>>,
    /// Every surface form seen (the words as written, and the terms themselves)
    /// with its term: what sub-words are matched against.
    surfaces: Vec<(Box<str>, u32)>,
    /// Surface form → its index in `surfaces`.
    surface_ids: HashMap<Box<str>, u32>,
    /// Padded character trigram → indexes (in `surfaces`) of the forms holding it.
    grams: HashMap<u64, Vec<u32>>,
    /// Surfaces `0..grammed` are in `grams`.
    grammed: usize,
}

/// Shortest term or word (in characters) matched inside another.
pub(crate) const MIN_PART_CHARS: usize = 4;
/// Longest word (in characters) whose parts are looked up.
const MAX_PART_WORD_CHARS: usize = 24;
/// Boundary marker of padded trigrams (outside the Unicode range).
const PAD: u32 = 0x1F_FFFF;

/// A vocabulary term like a query word, and how alike (0..1].
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Similar {
    pub term: u32,
    pub similarity: f32,
}

fn gram(a: u32, b: u32, c: u32) -> u64 {
    (u64::from(a) << 42) | (u64::from(b) << 21) | u64::from(c)
}

/// The distinct padded trigrams of `chars` (`^ab`, `abc`, …, `yz$`).
fn grams_of(chars: &[char], out: &mut Vec<u64>) {
    out.clear();
    let mut padded: Vec<u32> = Vec::with_capacity(chars.len() + 2);
    padded.push(PAD);
    padded.extend(chars.iter().map(|c| *c as u32));
    padded.push(PAD);
    for w in padded.windows(3) {
        out.push(gram(w[0], w[1], w[2]));
    }
    out.sort_unstable();
    out.dedup();
}

/// Optimal-string-alignment distance between `a` and `b`, or `None` when over `max`.
fn edit_distance(a: &[char], b: &[char], max: usize) -> Option<usize> {
    if a.len().abs_diff(b.len()) > max {
        return None;
    }
    let n = b.len();
    let mut prev2 = vec![0usize; n + 1];
    let mut prev: Vec<usize> = (0..=n).collect();
    let mut cur = vec![0usize; n + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        let mut row_min = cur[0];
        for j in 1..=n {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(prev2[j - 2] + 1);
            }
            cur[j] = d;
            row_min = row_min.min(d);
        }
        if row_min > max {
            return None;
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    (prev[n] <= max).then_some(prev[n])
}

/// Edits tolerated as a typo in a word of `chars` characters.
fn typo_budget(chars: usize) -> usize {
    match chars {
        0..=4 => 0,
        5..=8 => 1,
        _ => 2,
    }
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
        self.add_surface(term, id);
        id
    }

    fn add_surface(&mut self, form: &str, term: u32) {
        if self.surface_ids.contains_key(form) {
            return;
        }
        let index = u32::try_from(self.surfaces.len()).unwrap_or(u32::MAX);
        self.surfaces.push((Box::from(form), term));
        self.surface_ids.insert(Box::from(form), index);
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
        if let Some(term) = term {
            self.add_surface(word, term);
        }
        term
    }

    /// The id of an interned term.
    pub fn lookup(&self, term: &str) -> Option<u32> {
        self.ids.get(term).copied()
    }

    /// The text of term `id`.
    pub fn name(&self, id: u32) -> &str {
        &self.names[id as usize]
    }

    /// Number of interned terms.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Extends the trigram index to every surface form seen.
    pub fn index_grams(&mut self) {
        let mut grams = Vec::new();
        let mut chars: Vec<char> = Vec::new();
        while self.grammed < self.surfaces.len() {
            let id = u32::try_from(self.grammed).unwrap_or(u32::MAX);
            chars.clear();
            chars.extend(self.surfaces[self.grammed].0.chars());
            self.grammed += 1;
            if chars.len() < MIN_PART_CHARS - 1 || chars.len() > MAX_PART_WORD_CHARS * 2 {
                continue;
            }
            grams_of(&chars, &mut grams);
            for g in &grams {
                self.grams.entry(*g).or_default().push(id);
            }
        }
    }

    /// Approximate heap bytes held by the sub-word index: the trigram postings
    /// and the surface forms.
    pub fn gram_bytes(&self) -> usize {
        let surfaces: usize = self.surfaces.iter().map(|(s, _)| s.len() + 16 + 4).sum();
        self.grams.capacity() * (8 + 24 + 8)
            + self.grams.values().map(|v| v.capacity() * 4).sum::<usize>()
            + surfaces * 2
            + self.surface_ids.capacity() * (16 + 4 + 8)
    }

    /// Approximate heap bytes held by the terms and the word cache.
    pub fn bytes(&self) -> usize {
        let names: usize = self.names.iter().map(|n| n.len() + 16 + 16 + 4).sum();
        let words: usize = self
            .words
            .iter()
            .map(|m| m.keys().map(|w| w.len() + 16 + 8 + 8).sum::<usize>())
            .sum();
        names * 2 + words
    }

    /// Terms like `word` (already lower-cased; pass its stem too, as another call):
    /// terms that hold it or that it holds (each side at least
    /// [`MIN_PART_CHARS`] characters; similarity = shorter / longer length), and
    /// terms a typo away (similarity = 1 − edits / length). `word` itself is never
    /// returned. Appends to `out`; the caller merges and caps.
    pub fn similar(&self, word: &str, out: &mut Vec<Similar>) {
        let chars: Vec<char> = word.chars().collect();
        let len = chars.len();
        if !(MIN_PART_CHARS..=MAX_PART_WORD_CHARS).contains(&len) {
            return;
        }
        let own = self.surface_ids.get(word).copied();
        // Terms it holds: every substring of at least MIN_PART_CHARS characters.
        let bounds: Vec<usize> = word
            .char_indices()
            .map(|(i, _)| i)
            .chain([word.len()])
            .collect();
        for start in 0..len {
            for end in (start + MIN_PART_CHARS)..=len {
                if end - start == len {
                    continue;
                }
                if let Some(&surface) = self.surface_ids.get(&word[bounds[start]..bounds[end]]) {
                    out.push(Similar {
                        term: self.surfaces[surface as usize].1,
                        similarity: (end - start) as f32 / len as f32,
                    });
                }
            }
        }
        // Terms that hold it: scan the rarest inner trigram's terms.
        let mut grams = Vec::new();
        grams_of(&chars, &mut grams);
        let inner: Vec<u64> = chars
            .windows(3)
            .map(|w| gram(w[0] as u32, w[1] as u32, w[2] as u32))
            .collect();
        let rarest = inner
            .iter()
            .filter_map(|g| self.grams.get(g))
            .min_by_key(|list| list.len());
        if inner.iter().all(|g| self.grams.contains_key(g))
            && let Some(list) = rarest
        {
            for &surface in list {
                if Some(surface) == own {
                    continue;
                }
                let (name, term) = &self.surfaces[surface as usize];
                if name.len() > word.len() && name.contains(word) {
                    let other = name.chars().count();
                    out.push(Similar {
                        term: *term,
                        similarity: len as f32 / other as f32,
                    });
                }
            }
        }
        // Typos: terms sharing enough padded trigrams, then the edit distance.
        let budget = typo_budget(len);
        if budget == 0 {
            return;
        }
        let mut counts = vec![0u8; self.grammed];
        let mut touched: Vec<u32> = Vec::new();
        for g in &grams {
            if let Some(list) = self.grams.get(g) {
                for &surface in list {
                    let count = &mut counts[surface as usize];
                    if *count == 0 {
                        touched.push(surface);
                    }
                    *count = count.saturating_add(1);
                }
            }
        }
        // An edit changes at most three padded trigrams, a transposition four.
        let need = grams.len().saturating_sub(4 * budget).max(1);
        let mut other: Vec<char> = Vec::new();
        for surface in touched {
            if usize::from(counts[surface as usize]) < need || Some(surface) == own {
                continue;
            }
            let (name, term) = &self.surfaces[surface as usize];
            other.clear();
            other.extend(name.chars());
            if let Some(d) = edit_distance(&chars, &other, budget)
                && d > 0
            {
                out.push(Similar {
                    term: *term,
                    similarity: 1.0 - d as f32 / len.max(other.len()) as f32,
                });
            }
        }
    }

    /// Writes the terms and the surface forms (the word cache and the trigram
    /// index are rebuilt from them).
    pub fn write_to(&self, w: &mut Writer) {
        w.u32(u32::try_from(self.names.len()).unwrap_or(u32::MAX));
        for name in &self.names {
            w.str(name);
        }
        w.u32(u32::try_from(self.surfaces.len()).unwrap_or(u32::MAX));
        for (form, term) in &self.surfaces {
            w.str(form);
            w.u32(*term);
        }
    }

    /// Reads what [`Vocabulary::write_to`] wrote; `None` when it is malformed.
    pub fn read_from(r: &mut Reader<'_>) -> Option<Vocabulary> {
        let mut v = Vocabulary::default();
        let n = r.count(4)?;
        v.names.reserve(n);
        v.ids.reserve(n);
        for id in 0..n {
            let name: Box<str> = Box::from(r.str()?);
            if v.ids
                .insert(name.clone(), u32::try_from(id).ok()?)
                .is_some()
            {
                return None;
            }
            v.names.push(name);
        }
        let n = r.count(8)?;
        v.surfaces.reserve(n);
        v.surface_ids.reserve(n);
        for index in 0..n {
            let form: Box<str> = Box::from(r.str()?);
            let term = r.u32()?;
            if term as usize >= v.names.len()
                || v.surface_ids
                    .insert(form.clone(), u32::try_from(index).ok()?)
                    .is_some()
            {
                return None;
            }
            v.surfaces.push((form, term));
        }
        Some(v)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab(terms: &[&str]) -> Vocabulary {
        let mut v = Vocabulary::default();
        for t in terms {
            v.intern(t);
        }
        v.index_grams();
        v
    }

    fn similar(v: &Vocabulary, word: &str) -> Vec<(String, f32)> {
        let mut out = Vec::new();
        v.similar(word, &mut out);
        let mut named: Vec<(String, f32)> = out
            .into_iter()
            .map(|s| (v.name(s.term).to_owned(), s.similarity))
            .collect();
        named.sort_by(|a, b| a.0.cmp(&b.0));
        named
    }

    #[test]
    fn finds_words_inside_words_both_ways() {
        let v = vocab(&[
            "vitest",
            "jest",
            "postgr",
            "postgresql",
            "deploy",
            "dark",
            "mode",
        ]);
        assert_eq!(similar(&v, "test"), [("vitest".to_owned(), 4.0 / 6.0)]);
        let names: Vec<String> = similar(&v, "postgresql").into_iter().map(|s| s.0).collect();
        assert_eq!(names, ["postgr"]);
        let names: Vec<String> = similar(&v, "darkmode").into_iter().map(|s| s.0).collect();
        assert_eq!(names, ["dark", "mode"]);
        let names: Vec<String> = similar(&v, "deployment").into_iter().map(|s| s.0).collect();
        assert_eq!(names, ["deploy"]);
        // Too short to be a part.
        assert!(similar(&v, "est").is_empty());
    }

    #[test]
    fn finds_typos_within_the_budget() {
        let v = vocab(&["tokio", "postmark", "criterion", "test", "best"]);
        assert_eq!(similar(&v, "tokoi"), [("tokio".to_owned(), 0.8)]);
        assert_eq!(similar(&v, "postmrk")[0].0, "postmark");
        assert_eq!(similar(&v, "critereon")[0].0, "criterion");
        // Four characters: no typo budget, so `test` never finds `best`.
        assert!(similar(&v, "test").is_empty());
    }

    #[test]
    fn edit_distance_is_bounded() {
        let c = |s: &str| s.chars().collect::<Vec<_>>();
        assert_eq!(edit_distance(&c("abcd"), &c("abdc"), 1), Some(1));
        assert_eq!(edit_distance(&c("kitten"), &c("sitting"), 2), None);
        assert_eq!(edit_distance(&c("kitten"), &c("sitting"), 3), Some(3));
    }
}
