"""A math-verify worker process: one JSON request per stdin line, one JSON reply per stdout line.

Started by :mod:`mrlm.envs.math.workers` as ``python -c <this source> <memory limit in MiB>``, so it
imports nothing of MRLM (only the standard library and math-verify) and starts fast. Request:
``{"gold": str, "pred": str}``; reply: ``{"equal": bool, "error": str | null}``. The first line written is
``{"ready": true}``, once the imports are done. The parent enforces deadlines by killing this process,
so math-verify's own ``signal.alarm`` timeouts are switched off here.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any, TextIO


def _limit_resources(memory_mib: int) -> None:
    """Cap the address space (a huge power must fail, not swap) and die with the parent (Linux)."""
    if memory_mib > 0:
        try:
            import resource

            limit = memory_mib * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        except (ImportError, ValueError, OSError):
            pass
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            pr_set_pdeathsig = 1
            ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGKILL)
        except (OSError, AttributeError):
            pass


def _protocol_stream() -> TextIO:
    """A private handle on stdout for replies; fd 1 then points at stderr so stray prints cannot
    corrupt the protocol."""
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return replies


def _compare(parse: Any, verify: Any, gold: str, pred: str) -> bool:
    # Both sides are wrapped in \boxed{} so that math-verify reads them as LaTeX answers.
    gold_parsed = parse(f"\\boxed{{{gold}}}", parsing_timeout=None)
    pred_parsed = parse(f"\\boxed{{{pred}}}", parsing_timeout=None)
    if not gold_parsed or not pred_parsed:
        return False
    # verify is not symmetric: gold first. Relations may match sets ("x < 3" and "(-\infty, 3)").
    return bool(verify(gold_parsed, pred_parsed, timeout_seconds=None, allow_set_relation_comp=True))


def main() -> None:
    memory_mib = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    _limit_resources(memory_mib)
    replies = _protocol_stream()
    logging.disable(logging.WARNING)  # math-verify warns that its own timeouts are off: we know
    from math_verify import parse, verify  # type: ignore[import-untyped]

    replies.write(json.dumps({"ready": True}) + "\n")
    replies.flush()
    for line in sys.stdin:
        try:
            request = json.loads(line)
            equal, error = _compare(parse, verify, str(request["gold"]), str(request["pred"])), None
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # math-verify's TimeoutException is a BaseException
            equal, error = False, f"{type(exc).__name__}: {exc}"[:300]
        replies.write(json.dumps({"equal": equal, "error": error}) + "\n")
        replies.flush()


if __name__ == "__main__":
    main()
