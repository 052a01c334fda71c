//! `dream doctor`: checks the store, its persistence, the key and the model
//! configuration. It sends no data anywhere: no model is called.

use super::context::{Global, LlmChoice};
use super::output::{Style, escape};
use super::{Found, Outcome};

/// One check's outcome.
enum Check {
    Ok(String),
    /// Nothing to check (an optional file that is absent).
    Info(String),
    Warn(String),
    Fail(String),
}

/// Runs every check and prints one line each; exit 1 when any check failed.
pub async fn doctor(global: &Global) -> Outcome {
    let mut checks = Vec::new();
    let config = match global.file_config() {
        Ok(config) => {
            checks.push(
                if std::path::Path::new(super::context::CONFIG_FILE).exists() {
                    Check::Ok("dream.toml: readable, sets no URL, key or password".into())
                } else {
                    Check::Info("dream.toml: none in this directory; defaults apply".into())
                },
            );
            config
        }
        Err(e) => {
            checks.push(Check::Fail(format!("dream.toml: {e}")));
            Default::default()
        }
    };
    let url = global.store_url(&config);
    match global.open_store(&config, false).await {
        Ok(store) => {
            let info = store.info();
            let caps = info.capabilities;
            checks.push(Check::Ok(format!(
                "store {}: opened ({}; leases {}, fenced writes {}, cross-process {}, durable {})",
                escape(&url),
                escape(&info.name),
                caps.leases,
                caps.fenced_writes,
                caps.cross_process,
                caps.durable
            )));
            if !(caps.leases && caps.fenced_writes) {
                checks.push(Check::Fail(
                    "store: Dream needs leases and fenced writes".into(),
                ));
            }
            if !caps.durable {
                checks.push(Check::Warn(
                    "store: not durable; memories do not survive a restart".into(),
                ));
            }
            match global
                .options(&config)
                .and_then(|o| Ok(dream_engine::Dream::open(store, o)?))
            {
                Ok(dream) => match dream.stats().await {
                    Ok(stats) => checks.push(Check::Ok(format!(
                        "records: readable{} ({} memories, {} sessions pending in scope {})",
                        if global.encrypt {
                            " and decrypted with the key"
                        } else {
                            ""
                        },
                        stats.memories,
                        stats.pending_sessions,
                        stats.scope
                    ))),
                    Err(e) => checks.push(Check::Fail(format!("records: {e}"))),
                },
                Err(e) => checks.push(Check::Fail(format!("engine: {e}"))),
            }
        }
        Err(e) => checks.push(Check::Fail(format!("store {}: {e}", escape(&url)))),
    }
    checks.extend(
        super::stores::persistence_checks(&url, global.redis_url_file.as_deref())
            .await
            .into_iter()
            .map(|(ok, line)| {
                if ok {
                    Check::Ok(line)
                } else {
                    Check::Warn(line)
                }
            }),
    );
    match global.llm.unwrap_or_default() {
        LlmChoice::Offline => checks.push(Check::Ok(
            "model: offline (rule-based consolidator; no network)".into(),
        )),
        choice => match global.model(&config) {
            Ok(_) => checks.push(Check::Ok(format!(
                "model: {choice:?} configured (key present; not called)"
            ))),
            Err(e) => checks.push(Check::Fail(format!("model: {e}"))),
        },
    }
    let style = Style::detect();
    let mut failed = false;
    for check in &checks {
        match check {
            Check::Ok(line) => outln!("{} {line}", style.good("ok  "))?,
            Check::Warn(line) => outln!("{} {line}", style.warn("warn"))?,
            Check::Info(line) => outln!("--   {line}")?,
            Check::Fail(line) => {
                failed = true;
                outln!("{} {line}", style.bad("FAIL"))?;
            }
        }
    }
    Ok(Found::when(failed))
}
