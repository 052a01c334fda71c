//! Dream's core: validated ids, the memory and session model, the Markdown codec,
//! the transcript sanitizer, the store contract every backend implements, the
//! language-model and embedding seams and an injectable clock. No I/O happens here.

pub mod clock;
pub mod display;
pub mod embed;
pub mod failpoint;
pub mod id;
pub mod llm;
pub mod markdown;
pub mod model;
pub mod sanitize;
pub mod store;
pub mod store_url;
#[cfg(feature = "testing")]
pub mod testing;

pub use async_trait::async_trait;
pub use bytes::Bytes;
pub use clock::{Clock, ManualClock, SystemClock};
pub use embed::{EmbedError, Embedder};
pub use id::{InvalidId, LockName, MemoryId, Namespace, RecordId, Scope, SessionId};
pub use llm::{Completion, CompletionRequest, LanguageModel, ModelError, TokenUsage};
pub use markdown::{CodecError, parse_memory, render_memory};
pub use model::{Memory, MemoryKind, MemoryStatus, Message, Role, Session};
pub use sanitize::sanitize;
pub use store::{
    BatchOp, BatchOutcome, Capabilities, Changes, Entry, Fence, Key, Lease, Page, Precondition,
    Record, RecordStore, StoreError, StoreInfo, Version, VersionEntry, VersionPage, Write,
};
pub use store_url::{StoreUrl, StoreUrlError};
