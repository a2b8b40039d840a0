"""The specification both engines share: names, reason codes, errors, the parameter object.

``dsgc_ref`` (the pure-Python oracle) and ``dsgc_fast`` (the Numba engine) import these
names, and nothing else from each other, so that a policy, a selection rule, a reason code,
a parameter check or a bound means the same thing in both, while every computation exists
twice and an equivalence test can catch a bug on either side.  Pure Python only: no NumPy.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, TypedDict

POLICIES: tuple[str, ...] = ("similarity", "no_graph", "dsgc", "recency", "agent")
SELECTIONS: tuple[str, ...] = ("first_fit", "prefix")

#: the largest integer the kernels take (budgets, costs, indices and their sums are int64)
INT64_MAX = 2**63 - 1


class Reason(IntEnum):
    """Why a block was kept or evicted (one code per block in ``Retention.reasons``).

    KEPT_RELEVANCE    kept; its own relevance ``r_i`` is at least its propagated share
                      ``lambda_pi * pi_i`` (a root by relevance).
    KEPT_PROPAGATION  kept; the propagated share ``lambda_pi * pi_i`` exceeds ``r_i``
                      (kept because blocks that depend on it are relevant).
    KEPT_RECENCY      kept by the recency policy (newest first).
    KEPT_PINNED       kept because it is a live root or in the referent closure of one.
    KEPT_CLOSURE      kept because a block admitted by the ranking uses a referent it binds
                      (closure-aware selection admits the unit all or nothing).
    SKIPPED_NO_FIT    evicted: the ranking reached it but it (or its closure unit) did not fit.
    EVICTED_CUTOFF    evicted: ``selection="prefix"`` stopped before the ranking reached it.
    TABLED            evicted, but its bindings survive in the binding table (escalation).
    KEPT_WORKING      kept (agent policy); the support ``lambda_pi * (pi_i + rho_i)`` exceeds
                      ``r_i`` and its working-set part rho_i exceeds pi_i (a recent tool unit).
    """

    KEPT_RELEVANCE = 0
    KEPT_PROPAGATION = 1
    KEPT_RECENCY = 2
    KEPT_PINNED = 3
    KEPT_CLOSURE = 4
    SKIPPED_NO_FIT = 5
    EVICTED_CUTOFF = 6
    TABLED = 7
    KEPT_WORKING = 8

    @property
    def kept(self) -> bool:
        return self not in _EVICTED

    @property
    def label(self) -> str:
        return _REASON_LABELS[self]


_REASON_LABELS = {
    Reason.KEPT_RELEVANCE: "kept: root by relevance",
    Reason.KEPT_PROPAGATION: "kept: by propagation from dependents",
    Reason.KEPT_RECENCY: "kept: recency",
    Reason.KEPT_PINNED: "kept: pinned (live root or referent closure)",
    Reason.KEPT_CLOSURE: "kept: binds a referent of an admitted block",
    Reason.SKIPPED_NO_FIT: "evicted: did not fit the budget",
    Reason.EVICTED_CUTOFF: "evicted: below the prefix cutoff",
    Reason.TABLED: "evicted: replaced by the binding table",
    Reason.KEPT_WORKING: "kept: working-set support (a recent tool unit)",
}
_EVICTED = frozenset({Reason.SKIPPED_NO_FIT, Reason.EVICTED_CUTOFF, Reason.TABLED})


class Form(IntEnum):
    """How a block is sent under value-level retention (``select_forms``): the options are
    ordered by cost, so a block's floor is a ``Form`` and an upgrade raises its code.

    EVICT   not sent (cost 0, value 0).
    DIGEST  sent as its digest: its values verbatim, the bulk dropped (cost d_i, value w_i).
    WHOLE   sent whole (cost c_i, value v_i).
    """

    EVICT = 0
    DIGEST = 1
    WHOLE = 2


# The softmax's exponential, defined here so both engines compute the same bits on any machine
# (a platform's libm ``exp`` is not correctly rounded, and differs between C libraries).  For the
# max-shifted exponent x <= 0 (``dsgc_ref.equations.exp_nonpositive``, ``kernels.exponential``):
#
#     y  = max(x, EXP_FLOOR)                        below EXP_FLOOR the result is 0.0 anyway
#     k  = floor(y * EXP_INV_LN2 + 0.5)             the nearest integer to y / ln 2
#     r  = (y - k * EXP_LN2_HI) - k * EXP_LN2_LO    |r| <= 0.3466; k * EXP_LN2_HI is exact
#     p  = sum_{j=0..13} r^j / j!                   Horner's rule from j = 13 down (EXP_TAYLOR)
#     exp~(x) = (p * 2^k1) * 2^(k - k1), k1 = max(k, EXP_SPLIT)   one rounding, also subnormal
#
# each operation a float64 operation rounded to nearest, nothing fused.  Within 1 ulp of the
# correctly rounded exp(x) (``tests/test_exponential.py``).

#: ln 2 in two parts: its leading 32 significant bits (the last 21 bits of the float are zero, so
#: k * EXP_LN2_HI is exact for |k| < 2**21) and the float nearest the rest
EXP_LN2_HI = float.fromhex("0x1.62e42fee00000p-1")
EXP_LN2_LO = float.fromhex("0x1.a39ef35793c76p-33")
#: the float nearest 1 / ln 2
EXP_INV_LN2 = float.fromhex("0x1.71547652b82fep+0")
#: exponents below this give 0.0 (exp(-760) is below half the smallest subnormal, 2**-1075)
EXP_FLOOR = -760.0
#: the scaling 2**k is applied as 2**k1 * 2**(k - k1), k1 >= EXP_SPLIT, so both factors are normal
EXP_SPLIT = -1000
#: the Taylor coefficients 1 / j!, j = 0..13, as the floats nearest them
EXP_TAYLOR: tuple[float, ...] = tuple(1.0 / math.factorial(j) for j in range(14))


def whitespace_cost(text: str) -> int:
    """The paper's token cost of a text: ``max(len(text.split()), 1)``."""
    return max(len(text.split()), 1)


# -- errors ----------------------------------------------------------------------------------
class DsgcError(Exception):
    """The base of every error dsgc raises: ``except dsgc_fast.DsgcError`` catches each refusal.

    Every error also keeps the builtin parent it had before this base existed, so existing
    ``except ValueError`` / ``TypeError`` / ``RuntimeError`` clauses still catch it: a refused
    value is a ``DsgcValueError``, an argument of a refused type a ``DsgcTypeError``, a call the
    object's state refuses (a closed archive, a store without embeddings) a
    ``DsgcRuntimeError``; the named errors (``ReferentEvictionError``,
    ``dsgc_fast.memory.records.SessionError``, ``dsgc_fast.ArchiveLockedError``) derive from one of
    these parents and from ``DsgcError``.
    """


class DsgcValueError(DsgcError, ValueError):
    """A value dsgc refuses: out of range, malformed, or inconsistent with the other arguments."""


class DsgcTypeError(DsgcError, TypeError):
    """An argument of a type dsgc does not take."""


class DsgcRuntimeError(DsgcError, RuntimeError):
    """A call the object's current state refuses (the message says what to do instead)."""


class ReferentEvictionError(DsgcRuntimeError):
    """Raised when even the live roots plus the binding table exceed the budget.

    Evicting a pinned block would orphan a referent that a live block still uses, so the
    engine refuses instead of answering with a silently broken context.  The attributes
    hold the full lists (``pinned``, ``roots``: block indices; ``pinned_ids``, ``root_ids``:
    block ids, set by the store) and the costs; the message names at most
    ``LISTED`` blocks of each list.
    """

    def __init__(
        self, message: str, *, pinned: Sequence[int] = (), roots: Sequence[int] = (), pinned_cost: int = 0,
        root_cost: int = 0, table_cost: int = 0, budget: int = 0, pinned_ids: Sequence[str] = (),
        root_ids: Sequence[str] = (),
    ) -> None:  # fmt: skip
        if not isinstance(message, str):
            raise DsgcTypeError(f"message must be a str, got {type(message).__name__}")
        for name, values, kind in (
            ("pinned", pinned, int), ("roots", roots, int), ("pinned_ids", pinned_ids, str), ("root_ids", root_ids, str)
        ):  # fmt: skip
            if (
                not isinstance(values, Sequence)
                or isinstance(values, (str, bytes))
                or not all(is_integer_scalar(v) if kind is int else isinstance(v, str) for v in values)
            ):
                raise DsgcTypeError(f"{name} must be a sequence of block {'indices' if kind is int else 'ids'}")
        for name, cost in (("pinned_cost", pinned_cost), ("root_cost", root_cost), ("table_cost", table_cost),
                           ("budget", budget)):  # fmt: skip
            if not is_integer_scalar(cost) or cost < 0:
                raise DsgcValueError(f"{name} must be a non-negative integer, got {cost!r}")
        super().__init__(message)
        self.pinned, self.roots = list(pinned), list(roots)
        self.pinned_ids, self.root_ids = list(pinned_ids), list(root_ids)
        self.pinned_cost, self.root_cost, self.table_cost, self.budget = pinned_cost, root_cost, table_cost, budget

    @classmethod
    def over_budget(
        cls, pinned: list[int], pinned_cost: int, roots: list[int], root_cost: int, table_cost: int, budget: int
    ) -> ReferentEvictionError:
        """The error both engines raise, naming the pinned blocks, their cost and the budget."""
        return cls(
            f"pinned blocks {listing(pinned)} cost {pinned_cost} tokens (live roots {listing(roots)}: {root_cost}); "
            f"the binding table costs {table_cost}; budget {budget}: evicting a pinned block would orphan a referent",
            pinned=pinned, roots=roots, pinned_cost=pinned_cost, root_cost=root_cost, table_cost=table_cost,
            budget=budget,
        )  # fmt: skip


#: how many items of a list an error message names
LISTED = 10


def listing(items: Sequence[Any], limit: int = LISTED) -> str:
    """``[a, b, c]``, or the first ``limit`` items and how many more for a longer list."""
    if len(items) <= limit:
        return repr(list(items))
    shown = ", ".join(repr(x) for x in items[:limit])
    return f"[{shown}, ...] ({len(items) - limit:,} more, {len(items):,} in all)"


def is_integer_scalar(value: Any) -> bool:
    """True for Python/NumPy integers and integral finite floats, never for bools."""
    if isinstance(value, bool):
        return False
    if isinstance(value, numbers.Integral):
        return True
    if isinstance(value, numbers.Real):
        f = float(value)
        return math.isfinite(f) and f.is_integer()
    return False


def _real(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise DsgcTypeError(f"{name} must be a real number, got {type(value).__name__}")
    f = float(value)
    if not math.isfinite(f):
        raise DsgcValueError(f"{name} must be finite, got {value!r}")
    return f


def _integer(name: str, value: Any, low: int, high: int) -> int:
    if not is_integer_scalar(value):
        raise DsgcTypeError(f"{name} must be an integer in [{low}, {high}], got {value!r}")
    v = int(value)
    if not low <= v <= high:
        raise DsgcValueError(f"{name} must be in [{low}, {high}], got {v}")
    return v


def check_budget(budget: Any) -> int:
    """The budget as an int: a non-negative integer token count at most ``INT64_MAX``."""
    if not is_integer_scalar(budget):
        raise DsgcTypeError(f"budget must be a non-negative integer token count, got {budget!r}")
    b = int(budget)
    if b < 0:
        raise DsgcValueError(f"budget must be >= 0, got {b}")
    if b > INT64_MAX:
        raise DsgcValueError(f"budget must be at most 2**63 - 1, got {b}")
    return b


def check_indices(name: str, value: Any, n: int) -> list[int]:
    """Block indices in [0, n) as ints, repeats kept; a single index or None (none) too.

    Every entry must be an integer i with 0 <= i < n, so a negative index never counts from
    the end; ``dsgc_fast`` checks the same with NumPy.
    """
    if value is None:
        return []
    vals = [value] if is_integer_scalar(value) else list(value)
    for x in vals:
        if not is_integer_scalar(x):
            raise DsgcTypeError(f"{name} must hold block indices (integers), got {x!r}")
        if not 0 <= int(x) < n:
            raise DsgcValueError(f"{name} has index {int(x)}, out of range for {n} blocks")
    return [int(x) for x in vals]


def check_referent_lists(uses: Any, binds: Any, n: int) -> tuple[list[list[Hashable]], list[dict[Hashable, Any]]]:
    """Validate the list form of referents; return (use lists, bind dicts), one per block.

    ``uses[i]`` is a collection of hashable referent names and ``binds[i]`` a mapping
    referent -> value; either may be None (nothing), and so may each entry.
    """
    use_lists: list[list[Hashable]] = []
    for i, u in enumerate(_per_block("uses", uses, n)):
        if u is None:
            use_lists.append([])
            continue
        if isinstance(u, (str, bytes)) or not isinstance(u, Iterable):
            raise DsgcTypeError(f"uses[{i}] must be a collection of referent names, got {type(u).__name__}")
        items = list(u)
        for x in items:
            if not isinstance(x, Hashable):
                raise DsgcTypeError(f"uses[{i}] holds an unhashable referent {x!r}")
        use_lists.append(items)
    bind_maps: list[dict[Hashable, Any]] = []
    for i, b in enumerate(_per_block("binds", binds, n)):
        if b is not None and not isinstance(b, Mapping):
            raise DsgcTypeError(f"binds[{i}] must be a mapping referent -> value or None, got {type(b).__name__}")
        bind_maps.append({} if b is None else dict(b))
    return use_lists, bind_maps


def check_binders(
    binders: Mapping[Hashable, Any] | None, binds: Sequence[Mapping[Hashable, Any]]
) -> dict[Hashable, int]:
    """Validate live-binder overrides against the bind maps; return them as referent -> int.

    An override ``binders[x] = i`` is valid when i is an integer with 0 <= i < len(binds)
    and block i binds x (``x in binds[i]``); None means no overrides.
    """
    out: dict[Hashable, int] = {}
    for x, i in (binders or {}).items():
        if not is_integer_scalar(i) or not 0 <= int(i) < len(binds):
            raise DsgcValueError(f"binders[{x!r}] = {i!r} is not a block index")
        if x not in binds[int(i)]:
            raise DsgcValueError(f"binders[{x!r}] = {int(i)}, but block {int(i)} does not bind {x!r}")
        out[x] = int(i)
    return out


def _per_block(name: str, value: Any, n: int) -> list[Any]:
    """``value`` as a list of one entry per block (all None when ``value`` is None)."""
    if value is None:
        return [None] * n
    items = list(value)
    if len(items) != n:
        raise DsgcValueError(f"{name} has {len(items)} entries, expected {n} (one per block)")
    return items


def referent_block_count(uses: Any, binds: Any) -> int:
    """The store size implied by the list form (``uses`` or ``binds``; not both None)."""
    if uses is None and binds is None:
        raise DsgcValueError("uses and binds cannot both be None: one of them gives the number of blocks")
    return len(uses) if uses is not None else len(binds)


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise DsgcValueError(f"{name} must be one of {allowed}, got {value!r}")
    return value


def _knob(default: Any, help: str, metavar: str | None = None) -> Any:
    return field(default=default, metadata={"help": help, "metavar": metavar})


@dataclass(frozen=True)
class Params:
    """The scoring knobs of the retention contract, validated once when the object is made.

    Every entry point (``retain``, ``retain_batch``, ``MemoryStore`` and its ``compact``, the
    message adapters, the CLI) takes a ``Params`` as ``params=`` and the same fields as
    keyword overrides; ``Params.of(params, **overrides)`` is the one place that merges them.

    Parameters
    ----------
    policy : str
        ``"dsgc"`` ranks by I_i = (r_i + lambda_pi * pi_i) / max(c_i, 1) ** density_exponent;
        ``"no_graph"`` is the same with lambda_pi = 0; ``"similarity"`` ranks by the raw
        a_i = <q, e_i>; ``"recency"`` keeps the newest (last in ``order``) first;
        ``"agent"`` adds working-set support to dsgc's (see ``recency_decay`` and
        ``working_weight``); ``select``, ``MemoryStore.compact`` and the adapters then send
        each tool unit whole, as its digest or not at all (``digests=True``, their default:
        ``dsgc_fast.memory.compaction``'s greedy by value per token over w_g / d_g, v_g / c_g and
        (v_g - w_g) / (c_g - d_g), from ``retain``'s decision as floors).
    selection : str
        ``"first_fit"`` keeps every ranked block that still fits and goes on; ``"prefix"``
        stops at the first one that does not fit.
    lambda_pi : float
        Weight of the propagated support pi (>= 0).
    tau : float
        Softmax temperature, r = softmax(a / tau) (> 0).
    hops : int
        Propagation depth k >= 1; 1 is the paper's one-hop rule.
    decay : float
        Damping per extra hop in [0, 1]: pi_i = sum_h decay^(h-1) * S_h(i).
    density_exponent : float
        Exponent p >= 0 of the cost normalization max(c_i, 1) ** p (0: none).
    recency_decay : float
        The agent policy's decay gamma in (0, 1] per working unit back: a block of working
        age u >= 1 gets rho_i = gamma^(u-1) * kappa / N, and
        I_i = (r_i + lambda_pi * (pi_i + rho_i)) / max(c_i, 1) ** p (other policies ignore it).
    working_weight : float
        The agent policy's working-set weight kappa >= 0: the newest working unit's support
        in units of the mean relevance 1/N (the N relevances sum to 1), so a block outranks a
        working block of age u once its relevance exceeds the working block's by more than
        kappa * gamma^(u-1) mean relevances (other policies ignore it).
    """

    policy: str = _knob("dsgc", "ranking policy", "|".join(POLICIES))
    selection: str = _knob("first_fit", "budgeted selection rule", "|".join(SELECTIONS))
    lambda_pi: float = _knob(1.0, "weight of the propagated support pi (>= 0)")
    tau: float = _knob(0.25, "softmax temperature (> 0)")
    hops: int = _knob(1, "propagation hops (>= 1; 1 is the paper's rule)")
    decay: float = _knob(0.5, "damping per extra hop, in [0, 1]")
    density_exponent: float = _knob(0.0, "exponent p of the cost normalization max(c, 1) ** p (>= 0)")
    recency_decay: float = _knob(0.85, "agent policy: working-set support decay per unit back, in (0, 1]")
    working_weight: float = _knob(8.0, "agent policy: newest working unit's support in mean relevances 1/N (>= 0)")

    def __post_init__(self) -> None:
        checked: dict[str, Any] = {
            "policy": _choice("policy", self.policy, POLICIES),
            "selection": _choice("selection", self.selection, SELECTIONS),
            "lambda_pi": _real("lambda_pi", self.lambda_pi),
            "tau": _real("tau", self.tau),
            "hops": _integer("hops", self.hops, 1, INT64_MAX),
            "decay": _real("decay", self.decay),
            "density_exponent": _real("density_exponent", self.density_exponent),
            "recency_decay": _real("recency_decay", self.recency_decay),
            "working_weight": _real("working_weight", self.working_weight),
        }
        if checked["lambda_pi"] < 0:
            raise DsgcValueError(f"lambda_pi must be >= 0, got {checked['lambda_pi']}")
        if checked["tau"] <= 0:
            raise DsgcValueError(f"tau must be > 0, got {checked['tau']}")
        if not 0 <= checked["decay"] <= 1:
            raise DsgcValueError(f"decay must be in [0, 1] (damping per extra hop), got {checked['decay']}")
        if checked["density_exponent"] < 0:
            raise DsgcValueError(f"density_exponent must be >= 0, got {checked['density_exponent']}")
        if not 0 < checked["recency_decay"] <= 1:
            raise DsgcValueError(f"recency_decay must be in (0, 1], got {checked['recency_decay']}")
        if checked["working_weight"] < 0:
            raise DsgcValueError(f"working_weight must be >= 0, got {checked['working_weight']}")
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    @classmethod
    def of(cls, params: Params | None = None, /, **overrides: Any) -> Params:
        """``params`` (default: the defaults) with keyword ``overrides`` applied, validated.

        An unknown keyword is a ``TypeError`` naming it; a ``params`` that is not a ``Params``
        is a ``TypeError`` too.
        """
        if params is None:
            base = _DEFAULT
        elif isinstance(params, Params):
            base = params
        else:
            raise DsgcTypeError(f"params must be a dsgc Params, got {type(params).__name__}")
        if not overrides:
            return base
        # An agent loop passes the same knobs on every call: remember each validated result,
        # keyed by value *and type*, so True is never taken for 1 nor 1 for 1.0.
        key = (base, *((k, type(v), v) for k, v in overrides.items()))
        try:
            made, cacheable = _MADE.get(key), True
        except TypeError:  # an unhashable value: validate uncached (it raises its own error)
            made, cacheable = None, False
        if made is None:
            unknown = sorted(set(overrides) - set(PARAM_NAMES))
            if unknown:
                raise DsgcTypeError(f"unknown parameter(s) {unknown}; the parameters are {list(PARAM_NAMES)}")
            made = dataclasses.replace(base, **overrides)
            if cacheable:
                if len(_MADE) >= _MADE_LIMIT:
                    _MADE.clear()
                _MADE[key] = made
        return made

    @property
    def effective_lambda(self) -> float:
        """The lambda_pi the score uses: 0 for ``no_graph`` (the rule lives here only)."""
        return 0.0 if self.policy == "no_graph" else self.lambda_pi

    def as_dict(self) -> dict[str, Any]:
        """The fields by name (for logs and JSON)."""
        return dataclasses.asdict(self)


class ParamOverrides(TypedDict, total=False):
    """The ``Params`` fields as keyword overrides (``**overrides: Unpack[ParamOverrides]``)."""

    policy: str
    selection: str
    lambda_pi: float
    tau: float
    hops: int
    decay: float
    density_exponent: float
    recency_decay: float
    working_weight: float


#: the field names of ``Params``, in declaration order
PARAM_NAMES: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Params))
_DEFAULT = Params()
_MADE: dict[tuple[Any, ...], Params] = {}
_MADE_LIMIT = 256


@dataclass(frozen=True)
class BindingTable:
    """The compact stand-in for pinned blocks that do not fit: one entry per referent.

    ``entries`` are ``(referent, value, source_block)`` sorted by source block, then by the
    referent's text; ``text`` has one line per entry, ``"<referent>: <value> (block <i>)"``;
    ``cost`` is the cost function applied to ``text`` (0 for an empty table).
    """

    entries: tuple[tuple[Hashable, Any, int], ...]
    text: str
    cost: int

    def __post_init__(self) -> None:
        """Check the fields: ``TypeError`` for a wrong type, ``ValueError`` for a negative index or cost."""
        if not isinstance(self.entries, tuple) or not all(isinstance(e, tuple) and len(e) == 3 for e in self.entries):
            raise DsgcTypeError("BindingTable.entries must be a tuple of (referent, value, source block) tuples")
        if not all(isinstance(e[2], str) or (is_integer_scalar(e[2]) and e[2] >= 0) for e in self.entries):
            raise DsgcValueError("BindingTable.entries: each source block must be a block index (>= 0) or id")
        if not isinstance(self.text, str):
            raise DsgcTypeError(f"BindingTable.text must be a str, got {type(self.text).__name__}")
        if not is_integer_scalar(self.cost) or self.cost < 0:
            raise DsgcValueError(f"BindingTable.cost must be a non-negative integer, got {self.cost!r}")


def render_table(entries: Iterable[tuple[Hashable, Any, Any]], cost_fn: Callable[[str], int]) -> BindingTable:
    """Sort ``(referent, value, source)`` entries by source, then referent text, and render them.

    One line per entry, ``"<referent>: <value> (block <source>)"``; the cost is
    ``cost_fn(text)``, 0 for no entries.  The table's format, shared by dsgc_ref and dsgc_fast
    (which entries the table holds, each computes on its own).
    """
    rows = tuple(sorted(entries, key=lambda e: (e[2], str(e[0]))))
    text = "\n".join(f"{x}: {v} (block {b})" for x, v, b in rows)
    cost = cost_fn(text) if rows else 0
    if not is_integer_scalar(cost) or int(cost) < 0:
        raise DsgcValueError(f"cost_fn(binding table text) must be a non-negative integer, got {cost!r}")
    return BindingTable(rows, text, int(cost))
