"""The HTML view of a compaction: ``CompactionReport.to_html()`` and ``dsgc explain --html``.

One self-contained page (inline CSS, script and SVG; nothing is fetched, so it works offline):

* a header with the policy, budget, query and the count of each decision;
* the budget bar: the kept tokens by decision (live roots, pinned, closure, ranked, cut tool
  results, the binding table) against the budget, scaled to ``max(budget, used)``;
* the timeline, one row per block, oldest first: position, id, role, tokens, decision, the
  score parts (relevance r, support lambda*pi, working-set support lambda*rho, score I and
  rank; exact values in the tooltip), the reason (``Decision.why``) and the text, long texts
  collapsed; the binding table is the last row;
* in the gutter left of the rows, arcs: each referent link (a block that uses a referent ->
  its live binder, the steps of the decisions' ``chain``) and each dependency edge
  (dependent -> prerequisite, from ``support_from``); hovering a row highlights its arcs.

Everything taken from the session (ids, roles, texts, referents, values) is escaped for
HTML, and characters that ``_terminal.printable`` rejects (controls, bidi overrides) show as
escapes, except line breaks in texts.  The data the script draws from is JSON with ``<``,
``>`` and ``&`` escaped, read with ``JSON.parse`` and written with ``textContent`` only.
Each block shows at most ``text_cap(n)`` characters of its text (escaped length at most
``ESCAPE_ROOM`` times that), with a note of how much was left out, so the page grows with
the number of blocks, not with their size.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from dsgc_ref.contract import Reason

from .._terminal import printable

if TYPE_CHECKING:
    from .explain import CompactionReport, Decision

#: characters of block text the page shows across all its blocks, shared equally
TEXT_BUDGET = 300_000
#: bounds on one block's share of ``TEXT_BUDGET``
TEXT_MIN, TEXT_MAX = 200, 4_000
#: the escaped text of a block is cut to at most this many times its share
ESCAPE_ROOM = 2
#: characters of a block's first line shown in its collapsed row
PREVIEW = 120

#: decision kind -> (label, legend text), in the order of the budget bar and the legend
KINDS = {
    "root": ("live root", "pinned: a system message, the newest user turn or a live block"),
    "pinned": ("pinned", "pinned: the live binder of a referent a retained block uses"),
    "closure": ("closure", "kept because a kept block uses a referent it binds"),
    "kept": ("kept", "kept by the ranking (relevance, propagation, working set or recency)"),
    "truncated": ("cut", "a tool result cut to fit the budget"),
    "digested": ("digested", "a tool result sent as its digest: its values verbatim, the bulk dropped"),
    "table": ("binding table", "evicted, its bindings kept in the binding table"),
    "evicted": ("evicted", "evicted: did not fit the budget or below the cutoff"),
}


def text_cap(n: int) -> int:
    """Characters of one block's text shown on a page of ``n`` blocks.

    ``TEXT_BUDGET // n`` within ``[TEXT_MIN, TEXT_MAX]``.
    """
    return min(TEXT_MAX, max(TEXT_MIN, TEXT_BUDGET // max(n, 1)))


def kind_of(decision: Decision, truncated: Mapping[str, Any]) -> str:
    """The decision's key in ``KINDS``: a cut tool result first, then a digested one, then by its ``Reason``."""
    if decision.id in truncated:
        return "truncated"
    if decision.digested:
        return "digested"
    reason = decision.reason
    if reason == Reason.KEPT_PINNED:
        return "root" if decision.root else "pinned"
    if reason == Reason.KEPT_CLOSURE:
        return "closure"
    if reason == Reason.TABLED:
        return "table"
    return "kept" if reason.kept else "evicted"


def render(report: CompactionReport, *, focus: Iterable[str] = ()) -> str:
    """The page of ``report`` (see the module docstring); ``focus`` ids are highlighted and opened.

    Raises ``KeyError`` for a ``focus`` id that is not a block of the report.
    """
    focused = set(focus)
    for block_id in focused:
        if block_id not in report.decisions:
            raise KeyError(f"no decision for block {block_id!r} in this compaction")
    decisions = list(report.decisions.values())
    slot = {d.id: i for i, d in enumerate(decisions)}
    cap = text_cap(len(decisions) + (report.binding_table is not None))
    kinds = [kind_of(d, report.truncated) for d in decisions]
    top = max((d.relevance + d.support + d.working for d in decisions), default=0.0) or 1.0  # the longest score bar
    rows = [_row(i, d, k, report, cap, top, d.id in focused) for i, (d, k) in enumerate(zip(decisions, kinds))]
    if report.binding_table is not None:
        rows.append(_table_row(len(decisions), report, cap))
    arcs = {
        "ref": [[slot[d.chain.last[0]], i, str(d.chain.last[1])] for i, d in enumerate(decisions) if d.chain.last],
        "dep": [[slot[j], i] for i, d in enumerate(decisions) for j, _ in d.support_from],
        "focus": sorted(slot[b] for b in focused),
    }
    title = f"dsgc: {report.policy} compaction, {len(report.kept)} of {len(decisions)} blocks kept"
    return _PAGE.format(
        title=_esc(title),
        css=_CSS,
        script=_SCRIPT,
        header=_header(report, kinds),
        bar=_budget_bar(report, decisions, kinds),
        legend=_legend(set(kinds)),
        rows="\n".join(rows),
        arcs=_script_json(arcs),
    )


def _esc(text: str) -> str:
    """Display text of one line: steering characters escaped (``printable``), then HTML-escaped."""
    return html.escape(printable(text))


def _esc_block(text: str, cap: int) -> tuple[str, int]:
    """A block text for display, line breaks kept, cut to ``cap`` characters (escaped: at most
    ``ESCAPE_ROOM * cap``); returns it with the number of characters left out."""
    shown = text[:cap]
    out = html.escape("\n".join(map(printable, shown.split("\n"))))
    while len(out) > ESCAPE_ROOM * cap:
        shown = shown[: len(shown) * ESCAPE_ROOM * cap // len(out)]
        out = html.escape("\n".join(map(printable, shown.split("\n"))))
    return out, len(text) - len(shown)


def _num(x: float) -> str:
    return f"{x:.3g}"


def _header(report: CompactionReport, kinds: list[str]) -> str:
    counts = {k: kinds.count(k) for k in KINDS}
    stats = "".join(
        f'<span class="stat k-{k}"><b>{counts[k]}</b> {html.escape(KINDS[k][0])}</span>' for k in KINDS if counts[k]
    )
    over = (
        '<p class="over">OVER BUDGET: the live roots and the bindings they need do not fit; only the roots were kept.</p>'
        if report.over_budget
        else ""
    )
    number = f" #{report.compaction}" if report.compaction else ""
    return (
        f"<h1>dsgc compaction{number}: <code>{_esc(report.policy)}</code> policy</h1>"
        f'<p class="meta">budget <b>{report.budget:,}</b> tokens, used <b>{report.used:,}</b>; '
        f"kept {len(report.kept):,} of {len(kinds):,} blocks, evicted {len(report.evicted):,}; "
        f"query <q>{_esc(report.query)}</q></p>"
        f'<p class="stats">{stats}</p>{over}'
    )


def _budget_bar(report: CompactionReport, decisions: list[Decision], kinds: list[str]) -> str:
    tokens = dict.fromkeys(KINDS, 0)
    for d, k in zip(decisions, kinds):
        tokens[k] += d.cost
    tokens["table"] = report.binding_table.block.cost if report.binding_table is not None else 0
    scale = max(report.budget, report.used, 1)
    segments = "".join(
        f'<span class="seg k-{k}" style="width:{100 * tokens[k] / scale:.3f}%" '
        f'title="{html.escape(KINDS[k][0])}: {tokens[k]:,} tokens"></span>'
        for k in KINDS
        if k != "evicted" and tokens[k]
    )
    marker = (
        f'<span class="budget" style="left:{100 * report.budget / scale:.3f}%" title="budget {report.budget:,}"></span>'
    )
    parts = ", ".join(f"{html.escape(KINDS[k][0])} {tokens[k]:,}" for k in KINDS if k != "evicted" and tokens[k])
    return (
        f'<div class="bar" role="img" aria-label="used {report.used:,} of {report.budget:,} tokens">{segments}{marker}</div>'
        f'<p class="barnote">used {report.used:,} / budget {report.budget:,} tokens ({parts or "nothing kept"}); '
        f"{tokens['evicted']:,} tokens evicted</p>"
    )


def _legend(present: set[str]) -> str:
    """The legend of the decision kinds on the page and of the two kinds of arc."""
    items = "".join(
        f'<li><span class="dec k-{k}">{html.escape(label)}</span> {html.escape(text)}</li>'
        for k, (label, text) in KINDS.items()
        if k in present
    )
    arcs = (
        '<li><svg width="28" height="10"><path class="arc ref" d="M2 5 H26"/></svg> referent link: a block uses a '
        "referent whose live binder is the block the arrow points to</li>"
        '<li><svg width="28" height="10"><path class="arc dep" d="M2 5 H26"/></svg> dependency: a block depends on '
        "the block the arrow points to (its relevance flows there)</li>"
    )
    return f'<ul class="legend">{items}{arcs}</ul>'


def _scores(d: Decision, top: float) -> str:
    tip = (
        f"rank {d.rank}; similarity a={d.similarity:.6g}; relevance r={d.relevance:.6g}; "
        f"propagated pi={d.propagated:.6g} (support lambda*pi={d.support:.6g}); "
        f"working-set support lambda*rho={d.working:.6g}; score I={d.score:.6g}"
    )
    bars = (
        f'<span class="sbar"><i class="r" style="width:{100 * d.relevance / top:.1f}%"></i>'
        f'<i class="p" style="width:{100 * d.support / top:.1f}%"></i>'
        f'<i class="w" style="width:{100 * d.working / top:.1f}%"></i></span>'
    )
    parts = [f"#{d.rank}", f"r {_num(d.relevance)}", f"&lambda;&pi; {_num(d.support)}"]
    if d.working:
        parts.append(f"&lambda;&rho; {_num(d.working)}")
    text = " &middot; ".join(f"<span>{part}</span>" for part in parts)
    return f'<span class="sc" title="{html.escape(tip)}">{bars}<small>{text}</small></span>'


def _body(text: str, cap: int, open_: bool) -> str:
    """The text cell: a short line as is; a longer text collapsed under a preview (its first
    ``PREVIEW`` characters, runs of whitespace as one space)."""
    if len(text) <= PREVIEW and "\n" not in text:
        return f'<div class="txt">{_esc(text)}</div>'
    shown, left = _esc_block(text, cap)
    note = f'<p class="cut">({left:,} more characters not shown)</p>' if left else ""
    preview = _esc(" ".join(text[: 4 * PREVIEW].split())[:PREVIEW]) + "&hellip;"
    return (
        f'<details{" open" if open_ else ""}><summary>{preview} <span class="len">{len(text):,} chars</span></summary>'
        f"<pre>{shown}</pre>{note}</details>"
    )


def _row(i: int, d: Decision, kind: str, report: CompactionReport, cap: int, top: float, focused: bool) -> str:
    role = report.roles.get(d.id, "block")
    cut = report.truncated.get(d.id)
    tokens = f"{cut.original_cost:,}&rarr;{d.cost:,}" if cut is not None else f"{d.cost:,}"
    return (
        f'<div class="row k-{kind}{" focus" if focused else ""}" id="b{i}">'
        f'<span class="n">{i}</span><span class="id" title="{_esc(d.id)}">{_esc(d.id)}</span>'
        f'<span class="role r-{html.escape(role) if role in _ROLES else "other"}">{_esc(role)}</span>'
        f'<span class="tok">{tokens}</span><span class="dec k-{kind}">{html.escape(KINDS[kind][0])}</span>'
        f"{_scores(d, top)}"
        f'<div class="body">{_body(report.texts.get(d.id, ""), cap, focused)}'
        f'<div class="why">{html.escape(d.why())}</div></div></div>'
    )


def _table_row(i: int, report: CompactionReport, cap: int) -> str:
    assert report.binding_table is not None
    table = report.binding_table
    entries = "".join(
        f"<li><code>{_esc(str(x))}</code> = <code>{_esc(str(v))}</code> (from {_esc(src)})</li>"
        for x, v, src in table.entries
    )
    return (
        f'<div class="row k-table added" id="b{i}"><span class="n">+</span>'
        f'<span class="id" title="{_esc(table.block.id)}">{_esc(table.block.id)}</span>'
        f'<span class="role r-system">system</span><span class="tok">{table.block.cost:,}</span>'
        f'<span class="dec k-table">binding table</span><span class="sc"></span>'
        f'<div class="body">{_body(table.block.text, cap, False)}<ul class="entries">{entries}</ul>'
        f'<div class="why">added: the bindings of the evicted binders, so their users keep their referents</div>'
        f"</div></div>"
    )


def _script_json(data: Any) -> str:
    """JSON safe inside a ``<script>`` element: ``<``, ``>`` and ``&`` as ``\\u`` escapes."""
    text = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


_ROLES = ("system", "user", "assistant", "tool", "developer", "function", "block")

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>{title}</title><style>{css}</style></head>
<body><header>{header}{bar}</header>
<div class="tools"><label><input type="checkbox" id="hide-evicted"> hide evicted blocks</label>
<label><input type="checkbox" id="open-all"> open every text</label>
<details class="help"><summary>legend</summary>{legend}</details></div>
<div class="head"><span class="n">#</span><span>id</span><span>role</span><span class="tok">tokens</span>
<span>decision</span><span>score parts</span><span>text and reason</span></div>
<main id="timeline"><svg id="arcs" aria-hidden="true"><defs>
<marker id="ah-ref" viewBox="0 0 6 6" refX="6" refY="3" markerWidth="6" markerHeight="6" orient="auto"><path d="M0 0L6 3L0 6z"/></marker>
<marker id="ah-dep" viewBox="0 0 6 6" refX="6" refY="3" markerWidth="6" markerHeight="6" orient="auto"><path d="M0 0L6 3L0 6z"/></marker>
</defs><g id="arcs-g"></g></svg>
{rows}
</main>
<script type="application/json" id="dsgc-arcs">{arcs}</script>
<script>{script}</script>
</body></html>
"""

_CSS = """
:root{--root:#1d4ed8;--pinned:#3b82f6;--closure:#0d9488;--kept:#16a34a;--truncated:#d97706;--table:#7c3aed;
--digested:#65a30d;--evicted:#9ca3af;--ref:#2563eb;--dep:#ea580c;--line:#e5e7eb;--muted:#6b7280}
*{box-sizing:border-box}
body{margin:0;font:13px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#111827;background:#fff}
header{padding:10px 20px 2px;border-bottom:1px solid var(--line)}
h1{font-size:17px;margin:0 0 2px}
.meta{margin:2px 0;color:#374151}.meta q{font-style:italic}
.stats{margin:4px 0}.stat{margin-right:12px;white-space:nowrap}.stat b{font-size:15px}
.stat::before{content:"";display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px;background:var(--c)}
.over{background:#fee2e2;color:#991b1b;padding:6px 10px;border-radius:4px;font-weight:600}
.bar{position:relative;display:flex;height:22px;background:#f3f4f6;border:1px solid #d1d5db;border-radius:4px;
margin:4px 0 2px;overflow:visible}
.seg{height:100%;background:var(--c)}.seg+.seg{border-left:1px solid #fff}
.budget{position:absolute;top:-5px;bottom:-5px;width:0;border-left:2px dashed #111827}
.barnote{margin:2px 0 4px;color:var(--muted);font-size:12px}
.help{color:#374151}.help[open]{flex-basis:100%}.help summary{cursor:pointer;color:var(--muted);display:inline;text-decoration:underline dotted}
.legend{list-style:none;padding:0;margin:6px 0;columns:2;font-size:12px}.legend li{margin:2px 0}
.tools{margin:4px 20px;color:#374151;display:flex;flex-wrap:wrap;gap:2px 16px;align-items:baseline}
.tools .help[open]{order:1}
.k-root{--c:var(--root)}.k-pinned{--c:var(--pinned)}.k-closure{--c:var(--closure)}.k-kept{--c:var(--kept)}
.k-truncated{--c:var(--truncated)}.k-digested{--c:var(--digested)}.k-table{--c:var(--table)}.k-evicted{--c:var(--evicted)}
#timeline{position:relative;padding-left:130px;margin:0 20px 40px 0}
#arcs{position:absolute;left:0;top:0;width:130px;overflow:visible}
.head,.row{display:grid;grid-template-columns:2.6em 7em 5.6em 5em 7.2em 12.5em minmax(0,1fr);gap:0 8px;
align-items:start;padding:2px 6px}
.head{margin-left:130px;margin-right:20px;font-weight:600;color:var(--muted);border-bottom:1px solid var(--line);font-size:12px;
border-left:4px solid transparent;position:sticky;top:0;background:#fff;z-index:1}
.row{border-bottom:1px solid var(--line);border-left:4px solid var(--c);min-height:24px;line-height:1.3}
.row:hover,.row.lit{background:#f8fafc}.row.focus{background:#fefce8}
.row.k-evicted{color:#6b7280}.row.k-evicted .txt,.row.k-evicted summary{text-decoration:line-through #d1d5db}
.n{color:var(--muted);text-align:right;font-variant-numeric:tabular-nums}
.id{font-family:ui-monospace,Menlo,Consolas,monospace;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.tok{text-align:right;font-variant-numeric:tabular-nums}
.role{font-size:11px;padding:1px 6px;border-radius:9px;background:#f3f4f6;justify-self:start}
.r-user{background:#dbeafe}.r-assistant{background:#dcfce7}.r-tool{background:#ffedd5}.r-system{background:#ede9fe}
.dec{font-size:11px;font-weight:600;padding:1px 6px;border-radius:3px;color:#fff;background:var(--c);justify-self:start;white-space:nowrap}
.sc{display:flex;flex-direction:column;gap:1px;min-width:0}.sc small{color:var(--muted);font-size:10.5px;line-height:1.25}
.sc small span{white-space:nowrap}
.sbar{display:flex;height:6px;background:#f3f4f6;border-radius:2px;overflow:hidden;margin-top:3px}
.sbar i{display:block;height:100%}.sbar .r{background:#0ea5e9}.sbar .p{background:var(--dep)}.sbar .w{background:#a855f7}
.body{min-width:0}.txt{white-space:pre-wrap;overflow-wrap:anywhere}
details summary{cursor:pointer;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}.len{color:var(--muted);font-size:11px}
pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:4px 0;padding:6px 8px;background:#f9fafb;border:1px solid var(--line);
border-radius:4px;font:12px/1.4 ui-monospace,Menlo,Consolas,monospace;max-height:24em;overflow:auto}
.cut{margin:0;color:var(--muted);font-size:11px;font-style:italic}
.why{color:var(--muted);font-size:11px;overflow-wrap:anywhere}
.entries{margin:2px 0;padding-left:18px;font-size:12px}
body.hide-evicted .row.k-evicted{display:none}
.arc{fill:none;stroke-width:1.3;opacity:.55}.arc.ref{stroke:var(--ref)}.arc.dep{stroke:var(--dep);stroke-dasharray:4 3}
#ah-ref path{fill:var(--ref)}#ah-dep path{fill:var(--dep)}
#arcs.hl .arc{opacity:.12}#arcs.hl .arc.on{opacity:1;stroke-width:2.2}
"""

_SCRIPT = """
(function(){
"use strict";
var data=JSON.parse(document.getElementById("dsgc-arcs").textContent);
var svg=document.getElementById("arcs"),g=document.getElementById("arcs-g"),tl=document.getElementById("timeline");
var NS="http://www.w3.org/2000/svg",byRow={},rows=tl.querySelectorAll(".row");
function arc(frag,ys,a,b,kind,label){
  var ya=ys[a],yb=ys[b];if(ya===null||yb===null)return;
  var x=126,w=Math.min(118,10+Math.sqrt(Math.abs(ya-yb))*3.2);
  var p=document.createElementNS(NS,"path");
  p.setAttribute("d","M"+x+" "+ya+"C"+(x-w)+" "+ya+" "+(x-w)+" "+yb+" "+x+" "+yb);
  p.setAttribute("class","arc "+kind);p.setAttribute("marker-end","url(#ah-"+kind+")");
  var t=document.createElementNS(NS,"title");
  t.textContent=kind==="ref"?"block "+a+" uses "+JSON.stringify(label)+", bound by block "+b:"block "+a+" depends on block "+b;
  p.appendChild(t);frag.appendChild(p);
  (byRow[a]=byRow[a]||[]).push([p,b]);(byRow[b]=byRow[b]||[]).push([p,a]);
}
function draw(){
  var ys=[],frag=document.createDocumentFragment(),h=tl.offsetHeight;
  for(var i=0;i<rows.length;i++){ys.push(rows[i].offsetParent===null?null:rows[i].offsetTop+13);}  // one layout, read first
  byRow={};
  data.dep.forEach(function(e){arc(frag,ys,e[0],e[1],"dep");});
  data.ref.forEach(function(e){arc(frag,ys,e[0],e[1],"ref",e[2]);});
  g.textContent="";g.appendChild(frag);
  svg.setAttribute("height",h);svg.style.height=h+"px";
}
var lit=[];
function light(i){
  lit.forEach(function(x){x.classList.remove("on","lit");});lit=[];
  var arcs=i===null?[]:(byRow[i]||[]);svg.classList.toggle("hl",arcs.length>0);
  arcs.forEach(function(pr){var r=document.getElementById("b"+pr[1]);pr[0].classList.add("on");lit.push(pr[0]);
    if(r){r.classList.add("lit");lit.push(r);}});
}
tl.addEventListener("mouseover",function(ev){var r=ev.target.closest(".row");light(r?+r.id.slice(1):null);});
tl.addEventListener("mouseleave",function(){light(null);});
var pending=false;
function later(){if(!pending){pending=true;requestAnimationFrame(function(){pending=false;draw();});}}
document.addEventListener("toggle",later,true);
document.getElementById("hide-evicted").addEventListener("change",function(ev){
  document.body.classList.toggle("hide-evicted",ev.target.checked);later();});
document.getElementById("open-all").addEventListener("change",function(ev){
  document.querySelectorAll("#timeline details").forEach(function(d){d.open=ev.target.checked;});});
window.addEventListener("resize",later);
draw();
if(data.focus.length){document.getElementById("b"+data.focus[0]).scrollIntoView({block:"center"});}
})();
"""
