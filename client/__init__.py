"""The SPEED-Bench measurement client (``speedbench run``), in layers a change can be made in alone.

- ``engines/``: one adapter per engine (``vllm``, ``sglang``, ``trtllm``, ``llamacpp``,
  ``openai``): request payload from token ids, parsing of one streamed event, the engine's
  per-request SD statistics, server description, Prometheus counter names.
- ``data/``: the workload: ``workload.py`` (dataset config -> conversations, first turns
  tokenized once), ``hub_dataset.py`` (a Hub dataset id read through the ``datasets`` cache).
- ``load/``: load shapes: ``shapes.py`` (closed loop at fixed concurrency, open loop with seeded
  Poisson arrivals): when each conversation starts.
- ``execution/``: sending the requests: ``phase.py`` (what every executor shares: client
  settings, the phase spec, record keys, the error budget), ``stream.py`` (one streamed request,
  every event stamped on the monotonic clock), ``event_loop.py`` (one worker's phase in one event
  loop under its load shape, multi-turn conversations), ``processes.py`` (``--workers N``
  local processes on a common start), ``ray_pool.py`` / ``ray_actor.py`` / ``ray_clock.py``
  (``--ray``: the same workers as Ray actors on a cluster, clock offsets measured).
- ``run/``: orchestration of a whole run: ``options.py`` (``RunOptions``), ``runner.py`` (manifest, sweep over load points,
  resume, counters, the TensorRT-LLM ``/perf_metrics`` join, results), ``counters.py``
  (Prometheus scrape and deltas), ``source_check.py`` (warnings when an acceptance source is missing).
- ``recording/``: ``writer.py`` (``records.jsonl`` appended per request-turn; resume),
  ``summary.py`` (the table printed at the end).

``results.json`` is computed by ``speedbench.metrics.run_results``; record and manifest types are
in ``speedbench.records``. Stand-in engine servers for tests and benchmarks: ``tests/standins/``.
"""
