"""Listing page parsing and archive selection (``gotk.sources.listing``), on pages shaped like the archive site's
(its three months in three formats and four whole years in tar.gz only)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from conftest import SITE_ROWS, write_listing_pages

from gotk.demo.mirror import LocalMirror
from gotk.sources.listing import (
    ArchiveLink,
    ListingError,
    fetch_listing,
    format_preference,
    parse_archive_name,
    parse_listing,
    parse_period,
    select_archives,
)

BASE = "http://mirror.invalid/gamerecords/"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """A folder holding the site's listing pages (:data:`conftest.SITE_ROWS`)."""
    folder = tmp_path_factory.mktemp("site")
    write_listing_pages(folder, SITE_ROWS)
    return folder


@pytest.fixture(scope="module")
def links(site) -> list[ArchiveLink]:
    return parse_listing((site / "index.html").read_text(encoding="utf-8"), BASE)


def test_parse_archive_name():
    assert parse_archive_name("KGS-2017_01-19-733-.tar.gz") == (2017, 1, 19, 733, "tar.gz")
    assert parse_archive_name("KGS-2001-19-2298-.tar.gz") == (2001, None, 19, 2298, "tar.gz")
    assert parse_archive_name("KGS-2017_03-19-717-.zip") == (2017, 3, 19, 717, "zip")
    assert parse_archive_name("KGS-2017_02-19-525-.tar.bz2") == (2017, 2, 19, 525, "tar.bz2")
    for bad in ("SHA256SUMS", "index.html", "KGS-2017_13-19-1-.zip", "KGS-2017_01-19-733-.rar",
                "KGS-2017_01-19-733.tar.gz", "x/KGS-2001-19-2298-.tar.gz", "KGS-17-19-2-.zip"):
        assert parse_archive_name(bad) is None, bad


def test_relative_links_resolve_against_the_index_url(links, site):
    assert len(links) == 13
    listed = sorted(f"{stem}.{fmt}" for _, _, _, stem, formats in SITE_ROWS for fmt in formats)
    assert sorted(link.name for link in links) == listed
    jan = next(link for link in links if link.name == "KGS-2017_01-19-733-.tar.gz")
    assert jan.url == BASE + "KGS-2017_01-19-733-.tar.gz"
    assert (jan.year, jan.month, jan.board, jan.games, jan.fmt, jan.period) == (2017, 1, 19, 733, "tar.gz", "2017-01")
    y2001 = next(link for link in links if link.year == 2001)
    assert (y2001.month, y2001.games, y2001.period, y2001.stem) == (None, 2298, "2001", "KGS-2001-19-2298-")
    # the index URL may name a page rather than a folder
    again = parse_listing((site / "index.html").read_text(), BASE + "index.html")
    assert [link.url for link in again] == [link.url for link in links]


def test_absolute_links(site, links):
    absolute = parse_listing((site / "index-absolute-links.html").read_text(encoding="utf-8"), BASE)
    assert [link.name for link in absolute] == [link.name for link in links]
    assert all(link.url.startswith("https://dl.u-go.net/gamerecords/KGS-") for link in absolute)


def test_messy_html_any_link_text_and_non_archive_links():
    html = """<HTML><body><table>
    <tr><td><A HREF=KGS-2018_05-19-1046-.tar.gz>download</A>
    <a class=x href='/other/KGS-2018_05-19-1046-.zip'><img src=zip.png></a>
    <a href="KGS-2018_04-19-999-.tar.bz2#top">bz2</a> <a href="KGS-2018_04-19-999-.tar.bz2">again</a>
    <a href="https://dl.example.org/g/KGS-2019-19-5-.tar.gz?x=1">2019</a>
    <a href="readme.txt">KGS-2018_05-19-1046-.tar.gz</a> <a name="anchor">no href</a> <a href="">empty</a>
    <a href="mailto:KGS-2018_05-19-1046-.zip">mail</a> <a href="KGS%2D2016%5F12-19-7-.zip">quoted</a>
    <p>unclosed <b>tags <a href="../up/KGS-2015-19-3-.zip">up
    </body>"""
    got = parse_listing(html, "https://u-go.net/gamerecords/")
    assert [(link.name, link.url) for link in got] == [
        ("KGS-2018_05-19-1046-.tar.gz", "https://u-go.net/gamerecords/KGS-2018_05-19-1046-.tar.gz"),
        ("KGS-2018_05-19-1046-.zip", "https://u-go.net/other/KGS-2018_05-19-1046-.zip"),
        ("KGS-2018_04-19-999-.tar.bz2", "https://u-go.net/gamerecords/KGS-2018_04-19-999-.tar.bz2"),
        ("KGS-2019-19-5-.tar.gz", "https://dl.example.org/g/KGS-2019-19-5-.tar.gz?x=1"),
        ("KGS-2016_12-19-7-.zip", "https://u-go.net/gamerecords/KGS%2D2016%5F12-19-7-.zip"),
        ("KGS-2015-19-3-.zip", "https://u-go.net/up/KGS-2015-19-3-.zip"),
    ]
    assert parse_listing("<html><a href='x.zip'>x</a></html>", BASE) == []


def test_default_selection_is_one_tar_gz_per_archive(links):
    chosen = select_archives(links)
    assert [link.name for link in chosen] == [
        "KGS-2017_03-19-717-.tar.gz", "KGS-2017_02-19-525-.tar.gz", "KGS-2017_01-19-733-.tar.gz",
        "KGS-2006-19-10388-.tar.gz", "KGS-2003-19-7582-.tar.gz", "KGS-2002-19-3646-.tar.gz",
        "KGS-2001-19-2298-.tar.gz",
    ]


def test_format_fallback(links):
    """2001-2006 exist only as tar.gz: asking for zip or tar.bz2 takes tar.gz for those years."""
    zips = select_archives(links, fmt="zip")
    assert {link.name: link.fmt for link in zips} == {
        "KGS-2017_03-19-717-.zip": "zip", "KGS-2017_02-19-525-.zip": "zip", "KGS-2017_01-19-733-.zip": "zip",
        "KGS-2006-19-10388-.tar.gz": "tar.gz", "KGS-2003-19-7582-.tar.gz": "tar.gz",
        "KGS-2002-19-3646-.tar.gz": "tar.gz", "KGS-2001-19-2298-.tar.gz": "tar.gz",
    }
    bz2 = select_archives(links, fmt=".TAR.BZ2")
    assert [link.fmt for link in bz2] == ["tar.bz2"] * 3 + ["tar.gz"] * 4
    # without tar.gz, the fallback order is tar.bz2 before zip
    no_gz = [link for link in links if link.fmt != "tar.gz"]
    assert {link.fmt for link in select_archives(no_gz, fmt="tar.gz")} == {"tar.bz2"}
    assert format_preference("zip") == ("zip", "tar.gz", "tar.bz2")
    with pytest.raises(ListingError, match="bad_format"):
        select_archives(links, fmt="rar")


def test_include_globs(links):
    got = select_archives(links, include=["*2017_0[12]*"])
    assert [link.name for link in got] == ["KGS-2017_02-19-525-.tar.gz", "KGS-2017_01-19-733-.tar.gz"]
    got = select_archives(links, include=["*.zip", "KGS-2001-*"])  # any glob may match; zip chosen among zips
    assert [link.name for link in got] == ["KGS-2017_03-19-717-.zip", "KGS-2017_02-19-525-.zip",
                                           "KGS-2017_01-19-733-.zip", "KGS-2001-19-2298-.tar.gz"]
    assert select_archives(links, include=["nothing*"]) == []


def test_since_until(links):
    def names(**kw):
        return [link.period for link in select_archives(links, **kw)]

    assert names(since="2017-02") == ["2017-03", "2017-02"]
    assert names(since="2017") == ["2017-03", "2017-02", "2017-01"]
    assert names(until="2017-01", since="2006") == ["2017-01", "2006"]
    assert names(since="2002", until="2003") == ["2003", "2002"]
    assert names(until="2016-12") == ["2006", "2003", "2002", "2001"]
    # a whole-year archive is in range when its year is, even if the range starts mid-year
    whole_2017 = ArchiveLink("KGS-2017-19-9-.tar.gz", BASE + "x", 2017, None, 19, 9, "tar.gz")
    assert select_archives([whole_2017], since="2017-06", until="2017-07") == [whole_2017]
    assert select_archives([whole_2017], since="2018") == []


def test_parse_period():
    assert parse_period("2017") == (2017, 1)
    assert parse_period("2017", end=True) == (2017, 12)
    assert parse_period("2017-3") == (2017, 3)
    for bad in ("17", "2017-13", "2017-00", "2017/01", "soon"):
        with pytest.raises(ListingError, match="bad_period"):
            parse_period(bad)


def test_fetch_listing_over_loopback(site, sample_kgs):
    with LocalMirror(site) as url:
        got = fetch_listing(url, timeout=5)  # the folder URL serves index.html
        assert len(got) == 13 and got[0].url == url + "KGS-2017_03-19-717-.zip"
    with LocalMirror(sample_kgs) as url:
        with pytest.raises(ListingError, match="no_archives"):
            fetch_listing(url + "SHA256SUMS", timeout=5)
        with pytest.raises(ListingError, match="index_http_error.*404"):
            fetch_listing(url + "missing.html", timeout=5)


def test_fetch_listing_unreachable():
    with socket.socket() as s:  # a loopback port that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ListingError, match="index_unreachable"):
        fetch_listing(f"http://127.0.0.1:{port}/", timeout=2)
