//! The store `dream mcp` serves: made, with its seal key, at the first write.
//! Starting the server, `initialize`, `tools/list` and every read create
//! nothing (an MCP client's health check runs the server in whatever directory
//! it was started from); until the first write, a store that does not exist
//! reads as empty. The first write (a `remember`, a `log_session`, a pass)
//! files the seal key and makes the store where [`locate`](super::locate) says.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use dream::core::{
    BatchOp, BatchOutcome, Bytes, Changes, Fence, Key, Lease, LockName, Namespace, Page, Record,
    RecordId, RecordStore, StoreError, StoreInfo, Version, VersionPage, Write,
};
use dream::engine::SealKey;
use tokio::sync::OnceCell;

use super::CliError;

/// What the first write must do before it lands.
#[derive(Debug, Clone)]
pub struct FirstWrite {
    /// The seal key to file (the configuration directory and the store's
    /// locator) when the store has none yet.
    pub seal: Option<(PathBuf, String, SealKey)>,
    /// The store's URL, when it is to be made.
    pub create: Option<(String, Option<PathBuf>)>,
}

/// A store opened (or made) at its first write; see the module docs.
#[derive(Debug)]
pub struct LazyStore {
    info: StoreInfo,
    opened: OnceCell<Arc<dyn RecordStore>>,
    prepared: OnceCell<()>,
    /// Set while this server makes the store (its reads meanwhile see it empty).
    making: AtomicBool,
    first_write: FirstWrite,
}

impl LazyStore {
    /// A store that exists already (`store`), or is made at the first write
    /// from `first_write.create`; `info` is the backend's (as it will report
    /// it once made).
    pub fn new(
        store: Option<Arc<dyn RecordStore>>,
        info: StoreInfo,
        first_write: FirstWrite,
    ) -> Self {
        LazyStore {
            info,
            opened: OnceCell::new_with(store),
            prepared: OnceCell::new(),
            making: AtomicBool::new(false),
            first_write,
        }
    }

    /// The store for a read: `None` while it is not made. One another process
    /// made meanwhile is an error saying to restart: this server's seal key
    /// was chosen before, and would not verify what that process sealed.
    fn existing(&self) -> Result<Option<&Arc<dyn RecordStore>>, StoreError> {
        if let Some(store) = self.opened.get() {
            return Ok(Some(store));
        }
        match &self.first_write.create {
            Some((url, _)) if super::locate::made(url) && !self.making.load(Ordering::SeqCst) => {
                // A write of this process may have made it since the first look:
                // `opened` is set before `making` is cleared.
                if let Some(store) = self.opened.get() {
                    return Ok(Some(store));
                }
                Err(refused(CliError::usage(
                    "the project's store was made by another process after `dream mcp` started: \
                 restart the MCP server (a new session) to use it",
                )))
            }
            _ => Ok(None),
        }
    }

    /// The store for a write: the seal key filed and the store made first
    /// (tried again at the next write when that fails).
    async fn for_write(&self) -> Result<&Arc<dyn RecordStore>, StoreError> {
        self.prepared
            .get_or_try_init(|| async {
                let first = &self.first_write;
                if let Some((dir, locator, key)) = &first.seal {
                    let kept = super::seal::keep(dir, locator, key).map_err(refused)?;
                    if kept.as_bytes() != key.as_bytes() {
                        return Err(refused(CliError::usage(
                            "another process made this store's seal key meanwhile: restart \
                             `dream mcp` to use it",
                        )));
                    }
                }
                if let Some((url, url_file)) = &first.create
                    && self.opened.get().is_none()
                {
                    self.making.store(true, Ordering::SeqCst);
                    let store = super::stores::open(url, url_file.as_deref()).await;
                    if let Ok(store) = store.as_ref() {
                        let _ = self.opened.set(store.clone());
                    }
                    self.making.store(false, Ordering::SeqCst);
                    store.map_err(refused)?;
                }
                Ok(())
            })
            .await?;
        self.opened
            .get()
            .ok_or_else(|| refused(CliError::usage("the store could not be made")))
    }
}

/// A failure making the store or its key, as the store's error.
fn refused(e: CliError) -> StoreError {
    StoreError::backend(false, std::io::Error::other(e.to_string()))
}

#[async_trait]
impl RecordStore for LazyStore {
    fn info(&self) -> StoreInfo {
        self.opened
            .get()
            .map_or_else(|| self.info.clone(), |s| s.info())
    }

    async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError> {
        match self.existing()? {
            Some(store) => store.get(key).await,
            None => Ok(None),
        }
    }

    async fn put(&self, key: &Key, value: Bytes, write: Write) -> Result<Version, StoreError> {
        self.for_write().await?.put(key, value, write).await
    }

    async fn delete(&self, key: &Key, write: Write) -> Result<bool, StoreError> {
        self.for_write().await?.delete(key, write).await
    }

    async fn list(
        &self,
        namespace: &Namespace,
        start_after: Option<&RecordId>,
        limit: usize,
    ) -> Result<Page, StoreError> {
        match self.existing()? {
            Some(store) => store.list(namespace, start_after, limit).await,
            None => Ok(Page::default()),
        }
    }

    async fn namespaces(&self) -> Result<Vec<Namespace>, StoreError> {
        match self.existing()? {
            Some(store) => store.namespaces().await,
            None => Ok(Vec::new()),
        }
    }

    async fn try_lease(&self, lock: &LockName, ttl: Duration) -> Result<Option<Lease>, StoreError> {
        self.for_write().await?.try_lease(lock, ttl).await
    }

    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError> {
        self.for_write().await?.renew(lease, ttl).await
    }

    async fn release(&self, lease: Lease) -> Result<bool, StoreError> {
        self.for_write().await?.release(lease).await
    }

    async fn write_batch(
        &self,
        ops: &[BatchOp],
        fence: Option<Fence>,
    ) -> Result<Vec<BatchOutcome>, StoreError> {
        self.for_write().await?.write_batch(ops, fence).await
    }

    async fn list_versions(
        &self,
        namespace: &Namespace,
        start_after: Option<&RecordId>,
        limit: usize,
    ) -> Result<VersionPage, StoreError> {
        match self.existing()? {
            Some(store) => store.list_versions(namespace, start_after, limit).await,
            None => Ok(VersionPage::default()),
        }
    }

    async fn compact(&self) -> Result<(), StoreError> {
        match self.existing()? {
            Some(store) => store.compact().await,
            None => Ok(()),
        }
    }

    async fn watch_changes(&self) -> Result<Option<Changes>, StoreError> {
        match self.existing()? {
            Some(store) => store.watch_changes().await,
            None => Ok(None),
        }
    }
}
