"""Write ``tests/data/support_long.jsonl``: a long support session with tool calls (our own text).

A payments support assistant works through tickets: each ticket is a user request, an
assistant tool call, the tool's JSON result (some long and minified) and the assistant's
answer.  Early on, turn ``binder`` introduces account 8841-C as "that account" (annotated:
``"dsgc": {"binds": {"that account": "8841-C"}}``); other accounts come and go; the last user
turn asks "Did that account clear KYC?" (annotated with ``uses``).  Deterministic: the same
file on every run.

    python tools/support_session.py            # rewrite the file
"""

from __future__ import annotations

import json
import random
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "support_long.jsonl"
SEED = 20261202
TICKETS = 42

SYSTEM = (
    "You are the support assistant of Northwind Payments. Resolve billing disputes, check payouts and "
    "KYC status, and escalate fraud. Use the tools; never guess a balance."
)
BINDER = (
    "Urgent: account 8841-C, the one flagged last week for a chargeback spike, disputes a CloudHost charge. "
    "Keep an eye on that account today."
)
QUESTION = "Did that account clear KYC?"
TOPICS = [
    ("check_payout_status", "merchant", "Merchant {x} says their payout is late.", "The {x} payout is {status}."),
    ("lookup_invoice", "invoice", "Customer asks why invoice {x} was charged twice.", "Invoice {x} shows {status}."),
    ("get_refund", "refund", "Where is refund {x}?", "Refund {x} is {status}."),
    ("check_kyc", "account", "Has account {x} finished KYC?", "Account {x} KYC is {status}."),
    ("list_disputes", "account", "List the open disputes of account {x}.", "Account {x} has {status}."),
]
STATUSES = ["pending", "cleared", "on hold", "settled", "under review", "reversed"]


def _identifier(rng: random.Random, kind: str) -> str:
    if kind == "merchant":
        return f"M-{rng.randint(1000, 9999)}"
    if kind == "invoice":
        return f"INV-{rng.randint(10000, 99999)}"
    if kind == "refund":
        return f"RF-{rng.randint(100, 999)}"
    return f"{rng.randint(1000, 9999)}-{rng.choice('ABDEFGH')}"  # never 8841-C


def _result(rng: random.Random, kind: str, x: str, status: str, long: bool) -> str:
    record = {kind: x, "status": status, "updated": f"2026-11-{rng.randint(1, 28):02d}"}
    if long:  # a minified JSON dump, as tools return them
        record["events"] = [
            {"at": f"2026-11-{d:02d}T{rng.randint(0, 23):02d}:00Z", "code": rng.randint(100, 999)} for d in range(1, 40)
        ]
    return json.dumps(record, separators=(",", ":"))


def session() -> list[dict]:
    rng = random.Random(SEED)
    out: list[dict] = [{"role": "system", "content": SYSTEM}]
    binder_at = 6
    for ticket in range(TICKETS):
        if ticket == binder_at:
            out.append({"role": "user", "content": BINDER, "dsgc": {"binds": {"that account": "8841-C"}}})
            out.append(
                {"role": "assistant", "content": "Noted: account 8841-C is flagged; I will check the CloudHost charge."}
            )
            continue
        name, kind, ask, answer = TOPICS[ticket % len(TOPICS)]
        x, status = _identifier(rng, kind), rng.choice(STATUSES)
        call_id = f"call_{ticket:03d}"
        out.append({"role": "user", "content": ask.format(x=x)})
        out.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps({kind: x})}}
                ],
            }
        )
        out.append(
            {"role": "tool", "tool_call_id": call_id, "content": _result(rng, kind, x, status, long=ticket % 7 == 3)}
        )
        out.append({"role": "assistant", "content": answer.format(x=x, status=status)})
    out.append({"role": "user", "content": QUESTION, "dsgc": {"uses": ["that account"]}})
    return out


def main() -> None:
    with open(OUT, "w", encoding="utf-8") as handle:
        for message in session():
            handle.write(json.dumps(message, ensure_ascii=False) + "\n")
    print(f"{OUT}: {len(session())} messages")


if __name__ == "__main__":
    main()
