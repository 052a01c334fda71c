//! Dream's [`RecordStore`] on a local directory (by default `.dream/`).
//!
//! # Layout
//!
//! ```text
//! .dream/                      0700, owned by the user running Dream
//!   .dream-store               marker: "dream-fs 1" (format version)
//!   .gitignore                 "*": the store never lands in git
//!   .lock                      flock()ed around every critical section
//!   .version-reserved          durable high-water mark of the version counter
//!   .version                   next version to issue (an in-place hint)
//!   .leases/<lock>             per lock: newest fence, holder, expiry
//!   memories/                  one directory per namespace, 0700
//!     <id>.md                  the memory's Markdown, byte for byte, nothing else
//!     .<id>.md.meta            sidecar: version and SHA-256 of the value
//!   sessions/
//!     <id>                     other namespaces: the bare id, any bytes
//!     .<id>.meta
//! ```
//!
//! Files are created 0600 and directories 0700. Ids are validated by
//! `dream-core` (`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`), so an id can never name
//! a path, a sidecar, a temporary file or the store's own files (all of which
//! start with `.`).
//!
//! # Opening
//!
//! [`FsStore::open`] creates the directory when nothing is there (built in a
//! temporary sibling and renamed into place, so no process sees half a store).
//! An existing directory is refused with `Incompatible` when it has no marker
//! (Dream did not create it), another format version, another owner, or write
//! permission for group or others. Opening takes the store lock once to move
//! the version counter past everything issued before (see below). A store
//! this user cannot write (read-only files, a read-only mount) opens to read
//! without the lock: reads work, and every write is refused by the filesystem.
//!
//! # No symlink is followed
//!
//! Every path inside the store is opened one component at a time with
//! `openat(…, O_NOFOLLOW)` (plus `O_DIRECTORY` for directories) from a handle
//! on the root; the root itself is opened `O_NOFOLLOW` too (the components of
//! the path leading to it are the caller's). A value file, sidecar or
//! namespace directory that is a symbolic link is reported as `Corrupt`
//! naming the record or namespace; it is neither followed, read through, nor
//! replaced, so nothing outside the root is read or written. Value files that
//! are not regular files (a FIFO, a directory) or that have another hard link
//! are refused the same way. A temporary file is removed (never opened)
//! before it is created with `O_EXCL`.
//!
//! # Writes and crash consistency
//!
//! A write holds the store lock (an in-process mutex plus `flock` on `.lock`,
//! so writers in every process are serialised), checks the fence and the
//! precondition, takes a version from the counter, then:
//!
//! 1. writes the value to `.<file>.tmp` (removing any leftover first) and
//!    fsyncs it;
//! 2. renames it over the value file;
//! 3. overwrites the sidecar in place with the new `version` and `sha256`
//!    (fixed length, no fsync; refused if it is a link or hard-linked);
//! 4. fsyncs the namespace directory, and only then reports success.
//!
//! A read needs no lock: it reads the value, hashes it and returns it only if
//! the hash matches the sidecar. When it does not (a write in flight, a crash
//! between steps 2 and 3, a sidecar lost or torn by a power cut, or a hand
//! edit), the reader takes the lock and looks again; if the files still
//! disagree the record is *repaired by adoption*: the bytes in the value file
//! are kept and given a fresh version from the counter, written to the sidecar
//! durably (fsync of the sidecar and the directory). Repair never reissues a
//! version, and never loses the value file's bytes. A crash before step 2
//! leaves the old record whole (and a temporary file, removed by the next
//! write or repair of that record); a crash between 2 and 3 leaves a lagging
//! sidecar, so the new value is adopted under a fresh version.
//!
//! The sidecar is deliberately not fsynced on the write path (the value is):
//! that saves one fsync per write (measured at about 1.5–1.8× the cost of a
//! raw durable file write otherwise), and the only thing a power cut can do
//! to it is leave it stale, empty or torn, which the hash check catches and
//! adoption repairs. So after a power cut an acknowledged value is intact and
//! readable, but its version may have been replaced by a newer one. After a
//! process crash (the page cache survives) versions are exactly as issued.
//!
//! A hand-edited value file is handled the same way, on purpose: the edit is
//! adopted as a new version (logged with `tracing::warn!`, naming the key),
//! so a writer holding the old version gets `Conflict` instead of silently
//! overwriting the edit. The hash detects accidents, not attackers: anyone
//! who can write the store can write a matching sidecar too (the
//! threat model treats `.dream/` as trusted only if the filesystem is).
//!
//! Deletes unlink the value file, then the sidecar, then fsync the directory;
//! a sidecar without a value file is an absent record.
//!
//! # Batches
//!
//! `write_batch` holds the store lock for the whole batch: it checks the fence
//! and every precondition first (so a `Conflict` or `LockLost` writes nothing),
//! then makes the batch durable with one flush pass instead of one per record:
//!
//! 1. writes every value to its temporary file (no fsync);
//! 2. one `syncfs` of the store's filesystem (Linux; elsewhere each temporary
//!    file is fsynced as it is written), so every value is on disk before any
//!    rename;
//! 3. in the batch's order: renames each value over its file and writes its
//!    sidecar (as a put does), or unlinks a deleted record's files;
//! 4. fsyncs each namespace directory touched, once, and only then reports
//!    success.
//!
//! Each record is written whole (a crash leaves it old or new, never torn), but
//! the batch is not atomic (`atomic_batch_bytes: 0`): a crash during step 3
//! leaves a prefix applied, and an I/O error there is `PartialBatch` naming the
//! applied prefix (whose directories are still synced). `syncfs` also flushes
//! other dirty data on the same filesystem, so a batch on a busy disk costs more.
//!
//! `list_versions` reads the sidecars without the values: a sidecar is trusted
//! when it parses and is at least as new (by modification time) as its value
//! file; otherwise the record is loaded and checked as by `get` (and repaired).
//! A value file replaced by hand *with an older modification time* is listed
//! at its sidecar's version until the next `get`, `list` or write adopts it.
//!
//! # Versions
//!
//! A store-wide counter (see the `counter` module): `.version-reserved` is a
//! durable high-water mark extended a block at a time, `.version` an in-place
//! hint. Every open moves the hint past the durable mark, so no version is
//! issued twice — not after a delete, a process crash or a power cut.
//! Versions increase with every write, across keys and processes.
//!
//! # Leases and fences
//!
//! `.leases/<lock>` holds the lock's newest fence token, its holder's random
//! identity and the expiry in wall-clock milliseconds (from the store's
//! [`Clock`]). `try_lease`, `renew` and `release` change it durably under the
//! store lock, so a token is never issued twice, and a fenced write checks it
//! under the same lock before it touches anything, so the check is atomic with
//! the write. A fence is accepted while it is the lock's newest token (as in
//! the reference in-memory store): once another lease is issued, writes with
//! the older fence are `LockLost`. A renew after the expiry is `LockLost` even
//! if nobody took the lock. Expiry uses wall-clock time, so processes sharing
//! a store should share a reasonably synchronised clock.
//!
//! # Case-insensitive filesystems
//!
//! Opening probes whether the marker is visible under another case. If it is,
//! a write whose namespace or id differs only in case from an existing one is
//! refused with `InvalidKey`, and reads look names up exactly, so `ABC` never
//! reads `abc`. (Such filesystems cost a directory listing per operation.)
//!
//! # What is not guaranteed
//!
//! - Writes are serialised store-wide: throughput is about one fsync pair per
//!   write, whatever the key.
//! - A value's version may change after a power cut (see above), never to one
//!   issued before.
//! - A failed write (an I/O error after step 3) may still have replaced the
//!   value; the next read adopts it under a fresh version.
//! - Rolling the whole directory back to an old copy is not detected.
//! - The directories leading to the root are trusted as given; only the root
//!   and everything inside it are opened without following links.
//! - Reads reuse the handle of a namespace directory opened earlier (one path
//!   lookup fewer per read) unless that directory was removed since; if a
//!   person *renames* a namespace directory away while a process runs, that
//!   process keeps reading the renamed directory until its next write there
//!   (writes always reopen by name).
//! - All blocking work runs on tokio's blocking pool (`spawn_blocking`), so
//!   the store needs a tokio runtime.

use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use dream_core::store::{DEFAULT_MAX_VALUE_SIZE, PageBuilder, PageEntry, check_batch};
use dream_core::{
    BatchOp, BatchOutcome, Bytes, Capabilities, Changes, Clock, Entry, Fence, Key, Lease, LockName,
    Namespace, Page, Record, RecordId, RecordStore, StoreError, StoreInfo, SystemClock, Version,
    VersionEntry, VersionPage, Write, async_trait,
};
use rustix::fs::FlockOperation;
use rustix::io::Errno;

mod counter;
mod error;
mod io;
mod lease;
mod record;
mod root;

use error::{Context, corrupt_store};
use io::{CaseMatch, Opened};
use lease::LeaseRecord;
use record::{Loaded, Names, Sidecar};

/// Whether a batch's flush pass is one `syncfs` (Linux) rather than an fsync
/// of each value as it is written.
const SYNCFS: bool = cfg!(target_os = "linux");

/// The default store directory, relative to the working directory.
pub const DEFAULT_DIR: &str = ".dream";

/// How to open a store.
#[derive(Debug, Clone)]
pub struct FsOptions {
    create: bool,
    clock: Arc<dyn Clock>,
    max_value_size: usize,
    assume_case_insensitive: bool,
}

impl Default for FsOptions {
    fn default() -> Self {
        FsOptions {
            create: true,
            clock: Arc::new(SystemClock),
            max_value_size: DEFAULT_MAX_VALUE_SIZE,
            assume_case_insensitive: false,
        }
    }
}

impl FsOptions {
    /// Defaults: create the store if missing, system clock, 16 MiB values.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether to create the store when nothing is at the path (default true).
    pub fn create(mut self, create: bool) -> Self {
        self.create = create;
        self
    }

    /// The clock leases expire by (default: the system clock).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The largest value accepted, in bytes (default 16 MiB).
    pub fn max_value_size(mut self, max: usize) -> Self {
        self.max_value_size = max;
        self
    }

    /// The name and capabilities of a store opened with these options, known
    /// before it is opened (or made).
    pub fn store_info(&self) -> StoreInfo {
        store_info(self.max_value_size)
    }

    /// Treats the filesystem as case-insensitive even if the probe at open says
    /// otherwise (for filesystems where the probe is unreliable, and tests).
    pub fn assume_case_insensitive(mut self, yes: bool) -> Self {
        self.assume_case_insensitive = yes;
        self
    }
}

/// A [`RecordStore`] on a directory. See the crate documentation for the
/// layout and the guarantees. Cheap to clone; clones share the handles.
#[derive(Debug, Clone)]
pub struct FsStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    path: PathBuf,
    root: OwnedFd,
    lock_file: std::fs::File,
    next_version: std::fs::File,
    leases: OwnedFd,
    in_process: Mutex<()>,
    /// Namespace directories opened before, reused by reads (writes reopen).
    ns_handles: Mutex<HashMap<Namespace, Arc<OwnedFd>>>,
    clock: Arc<dyn Clock>,
    max_value_size: usize,
    case_insensitive: bool,
}

impl FsStore {
    /// Opens the store at `path`, creating it if nothing is there.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with(path, FsOptions::default()).await
    }

    /// Opens the store at `path` with `options`, off the async runtime.
    pub async fn open_with(path: impl AsRef<Path>, options: FsOptions) -> Result<Self, StoreError> {
        let path = path.as_ref().to_owned();
        tokio::task::spawn_blocking(move || Self::open_blocking(&path, options))
            .await
            .map_err(|e| StoreError::backend(false, e))?
    }

    /// Opens the store at `path` with `options`, blocking the calling thread
    /// (for code outside an async runtime).
    pub fn open_blocking(path: impl AsRef<Path>, options: FsOptions) -> Result<Self, StoreError> {
        let path = path.as_ref();
        let root = root::open(path, options.create)?;
        let inner = Inner {
            path: path.to_owned(),
            root: root.dir,
            lock_file: root.lock,
            next_version: root.next_version,
            leases: root.leases,
            in_process: Mutex::new(()),
            ns_handles: Mutex::default(),
            clock: options.clock,
            max_value_size: options.max_value_size,
            case_insensitive: root.case_insensitive || options.assume_case_insensitive,
        };
        // A store this user cannot write is read without the lock: there is
        // no counter to move, and every write is refused by the filesystem.
        if !root.read_only {
            let _guard = inner.lock()?;
            counter::reset(inner.root.as_fd(), &inner.next_version)?;
        }
        Ok(FsStore {
            inner: Arc::new(inner),
        })
    }

    /// The store's directory, as given when it was opened.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Whether names are handled as on a case-insensitive filesystem.
    pub fn is_case_insensitive(&self) -> bool {
        self.inner.case_insensitive
    }

    async fn run<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Inner) -> Result<T, StoreError> + Send + 'static,
    {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || f(&inner))
            .await
            .map_err(|e| StoreError::backend(false, e))?
    }
}

/// A directory store's name and capabilities.
fn store_info(max_value_size: usize) -> StoreInfo {
    StoreInfo {
        name: "fs".to_owned(),
        capabilities: Capabilities {
            cross_process: true,
            leases: true,
            fenced_writes: true,
            durable: true,
            max_value_size,
            atomic_batch_bytes: 0,
            notifies: false,
        },
    }
}

/// Holds the store lock: the in-process mutex and the `flock`.
struct Guard<'a> {
    inner: &'a Inner,
    _in_process: MutexGuard<'a, ()>,
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        if let Err(e) = rustix::fs::flock(&self.inner.lock_file, FlockOperation::Unlock) {
            tracing::error!(error = %e, "could not unlock the store");
        }
    }
}

/// A namespace directory as found.
enum NsDir {
    Open(Arc<OwnedFd>),
    Missing,
}

/// The namespace directories a batch touches, each opened (or found missing) once.
type BatchDirs = HashMap<Namespace, NsDir>;

/// A namespace's directory and the record ids to list from it, sorted.
type Listed = (Arc<OwnedFd>, Vec<RecordId>);

fn now_ms(clock: &dyn Clock) -> i64 {
    clock.now().timestamp_millis()
}

fn ttl_ms(ttl: Duration) -> i64 {
    i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX)
}

impl Inner {
    fn lock(&self) -> Result<Guard<'_>, StoreError> {
        let in_process = self.in_process.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            match rustix::fs::flock(&self.lock_file, FlockOperation::LockExclusive) {
                Ok(()) => break,
                Err(Errno::INTR) => continue,
                Err(e) => return Err(e).context(|| "lock the store"),
            }
        }
        Ok(Guard {
            inner: self,
            _in_process: in_process,
        })
    }

    fn root(&self) -> BorrowedFd<'_> {
        self.root.as_fd()
    }

    fn issue_version(&self, guard: &Guard<'_>) -> Result<Version, StoreError> {
        self.issue_versions(guard, 1)
    }

    /// Issues `count` consecutive versions (at least one) and returns the first.
    fn issue_versions(&self, _guard: &Guard<'_>, count: u64) -> Result<Version, StoreError> {
        counter::issue(self.root(), &self.next_version, count)
    }

    /// Opens a namespace directory afresh (never a link) and remembers the
    /// handle for later reads.
    fn open_ns(&self, namespace: &Namespace) -> Result<NsDir, StoreError> {
        match io::open_dir(self.root(), namespace.as_str())
            .context(|| format!("open namespace {namespace}"))?
        {
            Opened::Found(fd) => {
                let fd = Arc::new(fd);
                self.ns_handles
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(namespace.clone(), fd.clone());
                Ok(NsDir::Open(fd))
            }
            Opened::Missing => Ok(NsDir::Missing),
            Opened::Symlink => Err(corrupt_store(format!(
                "namespace directory {namespace} is a symbolic link, which the store never follows"
            ))),
            Opened::WrongKind(why) => Err(corrupt_store(format!(
                "namespace directory {namespace} is {why}"
            ))),
        }
    }

    /// A namespace directory for reading: the handle opened before, unless
    /// that directory has been removed since (then it is opened afresh). Saves
    /// a path lookup per read; writes always reopen.
    fn open_ns_for_read(&self, namespace: &Namespace) -> Result<NsDir, StoreError> {
        let known = self
            .ns_handles
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(namespace)
            .cloned();
        if let Some(fd) = known
            && rustix::fs::fstat(&*fd).is_ok_and(|stat| stat.st_nlink > 0)
        {
            return Ok(NsDir::Open(fd));
        }
        self.open_ns(namespace)
    }

    /// On a case-insensitive filesystem, how `name` matches the entries of `dir`.
    fn case_match(
        &self,
        dir: BorrowedFd<'_>,
        name: &str,
        what: &str,
    ) -> Result<CaseMatch, StoreError> {
        let entries = io::list_dir(dir).context(|| format!("list {what}"))?;
        Ok(io::case_match(
            entries.iter().map(|e| e.name.as_str()),
            name,
        ))
    }

    /// Whether `key` names exactly an existing record's files (only asked on a
    /// case-insensitive filesystem, where `ABC` would otherwise open `abc`).
    fn names_exactly(&self, ns: BorrowedFd<'_>, key: &Key) -> Result<bool, StoreError> {
        Ok(
            self.case_match(self.root(), key.namespace.as_str(), "the store")? == CaseMatch::Exact
                && self.case_match(ns, &Names::of(key).data, "a namespace")? == CaseMatch::Exact,
        )
    }

    /// Reads a record without the lock; repairs a mismatch under the lock.
    fn get_in(&self, ns: BorrowedFd<'_>, key: &Key) -> Result<Option<Record>, StoreError> {
        match record::load(ns, key, self.max_value_size)? {
            Loaded::Absent => Ok(None),
            Loaded::Consistent(record) => Ok(Some(record)),
            Loaded::Mismatch { .. } => {
                let guard = self.lock()?;
                self.load_locked(&guard, ns, key)
            }
        }
    }

    /// Reads a record under the lock, adopting a value that disagrees with its
    /// sidecar under a fresh version.
    fn load_locked(
        &self,
        guard: &Guard<'_>,
        ns: BorrowedFd<'_>,
        key: &Key,
    ) -> Result<Option<Record>, StoreError> {
        match record::load(ns, key, self.max_value_size)? {
            Loaded::Absent => Ok(None),
            Loaded::Consistent(record) => Ok(Some(record)),
            Loaded::Mismatch { value, file, mode } => {
                let version = self.issue_version(guard)?;
                let sidecar = Sidecar {
                    version: version.0,
                    sha256: record::sha256(&value),
                };
                record::write_sidecar(ns, key, &sidecar, true)?;
                if mode & 0o077 != 0 {
                    rustix::fs::fchmod(&file, rustix::fs::Mode::from_raw_mode(io::FILE_MODE))
                        .context(|| format!("restrict the permissions of {key}"))?;
                }
                tracing::warn!(
                    key = %key,
                    version = version.0,
                    "value did not match its sidecar (hand edit or interrupted write); adopted under a new version"
                );
                Ok(Some(Record { value, version }))
            }
        }
    }

    fn check_fence(&self, fence: Option<&Fence>, _guard: &Guard<'_>) -> Result<(), StoreError> {
        let Some(fence) = fence else { return Ok(()) };
        let lost = || StoreError::LockLost {
            lock: fence.lock.clone(),
        };
        match lease::read(self.leases.as_fd(), &fence.lock)? {
            Some(rec) if rec.lock == fence.lock.as_str() && rec.fence == fence.token => Ok(()),
            _ => Err(lost()),
        }
    }

    fn get(&self, key: &Key) -> Result<Option<Record>, StoreError> {
        let NsDir::Open(ns) = self.open_ns_for_read(&key.namespace)? else {
            return Ok(None);
        };
        if self.case_insensitive && !self.names_exactly(ns.as_fd(), key)? {
            return Ok(None);
        }
        self.get_in(ns.as_fd(), key)
    }

    fn put(&self, key: &Key, value: &[u8], write: &Write) -> Result<Version, StoreError> {
        if value.len() > self.max_value_size {
            return Err(StoreError::TooLarge {
                size: value.len(),
                max: self.max_value_size,
            });
        }
        let guard = self.lock()?;
        self.check_fence(write.fence.as_ref(), &guard)?;
        let invalid = |reason: &str| StoreError::InvalidKey {
            key: key.clone(),
            reason: reason.to_owned(),
        };
        if self.case_insensitive
            && self.case_match(self.root(), key.namespace.as_str(), "the store")?
                == CaseMatch::OtherCase
        {
            return Err(invalid(
                "its namespace differs only in case from an existing one on this case-insensitive filesystem",
            ));
        }
        let names = Names::of(key);
        let existing = self.open_ns(&key.namespace)?;
        let current = match &existing {
            NsDir::Open(ns) => {
                if self.case_insensitive
                    && self.case_match(ns.as_fd(), &names.data, "a namespace")?
                        == CaseMatch::OtherCase
                {
                    return Err(invalid(
                        "its id differs only in case from an existing one on this case-insensitive filesystem",
                    ));
                }
                self.load_locked(&guard, ns.as_fd(), key)?
                    .map(|r| r.version)
            }
            NsDir::Missing => None,
        };
        write.pre.check(key, current)?;
        let ns = match existing {
            NsDir::Open(ns) => ns,
            NsDir::Missing => Arc::new(self.create_ns(&key.namespace)?),
        };
        let ns = ns.as_fd();
        let version = self.issue_version(&guard)?;
        let sidecar = Sidecar {
            version: version.0,
            sha256: record::sha256(value),
        };
        let what = || format!("write {key}");
        {
            let mut file = io::create_fresh(ns, &names.data_tmp).context(what)?;
            std::io::Write::write_all(&mut file, value).context(what)?;
            file.sync_all().context(what)?;
        }
        dream_core::failpoint::failpoint("fs.put.after_temp_write");
        rustix::fs::renameat(ns, names.data_tmp.as_str(), ns, names.data.as_str()).context(what)?;
        dream_core::failpoint::failpoint("fs.put.after_data_rename");
        record::write_sidecar(ns, key, &sidecar, false)?;
        dream_core::failpoint::failpoint("fs.put.after_sidecar_write");
        rustix::fs::fsync(ns).context(|| format!("sync namespace {}", key.namespace))?;
        drop(guard);
        Ok(version)
    }

    fn create_ns(&self, namespace: &Namespace) -> Result<OwnedFd, StoreError> {
        let (opened, created) = io::create_dir(self.root(), namespace.as_str())
            .context(|| format!("create namespace {namespace}"))?;
        let fd = match opened {
            Opened::Found(fd) => fd,
            Opened::Missing => {
                return Err(corrupt_store(format!(
                    "namespace directory {namespace} vanished while being created"
                )));
            }
            Opened::Symlink => {
                return Err(corrupt_store(format!(
                    "namespace directory {namespace} is a symbolic link, which the store never follows"
                )));
            }
            Opened::WrongKind(why) => {
                return Err(corrupt_store(format!(
                    "namespace directory {namespace} is {why}"
                )));
            }
        };
        if created {
            rustix::fs::fsync(self.root()).context(|| "sync the store directory")?;
        }
        Ok(fd)
    }

    fn delete(&self, key: &Key, write: &Write) -> Result<bool, StoreError> {
        let guard = self.lock()?;
        self.check_fence(write.fence.as_ref(), &guard)?;
        let ns = match self.open_ns(&key.namespace)? {
            NsDir::Open(ns) if !self.case_insensitive || self.names_exactly(ns.as_fd(), key)? => ns,
            _ => {
                write.pre.check(key, None)?;
                return Ok(false);
            }
        };
        let ns = ns.as_fd();
        let current = self.load_locked(&guard, ns, key)?.map(|r| r.version);
        write.pre.check(key, current)?;
        if current.is_none() {
            return Ok(false);
        }
        let names = Names::of(key);
        let what = || format!("delete {key}");
        rustix::fs::unlinkat(ns, names.data.as_str(), rustix::fs::AtFlags::empty())
            .context(what)?;
        dream_core::failpoint::failpoint("fs.delete.after_data_unlink");
        io::remove_if_present(ns, &names.sidecar).context(what)?;
        rustix::fs::fsync(ns).context(|| format!("sync namespace {}", key.namespace))?;
        drop(guard);
        Ok(true)
    }

    /// The namespace's directory and its record ids after `start_after`, sorted
    /// by bytes; `None` when the namespace does not exist (under this exact case).
    fn listed_ids(
        &self,
        namespace: &Namespace,
        start_after: Option<&RecordId>,
    ) -> Result<Option<Listed>, StoreError> {
        let NsDir::Open(ns) = self.open_ns_for_read(namespace)? else {
            return Ok(None);
        };
        if self.case_insensitive
            && self.case_match(self.root(), namespace.as_str(), "the store")? != CaseMatch::Exact
        {
            return Ok(None);
        }
        let mut ids: Vec<RecordId> = io::list_dir(ns.as_fd())
            .context(|| format!("list namespace {namespace}"))?
            .into_iter()
            .filter_map(|entry| record::id_of_file(namespace, &entry.name))
            .filter(|id| start_after.is_none_or(|after| id > after))
            .collect();
        ids.sort_unstable();
        Ok(Some((ns, ids)))
    }

    /// One page of `list` or `list_versions`: the namespace's ids after
    /// `start_after`, each made an entry by `entry` (`None`: its record is gone
    /// since the directory was read), until the page is full.
    fn page_of<T: PageEntry>(
        &self,
        namespace: &Namespace,
        start_after: Option<&RecordId>,
        limit: usize,
        mut entry: impl FnMut(BorrowedFd<'_>, Key) -> Result<Option<T>, StoreError>,
    ) -> Result<T::Page, StoreError> {
        let mut page = PageBuilder::new(limit);
        let Some((ns, ids)) = self.listed_ids(namespace, start_after)? else {
            return Ok(page.finish());
        };
        for id in ids {
            if page.is_full() {
                page.set_more();
                break;
            }
            if let Some(entry) = entry(ns.as_fd(), Key::new(namespace.clone(), id))? {
                page.push(entry);
            }
        }
        Ok(page.finish())
    }

    fn list(
        &self,
        namespace: &Namespace,
        start_after: Option<&RecordId>,
        limit: usize,
    ) -> Result<Page, StoreError> {
        self.page_of(namespace, start_after, limit, |ns, key| {
            Ok(self
                .get_in(ns, &key)?
                .map(|record| Entry { id: key.id, record }))
        })
    }

    /// See "Batches" in the crate documentation.
    fn write_batch(
        &self,
        ops: &[BatchOp],
        fence: Option<&Fence>,
    ) -> Result<Vec<BatchOutcome>, StoreError> {
        let guard = self.lock()?;
        self.check_fence(fence, &guard)?;
        // 0. Every check, against the state before the batch; nothing written yet.
        let (mut dirs, current) = self.batch_checked(ops, &guard)?;
        // 1. Every value to its temporary file; namespace directories created.
        self.batch_temporaries(ops, &mut dirs)?;
        // 2. One flush pass: every value on disk before any rename.
        #[cfg(target_os = "linux")]
        rustix::fs::syncfs(self.root()).context(|| "sync the store's filesystem")?;
        dream_core::failpoint::failpoint("fs.batch.after_temp_writes");
        // 3. Apply in order; 4. sync each directory touched.
        let mut applied = Vec::with_capacity(ops.len());
        let mut touched: Vec<Namespace> = Vec::new();
        let puts = ops
            .iter()
            .filter(|op| matches!(op, BatchOp::Put { .. }))
            .count() as u64;
        let result = (|| {
            // The batch's versions, issued together, in order of its puts.
            let mut versions = match puts {
                0 => 0..0,
                n => {
                    let first = self.issue_versions(&guard, n)?.0;
                    first..first + n
                }
            };
            for (op, current) in ops.iter().zip(&current) {
                let key = op.key();
                let NsDir::Open(ns) = &dirs[&key.namespace] else {
                    // A delete in a namespace that does not exist: nothing to do.
                    applied.push(BatchOutcome::Delete(false));
                    continue;
                };
                let ns = ns.as_fd();
                let names = Names::of(key);
                match op {
                    BatchOp::Put { value, .. } => {
                        let version = Version(versions.next().expect("one version a put"));
                        let sidecar = Sidecar {
                            version: version.0,
                            sha256: record::sha256(value),
                        };
                        rustix::fs::renameat(ns, names.data_tmp.as_str(), ns, names.data.as_str())
                            .context(|| format!("write {key}"))?;
                        if !touched.contains(&key.namespace) {
                            touched.push(key.namespace.clone());
                        }
                        record::write_sidecar(ns, key, &sidecar, false)?;
                        applied.push(BatchOutcome::Put(version));
                    }
                    BatchOp::Delete { .. } => {
                        if current.is_some() {
                            let what = || format!("delete {key}");
                            rustix::fs::unlinkat(
                                ns,
                                names.data.as_str(),
                                rustix::fs::AtFlags::empty(),
                            )
                            .context(what)?;
                            if !touched.contains(&key.namespace) {
                                touched.push(key.namespace.clone());
                            }
                            io::remove_if_present(ns, &names.sidecar).context(what)?;
                        }
                        applied.push(BatchOutcome::Delete(current.is_some()));
                    }
                }
                dream_core::failpoint::failpoint("fs.batch.after_first_apply");
            }
            Ok(())
        })();
        let synced = touched.iter().try_for_each(|namespace| {
            let NsDir::Open(ns) = &dirs[namespace] else {
                return Ok(());
            };
            rustix::fs::fsync(ns.as_fd()).context(|| format!("sync namespace {namespace}"))
        });
        drop(guard);
        match result.and(synced) {
            Ok(()) => Ok(applied),
            Err(source) if applied.is_empty() => Err(source),
            Err(source) => Err(StoreError::PartialBatch {
                applied,
                source: Box::new(source),
            }),
        }
    }

    /// A batch's checks under the store lock, against the state before it: every
    /// key acceptable on this filesystem and every precondition holding. Returns
    /// the namespace directories it opened (or found missing) and each
    /// operation's current version.
    fn batch_checked(
        &self,
        ops: &[BatchOp],
        guard: &Guard<'_>,
    ) -> Result<(BatchDirs, Vec<Option<Version>>), StoreError> {
        let mut dirs = BatchDirs::new();
        let mut folded: HashMap<String, &Key> = HashMap::new();
        let mut current = Vec::with_capacity(ops.len());
        for op in ops {
            let key = op.key();
            let invalid = |reason: &str| StoreError::InvalidKey {
                key: key.clone(),
                reason: reason.to_owned(),
            };
            if self.case_insensitive {
                let names = Names::of(key);
                let fold = format!("{}/{}", key.namespace, names.data).to_ascii_lowercase();
                if let Some(other) = folded.insert(fold, key)
                    && (other.namespace != key.namespace || other.id != key.id)
                {
                    return Err(invalid(
                        "it differs only in case from another key of the batch on this case-insensitive filesystem",
                    ));
                }
                if matches!(op, BatchOp::Put { .. })
                    && self.case_match(self.root(), key.namespace.as_str(), "the store")?
                        == CaseMatch::OtherCase
                {
                    return Err(invalid(
                        "its namespace differs only in case from an existing one on this case-insensitive filesystem",
                    ));
                }
            }
            if !dirs.contains_key(&key.namespace) {
                let dir = self.open_ns(&key.namespace)?;
                dirs.insert(key.namespace.clone(), dir);
            }
            let version = match &dirs[&key.namespace] {
                NsDir::Open(ns) => {
                    let ns = ns.as_fd();
                    let names = Names::of(key);
                    let other_case = self.case_insensitive
                        && self.case_match(ns, &names.data, "a namespace")? == CaseMatch::OtherCase;
                    match op {
                        BatchOp::Put { .. } if other_case => {
                            return Err(invalid(
                                "its id differs only in case from an existing one on this case-insensitive filesystem",
                            ));
                        }
                        BatchOp::Delete { .. }
                            if self.case_insensitive && !self.names_exactly(ns, key)? =>
                        {
                            None
                        }
                        _ => self.load_locked(guard, ns, key)?.map(|r| r.version),
                    }
                }
                NsDir::Missing => None,
            };
            op.pre().check(key, version)?;
            current.push(version);
        }
        Ok((dirs, current))
    }

    /// Writes every value of a batch to its temporary file, creating the
    /// namespace directories that are missing.
    fn batch_temporaries(&self, ops: &[BatchOp], dirs: &mut BatchDirs) -> Result<(), StoreError> {
        for op in ops {
            let BatchOp::Put { key, value, .. } = op else {
                continue;
            };
            if let NsDir::Missing = dirs[&key.namespace] {
                let created = Arc::new(self.create_ns(&key.namespace)?);
                dirs.insert(key.namespace.clone(), NsDir::Open(created));
            }
            let NsDir::Open(ns) = &dirs[&key.namespace] else {
                unreachable!("created above");
            };
            let what = || format!("write {key}");
            let mut file = io::create_fresh(ns.as_fd(), &Names::of(key).data_tmp).context(what)?;
            std::io::Write::write_all(&mut file, value).context(what)?;
            if !SYNCFS {
                file.sync_all().context(what)?;
            }
        }
        Ok(())
    }

    fn list_versions(
        &self,
        namespace: &Namespace,
        start_after: Option<&RecordId>,
        limit: usize,
    ) -> Result<VersionPage, StoreError> {
        self.page_of(namespace, start_after, limit, |ns, key| {
            let version = match record::quick_version(ns, &key) {
                Some(version) => version,
                None => self.get_in(ns, &key)?.map(|r| r.version),
            };
            Ok(version.map(|version| VersionEntry {
                id: key.id,
                version,
            }))
        })
    }

    fn namespaces(&self) -> Result<Vec<Namespace>, StoreError> {
        let mut out = Vec::new();
        for entry in io::list_dir(self.root()).context(|| "list the store")? {
            // The store's own entries start with '.'; stray files are ignored.
            if entry.name.starts_with('.') || entry.is_dir == Some(false) && !entry.is_symlink {
                continue;
            }
            let Ok(namespace) = Namespace::new(entry.name.as_str()) else {
                continue;
            };
            let ns = match io::open_dir(self.root(), namespace.as_str())
                .context(|| format!("open namespace {namespace}"))?
            {
                Opened::Found(fd) => fd,
                Opened::Missing | Opened::WrongKind(_) => continue,
                Opened::Symlink => {
                    return Err(corrupt_store(format!(
                        "namespace directory {namespace} is a symbolic link, which the store never follows"
                    )));
                }
            };
            let has_record = io::any_entry(ns.as_fd(), |name| {
                record::id_of_file(&namespace, name).is_some()
            })
            .context(|| format!("list namespace {namespace}"))?;
            if has_record {
                out.push(namespace);
            }
        }
        out.sort_unstable();
        Ok(out)
    }

    /// Removes the temporary files interrupted writes left in every namespace
    /// directory (they may hold a value that was never stored), under the lock.
    fn compact(&self) -> Result<(), StoreError> {
        let _guard = self.lock()?;
        for entry in io::list_dir(self.root()).context(|| "list the store")? {
            let Ok(namespace) = Namespace::new(entry.name.as_str()) else {
                continue;
            };
            if entry.is_dir == Some(false) {
                continue;
            }
            let NsDir::Open(ns) = self.open_ns(&namespace)? else {
                continue;
            };
            let entries =
                io::list_dir(ns.as_fd()).context(|| format!("list namespace {namespace}"))?;
            for entry in entries {
                if entry.name.starts_with('.') && entry.name.ends_with(".tmp") {
                    io::remove_if_present(ns.as_fd(), &entry.name)
                        .context(|| format!("remove a temporary file in {namespace}"))?;
                }
            }
        }
        Ok(())
    }

    fn read_lease(
        &self,
        lock: &LockName,
        _guard: &Guard<'_>,
    ) -> Result<Option<LeaseRecord>, StoreError> {
        lease::read(self.leases.as_fd(), lock)
    }

    fn try_lease(&self, lock: &LockName, ttl: Duration) -> Result<Option<Lease>, StoreError> {
        let guard = self.lock()?;
        let now = now_ms(&*self.clock);
        let mut rec = self
            .read_lease(lock, &guard)?
            .unwrap_or_else(|| LeaseRecord::new(lock));
        if rec.lock != lock.as_str() {
            return Err(StoreError::Unsupported {
                op: "two lock names differing only in case on a case-insensitive filesystem",
            });
        }
        if rec.is_held(now) {
            return Ok(None);
        }
        rec.fence = rec.fence.checked_add(1).ok_or_else(|| {
            corrupt_store(format!("the fence counter of lock {lock} is exhausted"))
        })?;
        let holder = lease::new_holder();
        rec.holder = Some(holder.clone());
        rec.expires_ms = now.saturating_add(ttl_ms(ttl));
        lease::write(self.leases.as_fd(), lock, &rec)?;
        Ok(Some(Lease::new(lock.clone(), rec.fence, holder)))
    }

    fn renew(&self, held: &Lease, ttl: Duration) -> Result<Lease, StoreError> {
        let guard = self.lock()?;
        let now = now_ms(&*self.clock);
        match self.read_lease(held.lock(), &guard)? {
            Some(mut rec)
                if rec.lock == held.lock().as_str()
                    && rec.is_held_by(held.holder(), held.token(), now) =>
            {
                rec.expires_ms = now.saturating_add(ttl_ms(ttl));
                lease::write(self.leases.as_fd(), held.lock(), &rec)?;
                Ok(held.clone())
            }
            _ => Err(StoreError::LockLost {
                lock: held.lock().clone(),
            }),
        }
    }

    fn release(&self, held: &Lease) -> Result<bool, StoreError> {
        let guard = self.lock()?;
        let now = now_ms(&*self.clock);
        match self.read_lease(held.lock(), &guard)? {
            Some(mut rec)
                if rec.lock == held.lock().as_str()
                    && rec.is_held_by(held.holder(), held.token(), now) =>
            {
                rec.holder = None;
                rec.expires_ms = 0;
                lease::write(self.leases.as_fd(), held.lock(), &rec)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

#[async_trait]
impl RecordStore for FsStore {
    fn info(&self) -> StoreInfo {
        store_info(self.inner.max_value_size)
    }

    async fn get(&self, key: &Key) -> Result<Option<Record>, StoreError> {
        let key = key.clone();
        self.run(move |inner| inner.get(&key)).await
    }

    async fn put(&self, key: &Key, value: Bytes, write: Write) -> Result<Version, StoreError> {
        if value.len() > self.inner.max_value_size {
            return Err(StoreError::TooLarge {
                size: value.len(),
                max: self.inner.max_value_size,
            });
        }
        let key = key.clone();
        self.run(move |inner| inner.put(&key, &value, &write)).await
    }

    async fn delete(&self, key: &Key, write: Write) -> Result<bool, StoreError> {
        let key = key.clone();
        self.run(move |inner| inner.delete(&key, &write)).await
    }

    async fn list(
        &self,
        namespace: &Namespace,
        start_after: Option<&RecordId>,
        limit: usize,
    ) -> Result<Page, StoreError> {
        let namespace = namespace.clone();
        let start_after = start_after.cloned();
        self.run(move |inner| inner.list(&namespace, start_after.as_ref(), limit))
            .await
    }

    async fn namespaces(&self) -> Result<Vec<Namespace>, StoreError> {
        self.run(|inner| inner.namespaces()).await
    }

    async fn write_batch(
        &self,
        ops: &[BatchOp],
        fence: Option<Fence>,
    ) -> Result<Vec<BatchOutcome>, StoreError> {
        check_batch(ops, self.inner.max_value_size)?;
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        let ops = ops.to_vec();
        self.run(move |inner| inner.write_batch(&ops, fence.as_ref()))
            .await
    }

    async fn list_versions(
        &self,
        namespace: &Namespace,
        start_after: Option<&RecordId>,
        limit: usize,
    ) -> Result<VersionPage, StoreError> {
        let namespace = namespace.clone();
        let start_after = start_after.cloned();
        self.run(move |inner| inner.list_versions(&namespace, start_after.as_ref(), limit))
            .await
    }

    async fn compact(&self) -> Result<(), StoreError> {
        self.run(|inner| inner.compact()).await
    }

    async fn watch_changes(&self) -> Result<Option<Changes>, StoreError> {
        Ok(None)
    }

    async fn try_lease(&self, lock: &LockName, ttl: Duration) -> Result<Option<Lease>, StoreError> {
        let lock = lock.clone();
        self.run(move |inner| inner.try_lease(&lock, ttl)).await
    }

    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<Lease, StoreError> {
        let lease = lease.clone();
        self.run(move |inner| inner.renew(&lease, ttl)).await
    }

    async fn release(&self, lease: Lease) -> Result<bool, StoreError> {
        self.run(move |inner| inner.release(&lease)).await
    }
}
