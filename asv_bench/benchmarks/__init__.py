"""asv benchmarks for dsgc (pandas-style layout; run with `make bench`)."""
