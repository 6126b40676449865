"""The analysis layer: between a run folder on disk and the pure math in ``speedbench.metrics``.

``run_folder`` reads a run folder (or a bundle's members) once, under stated rules;
``consistency`` holds the record consistency rules (physical bounds, identities, coverage);
``run_results`` turns a run folder into the per-point figures of ``results.json``, calling
``speedbench.metrics`` for every number. The report, the leaderboard and the sweep read runs
through this package; ``speedbench.metrics`` imports nothing from it.
"""
