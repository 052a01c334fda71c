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

use dream_core::Memory;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::layout::hash_bytes;
use crate::records::{QuarantineRecord, SessionHeader, SessionRecord};

/// How a sealed plan's bytes begin.
const PLAN_SEAL_PREFIX: &str = "{\"plan_seal\":\"";
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

    /// Whether a stored session carries a seal made with this key over its
    /// transcript, and a state seal over its status (see `SealKey::seal_state`):
    /// a session whose status was set back by hand is not the person's word.
    pub fn verify_session(&self, session: &SessionRecord) -> bool {
        self.verify_transcript(session) && self.verify_state(&SessionHeader::from(session))
    }

    /// Whether a stored session's transcript seal verifies (its status aside).
    pub(crate) fn verify_transcript(&self, session: &SessionRecord) -> bool {
        let Some(tag) = session.seal.as_deref().and_then(|t| hex::decode(t).ok()) else {
            return false;
        };
        self.mac(&session_label(session), &session_bytes(session))
            .verify_slice(&tag)
            .is_ok()
    }

    /// The state seal of a session: over its id, status, when and by which pass
    /// it was consumed, and its transcript seal, so a status set back to
    /// `pending` by hand (or a consumed session's fields removed) no longer
    /// verifies. Made whenever the status is written.
    pub(crate) fn seal_state(&self, session: &SessionRecord) -> String {
        let (label, bytes) = state_input(&SessionHeader::from(session));
        hex::encode(self.tag(&label, &bytes))
    }

    /// Whether a session's state seal verifies over its status fields.
    pub(crate) fn verify_state(&self, session: &SessionHeader) -> bool {
        let Some(tag) = session
            .state_seal
            .as_deref()
            .and_then(|t| hex::decode(t).ok())
        else {
            return false;
        };
        let (label, bytes) = state_input(session);
        self.verify_tag(&label, &bytes, &tag)
    }

    /// Seals a stored plan's JSON bytes: the value written is the same JSON
    /// object with a first member `"plan_seal"` (which the plan's reader ignores).
    pub(crate) fn seal_plan(&self, id: &str, json: &[u8]) -> Vec<u8> {
        let tag = hex::encode(self.tag(&format!("plans/{id}"), json));
        let mut out = Vec::with_capacity(json.len() + PLAN_SEAL_PREFIX.len() + 66);
        out.extend_from_slice(PLAN_SEAL_PREFIX.as_bytes());
        out.extend_from_slice(tag.as_bytes());
        out.extend_from_slice(b"\",");
        out.extend_from_slice(json.strip_prefix(b"{").unwrap_or(json));
        out
    }

    /// Whether a stored plan's bytes are exactly what [`SealKey::seal_plan`] made
    /// for plan `id`.
    pub(crate) fn verify_plan(&self, id: &str, stored: &[u8]) -> bool {
        let Some(rest) = stored.strip_prefix(PLAN_SEAL_PREFIX.as_bytes()) else {
            return false;
        };
        if rest.len() < 66 || &rest[64..66] != b"\"," {
            return false;
        }
        let Ok(tag) = hex::decode(&rest[..64]) else {
            return false;
        };
        self.verify_tag(&format!("plans/{id}"), &unsealed_plan(stored), &tag)
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

/// THE verified read of a memory record's Markdown (a memory, a trash or a
/// history copy of one): whether `text`, stored for memory `id`, carries `key`'s
/// seal. Without a key the store authenticates its own records (an encrypted
/// store's AEAD), so every record verifies. Every place that reads a memory for
/// any use — orient, recall, export, restore, a conversion — asks this.
pub(crate) fn verified(key: Option<&SealKey>, id: &str, text: &[u8]) -> bool {
    match key {
        None => true,
        Some(key) => std::str::from_utf8(text).is_ok_and(|text| key.verify(id, text)),
    }
}

/// A memory's Markdown as the engine stores it (sealed under `key` when there
/// is one) and its hash: the one place a memory is rendered for writing.
pub(crate) fn rendered(key: Option<&SealKey>, memory: &Memory) -> (String, String) {
    let text = dream_core::render_memory(memory);
    let text = match key {
        Some(key) => key.seal(memory.id.as_str(), &text),
        None => text,
    };
    let hash = hash_bytes(text.as_bytes());
    (text, hash)
}

/// The same for a session: its transcript and its status.
pub(crate) fn verified_session(key: Option<&SealKey>, session: &SessionRecord) -> bool {
    key.is_none_or(|k| k.verify_session(session))
}

/// The same for a session's transcript alone (its status aside): whether what
/// it says was logged by this store's engine.
pub(crate) fn verified_transcript(key: Option<&SealKey>, session: &SessionRecord) -> bool {
    key.is_none_or(|k| k.verify_transcript(session))
}

/// The same for a stored plan's bytes.
pub(crate) fn verified_plan(key: Option<&SealKey>, id: &str, bytes: &[u8]) -> bool {
    key.is_none_or(|k| k.verify_plan(id, bytes))
}

/// The same for a quarantine entry: whether its proposal (every field of the
/// memory a release would write, its kind and its id) carries `key`'s seal.
pub(crate) fn verified_quarantine(key: Option<&SealKey>, q: &QuarantineRecord) -> bool {
    key.is_none_or(|k| {
        q.seal
            .as_deref()
            .and_then(|t| hex::decode(t).ok())
            .is_some_and(|tag| k.verify_tag(&quarantine_label(q), &quarantine_bytes(q), &tag))
    })
}

/// `q` sealed under `key` (unchanged without one).
pub(crate) fn seal_quarantine(key: Option<&SealKey>, q: &mut QuarantineRecord) {
    q.seal = key.map(|k| hex::encode(k.tag(&quarantine_label(q), &quarantine_bytes(q))));
}

fn quarantine_label(q: &QuarantineRecord) -> String {
    format!("quarantine/{}", q.id)
}

fn quarantine_bytes(q: &QuarantineRecord) -> Vec<u8> {
    serde_json::to_vec(&(&q.scope, q.kind, &q.memory)).unwrap_or_default()
}

/// A stored plan's JSON without its seal member (as it was before
/// [`SealKey::seal_plan`]); bytes without one as they are.
pub(crate) fn unsealed_plan(stored: &[u8]) -> Vec<u8> {
    match stored.strip_prefix(PLAN_SEAL_PREFIX.as_bytes()) {
        Some(rest) if rest.len() >= 66 && &rest[64..66] == b"\"," => {
            let mut json = Vec::with_capacity(rest.len() - 65);
            json.push(b'{');
            json.extend_from_slice(&rest[66..]);
            json
        }
        _ => stored.to_vec(),
    }
}

/// A memory that failed the verified read, in the form that carries its held
/// state without any seal: not current unless confirmed (`unconfirmed`), never
/// the person's word (evidence `tool`), never pinned. Retired statuses stay (they
/// are lower already). Idempotent.
pub(crate) fn held(memory: &mut dream_core::Memory) {
    use dream_core::{MemoryStatus, Role};
    if memory.status == MemoryStatus::Active {
        memory.status = MemoryStatus::Unconfirmed;
    }
    memory.evidence = vec![Role::Tool];
    memory.pinned = false;
}

/// What a session's state seal covers, under `sessions-state/<id>`: its status,
/// when and by which pass it was consumed, and its transcript seal.
fn state_input(session: &SessionHeader) -> (String, Vec<u8>) {
    let fields = (
        session.status,
        session.consumed_at.as_ref(),
        session.consumed_by.as_deref(),
        session.seal.as_deref(),
    );
    let bytes = serde_json::to_vec(&fields).unwrap_or_default();
    (format!("sessions-state/{}", session.id), bytes)
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

    /// Seals written by an earlier build must verify after any change of the
    /// HMAC or SHA-2 crates: the values below were computed outside Rust
    /// (Python's `hmac` module) over the same domain, label and bytes.
    #[test]
    fn tags_are_hmac_sha256_over_domain_label_and_bytes() {
        let key = SealKey::from_bytes([7; 32]);
        assert_eq!(
            hex::encode(key.tag("recall-index", b"index bytes")),
            "b715edd7c41d5983d25faf9836ad1ea0c06a054cac5587ae8f9c93476ffd4c26"
        );
        assert_eq!(
            hex::encode(key.mac("m1", b"body").finalize().into_bytes()),
            "9ced5574fd7551a8b473ede6c328777a4460a44b330bfed0459ee26b1ee3b48c"
        );
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
