"""The real client: KaTrain's own engine and AI code (the ``katrain`` package from PyPI: ``KataGoEngine``, ``Game``,
``generate_ai_move``, run without its window, as KaTrain's tests run them) drives ``gotk analysis`` as its custom
engine command: the analysis of a position, the default AI, a policy AI, a human-like move as ``rank_5d`` from the
shipped ``kgs-human``, an
ownership-based AI with an agent that has an ownership head, and a ponder query terminated, with no error in
KaTrain's log."""

from __future__ import annotations

import os
import shlex
import sys
import time
from pathlib import Path

import pytest

os.environ.setdefault("KIVY_NO_ARGS", "1")
os.environ.setdefault("KIVY_NO_CONSOLELOG", "1")
os.environ.setdefault("KIVY_NO_FILELOG", "1")

katrain_ai = pytest.importorskip("katrain.core.ai", reason="katrain is not installed (make setup installs it)")
from katrain.core.base_katrain import KaTrainBase  # noqa: E402
from katrain.core.constants import (  # noqa: E402
    AI_DEFAULT,
    AI_HUMAN,
    AI_POLICY,
    AI_SETTLE_STONES,
    AI_SIMPLE_OWNERSHIP,
    OUTPUT_ERROR,
    OUTPUT_KATAGO_STDERR,
)
from katrain.core.engine import KataGoEngine  # noqa: E402
from katrain.core.game import Game  # noqa: E402
from test_analysis_engine import zero_agent  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class Katrain(KaTrainBase):
    """KaTrain's windowless base, its log kept: every line with its level."""

    def __init__(self) -> None:
        self.logged: list[tuple[int, str]] = []
        super().__init__(force_package_config=True, debug_level=0)

    def log(self, message, level=0) -> None:
        self.logged.append((level, str(message)))

    def __call__(self, *args, **kwargs) -> None:  # the GUI's message bus: nothing to show here
        pass

    @property
    def errors(self) -> list[str]:
        return [m for lv, m in self.logged if lv == OUTPUT_ERROR
                or (lv == OUTPUT_KATAGO_STDERR and ("error" in m.lower() or "traceback" in m.lower()))]


def start(katrain: Katrain, *args: str, visits: int = 12) -> KataGoEngine:
    cfg = dict(katrain.config("engine"))
    cmd = " ".join(shlex.quote(a) for a in (sys.executable, "-m", "gotk", "analysis", *args))
    cfg.update(altcommand=f"exec {cmd}", backend="", allow_recovery=False, max_visits=visits, fast_visits=4,
               max_time=20.0)
    return KataGoEngine(katrain, cfg)


def wait(cond, timeout: float = 240) -> None:
    t0 = time.monotonic()
    while not cond():
        assert time.monotonic() - t0 < timeout, "timed out waiting for KaTrain"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def zero9(tmp_path_factory) -> Path:
    return zero_agent(tmp_path_factory.mktemp("katrain") / "zero9.gotk")


def test_katrain_analyses_and_plays_on_gotk() -> None:
    katrain = Katrain()
    engine = start(katrain, "--agent", "kgs", "--human-agent", "kgs-human", "--seed", "1")
    try:
        game = Game(katrain, engine, game_properties={"SZ": 19, "KM": 6.5, "RU": "japanese"})
        root = game.current_node
        wait(lambda: root.analysis_complete)
        assert root.root_visits >= 12 and root.candidate_moves and root.policy is not None
        assert 0 <= root.analysis["root"]["winrate"] <= 1 and "scoreLead" in root.analysis["root"]
        move, node = katrain_ai.generate_ai_move(game, AI_DEFAULT, katrain.config("ai/ai:default"))
        assert move is not None and not move.is_pass and node is game.current_node
        move, node = katrain_ai.generate_ai_move(game, AI_POLICY, katrain.config("ai/ai:policy"))
        assert move is not None and not move.is_pass
        # human-like at 5 dan: KaTrain asks for humanSLProfile rank_5d and samples humanPolicy
        move, node = katrain_ai.generate_ai_move(game, AI_HUMAN, {"human_kyu_rank": -4, "modern_style": True})
        assert move is not None and node is game.current_node and len(game.current_node.nodes_from_root) == 4
        wait(lambda: game.current_node.analysis_complete)
        # pondering: ten million visits until KaTrain stops it; exactly one final answer completes the node
        cn = game.current_node
        cn.analyze(engine, ponder=True, time_limit=False)
        time.sleep(2.0)
        engine.stop_pondering()
        wait(lambda: cn.analysis_complete)
        assert cn.root_visits > 12
        sent = [m for lv, m in katrain.logged if "humanSLProfile" in m and "Sending query" in m]
        assert sent and all('"rank_5d"' in m for m in sent)
        assert any("Human policy found in analysis" in m for lv, m in katrain.logged)
        assert not katrain.errors, katrain.errors
    finally:
        engine.shutdown(finish=False)
    assert engine.katago_process is None or engine.katago_process.poll() is not None


def test_katrain_ownership_ais_on_a_network_with_an_ownership_head(zero9) -> None:
    katrain = Katrain()
    engine = start(katrain, "--agent", str(zero9), "--seed", "2", visits=16)
    try:
        game = Game(katrain, engine, game_properties={"SZ": 9, "KM": 7.0, "RU": "chinese"})
        wait(lambda: game.current_node.analysis_complete)
        # any move may lose points by an untrained score head: take every candidate with its ownership
        settings = {**katrain.config("ai/ai:simple"), "max_points_lost": 1000.0}
        for strategy in (AI_SIMPLE_OWNERSHIP, AI_SETTLE_STONES):
            move, node = katrain_ai.generate_ai_move(game, strategy, settings)
            assert move is not None and node is game.current_node
            wait(lambda: game.current_node.analysis_complete)
            assert all("ownership" in m for m in game.current_node.analysis["moves"].values())
        assert len(game.current_node.analysis["ownership"] or []) == 81
        assert not katrain.errors, katrain.errors
    finally:
        engine.shutdown(finish=False)
