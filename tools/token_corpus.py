"""The corpus the approximate token counter is fitted on and measured against.

Five categories of block-sized texts, each sample tagged with the source it came from:

prose         paragraphs written for this corpus (``tools/data/prose.txt``), paragraphs of this
              repository's README and docs, and docstrings of the Python standard library
code          30-line windows of this repository's Python sources and of standard-library
              modules
json          minified JSON (``separators=(",", ":")``): random nested structures and
              tool results shaped like real ones (search hits, orders, forecasts, query rows,
              issue lists, file listings), from a seeded generator
multilingual  passages in 19 languages, two per language, written for this corpus (``tools/data/multilingual.txt``)
hard          long numbers, UUIDs, hex digests, base64, URLs and paths, alone and inside
              sentences, and chat text with emoji

``split(samples)`` halves the corpus deterministically: within each source group (one file,
one language, one generator) samples alternate between the halves, so every group is in both
and the fit (``tools/fit_token_approx.py``) never sees a sample of the held-out half that the
error table (``tools/token_error_table.py``) reports.
"""

from __future__ import annotations

import ast
import base64
import dataclasses
import json
import random
import sysconfig
import uuid
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"

CATEGORIES = ("prose", "code", "json", "multilingual", "hard")

#: standard-library modules that give the code and docstring samples (Python 3.10+ all have them)
STDLIB_MODULES = (
    "argparse.py", "csv.py", "dataclasses.py", "difflib.py", "functools.py", "gzip.py",
    "pathlib.py", "shutil.py", "statistics.py", "tarfile.py", "textwrap.py", "zipfile.py",
    "json/decoder.py", "json/encoder.py", "logging/__init__.py", "email/message.py",
    "http/client.py", "urllib/parse.py", "asyncio/tasks.py", "collections/__init__.py",
)  # fmt: skip

#: lines per code window
CODE_WINDOW = 30


@dataclasses.dataclass(frozen=True)
class Sample:
    category: str
    source: str
    text: str


def corpus(seed: int = 0) -> list[Sample]:
    """Every sample of every category (generated parts from ``seed``)."""
    rng = random.Random(seed)
    return [*prose(), *code(), *json_samples(rng), *multilingual(), *hard(rng)]


def split(samples: list[Sample]) -> tuple[list[Sample], list[Sample]]:
    """``(train, held_out)``: the k-th sample of a group (its source up to the last ``:``)
    is held out when k is odd."""
    seen: dict[tuple[str, str], int] = {}
    train, held_out = [], []
    for s in samples:
        group = (s.category, s.source.rpartition(":")[0])
        k = seen[group] = seen.get(group, -1) + 1
        (held_out if k % 2 else train).append(s)
    return train, held_out


# -- prose ----------------------------------------------------------------------------------
def prose() -> list[Sample]:
    out = [
        Sample("prose", f"written:{k}", p) for k, p in enumerate(_paragraphs((DATA / "prose.txt").read_text("utf-8")))
    ]
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for k, p in enumerate(_paragraphs(_without_fences(path.read_text("utf-8")))):
            if len(p.split()) >= 30:
                out.append(Sample("prose", f"{path.relative_to(ROOT)}:{k}", p))
    for name in STDLIB_MODULES:
        for k, doc in enumerate(_docstrings(_stdlib(name).read_text("utf-8"))):
            if len(doc.split()) >= 40:
                out.append(Sample("prose", f"stdlib-doc:{name}:{k}", doc))
    return out


def _paragraphs(text: str) -> list[str]:
    return [p.strip() for p in text.split("\n\n") if p.strip()]


def _without_fences(markdown: str) -> str:
    kept, fenced = [], False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            kept.append(line)
    return "\n".join(kept)


def _docstrings(source: str) -> Iterator[str]:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node)
            if doc:
                yield doc


def _stdlib(name: str) -> Path:
    return Path(sysconfig.get_paths()["stdlib"]) / name


# -- code -----------------------------------------------------------------------------------
def code() -> list[Sample]:
    files = sorted((ROOT / "src").rglob("*.py")) + sorted((ROOT / "tests").glob("*.py"))
    sources = [(str(p.relative_to(ROOT)), p) for p in files] + [(f"stdlib:{n}", _stdlib(n)) for n in STDLIB_MODULES]
    out = []
    for name, path in sources:
        lines = path.read_text("utf-8").splitlines()
        for start in range(0, len(lines), CODE_WINDOW):
            window = "\n".join(lines[start : start + CODE_WINDOW])
            if len(window.split()) >= 20:
                out.append(Sample("code", f"{name}:{start}", window))
    return out


# -- minified JSON ----------------------------------------------------------------------------
_WORDS = [
    "account",
    "amount",
    "archive",
    "balance",
    "batch",
    "billing",
    "branch",
    "bucket",
    "cache",
    "charge",
    "checkout",
    "client",
    "cluster",
    "comment",
    "config",
    "customer",
    "dataset",
    "delivery",
    "device",
    "dispute",
    "draft",
    "endpoint",
    "event",
    "export",
    "feature",
    "filter",
    "forecast",
    "gateway",
    "invoice",
    "item",
    "label",
    "ledger",
    "limit",
    "merchant",
    "message",
    "metric",
    "network",
    "node",
    "order",
    "owner",
    "package",
    "payload",
    "payment",
    "plan",
    "policy",
    "price",
    "profile",
    "project",
    "queue",
    "record",
    "refund",
    "region",
    "release",
    "report",
    "request",
    "review",
    "role",
    "route",
    "schedule",
    "score",
    "session",
    "shipment",
    "status",
    "stock",
    "storage",
    "stream",
    "subscription",
    "summary",
    "target",
    "task",
    "team",
    "ticket",
    "token",
    "topic",
    "transfer",
    "user",
    "vendor",
    "version",
    "warehouse",
    "window",
    "workflow",
]
_CITIES = ("Lisbon", "Oslo", "Nairobi", "Osaka", "Quito", "Tallinn", "Perth", "Montreal", "Porto", "Da Nang")


def json_samples(rng: random.Random, n_random: int = 120, n_tools: int = 120) -> list[Sample]:
    out = [Sample("json", f"random:{k}", _minify(_nested(rng, depth=rng.randint(1, 4)))) for k in range(n_random)]
    makers = (_search_hits, _order, _forecast, _query_rows, _issues, _files)
    for k in range(n_tools):
        make = makers[k % len(makers)]
        out.append(Sample("json", f"tool:{make.__name__.strip('_')}:{k}", _minify(make(rng))))
    return out


def _minify(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _phrase(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(lo, hi)))


def _key(rng: random.Random) -> str:
    style = rng.random()
    words = [rng.choice(_WORDS) for _ in range(rng.randint(1, 3))]
    if style < 0.6:
        return "_".join(words)
    if style < 0.9:
        return words[0] + "".join(w.capitalize() for w in words[1:])
    return "-".join(words)


def _scalar(rng: random.Random) -> object:
    kind = rng.randrange(8)
    if kind == 0:
        return rng.randint(0, 10 ** rng.randint(1, 9))
    if kind == 1:
        return round(rng.uniform(-1000, 1000), rng.randint(1, 6))
    if kind == 2:
        return rng.random() < 0.5
    if kind == 3:
        return None
    if kind == 4:
        return _phrase(rng, 1, 12)
    if kind == 5:
        return _identifier(rng)
    if kind == 6:
        return _timestamp(rng)
    return rng.choice(_WORDS)


def _nested(rng: random.Random, depth: int) -> object:
    if depth == 0:
        return _scalar(rng)
    if rng.random() < 0.35:
        return [_nested(rng, depth - 1) for _ in range(rng.randint(1, 6))]
    return {
        _key(rng): _nested(rng, depth - 1) if rng.random() < 0.6 else _scalar(rng) for _ in range(rng.randint(1, 7))
    }


def _identifier(rng: random.Random) -> str:
    kind = rng.randrange(5)
    alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    if kind == 0:
        return str(uuid.UUID(int=rng.getrandbits(128)))
    if kind == 1:
        return f"{rng.choice(['cus', 'ch', 'pi', 'sub', 'evt'])}_{''.join(rng.choice(alnum) for _ in range(rng.randint(8, 24)))}"
    if kind == 2:
        return f"{rng.choice(['ORD', 'INV', 'TCK', 'SKU'])}-{rng.randint(1000, 999999)}"
    if kind == 3:
        return f"{rng.getrandbits(160):040x}"[: rng.choice([7, 12, 40])]
    return f"{rng.choice(_WORDS)}-{rng.randint(1, 99)}"


def _search_hits(rng: random.Random) -> object:
    hits = []
    for _ in range(rng.randint(2, 8)):
        slug = "-".join(rng.choice(_WORDS) for _ in range(rng.randint(2, 5)))
        hits.append({
            "title": _phrase(rng, 3, 9).capitalize(),
            "url": f"https://docs.{rng.choice(_WORDS)}.example.com/{slug}?ref=search&page={rng.randint(1, 9)}",
            "snippet": _phrase(rng, 12, 30) + ".",
            "score": round(rng.random(), 4),
            "published": f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        })  # fmt: skip
    return {"query": _phrase(rng, 2, 5), "total": rng.randint(10, 50000), "results": hits}


def _order(rng: random.Random) -> object:
    items = [
        {"sku": f"SKU-{rng.randint(10000, 99999)}", "name": _phrase(rng, 2, 4), "qty": rng.randint(1, 5),
         "unit_price": round(rng.uniform(1, 400), 2)}
        for _ in range(rng.randint(1, 6))
    ]  # fmt: skip
    return {
        "order_id": f"ORD-2026-{rng.randint(100000, 999999)}",
        "status": rng.choice(["pending", "paid", "shipped", "delivered", "refunded"]),
        "customer": {"id": _identifier(rng), "email": f"{rng.choice(_WORDS)}.{rng.choice(_WORDS)}@example.org",
                     "city": rng.choice(_CITIES)},
        "items": items,
        "total": round(sum(i["qty"] * i["unit_price"] for i in items), 2),
        "currency": rng.choice(["EUR", "USD", "JPY", "BRL"]),
        "tracking": {"carrier": rng.choice(["DHL", "UPS", "PostNL"]), "number": str(rng.randint(10**13, 10**14 - 1))},
        "created_at": _timestamp(rng),
    }  # fmt: skip


def _timestamp(rng: random.Random) -> str:
    day = f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    return f"{day}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z"


def _forecast(rng: random.Random) -> object:
    hours = [
        {"time": f"2026-05-{rng.randint(1, 28):02d}T{h:02d}:00", "temp_c": round(rng.uniform(-5, 35), 1),
         "precip_mm": round(rng.uniform(0, 8), 1), "wind_kph": rng.randint(0, 60),
         "summary": rng.choice(["clear", "light rain", "overcast", "showers", "fog", "snow"])}
        for h in range(rng.randint(3, 12))
    ]  # fmt: skip
    where = {
        "name": rng.choice(_CITIES),
        "lat": round(rng.uniform(-60, 60), 4),
        "lon": round(rng.uniform(-180, 180), 4),
    }
    return {"location": where, "units": "metric", "hourly": hours}


def _query_rows(rng: random.Random) -> object:
    columns = [_key(rng) for _ in range(rng.randint(3, 7))]
    rows = [[_scalar(rng) for _ in columns] for _ in range(rng.randint(2, 15))]
    return {"columns": columns, "rows": rows, "row_count": len(rows), "elapsed_ms": round(rng.uniform(0.2, 900), 2)}


def _issues(rng: random.Random) -> object:
    return [
        {"number": rng.randint(1, 9999), "title": _phrase(rng, 3, 10), "state": rng.choice(["open", "closed"]),
         "labels": [rng.choice(_WORDS) for _ in range(rng.randint(0, 3))], "assignee": rng.choice([None, rng.choice(_WORDS)]),
         "comments": rng.randint(0, 40), "updated_at": _timestamp(rng)}
        for _ in range(rng.randint(2, 8))
    ]  # fmt: skip


def _files(rng: random.Random) -> object:
    entries = []
    for _ in range(rng.randint(3, 15)):
        parts = [rng.choice(_WORDS) for _ in range(rng.randint(1, 4))]
        entries.append({"path": "/srv/" + "/".join(parts) + rng.choice([".py", ".json", ".log", ".csv", "/"]),
                        "size": rng.randint(0, 10**8), "modified": rng.randint(1_600_000_000, 1_800_000_000),
                        "mode": rng.choice(["0644", "0755", "0600"])})  # fmt: skip
    return {"cwd": "/srv", "entries": entries}


# -- multilingual ---------------------------------------------------------------------------
def multilingual() -> list[Sample]:
    out, per_language = [], {}
    for line in (DATA / "multilingual.txt").read_text("utf-8").splitlines():
        if line.strip():
            lang, text = line.split("\t", 1)
            k = per_language[lang] = per_language.get(lang, -1) + 1
            out.append(Sample("multilingual", f"{lang}:{k}", text))
    return out


# -- hard cases -----------------------------------------------------------------------------
def hard(rng: random.Random, n: int = 60) -> list[Sample]:
    makers = (_numbers, _ids, _b64, _urls, _ids_in_prose, _emoji_chat)
    return [
        Sample("hard", f"{makers[k % len(makers)].__name__.strip('_')}:{k}", makers[k % len(makers)](rng))
        for k in range(n)
    ]


def _numbers(rng: random.Random) -> str:
    items = []
    for _ in range(rng.randint(8, 30)):
        kind = rng.randrange(4)
        if kind == 0:
            items.append(str(rng.getrandbits(rng.randint(20, 200))))
        elif kind == 1:
            items.append(f"{rng.uniform(-1e6, 1e6):.{rng.randint(2, 9)}f}")
        elif kind == 2:
            items.append(f"+{rng.randint(1, 99)} {rng.randint(100, 999)} {rng.randint(1000000, 9999999)}")
        else:
            items.append(" ".join(str(rng.randint(1000, 9999)) for _ in range(4)))
    return rng.choice([", ", "\n", " "]).join(items)


def _ids(rng: random.Random) -> str:
    return "\n".join(_identifier(rng) for _ in range(rng.randint(6, 24)))


def _b64(rng: random.Random) -> str:
    return base64.b64encode(rng.randbytes(rng.randint(40, 600))).decode()


def _urls(rng: random.Random) -> str:
    urls = []
    for _ in range(rng.randint(3, 10)):
        path = "/".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 5)))
        query = "&".join(f"{rng.choice(_WORDS)}={_identifier(rng)}" for _ in range(rng.randint(0, 4)))
        urls.append(rng.choice([f"https://{rng.choice(_WORDS)}.example.net/{path}" + (f"?{query}" if query else ""),
                                f"/var/lib/{path}.{rng.choice(['db', 'sock', 'yaml'])}",
                                f"C:\\Users\\{rng.choice(_WORDS)}\\{path.replace('/', chr(92))}.txt"]))  # fmt: skip
    return "\n".join(urls)


def _ids_in_prose(rng: random.Random) -> str:
    sentences = []
    for _ in range(rng.randint(3, 8)):
        sentences.append(
            f"The {rng.choice(_WORDS)} {_identifier(rng)} moved to {rng.choice(_WORDS)} {_identifier(rng)} "
            f"after {rng.randint(2, 5000)} {rng.choice(_WORDS)}s at {rng.uniform(0, 100):.2f}%."
        )
    return " ".join(sentences)


_EMOJI = "😀😂🥲😍🤔👍👎🙏🎉🔥✅❌⚠️🚀💡📦🧪🐛☕🌧️"


def _emoji_chat(rng: random.Random) -> str:
    lines = []
    for _ in range(rng.randint(3, 8)):
        lines.append(f"{_phrase(rng, 3, 10)} {''.join(rng.choice(_EMOJI) for _ in range(rng.randint(1, 4)))}")
    return "\n".join(lines)
