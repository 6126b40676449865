"""The SGLang form of a schedule, read by SGLang's own adaptive code (.venv-sglang, no server): one candidate
step per batch-size slot pins K per batch size, and acceptance feedback does not move it."""
from __future__ import annotations

import json
import subprocess

import pytest

from speedbench.engine.draft_schedule import parse_draft_schedule
from speedbench.engine.schedule_forms import engine_form

READ = """
import json, sys
from sglang.srt.speculative.adaptive_spec_params import AdaptiveSpeculativeParams
params = AdaptiveSpeculativeParams(4, sys.argv[1])
before = [params.get_steps_for_batch(b) for b in range(1, 12)]
for _ in range(50):  # verify results that would push an adaptive slot up (all accepted) or down (none)
    params.on_verify_complete([4], 1)
    params.on_verify_complete([0, 0], 2)
print(json.dumps([before, [params.get_steps_for_batch(b) for b in range(1, 12)]]))
"""


def test_sglang_reads_the_schedule_as_written(tmp_path):
    from speedbench.engine.sglang import sglang_python

    try:
        python = sglang_python()
    except FileNotFoundError as error:
        pytest.fail(f"{error}; or deselect these tests with -m 'not sglang'", pytrace=False)
    form = engine_form(parse_draft_schedule("1-1:4,2-7:1,8-64:0"), "sglang")
    path = tmp_path / "adaptive-config.json"
    path.write_text(json.dumps(form["speculative_adaptive_config"]))
    result = subprocess.run([str(python), "-c", READ, str(path)], capture_output=True, text=True, timeout=600,
                            env={"PYTHONPATH": "", "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr[-3000:]
    before, after = json.loads(result.stdout.strip().splitlines()[-1])
    expected = [4, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0]  # batch sizes 1..11 by hand from 1-1:4,2-7:1,8-64:0
    assert before == expected and after == expected
