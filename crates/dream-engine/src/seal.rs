//! Record authentication: the engine seals every memory it writes, so a record it
//! did not write — a hand edit, a file planted in `.dream/memories/`, a store
//! shipped inside a cloned repository, a record copied from another store — is
//! recognised and held until a person confirms it.
//!
//! The seal is HMAC-SHA256 under a per-store [`SealKey`] kept outside the store
//! (the CLI keeps it in the user's configuration directory, mode 0600, one key per
//! store location, so a copied or cloned store finds no key of its own and its
//! records do not verify). It covers the record's id and every byte of its
//! Markdown, and is written as the last frontmatter line, `seal: v1:<hex>`, which
//! the codec ignores as an unknown key.
//!
//! Logged sessions are sealed too (over their transcript): a planted or edited
//! session is read as tool text, so it can never make a memory the person's word.
//!
//! What it does not detect: an older sealed version of the same record put back
//! (a rollback), or a record deleted. An encrypted store's AEAD already
//! authenticates its records; sealing adds nothing there.

use std::fmt;

use hmac::{Hmac, Mac};
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::records::SessionRecord;

/// The frontmatter key of the seal line.
const SEAL_PREFIX: &str = "seal: v1:";
/// Domain separation for the MAC input.
const DOMAIN: &[u8] = b"dream-seal-v1\0";
/// Domain separation for tags over derived state.
const DERIVED_DOMAIN: &[u8] = b"dream-derived-v1\0";

/// A 32-byte key that seals one store's memories. Its bytes never appear in
/// `Debug`, logs or errors.
#[derive(Clone)]
pub struct SealKey(Zeroizing<[u8; 32]>);

impl SealKey {
    /// A key from its 32 bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        SealKey(Zeroizing::new(bytes))
    }

    /// A fresh random key.
    pub fn generate() -> Self {
        let mut bytes = [0u8; 32];
        rand::fill(&mut bytes);
        SealKey::from_bytes(bytes)
    }

    /// The key's bytes (to store it in a key file).
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    fn mac(&self, id: &str, unsealed: &[u8]) -> Hmac<Sha256> {
        self.mac_in(DOMAIN, id, unsealed)
    }

    fn mac_in(&self, domain: &[u8], id: &str, unsealed: &[u8]) -> Hmac<Sha256> {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(self.0.as_slice()).expect("HMAC takes any key length");
        mac.update(domain);
        mac.update(id.as_bytes());
        mac.update(b"\0");
        mac.update(unsealed);
        mac
    }

    /// A tag over state the engine derives and keeps in the store (the persisted
    /// recall index), under `label`; never equal to a memory's or a session's seal.
    pub(crate) fn tag(&self, label: &str, bytes: &[u8]) -> [u8; 32] {
        self.mac_in(DERIVED_DOMAIN, label, bytes)
            .finalize()
            .into_bytes()
            .into()
    }

    /// Whether `tag` is [`SealKey::tag`] of `label` and `bytes`.
    pub(crate) fn verify_tag(&self, label: &str, bytes: &[u8], tag: &[u8]) -> bool {
        self.mac_in(DERIVED_DOMAIN, label, bytes)
            .verify_slice(tag)
            .is_ok()
    }

    /// The seal of a logged session: over its id, scope, time and messages (the
    /// parts that never change once logged).
    pub(crate) fn seal_session(&self, session: &SessionRecord) -> String {
        let tag = self.mac(&session_label(session), &session_bytes(session));
        hex::encode(tag.finalize().into_bytes())
    }

    /// Whether a stored session carries a seal made with this key over its transcript.
    pub fn verify_session(&self, session: &SessionRecord) -> bool {
        let Some(tag) = session.seal.as_deref().and_then(|t| hex::decode(t).ok()) else {
            return false;
        };
        self.mac(&session_label(session), &session_bytes(session))
            .verify_slice(&tag)
            .is_ok()
    }

    /// `markdown` (as `render_memory` wrote it, for record `id`) with its seal
    /// as the last frontmatter line.
    pub fn seal(&self, id: &str, markdown: &str) -> String {
        let tag = hex::encode(self.mac(id, markdown.as_bytes()).finalize().into_bytes());
        match closing_fence(markdown) {
            Some(at) => format!("{}{SEAL_PREFIX}{tag}\n{}", &markdown[..at], &markdown[at..]),
            // Not a Markdown memory: nothing to seal, and it will not verify.
            None => markdown.to_owned(),
        }
    }

    /// Whether `text`, stored as record `id`, carries a seal made with this key
    /// over exactly its other bytes.
    pub fn verify(&self, id: &str, text: &str) -> bool {
        let Some((unsealed, tag)) = unseal(text) else {
            return false;
        };
        let Ok(tag) = hex::decode(tag) else {
            return false;
        };
        self.mac(id, unsealed.as_bytes()).verify_slice(&tag).is_ok()
    }
}

impl fmt::Debug for SealKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SealKey(<redacted>)")
    }
}

fn session_label(session: &SessionRecord) -> String {
    format!("sessions/{}", session.id)
}

fn session_bytes(session: &SessionRecord) -> Vec<u8> {
    serde_json::to_vec(&(&session.scope, &session.created_at, &session.messages))
        .unwrap_or_default()
}

/// The byte offset of the frontmatter's closing `---` line.
fn closing_fence(text: &str) -> Option<usize> {
    let rest = text.strip_prefix("---\n")?;
    let mut offset = 4;
    for line in rest.split_inclusive('\n') {
        if line == "---\n" || line == "---" {
            return Some(offset);
        }
        offset += line.len();
    }
    None
}

/// The text without its seal line, and the seal's hex; `None` when the last
/// frontmatter line is not a seal.
fn unseal(text: &str) -> Option<(String, &str)> {
    let fence = closing_fence(text)?;
    let front = &text[..fence];
    let line_start = front[..front.len().checked_sub(1)?].rfind('\n')? + 1;
    let tag = front[line_start..]
        .strip_suffix('\n')?
        .strip_prefix(SEAL_PREFIX)?;
    Some((format!("{}{}", &text[..line_start], &text[fence..]), tag))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::DateTime;
    use dream_core::{Memory, MemoryId, MemoryKind, parse_memory, render_memory};

    fn sample() -> (String, String) {
        let now = DateTime::from_timestamp(1_780_000_000, 0).unwrap();
        let m = Memory::new(
            MemoryId::new("m1").unwrap(),
            MemoryKind::Project,
            "Test runner",
            "which runner",
            "We use Vitest.\n---\nseal: v1:00\n",
            now,
        );
        ("m1".to_owned(), render_memory(&m))
    }

    #[test]
    fn a_sealed_record_verifies_and_parses_as_before() {
        let key = SealKey::generate();
        let (id, text) = sample();
        let sealed = key.seal(&id, &text);
        assert!(key.verify(&id, &sealed));
        assert_eq!(parse_memory(&sealed).unwrap(), parse_memory(&text).unwrap());
        assert!(!key.verify(&id, &text), "no seal, no trust");
    }

    #[test]
    fn any_change_another_id_or_another_key_fails() {
        let key = SealKey::generate();
        let (id, text) = sample();
        let sealed = key.seal(&id, &text);
        assert!(!key.verify("m2", &sealed), "moved to another id");
        assert!(
            !SealKey::generate().verify(&id, &sealed),
            "another store's key"
        );
        for (i, _) in sealed.char_indices().filter(|(i, _)| i % 7 == 0) {
            let mut edited = sealed.clone();
            edited.insert(i, 'x');
            assert!(!key.verify(&id, &edited), "edit at byte {i}");
        }
        let swapped = sealed.replace("We use Vitest.", "We use Jest.");
        assert!(!key.verify(&id, &swapped));
    }

    #[test]
    fn garbage_never_verifies_or_panics() {
        let key = SealKey::generate();
        for text in [
            "",
            "---",
            "---\n",
            "---\n---\n",
            "---\nseal: v1:zz\n---\n",
            "x",
        ] {
            assert!(!key.verify("m1", text));
            let _ = key.seal("m1", text);
        }
    }

    #[test]
    fn debug_hides_the_key() {
        let key = SealKey::from_bytes([7; 32]);
        assert_eq!(format!("{key:?}"), "SealKey(<redacted>)");
    }
}
