"""Peak memory of reading a member near the size cap, measured in a fresh subprocess.

Documented bound (README, "What the Space checks"): reading a bundle costs at most the upload,
the unpacked members once (``1.0x`` their size, as one buffer) and one line at a time, so the
peak RSS above the process's own stays under ``1.5 x unpacked + 32 MiB``. Splitting the member
into lines up front (what ``iter_jsonl`` used to do) costs several times the member for short lines.
"""
from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
import tarfile

import pytest

pytestmark = pytest.mark.slow  # parses 2 million lines (about 30 s)
MiB = 1024 * 1024
MEMBER_BYTES = 120 * MiB  # near the cap set below (128 MiB unpacked)

SCRIPT = r"""
import json, sys
from speedbench.leaderboard.archive import ArchiveLimits, read_archive
from speedbench.leaderboard.strict_json import iter_jsonl

def peak_kib():  # VmHWM: this process's own peak (ru_maxrss would carry the parent's across exec)
    return int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0])

data = open(sys.argv[1], "rb").read()
before = peak_kib()
files = read_archive(data, ArchiveLimits(max_total_bytes=128 * 2**20))
lines = 0
for number, value in iter_jsonl(files["runs/a/records.jsonl"], "runs/a/records.jsonl"):
    lines += 1
after = peak_kib()
print(json.dumps({"before_kib": before, "after_kib": after, "lines": lines}))
"""


def _archive(path) -> int:
    line = json.dumps("x" * 60).encode() + b"\n"  # 63 bytes: many short lines
    count = MEMBER_BYTES // len(line)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        info = tarfile.TarInfo("runs/a/records.jsonl")
        info.size = count * len(line)
        tar.addfile(info, io.BytesIO(line * count))
    path.write_bytes(gzip.compress(raw.getvalue(), compresslevel=1))
    return count


def test_peak_memory_reading_a_member_near_the_cap(tmp_path):
    archive = tmp_path / "big.tar.gz"
    count = _archive(archive)
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(archive)], capture_output=True, text=True, check=True)
    figures = json.loads(result.stdout)
    assert figures["lines"] == count
    peak_mib = (figures["after_kib"] - figures["before_kib"]) / 1024
    bound_mib = 1.5 * MEMBER_BYTES / MiB + 32
    print(f"peak RSS above the process: {peak_mib:.0f} MiB for a {MEMBER_BYTES / MiB:.0f} MiB member "
          f"(bound {bound_mib:.0f} MiB)")
    assert peak_mib < bound_mib
