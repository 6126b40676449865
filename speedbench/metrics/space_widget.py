"""The page of a metric's Hub Space (``metrics/<name>/app.py``): a config, the keyword arguments of
``compute`` as one JSON object, and the result as JSON.

evaluate's ``launch_gradio_widget`` is not used: it builds a one-row dataframe from gradio 3's
``gr.inputs`` (gone since gradio 4) and a dataframe cannot hold what these metrics take (a list of
chunk sizes per request). Gradio is imported only when the page is built, so the core stays
importable without it.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any


def metric_card(readme: str | Path) -> str:
    """The card's Markdown without its YAML front matter (the Space settings)."""
    text = Path(readme).read_text(encoding="utf-8")
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end != -1:
            text = text[end + 4:].lstrip("\n")
    return text


@lru_cache(maxsize=16)
def _module(script: str, config: str):
    import evaluate

    return evaluate.load(script, config)


# A public page computes whatever anyone sends: bound the work one press can ask for (a Space is
# one small machine shared by every visitor). Larger inputs belong in evaluate.load on one's own machine.
MAX_ARGUMENT_CHARS = 2_000_000
MAX_RESAMPLES = 10_000


def compute_json(script: str | Path, config: str, arguments: str) -> dict[str, Any]:
    """``compute(**arguments)`` of the module at ``script`` with ``config``; a mistake in the input is
    returned as ``{"error": ...}`` for the page to show, never raised into the server."""
    if len(arguments) > MAX_ARGUMENT_CHARS:
        return {"error": f"arguments: {len(arguments)} characters, more than this page takes ({MAX_ARGUMENT_CHARS}); "
                         "run evaluate.load(...) locally for large inputs"}
    try:
        kwargs = json.loads(arguments)
    except (json.JSONDecodeError, RecursionError) as error:
        return {"error": f"arguments: not JSON ({error})"}
    if not isinstance(kwargs, dict):
        return {"error": "arguments: expected a JSON object of keyword arguments, e.g. {\"step_sizes\": [[1, 3, 2]]}"}
    resamples = kwargs.get("num_resamples")
    if isinstance(resamples, int) and resamples > MAX_RESAMPLES:
        return {"error": f"num_resamples: {resamples} is more than this page computes ({MAX_RESAMPLES})"}
    try:
        return _module(str(script), config).compute(**kwargs)
    except (ValueError, TypeError, KeyError) as error:
        return {"error": f"{type(error).__name__}: {error}"}


def build_widget(script: str | Path, examples: dict[str, dict[str, Any]]):
    """A ``gr.Blocks`` page for the module at ``script``; ``examples`` maps each config name to the
    keyword arguments shown for it (the first config is selected)."""
    import gradio as gr

    script = Path(script)
    configs = list(examples)

    def example_text(config: str) -> str:
        return json.dumps(examples[config], indent=1)

    with gr.Blocks(title=f"Metric: {script.stem}") as page:
        gr.Markdown(f"# Metric: `{script.stem}`\nChoose a config, edit the keyword arguments of `compute` "
                    "(JSON), press Compute.")
        config = gr.Dropdown(choices=configs, value=configs[0], label="config", elem_id="config")
        arguments = gr.Code(value=example_text(configs[0]), language="json", label="compute(**arguments)",
                            elem_id="arguments")
        button = gr.Button("Compute", variant="primary", elem_id="compute")
        result = gr.JSON(label="result", elem_id="result")
        config.change(example_text, inputs=config, outputs=arguments)
        button.click(lambda c, a: compute_json(script, c, a), inputs=[config, arguments], outputs=result,
                     api_name="compute")  # also callable as the Space's API: /compute
        card = script.with_name("README.md")
        if card.is_file():
            gr.Markdown(metric_card(card))
    return page
