//! The database file: creation (0600), the header check that refuses a foreign
//! file before SQLite touches it, and the schema, created and migrated through
//! `PRAGMA user_version`.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::time::{Duration, Instant};

use dream_core::StoreError;
use rusqlite::{Connection, TransactionBehavior};
use rustix::fs::{Mode, OFlags};

use crate::error::map_err;

/// `PRAGMA application_id` of a Dream database ("DrEm").
pub const APPLICATION_ID: i32 = 0x4472_456d;

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i32 = 1;

/// The first 16 bytes of every SQLite 3 database file.
const MAGIC: &[u8; 16] = b"SQLite format 3\0";

const RECORDS_SQL: &str = "CREATE TABLE records (
    namespace TEXT NOT NULL,
    id TEXT NOT NULL,
    version INTEGER NOT NULL CHECK (version > 0),
    value BLOB NOT NULL,
    PRIMARY KEY (namespace, id)
)";

const COUNTER_SQL: &str = "CREATE TABLE counter (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    last_version INTEGER NOT NULL CHECK (last_version >= 0)
)";

const LEASES_SQL: &str = "CREATE TABLE leases (
    name TEXT PRIMARY KEY NOT NULL,
    token INTEGER NOT NULL CHECK (token > 0),
    holder TEXT,
    expires_ms INTEGER NOT NULL
) WITHOUT ROWID";

/// Migrations: entry `i` takes the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&[&str]] = &[&[
    RECORDS_SQL,
    COUNTER_SQL,
    "INSERT INTO counter (id, last_version) VALUES (1, 0)",
    LEASES_SQL,
]];

/// The schema objects of the current version: (type, name, sql).
const EXPECTED: &[(&str, &str, Option<&str>)] = &[
    ("table", "counter", Some(COUNTER_SQL)),
    ("table", "leases", Some(LEASES_SQL)),
    ("table", "records", Some(RECORDS_SQL)),
    ("index", "sqlite_autoindex_records_1", None),
];

fn incompatible(reason: impl Into<String>) -> StoreError {
    StoreError::Incompatible {
        reason: reason.into(),
    }
}

fn io_err(err: io::Error) -> StoreError {
    StoreError::backend(false, err)
}

/// Creates the database file with mode 0600 if it does not exist; otherwise checks
/// that it is a regular file (not a symlink, not a FIFO) whose header is SQLite's
/// (or that it is empty). Nothing here writes to an existing file.
pub(crate) fn prepare_file(path: &Path) -> Result<(), StoreError> {
    let created = rustix::fs::open(
        path,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    );
    match created {
        Ok(fd) => {
            // The umask may have cleared bits; the owner needs exactly read and write.
            rustix::fs::fchmod(&fd, Mode::from_raw_mode(0o600)).map_err(|e| io_err(e.into()))?;
            tracing::debug!("created a new SQLite store file");
            return Ok(());
        }
        Err(rustix::io::Errno::EXIST) => {}
        Err(err) => return Err(io_err(err.into())),
    }
    let fd = match rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::LOOP) => {
            return Err(incompatible("the database path is a symbolic link"));
        }
        Err(err) => return Err(io_err(err.into())),
    };
    let stat = rustix::fs::fstat(&fd).map_err(|e| io_err(e.into()))?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return Err(incompatible("the database path is not a regular file"));
    }
    if stat.st_mode & 0o077 != 0 {
        tracing::warn!(
            mode = format_args!("{:o}", stat.st_mode & 0o777),
            "the SQLite store file is accessible to other users"
        );
    }
    let mut header = Vec::with_capacity(16);
    File::from(fd)
        .take(16)
        .read_to_end(&mut header)
        .map_err(io_err)?;
    if header.is_empty() {
        return Ok(());
    }
    if !MAGIC.starts_with(&header) {
        return Err(incompatible("the file is not a SQLite database"));
    }
    if header.len() < MAGIC.len() {
        return Err(StoreError::Corrupt {
            key: None,
            reason: "the SQLite database file is truncated".to_owned(),
        });
    }
    Ok(())
}

/// What the file holds, judged without writing.
enum Found {
    /// Nothing yet: an empty database.
    Empty,
    /// A Dream database at this schema version.
    Dream(i32),
}

fn read_state(conn: &Connection) -> Result<Found, StoreError> {
    let app: i32 = conn
        .pragma_query_value(None, "application_id", |row| row.get(0))
        .map_err(|e| map_err(e, None))?;
    let version: i32 = conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(|e| map_err(e, None))?;
    let objects = schema_objects(conn)?;
    if app == 0 && version == 0 && objects.is_empty() {
        return Ok(Found::Empty);
    }
    if app != APPLICATION_ID {
        return Err(incompatible(
            "a SQLite database of another application (foreign application id or tables)",
        ));
    }
    if version > SCHEMA_VERSION {
        return Err(incompatible(format!(
            "the database has schema version {version}; this build reads up to {SCHEMA_VERSION}"
        )));
    }
    if version < 1 {
        return Err(incompatible(format!(
            "the database has an invalid Dream schema version {version}"
        )));
    }
    Ok(Found::Dream(version))
}

type SchemaObject = (String, String, Option<String>);

fn schema_objects(conn: &Connection) -> Result<Vec<SchemaObject>, StoreError> {
    let mut stmt = conn
        .prepare("SELECT type, name, sql FROM sqlite_schema ORDER BY name")
        .map_err(|e| map_err(e, None))?;
    let rows = stmt
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .map_err(|e| map_err(e, None))?;
    let mut out = Vec::new();
    for row in rows {
        let (kind, name, sql): SchemaObject = row.map_err(|e| map_err(e, None))?;
        // Statistics tables appear if someone runs ANALYZE; they are harmless.
        if kind == "table" && name.starts_with("sqlite_stat") {
            continue;
        }
        out.push((kind, name, sql));
    }
    Ok(out)
}

fn check_current_schema(conn: &Connection) -> Result<(), StoreError> {
    let found = schema_objects(conn)?;
    let matches = found.len() == EXPECTED.len()
        && found.iter().zip(EXPECTED).all(
            |((kind, name, sql), (want_kind, want_name, want_sql))| {
                kind == want_kind && name == want_name && sql.as_deref() == *want_sql
            },
        );
    if matches {
        Ok(())
    } else {
        Err(incompatible(
            "the database's tables are not the ones this Dream schema version defines",
        ))
    }
}

/// Runs `PRAGMA quick_check` (it reads the whole file); `Corrupt` unless it
/// reports ok.
pub(crate) fn quick_check(conn: &Connection) -> Result<(), StoreError> {
    let first: String = conn
        .query_row("PRAGMA quick_check(1)", [], |row| row.get(0))
        .map_err(|e| map_err(e, None))?;
    if first == "ok" {
        Ok(())
    } else {
        Err(StoreError::Corrupt {
            key: None,
            reason: "the SQLite integrity check failed".to_owned(),
        })
    }
}

/// Validates the database on `conn` and brings its schema to [`SCHEMA_VERSION`].
/// A foreign, newer or damaged database is refused before anything is written.
/// With `verify`, the file is checked ([`quick_check`]) here only when opening
/// it writes: a new or older schema, or a file not yet in WAL mode. (A WAL's
/// frames, which the last connection to close copies into the file, were
/// written by a store that checked the file before its first write.) Returns
/// whether it was checked.
pub(crate) fn open_schema(
    conn: &mut Connection,
    verify: bool,
    busy_timeout: Duration,
) -> Result<bool, StoreError> {
    // One read transaction, so the application id, the version and the tables are
    // read from one snapshot even while another process initialises the file.
    let snapshot = conn.transaction().map_err(|e| map_err(e, None))?;
    let found = read_state(&snapshot)?;
    let writes = match found {
        Found::Empty => true,
        Found::Dream(version) => version != SCHEMA_VERSION || !in_wal_mode(&snapshot)?,
    };
    let checked = verify && writes;
    if checked {
        quick_check(&snapshot)?;
    }
    if let Found::Dream(SCHEMA_VERSION) = found {
        check_current_schema(&snapshot)?;
    }
    snapshot.commit().map_err(|e| map_err(e, None))?;
    enable_wal(conn, busy_timeout)?;
    if !matches!(found, Found::Dream(SCHEMA_VERSION)) {
        migrate(conn)?;
    }
    Ok(checked)
}

/// Whether the file is in WAL mode (read inside a transaction, so from its header).
fn in_wal_mode(conn: &Connection) -> Result<bool, StoreError> {
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |row| row.get(0))
        .map_err(|e| map_err(e, None))?;
    Ok(mode.eq_ignore_ascii_case("wal"))
}

/// Switches the file to WAL, a persistent property of the file, before the first
/// write. SQLite answers with the old mode instead of waiting when another
/// connection holds a lock (a process initialising the same new file), so this
/// retries until `busy_timeout`.
fn enable_wal(conn: &Connection, busy_timeout: Duration) -> Result<(), StoreError> {
    let deadline = Instant::now() + busy_timeout;
    loop {
        let mode = conn
            .pragma_update_and_check(None, "journal_mode", "wal", |row| row.get::<_, String>(0));
        let retry = match mode {
            Ok(mode) if mode.eq_ignore_ascii_case("wal") => return Ok(()),
            Ok(mode) => StoreError::backend(
                true,
                format!("SQLite did not switch to WAL journal mode (still {mode})"),
            ),
            Err(err) => match map_err(err, None) {
                err if err.is_retryable() => err,
                err => return Err(err),
            },
        };
        if Instant::now() >= deadline {
            return Err(retry);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Applies the missing migrations in one `BEGIN IMMEDIATE` transaction, re-reading
/// the state inside it because another process may have initialised the file.
fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| map_err(e, None))?;
    let from = match read_state(&tx)? {
        Found::Empty => 0,
        Found::Dream(version) => version,
    };
    for (step, statements) in MIGRATIONS.iter().enumerate().skip(from as usize) {
        for sql in *statements {
            tx.execute_batch(sql).map_err(|e| map_err(e, None))?;
        }
        tracing::info!(to = step + 1, "migrated the SQLite store schema");
    }
    tx.pragma_update(None, "application_id", APPLICATION_ID)
        .map_err(|e| map_err(e, None))?;
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(|e| map_err(e, None))?;
    check_current_schema(&tx)?;
    tx.commit().map_err(|e| map_err(e, None))
}
