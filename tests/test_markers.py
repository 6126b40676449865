"""The test markers: which tests get which marker, and that the quick selection leaves them out."""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
QUICK = "not browser and not e2e and not vllm and not slow"


def _conftest():
    spec = importlib.util.spec_from_file_location("_tests_conftest", TESTS / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_markers_by_file_name_and_fixture():
    markers_for = _conftest().markers_for
    assert markers_for("test_report_browser.py", ()) == {"browser"}
    assert markers_for("test_anything.py", ("tmp_path", "page")) == {"browser"}
    assert markers_for("test_llamacpp_e2e.py", ()) == {"e2e"}
    assert markers_for("test_standin_engines.py", ()) == {"e2e"}
    assert markers_for("test_vllm_real_server.py", ()) == {"vllm"}
    assert markers_for("test_anything.py", ("vllm_server",)) == {"vllm"}
    assert markers_for("test_sglang_e2e.py", ()) == {"sglang", "e2e"}
    assert markers_for("test_anything.py", ("sglang_server_ngram",)) == {"sglang"}
    assert markers_for("test_sglang_wire.py", ()) == set()  # the captures need no server
    assert markers_for("test_qualitative_build.py", ()) == {"slow"}
    assert markers_for("test_latency.py", ("tmp_path", "capsys")) == set()


def test_quick_selection_leaves_out_every_marked_file():
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    result = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", QUICK],
                            capture_output=True, text=True, cwd=TESTS.parent, env=env)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    collected = {line.split("::")[0].rsplit("/", 1)[-1] for line in result.stdout.splitlines() if "::" in line}
    assert "test_latency.py" in collected  # an unmarked file is still there
    for name in ("test_report_browser.py", "test_browser.py", "test_llamacpp_e2e.py", "test_demo_e2e.py",
                 "test_qualitative_build.py", "test_local_engine.py"):
        assert name not in collected, name
