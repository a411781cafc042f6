"""bench/encoders.py's interleaved ladder-cost measurement on real games."""

from __future__ import annotations

from bench.encoders import gotk_run, interleaved_ratio
from gotk.encoders import get_encoder
from gotk.sgf.reader import iter_sgf
from gotk.sources.archives import SgfSource, iter_sources


def test_interleaved_ratio_times_both_encoders_on_the_same_positions(sample_archive):
    records = []
    for src in iter_sources([sample_archive]):
        if isinstance(src, SgfSource):
            records += [r for r in iter_sgf(src.data) if not isinstance(r, Exception) and r.num_moves]
        if len(records) >= 3:
            break
    lad, nol = get_encoder("alphago"), get_encoder("alphago", ladders=False)
    r = interleaved_ratio(lad, nol, records, 3)
    positions = gotk_run(lad, records)
    assert positions == gotk_run(nol, records) > 0
    assert r["rounds"] == 3
    # ratio = (time without) / (time with) = (pos/s with) / (pos/s without), both over the same positions
    assert abs(r["ratio"] - r["a_pos_per_s"] / r["b_pos_per_s"]) < 1e-9
    assert 0 < r["ratio"] < 1.5
