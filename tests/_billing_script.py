"""The 64-user-turn billing-support script of issue 26, shared by the adapter loop tests.

The customer on the line names their account once, in turn 2 (``BINDER``); the agent keeps
working on it with three tools (``check_payout``, ``lookup_charges``, ``check_kyc``), some
turns with parallel calls, while colleagues ask about six other accounts; the last turn is
``QUESTION`` ("Did that account clear KYC?").  Nothing is annotated.  ``calls_for`` is the
scripted model's rule, whatever the framework: each user turn's planned calls, and for the
question a KYC check of the account named by the earliest user message the model was sent
that names one (the customer's when turn 2 was sent, a colleague's otherwise).
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import cache

CUSTOMER = "AC-7730"
OTHERS = ["AC-1001", "AC-2040", "AC-3318", "AC-4417", "AC-5502", "AC-6690"]
SYSTEM = "You are the billing support agent of Northwind Payments. Use the tools; never guess a status."
BINDER = f"The customer on the line owns account {CUSTOMER} and says their payout is held."
QUESTION = "Did that account clear KYC?"
ACCOUNT = re.compile(r"\bAC-\d{4}\b")


def check_payout(account: str) -> str:
    """The payout status of an account."""
    held = account == CUSTOMER
    return json.dumps({"account": account, "payout": "held" if held else "paid", "amount_eur": 1840 if held else 310})


def lookup_charges(account: str) -> str:
    """The latest charges of an account."""
    seed = int(account[3:])
    return json.dumps(
        [{"charge": f"ch_{seed + k}", "amount_eur": (seed * (k + 3)) % 900, "status": "settled"} for k in range(8)]
    )


def check_kyc(account: str) -> str:
    """The KYC status of an account."""
    return json.dumps({"account": account, "kyc": "pending review" if account == CUSTOMER else "cleared"})


TOOLS = [check_payout, lookup_charges, check_kyc]


def script() -> list[tuple[str, list[tuple[str, str]]]]:
    """The 63 user turns before the question, each with its planned calls ``(tool, account)``."""
    turns: list[tuple[str, list[tuple[str, str]]]] = [
        ("Good morning, I am on the billing queue today.", []),
        (BINDER, [("check_payout", CUSTOMER)]),
    ]
    follow_ups = [
        ("What are their latest charges?", [("lookup_charges", CUSTOMER)]),
        ("Did their payout move since?", [("check_payout", CUSTOMER)]),
        ("How long do held payouts usually take to release?", []),
    ]
    j = 0  # the colleagues' turns so far
    for k in range(3, 64):
        if k >= 56 or k % 3 == 0:  # the customer's follow-ups, and only theirs at the end
            text, calls = follow_ups[k % 3]
            turns.append((f"{text} (note {k})", calls))
            continue
        a, b = OTHERS[j % 6], OTHERS[(j + 1) % 6]
        turns.append(
            [
                (f"A colleague asks: what are the charges on account {a}? (ticket {k})", [("lookup_charges", a)]),
                (
                    f"Compare the payouts of accounts {a} and {b} for ticket {k}.",
                    [("check_payout", a), ("check_payout", b)],
                ),
                (f"Has account {a} cleared KYC yet? (ticket {k})", [("check_kyc", a)]),
                (f"Check KYC and charges for account {a}, ticket {k}.", [("check_kyc", a), ("lookup_charges", a)]),
            ][j % 4]
        )
        j += 1
    return turns


@cache
def planned_calls() -> dict[str, list[tuple[str, str]]]:
    return dict(script())


def calls_for(text: str, user_texts: list[str]) -> list[tuple[str, str]]:
    """The calls the scripted model makes for the user turn ``text``, sent with ``user_texts`` (oldest first).

    A scripted turn gets its planned calls; the question gets a ``check_kyc`` of the account
    named by the earliest user text that names one ("unknown" if none does).
    """
    if text != QUESTION:
        return planned_calls()[text]
    named = [ACCOUNT.findall(t) for t in user_texts]
    return [("check_kyc", next((found[0] for found in named if found), "unknown"))]


def call_id(text: str, j: int) -> str:
    """The id of the scripted model's ``j``-th call for the user turn ``text``."""
    return f"call_{hashlib.sha256(text.encode()).hexdigest()[:10]}_{j}"
