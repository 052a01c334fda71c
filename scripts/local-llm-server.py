#!/usr/bin/env python3
"""Serves a GGUF model with llama.cpp's OpenAI-compatible HTTP server (the
`xllamacpp` wheel) on 127.0.0.1 only, for the local-model tests and for trying
`dream dream --llm compatible` fully locally.

    python local-llm-server.py MODEL.gguf PORT [N_CTX]

Prints `listening http://127.0.0.1:PORT/v1` once the server answers, then serves
until killed (or until its standard input closes, so a test that dies takes
it along).
"""
import os
import sys
import threading

import xllamacpp as xlc

model, port = sys.argv[1], int(sys.argv[2])
n_ctx = int(sys.argv[3]) if len(sys.argv) > 3 else 4096
params = xlc.CommonParams()
params.model.path = model
params.n_ctx = n_ctx
params.n_parallel = 1
params.hostnames = ["127.0.0.1"]
params.port = port
params.cpuparams.n_threads = min(2, os.cpu_count() or 1)
params.cpuparams_batch.n_threads = params.cpuparams.n_threads
server = xlc.Server(params)
print(f"listening http://127.0.0.1:{port}/v1 ({server.listening_address})", flush=True)
done = threading.Event()


def watch_stdin():
    try:
        sys.stdin.read()
    finally:
        done.set()


threading.Thread(target=watch_stdin, daemon=True).start()
done.wait()
os._exit(0)
