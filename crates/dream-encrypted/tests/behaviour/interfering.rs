//! The interfering store of `behaviour.rs`: an inner store that changes a record
//! just before rotation's compare-and-swap, as a concurrent writer would, and the
//! rotation test that uses it on every backend.

use super::*;

/// What the interfering store does just before rotation's compare-and-swap.
#[derive(Debug)]
pub(super) enum Interference {
    Overwrite(Bytes),
    Delete,
    Stall(Duration),
}

/// A store that, the first time a `Matches` put (alone or in a batch) reaches
/// one of its targets, changes the record first, as a concurrent writer in
/// another process would.
#[derive(Debug)]
pub(super) struct Interfering {
    pub(super) inner: Inner,
    pub(super) actions: Mutex<HashMap<Key, Interference>>,
}

#[async_trait]
impl RecordStore for Interfering {
    fn info(&self) -> StoreInfo {
        self.inner.info()
    }
    async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError> {
        self.inner.get(key).await
    }
    async fn put(&self, key: &Key, value: Bytes, write: Write) -> Result<Version, StoreError> {
        self.interfere(key, write.pre).await?;
        self.inner.put(key, value, write).await
    }
    async fn delete(&self, key: &Key, write: Write) -> Result<bool, StoreError> {
        self.inner.delete(key, write).await
    }
    async fn list(
        &self,
        namespace: &Namespace,
        start_after: Option<&RecordId>,
        limit: usize,
    ) -> Result<Page, StoreError> {
        self.inner.list(namespace, start_after, limit).await
    }
    async fn namespaces(&self) -> Result<Vec<Namespace>, StoreError> {
        self.inner.namespaces().await
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
    async fn write_batch(
        &self,
        ops: &[dream_core::BatchOp],
        fence: Option<dream_core::Fence>,
    ) -> Result<Vec<dream_core::BatchOutcome>, StoreError> {
        for op in ops {
            self.interfere(op.key(), op.pre()).await?;
        }
        self.inner.write_batch(ops, fence).await
    }
    async fn list_versions(
        &self,
        namespace: &Namespace,
        start_after: Option<&RecordId>,
        limit: usize,
    ) -> Result<dream_core::VersionPage, StoreError> {
        self.inner
            .list_versions(namespace, start_after, limit)
            .await
    }
    async fn compact(&self) -> Result<(), StoreError> {
        self.inner.compact().await
    }

    async fn watch_changes(&self) -> Result<Option<dream_core::Changes>, StoreError> {
        self.inner.watch_changes().await
    }
}

impl Interfering {
    /// Does what is planned for `key` before a `Matches` write of it, once.
    async fn interfere(&self, key: &Key, pre: Precondition) -> Result<(), StoreError> {
        if !matches!(pre, Precondition::Matches(_)) {
            return Ok(());
        }
        let action = self.actions.lock().expect("lock").remove(key);
        match action {
            Some(Interference::Overwrite(bytes)) => {
                self.inner.put(key, bytes, Write::any()).await?;
            }
            Some(Interference::Delete) => {
                self.inner.delete(key, Write::any()).await?;
            }
            Some(Interference::Stall(pause)) => tokio::time::sleep(pause).await,
            None => {}
        }
        Ok(())
    }
}

pub(super) async fn rotation_never_clobbers_a_concurrent_write_or_resurrects_a_delete(
    place: Arc<Place>,
) {
    let inner = place.open().await;
    let old = encrypted(&inner, ring1());
    fill(&old, &[("memories", 3)]).await;
    let updated = key("memories", "r0001");
    let deleted = key("memories", "r0002");

    // The bytes a concurrent writer (holding key 2) puts at `updated`.
    let scratch: Inner = Arc::new(MemoryStore::new());
    let writer = encrypted(&scratch, ring12());
    writer
        .put(&updated, Bytes::from_static(b"newer value"), Write::any())
        .await
        .expect("scratch put");
    let newer = scratch
        .get(&updated)
        .await
        .expect("get")
        .expect("present")
        .value;

    let interfering = Interfering {
        inner: inner.clone(),
        actions: Mutex::new(HashMap::from([
            (updated.clone(), Interference::Overwrite(newer)),
            (deleted.clone(), Interference::Delete),
        ])),
    };
    let store = EncryptedStore::new(interfering, ring12());
    let done = store
        .rotate(|_| ControlFlow::Continue(()))
        .await
        .expect("rotate");
    assert!(done.complete);
    assert!(
        store.inner().actions.lock().expect("lock").is_empty(),
        "interfered"
    );
    assert_eq!(
        (
            done.scanned,
            done.reencrypted,
            done.already_current,
            done.vanished
        ),
        (3, 1, 1, 1)
    );
    let store = encrypted(&inner, ring12());
    assert_eq!(
        store
            .get(&updated)
            .await
            .expect("get")
            .expect("present")
            .value
            .as_ref(),
        b"newer value",
        "the concurrent write survives"
    );
    assert_eq!(
        store.get(&deleted).await.expect("get"),
        None,
        "stays deleted"
    );
    assert_eq!(
        store
            .get(&key("memories", "r0000"))
            .await
            .expect("get")
            .expect("present")
            .value
            .as_ref(),
        b"memories record 0"
    );
    store
        .drop_key(KeyId::new(1))
        .await
        .expect("nothing left under key 1");
}
