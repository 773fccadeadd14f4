"""Benchmarks of rypsok (REQ-PERF-004, REQ-PERF-005): `make bench` or `python -m bench NAME`.

Everything runs on 127.0.0.1 against a fake provider that runs in a process
of its own (`bench.fakeserver`), so the provider's CPU never shares rypsok's
event loop. Figures are printed as compact tables; docs/performance.md
explains them. Nothing here is a test: no figure is asserted.
"""
