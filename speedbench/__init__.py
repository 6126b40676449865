"""SPEED-Bench: a benchmark for speculative decoding as it behaves in production."""

__version__ = "0.1.0"
