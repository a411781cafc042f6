"""``gotk selfplay`` (games of an agent against itself, with search) and ``gotk zero`` (the AlphaGo Zero loop)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from gotk.cli.common import fail
from gotk.selfplay import DEFAULT_ENCODER


def selfplay_cmd(
    out: Path = typer.Option(..., "--out", help="Output folder (a rerun of the same command resumes it)."),
    games: int = typer.Option(..., "--games", help="Games to play."),
    agent: Path = typer.Option(None, "--agent", help="Agent package with policy and value heads."),
    init: str = typer.Option(None, "--init", help="'random': a new randomly initialised network (see --model) "
                             "instead of --agent; it is saved as OUT/agent-init.gotk."),
    size: int = typer.Option(9, "--size", help="Board size."),
    komi: float = typer.Option(7.5, "--komi"),
    visits: int = typer.Option(32, "--visits", help="Simulations of a full search (its positions are recorded)."),
    fast_visits: int = typer.Option(8, "--fast-visits", help="Simulations of a fast search (not recorded)."),
    full_fraction: float = typer.Option(0.25, "--full-fraction", help="Share of moves searched fully (KataGo's "
                                        "playout-cap randomisation; 1: every move)."),
    search: str = typer.Option("gumbel", "--search", help="gumbel (Gumbel AlphaZero, improved-policy targets) or "
                               "puct (Dirichlet noise, visit-count targets)."),
    considered: int = typer.Option(16, "--considered", help="Gumbel: moves sampled at the root."),
    sample_moves: int = typer.Option(None, "--sample-moves", help="Moves sampled from the search's target at the "
                                     "start of a game [size²/8]; later moves are the search's choice."),
    resign_threshold: float = typer.Option(-0.9, "--resign-threshold", help="Resign below this root value..."),
    resign_disabled: float = typer.Option(0.2, "--resign-disabled", help="...except in this share of the games, "
                                          "which measure the false-resignation rate."),
    no_resign: bool = typer.Option(False, "--no-resign", help="Never resign."),
    max_moves: int = typer.Option(None, "--max-moves", help="Score a game after this many moves [2 × size²]."),
    early_pass: bool = typer.Option(False, "--early-pass", help="Pass is a candidate at every move (default: only "
                                    "when no sensible move is left, or to answer a pass)."),
    policy_only: bool = typer.Option(False, "--policy-only", help="No search: moves sampled from the policy, one "
                                     "random move, one position recorded per game (AlphaGo's value data)."),
    temperature: float = typer.Option(1.0, "--temperature", help="Policy-only mode: sampling temperature."),
    workers: int = typer.Option(1, "--workers", help="Processes (each plays --chunk-games games at once)."),
    chunk_games: int = typer.Option(32, "--chunk-games", help="Games played together in a process: the network's "
                                    "batch."),
    executor: str = typer.Option("local", "--executor", help="local or dask (as gotk encode)."),
    scheduler: str = typer.Option(None, "--scheduler", help="Dask scheduler address (tcp://HOST:PORT)."),
    threads: int = typer.Option(None, "--threads", help="torch threads per process [cores / workers]."),
    device: str = typer.Option("auto", "--device", help="cpu, cuda, cuda:N or auto (CUDA when torch sees a GPU); "
                               "the network runs with bf16 autocast on CUDA."),
    seed: int = typer.Option(0, "--seed"),
    model: str = typer.Option("zero", "--model", help="--init random: the network."),
    blocks: int = typer.Option(None, "--blocks", help="--init random: residual blocks."),
    filters: int = typer.Option(None, "--filters", help="--init random: filters."),
    encoder: str = typer.Option(DEFAULT_ENCODER, "--encoder", help="--init random: the input planes."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Play games of an agent against itself with search; write SGF files and a gotk dataset of the positions
    with the search's targets (policy, root value, ownership, score, weight). Exit code 2 on bad options."""
    from gotk.errors import GotkError
    from gotk.selfplay.games import SelfPlayConfig
    from gotk.selfplay.run import INIT_NAME, SelfPlayOptions, new_agent, selfplay

    if (agent is None) == (init is None):
        fail("give --agent FILE or --init random (one of them)")
    if init is not None and init != "random":
        fail(f"--init takes 'random', not {init!r}")
    cfg = SelfPlayConfig(size=size, komi=komi, search=search, visits=visits, fast_visits=fast_visits,
                         full_fraction=full_fraction, considered=considered, sample_moves=sample_moves,
                         resign_threshold=None if no_resign else resign_threshold, resign_disabled=resign_disabled,
                         max_moves=max_moves, policy_only=policy_only, temperature=temperature,
                         early_pass=early_pass)
    try:
        cfg.validate()
        opts = SelfPlayOptions(agent=str(out / INIT_NAME if init is not None else agent), out=str(out), games=games,
                               config=cfg, chunk_games=chunk_games, workers=workers, executor=executor,
                               scheduler=scheduler, seed=seed, threads=threads, device=device).validate()
        if init is not None:
            new_agent(out / INIT_NAME, size, model, encoder, seed, blocks=blocks, filters=filters)

        def progress(rec: dict) -> None:
            typer.echo(f"chunk {rec['chunk']:>5}: {rec['count']} games, {rec['rows']} positions, "
                       f"{rec['seconds']:.1f} s", err=True)

        report = selfplay(opts, progress)
    except GotkError as e:
        fail(str(e))
    if as_json:
        typer.echo(json.dumps(report, indent=2))
        return
    typer.echo(f"games {report['games']:,}  positions {report['positions']:,}  moves {report['moves']:,}  "
               f"({report['chunks_reused']} of {report['chunks']} chunks were done already)")
    if report["positions_per_s"] is not None:
        typer.echo(f"positions/s {report['positions_per_s']:,.1f}  moves/s {report['moves_per_s']:,.1f}  "
                   f"evaluations/s {report['evaluations_per_s']:,.0f}  outside the network "
                   f"{100 * report['outside_network_share']:.1f}%")
    typer.echo(f"black wins {report['black_wins']}  white wins {report['white_wins']}  draws {report['draws']}  "
               f"resigned {report['resigned']}  mean length {report['mean_length']}")
    if report["resign_disabled_games"]:
        rate = report["false_resignation_rate"]
        typer.echo(f"resignation disabled in {report['resign_disabled_games']} games: {report['would_have_resigned']} "
                   f"would have resigned, {report['false_resignations']} of them wrongly"
                   + (f" (false-resignation rate {rate:.3f})" if rate is not None else ""))
    typer.echo(f"dataset: {out}  (gotk inspect {out}; gotk train --data {out})")


def zero_cmd(
    out: Path = typer.Option(..., "--out", help="Run folder (a rerun of the same command resumes it)."),
    size: int = typer.Option(9, "--size", help="Board size."),
    hours: float = typer.Option(None, "--hours", help="Stop after this many hours in all (over resumed sessions)."),
    generations: int = typer.Option(None, "--generations", help="Stop after this many generations in all."),
    loop: str = typer.Option("actors", "--loop", help="actors: self-play actors and a learner at once, evaluation "
                             "after the learning; generations: self-play, training and evaluation in turn."),
    games: int = typer.Option(96, "--games", help="Generations: self-play games per generation."),
    visits: int = typer.Option(32, "--visits", help="Self-play: simulations of a full search."),
    fast_visits: int = typer.Option(8, "--fast-visits", help="Self-play: simulations of a fast search."),
    full_fraction: float = typer.Option(0.25, "--full-fraction", help="Self-play: share of full searches."),
    search: str = typer.Option("gumbel", "--search", help="Self-play search: gumbel or puct."),
    no_resign: bool = typer.Option(False, "--no-resign", help="Self-play games never resign."),
    model: str = typer.Option("zero", "--model", help="The network (a new random one; see --init-agent)."),
    blocks: int = typer.Option(6, "--blocks"),
    filters: int = typer.Option(64, "--filters"),
    encoder: str = typer.Option(DEFAULT_ENCODER, "--encoder", help="Input planes."),
    globals_: bool = typer.Option(True, "--globals/--no-globals", help="The new network takes the komi and the side "
                                  "to move as global inputs (resnet and zero models)."),
    init_agent: Path = typer.Option(None, "--init-agent", help="Start from this agent (policy + value heads) "
                                    "instead of a random network, e.g. a supervised one."),
    window: int = typer.Option(4, "--window", help="Generations: generations of self-play games trained on."),
    window_rows: int = typer.Option(25_000, "--window-rows", help="Actors: the newest self-play rows trained on."),
    min_rows: int = typer.Option(2_000, "--min-rows", help="Actors: rows played before the first training round."),
    reuse: float = typer.Option(4.0, "--reuse", help="Actors: samples trained per new position (the learner "
                                "waits for new rows beyond it)."),
    train_steps: int = typer.Option(300, "--train-steps", help="Training steps per network (a generation, or a "
                                    "learner round between published networks)."),
    batch_size: int = typer.Option(128, "--batch-size"),
    lr: float = typer.Option(None, "--lr", help="Learning rate [the model's default]."),
    optimizer: str = typer.Option(None, "--optimizer", help="Optimizer [the model's default]."),
    carry_optimizer: bool = typer.Option(True, "--carry-optimizer/--fresh-optimizer", help="Each generation's "
                                         "optimizer goes on from the previous one's state (Adam's moments and "
                                         "step count; default), or starts fresh with a warm-up every generation."),
    warmup_steps: int = typer.Option(None, "--warmup-steps", help="Steps over which a fresh optimizer raises the "
                                     "learning rate linearly to --lr (the first generation; every generation "
                                     "with --fresh-optimizer) [min(100, --train-steps)]."),
    gating: bool = typer.Option(False, "--gating/--continuous", help="Gating: a new network replaces the best "
                                "only when it wins --gate of --gating-games; continuous (default): always."),
    gate: float = typer.Option(0.55, "--gate"),
    gating_games: int = typer.Option(20, "--gating-games"),
    eval_games: int = typer.Option(20, "--eval-games", help="Games against each anchor per generation (0: none)."),
    eval_visits: int = typer.Option(None, "--eval-visits", help="Search visits of the networks in evaluation games "
                                    "(with the search they were trained with) [self-play's --visits]."),
    eval_every: int = typer.Option(2, "--eval-every", help="Play the anchors every this many generations."),
    no_aux: bool = typer.Option(False, "--no-aux", help="Train no ownership and score outputs (for comparisons)."),
    value_mix: float = typer.Option(0.0, "--value-mix", help="The value target: (1 - m) x the game's result + m x "
                                    "the search's root value (KataGo's short-term value targets; 0: the result)."),
    threads: int = typer.Option(None, "--threads", help="torch threads of self-play and training [actors: 1 each "
                                "and 1 for the learner; generations: cores]."),
    device: str = typer.Option("auto", "--device", help="Self-play and training: cpu, cuda, cuda:N or auto (CUDA "
                               "when torch sees a GPU)."),
    gnugo_levels: str = typer.Option("1", "--gnugo-levels", help="GNU Go levels played as anchors, comma "
                                     "separated ('' for none; skipped when gnugo is not installed)."),
    workers: int = typer.Option(None, "--workers", help="Self-play processes [actors: one per core; "
                                "generations: 1]."),
    chunk_games: int = typer.Option(48, "--chunk-games", help="Games played together in a process."),
    executor: str = typer.Option("local", "--executor", help="Actors: local processes or dask."),
    scheduler: str = typer.Option(None, "--scheduler", help="Actors: a Dask scheduler tcp://HOST:PORT [a "
                                  "LocalCluster]."),
    calibrate_s: float = typer.Option(60.0, "--calibrate-s", help="Actors: seconds of host calibration at the "
                                      "start of each session, in the report (0: none)."),
    seed: int = typer.Option(0, "--seed"),
) -> None:
    """Run the AlphaGo Zero loop: self-play actors and a learner at once (default), or generations of self-play →
    train → evaluate; writes RUN/report.json, RUN/report.png, the games, the networks and the match reports."""
    from gotk.errors import GotkError
    from gotk.selfplay.games import SelfPlayConfig
    from gotk.zero.options import ZeroOptions
    from gotk.zero.run import zero

    if hours is None and generations is None:
        fail("give --hours H and/or --generations N (the run's budget)")
    try:
        levels = tuple(int(x) for x in gnugo_levels.split(",") if x.strip())
    except ValueError:
        fail(f"--gnugo-levels takes comma-separated integers, not {gnugo_levels!r}")
    if any(not 1 <= lv <= 10 for lv in levels):
        fail("GNU Go levels are 1..10")
    cfg = SelfPlayConfig(size=size, search=search, visits=visits, fast_visits=fast_visits,
                         full_fraction=full_fraction, resign_threshold=None if no_resign else -0.9)
    opts = ZeroOptions(out=str(out), size=size, hours=hours, generations=generations, games=games, selfplay=cfg,
                       model=model, blocks=blocks, filters=filters, encoder=encoder, globals=globals_,
                       init_agent=str(init_agent) if init_agent else None, window=window, train_steps=train_steps,
                       batch_size=batch_size, lr=lr, optimizer=optimizer, carry_optimizer=carry_optimizer,
                       warmup_steps=warmup_steps, gating=gating, gate=gate,
                       gating_games=gating_games, eval_games=eval_games, eval_visits=eval_visits,
                       eval_every=eval_every, aux_targets=not no_aux, threads=threads, device=device,
                       gnugo_levels=levels, workers=workers, chunk_games=chunk_games, seed=seed, loop=loop,
                       reuse=reuse, window_rows=window_rows, min_rows=min_rows, executor=executor,
                       scheduler=scheduler, calibrate_s=calibrate_s, value_mix=value_mix)
    try:
        report = zero(opts, log=lambda line: typer.echo(line, err=True))
    except GotkError as e:
        fail(str(e))
    except ValueError as e:  # the trainer's refusals (one line)
        fail(str(e))
    what = "networks" if report.get("loop") == "actors" else "generations"
    typer.echo(f"{len(report['generations'])} {what} in {report['hours']:.2f} h; report: {out}/report.json, "
               f"{out}/report.png")
    for r in report["ratings"]:
        typer.echo(f"  {r['name']:<12} Elo {r['elo']:>8.1f} ± {r['ci95']:.1f}  ({r['games']} games)")


def zero_eval_cmd(
    run: Path = typer.Argument(..., help="A `gotk zero --loop actors` run folder."),
    games: int = typer.Option(None, "--games", help="Games against each anchor [the run's --eval-games]."),
) -> None:
    """Play the anchors with a run's networks (every --eval-every-th and the last), as the run does after its
    learning; reports already there are kept, so it can follow a run under `nice` and be rerun."""
    from gotk.errors import GotkError
    from gotk.zero.actor_learner import evaluate_run

    try:
        report = evaluate_run(run, games, log=lambda line: typer.echo(line, err=True))
    except GotkError as e:
        fail(str(e))
    for r in report["ratings"]:
        typer.echo(f"  {r['name']:<12} Elo {r['elo']:>8.1f} ± {r['ci95']:.1f}  ({r['games']} games)")


def zero_compare_cmd(
    runs: list[Path] = typer.Argument(..., help="`gotk zero` run folders."),
    out: Path = typer.Option(..., "--out", help="The picture (PNG): Elo against hours, a line per run."),
    label: list[str] = typer.Option(None, "--label", help="A run's name in the table and picture, one per run in "
                                    "order [the folders' names]."),
    match: list[Path] = typer.Option(None, "--match", help="A further `gotk match --json` report, e.g. the runs' "
                                     "networks head to head, named LABEL:net-NNN by its --name / --opponent-name "
                                     "(repeatable)."),
    rename: list[str] = typer.Option(None, "--rename", help="OLD=NEW: a --match report's player name to a run's "
                                     "network, LABEL:net-NNN, for reports made without names (repeatable)."),
    prior_games: float = typer.Option(2.0, "--prior-games", help="Virtual draws of every player against the "
                                      "random player (as in gotk elo)."),
    as_json: bool = typer.Option(False, "--json", help="Print the table as JSON."),
) -> None:
    """Several `gotk zero` runs on one Elo scale (the random player at 0, tied by the anchors they share and any
    head-to-head --match reports), with their curves on one picture."""
    from gotk.cli.common import parse_key_values
    from gotk.errors import GotkError
    from gotk.zero.compare import compare_runs, plot_compare

    names = {old: str(new) for old, new in parse_key_values(rename, "--rename").items()}
    if prior_games < 0:
        fail("--prior-games must be >= 0")
    if out.suffix.lower() != ".png":
        fail(f"--out {out}: the picture is a PNG file (name it *.png)")
    try:
        result = compare_runs(runs, label or None, match or None, names, prior_games)
    except GotkError as e:
        fail(str(e))
    plot_compare(out, result)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
        return
    for run in result["runs"]:
        typer.echo(f"{run['label']} ({run['path']}):")
        for p in run["points"]:
            typer.echo(f"  {p['network']}  {p['hours']:6.2f} h  Elo {p['elo']:8.1f} ± {p['ci95']:.1f}")
    typer.echo("anchors: " + ", ".join(f"{r['name']} {r['elo']:.1f} ± {r['ci95']:.1f}" for r in result["anchors"]))
    typer.echo(f"{result['games']} games; {result['anchor']}; picture: {out}")
