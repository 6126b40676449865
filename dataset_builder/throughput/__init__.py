"""The Throughput split: five fixed input lengths x three entropy tiers, and its synthetic control.

Importing this package registers the configs ``throughput_1k`` ... ``throughput_32k`` (real text,
``bucket.py``) and ``random_1k`` ... ``random_32k`` (uniformly random o200k_base tokens,
``random_tokens.py``). One module per task type: ``code_completion``, ``text_sorting`` (low
entropy), ``exam_qa``, ``answer_selection`` (mixed), ``dialogue_continuation``,
``book_continuation``, ``creative_writing`` (high entropy).
"""
from __future__ import annotations

from speedbench.dataset_builder.registry import register_config
from speedbench.dataset_builder.throughput.bucket import make_builder
from speedbench.dataset_builder.throughput.random_tokens import make_random_builder
from speedbench.schema import THROUGHPUT_BUCKETS

THROUGHPUT_CONFIGS = {f"throughput_{name}": n for name, n in THROUGHPUT_BUCKETS.items()}
RANDOM_CONFIGS = {f"random_{name}": n for name, n in THROUGHPUT_BUCKETS.items()}

for _config, _n_tokens in THROUGHPUT_CONFIGS.items():
    register_config(_config)(make_builder(_config, _n_tokens))
for _config, _n_tokens in RANDOM_CONFIGS.items():
    register_config(_config)(make_random_builder(_config, _n_tokens))
