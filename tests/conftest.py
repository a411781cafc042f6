"""Shared fixtures: the real KGS archives in ``../shared/kgs`` and the built-in sample."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
KGS_DIR = REPO.parent / "shared" / "kgs"


@pytest.fixture(scope="session")
def kgs_dir() -> Path:
    """The folder of real KGS archives beside the checkout; tests using it skip only if it is absent."""
    if not KGS_DIR.is_dir():
        pytest.skip(f"{KGS_DIR} is absent (the shared KGS archives sit beside the checkout in CI)")
    return KGS_DIR


@pytest.fixture(scope="session")
def sample_archive() -> Path:
    """A built-in real KGS archive (2017-02, 525 games) shipped with the package."""
    from gotk.data import HELDOUT_ARCHIVE

    return HELDOUT_ARCHIVE


def archive_slice(archive: Path, folder: Path, count: int) -> Path:
    """The first ``count`` SGF members of a real ``archive``, re-packed as ``folder/slice.zip``."""
    import zipfile

    from gotk.pipeline.sources import SgfSource, iter_sources

    items = [s for s in iter_sources([archive]) if isinstance(s, SgfSource)][:count]
    with zipfile.ZipFile(folder / "slice.zip", "w") as zf:
        for s in items:
            zf.writestr(s.member, s.data)
    return folder / "slice.zip"
