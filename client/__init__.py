"""The SPEED-Bench measurement client (``speedbench run``).

Where things live:
- ``engines/``: one adapter per engine (``vllm``, ``sglang``, ``trtllm``, ``llamacpp``,
  ``openai``): request payload from token ids, parsing of one streamed event, the engine's
  per-request SD statistics, server description, Prometheus counter names.
- ``stream.py``: one streamed request, every event stamped on the monotonic clock, failures
  turned into error kinds.
- ``workload.py``: dataset config -> conversations, first turns tokenized once.
- ``load.py``: closed loop (fixed concurrency) and open loop (Poisson) inside one event loop;
  multi-turn conversations; the error budget.
- ``workers.py``: ``--workers N`` processes with a common start on the shared clock.
- ``ray_workers.py`` / ``ray_actor.py`` / ``ray_clock.py``: ``--ray``: the same workers as Ray
  actors on a cluster's nodes, records streamed back to the driver, clock offsets measured.
- ``recording.py``: ``records.jsonl`` appended per request-turn; resume.
- ``counters.py``: Prometheus scrape, parse, deltas.
- ``runner.py``: the whole run: manifest, sweep, counters, resume, results.
- ``analysis.py``: ``results.json`` from records via ``speedbench.metrics``.
- ``reporting.py``: the summary table.
- ``testing/``: stand-in vLLM/SGLang/TensorRT-LLM servers and small fixtures (tests, bench).
Record and manifest types: ``speedbench.records``.
"""
