"""Identifier tokens and batch edge induction: hand-written cases and a brute-force oracle."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsgc_fast.induction import identifier_key, induce_edges
from dsgc_fast.induction.tokens import CANDIDATE_RE, identifier_keys, iter_identifiers


def edge_set(edges: np.ndarray) -> set[tuple[int, int]]:
    return {(int(a), int(b)) for a, b in edges}


def naive_edges(texts: list[str], rank: list[int], max_fanout: int) -> set[tuple[int, int]]:
    """Oracle: loop over keys and block pairs (the module rule written the slow way)."""
    mentions: dict[str, list[int]] = {}
    for i, text in enumerate(texts):
        for key in identifier_keys(text):
            mentions.setdefault(key, []).append(i)
    out = set()
    for blocks in mentions.values():
        if not 2 <= len(blocks) <= max_fanout + 1:
            continue
        introducer = min(blocks, key=lambda b: rank[b])
        out.update((j, introducer) for j in blocks if j != introducer)
    return out


@pytest.mark.parametrize(
    ("surface", "key"),
    [
        ("bundle_north_17", "bundle_north_17"),
        ("MAX_RETRIES", "max_retrie"),
        ("max_retries", "max_retrie"),
        ("8841-C", "8841-c"),
        ("8841-Cs", "8841-c"),
        ("/etc/app.yaml", "/etc/app.yaml"),
        ("src/main.py", "src/main.py"),
        ("https://api.acme.io/v1", "https://api.acme.io/v1"),
        ("ops@acme.io", "ops@acme.io"),
        ("ACME-PROD", "acme-prod"),
        ("getUser", "getuser"),
        ("T2", "t2"),
        ("RT-114", "rt-114"),
        ("Project Falcon", "project falcon"),
        ("projects Falcons", "project falcon"),
        ("/etc/hosts", "/etc/host"),
        ("address_class", "address_class"),
    ],
)
def test_identifier_shapes(surface, key):
    assert identifier_key(surface) == key


@pytest.mark.parametrize(
    "surface",
    [
        "follow-up",
        "Wi-Fi",
        "e.g",
        "10GB",
        "500ms",
        "2nd",
        "2024-05-01",
        "10.0.3.7",
        "4200",
        "and/or",
        "The Lisbon",
        "from Bruno",
        "asked Bruno",
        "on Monday",
        "in January",
    ],
)
def test_not_identifiers(surface):
    assert identifier_key(surface) is None


@pytest.mark.parametrize(
    "text",
    ["Plain words, KYC checks and a follow-up on Wi-Fi.", "Rates rose 10GB by 2024-05-01, e.g. at 10.0.3.7."],
)
def test_prose_has_no_identifiers(text):
    assert identifier_keys(text) == set()


def test_punctuation_possessive_and_trailing_marks():
    texts = [
        "Account 8841-C was flagged last week.",
        "The 8841-C's ledger is frozen.",
        "Reload /etc/app.yaml, then retry.",
        "(see /etc/app.yaml).",
        "Deploy bundle_north_17; done.",
        "bundle_north_17: ok",
    ]
    assert edge_set(induce_edges(texts)) == {(1, 0), (3, 2), (5, 4)}


def test_tokens_are_found_within_their_own_run():
    """A mark after ``:`` or ``+`` belongs to the next run; a scheme is at most 64 characters.

    (Reading past the run made matching quadratic on ``a:a:...`` and ``a+a+...``.)"""
    assert identifier_keys("ab..cd:1") == set()
    assert identifier_keys("svn+ssh://host/repo RT-114+x") == {"svn+ssh://host/repo", "rt-114"}
    assert identifier_keys("x" * 64 + "://h/a") == {"x" * 64 + "://h/a"}
    assert identifier_keys("x" * 65 + "://h/a") == set()


def test_case_and_plurals_match():
    texts = ["MAX_RETRIES caps the loop.", "Raise max_retries to 9.", "Two 8841-C accounts.", "Both 8841-Cs closed."]
    assert edge_set(induce_edges(texts)) == {(1, 0), (3, 2)}


def test_named_values_need_the_same_kind_word():
    texts = [
        "Project Falcon has budget left.",
        "The Lisbon office moved desks.",
        "An expense for project Falcon is allowed.",
        "The Lisbon office repainted a wall.",
        "Ask owner Falcon about it.",
        "The callback window Falcon asked for.",
    ]
    assert edge_set(induce_edges(texts)) == {(2, 0)}


def test_no_shared_identifier_no_edge():
    assert induce_edges(["Alice owns the backup.", "Alice may delete the backup."]).shape == (0, 2)


def test_hub_tokens_are_ignored():
    hub = [f"Ticket PRJ-9 note {k}." for k in range(6)]
    texts = hub + ["Rotate key_alpha_1 under PRJ-9.", "key_alpha_1 rotated."]
    edges = edge_set(induce_edges(texts, max_fanout=4))
    assert edges == {(7, 6)}  # PRJ-9 has 7 dependents > 4: no edge at all from it


def test_fanout_cap_is_inclusive():
    texts = [f"Ticket PRJ-9 note {k}." for k in range(5)]
    assert edge_set(induce_edges(texts, max_fanout=4)) == {(k, 0) for k in range(1, 5)}
    assert induce_edges(texts, max_fanout=3).shape == (0, 2)


def test_timestamps_set_direction():
    texts = ["Block about TKT-1.", "Another on TKT-1.", "Third on TKT-1."]
    assert edge_set(induce_edges(texts)) == {(1, 0), (2, 0)}
    assert edge_set(induce_edges(texts, timestamps=[30, 20, 10])) == {(0, 2), (1, 2)}
    # equal timestamps keep block order
    assert edge_set(induce_edges(texts, timestamps=[5, 5, 5])) == {(1, 0), (2, 0)}


def test_output_dtype_shape_and_order():
    texts = ["TKT-2 and TKT-1.", "TKT-1 again.", "TKT-2 again.", "TKT-1 and TKT-2."]
    edges = induce_edges(texts)
    assert edges.dtype == np.int64 and edges.shape == (3, 2)
    assert edges.tolist() == [[1, 0], [2, 0], [3, 0]]  # a set, sorted: one edge per pair


@pytest.mark.parametrize("texts", [[], ["no identifiers at all"], ["", ""]])
def test_empty_inputs(texts):
    edges = induce_edges(texts)
    assert edges.shape == (0, 2) and edges.dtype == np.int64


def test_argument_errors():
    with pytest.raises(TypeError, match="texts"):
        induce_edges("TKT-1")
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        induce_edges(["a", 3])
    with pytest.raises(ValueError, match="timestamps"):
        induce_edges(["a", "b"], timestamps=[1.0])
    with pytest.raises(ValueError, match="timestamps"):
        induce_edges(["a", "b"], timestamps=[1.0, float("nan")])
    with pytest.raises(TypeError, match="timestamps"):
        induce_edges(["a", "b"], timestamps=["x", "y"])
    with pytest.raises(ValueError, match="max_fanout"):
        induce_edges(["a"], max_fanout=0)


_WORDS = [
    "TKT-1",
    "tkt-1s",
    "RT-22",
    "MAX_RETRIES",
    "max_retries",
    "/etc/a.yaml",
    "Project Falcon",
    "team Falcon",
    "the Lisbon",
    "backup",
    "KYC",
    "8841-C",
    "8841-C's",
    "node7",
    "plain",
]
stores = st.lists(st.lists(st.sampled_from(_WORDS), max_size=4).map(" and ".join), max_size=14)


@given(texts=stores, data=st.data(), max_fanout=st.integers(1, 5))
def test_matches_brute_force_and_points_back_in_time(texts, data, max_fanout):
    n = len(texts)
    timestamps = data.draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    rank = [0] * n
    for r, i in enumerate(sorted(range(n), key=lambda i: (timestamps[i], i))):
        rank[i] = r
    edges = induce_edges(texts, timestamps=timestamps, max_fanout=max_fanout)
    assert edge_set(edges) == naive_edges(texts, rank, max_fanout)
    assert all(rank[j] > rank[i] for j, i in edge_set(edges))
    assert np.array_equal(edges, induce_edges(list(texts), timestamps=timestamps, max_fanout=max_fanout))


@given(texts=stores, data=st.data())
def test_relabelling_blocks_relabels_edges(texts, data):
    n = len(texts)
    perm = data.draw(st.permutations(range(n)))
    shuffled = [texts[p] for p in perm]  # position k holds old block perm[k], timestamp = old index
    edges = induce_edges(shuffled, timestamps=list(perm))
    assert {(perm[j], perm[i]) for j, i in edge_set(edges)} == edge_set(induce_edges(texts))


#: characters that make and break candidates: marks, case changes, scheme and path pieces, spaces
_CHARS = "abAB7_/.@-~:+ \té٣"
_PIECES = [*_WORDS, "team Ola", "x Abc", "Ab", "aB", "ab", "http://h", "~/a", "a.b", "a@bc", "x.yz", "AB-CD", "4"]
texts = st.text(alphabet=_CHARS, max_size=40) | st.lists(st.sampled_from(_PIECES), max_size=6).map(" ".join)


def _same_as_the_full_scan(text: str) -> None:
    full = [(identifier_key(m.group()), m.group(), m.start(), m.end()) for m in CANDIDATE_RE.finditer(text)]
    assert list(iter_identifiers(text)) == [f for f in full if f[0] is not None], text
    assert identifier_keys(text) == {f[0] for f in full if f[0] is not None}, text


@given(text=texts)
def test_the_mark_prefilter_never_drops_a_candidate(text):
    """``iter_identifiers`` and ``identifier_keys`` skip texts without an identifier mark: same results as the full scan."""
    _same_as_the_full_scan(text)


def test_the_mark_prefilter_on_every_piece_and_pair():
    for a in _PIECES:
        _same_as_the_full_scan(a)
        for b in _PIECES:
            _same_as_the_full_scan(f"{a} {b}")
