"""Helpers the tests share: clients, fuzzing, oracles, sessions, and the pure parts of the
benchmarks that the tests exercise (the benchmarks import them from here)."""
