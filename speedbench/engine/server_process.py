"""Child process that runs llama.cpp's HTTP server (xllamacpp) for ``LocalEngine``.

xllamacpp's ``Server`` serves until its process exits, so it lives in a process of its own:
``python -m speedbench.engine.server_process`` reads an ``EngineConfig`` as JSON on stdin's
first line, starts the server, prints one JSON line ``{"url": ...}`` on stdout, then blocks
reading stdin. When the parent closes stdin (or dies, which closes it too) the process exits,
taking the server with it; SIGTERM works as well.
"""
from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any


def _speculative_type(xlc: Any, speculation: str) -> Any:
    kinds = xlc.common_speculative_type
    return {
        "draft": kinds.COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE,
        "synthetic": kinds.COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE,
        "ngram": kinds.COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE,
        "ngram-simple": kinds.COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE,
        "ngram-map-k": kinds.COMMON_SPECULATIVE_TYPE_NGRAM_MAP_K,
        "ngram-map-k4v": kinds.COMMON_SPECULATIVE_TYPE_NGRAM_MAP_K4V,
        "ngram-mod": kinds.COMMON_SPECULATIVE_TYPE_NGRAM_MOD,
        "ngram-cache": kinds.COMMON_SPECULATIVE_TYPE_NGRAM_CACHE,
    }[speculation]


def build_params(config: dict[str, Any]) -> Any:
    """``CommonParams`` for one config (attribute names as in xllamacpp, not the CLI flags)."""
    import xllamacpp as xlc

    params = xlc.CommonParams()
    params.model.path = config["target"]
    params.n_ctx = int(config["n_ctx"])
    params.n_parallel = int(config["n_parallel"])
    params.cpuparams.n_threads = int(config["n_threads"])
    params.cpuparams_batch.n_threads = int(config["n_threads"])
    params.port = int(config["port"])
    params.hostnames = [config["host"]]
    params.endpoint_metrics = True  # Prometheus /metrics: the client reads run-level counters
    speculation = config["speculation"]
    if speculation != "none":
        spec = params.speculative
        spec.types = [_speculative_type(xlc, speculation)]
        if config["draft"]:
            spec.draft.mparams.path = config["draft"]
            spec.draft.cpuparams.n_threads = int(config["n_threads"])
            spec.draft.cpuparams_batch.n_threads = int(config["n_threads"])
        spec.draft.n_max = int(config["draft_length"])
        spec.draft.n_min = int(config["draft_min"])
        if config.get("draft_p_min") is not None:
            # llama.cpp's --draft-p-min: the draft ends at the first token the draft model gives less than P
            spec.draft.p_min = float(config["draft_p_min"])
        if speculation == "synthetic":
            if config.get("synthetic_rates") is not None:
                spec.synth_rates = [float(r) for r in config["synthetic_rates"]]
            else:
                spec.synth_len = float(config["synthetic_length"])
    return params


def main() -> int:
    # Ctrl-C in a terminal reaches the whole process group; the parent decides when we stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    config = json.loads(sys.stdin.readline())
    import xllamacpp as xlc

    server = xlc.Server(build_params(config))
    print(json.dumps({"url": server.listening_address, "pid": os.getpid()}), flush=True)
    sys.stdin.read()  # returns at EOF: the parent stopped us or went away
    # Skip interpreter teardown: the server's threads are still running and would only delay exit.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
