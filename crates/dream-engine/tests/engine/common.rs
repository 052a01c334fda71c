//! Shared helpers for the engine's tests.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use dream_core::testing::{MemoryStore, ScriptedModel};
use dream_core::{ManualClock, Message, RecordStore, Role, Scope};
use dream_engine::{Dream, Options};
use serde_json::Value;

/// A fixed start time for manual clocks.
pub fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-03-02T09:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

/// One user message.
pub fn user(text: &str) -> Vec<Message> {
    vec![Message::new(Role::User, text)]
}

/// Options for tests: gates open at one session, short leases.
pub fn quick() -> Options {
    Options {
        min_sessions: 1,
        min_hours: 0,
        lease_ttl: std::time::Duration::from_secs(2),
        claim_ttl: std::time::Duration::from_secs(2),
        lease_wait: std::time::Duration::from_secs(10),
        ..Options::default()
    }
}

/// A store, a manual clock shared by store and engine, and a handle.
pub struct Harness {
    pub store: Arc<MemoryStore>,
    pub clock: ManualClock,
    pub dream: Dream,
}

impl Harness {
    pub fn new(options: Options) -> Self {
        let clock = ManualClock::new(t0());
        let store = Arc::new(MemoryStore::with_clock(Arc::new(clock.clone())));
        let dream = Dream::open(store.clone(), options)
            .unwrap()
            .with_clock(Arc::new(clock.clone()));
        Harness {
            store,
            clock,
            dream,
        }
    }

    /// The same harness consolidating with `model`.
    pub fn with_model(mut self, model: &ScriptedModel) -> Self {
        self.dream = self.dream.clone().with_model(Arc::new(model.clone()));
        self
    }

    /// The same harness consolidating with a model of the test's own.
    pub fn with_model_arc(mut self, model: impl dream_core::LanguageModel) -> Self {
        self.dream = self.dream.clone().with_model(Arc::new(model));
        self
    }

    /// Another handle on the same store and clock, in `scope`.
    pub fn other_scope(&self, scope: &str) -> Dream {
        let options = Options {
            scope: Scope::new(scope).unwrap(),
            ..self.dream.options().clone()
        };
        Dream::open(self.store.clone(), options)
            .unwrap()
            .with_clock(Arc::new(self.clock.clone()))
    }
}

/// Every byte of every record of every namespace of a store.
pub async fn all_bytes(store: &dyn RecordStore) -> Vec<u8> {
    let mut out = Vec::new();
    for ns in store.namespaces().await.unwrap() {
        let mut after = None;
        loop {
            let page = store.list(&ns, after.as_ref(), 1000).await.unwrap();
            for e in &page.entries {
                out.extend_from_slice(e.id.as_str().as_bytes());
                out.push(b'\n');
                out.extend_from_slice(&e.record.value);
                out.push(b'\n');
            }
            match page.next {
                Some(n) => after = Some(n),
                None => break,
            }
        }
    }
    out
}

/// Whether `haystack` contains `needle`.
pub fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// A JSON answer as a model would send it.
pub fn answer(value: Value) -> String {
    value.to_string()
}

/// One message of a consolidation prompt, as the prompt frames it: `[index
/// role] text` inside `<session_… ref="S1">`.
pub struct FramedMessage {
    pub reference: String,
    pub index: usize,
    pub role: String,
    pub text: String,
}

/// The framed messages of a consolidation prompt, in order: what a scripted
/// model reads to answer about each session.
pub fn framed_messages(prompt: &str) -> Vec<FramedMessage> {
    let mut out = Vec::new();
    let mut reference: Option<String> = None;
    for line in prompt.lines() {
        if let Some(rest) = line.strip_prefix("<session_") {
            reference = rest
                .split("ref=\"")
                .nth(1)
                .and_then(|r| r.split('"').next())
                .map(str::to_owned);
            continue;
        }
        let Some((head, text)) = line.strip_prefix('[').and_then(|l| l.split_once("] ")) else {
            continue;
        };
        let (Some((index, role)), Some(reference)) = (head.split_once(' '), &reference) else {
            continue;
        };
        let Ok(index) = index.parse::<usize>() else {
            continue;
        };
        out.push(FramedMessage {
            reference: reference.clone(),
            index,
            role: role.to_owned(),
            text: text.to_owned(),
        });
    }
    out
}

/// A model that answers like an honest consolidator: one memory per user line of
/// every framed session, citing that session. Counts its calls; may be slow.
#[derive(Debug, Clone, Default)]
pub struct EchoModel {
    pub delay: std::time::Duration,
    pub calls: Arc<std::sync::atomic::AtomicUsize>,
}

impl EchoModel {
    pub fn slow(delay: std::time::Duration) -> Self {
        EchoModel {
            delay,
            ..EchoModel::default()
        }
    }

    pub fn calls(&self) -> usize {
        self.calls.load(std::sync::atomic::Ordering::SeqCst)
    }
}

#[dream_core::async_trait]
impl dream_core::LanguageModel for EchoModel {
    fn describe(&self) -> String {
        "echo".to_owned()
    }

    async fn complete(
        &self,
        request: &dream_core::CompletionRequest,
    ) -> Result<dream_core::Completion, dream_core::ModelError> {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        tokio::time::sleep(self.delay).await;
        let creates: Vec<Value> = framed_messages(&request.user)
            .into_iter()
            .filter(|m| m.role == "user")
            .map(|m| {
                serde_json::json!({
                    "name": m.text, "kind": "project", "content": format!("{} is recorded.", m.text),
                    "evidence": [{"session": m.reference, "message": m.index}]
                })
            })
            .collect();
        Ok(dream_core::Completion {
            text: serde_json::json!({ "create": creates }).to_string(),
            usage: dream_core::TokenUsage {
                input: 10,
                output: 10,
            },
            model: "echo".to_owned(),
            truncated: false,
        })
    }
}

/// A model fooled by everything it reads: for every message of every framed
/// session it proposes a memory holding that message's text, citing it. The
/// person's lines become the person's word; tool lines become memories resting
/// on tool text only.
#[derive(Debug, Clone, Default)]
pub struct FooledModel;

#[dream_core::async_trait]
impl dream_core::LanguageModel for FooledModel {
    fn describe(&self) -> String {
        "fooled".to_owned()
    }

    async fn complete(
        &self,
        request: &dream_core::CompletionRequest,
    ) -> Result<dream_core::Completion, dream_core::ModelError> {
        let creates: Vec<serde_json::Value> = framed_messages(&request.user)
            .into_iter()
            .map(|m| {
                serde_json::json!({
                    "name": m.text.chars().take(40).collect::<String>(),
                    "kind": "project",
                    "content": m.text,
                    "evidence": [{"session": m.reference, "message": m.index}]
                })
            })
            .collect();
        Ok(dream_core::Completion {
            text: serde_json::json!({ "create": creates }).to_string(),
            usage: dream_core::TokenUsage::default(),
            model: "fooled".to_owned(),
            truncated: false,
        })
    }
}
