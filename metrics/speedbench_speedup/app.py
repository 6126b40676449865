"""Hub Space page of speedbench_speedup: the metric module beside this file, computed on JSON input.

The page itself lives in the installed package (requirements.txt installs it), so the three
metric Spaces share one tested implementation.
"""
from pathlib import Path

from speedbench.metrics.space_widget import build_widget

# One example per config: the first is shown when the page opens.
EXAMPLES = {
    "default": {"t_ar": [0.010], "t_sd": [0.015], "acceptance_length": 3.0,
                "output_tps_ar": 100.0, "output_tps_sd": 190.0},
    "sweep": {"concurrency": [1, 1, 64, 64], "draft_length": [3, 5, 3, 5], "value": [90.0, 110.0, 900.0, 850.0]},
}

demo = build_widget(Path(__file__).with_name("speedbench_speedup.py"), EXAMPLES)

if __name__ == "__main__":
    demo.launch()
