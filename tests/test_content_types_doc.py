"""``docs/content-types.md`` is the table the code uses: rendered again, it is the page as written.

Each content-part kind and each Responses item type has its row; the examples that walk every
kind live in ``tests/test_content_parts.py`` (``EXAMPLES``) and
``tests/test_integrations_openai_agents.py`` (``ITEM_EXAMPLES``), each checked there to name
exactly the kinds of the table.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._requires import require

require("agents", "openai-agents")

from dsgc_fast.integrations.openai_agents import ITEM_KINDS
from dsgc_fast.memory.content_kinds import CONTENT_KINDS
from tools import content_types_table

PAGE = Path(__file__).resolve().parents[1] / "docs" / "content-types.md"


def test_the_page_is_the_rendered_table():
    assert PAGE.read_text(encoding="utf-8") == content_types_table.render(), (
        "docs/content-types.md is stale: python tools/content_types_table.py --out docs/content-types.md"
    )


@pytest.mark.parametrize("kind", CONTENT_KINDS, ids=lambda k: k.kind)
def test_each_content_kind_has_its_row(kind):
    rows = [line for line in PAGE.read_text(encoding="utf-8").splitlines() if line.startswith(f"| `{kind.kind}` |")]
    assert content_types_table.content_row(kind) in rows


@pytest.mark.parametrize("kind", ITEM_KINDS, ids=lambda k: k.kind)
def test_each_item_type_has_its_row(kind):
    assert content_types_table.item_row(kind) in PAGE.read_text(encoding="utf-8").splitlines()
