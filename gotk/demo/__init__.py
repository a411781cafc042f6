"""The demo: a loopback HTTP mirror of an archive folder (also used by tests)."""
