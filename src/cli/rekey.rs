//! `dream rekey`: re-encrypt every record under a new key, then retire the old one.

use std::path::PathBuf;

use clap::Args;

use super::context::Global;
use super::{CliError, Outcome};

/// `dream --encrypt rekey [--new-key-file PATH]`.
#[derive(Debug, Args)]
pub struct RekeyArgs {
    /// File holding the new key (32 raw bytes or base64); default: the DREAM_NEW_KEY variable.
    #[arg(long, value_name = "PATH")]
    pub new_key_file: Option<PathBuf>,
}

/// Rotates the store's encryption key.
#[cfg(feature = "encryption")]
pub async fn rekey(global: &Global, args: RekeyArgs) -> Outcome {
    use std::ops::ControlFlow;
    use std::sync::Arc;

    use dream_encrypted::{EncryptedStore, KeyRing};

    use super::Found;
    use super::stores::keys;

    /// Environment variable holding the new key (base64 of 32 bytes).
    const NEW_KEY_ENV: &str = "DREAM_NEW_KEY";

    if !global.encrypt {
        return Err(CliError::usage(
            "rekey needs --encrypt (the current key in DREAM_KEY or --key-file)",
        ));
    }
    let config = global.file_config()?;
    let inner =
        super::stores::open(&global.store_url(&config), global.redis_url_file.as_deref()).await?;
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

/// Without the `encryption` feature, `rekey` is one clear error.
#[cfg(not(feature = "encryption"))]
pub async fn rekey(_: &Global, _: RekeyArgs) -> Outcome {
    Err(CliError::usage(
        "this dream was built without feature `encryption`; rebuild with --features encryption",
    ))
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
    let material = dream_encrypted::KeyMaterial::generate()?;
    let shown = super::output::escape(&out.display().to_string()).into_owned();
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
    Err(CliError::usage(
        "this dream was built without feature `encryption`; rebuild with --features encryption",
    ))
}
