"""``python -m dsgc_fast.bench``: the ``dsgc-bench`` command line."""

from .cli import main

raise SystemExit(main())
