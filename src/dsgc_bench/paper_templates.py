"""The ``paper`` scenario family's templates and filler pool (our own sentences).

Same four templates, regimes, chain depths and honeypot counts as the neutral family
(``templates.py``; the sentences are in ``templates.json``), written to carry the mechanisms
of the paper's own generator:

- four values per slot; eight honeypot sentences per strength and template, several of the
  medium ones naming the query's own entity;
- a pool of only 16 generic filler sentences (10-13 words) that the generator draws from
  with replacement, so stores hold identical copies;
- every query ends with ``SUFFIX``;
- role: c3 shares only "the" and "nightly" with the query, c1 the user and "snapshot";
  profile: c1 is short and shares only the service identifier, c2 shares the function word
  "to" with the query.
"""

from __future__ import annotations

from .templates import DATA, Template, family

#: the text every query of the family ends with
SUFFIX: str = DATA["paper"]["suffix"]
#: generic background sentences, drawn with replacement (10-13 words each)
FILLERS: tuple[str, ...] = tuple(DATA["paper"]["fillers"])
TEMPLATES: dict[str, Template] = family("paper")
