"""Built-in sample data: two real KGS month archives (2017-01, 2017-02), as the archive site ships them.

Used as the default input of commands so they run with no network; 2017-01 for training and 2017-02
held out, following the split suggested for the KGS data.
"""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent
TRAIN_ARCHIVE = DATA_DIR / "KGS-2017_01-19-733-.tar.bz2"
HELDOUT_ARCHIVE = DATA_DIR / "KGS-2017_02-19-525-.tar.bz2"


def sample_archives() -> list[Path]:
    """Paths of the built-in sample archives."""
    return [TRAIN_ARCHIVE, HELDOUT_ARCHIVE]
