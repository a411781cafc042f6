"""Parse the KGS game-records listing page and choose which archives to fetch.

The page (https://u-go.net/gamerecords/) links one archive per month (or per year for early years)
in up to three formats. Links may be relative or absolute; the archive file name alone carries the
facts we need: ``KGS-2017_01-19-733-.tar.gz`` is January 2017, 19x19, 733 games, and
``KGS-2001-19-2298-.tar.gz`` is the whole of 2001.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from html.parser import HTMLParser
from posixpath import basename
from urllib.parse import unquote, urljoin, urlsplit

from gotk.errors import GotkError

DEFAULT_INDEX_URL = "https://u-go.net/gamerecords/"
FORMATS = ("tar.gz", "tar.bz2", "zip")
"""Archive formats the site offers, in the default order of preference."""

_NAME_RE = re.compile(
    r"^KGS-(?P<year>\d{4})(?:_(?P<month>\d{2}))?-(?P<board>\d+)-(?P<games>\d+)-\.(?P<fmt>zip|tar\.gz|tar\.bz2)\Z"
)
_PERIOD_RE = re.compile(r"^(?P<year>\d{4})(?:-(?P<month>\d{1,2}))?$")


class ListingError(GotkError):
    """The listing cannot be used: ``index_unreachable``, ``index_http_error``, ``no_archives``, ``bad_period``,
    ``bad_format``."""


@dataclass(frozen=True)
class ArchiveLink:
    """One downloadable archive named on the listing page."""

    name: str
    url: str
    year: int
    month: int | None
    board: int
    games: int
    fmt: str

    @property
    def period(self) -> str:
        """``2017-01`` for a month, ``2001`` for a whole year."""
        return f"{self.year}-{self.month:02d}" if self.month else str(self.year)

    @property
    def stem(self) -> str:
        """The name without its format suffix: the same games in every format share it."""
        return self.name[: -len(self.fmt) - 1]

    def as_dict(self) -> dict:
        return asdict(self)


def parse_archive_name(name: str) -> tuple[int, int | None, int, int, str] | None:
    """``(year, month, board, games, fmt)`` for a KGS archive file name, or None for anything else."""
    m = _NAME_RE.fullmatch(name)
    if m is None:
        return None
    month = int(m["month"]) if m["month"] else None
    if month is not None and not 1 <= month <= 12:
        return None
    return int(m["year"]), month, int(m["board"]), int(m["games"]), m["fmt"]


class _LinkCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            for key, value in attrs:
                if key == "href" and value:
                    self.hrefs.append(value.strip())


def parse_listing(html: str, base_url: str) -> list[ArchiveLink]:
    """Every archive linked from ``html`` (links resolved against ``base_url``), in page order, each URL once.

    Links whose file name is not a KGS archive name are ignored, whatever their text.
    """
    parser = _LinkCollector()
    parser.feed(html)
    parser.close()
    out: list[ArchiveLink] = []
    seen: set[str] = set()
    for href in parser.hrefs:
        url = urljoin(base_url, href)
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            continue
        name = unquote(basename(parts.path))
        info = parse_archive_name(name)
        if info is None:
            continue
        url = parts._replace(fragment="").geturl()
        if url in seen:
            continue
        seen.add(url)
        year, month, board, games, fmt = info
        out.append(ArchiveLink(name, url, year, month, board, games, fmt))
    return out


def fetch_listing(index_url: str, session=None, timeout: float = 30.0) -> list[ArchiveLink]:
    """Fetch and parse the listing page; :class:`ListingError` if unreachable or it links no archive."""
    import requests

    sess = session or requests.Session()
    try:
        resp = sess.get(index_url, timeout=timeout)
    except requests.RequestException as e:
        raise ListingError("index_unreachable", f"{index_url}: {type(e).__name__}: {e}") from e
    if resp.status_code != 200:
        raise ListingError("index_http_error", f"{index_url}: HTTP {resp.status_code} {resp.reason}")
    links = parse_listing(resp.text, resp.url or index_url)
    if not links:
        raise ListingError("no_archives", f"{index_url}: the page links no KGS archive (KGS-YYYY[_MM]-19-N-.ext)")
    return links


def parse_period(text: str, end: bool = False) -> tuple[int, int]:
    """``YYYY`` or ``YYYY-MM`` as ``(year, month)``; a bare year means January, or December when ``end``."""
    m = _PERIOD_RE.match(text.strip())
    if m is None:
        raise ListingError("bad_period", f"{text!r}: expected YYYY or YYYY-MM")
    month = int(m["month"]) if m["month"] else (12 if end else 1)
    if not 1 <= month <= 12:
        raise ListingError("bad_period", f"{text!r}: month must be 01..12")
    return int(m["year"]), month


def format_preference(fmt: str) -> tuple[str, ...]:
    """``fmt`` first, then the others in the default order (tar.gz, tar.bz2, zip)."""
    fmt = fmt.lower().lstrip(".")
    if fmt not in FORMATS:
        raise ListingError("bad_format", f"{fmt!r}: expected one of {', '.join(FORMATS)}")
    return (fmt, *(f for f in FORMATS if f != fmt))


def in_period(link: ArchiveLink, since: tuple[int, int] | None, until: tuple[int, int] | None) -> bool:
    """Month archives compare by (year, month); a whole-year archive is in range if its year is."""
    if link.month is None:
        return (since is None or link.year >= since[0]) and (until is None or link.year <= until[0])
    key = (link.year, link.month)
    return (since is None or key >= since) and (until is None or key <= until)


def select_archives(
    links: Iterable[ArchiveLink],
    fmt: str = "tar.gz",
    include: Sequence[str] = (),
    since: str | None = None,
    until: str | None = None,
) -> list[ArchiveLink]:
    """One link per archive (same stem): the preferred format available, after the filters.

    ``include`` globs match file names (any may match); ``since``/``until`` are ``YYYY[-MM]``, inclusive.
    The result keeps page order.
    """
    prefs = format_preference(fmt)
    lo = parse_period(since) if since else None
    hi = parse_period(until, end=True) if until else None
    best: dict[str, ArchiveLink] = {}
    order: list[str] = []
    for link in links:
        if include and not any(fnmatch.fnmatchcase(link.name, g) for g in include):
            continue
        if not in_period(link, lo, hi):
            continue
        cur = best.get(link.stem)
        if cur is None:
            order.append(link.stem)
            best[link.stem] = link
        elif prefs.index(link.fmt) < prefs.index(cur.fmt):
            best[link.stem] = link
    return [best[s] for s in order]
