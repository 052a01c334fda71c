//! A test's store on each backend and everything it holds, byte for byte: the fs
//! directory's files, the SQLite database with its WAL, every Redis key under the
//! store's prefix (read by type), every row of the PostgreSQL schema. A test
//! binary including this declares `mod postgres_common` and `mod redis_common`
//! (the backends' test helpers) beside it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;

use super::common::Cli;
use super::{postgres_common, redis_common};

/// Where a test's store lives, and how to read its raw bytes.
pub enum Place {
    Fs,
    Sqlite,
    Redis {
        url: String,
        prefix: String,
        _guard: redis_common::PrefixGuard,
        _server: Option<redis_common::RedisServer>,
    },
    Postgres {
        schema: String,
        _guard: postgres_common::SchemaGuard,
    },
}

impl Place {
    /// The store of `backend` for `test`; `None` (after the helpers' skip banner)
    /// when that backend cannot run here.
    pub fn new(backend: &str, test: &str) -> Option<Place> {
        Some(match backend {
            "fs" => Place::Fs,
            "sqlite" => Place::Sqlite,
            "redis" => {
                let redis = redis_common::redis_or_skip(test)?;
                let prefix = redis_common::fresh_prefix();
                Place::Redis {
                    _guard: redis_common::PrefixGuard::new(&redis.url, &prefix),
                    url: redis.url,
                    prefix,
                    _server: redis.server,
                }
            }
            "postgres" => {
                if !postgres_common::available(test) {
                    return None;
                }
                let schema = postgres_common::fresh_schema();
                Place::Postgres {
                    _guard: postgres_common::SchemaGuard::new(&schema),
                    schema,
                }
            }
            _ => unreachable!(),
        })
    }

    /// The `--store` URL.
    pub fn store(&self) -> String {
        match self {
            Place::Fs => "fs:.dream".into(),
            Place::Sqlite => "sqlite:dream.db".into(),
            Place::Redis { url, prefix, .. } => {
                format!("{}?prefix={prefix}", url.trim_end_matches('/'))
            }
            Place::Postgres { schema, .. } => format!("postgres?schema={schema}"),
        }
    }

    /// Environment the binary needs for the store (the PostgreSQL URL).
    pub fn env(&self) -> Vec<(&'static str, String)> {
        match self {
            Place::Postgres { .. } => vec![("DREAM_POSTGRES_URL", postgres_common::url())],
            _ => Vec::new(),
        }
    }

    /// Every raw value in the store's own files, by where it is.
    pub fn raw(&self, cli: &Cli) -> BTreeMap<String, Vec<u8>> {
        let mut out = BTreeMap::new();
        match self {
            Place::Fs => walk(&cli.path(".dream"), &mut out),
            Place::Sqlite => {
                for name in [
                    "dream.db",
                    "dream.db-wal",
                    "dream.db-shm",
                    "dream.db-journal",
                ] {
                    if let Ok(bytes) = std::fs::read(cli.path(name)) {
                        out.insert(name.to_owned(), bytes);
                    }
                }
            }
            Place::Redis { url, prefix, .. } => {
                use dream::redis::redis;
                let mut conn = redis_common::raw(url);
                for key in redis_common::keys_under(&mut conn, prefix) {
                    let kind: String = redis::cmd("TYPE").arg(&key).query(&mut conn).unwrap();
                    let bytes: Vec<u8> = match kind.as_str() {
                        "string" => redis::cmd("GET").arg(&key).query(&mut conn).unwrap(),
                        "hash" => {
                            let all: Vec<Vec<u8>> =
                                redis::cmd("HGETALL").arg(&key).query(&mut conn).unwrap();
                            all.concat()
                        }
                        "set" => {
                            let all: Vec<Vec<u8>> =
                                redis::cmd("SMEMBERS").arg(&key).query(&mut conn).unwrap();
                            all.concat()
                        }
                        "zset" | "list" => {
                            let range = if kind == "zset" { "ZRANGE" } else { "LRANGE" };
                            let all: Vec<Vec<u8>> = redis::cmd(range)
                                .arg(&key)
                                .arg(0)
                                .arg(-1)
                                .query(&mut conn)
                                .unwrap();
                            all.concat()
                        }
                        other => panic!("unexpected Redis type {other} at {key}"),
                    };
                    out.insert(key, bytes);
                }
            }
            Place::Postgres { schema, .. } => {
                // The records' values as stored (bytea), and every row of every
                // other table of the schema as text.
                let schema = schema.clone();
                let rows = postgres_common::with_client(move |client| {
                    Box::pin(async move {
                        let records = format!(
                            "SELECT namespace || '/' || id || ' ' || write_id, value FROM \"{schema}\".records"
                        );
                        let mut rows: Vec<(String, Vec<u8>)> = client
                            .query(&records, &[])
                            .await
                            .unwrap()
                            .iter()
                            .map(|r| (r.get::<_, String>(0), r.get::<_, Vec<u8>>(1)))
                            .collect();
                        let tables = client
                            .query(
                                "SELECT table_name::text FROM information_schema.tables \
                                 WHERE table_schema = $1 AND table_name <> 'records'",
                                &[&schema],
                            )
                            .await
                            .unwrap();
                        for table in tables {
                            let table: String = table.get(0);
                            let sql = format!("SELECT t::text FROM \"{schema}\".\"{table}\" t");
                            for (n, row) in client.query(&sql, &[]).await.unwrap().iter().enumerate() {
                                rows.push((format!("{table}/{n}"), row.get::<_, String>(0).into_bytes()));
                            }
                        }
                        rows
                    })
                })
                .unwrap();
                out.extend(rows);
            }
        }
        out
    }

    /// Whether `text` (any case) occurs anywhere in the store's raw bytes.
    pub fn holds(&self, cli: &Cli, text: &str) -> bool {
        let text = text.to_lowercase();
        self.raw(cli)
            .values()
            .any(|v| String::from_utf8_lossy(v).to_lowercase().contains(&text))
    }
}

fn walk(dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        if entry.file_type().unwrap().is_dir() {
            walk(&path, out);
        } else {
            out.insert(path.display().to_string(), std::fs::read(&path).unwrap());
        }
    }
}
