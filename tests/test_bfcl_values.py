"""Matching rules of needed-value recall (dsgc_bench.bfcl.values)."""

from __future__ import annotations

import pytest

from dsgc_bench.bfcl.values import View, leaf_values, message_view, normal_value, number_form


@pytest.mark.parametrize(
    ("value", "form"),
    [
        (6500, "6500"),
        (6500.0, "6500"),
        ("3.50", "3.5"),
        (0.1, "0.1"),
        (-0.0, "0"),
        (12345678901234567, "12345678901234567"),
    ],
)
def test_number_form(value, form):
    assert number_form(value) == form


def test_leaf_values_skip_flags_and_punctuation():
    args = {"folder": "..", "a": True, "n": None, "names": ["AAPL", " Two  Words "], "nested": {"k": 3.0}}
    assert leaf_values(args) == [("text", "aapl"), ("text", "two words"), ("number", "3")]
    assert normal_value("") is None


def test_text_occurrence_respects_word_edges():
    view = View(message_view({"role": "user", "content": "Copy temp/a.txt to the template folder"}))
    assert view.holds(("text", "temp"))
    assert view.holds(("text", "a.txt"))
    assert not view.holds(("text", "templ"))
    assert not view.holds(("text", "emp"))


def test_number_occurrence_reads_normal_forms():
    view = View(
        message_view(
            {"role": "tool", "tool_call_id": "c", "content": '{"result": 6500.0, "date": "2024-03-01", "v": "v2"}'}
        )
    )
    assert view.holds(("number", "6500"))
    assert view.holds(("number", "2024")) and view.holds(("number", "3"))
    assert not view.holds(("number", "2"))  # "v2" is glued to a letter


def test_views_decode_json():
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c", "function": {"name": "echo", "arguments": '{"content": "caf\\u00e9 line"}'}}],
    }
    view = View(message_view(call))
    assert view.holds(("text", "café line")) and view.holds(("text", "echo"))
    # a multi-word value matches inside one leaf only
    split = View(message_view({"role": "tool", "tool_call_id": "c", "content": '["budget", "analysis"]'}))
    assert not split.holds(("text", "budget analysis"))
