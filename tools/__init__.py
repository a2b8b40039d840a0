"""Developer scripts: the NumPy/SciPy peer, synthetic stores, the peer table and profiling."""
