"""Hostile archives: each costs a counted skip with its own reason, the good members still come out,
and memory stays bounded whatever a header claims."""

from __future__ import annotations

import bz2
import gzip
import io
import tarfile
import zipfile

import pytest

from gotk.sources.archives import SgfSource, Skip, escape_name, iter_sources, unescape_name

from .conftest import GIB, lying_zip, peak_run


def _items(path):
    return list(iter_sources([path]))


def _good(items):
    return [(i.member, i.data) for i in items if isinstance(i, SgfSource)]


def _reasons(items):
    return sorted(i.reason for i in items if isinstance(i, Skip))


def _tar(path, entries, mode="w:gz"):
    """``entries``: (TarInfo, bytes or None)."""
    with tarfile.open(path, mode, format=tarfile.GNU_FORMAT) as tf:
        for info, data in entries:
            tf.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _info(name, data=b"", **kw):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    for k, v in kw.items():
        setattr(info, k, v)
    return info


def test_lying_zip_member_is_one_skip_and_bounded(tmp_path):
    """A member that declares 2,000 bytes and inflates to 256 MiB is read as a stream,
    stopped at the cap, and counted as member_too_large; a fresh process stays far below the bomb's size."""
    bomb = lying_zip(tmp_path / "bomb.zip", "evil.sgf", 256 << 20, 2000)
    code = ("from gotk.sources.archives import iter_sources\nimport sys\n"
            "result = [[type(i).__name__, getattr(i, 'reason', '')] for i in iter_sources([sys.argv[1]])]")
    result, peak = peak_run(code, str(bomb))
    assert result == [["Skip", "bad_archive"]]  # zipfile stops at the declared size: the CRC then fails
    assert peak < 200, f"peak {peak} MiB for a 256 MiB bomb"


@pytest.mark.slow
def test_two_gib_zip_bomb_replay_bounded(tmp_path):
    """The issue's own case: ~2 GiB behind a 2,000-byte header, through ``gotk replay``: one skip, < 1 GiB."""
    bomb = lying_zip(tmp_path / "bomb.zip", "evil.sgf", 2 * GIB - (100 << 20), 2000)
    code = ("from gotk.stats.replay import replay_paths\nimport sys\n"
            "result = replay_paths([sys.argv[1]]).as_dict()['skipped']")
    result, peak = peak_run(code, str(bomb), timeout=600)
    assert result == {"bad_archive": 1}
    assert peak < 1024


@pytest.mark.parametrize("mode,opener", [("w:gz", gzip.compress), ("w:bz2", bz2.compress)])
def test_compressed_tar_bomb_bounded(tmp_path, mode, opener):
    """A tar whose one member is 96 MiB of zeros (compressed to a few hundred KiB): the member is over the
    cap by its header and skipped while the stream is passed over in bounded chunks."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        info = _info("bomb.sgf")
        info.size = 96 << 20
        tf.addfile(info, io.BytesIO(b"\0" * info.size))
    path = tmp_path / f"bomb.tar.{mode[2:]}"
    path.write_bytes(opener(raw.getvalue()))
    del raw
    code = ("from gotk.sources.archives import iter_sources\nimport sys\n"
            "result = [getattr(i, 'reason', 'sgf') for i in iter_sources([sys.argv[1]])]")
    result, peak = peak_run(code, str(path))
    assert result == ["member_too_large"]
    assert peak < 200, peak


def test_non_utf8_member_names_kept_losslessly(tmp_path, real_games):
    """A latin-1 member name comes out escaped (valid UTF-8, reversible)."""
    (m0, d0), (m1, d1) = real_games[:2]
    path = _tar(tmp_path / "latin.tar.gz", [(_info("caf\udce9.sgf", d0), d0), (_info("back\\slash.sgf", d1), d1)])
    good = _good(_items(path))
    assert [m for m, _ in good] == ["caf\\xe9.sgf", "back\\\\slash.sgf"]
    assert unescape_name(good[0][0]) == b"caf\xe9.sgf"
    assert unescape_name(good[1][0]) == b"back\\slash.sgf"
    for name in ("plain.sgf", "dir/ü.sgf", "a\\xe9"):
        assert unescape_name(escape_name(name)) == name.encode()
        escape_name(name).encode("utf-8")


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "chardev", "fifo"])
def test_links_and_devices_are_counted_not_followed(tmp_path, real_games, kind):
    m0, d0 = real_games[0]
    typ = {"symlink": tarfile.SYMTYPE, "hardlink": tarfile.LNKTYPE, "chardev": tarfile.CHRTYPE,
           "fifo": tarfile.FIFOTYPE}[kind]
    path = _tar(tmp_path / "links.tar.gz", [(_info("good.sgf", d0), d0),
                                            (_info("evil.sgf", type=typ, linkname="/etc/passwd"), None)])
    items = _items(path)
    assert _good(items) == [("good.sgf", d0)]
    assert _reasons(items) == ["not_regular"]


@pytest.mark.parametrize("name", ["../../escape.sgf", "/etc/evil.sgf", "a/../../b.sgf"])
def test_traversal_names_never_leave_memory(tmp_path, real_games, name):
    m0, d0 = real_games[0]
    path = tmp_path / "trav.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(name, d0)
    before = set(tmp_path.parent.rglob("*"))
    assert _good(_items(path)) == [(name, d0)]
    assert set(tmp_path.parent.rglob("*")) == before


def test_nested_archive_and_html_as_archive(tmp_path, good_zip, real_games):
    nested = tmp_path / "outer.zip"
    with zipfile.ZipFile(nested, "w") as zf:
        zf.write(good_zip, "inner.zip")
        zf.writestr(real_games[0][0], real_games[0][1])
    assert _reasons(_items(nested)) == ["nested_archive"]
    html = b"<!DOCTYPE html><html><body>502 Bad Gateway</body></html>\n" * 20
    for suffix in (".zip", ".tar.gz", ".tar.bz2", ".tar"):
        p = tmp_path / f"page{suffix}"
        p.write_bytes(html)
        assert _reasons(_items(p)) == ["bad_archive"], suffix


def test_truncated_archives_keep_the_members_before(tmp_path, real_games):
    path = _tar(tmp_path / "t.tar.gz", [(_info(f"g{i}.sgf", d), d) for i, (_, d) in enumerate(real_games[:6])])
    data = path.read_bytes()
    p = tmp_path / "cut.tar.gz"
    p.write_bytes(data[:len(data) // 2])
    items = _items(p)
    good = _good(items)
    assert 0 < len(good) < 6
    assert good == [(f"g{i}.sgf", d) for i, (_, d) in enumerate(real_games[:len(good)])]
    assert _reasons(items) == ["bad_archive"]
