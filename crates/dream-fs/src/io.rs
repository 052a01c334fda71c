//! Low-level file operations, all relative to an open directory handle and none
//! following a symbolic link.
//!
//! Every open uses `O_NOFOLLOW` (and `O_DIRECTORY` for directories) through
//! rustix's `openat`, so a path inside the store is resolved one component at a
//! time from a handle the store already trusts; a planted link fails with
//! `ELOOP` and is reported, never followed.

use std::fs::File;
use std::io::{self, Write as _};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;

/// Mode of every file the store creates.
pub(crate) const FILE_MODE: u32 = 0o600;
/// Mode of every directory the store creates.
pub(crate) const DIR_MODE: u32 = 0o700;

/// What opening a name found.
pub(crate) enum Opened<T> {
    /// The name is there and is what was asked for.
    Found(T),
    /// Nothing has this name.
    Missing,
    /// The name is a symbolic link (never followed).
    Symlink,
    /// The name is there but of the wrong kind (a directory where a file was
    /// expected, a device, a FIFO, a file hard-linked elsewhere).
    WrongKind(&'static str),
}

impl<T> Opened<T> {
    /// What was found, or else the same answer about another kind of content.
    fn found<U>(self) -> Result<T, Opened<U>> {
        match self {
            Opened::Found(found) => Ok(found),
            Opened::Missing => Err(Opened::Missing),
            Opened::Symlink => Err(Opened::Symlink),
            Opened::WrongKind(why) => Err(Opened::WrongKind(why)),
        }
    }
}

fn is_symlink_errno(e: Errno) -> bool {
    // Linux and macOS report O_NOFOLLOW on a link as ELOOP; the BSDs as EMLINK.
    e == Errno::LOOP || e == Errno::MLINK
}

/// Opens the directory `name` inside `dir` without following a link.
pub(crate) fn open_dir(dir: BorrowedFd<'_>, name: &str) -> io::Result<Opened<OwnedFd>> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => Ok(Opened::Found(fd)),
        Err(Errno::NOENT) => Ok(Opened::Missing),
        Err(e) if is_symlink_errno(e) => Ok(Opened::Symlink),
        // With O_DIRECTORY, Linux reports a link as ENOTDIR: look without following.
        Err(Errno::NOTDIR) if is_symlink(dir, name)? => Ok(Opened::Symlink),
        Err(Errno::NOTDIR) => Ok(Opened::WrongKind("not a directory")),
        Err(e) => Err(e.into()),
    }
}

/// Whether `name` in `dir` is a symbolic link (looked at, not followed).
pub(crate) fn is_symlink<P: rustix::path::Arg>(dir: BorrowedFd<'_>, name: P) -> io::Result<bool> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => Ok(FileType::from_raw_mode(stat.st_mode) == FileType::Symlink),
        Err(Errno::NOENT) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Opens `name` inside `dir` for reading, without following a link and without
/// blocking on a FIFO; of any kind (the caller checks).
fn open_for_reading(dir: BorrowedFd<'_>, name: &str) -> io::Result<Opened<OwnedFd>> {
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY;
    match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => Ok(Opened::Found(fd)),
        Err(Errno::NOENT) => Ok(Opened::Missing),
        Err(e) if is_symlink_errno(e) => Ok(Opened::Symlink),
        Err(e) => Err(e.into()),
    }
}

/// Why a file with this `fstat` is not one the store may keep a record in (not
/// a regular file, or hard-linked to another name); `None` when it may.
fn not_a_store_file(stat: &Stat) -> Option<&'static str> {
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        Some("not a regular file")
    } else if stat.st_nlink > 1 {
        Some("hard-linked to another name")
    } else {
        None
    }
}

/// Opens the regular file `name` inside `dir` for reading, without following a
/// link and without blocking on a FIFO. Returns the file and its metadata.
pub(crate) fn open_file(dir: BorrowedFd<'_>, name: &str) -> io::Result<Opened<(File, Stat)>> {
    let fd = match open_for_reading(dir, name)?.found() {
        Ok(fd) => fd,
        Err(other) => return Ok(other),
    };
    let stat = rustix::fs::fstat(&fd)?;
    if let Some(why) = not_a_store_file(&stat) {
        return Ok(Opened::WrongKind(why));
    }
    Ok(Opened::Found((File::from(fd), stat)))
}

/// Reads up to `size` bytes (the size `fstat` reported) from a file opened by
/// [`open_file`]. Fewer come back if the file shrank; bytes appended after the
/// `fstat` are not read. Callers check the bytes against the sidecar's hash,
/// so a file changing underneath is caught there.
pub(crate) fn read_all(file: &File, size: u64) -> io::Result<Vec<u8>> {
    let size = usize::try_from(size).map_err(|_| io::Error::from(io::ErrorKind::FileTooLarge))?;
    let mut buf = vec![0u8; size];
    let mut filled = 0;
    while filled < size {
        match rustix::io::read(file, &mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    buf.truncate(filled);
    Ok(buf)
}

/// Reads a small file of at most `max` bytes in one `read`, without `fstat`
/// and without following a link: for the sidecar, read on every `get`. A
/// short read is taken as the end of the file (true of regular files on local
/// filesystems); a sidecar cut short anyway fails its parse, and the caller
/// then looks again under the lock.
pub(crate) fn read_quick(
    dir: BorrowedFd<'_>,
    name: &str,
    max: usize,
) -> io::Result<Opened<Vec<u8>>> {
    let fd = match open_for_reading(dir, name)?.found() {
        Ok(fd) => fd,
        Err(other) => return Ok(other),
    };
    let mut buf = vec![0u8; max + 1];
    loop {
        match rustix::io::read(&fd, &mut buf[..]) {
            Ok(n) if n > max => return Ok(Opened::WrongKind("larger than expected")),
            Ok(n) => {
                buf.truncate(n);
                return Ok(Opened::Found(buf));
            }
            Err(Errno::INTR) => continue,
            Err(Errno::ISDIR) => return Ok(Opened::WrongKind("not a regular file")),
            // A FIFO or socket planted as a sidecar: nothing to read, nothing
            // followed; the caller repairs it like a missing sidecar.
            Err(Errno::AGAIN) => return Ok(Opened::Found(Vec::new())),
            Err(e) => return Err(e.into()),
        }
    }
}

/// Removes `name` from `dir` if it is there (a link is removed, not followed).
pub(crate) fn remove_if_present(dir: BorrowedFd<'_>, name: &str) -> io::Result<()> {
    match rustix::fs::unlinkat(dir, name, AtFlags::empty()) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Creates `name` in `dir` afresh (mode 0600, `O_EXCL`, no link followed),
/// removing whatever a crash left under that name first.
pub(crate) fn create_fresh(dir: BorrowedFd<'_>, name: &str) -> io::Result<File> {
    remove_if_present(dir, name)?;
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(dir, name, flags, Mode::from_raw_mode(FILE_MODE))?;
    Ok(File::from(fd))
}

/// Writes `bytes` to the temporary `tmp`, optionally fsyncs it, and renames it
/// over `name`. The caller fsyncs `dir` when the new name must be durable.
pub(crate) fn write_and_rename(
    dir: BorrowedFd<'_>,
    tmp: &str,
    name: &str,
    bytes: &[u8],
    sync: bool,
) -> io::Result<()> {
    let mut file = create_fresh(dir, tmp)?;
    file.write_all(bytes)?;
    if sync {
        file.sync_all()?;
    }
    drop(file);
    rustix::fs::renameat(dir, tmp, dir, name)?;
    Ok(())
}

/// Overwrites the regular file `name` in `dir` in place with `bytes` (creating
/// it, mode 0600, if missing), without following a link or writing through a
/// hard link; with `sync`, fsyncs the file and `dir`. A concurrent reader may
/// see a mix of old and new bytes; callers detect that (the sidecar's hash
/// check).
pub(crate) fn overwrite_in_place(
    dir: BorrowedFd<'_>,
    name: &str,
    bytes: &[u8],
    sync: bool,
) -> io::Result<Opened<()>> {
    let flags = OFlags::WRONLY
        | OFlags::CREATE
        | OFlags::NOFOLLOW
        | OFlags::CLOEXEC
        | OFlags::NONBLOCK
        | OFlags::NOCTTY;
    let fd = match rustix::fs::openat(dir, name, flags, Mode::from_raw_mode(FILE_MODE)) {
        Ok(fd) => fd,
        Err(e) if is_symlink_errno(e) => return Ok(Opened::Symlink),
        Err(Errno::ISDIR) => return Ok(Opened::WrongKind("not a regular file")),
        Err(e) => return Err(e.into()),
    };
    let stat = rustix::fs::fstat(&fd)?;
    if let Some(why) = not_a_store_file(&stat) {
        return Ok(Opened::WrongKind(why));
    }
    let mut written = 0;
    while written < bytes.len() {
        match rustix::io::pwrite(&fd, &bytes[written..], written as u64) {
            Ok(n) => written += n,
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    // Writing from offset 0 already made a shorter file exactly this long.
    if u64::try_from(stat.st_size).map_or(true, |size| size > bytes.len() as u64) {
        rustix::fs::ftruncate(&fd, bytes.len() as u64)?;
    }
    if sync {
        rustix::fs::fsync(&fd)?;
        rustix::fs::fsync(dir)?;
    }
    Ok(Opened::Found(()))
}

/// Writes a small file durably: temporary file, fsync, rename, directory fsync.
pub(crate) fn write_durable(
    dir: BorrowedFd<'_>,
    tmp: &str,
    name: &str,
    bytes: &[u8],
) -> io::Result<()> {
    write_and_rename(dir, tmp, name, bytes, true)?;
    rustix::fs::fsync(dir)?;
    Ok(())
}

/// Reads a small regular file (at most `max` bytes) without following a link.
pub(crate) fn read_small(dir: BorrowedFd<'_>, name: &str, max: u64) -> io::Result<Opened<Vec<u8>>> {
    match open_file(dir, name)? {
        Opened::Found((file, stat)) => {
            let size = u64::try_from(stat.st_size).unwrap_or(u64::MAX);
            if size > max {
                return Ok(Opened::WrongKind("larger than expected"));
            }
            let bytes = read_all(&file, size)?;
            Ok(Opened::Found(bytes))
        }
        Opened::Missing => Ok(Opened::Missing),
        Opened::Symlink => Ok(Opened::Symlink),
        Opened::WrongKind(why) => Ok(Opened::WrongKind(why)),
    }
}

/// Creates the directory `name` in `dir` (mode 0700) if missing and opens it.
/// Returns whether it was created, so the caller can fsync `dir`.
pub(crate) fn create_dir(dir: BorrowedFd<'_>, name: &str) -> io::Result<(Opened<OwnedFd>, bool)> {
    let created = match rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(DIR_MODE)) {
        Ok(()) => true,
        Err(Errno::EXIST) => false,
        Err(e) => return Err(e.into()),
    };
    Ok((open_dir(dir, name)?, created))
}

/// One entry of a directory listing.
pub(crate) struct Entry {
    /// The entry's name (entries that are not valid UTF-8 are skipped: no
    /// name the store writes is).
    pub name: String,
    /// Whether the entry is a symbolic link, as far as `readdir` knows.
    pub is_symlink: bool,
    /// Whether the entry is a directory, as far as `readdir` knows (`None` when
    /// the filesystem does not say).
    pub is_dir: Option<bool>,
}

/// Lists `dir` (without `.` and `..`).
pub(crate) fn list_dir(dir: BorrowedFd<'_>) -> io::Result<Vec<Entry>> {
    let mut reader = Dir::read_from(dir.as_fd())?;
    let mut out = Vec::new();
    while let Some(entry) = reader.read() {
        let entry = entry?;
        let Ok(name) = entry.file_name().to_str() else {
            continue;
        };
        if name == "." || name == ".." {
            continue;
        }
        let file_type = entry.file_type();
        out.push(Entry {
            name: name.to_owned(),
            is_symlink: file_type == FileType::Symlink,
            is_dir: match file_type {
                FileType::Directory => Some(true),
                FileType::Unknown => None,
                _ => Some(false),
            },
        });
    }
    Ok(out)
}

/// Whether some entry of `dir` (not `.` or `..`) has a name for which `wanted`
/// holds; reading stops at the first one.
pub(crate) fn any_entry(dir: BorrowedFd<'_>, wanted: impl Fn(&str) -> bool) -> io::Result<bool> {
    let mut reader = Dir::read_from(dir.as_fd())?;
    while let Some(entry) = reader.read() {
        let entry = entry?;
        if let Ok(name) = entry.file_name().to_str()
            && name != "."
            && name != ".."
            && wanted(name)
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// How `name` appears in `dir` on a case-insensitive filesystem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CaseMatch {
    /// An entry with exactly this name exists.
    Exact,
    /// An entry exists whose name differs from `name` only in ASCII case.
    OtherCase,
    /// No entry matches, in any case.
    Absent,
}

/// Classifies `name` against the names of a directory.
pub(crate) fn case_match<'a>(names: impl IntoIterator<Item = &'a str>, name: &str) -> CaseMatch {
    let mut found = CaseMatch::Absent;
    for candidate in names {
        if candidate == name {
            return CaseMatch::Exact;
        }
        if candidate.eq_ignore_ascii_case(name) {
            found = CaseMatch::OtherCase;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_match_tells_exact_from_other_case() {
        let names = ["abc.md", "Other.md", ".abc.md.meta"];
        assert_eq!(case_match(names, "abc.md"), CaseMatch::Exact);
        assert_eq!(case_match(names, "ABC.md"), CaseMatch::OtherCase);
        assert_eq!(case_match(names, "other.md"), CaseMatch::OtherCase);
        assert_eq!(case_match(names, "abd.md"), CaseMatch::Absent);
        assert_eq!(case_match(["ABC.md", "abc.md"], "abc.md"), CaseMatch::Exact);
    }
}
