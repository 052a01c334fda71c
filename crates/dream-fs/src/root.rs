//! Creating, checking and opening the store's root directory.

use std::ffi::OsStr;
use std::fs::File;
use std::io::Write as _;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use dream_core::StoreError;
use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

use crate::counter;
use crate::error::{Context, incompatible};
use crate::io::{self, DIR_MODE, FILE_MODE, Opened};
use crate::lease::LEASES;

/// The marker file: its presence says Dream created this directory.
pub(crate) const MARKER: &str = ".dream-store";
/// The marker's exact content (the on-disk format's version).
pub(crate) const MARKER_CONTENT: &[u8] = b"dream-fs 1\n";
/// The marker's name in other case, to detect a case-insensitive filesystem.
const MARKER_OTHER_CASE: &str = ".DREAM-STORE";
/// Keeps the store out of git.
pub(crate) const GITIGNORE: &str = ".gitignore";
/// The file `flock`ed around every critical section.
pub(crate) const LOCK: &str = ".lock";

/// Handles on an open root.
pub(crate) struct Root {
    pub dir: OwnedFd,
    pub lock: File,
    pub next_version: File,
    pub leases: OwnedFd,
    pub case_insensitive: bool,
    /// This user cannot write the store (its files or its filesystem are
    /// read-only): it is opened to read, and every write is refused.
    pub read_only: bool,
}

/// Opens the root at `path`, creating it first when `create` is set and
/// nothing is there. The last component of `path` is never followed if it is
/// a link; the components before it are the caller's choice of path.
pub(crate) fn open(path: &Path, create: bool) -> Result<Root, StoreError> {
    let name = path
        .file_name()
        .ok_or_else(|| incompatible("the store path must end in a directory name"))?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let parent = rustix::fs::open(
        parent,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .context(|| "open the directory containing the store")?;
    let mut created = false;
    let dir = loop {
        match open_root_dir(parent.as_fd(), name)? {
            Some(dir) => break dir,
            None if create && !created => created = create_root(parent.as_fd(), name)?,
            None if create => {
                return Err(incompatible(
                    "the store directory vanished while it was being created",
                ));
            }
            None => return Err(incompatible("no store exists at this path")),
        }
    };
    check_root(dir.as_fd())?;
    let (lock, lock_writable) = open_rw(dir.as_fd(), LOCK)?;
    let (next_version, counter_writable) = open_rw(dir.as_fd(), counter::NEXT)?;
    let leases = match io::open_dir(dir.as_fd(), LEASES).context(|| "open the lease directory")? {
        Opened::Found(fd) => fd,
        Opened::Missing => return Err(incompatible("the lease directory is missing")),
        Opened::Symlink => {
            return Err(incompatible(
                "the lease directory is a symbolic link, which the store never follows",
            ));
        }
        Opened::WrongKind(why) => {
            return Err(incompatible(format!("the lease directory is {why}")));
        }
    };
    let case_insensitive =
        match rustix::fs::statat(dir.as_fd(), MARKER_OTHER_CASE, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(_) => true,
            Err(Errno::NOENT) => false,
            Err(e) => return Err(e).context(|| "probe the filesystem's case sensitivity"),
        };
    Ok(Root {
        dir,
        lock,
        next_version,
        leases,
        case_insensitive,
        read_only: !(lock_writable && counter_writable),
    })
}

fn open_root_dir(parent: BorrowedFd<'_>, name: &OsStr) -> Result<Option<OwnedFd>, StoreError> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::openat(parent, name, flags, Mode::empty()) {
        Ok(fd) => Ok(Some(fd)),
        Err(Errno::NOENT) => Ok(None),
        Err(Errno::LOOP) | Err(Errno::MLINK) => Err(incompatible(
            "the store path is a symbolic link, which the store never follows",
        )),
        Err(Errno::NOTDIR)
            if io::is_symlink(parent, name).context(|| "inspect the store path")? =>
        {
            Err(incompatible(
                "the store path is a symbolic link, which the store never follows",
            ))
        }
        Err(Errno::NOTDIR) => Err(incompatible("the store path is not a directory")),
        Err(e) => Err(e).context(|| "open the store directory"),
    }
}

/// Refuses a root owned by someone else, writable by group or others, or
/// without Dream's marker.
fn check_root(dir: BorrowedFd<'_>) -> Result<(), StoreError> {
    let stat = rustix::fs::fstat(dir).context(|| "inspect the store directory")?;
    if stat.st_uid != rustix::process::geteuid().as_raw() {
        return Err(incompatible("the store directory is owned by another user"));
    }
    if stat.st_mode & 0o022 != 0 {
        return Err(incompatible(
            "the store directory is writable by group or others",
        ));
    }
    match io::read_small(dir, MARKER, 64).context(|| "read the store's marker file")? {
        Opened::Found(content) if content == MARKER_CONTENT => Ok(()),
        Opened::Found(content) if content.starts_with(b"dream-fs ") => Err(incompatible(
            "the store was written by another version of dream-fs",
        )),
        Opened::Found(_) => Err(incompatible("the store's marker file is not Dream's")),
        Opened::Missing => Err(incompatible(
            "the directory was not created by Dream (no marker file)",
        )),
        Opened::Symlink => Err(incompatible(
            "the store's marker file is a symbolic link, which the store never follows",
        )),
        Opened::WrongKind(why) => Err(incompatible(format!("the store's marker file is {why}"))),
    }
}

/// Opens (creating if missing) a file of the root for reading and writing, or
/// only for reading when this user may not write it; `true` when writable.
fn open_rw(dir: BorrowedFd<'_>, name: &str) -> Result<(File, bool), StoreError> {
    let flags = OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let read_only = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let opened = match rustix::fs::openat(dir, name, flags, Mode::from_raw_mode(FILE_MODE)) {
        Err(Errno::ACCESS | Errno::ROFS | Errno::PERM) => {
            rustix::fs::openat(dir, name, read_only, Mode::empty()).map(|fd| (fd, false))
        }
        other => other.map(|fd| (fd, true)),
    };
    let (fd, writable) = match opened {
        Ok(opened) => opened,
        Err(Errno::LOOP) | Err(Errno::MLINK) => {
            return Err(incompatible(format!(
                "the store's {name} file is a symbolic link, which the store never follows"
            )));
        }
        Err(e) => return Err(e).context(|| format!("open the store's {name} file")),
    };
    let stat = rustix::fs::fstat(&fd).context(|| format!("inspect the store's {name} file"))?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return Err(incompatible(format!(
            "the store's {name} file is not a regular file"
        )));
    }
    if stat.st_nlink > 1 {
        return Err(incompatible(format!(
            "the store's {name} file is hard-linked to another name"
        )));
    }
    Ok((File::from(fd), writable))
}

/// Builds a complete root in a temporary sibling directory and renames it into
/// place, so no process ever sees a half-made store. Returns `false` when
/// another process created the store first.
fn create_root(parent: BorrowedFd<'_>, name: &OsStr) -> Result<bool, StoreError> {
    let tmp = format!(
        ".{}.creating-{:016x}",
        name.to_string_lossy(),
        rand::random::<u64>()
    );
    rustix::fs::mkdirat(parent, tmp.as_str(), Mode::from_raw_mode(DIR_MODE))
        .context(|| "create the store directory")?;
    let result = populate(parent, &tmp).and_then(|()| {
        match rustix::fs::renameat_with(parent, tmp.as_str(), parent, name, RenameFlags::NOREPLACE)
        {
            Ok(()) => Ok(true),
            Err(Errno::EXIST) | Err(Errno::NOTEMPTY) => Ok(false),
            // A filesystem without RENAME_NOREPLACE: a plain rename still refuses
            // to replace a non-empty directory (another creator's store).
            Err(Errno::INVAL) | Err(Errno::NOSYS) => {
                match rustix::fs::renameat(parent, tmp.as_str(), parent, name) {
                    Ok(()) => Ok(true),
                    Err(Errno::EXIST) | Err(Errno::NOTEMPTY) => Ok(false),
                    Err(e) => Err(e).context(|| "move the new store into place"),
                }
            }
            Err(e) => Err(e).context(|| "move the new store into place"),
        }
    });
    match result {
        Ok(true) => {
            rustix::fs::fsync(parent).context(|| "sync the directory containing the store")?;
            tracing::info!("created a new dream-fs store");
            Ok(true)
        }
        Ok(false) => {
            remove_unfinished(parent, &tmp);
            Ok(false)
        }
        Err(e) => {
            remove_unfinished(parent, &tmp);
            Err(e)
        }
    }
}

fn populate(parent: BorrowedFd<'_>, tmp: &str) -> Result<(), StoreError> {
    let dir = match io::open_dir(parent, tmp).context(|| "open the new store directory")? {
        Opened::Found(fd) => fd,
        _ => {
            return Err(incompatible(
                "the new store directory was replaced while being created",
            ));
        }
    };
    let write = |name: &str, bytes: &[u8]| -> Result<(), StoreError> {
        let mut file = io::create_fresh(dir.as_fd(), name)
            .context(|| format!("create the store's {name} file"))?;
        file.write_all(bytes)
            .and_then(|()| file.sync_all())
            .context(|| format!("write the store's {name} file"))
    };
    write(MARKER, MARKER_CONTENT)?;
    write(GITIGNORE, b"*\n")?;
    write(LOCK, b"")?;
    write(counter::RESERVED, counter::render_reserved(1).as_bytes())?;
    write(counter::NEXT, b"")?;
    rustix::fs::mkdirat(dir.as_fd(), LEASES, Mode::from_raw_mode(DIR_MODE))
        .context(|| "create the lease directory")?;
    rustix::fs::fsync(&dir).context(|| "sync the new store directory")
}

/// Best-effort removal of an unfinished root built by [`create_root`].
fn remove_unfinished(parent: BorrowedFd<'_>, tmp: &str) {
    if let Ok(Opened::Found(dir)) = io::open_dir(parent, tmp)
        && let Ok(entries) = io::list_dir(dir.as_fd())
    {
        for entry in entries {
            let flags = if entry.name == LEASES {
                AtFlags::REMOVEDIR
            } else {
                AtFlags::empty()
            };
            let _ = rustix::fs::unlinkat(dir.as_fd(), entry.name.as_str(), flags);
        }
    }
    let _ = rustix::fs::unlinkat(parent, tmp, AtFlags::REMOVEDIR);
}
