//! Leases with a watchdog: a held lease is renewed every ttl/3 until released; when
//! a renewal fails for good the lease is marked lost and every later step of the
//! operation stops with `LockLost` (the store's fences stop any write that races).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use dream_core::{Fence, Key, Lease, LockName, RecordStore, StoreError, Write};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::claim::ClaimHolder;
use crate::error::{DreamError, Result};

/// Leases this process dropped unreleased whose release is still under way.
static RELEASING: AtomicUsize = AtomicUsize::new(0);
/// Woken when one of those releases ends.
static RELEASED: Notify = Notify::const_new();

/// Resolves once every lease this process dropped unreleased (an operation
/// cancelled part way, as a process stopping on a signal cancels its pass) has
/// been given up, so a process that exits after it leaves no lock held.
pub async fn releases_settled() {
    loop {
        let released = RELEASED.notified();
        if RELEASING.load(Ordering::SeqCst) == 0 {
            return;
        }
        released.await;
    }
}

/// A lease held by this process, kept alive by a background renewal task.
#[derive(Debug)]
pub(crate) struct HeldLease {
    store: Arc<dyn RecordStore>,
    lease: Lease,
    lost: watch::Receiver<bool>,
    task: JoinHandle<()>,
    /// Set once [`HeldLease::release`] gave the lock up.
    released: bool,
    /// The record naming the holder ([`ClaimHolder`]), kept while it is held.
    note: Option<Key>,
}

impl HeldLease {
    /// Takes `lock` if free; `Ok(None)` while someone else holds it.
    pub async fn try_take(
        store: &Arc<dyn RecordStore>,
        lock: &LockName,
        ttl: Duration,
    ) -> Result<Option<Self>> {
        Ok(store
            .try_lease(lock, ttl)
            .await?
            .map(|lease| Self::watch(store.clone(), lease, ttl, None)))
    }

    /// Takes `lock` if free, and keeps `note` naming this process as its holder
    /// (written now and at each renewal, removed with the lease).
    pub async fn try_take_noted(
        store: &Arc<dyn RecordStore>,
        lock: &LockName,
        ttl: Duration,
        note: Key,
    ) -> Result<Option<Self>> {
        let Some(lease) = store.try_lease(lock, ttl).await? else {
            return Ok(None);
        };
        let held = Self::watch(store.clone(), lease, ttl, Some(note));
        if let Err(e) = write_note(store, &held.lease, ttl, held.note.as_ref()).await {
            held.release().await;
            return Err(e.into());
        }
        Ok(Some(held))
    }

    /// Takes `lock`, waiting up to `wait` for its holder to release it or let it expire.
    pub async fn take(
        store: &Arc<dyn RecordStore>,
        lock: &LockName,
        ttl: Duration,
        wait: Duration,
    ) -> Result<Self> {
        let deadline = Instant::now() + wait;
        let mut pause = Duration::from_millis(20);
        loop {
            if let Some(held) = Self::try_take(store, lock, ttl).await? {
                return Ok(held);
            }
            if Instant::now() + pause > deadline {
                return Err(DreamError::Busy { lock: lock.clone() });
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(250));
        }
    }

    fn watch(store: Arc<dyn RecordStore>, lease: Lease, ttl: Duration, note: Option<Key>) -> Self {
        let (tx, lost) = watch::channel(false);
        let task = tokio::spawn(renew_loop(
            store.clone(),
            lease.clone(),
            ttl,
            tx,
            note.clone(),
        ));
        HeldLease {
            store,
            lease,
            lost,
            task,
            released: false,
            note,
        }
    }

    /// The fence to put on every write made under this lease.
    pub fn fence(&self) -> Fence {
        self.lease.fence()
    }

    /// `LockLost` once the watchdog failed to renew.
    pub fn check(&self) -> Result<()> {
        if *self.lost.borrow() {
            Err(DreamError::LockLost {
                lock: self.lease.lock().clone(),
            })
        } else {
            Ok(())
        }
    }

    /// Resolves when the lease is lost (never, while it is held).
    pub async fn lost(&self) -> DreamError {
        let mut rx = self.lost.clone();
        // An error means the watchdog ended without losing the lease: wait forever.
        if rx.wait_for(|lost| *lost).await.is_err() {
            std::future::pending::<()>().await;
        }
        DreamError::LockLost {
            lock: self.lease.lock().clone(),
        }
    }

    /// Runs `work` unless the lease is lost first.
    pub async fn guard<T>(&self, work: impl Future<Output = Result<T>>) -> Result<T> {
        self.check()?;
        tokio::select! {
            result = work => result,
            lost = self.lost() => Err(lost),
        }
    }

    /// Stops renewing and gives the lock up; `false` when it had been lost.
    pub async fn release(mut self) -> bool {
        self.released = true;
        self.task.abort();
        remove_note(&self.store, &self.lease, self.note.as_ref()).await;
        let lease = self.lease.clone();
        match self.store.release(lease).await {
            Ok(held) => held,
            Err(e) => {
                tracing::warn!(lock = %self.lease.lock(), error = %e, "releasing a lease failed; it will expire");
                false
            }
        }
    }
}

impl Drop for HeldLease {
    /// A lease dropped unreleased (its operation's future was dropped: a
    /// cancelled call) is released by a task on the runtime, so the lock is
    /// free at once rather than after its ttl; a write of the dropped operation
    /// still in flight is refused by its fence. With no runtime it expires.
    fn drop(&mut self) {
        self.task.abort();
        if self.released {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let store = self.store.clone();
            let lease = self.lease.clone();
            let note = self.note.take();
            RELEASING.fetch_add(1, Ordering::SeqCst);
            runtime.spawn(async move {
                remove_note(&store, &lease, note.as_ref()).await;
                if let Err(e) = store.release(lease).await {
                    tracing::warn!(error = %e, "releasing a dropped lease failed; it will expire");
                }
                RELEASING.fetch_sub(1, Ordering::SeqCst);
                RELEASED.notify_waiters();
            });
        }
    }
}

/// Writes the holder note of `lease` (fenced by it), holding for `ttl` from now.
async fn write_note(
    store: &Arc<dyn RecordStore>,
    lease: &Lease,
    ttl: Duration,
    note: Option<&Key>,
) -> std::result::Result<(), StoreError> {
    let Some(key) = note else {
        return Ok(());
    };
    let ttl = chrono::Duration::from_std(ttl).unwrap_or_else(|_| chrono::Duration::days(1));
    let holder = ClaimHolder::this_process(chrono::Utc::now() + ttl);
    let bytes = serde_json::to_vec(&holder).map_err(|e| StoreError::backend(false, e))?;
    store
        .put(key, bytes.into(), Write::any().fenced(lease.fence()))
        .await
        .map(|_| ())
}

/// Removes the holder note of `lease` while it still holds (a fenced delete,
/// which a successor's newer fence refuses); a note left behind expires.
async fn remove_note(store: &Arc<dyn RecordStore>, lease: &Lease, note: Option<&Key>) {
    if let Some(key) = note
        && let Err(e) = store.delete(key, Write::any().fenced(lease.fence())).await
    {
        tracing::debug!(error = %e, "the claim's holder note stays until it expires");
    }
}

async fn renew_loop(
    store: Arc<dyn RecordStore>,
    lease: Lease,
    ttl: Duration,
    lost: watch::Sender<bool>,
    note: Option<Key>,
) {
    let period = ttl / 3;
    let mut last_renewed = Instant::now();
    loop {
        tokio::time::sleep(period).await;
        match store.renew(&lease, ttl).await {
            Ok(_) => {
                last_renewed = Instant::now();
                if let Err(e) = write_note(&store, &lease, ttl, note.as_ref()).await {
                    tracing::debug!(error = %e, "the claim's holder note was not renewed");
                }
            }
            Err(StoreError::LockLost { .. }) => {
                tracing::warn!(lock = %lease.lock(), "lease lost: renewal refused");
                let _ = lost.send(true);
                return;
            }
            Err(e) => {
                tracing::warn!(lock = %lease.lock(), error = %e, "lease renewal failed; retrying");
                if last_renewed.elapsed() >= ttl {
                    let _ = lost.send(true);
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dream_core::testing::MemoryStore;
    use dream_core::{Clock, ManualClock};

    fn lock() -> LockName {
        LockName::new("t").unwrap()
    }

    #[tokio::test]
    async fn watchdog_keeps_a_lease_alive_past_its_ttl() {
        let store: Arc<dyn RecordStore> = Arc::new(MemoryStore::new());
        let ttl = Duration::from_secs(1);
        let held = HeldLease::try_take(&store, &lock(), ttl)
            .await
            .unwrap()
            .unwrap();
        tokio::time::sleep(Duration::from_millis(3_200)).await;
        held.check().unwrap();
        assert!(store.try_lease(&lock(), ttl).await.unwrap().is_none());
        assert!(held.release().await);
        assert!(store.try_lease(&lock(), ttl).await.unwrap().is_some());
    }

    #[tokio::test]
    async fn watchdog_reports_a_lost_lease() {
        let clock = ManualClock::new(chrono::Utc::now());
        let store: Arc<dyn RecordStore> =
            Arc::new(MemoryStore::with_clock(Arc::new(clock.clone())));
        let ttl = Duration::from_secs(1);
        let held = HeldLease::try_take(&store, &lock(), ttl)
            .await
            .unwrap()
            .unwrap();
        // The lease expires on the store's clock and another holder takes the lock.
        clock.advance(chrono::Duration::seconds(5));
        let thief = store.try_lease(&lock(), ttl).await.unwrap();
        assert!(thief.is_some());
        let started = Instant::now();
        let err = held.guard(std::future::pending::<Result<()>>()).await;
        assert!(matches!(err, Err(DreamError::LockLost { .. })));
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(matches!(held.check(), Err(DreamError::LockLost { .. })));
        assert!(!held.release().await);
        let _ = clock.now();
    }

    #[tokio::test]
    async fn a_lease_dropped_unreleased_is_released_soon() {
        let store: Arc<dyn RecordStore> = Arc::new(MemoryStore::new());
        let ttl = Duration::from_secs(60);
        let held = HeldLease::try_take(&store, &lock(), ttl)
            .await
            .unwrap()
            .unwrap();
        // A cancelled operation: its future, and the lease in it, dropped.
        drop(held);
        let again = HeldLease::take(&store, &lock(), ttl, Duration::from_secs(5))
            .await
            .unwrap();
        assert!(again.release().await);
    }

    #[tokio::test]
    async fn take_waits_for_an_expiring_holder_and_gives_up_when_busy() {
        let store: Arc<dyn RecordStore> = Arc::new(MemoryStore::new());
        let ttl = Duration::from_secs(1);
        let _other = store.try_lease(&lock(), ttl).await.unwrap().unwrap();
        let busy = HeldLease::take(&store, &lock(), ttl, Duration::from_millis(200)).await;
        assert!(matches!(busy, Err(DreamError::Busy { .. })));
        // The other holder never renews: after its TTL the lock is ours.
        let held = HeldLease::take(&store, &lock(), ttl, Duration::from_secs(3))
            .await
            .unwrap();
        held.check().unwrap();
        held.release().await;
    }
}
