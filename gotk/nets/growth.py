"""A network grown into a larger one that computes the same function (Net2Net's idea: Chen, Goodfellow and Shlens,
*Net2Net: accelerating learning via knowledge transfer*, ICLR 2016), so that a run can switch to more capacity
without losing what the smaller network learnt (``gotk zero --grow``).

For the ``zero`` model (:class:`~gotk.nets.networks.ZeroNet`):

* **wider** (more ``filters``): every old weight is copied into the top-left corner of the new tensor; an old
  channel reads no new one (those weights are 0), so every old channel, and every output, is what it was; the new
  channels start from the new model's own random weights and learn, since the weights that read them get
  gradients. The linear layers over pooled features (mean, then max, of every channel) map the two halves
  separately. The pooled channels of the global-pooling biases (a quarter of the filters) grow the same way.
* **deeper** (more ``blocks``): the new blocks go after the old ones, each with its last batch norm at 0, so that
  a block returns its input (``relu(x + 0) = x`` for the non-negative output of the block before); the every-third
  pooling pattern of the tower is kept.

In eval mode the grown network's outputs equal the old ones' up to float rounding (tests hold it). Models other than
``zero`` do not grow (:data:`GROWABLE`).
"""

from __future__ import annotations

import torch

#: The models that grow, and the hyper-parameters that may grow
GROWABLE = {"zero": ("blocks", "filters")}
#: ZeroNet's linear layers over pooled trunk features ``[mean of C channels, max of C channels]``
_POOLED = ("policy_bias.weight", "pass_fc.weight")


def _copy_into(new: torch.Tensor, old: torch.Tensor, pooled_in: int | None = None) -> None:
    """``old`` copied into ``new``'s leading corner, old outputs reading no new input (weights of 2+ dims); with
    ``pooled_in`` = the old channel count C, the input dimension is ``[mean C, max C]`` of the old and
    ``[mean C', max C']`` of the new."""
    if old.dim() == 0:
        new.copy_(old)
        return
    if old.dim() >= 2:
        new[: old.shape[0]].zero_()  # an old output reads none of the new inputs
    if pooled_in is not None:
        c, c_new = pooled_in, new.shape[1] // 2
        new[: old.shape[0], :c] = old[:, :c]
        new[: old.shape[0], c_new: c_new + c] = old[:, c:]
        return
    new[tuple(slice(0, n) for n in old.shape)] = old


def grow_zero(old: torch.nn.Module, blocks: int, filters: int, seed: int = 0) -> torch.nn.Module:
    """A :class:`~gotk.nets.networks.ZeroNet` of ``blocks`` × ``filters`` that computes what ``old`` computes (module
    docstring); its new weights drawn from ``seed``. ValueError when it would shrink."""
    from gotk.nets.networks import ZeroNet

    old_blocks, old_filters = len(old.blocks), old.stem[0].out_channels
    if blocks < old_blocks or filters < old_filters:
        raise ValueError(f"a network grows, it does not shrink: {old_blocks}x{old_filters} to {blocks}x{filters}")
    torch.manual_seed(seed)
    new = ZeroNet(old.num_planes, old.board_size, old.head, blocks=blocks, filters=filters,
                  num_globals=old.num_globals, num_metadata=old.num_metadata,
                  metadata_channels=old.metadata_channels)
    if old.num_metadata:
        raise ValueError("a network conditioned on metadata does not grow")
    old_pool = max(1, old_filters // 4)
    state, new_state = old.state_dict(), new.state_dict()
    with torch.no_grad():
        for name, t in state.items():
            pooled = old_filters if name in _POOLED else (old_pool if name.endswith("gpool.fc.weight") else None)
            _copy_into(new_state[name], t, pooled)
        for i in range(old_blocks, blocks):  # a new block returns its input
            new_state[f"blocks.{i}.b2.weight"].zero_()
            new_state[f"blocks.{i}.b2.bias"].zero_()
    new.load_state_dict(new_state)
    return new


def grow_agent(src, dst, blocks: int, filters: int, seed: int = 0):
    """The agent file ``src`` grown to ``blocks`` × ``filters`` at ``dst`` (its encoder, search and other records
    kept; ``grown_from`` records the old size). ValueError for a model that does not grow."""
    from gotk.nets.agent import load_agent
    from gotk.nets.agent_file import read_agent_files, save_agent

    meta, _ = read_agent_files(src)
    name = meta["model"]["name"]
    if name not in GROWABLE:
        raise ValueError(f"model {name!r} does not grow (models that do: {', '.join(GROWABLE)})")
    agent = load_agent(src)
    model = grow_zero(agent.model.cpu().eval(), blocks, filters, seed)
    hp = {**meta["model"]["hparams"], "blocks": blocks, "filters": filters}
    keep = {k: v for k, v in meta.items() if k in ("search", "init", "objective")}
    keep["grown_from"] = {"blocks": len(agent.model.blocks), "filters": agent.model.stem[0].out_channels}
    return save_agent(dst, model, name, hp, meta["encoder"], meta.get("data_manifest_sha256"), meta.get("metrics"),
                      extra=keep)


__all__ = ["GROWABLE", "grow_agent", "grow_zero"]
