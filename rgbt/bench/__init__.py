"""Benchmark harnesses (``rgbt bench NAME``); shared timing helpers in :mod:`rgbt.timing`."""
