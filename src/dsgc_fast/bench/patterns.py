"""Sentence patterns that render a fact as text and read it back.

A ``Pattern`` is a format string with named slots, e.g. ``"Bundle {bundle} maps to tier
{tier}."``.  ``render`` fills the slots; ``read`` matches a text against the pattern, with
some slots already known, and returns every slot's value (or None).  The generator writes
chain blocks with ``render`` and the answer reader walks the chain with ``read``, so the text
a block shows and the fact the reader extracts cannot drift apart.
"""

from __future__ import annotations

import re
import string


class Pattern:
    """A sentence with ``{slot}`` placeholders; slot values are single tokens like ``T4``."""

    def __init__(self, template: str) -> None:
        self.template = template
        self.slots: tuple[str, ...] = tuple(
            name for _, name, _, _ in string.Formatter().parse(template) if name is not None
        )
        if not self.slots:
            raise ValueError(f"pattern {template!r} has no slots")
        if len(set(self.slots)) != len(self.slots):
            raise ValueError(f"pattern {template!r} repeats a slot")

    def render(self, **values: str) -> str:
        """The sentence with every slot filled."""
        missing = set(self.slots) - set(values)
        if missing:
            raise ValueError(f"pattern {self.template!r} needs values for {sorted(missing)}")
        return self.template.format(**values)

    def read(self, text: str, **known: str) -> dict[str, str] | None:
        """Slot values if ``text`` is this sentence with the ``known`` slots as given, else None."""
        parts = []
        for literal, name, _, _ in string.Formatter().parse(self.template):
            parts.append(re.escape(literal))
            if name is not None:
                value = known.get(name)
                parts.append(re.escape(value) if value is not None else rf"(?P<{name}>[\w-]+)")
        match = re.fullmatch("".join(parts), text)
        if match is None:
            return None
        return {**{k: v for k, v in known.items() if k in self.slots}, **match.groupdict()}
