"""Tokenizers: the target model's own (target.py) and o200k_base for fixed input lengths."""
