"""Start SGLang's HTTP server as ``python -m sglang.launch_server`` does, with the CPU quirk handled.

Runs under ``.venv-sglang``'s Python (speedbench is not importable there; standard library and
SGLang only), started by the supervisor ``vllm_process.py`` for ``LocalEngine(engine="sglang")``;
the arguments are ``sglang.launch_server``'s own. ``sgl_kernel`` is our plain-torch stand-in,
found on ``PYTHONPATH`` (see ``sglang_kernel_standin/sgl_kernel/__init__.py``).

The quirk: SGLang's CPU attention backend that can verify drafts is ``intel_amx`` (the
``torch_native`` backend fails in target-verify with an ``AttributeError``), but SGLang rewrites
``--attention-backend intel_amx`` to ``torch_native`` unless the platform reports AMX, which it
decides from whether ``sgl_kernel`` has ``convert_weight_packed``. The stand-in does not provide
the packed-GEMM kernels, so AMX is said for the server's start only, with SGLang's own
``override_platform(has_amx=True)``; the model layers keep reading the real probe (no AMX) and
run plain torch.
"""
from __future__ import annotations

import os
import sys


def main(argv: list[str]) -> None:
    # This script's folder (sys.path[0]) holds speedbench/engine/sglang.py, which would shadow
    # the real ``sglang`` package here and in the processes SGLang spawns (they inherit sys.path).
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    import sgl_kernel

    if not getattr(sgl_kernel, "STANDIN", False):
        raise SystemExit(f"sglang_launch: expected speed-bench's sgl_kernel stand-in, found {sgl_kernel.__file__}")
    from sglang.launch_server import run_server
    from sglang.srt.plugins import load_plugins
    from sglang.srt.runtime_context import override_platform
    from sglang.srt.server_args import prepare_server_args
    from sglang.srt.utils import kill_process_tree

    load_plugins()
    with override_platform(has_amx=True):
        server_args = prepare_server_args(argv)
        try:
            run_server(server_args)
        finally:
            kill_process_tree(os.getpid(), include_parent=False)


if __name__ == "__main__":
    main(sys.argv[1:])
