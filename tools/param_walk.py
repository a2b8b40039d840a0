"""Which of our functions a scoring knob (``tau``) and the ``budget`` pass through on their way
from an entry point (``retain``, ``MemoryStore.compact``, the ``dsgc`` CLI) to the kernels.

A profiler hook records every call of a function defined under ``src/`` whose arguments
carry the value itself (followed by identity: a float and an int of their own), or an
object holding it as that attribute (a ``Params``, the CLI's namespace).  Functions that check the value (their name says check,
validate, real or is_integer, or a ``__post_init__``) are counted apart.  Run it on any checkout
(``PYTHONPATH=src python tools/param_walk.py``): it uses only the public API, so the same
script measures the tree before and after a change.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

SRC = str(Path(__file__).resolve().parents[1] / "src")
CHECKERS = ("check", "valid", "_real", "is_integer", "__post_init__", "_cached_parameters")
#: values with identities of their own, so the walk follows exactly these objects
TAU, BUDGET = 0.3125, 10**6 + 7


def _values(frame):
    code = frame.f_code
    n = code.co_argcount + code.co_kwonlyargcount
    names = list(code.co_varnames[:n])
    if code.co_flags & 0x04:  # *args
        names.append(code.co_varnames[n])
        n += 1
    if code.co_flags & 0x08:  # **kwargs
        names.append(code.co_varnames[n])
    for name in names:
        value = frame.f_locals.get(name)
        if isinstance(value, tuple):
            yield from value
        elif isinstance(value, dict):
            yield from value.values()
        else:
            yield value


def walk(run, name: str, value: object) -> list[str]:
    """Our functions that receive ``value`` (or an object whose attribute ``name`` is it), in call order."""
    seen: list[str] = []

    def carries(v: object) -> bool:
        return v is value or (type(v).__name__ in ("Params", "Namespace") and getattr(v, name, None) is value)

    def hook(frame, event, arg):
        nonlocal value
        if event != "call" or not frame.f_code.co_filename.startswith(SRC):
            return
        args = frame.f_locals.get("args")
        if type(args).__name__ == "Namespace" and not seen:  # the CLI: follow the parsed value
            value = getattr(args, name)
        if any(carries(v) for v in _values(frame)):
            seen.append(f"{Path(frame.f_code.co_filename).stem}.{frame.f_code.co_qualname}")

    sys.setprofile(hook)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            run()
    finally:
        sys.setprofile(None)
    return seen


def main() -> None:
    import dsgc_fast
    from dsgc_fast.cli import main as cli

    rng = np.random.default_rng(0)
    q, embs, costs = rng.normal(size=8), rng.normal(size=(50, 8)), rng.integers(1, 5, size=50)
    store = dsgc_fast.MemoryStore()
    for k in range(20):
        store.add(f"block {k} about topic {k % 4}", cost=3)
    session = Path(tempfile.mkdtemp()) / "s.jsonl"
    session.write_text("".join(json.dumps({"role": "user", "content": f"turn {k}"}) + "\n" for k in range(6)))

    def entries(tau: float, budget: int) -> dict:
        return {
            "retain": lambda: dsgc_fast.retain(q, embs, costs, budget, tau=tau),
            "MemoryStore.compact": lambda: store.compact("topic 2", budget, tau=tau),
            "dsgc retain (CLI)": lambda: cli(
                ["retain", "--input", str(session), "--budget", str(budget), "--tau", str(tau)]
            ),
        }

    for knob, value in (("tau", TAU), ("budget", BUDGET)):
        print(f"\n## {knob}\n")
        print("| entry point | calls carrying it | of which check it | path |")
        print("|---|---:|---:|---|")
        for label, run in entries(TAU, BUDGET).items():
            path = walk(run, knob, value)
            checks = [f for f in path if any(c in f.lower() for c in CHECKERS)]
            print(f"| {label} | {len(path)} | {len(checks)} | {' -> '.join(path)} |")


if __name__ == "__main__":
    main()
