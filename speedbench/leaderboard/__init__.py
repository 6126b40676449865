"""The leaderboard core the Space runs on: bundle format, validation, recomputation, storage.

A *bundle* is a tar.gz or zip holding one or more run folders written by ``speedbench run``
(``records.jsonl``, ``manifest.json``, ``results.json``) plus ``submission.json`` (who ran
what). The Space never trusts the numbers inside a bundle: it re-reads the raw per-request
records and recomputes every metric with :mod:`speedbench.metrics`.

Modules, one concept each:

- :mod:`~speedbench.leaderboard.schema`      bundle schema version, submission metadata, rejections
- :mod:`~speedbench.leaderboard.archive`     reading an uploaded archive safely (JSON only, size caps)
- :mod:`~speedbench.leaderboard.strict_json` parsing its members as strict JSON, one line at a time
- :mod:`~speedbench.leaderboard.pack`        packing RUN_DIRs into a bundle (``speedbench submit``)
- :mod:`~speedbench.leaderboard.runs`  a bundle's run folders, read by the one reader (:mod:`speedbench.analysis.run_folder`) under the board's rules
- :mod:`~speedbench.leaderboard.known_builds` the SPEED-Bench dataset builds a run may declare
- :mod:`~speedbench.leaderboard.recompute`   every board figure recomputed from raw records
- :mod:`~speedbench.leaderboard.isl`         prompt lengths a real tokenizer gives for an ISL bucket
- :mod:`~speedbench.leaderboard.names`       model and drafter names: NFKC, look-alikes of known ids
- :mod:`~speedbench.leaderboard.canonical`   the measurement digest (duplicates however packed)
- :mod:`~speedbench.leaderboard.validate`    the whole check: bytes in, a validated entry or a rejection out
- :mod:`~speedbench.leaderboard.admission`   what validating uploads may cost a Space: one limit, budgets
- :mod:`~speedbench.leaderboard.store`       SQLite (WAL) store of submissions, raw bundles and the outbox
- :mod:`~speedbench.leaderboard.mirror`      the Hub dataset repo, store of record on a Space (one commit per entry)
- :mod:`~speedbench.leaderboard.sync`        restoring from and pushing to that repo in the background
- :mod:`~speedbench.leaderboard.verify`      a maintainer's independent rerun compared with an entry
- :mod:`~speedbench.leaderboard.board`       the table and comparisons the Space shows
- :mod:`~speedbench.leaderboard.synthetic`   synthetic runs with known acceptance (tests, benchmark)
"""
