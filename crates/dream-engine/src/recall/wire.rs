//! The primitives of the persisted recall index's binary form: little-endian
//! integers, length-prefixed strings and lists, times, flags. A [`Reader`]
//! checks every bound and every string and answers `None`, never panics. The
//! vocabulary (`vocab`) and the analysed records (`codec`) are written with them.

use chrono::{DateTime, Utc};

/// Appends values to a buffer.
#[derive(Default)]
pub(crate) struct Writer(pub Vec<u8>);

impl Writer {
    pub fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    /// An unsigned integer in 7-bit groups, low first (LEB128): one byte below 128.
    pub fn var(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }
    pub fn len(&mut self, n: usize) {
        self.u32(u32::try_from(n).unwrap_or(u32::MAX));
    }
    pub fn str(&mut self, s: &str) {
        self.len(s.len());
        self.0.extend_from_slice(s.as_bytes());
    }
    pub fn bytes32(&mut self, b: &[u8; 32]) {
        self.0.extend_from_slice(b);
    }
    pub fn time(&mut self, t: DateTime<Utc>) {
        self.u64(t.timestamp() as u64);
        self.u32(t.timestamp_subsec_nanos());
    }
    pub fn opt_str(&mut self, s: Option<&str>) {
        match s {
            Some(s) => {
                self.u8(1);
                self.str(s);
            }
            None => self.u8(0),
        }
    }
    pub fn strs<'a>(&mut self, items: impl ExactSizeIterator<Item = &'a str>) {
        self.len(items.len());
        for s in items {
            self.str(s);
        }
    }
}

/// Reads values back; every method is `None` past the end or on a bad value.
#[derive(Clone)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }
    /// Whether every byte was read.
    pub fn done(&self) -> bool {
        self.pos == self.buf.len()
    }
    /// How many bytes were read.
    pub fn position(&self) -> usize {
        self.pos
    }
    /// The bytes from here to `end` (a position of this buffer), read at once.
    pub fn take_to(&mut self, end: usize) -> Option<&'a [u8]> {
        self.take(end.checked_sub(self.pos)?)
    }
    #[inline]
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let out = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(out)
    }
    #[inline]
    pub fn u8(&mut self) -> Option<u8> {
        let byte = *self.buf.get(self.pos)?;
        self.pos += 1;
        Some(byte)
    }
    pub fn flag(&mut self) -> Option<bool> {
        match self.u8()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }
    pub fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    pub fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    /// What [`Writer::var`] wrote; `None` past 64 bits or on a redundant last group.
    #[inline]
    pub fn var(&mut self) -> Option<u64> {
        // Most values (term distances, counts) fit one byte.
        match self.buf.get(self.pos) {
            Some(byte) if *byte < 0x80 => {
                self.pos += 1;
                Some(u64::from(*byte))
            }
            _ => self.long_var(),
        }
    }
    fn long_var(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.u8()?;
            let bits = u64::from(byte & 0x7f);
            if (bits << shift) >> shift != bits || (byte == 0 && shift > 0) {
                return None;
            }
            v |= bits << shift;
            if byte & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
    /// A count of items each at least `min` bytes long, checked against what is left.
    pub fn count(&mut self, min: usize) -> Option<usize> {
        let n = self.u32()? as usize;
        (n.checked_mul(min.max(1))? <= self.buf.len() - self.pos).then_some(n)
    }
    pub fn str(&mut self) -> Option<&'a str> {
        let n = self.u32()? as usize;
        std::str::from_utf8(self.take(n)?).ok()
    }
    pub fn bytes32(&mut self) -> Option<[u8; 32]> {
        self.take(32)?.try_into().ok()
    }
    pub fn time(&mut self) -> Option<DateTime<Utc>> {
        let secs = self.u64()? as i64;
        let nanos = self.u32()?;
        DateTime::from_timestamp(secs, nanos)
    }
    pub fn opt_str(&mut self) -> Option<Option<&'a str>> {
        match self.u8()? {
            0 => Some(None),
            1 => Some(Some(self.str()?)),
            _ => None,
        }
    }
    pub fn strs(&mut self) -> Option<Vec<&'a str>> {
        let n = self.count(4)?;
        (0..n).map(|_| self.str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn var_round_trips_and_refuses_what_it_never_writes() {
        let values = [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX];
        let mut w = Writer::default();
        for v in values {
            w.var(v);
        }
        let mut r = Reader::new(&w.0);
        for v in values {
            assert_eq!(r.var(), Some(v));
        }
        assert!(r.done());
        for bad in [&[0x80, 0x00][..], &[0xff; 11][..], &[0x80][..]] {
            assert_eq!(Reader::new(bad).var(), None, "{bad:?}");
        }
    }
}
