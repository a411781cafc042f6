"""Command-line interface (typer)."""
