"""A short host calibration, stored in every ``gotk zero`` session's record, so that runs on different hosts (which
differ by up to ~3x from one day to the next) can be compared: the CPU model and the flags that matter to torch,
the load average, the run's network evaluations per second at batch 32 on one thread, and the search's tree walks
per second outside the network (self-play moves of the run's search, with the network time taken out)."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

FLAGS = ("avx2", "fma", "avx512f", "avx512_bf16", "amx_tile")


def cpu_info() -> dict:
    """The CPU model, the logical cores and which of :data:`FLAGS` the CPU has (Linux; empty elsewhere)."""
    model, flags = None, set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key == "model name" and model is None:
                model = value.strip()
            elif key == "flags" and not flags:
                flags = set(value.split())
    except OSError:
        pass
    return {"cpu_model": model, "cores": os.cpu_count(), "flags": [f for f in FLAGS if f in flags]}


def calibrate(agent_path: str | os.PathLike, config, seconds: float = 60.0) -> dict:
    """Measure the host with the run's network (``agent_path``) and self-play settings (``config``, a
    :class:`gotk.selfplay.games.SelfPlayConfig`) for about ``seconds``, on one torch thread: half of it network
    evaluations at batch 32, half self-play moves (tree walks per second outside the network)."""
    import numpy as np
    import torch

    from gotk.nets.agent import load_agent
    from gotk.selfplay.games import SelfPlayBatch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        out = {**cpu_info(), "load_average": [round(x, 2) for x in os.getloadavg()], "threads": 1,
               "seconds": seconds}
        agent = load_agent(agent_path)
        shape = tuple(int(x) for x in agent.meta["encoder"]["shape"])
        rng = np.random.default_rng(0)
        x = torch.from_numpy((rng.random((32, *shape)) < 0.2).astype(np.uint8))
        glob = torch.zeros(32, agent.num_globals) if agent.num_globals else None
        with torch.inference_mode():
            agent.model(x, glob=glob)  # warm-up
            n, t0 = 0, time.perf_counter()
            while time.perf_counter() - t0 < seconds / 2 or n == 0:
                agent.model(x, glob=glob)
                n += 32
            out["evals_per_s_batch32"] = round(n / (time.perf_counter() - t0), 1)
        cfg = replace(config, max_moves=min(config.move_cap, 12), resign_threshold=None)
        walks = outside = 0.0
        t0, k = time.perf_counter(), 0
        while time.perf_counter() - t0 < seconds / 2 or k == 0:
            batch = SelfPlayBatch(agent, cfg, [(i, k) for i in range(8)], seed=k)
            batch.run()
            walks += batch.evaluations
            outside += batch.seconds - batch.net_seconds
            k += 1
        out["tree_walks_per_s"] = round(walks / outside, 1) if outside > 0 else None
        return out
    finally:
        torch.set_num_threads(threads)


__all__ = ["calibrate", "cpu_info"]
