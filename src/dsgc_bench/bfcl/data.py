"""BFCL v4 multi-turn sessions, read from the installed ``bfcl-eval`` wheel.

Only the two development splits are readable by default: ``SPLITS`` is a whitelist, and any
other name is refused before a file is opened.  The other multi-turn splits (``HELD_OUT``) are
held out for the final evaluation and must never be loaded, run, inspected or tuned on while
the package is developed; they are read only when the caller says so explicitly
(``held_out=True``, ``dsgc-bench bfcl --split NAME --held-out``).

A session is BFCL's test entry (``question``: one list of messages per turn,
``initial_config``, ``involved_classes``) joined with its ground truth (``possible_answer``:
one list of Python call strings per turn).  The tool schema of a session is the function
documentation of its involved classes (``data/multi_turn_func_doc``), as BFCL gives it to a
model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..suite import Unavailable

#: the development splits, the only ones this harness reads by default
SPLITS: tuple[str, ...] = ("base", "long_context")
#: the held-out multi-turn splits: read only with ``held_out=True``
HELD_OUT: tuple[str, ...] = ("miss_func", "miss_param", "composite")

_FILE = "BFCL_v4_multi_turn_{split}.json"
#: what to do when the wheel is missing (its dependencies are not needed)
INSTALL = "bfcl-eval is not installed: pip install --no-deps bfcl-eval==2026.3.23"


class BfclUnavailable(Unavailable):
    """The ``bfcl-eval`` wheel is not installed."""


@dataclass(frozen=True)
class Session:
    """One BFCL multi-turn test entry with its ground truth.

    ``turns[t]``: the user messages of turn t (role/content dicts); ``ground_truth[t]``: the
    call strings BFCL's possible answer lists for turn t, in execution order.
    """

    id: str
    split: str
    turns: tuple[tuple[dict[str, str], ...], ...]
    ground_truth: tuple[tuple[str, ...], ...]
    initial_config: dict[str, Any]
    involved_classes: tuple[str, ...]

    @property
    def long_context(self) -> bool:
        """BFCL loads the long-context variant of each API's state for this split."""
        return self.split == "long_context"


def check_split(split: str, held_out: bool = False) -> str:
    """``split`` if it may be read; ``ValueError`` otherwise (nothing is read).

    A development split (``SPLITS``) always may; a held-out split (``HELD_OUT``) only with
    ``held_out=True``; no other name ever.
    """
    if split in SPLITS or (held_out and split in HELD_OUT):
        return split
    if split in HELD_OUT:
        raise ValueError(f"split {split!r} is held out: it is read only when held_out=True (--held-out) is given")
    raise ValueError(f"split must be one of {SPLITS} (the development splits) or {HELD_OUT}, got {split!r}")


def data_dir() -> Path:
    """The ``data`` folder of the installed ``bfcl_eval`` package."""
    try:
        root = resources.files("bfcl_eval")
    except ModuleNotFoundError:
        raise BfclUnavailable(INSTALL) from None
    return Path(str(root)) / "data"


def bfcl_version() -> str:
    """The installed ``bfcl-eval`` version."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("bfcl-eval")
    except PackageNotFoundError:
        raise BfclUnavailable(INSTALL) from None


def _json_lines(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def load_sessions(split: str, ids: tuple[str, ...] | None = None, *, held_out: bool = False) -> list[Session]:
    """The sessions of a split, in file order (or only ``ids``, in that order).

    ``split`` must pass ``check_split(split, held_out)``: a held-out split is refused unless
    ``held_out=True``.
    """
    name = _FILE.format(split=check_split(split, held_out))
    root = data_dir()
    entries = _json_lines(root / name)
    answers = {a["id"]: a["ground_truth"] for a in _json_lines(root / "possible_answer" / name)}
    sessions = {}
    for entry in entries:
        truth = answers[entry["id"]]
        if len(truth) != len(entry["question"]):
            raise ValueError(f"{entry['id']}: {len(entry['question'])} turns but {len(truth)} ground-truth turns")
        sessions[entry["id"]] = Session(
            id=entry["id"],
            split=split,
            turns=tuple(tuple(dict(m) for m in turn) for turn in entry["question"]),
            ground_truth=tuple(tuple(calls) for calls in truth),
            initial_config=entry["initial_config"],
            involved_classes=tuple(entry["involved_classes"]),
        )
    if ids is None:
        return list(sessions.values())
    missing = [i for i in ids if i not in sessions]
    if missing:
        raise ValueError(f"unknown {split} session ids {missing}")
    return [sessions[i] for i in ids]


@cache
def _class_docs(class_name: str) -> tuple[str, ...]:
    from bfcl_eval.constants.executable_backend_config import MULTI_TURN_FUNC_DOC_FILE_MAPPING

    path = data_dir() / "multi_turn_func_doc" / MULTI_TURN_FUNC_DOC_FILE_MAPPING[class_name]
    return tuple(json.dumps(doc, sort_keys=True) for doc in _json_lines(path))


def function_docs(session: Session) -> list[dict[str, Any]]:
    """The tool schema of a session: every function doc of its involved classes, in class order."""
    return [json.loads(doc) for name in session.involved_classes for doc in _class_docs(name)]
