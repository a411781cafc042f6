"""The encode run (``gotk encode``): the plan, the scan and shard work units, the scan files, game selection and
splits; SGF sources in, shards out."""
