"""``gotk analysis``: KataGo's JSON analysis engine on stdin/stdout (docs/analysis.md)."""

from __future__ import annotations

from pathlib import Path

import typer

from gotk.cli.common import fail


def analysis_cmd(
    agent: str = typer.Option(..., "--agent", help="Agent file (agent.gotk) or built-in agent (kgs) that searches; "
                              "mcts: the search without a network, rollouts as its leaves' values (docs/rollouts.md)."),
    board_size: int | None = typer.Option(None, "--board-size", help="--agent mcts: the board size it answers [the "
                                          "rollout policy's, else 19]."),
    value_agent: Path | None = typer.Option(None, "--value-agent", help="Agent giving the leaves' values (same "
                                            "encoder and board size); default: the agent's own value head."),
    human_agent: str | None = typer.Option(None, "--human-agent", help="Agent conditioned on metadata (kgs-human) "
                                           "that answers humanSLProfile queries with humanPolicy."),
    visits: int = typer.Option(100, "--visits", help="maxVisits of a query that gives none."),
    batch: int | None = typer.Option(None, "--batch", help="Leaves of one position per network call [the agent's "
                                     "own, else 8]; the positions searched at once share each call."),
    c_puct: float | None = typer.Option(None, "--c-puct", help="PUCT exploration constant [the agent's own, "
                                        "else 5.0]."),
    fpu: float | None = typer.Option(None, "--fpu", help="First-play-urgency reduction [the agent's own, else 0]."),
    leaf_lambda: float | None = typer.Option(None, "--lambda", help="The leaf value: 0 the value head, 1 rollouts "
                                             "alone, between them AlphaGo's mix (docs/gtp.md, rollouts) [0]."),
    rollouts: int | None = typer.Option(None, "--rollouts", help="Playouts per leaf where rollouts take part [1]."),
    rollout_policy: str | None = typer.Option(None, "--rollout-policy", help="A fast rollout policy (kgs-rollout, "
                                              "gotk train --model rollout) plays the rollouts [uniform]."),
    max_active: int = typer.Option(16, "--max-active", help="Positions searched at once (their leaves batched "
                                   "into one network call)."),
    max_queued: int = typer.Option(10_000, "--max-queued", help="Positions that may wait; a query past it is "
                                   "answered with an error."),
    max_nodes: int = typer.Option(1_000_000, "--max-nodes", help="Tree rows per position searched (its least "
                                  "visited branches folded past it)."),
    report_as: str = typer.Option("BLACK", "--report-as", help="reportAnalysisWinratesAs of a query that gives "
                                  "none: BLACK, WHITE or SIDETOMOVE."),
    seed: int | None = typer.Option(None, "--seed", help="Seed of the search's random symmetries (the same seed "
                                    "gives gotk gtp's search)."),
    threads: int = typer.Option(0, "--threads", help="torch CPU threads (0: torch's default)."),
    bf16: bool = typer.Option(False, "--bf16", help="Run the networks under bf16 autocast."),
    quit_without_waiting: bool = typer.Option(False, "--quit-without-waiting", help="At the end of input, "
                                              "terminate the positions still queued instead of finishing them."),
) -> None:
    """KataGo's JSON analysis engine: one query a line on stdin, answers on stdout (KaTrain, LizGoban, ...)."""
    from gotk.errors import GotkError
    from gotk.play.factory import build_analysis_engine
    from gotk.search.config import SearchConfig

    report_as = report_as.upper()
    if report_as not in ("BLACK", "WHITE", "SIDETOMOVE"):
        fail(f"--report-as must be BLACK, WHITE or SIDETOMOVE, not {report_as!r}")
    for flag, value in (("--visits", visits), ("--max-active", max_active), ("--max-queued", max_queued)):
        if value < 1:
            fail(f"{flag} must be >= 1, not {value}")
    given = {k: v for k, v in (("batch", batch), ("c_puct", c_puct), ("fpu", fpu), ("leaf_lambda", leaf_lambda),
                               ("rollouts", rollouts)) if v is not None}
    try:
        config = SearchConfig(visits=max(visits, 2), seed=seed, resign_threshold=None, **given).validate()
        config.visits = visits
        engine = build_analysis_engine(agent, config, str(value_agent) if value_agent else None, human_agent,
                              threads=threads or None, amp=bf16, keep=set(given), report_as=report_as,
                              max_active=max_active, max_queued=max_queued, max_nodes=max_nodes,
                              rollout_policy=rollout_policy, board_size=board_size)
    except GotkError as e:
        fail(str(e))
    except ValueError as e:
        fail(str(e))
    engine.log(f"gotk analysis: {agent} on {engine.size}x{engine.size}, ready to begin handling requests")
    engine.serve_stdio(wait_at_end=not quit_without_waiting)
