//! The envelope every value is stored in.
//!
//! ```text
//! offset  size  field
//!      0     4  magic "DRME"
//!      4     1  format version (1)
//!      5     4  key id, big-endian u32
//!      9    12  nonce (fresh from the OS random generator for every write)
//!     21     n  ciphertext (AES-256-GCM, same length as the plaintext)
//!   21+n    16  authentication tag
//! ```
//!
//! The associated data is the whole 21-byte header followed by the record's
//! namespace and id, each prefixed by its length as a big-endian u32. Editing any
//! header byte, or copying the envelope onto another record, fails authentication.

use aes_gcm::{AeadInOut, Aes256Gcm, Nonce, Tag};
use bytes::{Bytes, BytesMut};
use dream_core::Key;

use crate::key::{KeyId, KeyRing};

/// The first four bytes of every envelope.
pub const MAGIC: [u8; 4] = *b"DRME";
/// The envelope format this crate writes and reads.
pub const FORMAT_VERSION: u8 = 1;
/// Length of the nonce in bytes (96 bits).
pub const NONCE_LEN: usize = 12;
/// Length of the clear header: magic, format version, key id, nonce.
pub const HEADER_LEN: usize = MAGIC.len() + 1 + 4 + NONCE_LEN;
/// Length of the authentication tag.
pub const TAG_LEN: usize = 16;
/// Bytes an envelope adds to a value.
pub const OVERHEAD: usize = HEADER_LEN + TAG_LEN;

/// Why an envelope could not be opened. Callers turn every kind into the same
/// `Corrupt` error; the kind is only for internal logs and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpenFailure {
    TooShort,
    WrongMagic,
    UnknownFormat,
    UnknownKey,
    Authentication,
}

impl OpenFailure {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            OpenFailure::TooShort => "too short",
            OpenFailure::WrongMagic => "wrong magic",
            OpenFailure::UnknownFormat => "unknown format version",
            OpenFailure::UnknownKey => "key not in the ring",
            OpenFailure::Authentication => "authentication failed",
        }
    }
}

/// Sealing failed: the OS random generator failed or the value is beyond
/// AES-GCM's limit (unreachable under any store's size cap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SealFailure {
    Random,
    Cipher,
}

/// The associated data for `header` on record `key`.
fn associated_data(header: &[u8], key: &Key) -> Vec<u8> {
    let namespace = key.namespace.as_str().as_bytes();
    let id = key.id.as_str().as_bytes();
    let mut aad = Vec::with_capacity(header.len() + 8 + namespace.len() + id.len());
    aad.extend_from_slice(header);
    aad.extend_from_slice(&(namespace.len() as u32).to_be_bytes());
    aad.extend_from_slice(namespace);
    aad.extend_from_slice(&(id.len() as u32).to_be_bytes());
    aad.extend_from_slice(id);
    aad
}

/// Encrypts `plaintext` for record `key` under the ring's active key.
pub(crate) fn seal(ring: &KeyRing, key: &Key, plaintext: &[u8]) -> Result<Vec<u8>, SealFailure> {
    let mut nonce = [0u8; NONCE_LEN];
    getrandom::fill(&mut nonce).map_err(|_| SealFailure::Random)?;
    let mut out = Vec::with_capacity(OVERHEAD + plaintext.len());
    out.extend_from_slice(&MAGIC);
    out.push(FORMAT_VERSION);
    out.extend_from_slice(&ring.active().get().to_be_bytes());
    out.extend_from_slice(&nonce);
    let aad = associated_data(&out, key);
    out.extend_from_slice(plaintext);
    let tag = ring
        .active_cipher()
        .encrypt_inout_detached(&Nonce::from(nonce), &aad, (&mut out[HEADER_LEN..]).into())
        .map_err(|_| SealFailure::Cipher)?;
    out.extend_from_slice(&tag);
    Ok(out)
}

/// The key id in an envelope's header, if the header is well formed. Not
/// authenticated: only [`open`] proves the header genuine.
pub(crate) fn key_id(envelope: &[u8]) -> Result<KeyId, OpenFailure> {
    if envelope.len() < OVERHEAD {
        return Err(OpenFailure::TooShort);
    }
    if envelope[..MAGIC.len()] != MAGIC {
        return Err(OpenFailure::WrongMagic);
    }
    if envelope[MAGIC.len()] != FORMAT_VERSION {
        return Err(OpenFailure::UnknownFormat);
    }
    let mut id = [0u8; 4];
    id.copy_from_slice(&envelope[MAGIC.len() + 1..MAGIC.len() + 5]);
    Ok(KeyId::new(u32::from_be_bytes(id)))
}

/// Decrypts and authenticates the envelope stored at `key`. Decrypts in place
/// when `envelope` is the only handle on its buffer, else in a copy. AES-GCM
/// checks the tag before decrypting, so a failure leaves only ciphertext behind.
pub(crate) fn open(ring: &KeyRing, key: &Key, envelope: Bytes) -> Result<Bytes, OpenFailure> {
    let id = key_id(&envelope)?;
    let cipher: &Aes256Gcm = ring.cipher(id).ok_or(OpenFailure::UnknownKey)?;
    let body_end = envelope.len() - TAG_LEN;
    let nonce = Nonce::try_from(&envelope[HEADER_LEN - NONCE_LEN..HEADER_LEN])
        .map_err(|_| OpenFailure::TooShort)?;
    let tag = Tag::try_from(&envelope[body_end..]).map_err(|_| OpenFailure::TooShort)?;
    let aad = associated_data(&envelope[..HEADER_LEN], key);
    let mut buf: BytesMut = envelope
        .try_into_mut()
        .unwrap_or_else(|shared| BytesMut::from(&shared[..]));
    cipher
        .decrypt_inout_detached(&nonce, &aad, (&mut buf[HEADER_LEN..body_end]).into(), &tag)
        .map_err(|_| OpenFailure::Authentication)?;
    Ok(buf.freeze().slice(HEADER_LEN..body_end))
}

#[cfg(test)]
mod tests {
    use dream_core::{Namespace, RecordId};

    use super::*;
    use crate::key::KeyMaterial;

    fn key(ns: &str, id: &str) -> Key {
        Key::new(
            Namespace::new(ns).expect("ns"),
            RecordId::new(id).expect("id"),
        )
    }

    fn ring(id: u32, byte: u8) -> KeyRing {
        KeyRing::new(
            KeyId::new(id),
            KeyMaterial::from_bytes(&[byte; 32]).expect("key"),
        )
    }

    /// An envelope built independently, with Python's `cryptography` (OpenSSL's
    /// AES-GCM), following the layout documented above: key bytes 0..32, key id 7,
    /// a fixed nonce, record `memories/golden-record`. It pins the format and the
    /// associated data across cipher-crate upgrades and implementations.
    const GOLDEN: &str = "44524d4501000000070f1e2d3c4b5a69788796a5b4a6dcc682f27d46c21010b0fec6f9\
                          ce29fbcdcc5a51799a5a349c67a05107b9816a93fc12a8514411bdaca743bb598aa993\
                          88a7ce051b557cf1e1eaa1ba94bbdc42c06e1ceec0c3";

    fn unhex(text: &str) -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
            .collect()
    }

    #[test]
    fn an_envelope_from_an_independent_implementation_opens() {
        let material: Vec<u8> = (0..32).collect();
        let r = KeyRing::new(
            KeyId::new(7),
            KeyMaterial::from_bytes(&material).expect("key"),
        );
        let golden = Bytes::from(unhex(GOLDEN));
        let opened = open(&r, &key("memories", "golden-record"), golden.clone()).expect("open");
        assert_eq!(
            &opened[..],
            "Sam prefers Vitest over Jest; déploiement le vendredi.".as_bytes()
        );
        // The same bytes under another record id fail: the id is authenticated.
        assert_eq!(
            open(&r, &key("memories", "golden-recorc"), golden),
            Err(OpenFailure::Authentication)
        );
    }

    #[test]
    fn layout_is_as_documented() {
        let r = ring(0x0102_0304, 9);
        let k = key("memories", "m1");
        let sealed = seal(&r, &k, b"hello").expect("seal");
        assert_eq!(sealed.len(), 5 + OVERHEAD);
        assert_eq!(&sealed[..4], b"DRME");
        assert_eq!(sealed[4], 1);
        assert_eq!(&sealed[5..9], &[1, 2, 3, 4]);
        assert_eq!(key_id(&sealed), Ok(KeyId::new(0x0102_0304)));
        assert_ne!(&sealed[HEADER_LEN..HEADER_LEN + 5], b"hello");
        assert_eq!(
            open(&r, &k, Bytes::from(sealed)).expect("open").as_ref(),
            b"hello"
        );
    }

    #[test]
    fn nonces_are_fresh() {
        let r = ring(1, 9);
        let k = key("memories", "m1");
        let a = seal(&r, &k, b"same").expect("seal");
        let b = seal(&r, &k, b"same").expect("seal");
        assert_ne!(a[9..HEADER_LEN], b[9..HEADER_LEN], "nonce reused");
        assert_ne!(a, b);
    }

    #[test]
    fn every_failure_kind_is_detected() {
        let r = ring(1, 9);
        let k = key("memories", "m1");
        let sealed = seal(&r, &k, b"some secret text").expect("seal");
        for i in 0..sealed.len() {
            let mut bad = sealed.clone();
            bad[i] ^= 0x01;
            assert!(
                open(&r, &k, Bytes::from(bad)).is_err(),
                "flip at byte {i} undetected"
            );
        }
        for len in 0..sealed.len() {
            assert!(
                open(&r, &k, Bytes::copy_from_slice(&sealed[..len])).is_err(),
                "truncation to {len}"
            );
        }
        assert_eq!(
            open(&r, &key("memories", "m2"), Bytes::from(sealed.clone())),
            Err(OpenFailure::Authentication)
        );
        assert_eq!(
            open(&r, &key("memoriez", "m1"), Bytes::from(sealed.clone())),
            Err(OpenFailure::Authentication)
        );
        assert_eq!(
            open(&ring(1, 8), &k, Bytes::from(sealed.clone())),
            Err(OpenFailure::Authentication)
        );
        assert_eq!(
            open(&ring(2, 9), &k, Bytes::from(sealed)),
            Err(OpenFailure::UnknownKey)
        );
    }

    #[test]
    fn length_prefixes_keep_namespace_and_id_apart() {
        // Without length prefixes "ab"/"c" and "a"/"bc" would share associated data.
        let r = ring(1, 9);
        let sealed = seal(&r, &key("ab", "c"), b"x").expect("seal");
        assert!(open(&r, &key("a", "bc"), Bytes::from(sealed.clone())).is_err());
        assert!(open(&r, &key("ab", "c"), Bytes::from(sealed)).is_ok());
    }
}
