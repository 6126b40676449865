"""Each metrics/<name>/ folder is a Hub evaluate Space: `speedbench publish-metrics` pushes it with
huggingface_hub to the local Hub stand-in, and evaluate.load("ORG/<name>") downloads the module
from there (evaluate's Hub path, in a fresh process with HF_ENDPOINT set) and computes hand-checked values."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from speedbench.cli import main
from speedbench.cli.publish_metrics import METRIC_NAMES, publish_metrics, space_files

REPO_ROOT = Path(__file__).resolve().parents[2]
METRICS = REPO_ROOT / "metrics"
ORG = "speedbench-org"

_spec = importlib.util.spec_from_file_location("hub_standin", REPO_ROOT / "tests" / "dataset_builder" / "hub_standin.py")
hub_standin = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("hub_standin", hub_standin)
_spec.loader.exec_module(hub_standin)


online_hub = hub_standin.online_hub  # the fixture, shared with the other Hub tests


def _header(name: str) -> dict:
    text = (METRICS / name / "README.md").read_text()
    return yaml.safe_load(text[4:text.index("\n---", 4)])


@pytest.mark.parametrize("name", METRIC_NAMES)
def test_each_folder_is_a_space_whose_pins_match_the_package(name):
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    header = _header(name)
    assert header["sdk"] == "gradio" and header["app_file"] == "app.py"
    assert (METRICS / name / header["app_file"]).is_file()
    # the Space runs the Gradio this project pins for its own Space
    assert f"gradio=={header['sdk_version']}" in pyproject["optional-dependencies"]["space"]
    assert {"evaluate", "metric"} <= set(header["tags"]) and header["description"]
    lines = [line for line in (METRICS / name / "requirements.txt").read_text().splitlines()
             if line and not line.startswith("#")]
    assert lines == [f"speed-bench[metrics]=={pyproject['version']}"]


def test_publish_pushes_each_folder_as_a_space_byte_for_byte(online_hub):
    urls = publish_metrics(ORG, token="hf_test_token")
    assert sorted(urls) == [f"{ORG}/{name}" for name in METRIC_NAMES]
    assert all(url.startswith(f"{online_hub.url}/spaces/{ORG}/") for url in urls.values())
    for name in METRIC_NAMES:
        local = {f: (METRICS / name / f).read_bytes() for f in (f"{name}.py", "README.md", "app.py", "requirements.txt")}
        assert online_hub.spaces[f"{ORG}/{name}"] == local
    assert [(c["type"], c["sdk"], c["organization"], c["name"]) for c in online_hub.created] == [
        ("space", "gradio", ORG, name) for name in METRIC_NAMES]
    assert online_hub.repos == {} and online_hub.unhandled == []


def test_publish_cli_with_a_requirement_and_private(online_hub, capsys):
    spec = "speed-bench[metrics] @ git+https://github.com/someone/speed-bench@0123abc"
    assert main(["publish-metrics", "--namespace", ORG, "--token", "t", "--private", "--requirement", spec]) == 0
    captured = capsys.readouterr()
    printed = captured.out
    assert "note:" not in captured.err  # with --requirement: nothing to warn about
    assert all(f"{ORG}/{name}: {online_hub.url}/spaces/" in printed for name in METRIC_NAMES)
    assert [c.get("visibility") for c in online_hub.created] == ["private"] * len(METRIC_NAMES)
    pushed = online_hub.spaces[f"{ORG}/speedbench_al"]["requirements.txt"].decode().splitlines()
    assert [line for line in pushed if not line.startswith("#")] == [spec]
    # publishing again updates the existing Spaces (exist_ok); without --requirement the PyPI pin is named
    assert main(["publish-metrics", "--namespace", ORG, "--token", "t"]) == 0
    version = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert f"note: the Spaces install speed-bench[metrics]=={version} from PyPI" in capsys.readouterr().err
    assert sum(r == f"POST /api/spaces/{ORG}/speedbench_al/commit/main" for r in online_hub.requests) == 2


def test_publish_refusals(tmp_path, online_hub, capsys):
    broken = tmp_path / "speedbench_al"
    broken.mkdir()
    for f in ("speedbench_al.py", "app.py", "requirements.txt"):
        (broken / f).write_bytes((METRICS / "speedbench_al" / f).read_bytes())
    (broken / "README.md").write_text("---\ntitle: x\n---\n# card\n")
    with pytest.raises(ValueError, match=r"README.md: the YAML header lacks 'sdk: gradio'"):
        space_files(broken)
    # the settings must be the header's, not words in the card's body or in a comment
    (broken / "README.md").write_text("---\nsdk: gradio\n# app_file: app.py\nsdk_version: 6.31.0\n---\n"
                                      "app_file: app.py\n")
    with pytest.raises(ValueError, match=r"README.md: the YAML header lacks 'app_file: app.py'"):
        space_files(broken)
    (broken / "README.md").write_text("---\nsdk: gradio\napp_file: app.py\n---\nsdk_version: 6.31.0\n")
    with pytest.raises(ValueError, match=r"lacks 'sdk_version: <version>'"):
        space_files(broken)
    (broken / "README.md").write_text("---\nsdk: [gradio\n---\n")
    with pytest.raises(ValueError, match=r"README.md: the YAML header does not parse"):
        space_files(broken)
    (broken / "app.py").unlink()
    with pytest.raises(ValueError, match=r"not a metric Space folder \(missing app.py\)"):
        space_files(broken)
    assert main(["publish-metrics", "--namespace", "a/b", "--token", "t"]) == 2
    assert "expected a user or organisation name" in capsys.readouterr().err
    assert online_hub.created == []   # nothing is pushed when a folder is refused
    online_hub.forbidden_namespaces.add("not-mine")
    assert main(["publish-metrics", "--namespace", "not-mine", "--token", "t"]) == 1
    err = capsys.readouterr().err
    assert "the Hub refused" in err and "403" in err and "rights to create a repo" in err
    assert online_hub.spaces == {}


def test_publish_to_a_hub_that_does_not_answer(monkeypatch, capsys):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with hub_standin.HubStandIn() as gone:
        url = gone.url
    monkeypatch.setenv("HF_ENDPOINT", url)  # the stand-in has stopped: nothing listens there now
    assert main(["publish-metrics", "--namespace", ORG, "--token", "t"]) == 1
    err = capsys.readouterr().err
    assert f"the Hub at {url} did not answer: ConnectError" in err and "Traceback" not in err


def test_publish_refuses_in_offline_mode():
    from huggingface_hub import constants

    if not constants.HF_HUB_OFFLINE:
        pytest.skip("HF_HUB_OFFLINE not set for this session")
    with pytest.raises(RuntimeError, match="HF_HUB_OFFLINE"):
        publish_metrics(ORG, token="t")


# Run in a fresh process: evaluate reads HF_ENDPOINT when it is imported.
_LOAD_FROM_HUB = """
import json, sys, evaluate
al = evaluate.load("{org}/speedbench_al")
lat = evaluate.load("{org}/speedbench_latency")
sp = evaluate.load("{org}/speedbench_speedup")
hist = evaluate.load("{org}/speedbench_al", "histograms")
print(json.dumps({{
    "al": al.compute(step_sizes=[[1, 2, 4, 1, 3], [1, 1, 3, 2]], draft_length=3, num_resamples=10),
    "hist": hist.compute(histograms=[[1, 1, 2]], num_resamples=10),
    "latency": lat.compute(send_times=[0.0], chunk_times=[[0.2, 0.3, 0.5]], chunk_tokens=[[1, 2, 3]]),
    "speedup": sp.compute(t_ar=[0.01], t_sd=[0.02], acceptance_length=3.0),
    "module_file": sys.modules[type(al).__module__].__file__,
}}))
"""


@pytest.mark.e2e  # a fresh Python process against the stand-in server
def test_evaluate_loads_the_published_space_through_the_hub(tmp_path, online_hub):
    publish_metrics(ORG, token="t")
    env = {**os.environ, "HF_ENDPOINT": online_hub.url, "HF_HUB_OFFLINE": "0", "HF_DATASETS_OFFLINE": "0",
           "HF_EVALUATE_OFFLINE": "0", "HF_UPDATE_DOWNLOAD_COUNTS": "0", "HF_HOME": str(tmp_path / "hf_home"),
           "HF_DATASETS_CACHE": str(tmp_path / "hf_home" / "datasets")}
    # run from an empty folder, so no local metrics/ path can answer instead of the Hub
    done = subprocess.run([sys.executable, "-c", _LOAD_FROM_HUB.format(org=ORG)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    # by hand: lone first chunk and cut last chunk dropped -> steps [2, 4, 1] and [1, 3]; AL = 11/5
    assert result["al"]["acceptance_length"] == pytest.approx(11 / 5)
    assert result["al"]["acceptance_length_request_weighted"] == pytest.approx((7 / 3 + 4 / 2) / 2)
    assert result["al"]["acceptance_histogram"] == [2, 1, 1, 1]
    # h = [1, 1, 2]: 4 steps accepting 0 + 1 + 2 + 2 = 5 drafts -> AL = 1 + 5/4
    assert result["hist"]["acceptance_length"] == pytest.approx(2.25)
    # 6 tokens over 0.5 s; TTFT 0.2 s
    assert result["latency"]["output_tps"] == pytest.approx(12.0)
    assert result["latency"]["ttft"]["mean"] == pytest.approx(0.2)
    assert result["speedup"]["speedup_estimate"] == pytest.approx(0.01 * 3.0 / 0.02)
    # the module came from the stand-in, cached under the fresh HF_HOME, not from metrics/
    assert str(tmp_path / "hf_home") in result["module_file"] and f"{ORG}--speedbench_al" in result["module_file"]
    downloads = {(repo, revision, path) for repo, revision, path in online_hub.downloads}
    assert {(f"{ORG}/{name}", "main", f"{name}.py") for name in METRIC_NAMES} <= downloads
    assert online_hub.unhandled == []


def _app(name: str):
    spec = importlib.util.spec_from_file_location(f"{name}_space_app", METRICS / name / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", METRIC_NAMES)
def test_space_page_builds_and_computes_every_example(name):
    import gradio as gr

    from speedbench.metrics.space_widget import compute_json, metric_card

    app = _app(name)
    assert isinstance(app.demo, gr.Blocks)
    ids = {block.elem_id for block in app.demo.blocks.values()}
    assert {"config", "arguments", "compute", "result"} <= ids
    script = METRICS / name / f"{name}.py"
    for config, kwargs in app.EXAMPLES.items():
        result = compute_json(script, config, json.dumps(kwargs))
        assert "error" not in result and result, (config, result)
    card = metric_card(METRICS / name / "README.md")
    assert card.startswith("# Metric Card") and "sdk:" not in card


def test_space_page_values_and_errors():
    from speedbench.metrics.space_widget import compute_json

    script = METRICS / "speedbench_al" / "speedbench_al.py"
    app = _app("speedbench_al")
    # by hand: steps [3, 2, 4] and [4, 4, 2] after trimming -> 19 tokens in 6 steps
    assert compute_json(script, "default", json.dumps(app.EXAMPLES["default"]))["acceptance_length"] == pytest.approx(19 / 6)
    assert compute_json(script, "counts", json.dumps(app.EXAMPLES["counts"]))["acceptance_length"] == pytest.approx(1 + 13 / 6)
    assert compute_json(script, "default", "{not json")["error"].startswith("arguments: not JSON")
    assert "expected a JSON object" in compute_json(script, "default", "[1, 2]")["error"]
    assert compute_json(script, "default", '{"step_sizes": [[1, 2, 1]], "num_resamples": 10001}') == {
        "error": "num_resamples: 10001 is more than this page computes (10000)"}
    assert "more than this page takes (2000000)" in compute_json(script, "default", " " * 2_000_001)["error"]
    assert compute_json(script, "default", "[" * 100_000 + "]" * 100_000)["error"].startswith("arguments: not JSON")
    assert "expected integers, got 2.5" in compute_json(script, "default", '{"step_sizes": [[1, 2.5, 1]], "draft_length": 3}')["error"]


@pytest.mark.e2e  # the page served by Gradio on 127.0.0.1, called through gradio_client
def test_space_page_answers_over_http():
    import socket

    from gradio_client import Client

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    demo = _app("speedbench_al").demo
    demo.queue().launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        client = Client(f"http://127.0.0.1:{port}/", verbose=False)
        arguments = json.dumps({"histograms": [[1, 1, 2]], "num_resamples": 10})
        result = client.predict("histograms", arguments, api_name="/compute")
        assert result["acceptance_length"] == pytest.approx(2.25)   # 4 steps, 5 accepted drafts
        assert "error" in client.predict("default", "{oops", api_name="/compute")
    finally:
        demo.close()
