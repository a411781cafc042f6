"""The dataset card ``gotk encode`` writes (``README.md``): a YAML header the Hugging Face Hub reads, and
a folder that the ``datasets`` library loads split by split, rows equal to the shards'."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import archive_slice

from gotk.shards.card import card_text, hub_split


@pytest.fixture(scope="module")
def dataset(tmp_path_factory, sample_archive) -> Path:
    from gotk.jobs.encode import EncodeOptions, encode_dataset

    root = tmp_path_factory.mktemp("card")
    src = archive_slice(sample_archive, root, 40)
    out = root / "ds"
    encode_dataset([src], out, EncodeOptions(encoder="sevenplane", split="train=0.6,val=0.2,test=0.2",
                                             shard_rows=3000, min_rank="1d"), workers=1, progress=False)
    return out


def _header(text: str) -> dict:
    yaml = pytest.importorskip("yaml")
    assert text.startswith("---\n")
    head = text.split("\n---\n", 1)[0][4:]
    return yaml.safe_load(head)


def test_card_header_lists_every_shard(dataset):
    text = (dataset / "README.md").read_text()
    m = json.loads((dataset / "manifest.json").read_text())
    assert text == card_text(m)  # the card depends only on the manifest
    meta = _header(text)
    configs = {c["config_name"]: c for c in meta["configs"]}
    assert configs["positions"]["default"] is True
    files = {f["split"]: f["path"] for f in configs["positions"]["data_files"]}
    assert set(files) == {hub_split(n) for n, s in m["splits"].items() if s["shards"]} == {"train", "validation",
                                                                                            "test"}
    for name, s in m["splits"].items():
        matched = sorted(str(p.relative_to(dataset)) for p in dataset.glob(files[hub_split(name)]))
        assert matched == sorted(e["file"] for e in s["shards"])
    assert configs["games"]["data_files"] == [{"split": "games", "path": "games.parquet"}]
    assert meta["license"] == "other" and "go" in meta["tags"]
    # the body: schema, planes, sources, filters, licence notes
    for plane in m["encoder"]["plane_names"]:
        assert f"`{plane}`" in text
    for src in m["sources"]:
        assert src["sha256"] in text
    assert "both players at least 1d" in text and "## Licence notes" in text and "`features`" in text


def test_datasets_library_loads_every_split(dataset, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    datasets = pytest.importorskip("datasets")
    m = json.loads((dataset / "manifest.json").read_text())
    cache = str(tmp_path / "hf-cache")
    by_dir = datasets.load_dataset("parquet", data_dir=str(dataset), cache_dir=cache)
    by_card = datasets.load_dataset(str(dataset), cache_dir=cache)
    for ds in (by_dir, by_card):
        assert {k: ds[k].num_rows for k in ds} == {hub_split(n): s["rows"] for n, s in m["splits"].items()}
    shard = pq.read_table(dataset / m["splits"]["val"]["shards"][0]["file"]).to_pylist()
    rows = by_card["validation"].select(range(5)).to_list()
    assert rows == shard[:5]  # same columns, same values, same order
    games = datasets.load_dataset(str(dataset), "games", cache_dir=cache)
    assert games["games"].num_rows == m["games"]["kept"]
