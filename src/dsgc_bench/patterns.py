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
        parsed = list(string.Formatter().parse(template))
        self.slots: tuple[str, ...] = tuple(name for _, name, _, _ in parsed if name is not None)
        if not self.slots:
            raise ValueError(f"pattern {template!r} has no slots")
        if len(set(self.slots)) != len(self.slots):
            raise ValueError(f"pattern {template!r} repeats a slot")
        self._regex = re.compile(
            "".join(re.escape(lit) + (rf"(?P<{name}>[\w-]+)" if name is not None else "") for lit, name, _, _ in parsed)
        )

    def render(self, **values: str) -> str:
        """The sentence with every slot filled."""
        missing = set(self.slots) - set(values)
        if missing:
            raise ValueError(f"pattern {self.template!r} needs values for {sorted(missing)}")
        return self.template.format(**values)

    def read(self, text: str, **known: str) -> dict[str, str] | None:
        """Slot values if ``text`` is this sentence with the ``known`` slots as given, else None."""
        match = self._regex.fullmatch(text)
        if match is None:
            return None
        values = match.groupdict()
        if any(values[k] != v for k, v in known.items() if k in values):
            return None
        return values
