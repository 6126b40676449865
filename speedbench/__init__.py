"""SPEED-Bench: a benchmark for speculative decoding as it behaves in production."""

__version__ = "0.1.0"

# The paper, cited once: the evaluate modules under metrics/ and the leaderboard Space show it.
PAPER_URL = "https://arxiv.org/abs/2604.09557"
CITATION = f"""\
@article{{speedbench2026,
  title   = {{SPEED-Bench: A Unified and Diverse Benchmark for Speculative Decoding}},
  journal = {{arXiv preprint arXiv:2604.09557}},
  year    = {{2026}},
  url     = {{{PAPER_URL}}}
}}
"""
