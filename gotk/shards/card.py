"""The dataset card: ``README.md`` in a dataset folder, so the folder can be pushed to the Hugging Face
Hub as it is.

The YAML header is what the Hub reads (``configs`` with ``data_files`` per split, ``license``, ``tags``);
split names follow the ``datasets`` library's conventions (``val`` → ``validation``) so that the Hub,
``datasets.load_dataset(FOLDER)`` (which reads this header) and ``datasets.load_dataset("parquet",
data_dir=FOLDER)`` (which infers splits from the ``train``/``val``/``test`` folder names) all give the same
split names. The body documents the schema, the encoder's planes, the sources, the filters and the
licence notes. The card depends only on the manifest, so it is as deterministic as the dataset.
"""

from __future__ import annotations

import json
import os

from gotk.shards import manifest as M
from gotk.storage import Storage, join

CARD_NAME = "README.md"
#: gotk split names → the names ``datasets`` gives the same folders
HUB_SPLITS = {"val": "validation", "valid": "validation", "dev": "validation", "eval": "test"}

_COLUMNS = [
    ("game_id", "string", "the game: a hash of the moves played (joins `games.parquet`)"),
    ("move_number", "int32", "0-based main-line index of the move (setup excluded, passes counted)"),
    ("to_play", "int8", "+1 black, -1 white: the player of the move"),
    ("features", "fixed_size_binary[{bytes}]", "{features}"),
    ("label", "int16", "the move played: flat index row*{size}+col (row 0 at the top), pass = {pass_}"),
    ("value", "int8", "+1 if the player to move won the game, -1 if it lost, 0 draw / void / unknown"),
]


def hub_split(name: str) -> str:
    """The split name ``datasets`` uses for a gotk split folder."""
    return HUB_SPLITS.get(name, name)


def _yaml_str(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a valid YAML double-quoted scalar


def _size_category(rows: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
                        (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M")):
        if rows < limit:
            return name
    return "100M<n<1B"


def card_text(manifest: dict) -> str:
    """The whole ``README.md`` for a dataset's manifest."""
    enc = manifest["encoder"]
    size = int(enc["board_size"])
    splits = {n: s for n, s in manifest["splits"].items() if s["shards"]}
    pretty = f"Go positions from game records, {enc['name']} encoding ({size}x{size}), made by gotk"
    y = ["---", f"pretty_name: {_yaml_str(pretty)}", "license: other",
         "license_name: game-records-see-sources",
         "tags:", "- go", "- baduk", "- weiqi", "- board-games", "- game-records", "- gotk",
         "task_categories:", "- reinforcement-learning", "size_categories:", f"- {_size_category(manifest['rows'])}",
         "configs:", "- config_name: positions", "  default: true", "  data_files:"]
    for name in splits:
        y += [f"  - split: {hub_split(name)}", f"    path: {_yaml_str(f'{name}/*.parquet')}"]
    y += ["- config_name: games", "  data_files:", "  - split: games", f"    path: {_yaml_str('games.parquet')}", "---"]

    feats = ("the encoder's planes, np.packbits of the C x H x W 0/1 array in C order (plane, row, col), "
             "bitorder big" if enc["dtype"] != "int8" else "the encoder's planes, raw int8 bytes in C order "
                                                          "(plane, row, col)")
    nbytes = _features_nbytes(enc)
    g = manifest["games"]
    b = ["", f"# {pretty}", "",
         f"{manifest['rows']:,} positions from {g['kept']:,} games, made by `gotk encode` (gotk "
         f"{manifest['gotk_version']}, shard schema version {manifest['schema_version']}). One row per position: "
         "the board before a main-line move, the move played and the game's result.", "",
         "## Loading", "", "```python", "import datasets",
         "ds = datasets.load_dataset(\"parquet\", data_dir=\"THIS_FOLDER\")   # train / validation / test",
         "ds = datasets.load_dataset(\"THIS_FOLDER\")                      # every split, from this card",
         "games = datasets.load_dataset(\"THIS_FOLDER\", \"games\")          # one row per game",
         "```", "",
         "`gotk train --data THIS_FOLDER` and `gotk.datasets` read it directly; `gotk inspect THIS_FOLDER --verify` "
         "checks every file against `manifest.json` (sizes, sha256, row counts).", "",
         "## Splits", "", "| split | folder | games | positions | files | bytes |", "|---|---|---|---|---|---|"]
    for name, s in splits.items():
        b.append(f"| {hub_split(name)} | `{name}/` | {s['games']:,} | {s['rows']:,} | {len(s['shards'])} | "
                 f"{s['bytes']:,} |")
    b += ["", "Games go to splits by their id (a hash of the moves), so a game and its duplicates from other "
          "archives always land in the same split.", "",
          "## Schema (`<split>/part-NNNNN.parquet`)", "", "| column | type | meaning |", "|---|---|---|"]
    for col, typ, meaning in _COLUMNS:
        b.append(f"| `{col}` | `{typ.format(bytes=nbytes)}` | "
                 f"{meaning.format(features=feats, size=size, pass_=size * size)} |")
    b += ["", "The Parquet schema metadata key `gotk` repeats the encoder description below, so a shard alone "
          "is self-describing.", "",
          f"`games.parquet` (config `games`): one row per kept game: {', '.join(M.GAMES_SCHEMA.names)} "
          "(docs/shards.md, docs/metadata.md).",
          "", "## Encoder planes", "",
          f"`{enc['name']}` version {enc['version']}: shape {enc['shape']} (planes, rows, cols), dtype "
          f"`{enc['dtype']}`, {nbytes:,} bytes per row" + (f", options `{json.dumps(enc['options'])}`"
                                                            if enc.get("options") else "") + ".", "",
          "| plane | name |", "|---|---|"]
    b += [f"| {i} | `{n}` |" for i, n in enumerate(enc["plane_names"])]
    b += ["", "## Sources", "", "| archive | bytes | sha256 |", "|---|---|---|"]
    for src in manifest["sources"]:
        label = src.get("name") or f"{src.get('files', '?')} loose .sgf files"
        b.append(f"| {label} | {src['bytes']:,} | `{src['sha256']}` |")
    o = manifest["options"]
    filters = [f"board size {o['board_size']}x{o['board_size']}", f"split `{o['split']}`"]
    if o.get("test_from"):
        filters.append(f"test split from {', '.join(o['test_from'])}")
    if o.get("min_rank"):
        filters.append(f"both players at least {o['min_rank']}")
    if o.get("no_handicap"):
        filters.append("no handicap games")
    filters.append("passes included" if o.get("include_passes") else "passes not included as rows")
    if o.get("skip_first"):
        filters.append(f"first {o['skip_first']} moves of each game dropped")
    filters.append("games that stop at an illegal move dropped" if o.get("drop_partial")
                   else "games that stop at an illegal move keep the positions before it")
    for key in ("where", "filters"):  # metadata filters, when the build has them
        if o.get(key):
            filters.append(f"{key}: `{json.dumps(o[key])}`")
    skipped = ", ".join(f"{k} {v:,}" for k, v in g["skipped"].items()) or "none"
    b += ["", "## Filters", "", "; ".join(filters) + ".", "",
          f"Games read {g['read']:,}, kept {g['kept']:,} ({g['partial']:,} cut short at an unplayable move), "
          f"skipped by reason: {skipped}. Duplicates (the same moves) are kept once.", "",
          "## Licence notes", "",
          "The positions are derived from the game records listed under Sources, and their terms apply. The KGS "
          "archives of high-dan games (u-go.net, the usual source) are published for free download without a "
          "stated licence; the games belong to their players. This card therefore declares `license: other`: "
          "check the terms of your sources before publishing a dataset built from them. The gotk code that made "
          "it is MIT-licensed.", ""]
    return "\n".join(y + b)


def _features_nbytes(enc: dict) -> int:
    c, h, w = enc["shape"]
    n = int(c) * int(h) * int(w)
    return n if enc["dtype"] == "int8" else (n + 7) // 8


def write_card(folder: str | os.PathLike, manifest: dict, storage: Storage | None = None) -> None:
    """Write ``folder/README.md`` for ``manifest`` (atomically, through ``storage``)."""
    st = storage if storage is not None else Storage.for_url(folder)
    st.write_text_atomic(join(folder, CARD_NAME), card_text(manifest))
