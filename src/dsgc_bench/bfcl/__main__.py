"""``python -m dsgc_bench.bfcl``: run the BFCL replay suite (see ``run``)."""

from .run import main

raise SystemExit(main())
