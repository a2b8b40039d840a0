"""One parameter object: validated once, and taken the same way by every entry point."""

from __future__ import annotations

import dataclasses
import json
import typing

import numpy as np
import pytest

import dsgc_fast
import dsgc_ref
from dsgc_fast.cli import main
from dsgc_fast.memory.messages import add_messages, compact_messages
from dsgc_fast.memory.store import AGENT_PARAMS
from dsgc_ref.contract import PARAM_NAMES, ParamOverrides, Params

#: a non-default value for every field
CHANGED = dict(
    policy="no_graph",
    selection="prefix",
    lambda_pi=0.5,
    tau=0.5,
    hops=2,
    decay=0.25,
    density_exponent=0.5,
    recency_decay=0.5,
    working_weight=2.0,
)


def test_changed_covers_every_field():
    assert set(CHANGED) == set(PARAM_NAMES)
    assert all(CHANGED[f.name] != f.default for f in dataclasses.fields(Params))


def test_overrides_typed_dict_matches_the_fields():
    hints = typing.get_type_hints(ParamOverrides)
    fields = {f.name: f.type for f in dataclasses.fields(Params)}
    assert list(hints) == list(PARAM_NAMES)
    assert {k: v.__name__ for k, v in hints.items()} == fields


def test_params_of_merges_and_validates_once():
    base = Params(tau=0.5)
    assert Params.of(base) is base and Params.of() == Params()
    assert Params.of(base, hops=3) == Params(tau=0.5, hops=3)
    assert Params.of(None, hops=3.0).hops == 3 and isinstance(Params.of(None, hops=3.0).hops, int)
    with pytest.raises(TypeError, match="unknown parameter"):
        Params.of(None, tua=1.0)
    with pytest.raises(TypeError, match="params must be"):
        Params.of({"tau": 1.0})  # type: ignore[arg-type]


def test_the_memo_tells_types_apart():
    assert Params.of(None, lambda_pi=1).lambda_pi == 1.0
    with pytest.raises(TypeError, match="lambda_pi"):
        Params.of(None, lambda_pi=True)  # equal to 1 and hashing alike, but a bool
    with pytest.raises(ValueError, match="tau"):
        Params.of(None, tau=float("nan"))


def test_no_graph_rule_lives_in_params():
    assert Params(policy="no_graph", lambda_pi=3.0).effective_lambda == 0.0
    assert Params(policy="dsgc", lambda_pi=3.0).effective_lambda == 3.0


def _store_case(seed=0, n=30, d=5):
    rng = np.random.default_rng(seed)
    return rng.normal(size=d), rng.normal(size=(n, d)), rng.integers(1, 5, size=n), rng.integers(0, n, size=(40, 2))


@pytest.mark.parametrize("name", PARAM_NAMES)
def test_every_engine_entry_point_takes_every_field(name):
    q, embs, costs, edges = _store_case()
    value = {name: CHANGED[name]}
    params = Params(**value)
    fast_kw = dsgc_fast.retain(q, embs, costs, 25, edges=edges, **value)
    fast_p = dsgc_fast.retain(q, embs, costs, 25, edges=edges, params=params)
    ref_kw = dsgc_ref.retain(q.tolist(), embs.tolist(), costs.tolist(), 25, edges=edges.tolist(), **value)
    ref_p = dsgc_ref.retain(q.tolist(), embs.tolist(), costs.tolist(), 25, edges=edges.tolist(), params=params)
    batch = dsgc_fast.retain_batch(q, embs, [0, 30], costs, 25, edges=edges, edge_offsets=[0, 40], params=params)[0]
    for got in (fast_p, batch):
        assert got.retained.tolist() == fast_kw.retained.tolist() and got.scores.tolist() == fast_kw.scores.tolist()
    for got in (ref_kw, ref_p):
        assert got.retained == fast_kw.retained.tolist() and got.scores == fast_kw.scores.tolist()
    assert (fast_kw.policy, fast_kw.selection) == (params.policy, params.selection)


SESSION = [
    {"role": "system", "content": "You are a support triage assistant."},
    {
        "role": "user",
        "content": "Account 8841-C disputes a billing charge from March.",
        "dsgc": {"binds": {"that account": "8841-C"}},
    },
    {"role": "assistant", "content": "I will look at the March charge on account 8841-C."},
    {"role": "user", "content": "How long does KYC verification take for a business?"},
    {"role": "assistant", "content": "KYC verification for a business takes two to five days."},
    {
        "role": "user",
        "content": "Did that account clear KYC?",
        "dsgc": {"uses": ["that account"], "depends_on": ["m1"]},
    },
]


def _compaction(**kwargs):
    store = dsgc_fast.MemoryStore(params=kwargs.pop("store_params", None))
    add_messages(store, SESSION)
    return compact_messages(store, 55, **kwargs).to_dict()  # model tokens: the roots and m1 cost 39


@pytest.mark.parametrize("name", PARAM_NAMES)
def test_store_adapter_and_cli_take_every_field(name, tmp_path, capsys):
    value = {name: CHANGED[name]}
    want = _compaction(**value)
    assert _compaction(params=Params.of(AGENT_PARAMS, **value)) == want
    assert _compaction(store_params=Params.of(AGENT_PARAMS, **value)) == want  # the store's defaults
    session = tmp_path / "session.jsonl"
    session.write_text("".join(json.dumps(m) + "\n" for m in SESSION))
    option = "--" + name.replace("_", "-")
    assert (
        main(["retain", "--input", str(session), "--budget", "55", "--format", "json", option, str(CHANGED[name])]) == 0
    )
    got = json.loads(capsys.readouterr().out)
    assert got["decisions"] == want["decisions"] and got["policy"] == want["policy"]


def test_cli_refuses_a_bad_value_by_name(tmp_path, capsys):
    session = tmp_path / "session.jsonl"
    session.write_text("".join(json.dumps(m) + "\n" for m in SESSION))
    assert main(["retain", "--input", str(session), "--budget", "30", "--hops", str(2**64)]) == 2
    assert "hops" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["retain", "--input", str(session), "--budget", "30", "--tau", "warm"])
