//! A record's analysed terms, packed: its distinct term ids in increasing order,
//! each written as its distance from the previous one, then a mask of the fields
//! holding it and each such field's count, in 7-bit groups (`wire`'s `var`).
//! Most terms take 3 bytes instead of the 16 of an unpacked entry, and the
//! persisted index stores these bytes as they are: loading a record's terms is
//! one walk that checks them and one copy. They are read by walking: the index
//! does once per build, recall for a handful of records a query.
//!
//! A posting list is packed the same way, document ids in place of term ids
//! ([`Packer`], [`Packed`]), and is read in place from the index's bytes.

use super::analyze::FIELDS;
use super::wire::{Reader, Writer};

/// One term id and its count per field.
pub(crate) type Term = (u32, [u16; FIELDS]);

/// A record's terms (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Terms {
    len: u32,
    bytes: Box<[u8]>,
}

/// Packs ids with their counts, one at a time, in increasing id order.
#[derive(Default)]
pub(crate) struct Packer {
    len: u32,
    previous: u32,
    w: Writer,
}

impl Packer {
    /// Appends `id` (above the previous one) and its counts.
    pub fn push(&mut self, id: u32, counts: &[u16; FIELDS]) {
        debug_assert!(id > self.previous || self.len == 0);
        self.w.var(u64::from(id.wrapping_sub(self.previous)));
        self.previous = id;
        self.len = self.len.saturating_add(1);
        let mask = (0..FIELDS).fold(0u8, |m, f| m | (u8::from(counts[f] > 0) << f));
        self.w.u8(mask);
        for c in counts.iter().filter(|c| **c > 0) {
            self.w.var(u64::from(*c));
        }
    }

    /// How many ids were pushed.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// How many bytes they take.
    pub fn bytes_len(&self) -> usize {
        self.w.0.len()
    }

    /// The packed bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.w.0
    }
}

/// Packed ids and counts read in place: `len` of them in `bytes`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Packed<'a> {
    pub len: u32,
    pub bytes: &'a [u8],
}

impl<'a> Packed<'a> {
    /// The ids and counts, in increasing id order; stops at a malformed one.
    pub fn iter(self) -> impl Iterator<Item = Term> + 'a {
        let mut walk = Walk {
            r: Reader::new(self.bytes),
            left: self.len,
            previous: None,
        };
        std::iter::from_fn(move || walk.step())
    }
}

impl Terms {
    /// Packs terms sorted by id, each id once.
    pub fn pack(terms: &[Term]) -> Terms {
        let mut packer = Packer::default();
        for (term, counts) in terms {
            packer.push(*term, counts);
        }
        Terms {
            len: packer.len(),
            bytes: packer.into_bytes().into_boxed_slice(),
        }
    }

    /// Writes the number of terms, then the packed bytes.
    pub fn write_to(&self, w: &mut Writer) {
        w.u32(self.len);
        w.0.extend_from_slice(&self.bytes);
    }

    /// Reads what [`Terms::write_to`] wrote, checking every term (ids strictly
    /// increasing, counts in range); `None` when one is malformed.
    pub fn read_from(r: &mut Reader<'_>) -> Option<Terms> {
        let len = u32::try_from(r.count(2)?).ok()?;
        let start = r.position();
        let mut walk = Walk {
            r: r.clone(),
            left: len,
            previous: None,
        };
        for _ in 0..len {
            walk.step()?;
        }
        let bytes = r.take_to(walk.r.position())?;
        debug_assert_eq!(bytes.len(), walk.r.position() - start);
        Some(Terms {
            len,
            bytes: bytes.into(),
        })
    }

    /// The terms, in increasing id order.
    pub fn iter(&self) -> impl Iterator<Item = Term> + '_ {
        Packed {
            len: self.len,
            bytes: &self.bytes,
        }
        .iter()
    }

    /// Whether the record holds `term`.
    pub fn contains(&self, term: u32) -> bool {
        self.iter()
            .map(|(t, _)| t)
            .find(|t| *t >= term)
            .is_some_and(|t| t == term)
    }
}

/// A walk through packed terms.
struct Walk<'a> {
    r: Reader<'a>,
    left: u32,
    previous: Option<u32>,
}

impl Walk<'_> {
    /// The next term; `None` at the end or on a malformed one.
    #[inline]
    fn step(&mut self) -> Option<Term> {
        self.left = self.left.checked_sub(1)?;
        let delta = u32::try_from(self.r.var()?).ok()?;
        let term = match self.previous {
            None => delta,
            Some(previous) if delta > 0 => previous.checked_add(delta)?,
            Some(_) => return None,
        };
        self.previous = Some(term);
        let mask = self.r.u8()?;
        if mask >> FIELDS != 0 {
            return None;
        }
        let mut counts = [0u16; FIELDS];
        for (f, c) in counts.iter_mut().enumerate() {
            if mask & (1 << f) != 0 {
                *c = u16::try_from(self.r.var()?).ok().filter(|c| *c > 0)?;
            }
        }
        Some((term, counts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: [Term; 4] = [
        (0, [1, 0, 0, 0, 0]),
        (5, [0, 300, 0, 2, 0]),
        (70_000, [0, 0, 0, 0, u16::MAX]),
        (u32::MAX, [1, 1, 1, 1, 1]),
    ];

    #[test]
    fn packed_terms_read_back_as_they_were() {
        let terms = Terms::pack(&SAMPLE);
        assert_eq!(terms.iter().collect::<Vec<_>>(), SAMPLE);
        for term in [0, 5, 70_000, u32::MAX] {
            assert!(terms.contains(term), "{term}");
        }
        for term in [1, 4, 6, 69_999, u32::MAX - 1] {
            assert!(!terms.contains(term), "{term}");
        }
        let mut w = Writer::default();
        terms.write_to(&mut w);
        w.u8(9);
        let mut r = Reader::new(&w.0);
        assert_eq!(Terms::read_from(&mut r), Some(terms));
        assert_eq!((r.u8(), r.done()), (Some(9), true));
    }

    #[test]
    fn terms_out_of_order_or_truncated_are_refused() {
        let mut w = Writer::default();
        w.u32(2);
        w.var(7);
        w.u8(1);
        w.var(1);
        w.var(0);
        w.u8(1);
        w.var(1);
        assert_eq!(Terms::read_from(&mut Reader::new(&w.0)), None);
        let mut w = Writer::default();
        Terms::pack(&SAMPLE).write_to(&mut w);
        w.0.pop();
        assert_eq!(Terms::read_from(&mut Reader::new(&w.0)), None);
    }
}
