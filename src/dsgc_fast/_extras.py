"""How to install an optional extra, in words that work from PyPI and from a clone of the repository."""

from __future__ import annotations


def install_hint(extra: str) -> str:
    """The commands that install the extra ``extra``: from PyPI, or editable from a clone's root."""
    return f"pip install 'dsgc[{extra}]' (from a clone of the repository: pip install -e '.[{extra}]')"
