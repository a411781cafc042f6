"""Benchmarks of gotk (not part of the package); see BENCHMARKS.md."""
