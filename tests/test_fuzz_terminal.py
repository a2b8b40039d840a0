"""Human-readable output never carries terminal-steering characters; JSON stays exact.

Session ids, texts, referent names and values holding ANSI/OSC escape sequences, C0/C1
controls, DEL, bidi overrides and isolates, line separators and the like go through every
human-readable rendering (``Decision.why``/``explain``, ``CompactionReport.table``/``summary``/
``explain``, the ``dsgc`` command's table, explanation and error lines): each output line
must be ``str.isprintable()``.  The JSON report keeps the exact values.
"""

from __future__ import annotations

import contextlib
import io
import json

from hypothesis import given, settings
from hypothesis import strategies as st

import dsgc_fast
from dsgc_fast.cli import main
from dsgc_fast.memory.messages import add_messages, compact_messages

from ._cases import examples
from .test_messages import call, new_store

#: characters a terminal acts on, or that reorder or hide what it shows
STEERING = "\x1b\x07\x00\x08\r\t\x7f\x85\x9b\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029\ufeff\u00a0"
ATTACKS = [
    "\x1b[31mred\x1b[0m",
    "\x1b]0;pwned\x07",
    "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\",
    "\u202eevil",
    "a\rb",
    "\x9b2J",
]
hostile = st.one_of(st.sampled_from(ATTACKS), st.text(alphabet=STEERING + "ab :", min_size=1, max_size=8))


def all_printable(text: str) -> bool:
    return all(line.isprintable() for line in text.split("\n"))


def hostile_session(draw_id, draw_text, draw_ref):
    return [
        {"role": "system", "content": "agent " + draw_text[0], "dsgc": {"id": "s" + draw_id[0]}},
        {
            "role": "user",
            "content": "account " + draw_text[1],
            "dsgc": {"id": draw_id[1], "binds": {draw_ref[0]: draw_text[2]}},
        },
        {"role": "assistant", "content": None, "tool_calls": [call("c" + draw_id[2])], "dsgc": {"id": draw_id[2]}},
        {"role": "tool", "tool_call_id": "c" + draw_id[2], "content": draw_text[3], "dsgc": {"id": "t" + draw_id[2]}},
        {
            "role": "user",
            "content": "that account " + draw_text[4],
            "dsgc": {"id": "u" + draw_id[3], "uses": [draw_ref[0]]},
        },
    ]


def run_main(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


@given(
    ids=st.lists(hostile, min_size=4, max_size=4, unique=True),
    texts=st.lists(hostile, min_size=5, max_size=5),
    refs=st.lists(hostile, min_size=1, max_size=1),
    budget=st.sampled_from([3, 8, 14, 40]),
)
@settings(max_examples=examples(0.5))
def test_fuzz_renderings_escape_terminal_controls(ids, texts, refs, budget):
    store = new_store()
    add_messages(store, hostile_session(ids, texts, refs))
    try:
        report = compact_messages(store, budget)
    except dsgc_fast.ReferentEvictionError as exc:
        assert all_printable(repr(exc))
        return
    assert all_printable(report.table()) and all_printable(report.summary())
    for block_id, decision in report.decisions.items():
        assert (
            all_printable(decision.why())
            and all_printable(decision.explain())
            and all_printable(report.explain(block_id))
        )
    exact = json.loads(report.to_json())
    assert [d["id"] for d in exact["decisions"]] == list(report.decisions)  # JSON keeps the exact ids


def test_cli_table_explain_and_errors_escape_an_osc_id(tmp_path):
    """Regression: ESC/OSC sequences and bidi overrides in ids and texts reached the terminal."""
    messages = hostile_session(["\x1b]0;pwned\x07", "\u202eu1", "\x1b[2J", "\x9b"], ATTACKS[:5], ["\x1b[5macct"])
    session = tmp_path / "s.jsonl"
    session.write_text("".join(json.dumps(m) + "\n" for m in messages), encoding="utf-8")
    for command in ("retain", "explain"):
        code, out, err = run_main([command, "--input", str(session), "--budget", "40", "--format", "table"])
        assert code == 0 and err == "" and all_printable(out) and "\\x1b]0;pwned\\x07" in out
    code, out, _ = run_main(["retain", "--input", str(session), "--budget", "40", "--format", "json"])
    assert {d["id"] for d in json.loads(out)["decisions"]} >= {"s\x1b]0;pwned\x07", "\u202eu1"}  # exact in JSON
    code, out, err = run_main(["explain", "--input", str(session), "--budget", "40", "--id", "\x1b[31mnope"])
    assert code == 2 and out == "" and all_printable(err.rstrip("\n")) and "\\x1b[31mnope" in err
    bad = tmp_path / "bad\x1b[1m.jsonl"
    bad.write_text('{"role": "tool", "tool_call_id": "\\u001b[2J", "content": "x"}\n', encoding="utf-8")
    code, _, err = run_main(["retain", "--input", str(bad), "--budget", "40"])
    assert code == 2 and all_printable(err.rstrip("\n")) and "\\x1b[1m" in err
