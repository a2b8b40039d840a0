"""The HTML view of a compaction (``CompactionReport.to_html``, ``dsgc explain --html``).

The sessions are real chat histories compacted by ``select`` and by ``MemoryStore`` +
``compact_messages``; the page is parsed with ``html.parser`` (structure, escaping, size) and
opened in headless Chromium (no console errors, load time, a screenshot for the docs).
"""

from __future__ import annotations

import html
import html.parser
import importlib.util
import json
import os
import pathlib
import re

import pytest

from dsgc_fast import MemoryStore, select
from dsgc_fast.cli import main
from dsgc_fast.encoders import LexicalEncoder
from dsgc_fast.memory.explain_html import ESCAPE_ROOM, KINDS, kind_of, text_cap
from dsgc_fast.memory.messages import compact_messages, load_session

from ._browser import chromium_path, open_page

ROOT = pathlib.Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "tests" / "data" / "support_triage.jsonl"
SCREENSHOT = ROOT / "docs" / "assets" / "explain.png"
XSS = '<script>alert("x")</script><img src=x onerror="alert(1)"> & </div>'
XSS_REFERENT = "that </script><script>alert(2)</script> account"
BIG = 50_000  # characters of the one huge tool result


def call(call_id, name, arguments):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def session(n_turns=49, chain=range(40, 45)):
    """A support session of ``2 + 4 * n_turns`` messages (200 by default).

    Each turn: the user names a ticket (binding ``ticket k``), the assistant looks it up (a
    tool call using the referent), the tool answers with a long JSON result, the assistant
    answers from it (``depends_on`` the result).  The users of the turns in ``chain`` refer to
    the previous ticket, so the last user message (which uses the chain's last ticket) pins
    them transitively, and the referent of turn 3, which carries markup in its text and
    referent name.  Turn 5 has a huge tool result.
    """
    messages = [{"role": "system", "content": "You triage support tickets for Northwind Payments."}]
    for k in range(n_turns):
        ref = XSS_REFERENT if k == 3 else f"ticket {k}"
        annotation = {"id": f"u{k}", "binds": {ref: f"T-{1000 + k}"}}
        if k in chain:
            annotation["uses"] = [f"ticket {k - 1}"]
        text = f"Ticket T-{1000 + k}: merchant M-{k:03d} reports a late payout of {k * 7} euros."
        messages.append({"role": "user", "content": XSS if k == 3 else text, "dsgc": annotation})
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [call(f"c{k}", "lookup_ticket", {"ticket": f"T-{1000 + k}"})],
                "dsgc": {"id": f"a{k}", "uses": [ref]},
            }
        )
        rows = [{"line": j, "status": "settled" if j % 3 else "held", "amount": j * 13 + k} for j in range(40)]
        body = json.dumps({"ticket": f"T-{1000 + k}", "rows": rows}, indent=1)
        messages.append(
            {
                "role": "tool",
                "tool_call_id": f"c{k}",
                "content": "x" * BIG if k == 5 else body,
                "dsgc": {"id": f"r{k}"},
            }
        )
        messages.append(
            {
                "role": "assistant",
                "content": f"Ticket T-{1000 + k} is {'held' if k % 2 else 'settled'}; payout follows.",
                "dsgc": {"id": f"s{k}", "depends_on": [f"r{k}"]},
            }
        )
    last = chain[-1] if len(chain) else 0
    messages.append(
        {
            "role": "user",
            "content": "Is that ticket paid out now, and the other one?",
            "dsgc": {"id": "q", "uses": [f"ticket {last}", XSS_REFERENT]},
        }
    )
    return messages


@pytest.fixture(scope="module")
def selection():
    messages = session()
    assert len(messages) == 198
    messages[1:1] = [{"role": "user", "content": "Hello."}, {"role": "assistant", "content": "Hi, how can I help?"}]
    return select(messages, 6_000, tokenizer="approx", encoder=LexicalEncoder())


class Page(html.parser.HTMLParser):
    """The page's elements (tag, attributes), the text of each script, and its visible text."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.elements, self.scripts, self.text, self._in_script = [], [], [], None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script = dict(attrs)
            self.scripts.append([dict(attrs), ""])

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = None

    def handle_data(self, data):
        if self._in_script is not None:
            self.scripts[-1][1] += data
        else:
            self.text.append(data)

    def rows(self):
        return [a for t, a in self.elements if t == "div" and "row" in a.get("class", "").split()]


def test_every_block_is_a_row_with_its_decision(selection):
    report = selection.report
    page = Page(report.to_html())
    rows = page.rows()
    decisions = list(report.decisions.values())
    assert len(rows) == len(decisions) == 200
    for row, d in zip(rows, decisions):
        assert f"k-{kind_of(d, report.truncated)}" in row["class"].split()
    text = "".join(page.text)
    assert "pinned" in text and "evicted" in text and "live root" in text
    assert f"budget {report.budget:,} tokens, used {report.used:,}" in text
    for d in decisions[::37]:
        assert d.why() in text  # each reason is on the page (HTML entities decoded by the parser)
    # the roles come from the messages
    roles = [a for t, a in page.elements if t == "span" and a.get("class", "").startswith("role ")]
    assert [r["class"] for r in roles[:4]] == ["role r-system", "role r-user", "role r-assistant", "role r-user"]
    assert report.roles["r5"] == "tool" and "zz" not in report.roles and len(report.roles) == 200
    with pytest.raises(KeyError, match="zz"):
        report.roles["zz"]


def test_the_arcs_are_the_referent_links_and_dependency_edges(selection):
    report = selection.report
    page = Page(report.to_html())
    (data_script,) = [s for attrs, s in page.scripts if attrs.get("type") == "application/json"]
    arcs = json.loads(data_script)
    ids = list(report.decisions)
    pinned = [d for d in report.decisions.values() if d.chain]
    # one referent link per reached block: its user -> it, with the referent's name
    assert sorted((ids[a], ids[b], x) for a, b, x in arcs["ref"]) == sorted(
        (d.chain.last[0], d.id, str(d.chain.last[1])) for d in pinned
    )
    chain = [f"u{k}" for k in range(39, 45)]
    assert {d.id for d in pinned} >= set(chain)  # the transitive pins of the last user message
    # the dependency edges: each answer depends on its tool result
    deps = {(ids[a], ids[b]) for a, b in arcs["dep"]}
    assert {(f"s{k}", f"r{k}") for k in range(49)} <= deps
    assert deps == {(j, d.id) for d in report.decisions.values() for j, _ in d.support_from}
    assert arcs["focus"] == []


def test_session_text_is_escaped(selection):
    ids = list(selection.report.decisions)
    out = selection.report.to_html()
    page = Page(out)
    # no element, attribute or script came from the session: the markup is shown as text
    assert [t for t, _ in page.elements if t in ("img",)] == []
    assert len(page.scripts) == 2 and all("alert" not in s for attrs, s in page.scripts if not attrs)
    assert not any(k.startswith("on") for _, attrs in page.elements for k in attrs)
    assert XSS in "".join(page.text)
    # the referent reaches the script only as JSON with < > & escaped, and parses back exactly
    (data_script,) = [s for attrs, s in page.scripts if attrs.get("type") == "application/json"]
    assert "</script" not in data_script and "<" not in data_script
    assert ["q", "u3", XSS_REFERENT] in [[ids[a], ids[b], x] for a, b, x in json.loads(data_script)["ref"]]


def test_controls_and_bidi_overrides_show_as_escapes():
    messages = [
        {"role": "system", "content": "agent"},
        {"role": "user", "content": "line one\nline two \x1b[31m red \u202e evil", "dsgc": {"id": "x\u202ey"}},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "next?"},
    ]
    report = select(messages, 1_000, tokenizer="approx", encoder=LexicalEncoder()).report
    out = report.to_html()
    assert "\x1b" not in out and "\u202e" not in out
    assert "\\x1b[31m" in out and "x\\u202ey" in out and "line one\nline two" in out


def test_the_page_stays_small_with_long_texts(selection):
    out = selection.report.to_html()
    assert len(out.encode("utf-8")) < 1_000_000
    cap = text_cap(200)
    assert cap <= 2_000
    # the huge tool result is cut with a note of what was left out
    assert f"({BIG - cap:,} more characters not shown)" in out
    # escaping cannot blow a block past its share: every <pre> is at most ESCAPE_ROOM * cap
    for pre in re.findall(r"<pre>(.*?)</pre>", out, flags=re.S):
        assert len(pre) <= ESCAPE_ROOM * cap


def test_text_cap_shares_a_fixed_budget():
    assert text_cap(1) == text_cap(0) == 4_000
    assert text_cap(200) == 1_500
    assert text_cap(1_000_000) == 200


def test_escaped_text_is_cut_to_its_room():
    messages = [
        {"role": "system", "content": "agent"},
        {"role": "user", "content": "<&>" * 10_000, "dsgc": {"id": "markup"}},
        {"role": "user", "content": "next?"},
    ]
    report = select(messages, 100_000, tokenizer="approx", encoder=LexicalEncoder()).report
    out = report.to_html()
    (pre,) = re.findall(r"<pre>(.*?)</pre>", out, flags=re.S)
    cap = text_cap(3)
    assert len(pre) <= ESCAPE_ROOM * cap and pre.startswith("&lt;&amp;&gt;")
    left = int(re.search(r"\(([\d,]+) more characters not shown\)", out).group(1).replace(",", ""))
    assert len(html.unescape(pre)) + left == 30_000 and left > 30_000 - cap


def test_store_report_with_binding_table_and_focus():
    # 60 tokens: the roots t01 and t19 (39) fit, t12 (29) which binds "that account" does not,
    # so the binding table (16) replaces it
    store = MemoryStore(encoder=LexicalEncoder())
    load_session(store, SAMPLE, complete=True)
    report = compact_messages(store, 60)
    assert report.binding_table is not None and report.kept == ["t01", "t19"]
    out = report.to_html(focus=["t12"])
    page = Page(out)
    rows = page.rows()
    assert [r["id"] for r in rows] == [f"b{i}" for i in range(20)]
    assert rows[11]["class"].split() == ["row", "k-table", "focus"] and "k-table" in rows[19]["class"]
    text = "".join(page.text)
    assert "that account = 8841-C (from t12)" in text and report.binding_table.block.text in text
    (data_script,) = [s for attrs, s in page.scripts if attrs.get("type") == "application/json"]
    assert json.loads(data_script)["focus"] == [11]
    with pytest.raises(KeyError, match="nope"):
        report.to_html(focus=["nope"])
    roles = [json.loads(line)["role"] for line in SAMPLE.read_text().splitlines()]
    assert list(report.roles.values()) == roles and list(report.roles) == list(report.decisions)
    assert "table" in legend_kinds(out)


def over_budget_session():
    """The newest turn's tool result alone is far over a 200-token budget."""
    rows = json.dumps([{"row": k, "v": "x" * 20} for k in range(300)])
    return [
        {"role": "system", "content": "agent"},
        {"role": "user", "content": "old question"},
        {"role": "assistant", "content": "old answer"},
        {"role": "user", "content": "dump the ledger"},
        {"role": "assistant", "content": None, "tool_calls": [call("c1", "dump", {})]},
        {"role": "tool", "tool_call_id": "c1", "content": rows},
    ]


def test_a_cut_tool_result_and_an_over_budget_compaction():
    cut = select(over_budget_session(), 200, tokenizer="approx", encoder=LexicalEncoder(), on_over_budget="truncate")
    t = cut.report.truncated["m5"]
    out = cut.report.to_html()
    assert f'<span class="tok">{t.original_cost:,}&rarr;{t.cost:,}</span>' in out
    assert Page(out).rows()[5]["class"].split() == ["row", "k-truncated"] and "OVER BUDGET" not in out
    over = select(over_budget_session(), 200, tokenizer="approx", encoder=LexicalEncoder(), on_over_budget="roots_only")
    out = over.report.to_html()
    assert over.report.over_budget and "OVER BUDGET" in out
    # the bar spans the tokens used; the budget line sits where 200 of them end
    left = float(re.search(r'class="budget" style="left:([\d.]+)%"', out).group(1))
    assert left == pytest.approx(100 * 200 / over.report.used, abs=1e-3)


def legend_kinds(out):
    legend = re.search(r'<ul class="legend">(.*?)</ul>', out, flags=re.S).group(1)
    return re.findall(r'<span class="dec k-(\w+)">', legend)


def test_the_legend_names_the_kinds_on_the_page(selection):
    report = selection.report
    present = {kind_of(d, report.truncated) for d in report.decisions.values()}
    assert legend_kinds(report.to_html()) == [k for k in KINDS if k in present]
    assert "table" not in present and "root" in present and "evicted" in present


# -- the command -------------------------------------------------------------------------
def test_cli_writes_the_page(tmp_path, capsys):
    out = tmp_path / "explain.html"
    code = main(["explain", "--input", str(SAMPLE), "--budget", "140", "--html", str(out), "--id", "t12"])
    stdout, stderr = capsys.readouterr()
    assert code == 0 and stdout == "" and stderr == ""
    page = Page(out.read_text(encoding="utf-8"))
    assert len(page.rows()) == 19
    focused = [r["id"] for r in page.rows() if "focus" in r["class"].split()]
    assert focused == ["b11"]  # t12
    # without --html the text output is unchanged
    code = main(["explain", "--input", str(SAMPLE), "--budget", "140", "--format", "table", "--id", "t12"])
    stdout, _ = capsys.readouterr()
    assert code == 0 and stdout.startswith("policy agent, budget 140, used 138") and "<" not in stdout


def test_cli_refuses_a_bad_html_path_before_work(tmp_path, capsys):
    code = main(["explain", "--input", str(SAMPLE), "--budget", "140", "--html", str(tmp_path)])
    _, stderr = capsys.readouterr()
    assert code == 2 and "--html" in stderr and "is a directory" in stderr
    code = main(["explain", "--input", str(SAMPLE), "--budget", "140", "--html", str(tmp_path / "no" / "x.html")])
    _, stderr = capsys.readouterr()
    assert code == 2 and "does not exist" in stderr
    code = main(
        ["explain", "--input", str(SAMPLE), "--budget", "140", "--html", str(tmp_path / "x.html"), "--id", "zz"]
    )
    _, stderr = capsys.readouterr()
    assert code == 2 and "'zz' is not a block" in stderr and not (tmp_path / "x.html").exists()


# -- in the browser ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser():
    missing = []
    if chromium_path() is None:
        missing.append("Chromium (apt-get install chromium)")
    if importlib.util.find_spec("playwright") is None:
        missing.append("playwright (pip install playwright)")
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"the browser tests need {' and '.join(missing)}")
        pytest.skip(f"needs {' and '.join(missing)}")


def test_the_200_block_page_opens_without_errors(browser, selection, tmp_path):
    # how fast it opens is measured, not asserted here (no timed tests): see docs/explain.md
    path = tmp_path / "explain.html"
    path.write_text(selection.report.to_html(), encoding="utf-8")
    load = open_page(path)
    assert load.console_errors == []
    assert load.load_ms > 0
    assert load.title.startswith("dsgc: agent compaction")
    assert "score parts" in load.text and "u44" in load.text
    assert "alert" not in load.title and XSS in load.text


def test_the_docs_screenshot(browser, tmp_path):
    """The triage session's page, as the docs show it (docs/assets/explain.png, rewritten with DSGC_SCREENSHOTS=1)."""
    path = tmp_path / "explain.html"
    assert main(["explain", "--input", str(SAMPLE), "--budget", "140", "--html", str(path)]) == 0
    shot = SCREENSHOT if os.environ.get("DSGC_SCREENSHOTS") else tmp_path / "explain.png"
    load = open_page(path, screenshot=shot)
    assert load.console_errors == []
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Did that account clear KYC?" in load.text
