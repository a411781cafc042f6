"""The eight board symmetries applied to whole batches (features and move labels alike).

Built on :func:`gotk.coords.transform_planes` and :func:`~gotk.coords.symmetry_permutation`,
the one definition of the dihedral group in gotk: symmetry ``s`` maps planes with ``transform_planes(x, s)``
and a flat move index ``p`` to ``symmetry_permutation(size, s)[p]`` (a pass stays a pass).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from gotk.coords import SYMMETRIES, symmetry_permutation, transform_planes

NUM_SYMMETRIES = len(SYMMETRIES)


@lru_cache(maxsize=32)
def label_permutations(size: int) -> np.ndarray:
    """``(8, size*size + 1)`` int64 table: ``table[s, p]`` is where move ``p`` goes under symmetry ``s``."""
    table = np.stack([symmetry_permutation(size, s) for s in range(NUM_SYMMETRIES)])
    table.setflags(write=False)
    return table


def transform_labels(labels: np.ndarray, syms: np.ndarray, size: int) -> np.ndarray:
    """Move labels (flat index, pass = size*size) under per-sample symmetries → int64 array."""
    return label_permutations(size)[np.asarray(syms, dtype=np.intp), np.asarray(labels, dtype=np.intp)]


def apply_symmetries_(features: np.ndarray, syms: np.ndarray) -> np.ndarray:
    """Transform ``features[i]`` (``(B, C, H, W)``, H == W) by symmetry ``syms[i]``, in place.

    Vectorised by grouping the samples that share a symmetry (at most 7 gathers and scatters)."""
    syms = np.asarray(syms)
    if features.shape[0] != syms.shape[0]:
        raise ValueError(f"{features.shape[0]} samples but {syms.shape[0]} symmetries")
    for s in range(1, NUM_SYMMETRIES):
        sel = np.flatnonzero(syms == s)
        if sel.size == features.shape[0]:
            features[...] = transform_planes(features.copy(), s)
        elif sel.size:
            features[sel] = transform_planes(features[sel], s)
    return features
