"""Progress of a run over SGF sources (``gotk encode``, ``gotk export``): tqdm bars on stderr for the games
scanned and the positions written, with rates."""

from __future__ import annotations


class ProgressBars:
    """Two bars, ``games`` and ``positions``; a no-op when not ``enabled`` (``--no-progress``)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        if enabled:
            from tqdm import tqdm

            self.g = tqdm(desc="games", unit=" games", position=0, dynamic_ncols=True, leave=True)
            self.p = tqdm(desc="positions", unit=" pos", position=1, total=0, dynamic_ncols=True, leave=True,
                          unit_scale=True)

    def games(self, n: int) -> None:
        if self.enabled:
            self.g.update(n)

    def add_planned(self, n: int) -> None:
        """``n`` more positions are planned (the positions bar's total grows)."""
        if self.enabled:
            self.p.total += n
            self.p.refresh()

    def planned(self, n: int) -> None:
        """``n`` positions are planned in all."""
        if self.enabled:
            self.p.total = n
            self.p.refresh()

    def rows(self, n: int) -> None:
        if self.enabled:
            self.p.update(n)

    def close(self) -> None:
        if self.enabled:
            self.g.close()
            self.p.close()
