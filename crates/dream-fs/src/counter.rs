//! The store-wide version counter.
//!
//! Two files in the root:
//! - `.version-reserved` holds a high-water mark `R`, written durably (temporary
//!   file, fsync, rename, directory fsync). Every version ever issued is below
//!   the durable `R`.
//! - `.version` holds the next version to issue, overwritten in place without
//!   fsync: it is only a hint that spares an fsync per write.
//!
//! Issuing (under the store lock): read `R` and the hint `n` (a hint above `R`
//! or unreadable counts as `R`); if `n == R`, first make `R + BLOCK` durable;
//! then issue `n` and write `n + 1` to the hint. A power loss can lose or tear
//! the hint, never the durable mark, so opening a store (also under the lock)
//! moves the hint up to the durable `R` and reserves a fresh block: a version
//! issued before the crash is never issued again. A process crash loses
//! nothing (the page cache survives it), so at most a block is skipped.

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};

use dream_core::{StoreError, Version};

use crate::error::{Context, corrupt_store};
use crate::io::{self, Opened};

/// File holding the durable high-water mark.
pub(crate) const RESERVED: &str = ".version-reserved";
/// File holding the next version to issue (a hint).
pub(crate) const NEXT: &str = ".version";
const RESERVED_TMP: &str = ".version-reserved.tmp";
/// Versions reserved by one durable write.
pub(crate) const BLOCK: u64 = 1024;

/// The durable mark's file content.
pub(crate) fn render_reserved(reserved: u64) -> String {
    format!("reserved {reserved}\n")
}

fn render_next(next: u64) -> String {
    // Fixed width, so an in-place overwrite always replaces every byte.
    format!("{next:020}\n")
}

/// Reads the durable mark.
pub(crate) fn read_reserved(root: BorrowedFd<'_>) -> Result<u64, StoreError> {
    match io::read_small(root, RESERVED, 128).context(|| "read the version counter")? {
        Opened::Found(bytes) => std::str::from_utf8(&bytes)
            .ok()
            .and_then(|s| s.strip_prefix("reserved "))
            .and_then(|s| s.strip_suffix('\n'))
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or_else(|| corrupt_store("the version counter file is malformed")),
        Opened::Missing => Err(corrupt_store(
            "the version counter file is missing; versions could be reused, so the store is refused",
        )),
        Opened::Symlink => Err(corrupt_store(
            "the version counter file is a symbolic link; it is not followed",
        )),
        Opened::WrongKind(why) => Err(corrupt_store(format!("the version counter file is {why}"))),
    }
}

fn write_reserved(root: BorrowedFd<'_>, reserved: u64) -> Result<(), StoreError> {
    io::write_durable(
        root,
        RESERVED_TMP,
        RESERVED,
        render_reserved(reserved).as_bytes(),
    )
    .context(|| "persist the version counter")
}

fn read_next(hint: &File) -> Option<u64> {
    let mut buf = [0u8; 32];
    let n = rustix::io::pread(hint.as_fd(), &mut buf, 0).ok()?;
    std::str::from_utf8(&buf[..n])
        .ok()?
        .strip_suffix('\n')?
        .parse()
        .ok()
}

fn write_next(hint: &File, next: u64) -> Result<(), StoreError> {
    let text = render_next(next);
    let written = rustix::io::pwrite(hint.as_fd(), text.as_bytes(), 0)
        .context(|| "update the version counter")?;
    if written != text.len() {
        return Err(corrupt_store("short write to the version counter"));
    }
    Ok(())
}

fn bump(reserved: u64) -> Result<u64, StoreError> {
    reserved
        .checked_add(BLOCK)
        .ok_or_else(|| corrupt_store("the version counter is exhausted"))
}

/// Moves the hint up to the durable mark and reserves a fresh block. Called
/// under the store lock when a store is opened.
pub(crate) fn reset(root: BorrowedFd<'_>, hint: &File) -> Result<(), StoreError> {
    let reserved = read_reserved(root)?;
    write_reserved(root, bump(reserved)?)?;
    write_next(hint, reserved)
}

/// Issues `count` consecutive versions (at least one) and returns the first.
/// Called under the store lock. A batch takes its versions in one go, so the
/// counter's files are read and written once a batch, not once a record.
pub(crate) fn issue(root: BorrowedFd<'_>, hint: &File, count: u64) -> Result<Version, StoreError> {
    let reserved = read_reserved(root)?;
    let next = match read_next(hint) {
        Some(n) if n <= reserved && n > 0 => n,
        _ => reserved,
    };
    // One past the last version issued; every issued version stays below `R`.
    let end = next
        .checked_add(count.max(1))
        .ok_or_else(|| corrupt_store("the version counter is exhausted"))?;
    if end > reserved {
        write_reserved(root, bump(end - 1)?)?;
    }
    write_next(hint, end)?;
    Ok(Version(next))
}
