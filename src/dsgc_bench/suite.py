"""The protocol every benchmark suite implements, and ``execute``, which runs one.

A suite is four stages, each a method:

    plan = suite.build(config)               what to run: grid cells, sessions, scenarios
    raw = suite.run(plan, config)            every run's outcome, JSON-ready
    summary = suite.summarize(raw, config)   aggregates, analyses, checked claims, JSON-ready
    sections = suite.render(summary, out)    its part of REPORT.md (figures go under ``out``)

and two for its files: ``save(out, raw, summary)`` and ``load(out)``, the summary back from
the files (None when the suite has not run into ``out``), so the report can be rendered again
from the files alone. What a suite writes is a function of its plan: no timestamps and no
timings, so two runs give byte-identical files; ``execute`` reports wall time through
``config.log`` instead.

Adding a suite: one module with a class that implements ``Suite``, one entry in
``registry.SUITES``.  A suite that cannot run on this machine (its data or an optional
dependency is missing) raises ``Unavailable`` from ``build``; ``reproduce`` then skips it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from dsgc_fast import DsgcRuntimeError
from dsgc_fast.encoders import ENCODER_NAMES

from .runner import Encodings, check_impl

#: seeds of a full run, 0..14 (the paper's 15)
DEFAULT_SEEDS: tuple[int, ...] = tuple(range(15))


class Unavailable(DsgcRuntimeError):
    """A suite cannot run here: its data or an optional dependency is missing (the message says
    which and how to install it)."""


def _quiet(line: str) -> None:
    """The default ``RunConfig.log``: print nothing."""


@dataclass(frozen=True)
class RunConfig:
    """How to run suites: seeds, encoders, retention engine, encoding cache, progress output.

    ``encodings`` holds one memoizing encoder per name for the whole run; sentence encodings
    persist in ``cache_dir`` (when given) and are reused by every later suite and run.
    """

    seeds: tuple[int, ...] = DEFAULT_SEEDS
    encoders: tuple[str, ...] = ENCODER_NAMES
    impl: str = "fast"
    cache_dir: Path | None = None
    progress: bool = False
    log: Callable[[str], None] = _quiet
    encodings: Encodings = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        seeds = tuple(self.seeds)
        if not seeds or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in seeds):
            raise ValueError(f"seeds must be a non-empty sequence of non-negative ints, got {self.seeds!r}")
        encoders = tuple(self.encoders)
        if not encoders or any(e not in ENCODER_NAMES for e in encoders):
            raise ValueError(f"encoders must be drawn from {ENCODER_NAMES}, got {self.encoders!r}")
        check_impl(self.impl)
        object.__setattr__(self, "seeds", seeds)
        object.__setattr__(self, "encoders", encoders)
        object.__setattr__(self, "encodings", Encodings(self.cache_dir, progress=self.progress))


@dataclass(frozen=True)
class Section:
    """A suite's part of REPORT.md: a ``## title`` heading and its Markdown blocks.

    ``checks`` are the suite's claims (``{"claim", "measured", "passed"}``), also listed at
    the top of the report; ``overview`` is its row of the run table (seeds, encoders, engine,
    runs), None for a suite that does not appear there.
    """

    suite: str
    title: str
    parts: tuple[str, ...]
    checks: tuple[dict[str, Any], ...] = ()
    overview: tuple[int, str, str, int] | None = None

    @property
    def text(self) -> str:
        """The section as Markdown: heading, then the blocks separated by blank lines."""
        return "\n\n".join((f"## {self.title}", *self.parts))


@runtime_checkable
class Suite(Protocol):
    """A benchmark suite (see the module docstring for the stages)."""

    name: str
    title: str

    def build(self, config: RunConfig) -> Any: ...

    def run(self, plan: Any, config: RunConfig) -> Any: ...

    def summarize(self, raw: Any, config: RunConfig) -> Any: ...

    def render(self, summary: Any, out: Path) -> list[Section]: ...

    def save(self, out: Path, raw: Any, summary: Any) -> None: ...

    def load(self, out: Path) -> Any | None: ...


def write_json(path: Path, data: Any) -> None:
    """``data`` as indented JSON with sorted keys and a final newline (stable bytes)."""
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def read_json(path: Path) -> Any | None:
    """The JSON in ``path``, or None when there is no such file."""
    return json.loads(path.read_text()) if path.exists() else None


def timed_run(suite: Suite, plan: Any, config: RunConfig) -> Any:
    """``suite.run(plan, config)``, logging its wall time and the part spent encoding."""
    started, encoding = time.perf_counter(), config.encodings.encode_seconds
    raw = suite.run(plan, config)
    config.log(
        f"{suite.name}: {time.perf_counter() - started:.1f} s"
        f" (encoding {config.encodings.encode_seconds - encoding:.1f} s)"
    )
    return raw


def execute(suite: Suite, config: RunConfig, out: Path) -> Any:
    """Build, run, summarize and save ``suite`` into ``out``; returns its summary."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    raw = timed_run(suite, suite.build(config), config)
    config.encodings.save()
    summary = suite.summarize(raw, config)
    suite.save(out, raw, summary)
    return summary


@dataclass(frozen=True)
class SuiteSequence:
    """Suites run one after the other; plan, raw and summary hold one entry per member.

    A member whose ``build`` raises ``Unavailable`` is skipped (logged): its plan, raw and
    summary are None and it saves nothing.  ``render`` skips members whose summary is None
    (not run into that folder), so the sequence of every suite renders whatever a folder
    holds.  ``with_scenarios`` switches every member that has scenario families (members
    without keep theirs; duplicates are dropped).
    """

    name: str
    title: str
    members: tuple[Suite, ...]

    def build(self, config: RunConfig) -> tuple[Any, ...]:
        plans = []
        for m in self.members:
            try:
                plans.append(m.build(config))
            except Unavailable as exc:
                config.log(f"{m.name}: skipped: {exc}")
                plans.append(None)
        return tuple(plans)

    def run(self, plan: Sequence[Any], config: RunConfig) -> tuple[Any, ...]:
        return tuple(None if p is None else timed_run(m, p, config) for m, p in zip(self.members, plan))

    def summarize(self, raw: Sequence[Any], config: RunConfig) -> tuple[Any, ...]:
        return tuple(None if r is None else m.summarize(r, config) for m, r in zip(self.members, raw))

    def render(self, summary: Sequence[Any], out: Path) -> list[Section]:
        return [sec for m, s in zip(self.members, summary) if s is not None for sec in m.render(s, out)]

    def save(self, out: Path, raw: Sequence[Any], summary: Sequence[Any]) -> None:
        for m, r, s in zip(self.members, raw, summary):
            if r is not None:
                m.save(out, r, s)

    def load(self, out: Path) -> tuple[Any, ...]:
        return tuple(m.load(out) for m in self.members)

    def with_scenarios(self, family: str) -> SuiteSequence:
        switched = (m.with_scenarios(family) if hasattr(m, "with_scenarios") else m for m in self.members)
        return SuiteSequence(self.name, self.title, tuple(dict.fromkeys(switched)))
