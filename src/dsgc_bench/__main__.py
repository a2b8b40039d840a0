"""``python -m dsgc_bench``: the ``dsgc-bench`` command line."""

from .cli import main

raise SystemExit(main())
