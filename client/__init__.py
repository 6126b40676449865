"""The SPEED-Bench measurement client (``speedbench run``), in layers a change can be made in alone.

- ``engines/``: one adapter per engine (``vllm``, ``sglang``, ``trtllm``, ``llamacpp``,
  ``openai``): request payload from token ids, parsing of one streamed event, the engine's
  per-request SD statistics, server description, Prometheus counter names.
- ``data/``: the workload: ``workload.py`` (dataset config -> conversations, first turns
  tokenized once), ``selection.py`` (--categories / --per-category / --limit subsets),
  ``hub_dataset.py`` (a Hub dataset id read through the ``datasets`` cache).
- ``load/``: load shapes: ``shapes.py`` (closed loop at fixed concurrency, open loop with seeded
  Poisson arrivals): when each conversation starts.
- ``execution/``: sending the requests, behind one interface (``executor.py``: ``Executor``,
  ``make_executor``): ``phase.py`` (the request options every worker gets, the phase spec, record
  keys, the error budget), ``stream.py`` (one streamed request, every event stamped on the
  monotonic clock), ``event_loop.py`` (one worker's phase in one event loop under its load shape,
  multi-turn conversations), ``loop_lag.py`` (the client's own lag), ``processes.py``
  (``LocalExecutor``: ``--workers N`` local processes on a common start), ``ray_pool.py`` /
  ``ray_actor.py`` / ``ray_clock.py`` / ``ray_cluster.py`` (``--ray``: the same workers as Ray
  actors on a cluster, clock offsets measured, joining it; docs/ray.md).
- ``run/``: orchestration of a whole run: ``options.py`` (``RunOptions``, every option declared
  once), ``runner.py`` (prepare, the sweep over load points, warmup, measured phases, results),
  ``manifest.py`` (``manifest.json`` and the resume check), ``counters.py`` (Prometheus scrape and
  deltas), ``perf_metrics.py`` (the TensorRT-LLM ``/perf_metrics`` join), ``source_check.py``
  (warnings when an acceptance source is missing).
- ``recording/``: ``writer.py`` (``records.jsonl`` appended per request-turn; resume),
  ``summary.py`` (the table printed at the end).

``speedbench sweep`` (servers one at a time, one run per variant x workload x repeat) is the
top-level ``sweep/`` folder (``speedbench.sweep``), beside the client, not inside it.
``results.json`` is computed by ``speedbench.analysis.run_results``; record and manifest types are
in ``speedbench.records``. Stand-in engine servers for tests and benchmarks: ``tests/standins/``.
"""
