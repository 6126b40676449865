"""Hub Space page of speedbench_al: the metric module beside this file, computed on JSON input.

The page itself lives in the installed package (requirements.txt installs it), so the three
metric Spaces share one tested implementation.
"""
from pathlib import Path

from speedbench.metrics.space_widget import build_widget

# One example per config: the first is shown when the page opens.
EXAMPLES = {
    "default": {"step_sizes": [[1, 3, 2, 4, 1], [1, 4, 4, 2, 2]], "categories": ["math", "code"], "draft_length": 3},
    "histograms": {"histograms": [[0, 2, 1, 3]]},
    "counts": {"steps": [6], "accepted": [13], "draft_length": 3},
    "counters": {"num_drafts": [10], "num_draft_tokens": [30], "num_accepted_tokens": [12],
                 "accepted_per_position": [[6, 4, 2]]},
}

demo = build_widget(Path(__file__).with_name("speedbench_al.py"), EXAMPLES)

if __name__ == "__main__":
    demo.launch()
