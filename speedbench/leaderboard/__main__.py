"""Maintenance of a leaderboard store.

``python -m speedbench.leaderboard rebuild [--db PATH]`` recomputes every entry's metrics from
its stored raw bundle (after a change to the metrics core); ``python -m speedbench.leaderboard
list [--db PATH]`` prints the entries. The store path defaults to ``SPEEDBENCH_DB``.
"""
from __future__ import annotations

import argparse

from speedbench.leaderboard.known_builds import KnownBuilds
from speedbench.leaderboard.store import LeaderboardStore
from speedbench.leaderboard.validate import recompute_from_archive


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m speedbench.leaderboard", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["rebuild", "list"])
    parser.add_argument("--db", default=None, help="store path (default: SPEEDBENCH_DB or leaderboard.sqlite3)")
    args = parser.parse_args(argv)
    store = LeaderboardStore(args.db)
    try:
        if args.action == "rebuild":
            builds = KnownBuilds.load()
            changed = store.rebuild(lambda archive: recompute_from_archive(archive, builds))
            print(f"{store.path}: {store.count()} entries, {changed} recomputed with changed figures")
        else:
            for entry in store.entries():
                meta = entry.metadata
                al = entry.metrics.get("acceptance", {}).get("acceptance_length")
                print(f"{entry.id}  {entry.submitted_at}  {meta['model']}  {meta['drafter']} ({meta['sd_method']}, "
                      f"{meta['engine']})  AL {al:.3f}" if al is not None else f"{entry.id}  {meta['model']}")
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
