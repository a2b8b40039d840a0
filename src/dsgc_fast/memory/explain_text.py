"""The text of a compaction report: a decision's reason and explanation, the report's table and summary.

``explain`` holds the data (``Decision``, ``CompactionReport``); this module renders it as
display text, with every character that could steer a terminal escaped (``printable``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from dsgc_ref.contract import Reason

from .._terminal import printable

if TYPE_CHECKING:
    from .digest_blocks import BlockDigest
    from .explain import CompactionReport, Decision, ReferentChain


def why(decision: Decision) -> str:
    """A decision's one-line reason naming the blocks, referents and numbers behind it.

    Display text: characters that could steer a terminal are escaped (``printable``);
    the exact ids and referents are in the decision's other fields.
    """
    text = _reason(decision)
    if decision.digest is not None:
        text = f"digested ({digest_text(decision.digest)}); {text}"
    return printable(text)


#: the reason text of each outcome that needs only the decision's own fields (by its ``Reason``)
_REASON_TEXTS: dict[Reason, Callable[[Decision], str]] = {
    Reason.KEPT_CLOSURE: lambda d: f"kept: closure of admitted block {d.chain.source}: {chain_text(d.chain, d.id)}",
    Reason.KEPT_RELEVANCE: lambda d: f"kept: relevance rank {d.rank} (r={d.relevance:.3g} >= support {d.support:.3g})",
    Reason.KEPT_PROPAGATION: lambda d: (
        f"kept: propagated support {d.support:.3g} > r={d.relevance:.3g} from {support_text(d.support_from)}"
    ),
    Reason.KEPT_RECENCY: lambda d: f"kept: recency ({d.newer} newer blocks)",
    Reason.KEPT_WORKING: lambda d: (
        f"kept: working-set support {d.working:.3g} > r={d.relevance:.3g} (a recent tool unit)"
    ),
    Reason.TABLED: lambda d: "evicted: replaced by the binding table (" + ", ".join(map(str, d.tabled)) + ")",
    Reason.EVICTED_CUTOFF: lambda d: f"evicted: below the prefix cutoff (rank {d.rank})",
}


def _reason(d: Decision) -> str:
    """The reason of a decision, by its ``Reason``."""
    if d.reason == Reason.KEPT_PINNED:
        return "kept: live root (pinned)" if d.root else f"kept: pinned through {chain_text(d.chain, d.id)}"
    text = _REASON_TEXTS.get(d.reason)
    if text is not None:
        return text(d)
    needs = f"cost {d.unit_cost} with its closure {', '.join(d.unit)}" if d.unit else f"cost {d.cost}"
    unused = f"; {d.left} tokens left unused" if d.left else ""
    return f"evicted: did not fit the budget (rank {d.rank}, {needs}{unused})"


def decision_lines(decision: Decision) -> str:
    """A decision's multi-line explanation: the reason, then every score part."""
    lines = [
        f"{decision.id}: {why(decision)}",
        f"  rank {decision.rank}, cost {decision.cost}, {decision.newer} newer blocks",
        f"  similarity a = {decision.similarity:.6g}",
        f"  relevance  r = {decision.relevance:.6g}",
        f"  propagated pi = {decision.propagated:.6g} (support lambda*pi = {decision.support:.6g})",
        f"  score      I = {decision.score:.6g}",
    ]
    if decision.working:
        lines.append(f"  working-set support lambda*rho = {decision.working:.6g} (a recent tool unit)")
    if decision.support_from:
        lines.append(f"  support from dependents: {support_text(decision.support_from, limit=None)}")
    if decision.chain:
        lines.append(f"  referent chain: {chain_text(decision.chain, decision.id, limit=None)}")
    if decision.digest is not None:
        lines.append(f"  digest: cost {decision.digest.cost}, kept values: {' '.join(decision.digest.kept)}")
        lines.append(f"  digest: dropped values: {' '.join(decision.digest.dropped) or '(none)'}")
    return "\n".join(map(printable, lines))


def table(report: CompactionReport, preview: int = 40) -> str:
    """A report's fixed-width table of every decision (oldest block first) with a summary line.

    Ids, texts and referents are shown with terminal-steering characters escaped.
    """
    header = ("id", "decision", "rank", "cost", "score", "relevance", "support", "text", "why")
    rows = []
    for d in report.decisions.values():
        text = printable(" ".join(report.texts.get(d.id, "").split()))
        text = text if len(text) <= preview else text[: preview - 3] + "..."
        rows.append(
            (
                printable(d.id),
                "digested" if d.digested else "kept" if d.kept else "evicted",
                str(d.rank),
                str(d.cost),
                f"{d.score:.4f}",
                f"{d.relevance:.4f}",
                f"{d.support:.4f}",
                text,
                why(d),
            )
        )
    widths = [max(len(h), *(len(r[k]) for r in rows)) if rows else len(h) for k, h in enumerate(header)]
    right = {2, 3, 4, 5, 6}

    def fmt(row: Sequence[str]) -> str:
        cells = [c.rjust(w) if k in right else c.ljust(w) for k, (c, w) in enumerate(zip(row, widths))]
        return "  ".join(cells[:-1] + [row[-1]])

    lines = [summary(report), "", fmt(header), fmt(["-" * w for w in widths])]
    lines += [fmt(r) for r in rows]
    if report.binding_table is not None:
        table = report.binding_table.block
        lines += ["", printable(f"binding table {table.id} (cost {table.cost}):")]
        lines += [printable(f"  {x}: {v} (from {src})") for x, v, src in report.binding_table.entries]
    if report.value_table is not None:
        values = report.value_table.block
        lines += ["", printable(f"value table {values.id} (cost {values.cost}):")]
        lines += [printable(f"  {line} (from {src})") for src, line in report.value_table.entries]
    return "\n".join(lines)


def summary(report: CompactionReport) -> str:
    """A report's summary line: policy, budget, tokens used, blocks kept and evicted, cuts and digests."""
    n = len(report.kept) + len(report.evicted)
    line = (
        f"policy {report.policy}, budget {report.budget}, used {report.used}: "
        f"kept {len(report.kept)} of {n} blocks, evicted {len(report.evicted)}"
    )
    if report.truncated:
        cuts = ", ".join(f"{i} ({t.original_cost} -> {t.cost} tokens)" for i, t in report.truncated.items())
        line += f"; cut tool results {cuts}"
    if report.digested:
        line += f"; digested {len(report.digested)} ({', '.join(report.digested)})"
    if report.over_budget:
        line += "; OVER BUDGET: the live roots and the bindings they need do not fit, only the roots were kept"
    return printable(line)


def chain_text(chain: ReferentChain, end: str, limit: int | None = 4) -> str:
    """``b1 -uses 'x'-> b2 -uses 'y'-> end``; beyond ``limit`` steps the source, a count, the last step."""
    if limit is None or len(chain) <= limit:
        parts = [f"{b} -uses {x!r}->" for b, x in chain]
        return " ".join([*parts, end])
    block, referent = chain.last or ("", "")
    return f"{chain.source} -> ... ({len(chain) - 1:,} more links) ... {block} -uses {referent!r}-> {end}"


def digest_text(digest: BlockDigest, limit: int = 6) -> str:
    """``kept k of n values: v1 v2 ...; dropped m: w1 ...`` (the first ``limit`` of each)."""

    def listed(words: tuple[str, ...]) -> str:
        more = f" +{len(words) - limit} more" if len(words) > limit else ""
        return " ".join(words[:limit]) + more

    total = len(digest.kept) + len(digest.dropped)
    text = f"kept {len(digest.kept)} of {total} values: {listed(digest.kept)}"
    return text + (f"; dropped {len(digest.dropped)}: {listed(digest.dropped)}" if digest.dropped else "")


def support_text(sources: Sequence[tuple[str, float]], limit: int | None = 3) -> str:
    """``j1 (r=...), j2 (r=...) and n more``: the first ``limit`` dependents with their relevance."""
    shown = sources if limit is None else sources[:limit]
    text = ", ".join(f"{j} (r={r:.3g})" for j, r in shown)
    if limit is not None and len(sources) > limit:
        text += f" and {len(sources) - limit} more"
    return text or "no dependents"
