//! Carrying trust across a conversion of the store (`rekey --from-plain`,
//! `--to-plain`): the seal that says "the engine wrote this" does not survive a
//! change of what authenticates the records (a per-store seal key on a plain
//! store, the AEAD on an encrypted one), so the held state is written out
//! explicitly before the conversion.
//!
//! Every memory, trash and history copy, quarantine entry, session and stored
//! plan (every scope)
//! passes the one verified read of the handle doing the conversion (its seal
//! key, or none when the store authenticates its own records). What verifies is sealed under the
//! key of the store it becomes; what does not is written in its held form
//! ([`crate::seal::held`]: `unconfirmed`, evidence `tool`, unpinned), a session
//! that does not verify as tool text (or, when only its status fails, as
//! consumed), and a plan that does not verify is dropped. So a record that was
//! held before a conversion is held after it, whether or not the store it
//! becomes checks seals, and a record that was trusted stays trusted.

use dream_core::{Entry, Memory, MemoryId, Role, parse_memory, render_memory};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::Result;
use crate::handles::Upkeep;
use crate::journal::Op;
use crate::layout;
use crate::records::{
    HistoryRecord, QuarantineRecord, SessionRecord, SessionStatus, TrashRecord, from_json, to_json,
};
use crate::seal::{self, SealKey};

/// Records written per journaled commit.
const CHUNK: usize = 64;

/// What [`Dream::carry_trust`] did.
///
/// [`Dream::carry_trust`]: crate::Dream::carry_trust
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Carried {
    /// Records rewritten sealed under the target key (they verified).
    pub sealed: usize,
    /// Records that did not verify, written held (`namespace/id`).
    pub held: Vec<String>,
    /// Stored plans that did not verify, dropped.
    pub plans_dropped: usize,
}

impl Upkeep<'_> {
    pub(crate) async fn carry_trust(&self, to: Option<&SealKey>) -> Result<Carried> {
        let mut carried = Carried::default();
        let mut ops = Vec::new();
        for entry in self.list_all(layout::MEMORIES).await? {
            let Ok(text) = std::str::from_utf8(&entry.record.value) else {
                continue;
            };
            let Ok(mut memory) = parse_memory(text) else {
                continue;
            };
            let verified =
                memory.id.as_str() == entry.id.as_str() && self.verified(&entry.id, &entry.record);
            if !verified {
                seal::held(&mut memory);
            }
            let value = sealed(to, &memory);
            if value != text {
                note(&mut carried, verified, layout::MEMORIES, &entry);
                ops.push(Op::put(
                    layout::key(layout::MEMORIES, entry.id.clone()),
                    value,
                    Some(&entry.record),
                ));
            }
        }
        self.carry_copies(layout::TRASH, to, trash_copy, &mut carried, &mut ops)
            .await?;
        self.carry_copies(layout::HISTORY, to, history_copy, &mut carried, &mut ops)
            .await?;
        for entry in self.list_all(layout::QUARANTINE).await? {
            let key = layout::key(layout::QUARANTINE, entry.id.clone());
            let Ok(mut q) = from_json::<QuarantineRecord>(&key, &entry.record) else {
                continue;
            };
            let verified = seal::verified_quarantine(self.seal.as_ref(), &q);
            if !verified {
                seal::held(&mut q.memory);
            }
            seal::seal_quarantine(to, &mut q);
            let value = json(&q);
            if value.as_bytes() != entry.record.value {
                note(&mut carried, verified, layout::QUARANTINE, &entry);
                ops.push(Op::put(key, value, Some(&entry.record)));
            }
        }
        for entry in self.list_all(layout::SESSIONS).await? {
            let key = layout::key(layout::SESSIONS, entry.id.clone());
            let Ok(mut session) = from_json::<SessionRecord>(&key, &entry.record) else {
                continue;
            };
            let transcript = seal::verified_transcript(self.seal.as_ref(), &session);
            let verified = seal::verified_session(self.seal.as_ref(), &session);
            if !transcript {
                // Not logged by this store's engine: never the person's word.
                for m in &mut session.messages {
                    m.role = Role::Tool;
                }
            } else if !verified && session.status == SessionStatus::Pending {
                // Its status cannot be believed (set back by hand, or logged
                // before status was sealed and possibly so): consumed when
                // anything says it was, else read as tool text as a pass would.
                if session.consumed_at.is_some()
                    || session.consumed_by.is_some()
                    || session.state_seal.is_some()
                {
                    session.status = SessionStatus::Consumed;
                } else {
                    for m in &mut session.messages {
                        m.role = Role::Tool;
                    }
                }
            }
            let already = to.is_some_and(|k| k.verify_session(&session));
            if let Some(k) = to
                && !already
            {
                session.seal = Some(k.seal_session(&session));
                session.state_seal = Some(k.seal_state(&session));
            }
            let value = json(&session);
            if value.as_bytes() != entry.record.value {
                note(&mut carried, verified, layout::SESSIONS, &entry);
                ops.push(Op::put(key, value, Some(&entry.record)));
            }
        }
        for entry in self.list_all(layout::PLANS).await? {
            let key = layout::key(layout::PLANS, entry.id.clone());
            let id = entry.id.as_str();
            if !seal::verified_plan(self.seal.as_ref(), id, &entry.record.value) {
                carried.plans_dropped += 1;
                ops.push(Op::delete(key, &entry.record));
                continue;
            }
            let raw = seal::unsealed_plan(&entry.record.value);
            let value = match to {
                Some(k) => k.seal_plan(id, &raw),
                None => raw,
            };
            if value != entry.record.value {
                carried.sealed += 1;
                let Ok(value) = String::from_utf8(value) else {
                    continue;
                };
                ops.push(Op::put(key, value, Some(&entry.record)));
            }
        }
        if ops.is_empty() {
            return Ok(carried);
        }
        self.under_lease(async |lease| {
            let mut ops = ops;
            while !ops.is_empty() {
                let rest = ops.split_off(ops.len().min(CHUNK));
                let mut chunk = std::mem::replace(&mut ops, rest);
                let (generation, record) = self.read_generation().await?;
                chunk.push(self.bump_op(generation, record.as_ref()));
                let id = self.ids.next(self.now());
                self.commit(lease, &id, chunk, Vec::new()).await?;
            }
            Ok(())
        })
        .await?;
        Ok(carried)
    }
}

impl Upkeep<'_> {
    /// Carries every copy of a memory kept in namespace `ns` (trash, history):
    /// `copy` names a record's memory id and Markdown.
    async fn carry_copies<R: Serialize + DeserializeOwned>(
        &self,
        ns: &'static str,
        to: Option<&SealKey>,
        copy: fn(&mut R) -> (&MemoryId, &mut String),
        carried: &mut Carried,
        ops: &mut Vec<Op>,
    ) -> Result<()> {
        for entry in self.list_all(ns).await? {
            let key = layout::key(ns, entry.id.clone());
            let Ok(mut record) = from_json::<R>(&key, &entry.record) else {
                continue;
            };
            let (id, markdown) = copy(&mut record);
            if let Some((value, verified)) = self.carried_copy(to, id, markdown) {
                *markdown = value;
                note(carried, verified, ns, &entry);
                ops.push(Op::put(key, json(&record), Some(&entry.record)));
            }
        }
        Ok(())
    }

    /// A copy of memory `id` kept inside another record (trash, history) as the
    /// store it becomes keeps it — sealed under `to`, in its held form when it
    /// does not verify here — and whether it verified; `None` when it is
    /// already so, or is no memory.
    fn carried_copy(
        &self,
        to: Option<&SealKey>,
        id: &MemoryId,
        markdown: &str,
    ) -> Option<(String, bool)> {
        let mut memory = parse_memory(markdown).ok()?;
        let verified = memory.id == *id && self.verified_text(id, markdown);
        if !verified {
            seal::held(&mut memory);
        }
        let value = sealed(to, &memory);
        (value != markdown).then_some((value, verified))
    }
}

fn trash_copy(t: &mut TrashRecord) -> (&MemoryId, &mut String) {
    (&t.memory_id, &mut t.markdown)
}

fn history_copy(h: &mut HistoryRecord) -> (&MemoryId, &mut String) {
    (&h.memory_id, &mut h.markdown)
}

/// A memory's Markdown, sealed under `to` when there is one.
fn sealed(to: Option<&SealKey>, memory: &Memory) -> String {
    let text = render_memory(memory);
    match to {
        Some(k) => k.seal(memory.id.as_str(), &text),
        None => text,
    }
}

fn json<T: Serialize>(value: &T) -> String {
    String::from_utf8(to_json(value).to_vec()).expect("JSON is UTF-8")
}

fn note(carried: &mut Carried, verified: bool, ns: &str, entry: &Entry) {
    if verified {
        carried.sealed += 1;
    } else {
        carried.held.push(format!("{ns}/{}", entry.id));
    }
}
