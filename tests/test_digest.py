"""``render_digest``: the rendering rules, values verbatim, caps with counts, idempotence,
hostile inputs and determinism."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsgc_fast._text_caches import forget_texts
from dsgc_fast.memory.digest import (
    MAX_CHARS,
    MAX_ITEMS,
    MAX_PATH_SEGMENTS,
    digest_lines,
    is_digest,
    render_digest,
    value_words,
)

ARROW = " -> "


def body(digest: str) -> list[str]:
    lines = digest.split("\n")
    assert is_digest(lines[0])
    return lines[1:]


def decode(rendered: str) -> object:
    """A rendered leaf back to its JSON value: quoted strings, arrays and literals are JSON,
    anything else is a bare string."""
    try:
        return json.loads(rendered)
    except ValueError:
        return rendered


# ---------------------------------------------------------------- rendering rules


def test_marker_names_the_block_the_tool_and_the_tokens():
    first = render_digest('{"a": 1}', "call_0_2", tool="get_route", tokens=3807).split("\n")[0]
    assert first == '[digest of block call_0_2, get_route result, 3807 tokens; whole: recall("call_0_2")]'
    assert render_digest('{"a": 1}', 7).split("\n")[0] == "[digest of block 7; whole: recall(7)]"
    odd = render_digest('{"a": 1}', "a b\nc", tool="x]y").split("\n")[0]
    assert odd == '[digest of block "a b\\nc", "x]y" result; whole: recall("a b\\nc")]'


def test_json_leaves_are_key_path_lines_in_document_order():
    content = json.dumps({"order": {"id": "ORD-7", "items": [{"sku": "A1", "qty": 2}], "paid": True}, "note": None})
    assert body(render_digest(content, 1)) == [
        "order.id -> ORD-7",
        "order.items[0].sku -> A1",
        "order.items[0].qty -> 2",
        "order.paid -> true",
        "note -> null",
    ]


def test_numbers_keep_their_source_text():
    content = '{"a": 12.50, "b": 1e3, "c": -0, "d": 123456789012345678901234567890, "e": 1e400, "f": NaN}'
    assert body(render_digest(content, 1)) == [
        "a -> 12.50",
        "b -> 1e3",
        "c -> -0",
        "d -> 123456789012345678901234567890",
        "e -> 1e400",
        "f -> NaN",
    ]


@pytest.mark.parametrize(
    ("value", "rendered"),
    [
        ("USR-001", "USR-001"),
        ("Kelly Total Score: 96", "Kelly Total Score: 96"),
        ("", '""'),
        (" padded", '" padded"'),
        ("12", '"12"'),
        ("true", '"true"'),
        ("null", '"null"'),
        ("-3.5e2", '"-3.5e2"'),
        ('"quoted"', '"\\"quoted\\""'),
        ("(paren", '"(paren"'),
        ("[x]", '"[x]"'),
        ("a\nb", '"a\\nb"'),
        ("tab\there", '"tab\\there"'),
        ("x\u2028y", '"x\\u2028y"'),
        ("caf\u00e9", "caf\u00e9"),
    ],
)
def test_strings_are_bare_unless_they_would_read_as_something_else(value, rendered):
    assert body(render_digest(json.dumps({"k": value}), 1)) == [f"k -> {rendered}"]


def test_keys_that_are_not_words_are_quoted_and_long_keys_cut():
    content = json.dumps({"a.b": 1, "x y": {"z": 2}, "k" * 100: 3, "ok-key_2": 4, "p -> q": 5})
    lines = body(render_digest(content, 1))
    assert lines[0] == '["a.b"] -> 1'
    assert lines[1] == '["x y"].z -> 2'
    assert lines[2] == '["' + "k" * 63 + '\u2026"] -> 3'
    assert lines[3] == "ok-key_2 -> 4"
    assert lines[4] == '["p -\\u003e q"] -> 5'  # the first arrow of a line ends its path


def test_duplicate_keys_are_all_kept_and_empty_containers_shown():
    assert body(render_digest('{"a": 1, "a": 2, "l": [], "o": {}}', 1)) == ["a -> 1", "a -> 2", "l -> []", "o -> {}"]
    assert body(render_digest("[]", 1)) == ["$ -> []"]
    assert body(render_digest("  {}  ", 1)) == ["$ -> {}"]


def test_a_list_of_short_leaves_is_one_json_array():
    content = json.dumps({"files": ["a.txt", "b 2.txt", 3, None]})
    assert body(render_digest(content, 1)) == ['files -> ["a.txt", "b 2.txt", 3, null]']


# ---------------------------------------------------------------- caps, with counts


def test_a_long_list_shows_its_first_items_and_its_count():
    cities = [f"City {k}" for k in range(826)]
    lines = body(render_digest(json.dumps({"distance": 980.0, "cities": cities}), 1, max_items=3))
    assert lines == ["distance -> 980.0", 'cities -> ["City 0", "City 1", "City 2"] (826 items, first 3 shown)']


def test_a_long_list_of_records_has_a_count_line_then_its_first_records():
    rows = [{"id": f"T-{k}", "n": k} for k in range(30)]
    lines = body(render_digest(json.dumps({"rows": rows}), 1, max_items=2))
    assert lines == ["rows -> (30 items, first 2 shown)", "rows[0].id -> T-0", "rows[0].n -> 0", "rows[1].id -> T-1",
                     "rows[1].n -> 1"]  # fmt: skip


def test_a_long_string_keeps_its_length_and_value_words():
    prose = "The shipment " + "went well and " * 20 + "order ORD-991 left /srv/out.csv on 2024-05-01."
    lines = body(render_digest(json.dumps({"id": 4, "text": prose}), 1))
    assert lines == ["id -> 4", f"text -> (text, {len(prose)} chars; values: ORD-991 /srv/out.csv 2024-05-01)"]
    plain = "no values at all " * 10
    assert body(render_digest(json.dumps({"t": plain}), 1)) == [f"t -> (text, {len(plain)} chars)"]


def test_value_words_are_capped_with_a_count_and_long_numbers_dropped():
    words = " ".join(f"v{k}" for k in range(30)) + " " + "filler " * 20
    lines = body(render_digest(json.dumps({"t": words}), 1, max_items=4))
    assert lines == [f"t -> (text, {len(words)} chars; values: v0 v1 v2 v3 +26 more)"]
    assert body(render_digest("[" + "7" * 500 + "]", 1)) == ["[0] -> (number, 500 chars)"]


def test_a_string_at_the_cap_is_kept_whole():
    at_cap = "x" * MAX_CHARS
    assert body(render_digest(json.dumps({"s": at_cap}), 1)) == [f"s -> {at_cap}"]


# ---------------------------------------------------------------- plain text


def test_value_words():
    text = "(Order ORD-991) shipped 2024-05-01 to </home/a/b.txt>, contact ops@acme.io. Ticker AAPL; growth.The end"
    assert value_words(text) == ["ORD-991", "2024-05-01", "/home/a/b.txt", "ops@acme.io", "AAPL"]
    assert value_words("Hello there, nothing to keep here.") == []
    assert value_words("word codes max_retries and getUser; user_7, twice: user_7") == ["user_7"]


def test_plain_text_keeps_value_lines_verbatim_and_counts_the_prose():
    text = "Dear user,\n  Invoice INV-2231 is due 2024-06-01.  \n\nThanks for your patience!\n" + "x " * 80 + "ref 42\n"
    lines = body(render_digest(text, "m1"))
    assert lines == ["Invoice INV-2231 is due 2024-06-01.", f"(text, {len('x ' * 80 + 'ref 42')} chars; values: 42)",
                     "(2 lines without values dropped)"]  # fmt: skip


def test_plain_text_lines_are_capped():
    text = "\n".join(f"line {k}" for k in range(12))
    assert body(render_digest(text, 1, max_lines=3)) == [
        "line 0",
        "line 1",
        "line 2",
        "(9 lines with values not shown)",
    ]


def test_blank_content_and_scalar_json_are_text():
    assert body(render_digest("  \n ", 1)) == ["(empty)"]
    assert body(render_digest('"just a string"', 1)) == ["(1 line without values dropped)"]
    assert body(render_digest("42", 1)) == ["42"]


def test_invalid_json_is_read_as_text():
    assert body(render_digest('{"id": "A-17", oops', 1)) == ['{"id": "A-17", oops']


# ---------------------------------------------------------------- verbatim round trip

_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**30), 10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=MAX_CHARS),
    st.sampled_from(["12", "-0.5e3", "true", "null", "NaN", "-Infinity", "", " a", "(x", "[1]", '"q"', "a -> b", "{}"]),
)
_JSON = st.recursive(
    _LEAF,
    lambda inner: st.lists(inner, max_size=MAX_ITEMS) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=40,
)


def flatten(value: object) -> list[object]:
    """Leaves in document order; an empty container is a leaf of its own."""
    out: list[object] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, (dict, list)) and not item:
            out.append(item)
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
        else:
            out.append(item)
    return out


def digest_values(digest: str) -> list[object]:
    out: list[object] = []
    for line in body(digest):
        rendered = line.split(ARROW, 1)[1]
        value = decode(rendered)
        if rendered.startswith("[") and value:
            out.extend(value)  # a list of leaves on one line
        else:
            out.append(value)
    return out


@given(st.dictionaries(st.text(max_size=8), _JSON, min_size=1, max_size=6) | st.lists(_JSON, min_size=1, max_size=6))
def test_every_value_within_the_caps_comes_back_unchanged(value):
    """Below the caps nothing is dropped: decoding each line's value gives the document's
    leaves, in order, each equal to the original (verbatim: strings exactly, numbers by
    their JSON text)."""
    digest = render_digest(json.dumps(value), 1)
    assert digest_values(digest) == flatten(value)
    assert digest.splitlines() == digest.split("\n")  # one value never spans two lines


@given(st.integers() | st.floats(allow_nan=False))
def test_number_text_is_never_reformatted(number):
    text = json.dumps(number)
    expected = text if len(text) <= MAX_CHARS else f"(number, {len(text)} chars)"
    assert body(render_digest(f'{{"v": {text}}}', 1)) == [f"v -> {expected}"]


# ---------------------------------------------------------------- idempotence

_TEXTS = st.one_of(
    st.text(max_size=400),
    _JSON.map(json.dumps),
    st.lists(st.sampled_from(["ORD-1", "hello", "2024-01-02", "\n", " ", "{", '"k":', "[", "]", "x" * 120, "/a/b.c"]),
             max_size=60).map("".join),
)  # fmt: skip


@given(_TEXTS, st.integers(1, 5), st.integers(1, 200))
def test_a_digest_of_a_digest_is_itself(text, items, chars):
    once = render_digest(text, "b1", tool="t", tokens=10, max_items=items, max_chars=chars)
    assert is_digest(once)
    assert render_digest(once, "b1", tool="t", tokens=10, max_items=items, max_chars=chars) == once
    assert render_digest(once, 99, max_items=1, max_chars=1) == once  # whatever it is asked


@given(_TEXTS, st.integers(1, 5), st.integers(1, 200), st.integers(1, 4), st.booleans())
def test_digest_lines_are_the_digest_after_its_marker(text, items, chars, lines, forget):
    """``digest_lines`` is the body of ``render_digest`` whatever the marker's fields, remembered
    or not (after ``forget_texts`` it is rendered again, the same), and a digest's own body."""
    limits = {"max_items": items, "max_chars": chars, "max_lines": lines}
    first = digest_lines(text, **limits)
    if forget:
        forget_texts()
    for block_id, tool, tokens in ((1, None, None), ("b 2", "lookup", 99)):
        digest = render_digest(text, block_id, tool=tool, tokens=tokens, **limits)
        assert digest_lines(text, **limits) == first == tuple(digest.split("\n")[1:])
        assert digest_lines(digest, **limits) == first


# ---------------------------------------------------------------- hostile inputs


def test_deep_nesting_past_the_parser_is_text():
    out = render_digest("[" * 100_000 + "7", 1)
    assert body(out) == ["(text, 100001 chars; values: 7)"]


def test_deep_nesting_that_parses_keeps_short_paths():
    depth = 500
    content = '{"k": ' * depth + "[" + ", ".join(str(k) for k in range(1000, 1200)) + "]" + "}" * depth
    out = render_digest(content, 1)
    (line,) = body(out)
    assert line.startswith("\u2026" + ".k" * (MAX_PATH_SEGMENTS - 1) + ".k -> [1000, 1001")
    assert len(out) < 400


def test_many_leaves_under_deep_paths_stay_linear_in_size():
    """Each line is bounded whatever the depth, so the digest grows with the leaves only."""
    depth = 400
    content = "[" * depth + ", ".join(json.dumps({"key" * 30: k}) for k in range(2000)) + "]" * depth
    out = render_digest(content, 1, max_items=10_000)
    assert len(out) < 3 * len(content)
    assert max(len(line) for line in out.split("\n")) < 200


def test_lone_surrogates_give_encodable_output():
    out = render_digest('{"a": "\\ud800", "\\udfff": ["\\ud801x"]}', 1)
    out.encode("utf-8")
    assert body(out) == ['a -> "\\ud800"', '["\\udfff"] -> ["\\ud801x"]']


@given(st.text(max_size=300))
def test_any_text_gives_a_digest(text):
    out = render_digest(text, 1)
    assert is_digest(out)
    out.encode("utf-8")


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(TypeError, match="content"):
        render_digest(b"{}", 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="content"):
        digest_lines(b"{}")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_items"):
        digest_lines("{}", max_items=0)
    with pytest.raises(TypeError, match="block_id"):
        render_digest("{}", True)
    with pytest.raises(TypeError, match="block_id"):
        render_digest("{}", 1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tool"):
        render_digest("{}", 1, tool=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tokens"):
        render_digest("{}", 1, tokens=-1)
    for limit in ("max_chars", "max_items", "max_lines"):
        with pytest.raises(ValueError, match=limit):
            render_digest("{}", 1, **{limit: 0})


# ---------------------------------------------------------------- determinism

CORPUS = [
    json.dumps({"users": [{"id": f"U{k}", "name": f"Name {k}", "tags": ["a", "b"]} for k in range(30)]}),
    "Report 2024\n" + "filler words " * 40 + "\nref ORD-1 and ORD-2\nnothing here",
    '{"a": {"b": [1, 2.50, "x y", {"c": null}]}, "a": 3}',
]


def test_the_same_content_gives_the_same_digest_in_another_process():
    here = [render_digest(text, k, tokens=5) for k, text in enumerate(CORPUS)]
    assert here == [render_digest(text, k, tokens=5) for k, text in enumerate(CORPUS)]
    script = (
        "import json, sys\n"
        "from dsgc_fast.memory.digest import render_digest\n"
        "corpus = json.loads(sys.stdin.read())\n"
        "print(json.dumps([render_digest(t, k, tokens=5) for k, t in enumerate(corpus)]))\n"
    )
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": src}
    done = subprocess.run([sys.executable, "-c", script], input=json.dumps(CORPUS), capture_output=True, text=True,
                          env=env, check=True)  # fmt: skip
    assert json.loads(done.stdout) == here
