"""The shard dataset format: Parquet shards, ``games.parquet``, ``manifest.json``, game ids, ``--where``.

One owner: :mod:`gotk.shards.format` writes and reads shards, :mod:`gotk.shards.manifest` the manifest,
:mod:`gotk.shards.gameid` names games, :mod:`gotk.shards.where` filters the games table.
"""

from gotk.shards.format import decode_features, encoder_description

__all__ = ["decode_features", "encoder_description"]
