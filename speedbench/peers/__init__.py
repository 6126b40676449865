"""Other benchmark tools' figures, computed from our records, and their saved results read back.

Inference engineers compare our numbers with the SPEED-Bench support their engines ship. Each
module here holds one peer's definitions as small pure functions (the file and version it follows
in its docstring), a ``view`` of our records by those definitions, ``FIGURES`` mapping each of its
figures to ours (``docs/metrics.md``), and ``read_result`` for its saved result file:

``vllm_bench``      ``vllm bench serve`` (vLLM 0.32.0): AL = 1 + Δaccepted / Δdrafts from /metrics
                    deltas over the run; per-position rates are marginals.
``sglang_bench``    SGLang ``bench_serving`` (0.5.23): ``accept_length`` from /server_info, cumulative
                    since the server started.
``llamacpp_bench``  llama.cpp ``tools/server/bench/speed-bench``: accept rate pooled per category, mean
                    predicted_per_second, decode / latency speedup between two runs.
``aiperf_bench``    aiperf 0.13.0: per-request engine statistics, request- and token-weighted AL.
``specdec_bench``   NVIDIA specdec_bench: mean chunk size per request, untrimmed, averaged over requests.
``view``            ``peer_views(records, engine, counter_entry)``: all five for one load point.
``ours``            our figures of a ``results.json`` point by the names the mappings use.
``compare``         a peer's saved result beside our view and our figures, with the cause of each
                    difference (``speedbench compare``).
``layouts``         our dataset written in each peer's input layout (``speedbench export``).
"""
