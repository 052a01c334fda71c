//! `dream rekey`: re-encrypt every record under a new key, then retire the old
//! one; or encrypt a plaintext store in place (`--from-plain`), or decrypt an
//! encrypted one (`--to-plain`).

use std::path::PathBuf;

use clap::Args;

use super::context::Global;
use super::{CliError, Outcome};

/// `dream --encrypt rekey [--new-key-file PATH]`, `dream [--encrypt] rekey
/// --from-plain [--new-key-file PATH]`, `dream --encrypt rekey --to-plain`.
#[derive(Debug, Args)]
pub struct RekeyArgs {
    /// File holding the new key (32 raw bytes or base64); default: the DREAM_NEW_KEY variable
    /// (with --from-plain: DREAM_KEY or --key-file).
    #[arg(long, value_name = "PATH")]
    pub new_key_file: Option<PathBuf>,
    /// Encrypt a plaintext store in place, under the key of --new-key-file, else of --key-file
    /// or DREAM_KEY. Interrupted, run it again to finish.
    #[arg(long, conflicts_with = "to_plain")]
    pub from_plain: bool,
    /// Decrypt an encrypted store in place (its key from --key-file or DREAM_KEY), leaving a
    /// plaintext store. Interrupted, run it again to finish.
    #[arg(long, conflicts_with = "new_key_file")]
    pub to_plain: bool,
}

/// Environment variable holding the new key (base64 of 32 bytes).
#[cfg(feature = "encryption")]
const NEW_KEY_ENV: &str = "DREAM_NEW_KEY";

/// Rotates the store's encryption key, or converts the store to or from plaintext.
#[cfg(feature = "encryption")]
pub async fn rekey(global: &Global, args: RekeyArgs) -> Outcome {
    use std::ops::ControlFlow;
    use std::sync::Arc;

    use dream::encrypted::{EncryptedStore, KeyRing};

    use super::Found;
    use super::stores::keys;

    let here = global.locate()?;
    if args.from_plain || args.to_plain {
        here.require_existing()?;
    }
    let inner = super::stores::open(&here.url, global.url_file.as_deref()).await?;
    if args.from_plain {
        return from_plain(global, &args, inner).await;
    }
    if !global.encrypt {
        return Err(CliError::usage(if args.to_plain {
            "rekey --to-plain needs --encrypt (the store's key in DREAM_KEY or --key-file)"
        } else {
            "rekey needs --encrypt (the current key in DREAM_KEY or --key-file)"
        }));
    }
    if args.to_plain {
        return to_plain(global, inner).await;
    }
    if !super::stores::is_encrypted(&inner.namespaces().await?) {
        return Err(CliError::usage(
            "this store is not encrypted: `dream --encrypt rekey --from-plain` encrypts it",
        ));
    }
    super::stores::check_encryption(&*inner, true).await?;
    let (old_id, old) = keys::load(global.key_file.as_deref(), keys::KEY_ENV)?;
    let (new_id, new) = keys::load(args.new_key_file.as_deref(), NEW_KEY_ENV)?;
    if old_id == new_id {
        return Err(CliError::usage("the new key is the current key"));
    }
    let ring = KeyRing::new(old_id, old)
        .with_key(new_id, new)?
        .with_active(new_id)?;
    let store = Arc::new(EncryptedStore::new(inner, ring));
    let bar = super::progress(0, "re-encrypting");
    let done = store
        .rotate(|p| {
            bar.set_length(p.scanned);
            bar.set_position(p.scanned);
            ControlFlow::Continue(())
        })
        .await?;
    bar.finish_and_clear();
    store.drop_key(old_id).await?;
    outln!(
        "re-encrypted {} records ({} already under the new key); key {old_id} retired, key {new_id} active",
        done.reencrypted,
        done.already_current
    )?;
    outln!("from now on use the new key (DREAM_KEY or --key-file)")?;
    Ok(Found::Nothing)
}

/// The encryption layer a conversion runs through: `key` active, holding the
/// engine's store lease, so every engine write elsewhere waits or is fenced out.
#[cfg(feature = "encryption")]
fn converter(
    inner: std::sync::Arc<dyn dream::core::RecordStore>,
    key: super::stores::StoreKey,
) -> dream::encrypted::EncryptedStore<std::sync::Arc<dyn dream::core::RecordStore>> {
    let (id, material) = key;
    let options = dream::encrypted::EncryptionOptions::default()
        .rotation_lock(dream::engine::layout::dream_lock())
        .rotation_ttl(CONVERSION_TTL);
    dream::encrypted::EncryptedStore::with_options(
        inner,
        dream::encrypted::KeyRing::new(id, material),
        options,
    )
}

/// The conversion's lease TTL (renewed every third of it): how long a killed
/// conversion holds the store up before it can be run again.
#[cfg(feature = "encryption")]
const CONVERSION_TTL: std::time::Duration = std::time::Duration::from_secs(10);

/// How long a conversion waits for the store's lease, as the engine's commands do.
#[cfg(feature = "encryption")]
const LEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Runs `attempt` until the store's lease is free (a command elsewhere holds
/// it, or one killed still does until its lease expires), for up to [`LEASE_WAIT`].
#[cfg(feature = "encryption")]
async fn when_free<F, Fut>(
    bar: &indicatif::ProgressBar,
    mut attempt: F,
) -> Result<dream::encrypted::RotationProgress, dream::encrypted::EncryptionError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<
            Output = Result<dream::encrypted::RotationProgress, dream::encrypted::EncryptionError>,
        >,
{
    let deadline = std::time::Instant::now() + LEASE_WAIT;
    let message = bar.message();
    loop {
        match attempt().await {
            Err(dream::encrypted::EncryptionError::RotationBusy { .. })
                if std::time::Instant::now() < deadline =>
            {
                bar.set_message("waiting for the store's lease");
                tokio::time::sleep(std::time::Duration::from_millis(250)).await;
            }
            other => {
                bar.set_message(message);
                return other;
            }
        }
    }
}

/// A conversion's progress bar, updated by its progress reports.
#[cfg(feature = "encryption")]
fn report_to(
    bar: &indicatif::ProgressBar,
) -> impl FnMut(&dream::encrypted::RotationProgress) -> std::ops::ControlFlow<()> + Send + '_ {
    |p| {
        bar.set_length(p.scanned);
        bar.set_position(p.scanned);
        std::ops::ControlFlow::Continue(())
    }
}

/// A conversion's failure in the person's terms.
#[cfg(feature = "encryption")]
fn conversion_error(err: dream::encrypted::EncryptionError) -> CliError {
    use dream::core::StoreError;
    use dream::encrypted::EncryptionError;
    match err {
        EncryptionError::RotationBusy { .. } => CliError::usage(
            "the store stayed in use for a minute (another dream command holds its lease); \
             try again when it has finished",
        ),
        EncryptionError::Store(StoreError::Corrupt { key: Some(key), .. }) => {
            CliError::usage(format!(
                "record {} does not open with this key (a wrong key, or the record was altered); \
                 nothing was lost: run the command again with the store's key",
                super::streams::escape(&key.to_string())
            ))
        }
        other => other.into(),
    }
}

/// `rekey --from-plain`: encrypts a plaintext store in place.
#[cfg(feature = "encryption")]
async fn from_plain(
    global: &Global,
    args: &RekeyArgs,
    inner: std::sync::Arc<dyn dream::core::RecordStore>,
) -> Outcome {
    use super::stores::keys;
    let (key, source) = match &args.new_key_file {
        Some(path) => (
            keys::load(Some(path), NEW_KEY_ENV)?,
            format!(
                "--key-file {}",
                super::streams::escape(&path.display().to_string())
            ),
        ),
        None => (
            keys::load(global.key_file.as_deref(), keys::KEY_ENV)?,
            match &global.key_file {
                Some(path) => format!(
                    "--key-file {}",
                    super::streams::escape(&path.display().to_string())
                ),
                None => keys::KEY_ENV.to_owned(),
            },
        ),
    };
    let id = key.0;
    // The held state, written out while the store's seals still say what the
    // engine wrote: the encrypted store checks no seal.
    let resuming = dream::encrypted::conversion_in_progress(&*inner)
        .await?
        .is_some();
    if !resuming && !super::stores::is_encrypted(&inner.namespaces().await?) {
        let here = global.locate()?;
        let seal = global.location_seal_key(&here)?;
        let dream = dream::engine::Dream::open(inner.clone(), global.options(&here.config)?)?
            .with_seal(seal.clone());
        let carried = dream.carry_trust(Some(&seal)).await?;
        report_carried(&carried)?;
    }
    let store = converter(inner.clone(), key);
    let bar = super::progress(0, "encrypting");
    let done = when_free(&bar, || store.encrypt_in_place(report_to(&bar)))
        .await
        .map_err(conversion_error)?;
    bar.finish_and_clear();
    // The plaintext the records were overwritten from must not linger in the
    // store's own files (SQLite's free pages and WAL, PostgreSQL's dead rows).
    inner.compact().await?;
    outln!(
        "encrypted {} records under key {id} ({} already encrypted); the store is encrypted now",
        done.reencrypted,
        done.already_current
    )?;
    outln!(
        "from now on pass --encrypt with this key ({source}); without it the store cannot be read"
    )?;
    Ok(super::Found::Nothing)
}

/// Says what a conversion's trust carry held (only when it held something).
#[cfg(feature = "encryption")]
fn report_carried(carried: &dream::engine::Carried) -> Result<(), CliError> {
    if !carried.held.is_empty() {
        outln!(
            "{} records did not carry this store's seal (edited or planted): they stay held \
             (unconfirmed) after the conversion until `dream confirm`",
            carried.held.len()
        )?;
    }
    if carried.plans_dropped > 0 {
        outln!(
            "{} stored plans did not carry this store's seal: dropped",
            carried.plans_dropped
        )?;
    }
    Ok(())
}

/// `--encrypt rekey --to-plain`: decrypts an encrypted store in place.
#[cfg(feature = "encryption")]
async fn to_plain(global: &Global, inner: std::sync::Arc<dyn dream::core::RecordStore>) -> Outcome {
    let key = super::stores::load_key(global.key_file.as_deref())?;
    let resuming = dream::encrypted::conversion_in_progress(&*inner)
        .await?
        .is_some();
    let store = std::sync::Arc::new(converter(inner.clone(), key));
    if !resuming {
        // A fresh start proves the key on one record first; a resumed one may
        // meet decrypted records first, and the marker names the key instead.
        let namespaces = inner.namespaces().await?;
        if super::stores::is_encrypted(&namespaces) {
            super::stores::check_key_opens(&*store, &namespaces).await?;
            // The AEAD authenticated every record; the plain store checks the
            // location's seal instead, so every record is sealed under it now
            // (what was held stays held: its held form is sealed as such).
            let here = global.locate()?;
            let seal = global.location_seal_key(&here)?;
            let dream = dream::engine::Dream::open(store.clone(), global.options(&here.config)?)?;
            let carried = dream.carry_trust(Some(&seal)).await?;
            report_carried(&carried)?;
        }
    }
    let bar = super::progress(0, "decrypting");
    let done = when_free(&bar, || store.decrypt_in_place(report_to(&bar)))
        .await
        .map_err(conversion_error)?;
    bar.finish_and_clear();
    outln!(
        "decrypted {} records ({} already plain); the store is plain now: drop --encrypt",
        done.reencrypted,
        done.already_current
    )?;
    Ok(super::Found::Nothing)
}

/// Without the `encryption` feature, `rekey` is one clear error.
#[cfg(not(feature = "encryption"))]
pub async fn rekey(_: &Global, _: RekeyArgs) -> Outcome {
    Err(CliError::not_built("encryption"))
}

/// `dream key new --out FILE`.
#[derive(Debug, Args)]
pub struct KeyArgs {
    #[command(subcommand)]
    command: KeyCommand,
}

#[derive(Debug, clap::Subcommand)]
enum KeyCommand {
    /// Write a new random encryption key (base64 of 32 bytes) to a new file, mode 0600.
    New {
        /// The key file to create; an existing file is never overwritten.
        #[arg(long, value_name = "PATH")]
        out: PathBuf,
    },
}

/// Creates a key file for `--encrypt --key-file` (or `DREAM_KEY`).
#[cfg(feature = "encryption")]
pub async fn key(args: KeyArgs) -> Outcome {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt;

    let KeyCommand::New { out } = args.command;
    let material = dream::encrypted::KeyMaterial::generate()?;
    let shown = super::streams::escape(&out.display().to_string()).into_owned();
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&out)
        .map_err(|e| CliError::usage(format!("cannot create the key file {shown}: {e}")))?;
    file.write_all(material.to_base64().as_bytes())
        .and_then(|_| file.write_all(b"\n"))
        .and_then(|_| file.sync_all())
        .map_err(|e| CliError::usage(format!("cannot write the key file {shown}: {e}")))?;
    outln!(
        "wrote a new key to {shown} (mode 0600). Keep a copy somewhere safe: without it an \
         encrypted store cannot be read. Use it with `dream --encrypt --key-file {shown} …`."
    )?;
    Ok(super::Found::Nothing)
}

/// Without the `encryption` feature there is no key to make.
#[cfg(not(feature = "encryption"))]
pub async fn key(_: KeyArgs) -> Outcome {
    Err(CliError::not_built("encryption"))
}
