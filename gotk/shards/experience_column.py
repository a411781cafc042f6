"""The shard format's optional **experience** columns: what learning from an agent's own games needs beside the
state (``features``) and the action played (``label``), one value a row (docs/shards.md, "Experience columns").

* ``return`` float32: the game's result from the view of the player who moved (+1 won, −1 lost, 0 a draw or
  no result), or its discounted return ``γ^(T−1−t) · R`` for the move ``t`` of a game of ``T`` moves when the
  writer asked for a discount ``γ`` < 1 (the description's ``discount``);
* ``play_value`` float32: the acting network's value of the position when it played (the mover's view, −1..1; 0
  from a network without a value head), the baseline an actor–critic learner may compare against;
* ``play_prob`` float32: the probability the acting player gave the move it played (0 < p ≤ 1: the behaviour
  policy's, after its temperature, clipping and share of random moves), for off-policy corrections and checks;
* ``opponent`` string: who the mover played against (``self``, an earlier network of the run, an engine);
* ``choices`` fixed-size binary: the moves the player could choose from (the sensible moves its probabilities were
  renormalised over, ``play_prob`` among them), ``np.packbits`` (big bit order) of a bool per flat move, pass last:
  the policy terms normalise ``π`` over the same moves as ``μ``;
* ``symmetry`` int8: the board symmetry (0..7, :mod:`gotk.datasets.symmetry`) the acting network saw the position
  under; the loader shows the learner the row under the same one, so that ``π / μ`` is 1 for an unchanged network.

Shards written before ``choices`` and ``symmetry`` (the first four columns, :data:`LEGACY_COLUMNS`) are read as
before: ``π`` over every move, a random symmetry.

A shard with them lists them under its ``gotk`` metadata's ``"experience"`` (``{"columns": [...], "discount":
γ}``); they come after the self-play target columns and before the vector columns. :mod:`gotk.shards.format` adds
them to a schema (``shard_schema(..., experience_desc=)``) and a table (``rows_table(..., experience=)``); the
loader hands the three numbers to training batches (:func:`decode_experience`); the objectives of
:mod:`gotk.train.objectives` read them."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

EXPERIENCE = "experience"
#: The experience columns, in their order in a shard.
COLUMNS = ("return", "play_value", "play_prob", "opponent", "choices", "symmetry")
#: The columns of shards written before ``choices`` and ``symmetry`` (still read).
LEGACY_COLUMNS = COLUMNS[:4]
#: The numeric ones: what a training batch carries (float32, one a row).
NUMBERS = COLUMNS[:3]
#: The play-time view of a row: its choices (a bool per move in a batch) and symmetry, where the shards have them.
PLAY_VIEW = COLUMNS[4:]


def describe(discount: float = 1.0, play_view: bool = True) -> dict:
    """The description stored under the ``gotk`` metadata's ``"experience"``: the columns (``play_view`` False:
    :data:`LEGACY_COLUMNS`, without the rows' choices and symmetry) and the discount γ of ``return`` (1: the
    undiscounted result)."""
    if not 0.0 < discount <= 1.0:
        raise ValueError(f"the discount must be in (0, 1], not {discount}")
    return {"columns": list(COLUMNS if play_view else LEGACY_COLUMNS), "discount": float(discount)}


def choices_nbytes(moves: int) -> int:
    """Bytes of one row's ``choices`` for ``moves`` flat moves (size² + 1)."""
    return (moves + 7) // 8


def fields(desc: dict | None = None, moves: int | None = None) -> list[pa.Field]:
    """The Arrow fields of the experience columns ``desc`` lists (None: every one of :data:`COLUMNS`) on a board of
    ``moves`` flat moves (size² + 1; needed for ``choices``)."""
    names = tuple(desc["columns"]) if desc is not None else COLUMNS
    types = {"opponent": pa.string(), "symmetry": pa.int8()}
    if "choices" in names:
        if moves is None:
            raise ValueError("the choices column needs the board's move count")
        types["choices"] = pa.binary(choices_nbytes(moves))
    return [pa.field(name, types.get(name, pa.float32()), nullable=False) for name in names]


def check_description(desc: dict | None, where: str = "the shard") -> dict | None:
    """``desc`` when it describes the columns this gotk reads (:data:`COLUMNS`, or :data:`LEGACY_COLUMNS`;
    ValueError otherwise); None stays None."""
    if desc is None:
        return None
    if tuple(desc.get("columns") or ()) not in (COLUMNS, LEGACY_COLUMNS):
        raise ValueError(f"{where} lists experience columns {desc.get('columns')}; this gotk reads {list(COLUMNS)}")
    return desc


def has_play_view(desc: dict | None) -> bool:
    """Whether shards of this description record each row's choices and symmetry."""
    return desc is not None and tuple(desc["columns"]) == COLUMNS


def experience_columns(values: dict[str, np.ndarray | list], n: int) -> list[pa.Array]:
    """The Arrow arrays of the experience columns of ``n`` rows, checked (ValueError naming the column):
    ``return`` and ``play_value`` finite in [−1, 1], ``play_prob`` in (0, 1], ``opponent`` strings (or one string
    for every row); ``choices`` a bool ``(n, moves)`` array holding each row's move (``label``, given beside them)
    and ``symmetry`` 0..7, both or neither (:data:`LEGACY_COLUMNS`)."""
    names = COLUMNS if "choices" in values or "symmetry" in values else LEGACY_COLUMNS
    missing = [k for k in names if k not in values]
    extra = sorted(set(values) - set(names) - {"label"})
    if missing or extra:
        raise ValueError(f"experience needs exactly {list(COLUMNS)}: missing {missing}, unknown {extra}")
    out: list[pa.Array] = []
    for name in NUMBERS:
        v = np.asarray(values[name], dtype=np.float32)
        if v.shape != (n,):
            raise ValueError(f"experience[{name!r}] must be ({n},), got {v.shape}")
        if not np.isfinite(v).all():
            raise ValueError(f"experience[{name!r}] holds non-finite values")
        low = 0.0 if name == "play_prob" else -1.0
        if v.size and (v.min() < low or v.max() > 1.0 or (name == "play_prob" and v.min() <= 0.0)):
            raise ValueError(f"experience[{name!r}] holds values outside {'(0, 1]' if low == 0 else '[-1, 1]'}")
        out.append(pa.array(v))
    opp = values["opponent"]
    opp = [opp] * n if isinstance(opp, str) else list(opp)
    if len(opp) != n:
        raise ValueError(f"experience['opponent'] has {len(opp)} rows, the table {n}")
    out.append(pa.array(opp, type=pa.string()))
    if names == COLUMNS:
        ch = np.asarray(values["choices"], dtype=bool)
        if ch.ndim != 2 or ch.shape[0] != n:
            raise ValueError(f"experience['choices'] must be ({n}, moves), got {ch.shape}")
        if "label" in values and n and not ch[np.arange(n), np.asarray(values["label"], dtype=np.int64)].all():
            raise ValueError("experience['choices'] leaves out a row's own move")
        packed = np.ascontiguousarray(np.packbits(ch, axis=1, bitorder="big"))
        out.append(pa.FixedSizeBinaryArray.from_buffers(pa.binary(packed.shape[1]), n, [None, pa.py_buffer(packed)]))
        sym = np.asarray(values["symmetry"], dtype=np.int64)
        if sym.shape != (n,) or (n and (sym.min() < 0 or sym.max() > 7)):
            raise ValueError("experience['symmetry'] must be one board symmetry 0..7 a row")
        out.append(pa.array(sym.astype(np.int8)))
    return out


def decode_experience(batch: pa.Table | pa.RecordBatch) -> dict[str, np.ndarray]:
    """The numeric experience columns of shard rows as float32 ``(N,)`` arrays (``{}`` for rows without them), and
    where the rows have them ``choices`` (packed, uint8 ``(N, bytes)``: :func:`unpack_choices`) and ``symmetry``
    (int64 ``(N,)``)."""
    names = batch.schema.names
    if "return" not in names:
        return {}
    out = {name: batch.column(name).to_numpy().astype(np.float32, copy=False) for name in NUMBERS}
    if "choices" in names:
        col = batch.column("choices")
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
        n, w = len(col), col.type.byte_width
        raw = np.frombuffer(col.buffers()[1], dtype=np.uint8, count=(col.offset + n) * w)[col.offset * w:]
        out["choices"] = raw.reshape(n, w)
        out["symmetry"] = batch.column("symmetry").to_numpy().astype(np.int64)
    return out


def unpack_choices(packed: np.ndarray, moves: int) -> np.ndarray:
    """Packed ``choices`` rows ``(N, bytes)`` → bool ``(N, moves)``."""
    return np.unpackbits(packed, axis=1, count=moves, bitorder="big").astype(bool)


__all__ = ["COLUMNS", "EXPERIENCE", "LEGACY_COLUMNS", "NUMBERS", "PLAY_VIEW", "check_description", "choices_nbytes",
           "decode_experience", "describe", "experience_columns", "fields", "has_play_view", "unpack_choices"]
