//! `dream doctor`: checks the store, its persistence, the key and the model
//! configuration. It sends no data anywhere: no model is called.

use clap::Args;

use super::context::{Access, Global};
use super::models::LlmChoice;
use super::streams::{FormatArg, Style, count, escape};
use super::{Found, Outcome};

/// `dream doctor [--format text|json|jsonl]`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub output: FormatArg,
}

/// One check's outcome.
enum Check {
    Ok(String),
    /// Nothing to check (an optional file that is absent).
    Info(String),
    Warn(String),
    Fail(String),
}

impl Check {
    /// The check as `{"status", "check"}` for `--format json`.
    fn to_json(&self) -> serde_json::Value {
        let (status, line) = match self {
            Check::Ok(line) => ("ok", line),
            Check::Info(line) => ("info", line),
            Check::Warn(line) => ("warn", line),
            Check::Fail(line) => ("fail", line),
        };
        serde_json::json!({ "status": status, "check": line })
    }
}

/// Where `--encrypt`'s key comes from, as people name it.
fn key_source(global: &Global) -> String {
    match &global.key_file {
        Some(path) => format!("--key-file {}", escape(&path.display().to_string())),
        None => format!("{} (no --key-file)", super::stores::KEY_ENV),
    }
}

/// Runs every check and prints one line each; exit 1 when any check failed.
pub async fn doctor(global: &Global, args: DoctorArgs) -> Outcome {
    let mut checks = Vec::new();
    let here = match global.locate() {
        Ok(here) => here,
        Err(e) => {
            checks.push(Check::Fail(format!("store: cannot tell which: {e}")));
            return print_checks(&checks, &args);
        }
    };
    let config = here.config.clone();
    checks.push(match &here.config_file {
        Some(file) => Check::Ok(format!(
            "dream.toml: {} readable, sets no URL, key or password",
            escape(&file.display().to_string())
        )),
        None => Check::Info("dream.toml: none in the project; defaults apply".into()),
    });
    let url = here.url.clone();
    checks.push(Check::Info(format!("store {}: {}", escape(&url), here.why)));
    let key_loaded = if global.encrypt {
        match super::stores::load_key(global.key_file.as_deref()) {
            Ok(_) => true,
            Err(e) => {
                checks.push(Check::Fail(format!(
                    "key: from {}: {e}",
                    key_source(global)
                )));
                false
            }
        }
    } else {
        checks.push(Check::Info(
            "key: none (no --encrypt); an encrypted store needs --encrypt with its key".into(),
        ));
        false
    };
    let opened = if here.exists() {
        global.open_store(&here, Access::Read).await
    } else {
        checks.push(Check::Info(
            "store: none yet; a write makes it there (`dream log`, `remember`, `import`, \
             or the first write through `dream mcp`), and nothing else does"
                .into(),
        ));
        return finish(global, &config, checks, &args, &url).await;
    };
    if key_loaded {
        checks.push(match &opened {
            Ok(_) => Check::Ok(format!(
                "key: from {}; it opens the store",
                key_source(global)
            )),
            Err(e) => Check::Fail(format!(
                "key: from {}; the store did not open with it: {e}",
                key_source(global)
            )),
        });
    }
    match opened {
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
                .and_then(|o| Ok(dream::engine::Dream::open(store, o)?))
            {
                Ok(dream) => {
                    checks.push(claim_check(&dream).await);
                    match dream.stats().await {
                        Ok(stats) => {
                            checks.push(Check::Ok(format!(
                                "records: readable{} ({}, {} pending in scope {})",
                                if global.encrypt {
                                    " and decrypted with the key"
                                } else {
                                    ""
                                },
                                count(stats.memories, "memory|memories"),
                                count(stats.pending_sessions, "session"),
                                stats.scope
                            )));
                            if stats.stuck_sessions > 0 {
                                checks.push(Check::Warn(format!(
                                "sessions: {} held for you after repeated passes left part of each \
                                 unstored; `dream dream --force` retries them",
                                stats.stuck_sessions
                            )));
                            }
                        }
                        Err(e) => checks.push(Check::Fail(format!("records: {e}"))),
                    }
                }
                Err(e) => checks.push(Check::Fail(format!("engine: {e}"))),
            }
        }
        Err(e) => checks.push(Check::Fail(format!("store {}: {e}", escape(&url)))),
    }
    finish(global, &config, checks, &args, &url).await
}

/// Who holds the scope's claim: a pass running, or a process that stopped
/// without giving it up.
async fn claim_check(dream: &dream::engine::Dream) -> Check {
    match super::pass::stopped_holder(dream).await {
        Ok(Some(free_at)) => Check::Warn(format!(
            "claim: held by a process that stopped; free at {free_at} (a pass before then is refused)"
        )),
        Ok(None) => match dream.claim_holder().await {
            Ok(Some(holder)) => Check::Info(format!(
                "claim: a pass is running (process {} on {})",
                holder.pid,
                escape(&holder.host)
            )),
            Ok(None) => Check::Ok("claim: free (no pass running)".into()),
            Err(e) => Check::Fail(format!("claim: {e}")),
        },
        Err(e) => Check::Fail(format!("claim: {e}")),
    }
}

/// The checks that need no open store (persistence, the model), then the report.
async fn finish(
    global: &Global,
    config: &super::config::FileConfig,
    mut checks: Vec<Check>,
    args: &DoctorArgs,
    url: &str,
) -> Outcome {
    checks.extend(
        super::stores::persistence_checks(url, global.url_file.as_deref())
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
        choice => match global.model(config) {
            Ok(_) => checks.push(Check::Ok(format!(
                "model: {choice:?} configured (key present; not called)"
            ))),
            Err(e) => checks.push(Check::Fail(format!("model: {e}"))),
        },
    }
    print_checks(&checks, args)
}

/// Prints one line a check; exit 1 when any failed.
fn print_checks(checks: &[Check], args: &DoctorArgs) -> Outcome {
    let failed = checks.iter().any(|c| matches!(c, Check::Fail(_)));
    if !args.output.is_text() {
        let rows: Vec<_> = checks.iter().map(Check::to_json).collect();
        args.output.list(&rows, || Ok(()))?;
        return Ok(Found::when(failed));
    }
    let style = Style::detect();
    for check in checks {
        match check {
            Check::Ok(line) => outln!("{} {line}", style.good("ok  "))?,
            Check::Warn(line) => outln!("{} {line}", style.warn("warn"))?,
            Check::Info(line) => outln!("--   {line}")?,
            Check::Fail(line) => outln!("{} {line}", style.bad("FAIL"))?,
        }
    }
    Ok(Found::when(failed))
}
