"""Run benchmark conditions: scenario -> encodings -> retention -> one raw record per run.

A ``Condition`` is one cell of a suite grid (template, encoder, retention method and its
parameters); it runs once per seed.  Retention goes through ``dsgc_fast.retain`` or, with
``impl="ref"``, the pure-Python oracle ``dsgc_ref.retain`` (bit-identical results, slower).

Methods:
``similarity`` / ``no_graph`` / ``dsgc`` / ``recency``  the core policies (hops = 1);
``dsgc_k2``, ``dsgc_k3``  DSGC with 2 or 3 hops (support decays by ``decay`` per extra hop);
``dsgc_norm``  DSGC with the propagated support expressed in units of the top relevance,
               ``I_i = r_i + lambda_pi * pi_i / max_k r_k`` (run as ``lambda_pi / max r``):
               ``r_i`` shrinks like 1/N as the store grows while ``pi_i / max r`` does not,
               so propagated support keeps its weight in large stores.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from dsgc_fast.encoders import CachedEncoder, make_encoder

from . import diagnostics
from .noise import NOISE_KINDS, perturb_edges
from .scenarios import STRENGTHS, TEMPLATES, Scenario, generate


@dataclass(frozen=True)
class PolicyVariant:
    """A named way of running the engine: ``name`` (unique in its suite) and the engine ``policy``.

    The base of every suite's variants (``Method`` here, ``referents.Variant``): a subclass
    adds the options its suite reads, after these two fields.
    """

    name: str
    policy: str


@dataclass(frozen=True)
class Method(PolicyVariant):
    """A retention rule under test: a core policy plus hop count / support normalization."""

    label: str
    hops: int = 1
    normalized: bool = False


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method("similarity", "similarity", "Sim.-only"),
        Method("no_graph", "no_graph", "No-graph DSGC"),
        Method("dsgc", "dsgc", "DSGC"),
        Method("dsgc_k2", "dsgc", "DSGC k=2", hops=2),
        Method("dsgc_k3", "dsgc", "DSGC k=3", hops=3),
        Method("dsgc_norm", "dsgc", "DSGC, support / max r", normalized=True),
        Method("recency", "recency", "Recency"),
    )
}
IMPLS: tuple[str, ...] = ("fast", "ref")


def check_impl(impl: str) -> None:
    """``ValueError`` unless ``impl`` names a retention engine of ``IMPLS``."""
    if impl not in IMPLS:
        raise ValueError(f"impl must be one of {IMPLS}, got {impl!r}")


@dataclass(frozen=True)
class Condition:
    """One grid cell; every field is copied into each of its records."""

    template: str
    encoder: str
    method: str
    multiplier: float = 2.0
    lambda_pi: float = 1.0
    tau: float = 0.25
    decay: float = 0.5
    total_blocks: int = 20
    honeypot: str = "medium"
    noise: str = "none"
    noise_rate: float = 0.0

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {tuple(METHODS)}, got {self.method!r}")

    @property
    def scenario_key(self) -> tuple[str, int, str]:
        return (self.template, self.total_blocks, self.honeypot)


@dataclass
class Outcome:
    """What a retention call decided, as NumPy arrays, whichever implementation ran."""

    rank: np.ndarray
    mask: np.ndarray
    scores: np.ndarray
    similarity: np.ndarray
    relevance: np.ndarray
    used: int


def _call(impl: str, *args: Any, **kwargs: Any) -> Outcome:
    check_impl(impl)
    if impl == "fast":
        from dsgc_fast import retain
    else:
        from dsgc_ref import retain
    res = retain(*args, **kwargs)
    return Outcome(
        rank=np.asarray(res.rank, dtype=np.int64),
        mask=np.asarray(res.mask, dtype=bool),
        scores=np.asarray(res.scores, dtype=np.float64),
        similarity=np.asarray(res.similarity, dtype=np.float64),
        relevance=np.asarray(res.relevance, dtype=np.float64),
        used=int(res.used),
    )


def run_retention(
    cond: Condition, scenario: Scenario, query_emb: np.ndarray, block_embs: np.ndarray, impl: str = "fast"
) -> tuple[Outcome, list[tuple[int, int]], int]:
    """Retention for one run: (outcome, edges used, budget)."""
    method = METHODS[cond.method]
    edges = perturb_edges(scenario, cond.noise, cond.noise_rate)
    budget = scenario.budget(cond.multiplier)
    kwargs = dict(
        edges=edges or None,
        policy=method.policy,
        lambda_pi=cond.lambda_pi,
        tau=cond.tau,
        hops=method.hops,
        decay=cond.decay,
    )
    if method.normalized:
        first = _call(impl, query_emb, block_embs, scenario.costs, budget, **kwargs)
        kwargs["lambda_pi"] = cond.lambda_pi / float(first.relevance.max())
    return _call(impl, query_emb, block_embs, scenario.costs, budget, **kwargs), edges, budget


def record(cond: Condition, scenario: Scenario, out: Outcome, edges: Sequence[tuple[int, int]], budget: int) -> dict:
    """The raw JSON record of one run (no timing: raw records are deterministic)."""
    kept = np.flatnonzero(out.mask)
    prereqs = scenario.chain[:-1]
    answer = scenario.read_answer(kept)
    chain_sim = [float(out.similarity[i]) for i in scenario.chain]
    true_edges, used_edges = set(scenario.edges), set(edges)
    noise = {}
    if cond.noise != "none":
        noise = {
            "edges_dropped": [
                [scenario.ids[j], scenario.ids[i]] for j, i in scenario.edges if (j, i) not in used_edges
            ],
            "edges_added": [[scenario.ids[j], scenario.ids[i]] for j, i in edges if (j, i) not in true_edges],
        }
    return {
        **asdict(cond),
        "regime": scenario.regime,
        "seed": scenario.seed,
        "budget": budget,
        "used": out.used,
        "n_edges": len(edges),
        "full_chain": bool(out.mask[scenario.chain].all()),
        "prerequisites": float(np.mean(out.mask[prereqs])),
        "answer": answer,
        "answer_correct": answer == scenario.answer,
        "retained": [scenario.ids[i] for i in kept],
        "chain_similarity": chain_sim,
        "by_size": diagnostics.by_size(scenario.ids, scenario.chain, out.rank, out.mask),
        **noise,
        "trace": diagnostics.trace(
            scenario.ids, scenario.chain, scenario.edges, out.rank, out.mask, out.scores, out.similarity
        ),
    }


class Encodings:
    """One ``CachedEncoder`` per encoder name; the sentence memo persists under ``cache_dir``.

    The lexical encoder is cheap and exact, so it is memoized in memory only.
    """

    def __init__(self, cache_dir: str | os.PathLike[str] | None = None, *, progress: bool = False) -> None:
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.progress = progress
        self._encoders: dict[str, CachedEncoder] = {}

    def __getitem__(self, name: str) -> CachedEncoder:
        if name not in self._encoders:
            path = (
                self.cache_dir / f"encodings-{name}.npz" if self.cache_dir is not None and name != "lexical" else None
            )
            self._encoders[name] = CachedEncoder(make_encoder(name, progress=self.progress), path)
        return self._encoders[name]

    @property
    def encode_seconds(self) -> float:
        """Seconds spent encoding new texts (cache hits cost nothing)."""
        return sum(enc.seconds for enc in self._encoders.values())

    def save(self) -> None:
        """Persist every on-disk cache that gained encodings."""
        for enc in self._encoders.values():
            enc.save()


def _sort_key(rec: dict) -> tuple:
    """Encoder, then templates and methods in registry order, then the other fields, then seed."""
    order = {
        "template": list(TEMPLATES),
        "method": list(METHODS),
        "honeypot": list(STRENGTHS),
        "noise": list(NOISE_KINDS),
    }
    ranked = {k: v.index(rec[k]) for k, v in order.items()}
    rest = [f.name for f in fields(Condition) if f.name not in ("encoder", *order)]
    return (
        rec["encoder"],
        ranked["template"],
        ranked["method"],
        ranked["honeypot"],
        ranked["noise"],
        *(rec[k] for k in rest),
        rec["seed"],
    )


def run(
    conditions: Sequence[Condition],
    seeds: Iterable[int],
    encodings: Encodings,
    *,
    impl: str = "fast",
    on_run: Callable[[], None] | None = None,
    generator: Callable[..., Scenario] = generate,
) -> list[dict]:
    """Every condition on every seed; records sorted by condition fields, then seed.

    Scenarios come from ``generator`` (called as ``generator(template, seed, total_blocks=,
    honeypot=)``; the neutral family's by default), once per (template, blocks, honeypot,
    seed); all texts an encoder needs are encoded in one call before any retention runs
    (each distinct text once).
    """
    seeds = list(seeds)
    records = []
    for enc_name in dict.fromkeys(c.encoder for c in conditions):
        conds = [c for c in conditions if c.encoder == enc_name]
        scenarios = {
            (key, s): generator(key[0], s, total_blocks=key[1], honeypot=key[2])
            for key in dict.fromkeys(c.scenario_key for c in conds)
            for s in seeds
        }
        encoder = encodings[enc_name]
        encoder.prepare(t for sc in scenarios.values() for t in (sc.query, *sc.texts))
        for (key, _), sc in scenarios.items():
            embs = encoder.encode(sc.texts)
            query = encoder.encode([sc.query])[0]
            for cond in conds:
                if cond.scenario_key == key:
                    out, edges, budget = run_retention(cond, sc, query, embs, impl)
                    records.append(record(cond, sc, out, edges, budget))
                    if on_run is not None:
                        on_run()
    records.sort(key=_sort_key)
    return records
