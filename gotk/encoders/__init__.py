"""Board encoders: registries of named plane functions over the engine's arrays."""
