//! [`EncryptedStore`]: the `RecordStore` layer.

use std::fmt;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use dream_core::store::{MAX_BATCH_OPS, check_batch};
use dream_core::{
    BatchOp, BatchOutcome, Bytes, Changes, Entry, Fence, Key, Lease, LockName, Namespace, Page,
    Record, RecordId, RecordStore, StoreError, StoreInfo, Version, VersionPage, Write, async_trait,
};

use crate::counter::{self, KeyUsage, WriteCounter};
use crate::envelope::{self, OVERHEAD, OpenFailure, SealFailure};
use crate::error::EncryptionError;
use crate::key::{KeyId, KeyRing};

/// The inner store's namespace this layer keeps its write counters in. It is
/// hidden from `namespaces()` and refused to callers.
pub const RESERVED_NAMESPACE: &str = "encryption";

/// Default ceiling on encryptions per key: 2^30, a quarter of the 2^32 bound on
/// random 96-bit nonces.
pub const DEFAULT_WRITE_CEILING: u64 = 1 << 30;

/// Highest ceiling accepted: 2^31, half the random-nonce bound.
pub const MAX_WRITE_CEILING: u64 = 1 << 31;

/// Default number of counts a process reserves at once.
pub const DEFAULT_COUNTER_BLOCK: u64 = 1024;

/// Values at least this large are encrypted and decrypted off the async workers.
const OFF_WORKER_THRESHOLD: usize = 1024 * 1024;

/// Tunables of an [`EncryptedStore`].
#[derive(Debug, Clone)]
pub struct EncryptionOptions {
    pub(crate) write_ceiling: u64,
    pub(crate) counter_block: u64,
    pub(crate) rotation_lock: LockName,
    pub(crate) rotation_ttl: Duration,
    pub(crate) rotation_batch: usize,
}

impl Default for EncryptionOptions {
    fn default() -> Self {
        EncryptionOptions {
            write_ceiling: DEFAULT_WRITE_CEILING,
            counter_block: DEFAULT_COUNTER_BLOCK,
            rotation_lock: LockName::new("encryption-rotation").expect("valid lock name"),
            rotation_ttl: Duration::from_secs(30),
            rotation_batch: 100,
        }
    }
}

impl EncryptionOptions {
    /// Encryptions allowed per key before the layer refuses and asks for rotation.
    /// Clamped to `1..=MAX_WRITE_CEILING`.
    pub fn write_ceiling(mut self, ceiling: u64) -> Self {
        self.write_ceiling = ceiling.clamp(1, MAX_WRITE_CEILING);
        self
    }

    /// Counts reserved in the inner store at a time. Clamped to `1..=65536`.
    pub fn counter_block(mut self, block: u64) -> Self {
        self.counter_block = block.clamp(1, 65536);
        self
    }

    /// The lock rotation holds (default `encryption-rotation`).
    pub fn rotation_lock(mut self, lock: LockName) -> Self {
        self.rotation_lock = lock;
        self
    }

    /// The rotation lease's TTL; it is renewed every third of it. At least 1 s.
    pub fn rotation_ttl(mut self, ttl: Duration) -> Self {
        self.rotation_ttl = ttl.max(Duration::from_secs(1));
        self
    }

    /// Records rotation lists per page (and between progress reports). Clamped to
    /// `1..=1000`.
    pub fn rotation_batch(mut self, batch: usize) -> Self {
        self.rotation_batch = dream_core::store::clamp_list_limit(batch);
        self
    }
}

/// A `RecordStore` that encrypts every value with AES-256-GCM before handing it
/// to the inner store. See the crate documentation for what it protects.
pub struct EncryptedStore<S> {
    pub(crate) inner: S,
    ring: RwLock<Arc<KeyRing>>,
    pub(crate) counter: WriteCounter,
    pub(crate) options: EncryptionOptions,
    pub(crate) reserved: Namespace,
}

impl<S: fmt::Debug> fmt::Debug for EncryptedStore<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EncryptedStore")
            .field("inner", &self.inner)
            .field(
                "keys",
                &*self.ring.read().unwrap_or_else(|e| e.into_inner()).clone(),
            )
            .field("options", &self.options)
            .finish()
    }
}

fn corrupt(key: &Key, failure: OpenFailure) -> StoreError {
    // The kind goes to the debug log only: the error is the same for every kind
    // and says nothing about keys.
    tracing::debug!(record = %key, kind = failure.as_str(), "encrypted record failed to open");
    StoreError::Corrupt {
        key: Some(key.clone()),
        reason: "encrypted record failed authentication".to_owned(),
    }
}

fn seal_error(failure: SealFailure) -> StoreError {
    match failure {
        SealFailure::Random => EncryptionError::Random.into_store_error(),
        SealFailure::Cipher => StoreError::backend(false, "AES-GCM refused to encrypt the value"),
    }
}

/// The runtime to move `size` bytes of cipher work to, when it is large enough to
/// matter and a runtime is there.
fn blocking_pool(size: usize) -> Option<tokio::runtime::Handle> {
    if size >= OFF_WORKER_THRESHOLD {
        tokio::runtime::Handle::try_current().ok()
    } else {
        None
    }
}

fn join_error(err: tokio::task::JoinError) -> StoreError {
    StoreError::backend(false, format!("encryption task failed: {err}"))
}

impl<S: RecordStore> EncryptedStore<S> {
    /// Wraps `inner`, encrypting under `ring`'s active key, with default options.
    /// Touches nothing in the inner store until the first write.
    pub fn new(inner: S, ring: KeyRing) -> Self {
        Self::with_options(inner, ring, EncryptionOptions::default())
    }

    /// Wraps `inner` with the given options.
    pub fn with_options(inner: S, ring: KeyRing, options: EncryptionOptions) -> Self {
        EncryptedStore {
            inner,
            ring: RwLock::new(Arc::new(ring)),
            counter: WriteCounter::default(),
            options,
            reserved: Namespace::new(RESERVED_NAMESPACE).expect("valid namespace"),
        }
    }

    /// The inner store (which sees only ciphertext).
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// The options in force.
    pub fn options(&self) -> &EncryptionOptions {
        &self.options
    }

    /// The key that encrypts new writes.
    pub fn active_key(&self) -> KeyId {
        self.ring().active()
    }

    /// Every key id this store can read with.
    pub fn key_ids(&self) -> Vec<KeyId> {
        self.ring().ids()
    }

    /// How much key `id` has been used, as persisted in the inner store.
    pub async fn key_usage(&self, id: KeyId) -> Result<KeyUsage, StoreError> {
        counter::usage(&self.inner, &self.reserved, id).await
    }

    /// Largest plaintext value accepted: the inner store's limit minus the envelope.
    pub fn max_value_size(&self) -> usize {
        self.inner
            .info()
            .capabilities
            .max_value_size
            .saturating_sub(OVERHEAD)
    }

    pub(crate) fn ring(&self) -> Arc<KeyRing> {
        self.ring.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn remove_from_ring(&self, id: KeyId) {
        let mut ring = self.ring.write().unwrap_or_else(|e| e.into_inner());
        *ring = Arc::new(ring.without(id));
    }

    fn check_key(&self, key: &Key) -> Result<(), StoreError> {
        if key.namespace == self.reserved {
            return Err(StoreError::InvalidKey {
                key: key.clone(),
                reason: format!(
                    "namespace `{RESERVED_NAMESPACE}` is reserved by the encryption layer"
                ),
            });
        }
        Ok(())
    }

    /// Takes one count of the active key's budget and encrypts `value` for `key`.
    pub(crate) async fn seal(
        &self,
        ring: &Arc<KeyRing>,
        key: &Key,
        value: Bytes,
    ) -> Result<Bytes, StoreError> {
        self.counter
            .take(
                &self.inner,
                &self.reserved,
                ring.active(),
                self.options.counter_block,
                self.options.write_ceiling,
            )
            .await
            .map_err(EncryptionError::into_store_error)?;
        let sealed = match blocking_pool(value.len()) {
            Some(pool) => {
                let (ring, key) = (ring.clone(), key.clone());
                pool.spawn_blocking(move || envelope::seal(&ring, &key, &value))
                    .await
                    .map_err(join_error)?
            }
            None => envelope::seal(ring, key, &value),
        };
        sealed.map(Bytes::from).map_err(seal_error)
    }

    /// Decrypts the value stored at `key`.
    pub(crate) async fn open(
        &self,
        ring: &Arc<KeyRing>,
        key: &Key,
        record: Record,
    ) -> Result<Record, StoreError> {
        let Record { value, version } = record;
        let opened = match blocking_pool(value.len()) {
            Some(pool) => {
                let (ring, key) = (ring.clone(), key.clone());
                pool.spawn_blocking(move || envelope::open(&ring, &key, value))
                    .await
                    .map_err(join_error)?
            }
            None => envelope::open(ring, key, value),
        };
        match opened {
            Ok(value) => Ok(Record { value, version }),
            Err(failure) => Err(corrupt(key, failure)),
        }
    }
}

#[async_trait]
impl<S: RecordStore> RecordStore for EncryptedStore<S> {
    fn info(&self) -> StoreInfo {
        let inner = self.inner.info();
        let mut capabilities = inner.capabilities;
        capabilities.max_value_size = capabilities.max_value_size.saturating_sub(OVERHEAD);
        // Every value of a batch grows by the envelope's overhead on its way in.
        if capabilities.atomic_batch_bytes != usize::MAX {
            capabilities.atomic_batch_bytes = capabilities
                .atomic_batch_bytes
                .saturating_sub(OVERHEAD * MAX_BATCH_OPS);
        }
        StoreInfo {
            name: format!("encrypted({})", inner.name),
            capabilities,
        }
    }

    async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError> {
        self.check_key(key)?;
        let Some(record) = self.inner.get(key).await? else {
            return Ok(None);
        };
        let ring = self.ring();
        self.open(&ring, key, record).await.map(Some)
    }

    async fn put(&self, key: &Key, value: Bytes, write: Write) -> Result<Version, StoreError> {
        self.check_key(key)?;
        let max = self.max_value_size();
        let size = value.len();
        if size > max {
            return Err(StoreError::TooLarge { size, max });
        }
        let ring = self.ring();
        let sealed = self.seal(&ring, key, value).await?;
        match self.inner.put(key, sealed, write).await {
            // The inner limit shrank since we checked: report it in plaintext terms.
            Err(StoreError::TooLarge { .. }) => Err(StoreError::TooLarge {
                size,
                max: self.max_value_size(),
            }),
            other => other,
        }
    }

    async fn delete(&self, key: &Key, write: Write) -> Result<bool, StoreError> {
        self.check_key(key)?;
        self.inner.delete(key, write).await
    }

    async fn list(
        &self,
        namespace: &Namespace,
        start_after: Option<&RecordId>,
        limit: usize,
    ) -> Result<Page, StoreError> {
        if *namespace == self.reserved {
            return Err(StoreError::Unsupported {
                op: "listing the namespace reserved by the encryption layer",
            });
        }
        let page = self.inner.list(namespace, start_after, limit).await?;
        let ring = self.ring();
        let mut entries = Vec::with_capacity(page.entries.len());
        for Entry { id, record } in page.entries {
            let key = Key::new(namespace.clone(), id);
            let record = self.open(&ring, &key, record).await?;
            entries.push(Entry { id: key.id, record });
        }
        Ok(Page {
            entries,
            next: page.next,
        })
    }

    async fn write_batch(
        &self,
        ops: &[BatchOp],
        fence: Option<Fence>,
    ) -> Result<Vec<BatchOutcome>, StoreError> {
        for op in ops {
            self.check_key(op.key())?;
        }
        check_batch(ops, self.max_value_size())?;
        let ring = self.ring();
        let mut sealed = Vec::with_capacity(ops.len());
        for op in ops {
            sealed.push(match op {
                BatchOp::Put { key, value, pre } => BatchOp::Put {
                    key: key.clone(),
                    value: self.seal(&ring, key, value.clone()).await?,
                    pre: *pre,
                },
                BatchOp::Delete { key, pre } => BatchOp::Delete {
                    key: key.clone(),
                    pre: *pre,
                },
            });
        }
        match self.inner.write_batch(&sealed, fence).await {
            // The inner limit shrank since we checked: report it in plaintext terms.
            Err(StoreError::TooLarge { size, .. }) => Err(StoreError::TooLarge {
                size: size.saturating_sub(OVERHEAD),
                max: self.max_value_size(),
            }),
            other => other,
        }
    }

    async fn list_versions(
        &self,
        namespace: &Namespace,
        start_after: Option<&RecordId>,
        limit: usize,
    ) -> Result<VersionPage, StoreError> {
        if *namespace == self.reserved {
            return Err(StoreError::Unsupported {
                op: "listing the namespace reserved by the encryption layer",
            });
        }
        self.inner
            .list_versions(namespace, start_after, limit)
            .await
    }

    async fn compact(&self) -> Result<(), StoreError> {
        self.inner.compact().await
    }

    async fn watch_changes(&self) -> Result<Option<Changes>, StoreError> {
        self.inner.watch_changes().await
    }

    async fn namespaces(&self) -> Result<Vec<Namespace>, StoreError> {
        let mut namespaces = self.inner.namespaces().await?;
        namespaces.retain(|ns| *ns != self.reserved);
        Ok(namespaces)
    }

    async fn try_lease(&self, lock: &LockName, ttl: Duration) -> Result<Option<Lease>, StoreError> {
        self.inner.try_lease(lock, ttl).await
    }

    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError> {
        self.inner.renew(lease, ttl).await
    }

    async fn release(&self, lease: Lease) -> Result<bool, StoreError> {
        self.inner.release(lease).await
    }
}
