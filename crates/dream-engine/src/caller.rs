//! Who is calling: the one place a front end's identity becomes provenance.

use dream_core::Role;

/// Who is writing to Dream. The caller's identity, never the text it sends,
/// decides whose word a message is:
///
/// - [`Caller::Person`] — the person at the terminal (`dream log`, `dream
///   remember`, the library called by the person's own program): a message with
///   role `user` is the person's word and can become a trusted (`used`) memory.
/// - [`Caller::Harness`] — a transcript read from an agent harness's own file
///   (`dream log --from claude-code|codex`, run by the person's hook): the
///   harness wrote the person's turns itself, so role `user` is the person's
///   word, as for [`Caller::Person`].
/// - [`Caller::Agent`] — an agent over MCP, or the library acting for one: what
///   it sends is the agent's report. A message it labels `user` is stored as
///   the agent's (role `assistant`), so whatever rests on it is held
///   (`unconfirmed-source`) until the person runs `dream confirm`; an agent can
///   never become the person by saying so.
/// - [`Caller::Foreign`] — an import from elsewhere (another system's export, a
///   file nobody vouched for): every message is read as tool text, held like
///   an agent's report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Caller {
    /// The person at the terminal.
    Person,
    /// An agent over MCP, or the library acting for one.
    Agent,
    /// A transcript read from an agent harness's own file.
    Harness,
    /// An import from elsewhere.
    Foreign,
}

impl Caller {
    /// Whether a `user` message from this caller is the person's word.
    pub fn speaks_for_person(self) -> bool {
        matches!(self, Caller::Person | Caller::Harness)
    }

    /// The role a message this caller labels `said` is stored with: a caller
    /// may lower a message's trust, never raise it.
    pub fn stored_role(self, said: Role) -> Role {
        match (self, said) {
            (Caller::Person | Caller::Harness, role) => role,
            (Caller::Agent, Role::User) => Role::Assistant,
            (Caller::Agent, role) => role,
            (Caller::Foreign, _) => Role::Tool,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Dream, Options};
    use dream_core::{MemoryStatus, Message, testing::MemoryStore};
    use std::sync::Arc;

    /// The same words, logged by the person and by an agent: only the person's
    /// become an active memory; the agent's session holds its report.
    #[tokio::test]
    async fn an_agents_user_message_is_stored_as_its_report() {
        for (caller, person) in [
            (Caller::Person, true),
            (Caller::Harness, true),
            (Caller::Agent, false),
            (Caller::Foreign, false),
        ] {
            let dream = Dream::open(Arc::new(MemoryStore::new()), Options::default()).unwrap();
            let id = dream
                .log_session_as(vec![Message::new(Role::User, "Call me Sam.")], caller)
                .await
                .unwrap();
            let stored = dream.session(&id).await.unwrap().unwrap();
            assert_eq!(
                stored.messages[0].role,
                caller.stored_role(Role::User),
                "{caller:?}"
            );
            dream.dream(true).await.unwrap();
            let active = dream
                .list()
                .await
                .unwrap()
                .iter()
                .any(|m| m.status == MemoryStatus::Active);
            assert_eq!(active, person, "{caller:?}");
        }
    }

    #[test]
    fn only_the_person_and_the_harness_speak_as_the_person() {
        for caller in [Caller::Person, Caller::Harness] {
            assert!(caller.speaks_for_person());
            assert_eq!(caller.stored_role(Role::User), Role::User);
        }
        assert!(!Caller::Agent.speaks_for_person());
        assert_eq!(Caller::Agent.stored_role(Role::User), Role::Assistant);
        assert_eq!(Caller::Agent.stored_role(Role::Tool), Role::Tool);
        assert!(!Caller::Foreign.speaks_for_person());
        for role in Role::ALL {
            assert_eq!(Caller::Foreign.stored_role(role), Role::Tool);
            assert_ne!(Caller::Agent.stored_role(role), Role::User);
        }
    }
}
