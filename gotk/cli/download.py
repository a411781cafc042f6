"""``gotk download``: fetch KGS archives from the game-records listing (resumable, verified, parallel)."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import typer

from gotk.cli.options import option, with_options
from gotk.sources.listing import DEFAULT_INDEX_URL, FORMATS


def _size(n: int | None) -> str:
    return f"{n:,}" if n is not None else "?"


def _table(rows: list[dict], with_reason: bool) -> None:
    typer.echo(f"{'name':<30} {'year':>4} {'month':>5} {'games':>7} {'size':>12}  status")
    for r in rows:
        month = f"{r['month']:02d}" if r.get("month") else "-"
        line = f"{r['name']:<30} {r['year']:>4} {month:>5} {r['games']:>7,} {_size(r.get('size')):>12}  {r['status']}"
        if with_reason and r.get("reason"):
            line += f"  [{r['reason']}] {r.get('message', '')}"
        typer.echo(line)


def _fail(as_json: bool, reason: str, message: str, code: int) -> None:
    if as_json:
        typer.echo(json.dumps({"error": {"reason": reason, "message": message}}, indent=2))
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


@dataclass(frozen=True)
class FetchOptions:
    """How each file of ``gotk download`` is fetched: retries, timeouts and the size limit."""

    retries: int = option(5, "--retries", help="Extra attempts per file on transient errors.")
    backoff: float = option(1.0, "--backoff", help="First retry delay in seconds (doubles).")
    timeout: float = option(60.0, "--timeout", help="Connect/read timeout in seconds.")
    deadline: float = option(3600.0, "--deadline",
                             help="Seconds one file may take in all, retries included (its .part is kept).")
    max_bytes: int = option(2 << 30, "--max-bytes", help="Largest file accepted, in bytes.")

    def check(self) -> None:
        """The ranges typer checked before these options were one object (a bad one exits 2 in one line)."""
        for name, value, low in (("--retries", self.retries, 0), ("--backoff", self.backoff, 0.0),
                                 ("--timeout", self.timeout, 0.1), ("--deadline", self.deadline, 0.1),
                                 ("--max-bytes", self.max_bytes, 1)):
            if value < low:
                typer.echo(f"error: {name} must be >= {low}, not {value}", err=True)
                raise typer.Exit(2)


@with_options(fetch=FetchOptions)
def download_cmd(
    fetch: FetchOptions,
    index_url: str = typer.Option(DEFAULT_INDEX_URL, "--index-url", help="The game-records listing page."),
    dest: Path = typer.Option(Path("data/kgs"), "--dest", help="Folder for the archives and index.json."),
    fmt: str = typer.Option("tar.gz", "--format", help=f"Preferred format: {'|'.join(FORMATS)}; a month without "
                            "it comes in another (tar.gz, then tar.bz2, then zip)."),
    include: list[str] = typer.Option(None, "--include", help="Only file names matching this glob (repeatable)."),
    since: str = typer.Option(None, "--since", help="First period, YYYY or YYYY-MM (inclusive)."),
    until: str = typer.Option(None, "--until", help="Last period, YYYY or YYYY-MM (inclusive)."),
    jobs: int = typer.Option(4, "--jobs", "-j", min=1, max=32, help="Parallel downloads."),
    dry_run: bool = typer.Option(False, "--dry-run", help="List what would be fetched; download nothing."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of a table."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars or per-file lines on stderr."),
) -> None:
    """Download KGS game-record archives listed on INDEX_URL into DEST.

    Partial files (NAME.part) are resumed with HTTP Range; finished archives are size-checked, read in full
    and hashed before an atomic rename; DEST/index.json records url, size, sha256, games, fetched_at.
    Complete files are skipped on a rerun. Exit code: 0 all fine; 1 a file failed or nothing matched;
    2 the listing could not be used (unreachable, no archive links, bad option).
    """
    from gotk.sources.download import DownloadOptions, download_all, plan_downloads
    from gotk.sources.listing import ListingError, fetch_listing, select_archives

    fetch.check()

    try:
        select_archives([], fmt=fmt, since=since, until=until)  # check the options before any network use
        links = fetch_listing(index_url, timeout=fetch.timeout)
        chosen = select_archives(links, fmt=fmt, include=include or (), since=since, until=until)
    except ListingError as e:
        _fail(as_json, e.reason, str(e), 2)
    if not chosen:
        _fail(as_json, "no_match", f"none of the {len(links)} archive links on {index_url} matches the filters", 1)

    head = {"index_url": index_url, "dest": str(dest), "dry_run": dry_run}
    if dry_run:
        rows = [r.as_dict() for r in plan_downloads(chosen, dest, jobs=jobs)]
        if as_json:
            typer.echo(json.dumps({**head, "files": rows}, indent=2))
        else:
            _table(rows, with_reason=False)
            known = [r["size"] for r in rows if r.get("size") is not None]
            unknown = "" if len(known) == len(rows) else " (some sizes unknown)"
            typer.echo(f"{len(rows)} archives, {sum(r['games'] for r in rows):,} games, "
                       f"{_size(sum(known))} bytes{unknown}")
        return

    progress = not quiet and sys.stderr.isatty()

    def log(res) -> None:
        if not quiet and not progress:
            extra = f" [{res.reason}] {res.message}" if res.status == "failed" else ""
            typer.echo(f"{res.status:<10} {res.name}{extra}", err=True)

    opts = DownloadOptions(jobs=jobs, retries=fetch.retries, backoff=fetch.backoff,
                           timeout=(min(fetch.timeout, 30.0), fetch.timeout), deadline=fetch.deadline,
                           max_bytes=fetch.max_bytes, progress=progress)
    report = download_all(chosen, dest, opts, index_url=index_url, on_done=log)
    d = report.as_dict()
    if as_json:
        typer.echo(json.dumps({**head, **d}, indent=2))
    else:
        _table(d["files"], with_reason=True)
        summary = ", ".join(f"{n} {s}" for s, n in d["summary"].items())
        typer.echo(f"{summary} in {report.seconds:.1f}s -> {dest}")
    if report.failed:
        raise typer.Exit(1)
