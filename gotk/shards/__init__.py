"""The shard dataset format: Parquet shards, ``games.parquet``, ``manifest.json``, game ids.

One owner: :mod:`gotk.shards.format` writes and reads shards, :mod:`gotk.shards.manifest` the manifest,
:mod:`gotk.shards.gameid` names games.
"""

from gotk.shards.format import decode_features, encoder_description

__all__ = ["decode_features", "encoder_description"]
