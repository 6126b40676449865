"""The Qualitative config (``qualitative``): 11 categories x 80 semantically diverse prompts."""
from __future__ import annotations

from speedbench.dataset_builder.qualitative.builder import build_qualitative
from speedbench.dataset_builder.registry import register_config

register_config("qualitative")(build_qualitative)

__all__ = ["build_qualitative"]
