"""Maintenance of a leaderboard store.

``python -m speedbench.leaderboard rebuild [--db PATH]`` recomputes every entry's metrics from
its stored raw bundle (after a change to the metrics core) and fills the measurement digests of
entries stored before they existed; ``list [--db PATH]`` prints the
entries (an unreadable stored row is printed as such, never a crash); ``verify ENTRY --run
RUN_DIR [--run ...] [--baseline RUN_DIR ...] --verifier NAME`` compares a maintainer's independent
fresh runs with an entry and marks it ``verified`` when they agree (:mod:`.verify`); ``quarantine`` moves unreadable
rows off the board. The store path defaults to ``SPEEDBENCH_DB``.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from speedbench.leaderboard.known_builds import KnownBuilds
from speedbench.leaderboard.schema import BundleRejected
from speedbench.leaderboard.store import Entry, LeaderboardStore
from speedbench.leaderboard.validate import backfill_digests, recompute_from_archive


def _line(entry: Entry) -> str:
    """One printable line per entry; every value is quoted as ASCII, so no stored text can break it."""
    meta = entry.metadata
    al = (entry.metrics.get("acceptance") or {}).get("acceptance_length")
    al_text = f"AL {al:.3f}" if isinstance(al, (int, float)) else "AL -"
    fields = [ascii(str(meta.get(k, "")))[1:-1] for k in ("model", "drafter", "sd_method", "engine")]
    return (f"{entry.id}  {ascii(entry.submitted_at)[1:-1]}  {fields[0]}  {fields[1]} ({fields[2]}, {fields[3]})  "
            f"{al_text}  {entry.trust}  warnings: {len(entry.warnings)}")


def _verify(store: LeaderboardStore, args) -> int:
    entry = store.get(args.entry)
    if entry is None:
        print(f"no readable entry {args.entry!r} in {store.path}")
        return 2
    from speedbench.leaderboard.verify import verify_entry

    try:
        ok, checks = verify_entry(store, entry, KnownBuilds.load(), [Path(p) for p in args.run],
                                  [Path(p) for p in args.baseline], verifier=args.verifier)
    except (BundleRejected, FileNotFoundError) as exc:
        print(f"fresh runs rejected: {exc}")
        return 1
    for check in checks:
        allowed = f" (allowed difference {check['allowed_difference']:.4g})" if "allowed_difference" in check else ""
        print(f"{'ok  ' if check['ok'] else 'FAIL'} {check['figure']}: stored {check['stored']}, fresh {check['fresh']}"
              f"{allowed}")
    print(f"{entry.id}: {'verified' if ok else 'not verified (stays self-reported)'}")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m speedbench.leaderboard", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["rebuild", "list", "verify", "quarantine"])
    parser.add_argument("entry", nargs="?", help="entry id (verify)")
    parser.add_argument("--db", default=None, help="store path (default: SPEEDBENCH_DB or leaderboard.sqlite3)")
    parser.add_argument("--run", action="append", default=[], help="fresh SD run folder (verify; repeatable)")
    parser.add_argument("--baseline", action="append", default=[], help="fresh baseline run folder (verify)")
    parser.add_argument("--verifier", default="", help="who verifies (verify; stored with the verification)")
    args = parser.parse_args(argv)
    if args.action == "verify" and (not args.entry or not args.run or not args.verifier):
        parser.error("verify needs ENTRY, at least one --run RUN_DIR and --verifier NAME")
    store = LeaderboardStore(args.db)
    try:
        if args.action == "verify":
            return _verify(store, args)
        if args.action == "rebuild":
            builds = KnownBuilds.load()
            changed = store.rebuild(lambda archive: recompute_from_archive(archive, builds))
            print(f"{store.path}: {store.count()} entries, {changed} recomputed with changed figures")
            for entry_id, reason in store.rebuild_failures:
                print(f"{entry_id}: kept as stored, its bundle no longer passes: {ascii(reason)[1:-1]}")
            for line in backfill_digests(store, builds):
                print(ascii(line)[1:-1])
        elif args.action == "quarantine":
            for entry_id, reason in store.quarantine_unreadable():
                print(f"{entry_id}: quarantined ({reason})")
        else:
            entries, problems = store.entries_and_problems()
            for entry in entries:
                try:
                    print(_line(entry))
                except Exception as exc:  # a stored row of an unexpected shape is reported, never a crash
                    print(f"{entry.id}  (entry not printable: {type(exc).__name__})")
            for entry_id, problem in problems:
                print(f"{entry_id}  ({problem})")
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
