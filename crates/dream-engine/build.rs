//! Fingerprints what a recall analysis depends on besides a record's bytes: the
//! scanner's sources and the engine's recall and gate code (and, in the
//! workspace, the locked dependency versions: the stemmers, the stop-word lists).
//! A persisted recall index made by another fingerprint is never trusted.

use std::path::{Path, PathBuf};

/// FNV-1a, 64 bits, over `bytes`, continuing from `hash`.
fn fnv(mut hash: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x100_0000_01b3);
    }
    hash
}

/// Every file under `path`, sorted (a file is itself).
fn files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let Ok(entries) = std::fs::read_dir(path) else {
            return;
        };
        let mut children: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        children.sort();
        for child in children {
            files(&child, out);
        }
    } else if path.is_file() {
        out.push(path.to_owned());
    }
}

fn main() {
    let inputs = [
        "../dream-scan/src",
        "../dream-scan/Cargo.toml",
        "src/recall",
        "src/gate.rs",
        // The memory scanner's depth, and the one definition of "invisible" the
        // scanner folds away.
        "src/scan.rs",
        // What an analysis keeps of a valid record: why an unconfirmed one is
        // held, and the hash of the text its vector is computed from.
        "src/provenance.rs",
        "src/vectors.rs",
        "../dream-core/src/display.rs",
        "../../Cargo.lock",
    ];
    let mut hash = fnv(0xcbf2_9ce4_8422_2325, env!("CARGO_PKG_VERSION").as_bytes());
    for input in inputs {
        println!("cargo:rerun-if-changed={input}");
        let mut found = Vec::new();
        files(Path::new(input), &mut found);
        for file in found {
            hash = fnv(hash, file.to_string_lossy().as_bytes());
            if let Ok(bytes) = std::fs::read(&file) {
                hash = fnv(hash, &bytes);
            }
        }
    }
    println!("cargo:rustc-env=DREAM_ANALYSIS_FINGERPRINT={hash:016x}");
}
