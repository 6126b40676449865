"""The programming language a competitive-programming prompt asks its solution in.

LiveCodeBench's and Code Contests' stdin problems are language-free; the paper's Coding category
spans Python, Java, C++, Go, JavaScript and Rust, so each such problem asks for one of them,
picked deterministically from its id (``stable_choice``). Problems with Python starter code
(LeetCode) stay Python.
"""
from __future__ import annotations

from speedbench.dataset_builder.sources._read import stable_choice

# (fence / sub-category name, name in the instruction)
SOLUTION_LANGUAGES = (("python", "Python"), ("cpp", "C++"), ("java", "Java"), ("go", "Go"),
                      ("javascript", "JavaScript"), ("rust", "Rust"))
STDIN = ("Read the input from standard input, solve the problem and write the answer to standard output. "
         "Write the solution in {name}.")


def solution_language(key: str) -> tuple[str, str]:
    return stable_choice(SOLUTION_LANGUAGES, key)
