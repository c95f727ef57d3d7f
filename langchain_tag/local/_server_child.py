"""The local server's child process: load the GGUF with llama.cpp's server and serve until the parent goes.

``python -m langchain_tag.local.server --model PATH --name NAME`` runs :func:`serve`; it writes one ready line
(:data:`READY_PREFIX` and the address as JSON) to stdout once the server listens.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys

from langchain_tag.local._machine import default_threads

__all__ = ["DEFAULT_CTX", "HOST", "READY_PREFIX", "serve"]

DEFAULT_CTX = 8192
"""Default context window (tokens) of a local server."""

HOST = "127.0.0.1"
"""The only address the server listens on."""

READY_PREFIX = "LANGCHAIN_TAG_SERVER_READY "
"""What the child's ready line starts with."""


def serve(argv: list[str] | None = None) -> int:
    """Entry point of the child process: load the model and serve until told to stop."""
    parser = argparse.ArgumentParser(description="Serve a GGUF over an OpenAI-compatible API.")
    parser.add_argument("--model", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--ctx", type=int, default=DEFAULT_CTX)
    parser.add_argument("--threads", type=int, default=default_threads())
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--verbose", action="store_true", help="log every request")
    args = parser.parse_args(argv)

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.name}
    params.hostnames = [HOST]
    params.port = args.port
    params.n_ctx = args.ctx
    params.n_parallel = 1
    params.cache_prompt = True
    params.endpoint_metrics = True  # token counters for benchmarks (LocalLlamaServer.metrics)
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.verbosity = 3 if args.verbose else 2  # llama.cpp: 3 = info, 2 = warnings
    server = xllamacpp.Server(params)  # loads the model and starts listening

    sys.stdout.write(READY_PREFIX + json.dumps({"address": server.listening_address}) + "\n")
    sys.stdout.flush()
    # Serve until the parent closes our stdin (stop() or parent death) or
    # terminates us. The OS reclaims the model and the socket on exit.
    with contextlib.suppress(KeyboardInterrupt):
        sys.stdin.read()
    os._exit(0)
