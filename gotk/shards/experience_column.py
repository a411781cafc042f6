"""The shard format's optional **experience** columns: what learning from an agent's own games needs beside the
state (``features``) and the action played (``label``), one value a row (docs/shards.md, "Experience columns").

* ``return`` float32: the game's result from the view of the player who moved (+1 won, −1 lost, 0 a draw or
  no result), or its discounted return ``γ^(T−1−t) · R`` for the move ``t`` of a game of ``T`` moves when the
  writer asked for a discount ``γ`` < 1 (the description's ``discount``);
* ``play_value`` float32: the acting network's value of the position when it played (the mover's view, −1..1; 0
  from a network without a value head), the baseline an actor–critic learner may compare against;
* ``play_prob`` float32: the probability the acting player gave the move it played (0 < p ≤ 1: the behaviour
  policy's, after its temperature, clipping and share of random moves), for off-policy corrections and checks;
* ``opponent`` string: who the mover played against (``self``, an earlier network of the run, an engine).

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
COLUMNS = ("return", "play_value", "play_prob", "opponent")
#: The numeric ones: what a training batch carries (float32, one a row).
NUMBERS = COLUMNS[:3]


def describe(discount: float = 1.0) -> dict:
    """The description stored under the ``gotk`` metadata's ``"experience"``: the columns and the discount γ of
    ``return`` (1: the undiscounted result)."""
    if not 0.0 < discount <= 1.0:
        raise ValueError(f"the discount must be in (0, 1], not {discount}")
    return {"columns": list(COLUMNS), "discount": float(discount)}


def fields() -> list[pa.Field]:
    """The Arrow fields of the experience columns."""
    return [pa.field(name, pa.string() if name == "opponent" else pa.float32(), nullable=False) for name in COLUMNS]


def check_description(desc: dict | None, where: str = "the shard") -> dict | None:
    """``desc`` when it describes the columns this gotk reads (ValueError otherwise); None stays None."""
    if desc is None:
        return None
    if list(desc.get("columns") or ()) != list(COLUMNS):
        raise ValueError(f"{where} lists experience columns {desc.get('columns')}; this gotk reads {list(COLUMNS)}")
    return desc


def experience_columns(values: dict[str, np.ndarray | list], n: int) -> list[pa.Array]:
    """The Arrow arrays of the experience columns of ``n`` rows, checked (ValueError naming the column):
    ``return`` and ``play_value`` finite in [−1, 1], ``play_prob`` in (0, 1], ``opponent`` strings (or one string
    for every row)."""
    missing = [k for k in COLUMNS if k not in values]
    extra = sorted(set(values) - set(COLUMNS))
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
    return out


def decode_experience(batch: pa.Table | pa.RecordBatch) -> dict[str, np.ndarray]:
    """The numeric experience columns of shard rows as float32 ``(N,)`` arrays (``{}`` for rows without them)."""
    if "return" not in batch.schema.names:
        return {}
    return {name: batch.column(name).to_numpy().astype(np.float32, copy=False) for name in NUMBERS}


__all__ = ["COLUMNS", "EXPERIENCE", "NUMBERS", "check_description", "decode_experience", "describe",
           "experience_columns", "fields"]
