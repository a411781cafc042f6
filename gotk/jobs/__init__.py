"""The encode run: work units, executors, splits and filters; SGF sources in, shards out."""
