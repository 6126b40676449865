"""The sweep's progress bar: variant, config and load point now running, points done, time left.

The bar counts load points over the whole sweep (tqdm's estimate of the time left is the mean
time per point so far times the points left). While a run is measuring, a watcher thread reads
the lines its client appends to ``records.jsonl`` (only the new bytes, once a second) to show
which point is running and how many requests it has recorded; the client itself is not touched.
"""
from __future__ import annotations

import re
import threading
from pathlib import Path

_POINT = re.compile(rb'"run_point":"([^"]*)"')
WATCH_INTERVAL_S = 1.0


class SweepProgress:
    def __init__(self, total_points: int, done_points: int, enabled: bool = True, file=None):
        self.bar = None
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=total_points, initial=done_points, unit="point", desc="sweep", position=0,
                            dynamic_ncols=True, file=file)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._label = ""
        self._records: Path | None = None
        self._offset = 0
        self._points: list[str] = []
        self._finished: set[str] = set()
        self._current: str | None = None
        self._count = 0

    def watch(self, label: str, records: Path, points: list[str], done_points: set[str]) -> None:
        """Follow one run: ``points`` in order; ``done_points`` were finished before."""
        self._label = label
        self._set(label)
        if self.bar is None:
            return
        self._records, self._points, self._finished = records, list(points), set(done_points)
        self._offset = records.stat().st_size if records.exists() else 0
        self._current, self._count = None, 0
        self._stop.clear()
        self._thread = threading.Thread(target=self._follow, daemon=True)
        self._thread.start()

    def _follow(self) -> None:
        while not self._stop.wait(WATCH_INTERVAL_S):
            self.consume()

    def consume(self) -> None:
        """Read what the client appended since the last call (whole lines only) and show it."""
        if self._records is None or not self._records.exists():
            return
        with open(self._records, "rb") as handle:
            handle.seek(self._offset)
            chunk = handle.read()
        cut = chunk.rfind(b"\n") + 1
        self._offset += cut
        for name in _POINT.findall(chunk[:cut]):
            point = name.decode()
            if point != self._current:
                if self._current in self._points and self._current not in self._finished:
                    self._finished.add(self._current)
                    self.bar.update(1)  # the client moved on: the previous point is measured
                self._current, self._count = point, 0
            self._count += 1
        if self._current is not None:
            self._set(f"{self._label} · {self._current} ({self._count} req)")

    def unit_finished(self, points_left: int) -> None:
        """The run returned: its points not yet counted are done."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self.bar is not None and points_left > 0:
            self.bar.update(points_left)

    def counted(self) -> int:
        return int(self.bar.n) if self.bar is not None else 0

    def _set(self, text: str) -> None:
        if self.bar is not None:
            self.bar.set_description_str(text, refresh=True)

    def write(self, text: str) -> None:
        if self.bar is not None:
            self.bar.write(text)
        else:
            print(text, flush=True)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.bar is not None:
            self.bar.close()
