"""Hub Space page of speedbench_latency: the metric module beside this file, computed on JSON input.

The page itself lives in the installed package (requirements.txt installs it), so the three
metric Spaces share one tested implementation.
"""
from pathlib import Path

from speedbench.metrics.space_widget import build_widget

# One example per config: the first is shown when the page opens.
EXAMPLES = {
    "default": {"send_times": [0.0, 0.5], "chunk_times": [[0.2, 0.3, 0.5], [0.9, 1.0]],
                "chunk_tokens": [[1, 2, 3], [1, 1]], "requested_concurrency": 2},
    "pareto": {"user_tps": [100.0, 80.0, 60.0, 70.0], "output_tps": [100.0, 600.0, 900.0, 500.0]},
}

demo = build_widget(Path(__file__).with_name("speedbench_latency.py"), EXAMPLES)

if __name__ == "__main__":
    demo.launch()
