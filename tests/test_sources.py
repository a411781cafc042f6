"""Finding SGF bytes: files, folders, zip / tar.gz / tar.bz2 archives, and every way they go wrong."""

from __future__ import annotations

import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from gotk.sources.archives import SgfSource, Skip, is_archive, iter_sources


def game(i: int) -> bytes:
    return f"(;GM[1]SZ[9]PB[p{i}];B[{'abcdefghi'[i % 9]}a];W[ee])".encode()


def make_tar(path: Path, members: dict[str, bytes], mode: str) -> Path:
    with tarfile.open(path, mode) as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def make_zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


MEMBERS = {"games/a.sgf": game(1), "games/sub/b.SGF": game(2), "games/c.sgf": game(3)}


def collect(paths, **kw):
    items = list(iter_sources([str(p) for p in paths], **kw))
    found = {(i.archive, i.member): i.data for i in items if isinstance(i, SgfSource)}
    skips = [(s.reason, s.where) for s in items if isinstance(s, Skip)]
    return found, skips


@pytest.mark.parametrize("suffix, mode", [(".tar.gz", "w:gz"), (".tar.bz2", "w:bz2"), (".tar", "w"), (".tgz", "w:gz")])
def test_tar_archives(tmp_path, suffix, mode):
    path = make_tar(tmp_path / f"x{suffix}", MEMBERS, mode)
    found, skips = collect([path])
    assert skips == []
    assert found == {(path.name, name): data for name, data in MEMBERS.items()}


def test_zip_archive(tmp_path):
    path = make_zip(tmp_path / "x.zip", MEMBERS)
    items = list(iter_sources([path]))
    assert [i.member for i in items] == sorted(MEMBERS)  # deterministic order
    assert all(i.data == MEMBERS[i.member] for i in items)


def test_single_file_and_folder_recursion(tmp_path):
    root = tmp_path / "root"
    (root / "deep" / "deeper").mkdir(parents=True)
    (root / "one.sgf").write_bytes(game(1))
    (root / "deep" / "two.sgf").write_bytes(game(2))
    (root / "deep" / "deeper" / "three.SGF").write_bytes(game(3))
    (root / "deep" / "notes.txt").write_text("not a game")
    make_zip(root / "deep" / "deeper" / "pack.zip", {"four.sgf": game(4)})
    found, skips = collect([root])
    assert skips == []
    assert sorted(found) == sorted([("one.sgf", ""), ("two.sgf", ""), ("three.SGF", ""), ("pack.zip", "four.sgf")])
    assert found[("pack.zip", "four.sgf")] == game(4)
    # the same folder twice gives the same order
    assert list(iter_sources([root])) == list(iter_sources([root]))
    found, _ = collect([root / "one.sgf"])
    assert found == {("one.sgf", ""): game(1)}


def test_non_sgf_member_is_skipped(tmp_path):
    members = {"readme.txt": b"hello", "g.sgf": game(1), "img.png": b"\x89PNG"}
    for path in (make_zip(tmp_path / "m.zip", members), make_tar(tmp_path / "m.tar.gz", members, "w:gz")):
        found, skips = collect([path])
        assert list(found) == [(path.name, "g.sgf")]
        assert sorted(skips) == [("not_sgf", f"{path.name}:img.png"), ("not_sgf", f"{path.name}:readme.txt")]


def test_member_over_the_cap(tmp_path):
    members = {"big.sgf": b"(;GM[1]C[" + b"x" * 5000 + b"])", "small.sgf": game(1)}
    for path in (make_zip(tmp_path / "c.zip", members), make_tar(tmp_path / "c.tar.bz2", members, "w:bz2")):
        found, skips = collect([path], max_bytes=1000)
        assert list(found) == [(path.name, "small.sgf")]
        assert skips == [("member_too_large", f"{path.name}:big.sgf")]
    loose = tmp_path / "loose.sgf"
    loose.write_bytes(members["big.sgf"])
    _, skips = collect([loose], max_bytes=1000)
    assert skips == [("too_large", str(loose))]


@pytest.mark.parametrize("name, content", [
    ("junk.zip", b"PK\x03\x04 this is not really a zip"),
    ("junk.tar.gz", b"\x1f\x8b\x08\x00 not really gzip data at all"),
    ("junk.tar.bz2", b"BZh91AY&SY garbage"),
    ("empty.zip", b""),
])
def test_corrupt_archive(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    found, skips = collect([path])
    assert found == {}
    assert [r for r, _ in skips] == ["bad_archive"]


def test_truncated_tar_gz_keeps_what_came_before(tmp_path):
    members = {f"g{i:03d}.sgf": os.urandom(3000) for i in range(30)}  # incompressible: the cut lands late
    whole = make_tar(tmp_path / "whole.tar.gz", members, "w:gz").read_bytes()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    found, skips = collect([cut])
    assert [r for r, _ in skips] == ["bad_archive"]
    assert 0 < len(found) < len(members)
    assert all(members[m] == data for (_, m), data in found.items())  # nothing truncated slips through


def test_damaged_zip_member_spoils_only_itself(tmp_path):
    data = {"a.sgf": os.urandom(4000), "b.sgf": game(2)}
    path = tmp_path / "d.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("a.sgf", data["a.sgf"], compress_type=zipfile.ZIP_DEFLATED)
        zf.writestr("b.sgf", data["b.sgf"], compress_type=zipfile.ZIP_DEFLATED)
    raw = bytearray(path.read_bytes())
    start = raw.index(b"a.sgf") + len("a.sgf") + 100  # inside a.sgf's compressed bytes
    for k in range(start, start + 200):
        raw[k] ^= 0x5A
    path.write_bytes(bytes(raw))
    found, skips = collect([path])
    assert skips == [("bad_archive", "d.zip:a.sgf")]
    assert found == {("d.zip", "b.sgf"): data["b.sgf"]}


def test_missing_path(tmp_path):
    found, skips = collect([tmp_path / "nope.sgf", tmp_path / "nope.zip", tmp_path / "nodir"])
    assert found == {}
    assert [r for r, _ in skips] == ["missing"] * 3


def test_path_traversal_member_is_read_in_memory(tmp_path, monkeypatch):
    evil = {"../../evil.sgf": game(6), "/abs/evil2.sgf": game(7), "ok.sgf": game(8)}
    work = tmp_path / "a" / "b" / "c"
    work.mkdir(parents=True)
    archives = [make_tar(work / "e.tar.gz", evil, "w:gz"), make_zip(work / "e.zip", evil)]
    monkeypatch.chdir(work)
    before = sorted(p for p in tmp_path.rglob("*"))
    for path in archives:
        found, skips = collect([path.name])
        assert skips == []
        by_member = {m: d for (_, m), d in found.items()}
        assert by_member["ok.sgf"] == game(8)
        assert game(6) in by_member.values() and game(7) in by_member.values()
    assert sorted(p for p in tmp_path.rglob("*")) == before  # nothing was written anywhere
    assert not Path("/abs/evil2.sgf").exists()


def test_is_archive():
    for name in ("a.zip", "A.TAR.GZ", "x.tgz", "x.tar.bz2", "x.tar"):
        assert is_archive(name)
    for name in ("a.sgf", "a.gz", "a.txt"):
        assert not is_archive(name)


def test_real_archive_in_three_formats_agree(sample_kgs):
    stems = "KGS-2017_01-19-733-"
    paths = [sample_kgs / f"{stems}{ext}" for ext in (".tar.gz", ".tar.bz2", ".zip")]
    if not all(p.exists() for p in paths):
        pytest.skip("the 2017-01 archive is not there in all three formats")
    sets = []
    for p in paths:
        found, skips = collect([p])
        assert skips == []
        sets.append({m: d for (_, m), d in found.items()})
    assert len(sets[0]) == 733
    assert sets[0] == sets[1] == sets[2]


# --- the fast tar reader against tarfile ------------------------------------------------------------


def _reference(path: Path, max_bytes: int) -> list:
    """What Python's tarfile gives, as iter_sources reports it."""
    from gotk.sources.archives import _tarfile_members

    out: list = []
    try:
        out.extend(_tarfile_members(path, max_bytes))
    except (tarfile.TarError, OSError, EOFError) as e:
        out.append(Skip("bad_archive", path.name, f"{type(e).__name__}: {e}"))
    return out


def _odd_archive(path: Path, fmt: int, mode: str) -> Path:
    """Every kind of entry: long and non-ASCII names (GNU long-name / pax records / ustar prefix),
    folders, links, empty and block-sized members, a non-SGF file and one over the size cap."""
    members = {
        "a.sgf": game(1),
        "d" * 60 + "/" + "e" * 80 + ".sgf": game(3),  # ustar: split into prefix + name
        "kgs/ünïcode 対局.sgf": game(4),
        "empty.sgf": b"",
        "block.sgf": game(5).ljust(512, b" "),
        "two-blocks.sgf": game(6).ljust(1024, b" "),
        "notes.txt": b"not a game",
        "big.sgf": game(7).ljust(5000, b" "),
    }
    if fmt != tarfile.USTAR_FORMAT:  # ustar has no room for a 150-byte name without a "/"
        members["x" * 150 + ".sgf"] = game(2)
    with tarfile.open(path, mode, format=fmt, encoding="utf-8") as tf:
        dinfo = tarfile.TarInfo("kgs")
        dinfo.type = tarfile.DIRTYPE
        tf.addfile(dinfo)
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        for kind, name in ((tarfile.SYMTYPE, "link.sgf"), (tarfile.LNKTYPE, "hard.sgf")):
            info = tarfile.TarInfo(name)
            info.type, info.linkname = kind, "a.sgf"
            tf.addfile(info)
        info = tarfile.TarInfo("last.sgf")
        info.size = len(game(8))
        tf.addfile(info, io.BytesIO(game(8)))
    return path


@pytest.mark.parametrize("fmt", [tarfile.USTAR_FORMAT, tarfile.GNU_FORMAT, tarfile.PAX_FORMAT])
@pytest.mark.parametrize("suffix, mode", [(".tar.gz", "w:gz"), (".tar.bz2", "w:bz2"), (".tar", "w"),
                                          (".tar.xz", "w:xz")])
def test_fast_tar_reader_equals_tarfile(tmp_path, fmt, suffix, mode):
    path = _odd_archive(tmp_path / f"o{suffix}", fmt, mode)
    if suffix == ".tar.xz":  # read as ".tar": the compression is found from the bytes, as tarfile does
        path = path.rename(tmp_path / "o.tar")
    got = list(iter_sources([path], max_bytes=4096))
    assert got == _reference(path, 4096)
    names = [s.member for s in got if isinstance(s, SgfSource)]
    assert names[0] == "a.sgf" and names[-1] == "last.sgf" and "kgs/ünïcode 対局.sgf" in names
    assert Skip("member_too_large", f"{path.name}:big.sgf", "5000 bytes") in got


def test_fast_tar_reader_on_real_archives(sample_kgs):
    from gotk.sources.archives import _fast_tar

    for path in sorted(sample_kgs.glob("KGS-*.tar.*")):
        got = list(_fast_tar(path, 8 << 20))  # the fast reader alone: no fallback to tarfile needed
        assert got == _reference(path, 8 << 20) == list(iter_sources([path])), path.name
        assert len(got) == int(path.name.split("-")[-2]) and all(isinstance(s, SgfSource) for s in got)


def test_concatenated_gzip_streams_and_a_damaged_header(tmp_path):
    one = make_tar(tmp_path / "one.tar", {"a.sgf": game(1), "b.sgf": game(2)}, "w").read_bytes()
    import gzip

    body = one[:4 * 512]  # two headers and two one-block members: no end-of-archive blocks
    two = make_tar(tmp_path / "two.tar", {"c.sgf": game(3)}, "w").read_bytes()
    cat = tmp_path / "cat.tar.gz"
    cat.write_bytes(gzip.compress(body[:700]) + gzip.compress(body[700:] + two))  # split mid-header
    found, skips = collect([cat])
    assert skips == [] and sorted(m for _, m in found) == ["a.sgf", "b.sgf", "c.sgf"]

    bad = bytearray(one)
    bad[512 + 512 + 20] ^= 0xFF  # inside the second member's header (name field): its checksum fails
    damaged = tmp_path / "damaged.tar"
    damaged.write_bytes(bytes(bad))
    found, skips = collect([damaged])
    assert [m for _, m in found] == ["a.sgf"]  # what came before is kept ...
    assert skips == [("bad_archive", "damaged.tar")]  # ... and the damage is reported, not passed over


def test_tar_header_byte_sum_is_the_plain_sum():
    """The tar reader's header checksum sums through Adler-32 (two 256-byte halves): the same as ``sum``."""
    import os

    from gotk.sources.archives import _byte_sum

    for block in [bytes(512), b"\xff" * 512, b"\x80" * 256 + b"\x7f" * 256, *(os.urandom(512) for _ in range(2000))]:
        assert _byte_sum(block) == sum(block)
