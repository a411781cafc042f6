"""Playing: players over agents, the GTP engine, a GTP client and the match runner."""
