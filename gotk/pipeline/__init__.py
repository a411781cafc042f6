"""Pipeline stages: download, archive reading, replay→encode workers, shard writer, manifest."""
