"""An offline agent loop with a dsgc ``MemoryStore``: compact before every model call.

    python examples/agent_loop.py [--budget 120]

The "model" is a scripted stand-in for an LLM (no network, deterministic): it calls tools
when a user names an account, and resolves "that account" only if the account's number is
still in the context it is given.  The store is compacted to the budget before each call;
the account turn binds the referent "that account" and the last turn uses it.  The account
turn is archived by the compactions in between (nothing used it yet); adding the last turn
recalls it (a block never joins a store whose binder for its referent is archived), and the
compaction before the model call keeps it pinned through that turn, so the model can answer.  Run with ``--no-referents`` to drop the
annotations and watch the same loop lose the account.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from pathlib import Path

from dsgc_fast import MemoryStore
from dsgc_fast.memory.messages import add_messages, compact_messages, to_messages

SYSTEM = "You are the support triage assistant for Northwind Payments. Resolve billing disputes and check KYC status."
ACCOUNT = re.compile(r"account (\d{4}-[A-Z])")
USER_TURNS = [
    ("Merchant M-2207 says their payout is two days late.", {}),
    ("How long does KYC verification usually take for a new business customer?", {}),
    ("Which documents does KYC need for a sole trader?", {}),
    (
        "Urgent one: account 8841-C, the one flagged last week, disputes a billing charge of 412 euros.",
        {"binds": {"that account": "8841-C"}},
    ),
    ("While that runs: did the new merchant onboarding batch clear KYC yesterday?", {}),
    ("Did the two pending sole traders clear KYC too?", {}),
    ("Did that account clear KYC?", {"uses": ["that account"]}),
]
TOOLS = {
    "lookup_charge": lambda args: {"account": args["account"], "charge_id": "ch_5521", "status": "disputed"},
    "check_kyc": lambda args: {"account": args["account"], "kyc": "cleared", "checked": "2026-11-02"},
}


def scripted_model(messages: list[dict]) -> dict:
    """A deterministic stand-in for a chat model (reads only the messages it is given)."""
    last = messages[-1]
    if last["role"] == "tool":
        return {"role": "assistant", "content": f"Tool result: {last['content']}"}
    question = last["content"]
    named = ACCOUNT.search(question)
    if named:
        return _call("lookup_charge", {"account": named.group(1)})
    if "that account" in question:
        seen = [m.group(1) for msg in messages for m in ACCOUNT.finditer(msg.get("content") or "")]
        if seen:
            return _call("check_kyc", {"account": seen[-1]})
        return {"role": "assistant", "content": "I cannot tell which account you mean."}
    return {"role": "assistant", "content": "Noted: " + question.lower()}


def _call(name: str, args: dict) -> dict:
    _call.count = getattr(_call, "count", 0) + 1
    call_id = f"call_{_call.count}"
    function = {"name": name, "arguments": json.dumps(args)}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def run(budget: int, referents: bool, archive: Path) -> str:
    """Run the loop; return the final answer."""
    store = MemoryStore(archive=archive)  # lexical encoder, model tokens (the default tokenizer)
    add_messages(store, [{"role": "system", "content": SYSTEM}])
    answer = ""
    for turn, (text, annotation) in enumerate(USER_TURNS, start=1):
        user = {"role": "user", "content": text}
        if referents and annotation:
            user["dsgc"] = annotation
        before = set(store.ids())
        (added,) = add_messages(store, [user])
        back = sorted(set(store.ids()) - before - {added})
        if back:  # the new turn uses a referent whose binder was archived: it comes back
            print(f"turn {turn}: {added} uses {annotation['uses']}, recalled {back} from the archive")
        while True:
            report = compact_messages(store, budget)  # before every model call
            reply = scripted_model(to_messages(store))
            add_messages(store, [reply])
            if not reply.get("tool_calls"):
                break
            results = [
                {
                    "role": "tool",
                    "tool_call_id": c["id"],
                    "content": json.dumps(TOOLS[c["function"]["name"]](json.loads(c["function"]["arguments"]))),
                }
                for c in reply["tool_calls"]
            ]
            add_messages(store, results)
        answer = reply["content"]
        print(f"turn {turn}: kept {len(report.kept)}, archived {len(store.archived_ids())} -> {answer}")
    account = next(
        b.id
        for b in store.blocks(embeddings=False) + [store.get(i) for i in store.archived_ids()]
        if "8841-C" in b.text and b.meta.get("role") == "user"
    )
    where = "active" if account in store else "archived"
    print(f"\nthe account block {account} is {where}; the last model call saw {report.used} of {budget} tokens")
    if account in report.decisions:
        print(report.explain(account))
    store.close()
    return answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--budget", type=int, default=120, help="token budget (o200k_base tokens with the tokens extra)"
    )
    parser.add_argument("--no-referents", action="store_true", help="drop the binds/uses annotations")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run(args.budget, not args.no_referents, Path(tmp) / "agent.db")


if __name__ == "__main__":
    main()
