//! Logging sessions, and reading the session log for the gates and for gather.

use chrono::{DateTime, Utc};
use dream_core::store::MAX_LIST_LIMIT;
use dream_core::{BatchOp, Fence, Key, Message, Precondition, Record, RecordId, Role, SessionId};

use crate::caller::Caller;
use crate::error::{DreamError, Result};
use crate::events::Event;
use crate::handles::{Reader, Writer};
use crate::layout::{self, hash_bytes};
use crate::lease::HeldLease;
use crate::options::{MAX_MESSAGE_BYTES, MAX_MESSAGES_PER_SESSION, MAX_SESSION_BYTES};
use crate::records::{
    Actor, AuditAction, SessionHeader, SessionRecord, SessionStatus, from_json, to_json,
};
use crate::state::{AuditEntry, State};

/// What [`Dream::log_transcript`] did with a part.
///
/// [`Dream::log_transcript`]: crate::Dream::log_transcript
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Logged {
    /// Logged as this new session.
    New(SessionId),
    /// Already logged, as this session; nothing stored.
    Already(SessionId),
}

/// One entry of the session log as gather saw it.
#[derive(Debug, Clone)]
pub(crate) struct LogEntry {
    pub id: RecordId,
    pub record: Record,
    pub header: SessionHeader,
}

/// The session log, read once.
#[derive(Debug, Default)]
pub(crate) struct SessionLog {
    /// Every session, oldest first (headers only; values kept for the batch).
    pub entries: Vec<LogEntry>,
}

impl SessionLog {
    /// Pending sessions of `scope`, oldest first, those held for the person
    /// included.
    pub fn pending<'a>(
        &'a self,
        scope: &'a dream_core::Scope,
    ) -> impl Iterator<Item = &'a LogEntry> {
        self.entries
            .iter()
            .filter(move |e| e.header.status == SessionStatus::Pending && &e.header.scope == scope)
    }

    /// Pending sessions of `scope` a pass takes: those held for the person
    /// (stuck) only when `with_stuck`.
    pub fn to_dream<'a>(
        &'a self,
        scope: &'a dream_core::Scope,
        with_stuck: bool,
    ) -> impl Iterator<Item = &'a LogEntry> {
        self.pending(scope)
            .filter(move |e| with_stuck || !e.header.is_stuck())
    }
}

fn validate(messages: &[Message]) -> Result<()> {
    let bad = |reason: String| Err(DreamError::invalid("session", reason));
    if messages.is_empty() {
        return bad("a session needs at least one message".into());
    }
    if messages.len() > MAX_MESSAGES_PER_SESSION {
        return bad(format!("more than {MAX_MESSAGES_PER_SESSION} messages"));
    }
    let mut total = 0usize;
    for (i, m) in messages.iter().enumerate() {
        if m.role == Role::System {
            return bad(format!(
                "message {} has role `system`: log what the user, the assistant and tools said, \
                 not the agent's own instructions",
                i + 1
            ));
        }
        if m.content.len() > MAX_MESSAGE_BYTES {
            return bad(format!(
                "message {} is larger than {MAX_MESSAGE_BYTES} bytes",
                i + 1
            ));
        }
        if m.content.contains('\0') {
            return bad(format!("message {} contains a NUL character", i + 1));
        }
        total += m.content.len();
    }
    if total > MAX_SESSION_BYTES {
        return bad(format!(
            "the session is larger than {MAX_SESSION_BYTES} bytes"
        ));
    }
    Ok(())
}

impl Writer<'_> {
    pub(crate) async fn log_session(&self, messages: Vec<Message>) -> Result<SessionId> {
        self.log_session_as(messages, Caller::Person).await
    }

    pub(crate) async fn log_session_as(
        &self,
        messages: Vec<Message>,
        caller: Caller,
    ) -> Result<SessionId> {
        validate(&messages)?;
        let messages = messages
            .into_iter()
            .map(|m| Message::new(caller.stored_role(m.role), m.content))
            .collect();
        self.under_log_lease(async |log, fence| self.log(messages, None, log, fence).await)
            .await
    }

    pub(crate) async fn log_transcript(&self, part: crate::transcripts::Part) -> Result<Logged> {
        validate(&part.messages)?;
        self.under_log_lease(async |log, fence| {
            if let Some(entry) = log.entries.iter().find(|e| {
                e.header.scope == self.scope && e.header.source.as_ref() == Some(&part.source)
            }) {
                return Ok(Logged::Already(entry.header.id.clone()));
            }
            self.log(part.messages, Some(part.source), log, fence)
                .await
                .map(Logged::New)
        })
        .await
    }

    /// Runs `work` with the session log read under the scope's logging lease and
    /// that lease's fence, and releases the lease afterwards: the one way a
    /// session is logged, so the pending bound and the already-logged check see
    /// every other logger's write.
    async fn under_log_lease<T>(
        &self,
        work: impl AsyncFnOnce(&SessionLog, Fence) -> Result<T>,
    ) -> Result<T> {
        let lease = HeldLease::take(
            &self.store,
            &layout::log_lock(&self.scope),
            self.options.lease_ttl,
            self.options.lease_wait,
        )
        .await?;
        let result = lease
            .guard(async {
                let log = self.session_log().await?;
                work(&log, lease.fence()).await
            })
            .await;
        lease.release().await;
        result
    }

    /// Redacts, checks the pending bound against `log` and stores a validated
    /// session, fenced by the logging lease.
    async fn log(
        &self,
        messages: Vec<Message>,
        source: Option<String>,
        log: &SessionLog,
        fence: Fence,
    ) -> Result<SessionId> {
        let mut redactions: Vec<String> = Vec::new();
        let mut flags: Vec<String> = Vec::new();
        let mut clean = Vec::with_capacity(messages.len());
        for message in messages {
            let scan = self.scanners.transcript(&message.content);
            let secrets = scan.secret_rules();
            let content = if secrets.is_empty() {
                message.content
            } else {
                let redacted = self
                    .scanners
                    .redact_transcript(&message.content)
                    .into_owned();
                if !self
                    .scanners
                    .transcript(&redacted)
                    .secret_rules()
                    .is_empty()
                {
                    return Err(DreamError::Refused {
                        reason: "a secret in the session could not be redacted; nothing was stored"
                            .into(),
                    });
                }
                redacted
            };
            for rule in secrets {
                if !redactions.contains(&rule) {
                    redactions.push(rule);
                }
            }
            for f in scan.findings.iter().filter(|f| !f.secret) {
                if !flags.contains(&f.rule) {
                    flags.push(f.rule.clone());
                }
            }
            clean.push(Message::new(message.role, content));
        }
        let pending = log.pending(&self.scope).count();
        if pending >= self.options.max_pending {
            return Err(DreamError::PendingFull {
                pending,
                bound: self.options.max_pending,
            });
        }
        let now = self.now();
        let id = SessionId::new(self.ids.next(now))?;
        let mut record = SessionRecord {
            status: SessionStatus::Pending,
            scope: self.scope.clone(),
            id: id.clone(),
            created_at: now,
            consumed_at: None,
            consumed_by: None,
            redactions: redactions.clone(),
            flags: flags.clone(),
            source,
            attempts: 0,
            held_back: None,
            messages: clean,
            seal: None,
            state_seal: None,
        };
        self.seal_session(&mut record);
        let bytes = to_json(&record);
        let hash = hash_bytes(&bytes);
        let key = layout::key(layout::SESSIONS, id.clone());
        let mut rules = redactions.clone();
        rules.extend(flags);
        let reason = if redactions.is_empty() {
            "session logged".to_owned()
        } else {
            format!(
                "session logged; {} kinds of secret redacted",
                redactions.len()
            )
        };
        let entry = AuditEntry::new(AuditAction::SessionLogged, Actor::Engine, reason)
            .sessions(std::slice::from_ref(&id))
            .rules(rules)
            .hash(hash);
        let ops = [
            BatchOp::put(key, bytes, Precondition::Absent),
            self.audit_op(entry).batch_op(),
        ];
        let event = Event::SessionLogged {
            session: id.clone(),
            redactions,
        };
        self.write_with_events(&ops, &[event], Some(fence)).await?;
        if self.options.auto_dream {
            let this = State::clone(self);
            let logged = id.clone();
            tokio::spawn(async move {
                if let Err(e) = this.pass().dream_excluding(Some(&logged)).await {
                    tracing::warn!(error = %e, "background dream pass failed");
                }
            });
        }
        Ok(id)
    }
}

impl State {
    /// Reads the session log (every scope), headers only.
    pub(crate) async fn session_log(&self) -> Result<SessionLog> {
        let ns = layout::namespace(layout::SESSIONS);
        let mut log = SessionLog::default();
        let mut after: Option<RecordId> = None;
        loop {
            let page = self.store.list(&ns, after.as_ref(), MAX_LIST_LIMIT).await?;
            for entry in page.entries {
                let key = Key::new(ns.clone(), entry.id.clone());
                let mut header: SessionHeader = from_json(&key, &entry.record)?;
                if !self.status_holds(&header)
                    && from_json::<SessionRecord>(&key, &entry.record)
                        .is_ok_and(|s| crate::seal::verified_transcript(self.seal.as_ref(), &s))
                {
                    // The engine logged it, but its status was set back by hand
                    // (or its consumed fields removed): read as consumed, never
                    // replayed by a pass. (A planted session, whose transcript
                    // does not verify either, stays pending: a pass reads it as
                    // tool text.)
                    tracing::warn!(session = %header.id, "session status does not match its state seal: read as consumed");
                    header.status = SessionStatus::Consumed;
                }
                log.entries.push(LogEntry {
                    id: entry.id,
                    record: entry.record,
                    header,
                });
            }
            match page.next {
                Some(next) => after = Some(next),
                None => return Ok(log),
            }
        }
    }

    /// Seals a session this engine writes: its transcript and its state (a
    /// no-op without a key). Every write of a session's status goes through here
    /// or [`State::mark_consumed`].
    pub(crate) fn seal_session(&self, session: &mut SessionRecord) {
        if let Some(key) = &self.seal {
            session.seal = Some(key.seal_session(session));
            session.state_seal = Some(key.seal_state(session));
        }
    }

    /// Marks a session consumed by `pass` at `now`, its state sealed again (its
    /// transcript seal, valid or not, is kept as it was).
    pub(crate) fn mark_consumed(
        &self,
        session: &mut SessionRecord,
        now: DateTime<Utc>,
        pass: &str,
    ) {
        session.status = SessionStatus::Consumed;
        session.consumed_at = Some(now);
        session.consumed_by = Some(pass.to_owned());
        if let Some(key) = &self.seal {
            session.state_seal = Some(key.seal_state(session));
        }
    }

    /// Whether a session's `pending` status can be believed: always without a
    /// key, and for a consumed session; a pending one whose state seal does not
    /// verify is believed only when nothing says it was ever consumed (a session
    /// logged before state seals, or planted: read as tool text by the pass,
    /// since [`crate::SealKey::verify_session`] fails for it).
    fn status_holds(&self, h: &SessionHeader) -> bool {
        let Some(key) = &self.seal else {
            return true;
        };
        if h.status != SessionStatus::Pending {
            return true;
        }
        if h.state_seal.is_none() {
            return h.consumed_at.is_none() && h.consumed_by.is_none();
        }
        key.verify_state(h)
    }

    /// Pending sessions of this scope a pass would take, not counting `exclude`
    /// (those held for the person are counted by [`Dream::stuck_sessions`]).
    ///
    /// [`Dream::stuck_sessions`]: crate::Dream::stuck_sessions
    pub(crate) async fn pending_count(&self, exclude: Option<&SessionId>) -> Result<usize> {
        let log = self.session_log().await?;
        Ok(log
            .to_dream(&self.scope, false)
            .filter(|e| exclude.is_none_or(|x| x.as_str() != e.id.as_str()))
            .count())
    }
}

impl Reader<'_> {
    pub(crate) async fn stuck_sessions(&self) -> Result<Vec<(SessionId, String)>> {
        let log = self.session_log().await?;
        let mut out = Vec::new();
        for entry in log.pending(&self.scope).filter(|e| e.header.is_stuck()) {
            let key = Key::new(layout::namespace(layout::SESSIONS), entry.id.clone());
            let record: SessionRecord = from_json(&key, &entry.record)?;
            let why = record
                .held_back
                .unwrap_or_else(|| "part of it could not be stored".to_owned());
            out.push((record.id, why));
        }
        Ok(out)
    }

    pub(crate) async fn session(&self, id: &SessionId) -> Result<Option<SessionRecord>> {
        let key = layout::key(layout::SESSIONS, id.clone());
        match self.store.get(&key).await? {
            None => Ok(None),
            Some(record) => {
                let session: SessionRecord = from_json(&key, &record)?;
                Ok((session.scope == self.scope).then_some(session))
            }
        }
    }
}
