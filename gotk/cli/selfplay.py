"""``gotk selfplay`` (games of an agent against itself, with search) and ``gotk zero`` (the AlphaGo Zero loop)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import typer

from gotk.cli.common import fail
from gotk.cli.options import default_of, option, with_options
from gotk.search.config import SearchConfig
from gotk.selfplay import DEFAULT_ENCODER
from gotk.selfplay.config import SELFPLAY_SEARCH, SelfPlayConfig, SelfPlayOptions
from gotk.zero.options import ZeroOptions

BOOK_CLIP = 1e-5  # dlgo's clip_probs: no move certain, none impossible
BOOK_RANDOM_MOVES = 0.01  # the book's share of random moves in its policy-gradient games (0.5-1%)


@dataclass(frozen=True)
class GameOptions:
    """How self-play games are played, in ``gotk selfplay`` and ``gotk zero`` alike: the options of
    :class:`gotk.selfplay.games.SelfPlayConfig` (its defaults, and those of self-play's search,
    :data:`gotk.selfplay.games.SELFPLAY_SEARCH`)."""

    size: int = option(default_of(SelfPlayConfig, "size"), "--size", help="Board size.")
    komi: float = option(default_of(SelfPlayConfig, "komi"), "--komi", help="Komi (area scoring).")
    visits: int = option(SELFPLAY_SEARCH["visits"], "--visits",
                         help="Simulations of a full search (its positions are recorded).")
    fast_visits: int = option(default_of(SelfPlayConfig, "fast_visits"), "--fast-visits",
                              help="Simulations of a fast search (not recorded).")
    full_fraction: float = option(default_of(SelfPlayConfig, "full_fraction"), "--full-fraction",
                                  help="Share of moves searched fully (KataGo's playout-cap randomisation; 1: every "
                                  "move).")
    search: str = option(SELFPLAY_SEARCH["search"], "--search", help="gumbel (Gumbel AlphaZero, improved-policy "
                         "targets) or puct (Dirichlet noise, visit-count targets).")
    considered: int = option(default_of(SearchConfig, "considered"), "--considered",
                             help="Gumbel: moves sampled at the root.")
    sample_moves: int | None = option(None, "--sample-moves", help="Moves sampled from the search's target at the "
                                      "start of a game [size²/8]; later moves are the search's choice.")
    resign_threshold: float = option(default_of(SelfPlayConfig, "resign_threshold"), "--resign-threshold",
                                     help="Resign below this root value...")
    resign_disabled: float = option(default_of(SelfPlayConfig, "resign_disabled"), "--resign-disabled",
                                    help="...except in this share of the games, which measure the false-resignation "
                                    "rate.")
    no_resign: bool = option(False, "--no-resign", help="Never resign.")
    max_moves: int | None = option(None, "--max-moves", help="Score a game after this many moves [2 × size²].")
    early_pass: bool = option(False, "--early-pass", help="Pass is a candidate at every move (default: only when no "
                              "sensible move is left, or to answer a pass).")
    policy_only: bool = option(False, "--policy-only", help="No search: moves sampled from the policy, one random "
                               "move, the position after it recorded per game as experience with a value target "
                               "(AlphaGo's value data).")
    temperature: float | None = option(None, "--temperature", help="Policy games: sampling temperature; 0 with "
                                       "--experience plays the most probable move (epsilon-greedy with "
                                       "--random-moves) [1.0; gotk rl --method q: 0].")
    experience: bool = option(False, "--experience", help="Policy games (--policy-only implied) recorded move by "
                              "move as experience (return, value and probability at play time: docs/rl.md) for "
                              "gotk train --objective.")
    clip: float | None = option(None, "--clip", help="--experience: clip each move's probability to [clip, 1 - "
                                "clip] [1e-5, the book's].")
    random_moves: float | None = option(None, "--random-moves", help="--experience: share of uniformly random moves "
                                        "[0.01, the book's 0.5-1%].")
    discount: float = option(default_of(SelfPlayConfig, "discount"), "--discount", help="--experience: the "
                             "return of a move is the result times discount^(moves after it).")

    def config(self, experience: bool = False, greedy: bool = False) -> SelfPlayConfig:
        """The games' :class:`SelfPlayConfig` (:class:`gotk.selfplay.games.SelfPlayError` for a bad value);
        ``experience``: policy games recorded as experience whatever the flags say (``gotk rl``); ``greedy``: the
        temperature, unless given, is 0 (a Q-learner's epsilon-greedy play)."""
        experience = experience or self.experience
        temperature = self.temperature if self.temperature is not None else (
            0.0 if greedy else default_of(SelfPlayConfig, "temperature"))
        book = {"clip": BOOK_CLIP, "random_moves": BOOK_RANDOM_MOVES} if experience else {"clip": 0.0,
                                                                                       "random_moves": 0.0}
        clip = self.clip if self.clip is not None else book["clip"]
        random_moves = self.random_moves if self.random_moves is not None else book["random_moves"]
        return SelfPlayConfig.make(size=self.size, komi=self.komi, search=self.search, visits=self.visits,
                                   fast_visits=self.fast_visits, full_fraction=self.full_fraction,
                                   considered=self.considered, sample_moves=self.sample_moves,
                                   resign_threshold=None if self.no_resign else self.resign_threshold,
                                   resign_disabled=self.resign_disabled, max_moves=self.max_moves,
                                   policy_only=self.policy_only or experience, temperature=temperature,
                                   experience=experience, clip=clip, random_moves=random_moves,
                                   discount=self.discount, early_pass=self.early_pass).validate()


@dataclass(frozen=True)
class SelfPlayRunOptions:
    """Where and how ``gotk selfplay``'s games run (:class:`gotk.selfplay.run.SelfPlayOptions`' defaults), and the
    network ``--init random`` makes."""

    workers: int = option(default_of(SelfPlayOptions, "workers"), "--workers",
                          help="Processes (each plays --chunk-games games at once).")
    chunk_games: int = option(default_of(SelfPlayOptions, "chunk_games"), "--chunk-games",
                              help="Games played together in a process: the network's batch.")
    executor: str = option(default_of(SelfPlayOptions, "executor"), "--executor", help="local or dask (as gotk "
                           "encode).")
    scheduler: str | None = option(None, "--scheduler", help="Dask scheduler address (tcp://HOST:PORT).")
    threads: int | None = option(None, "--threads", help="torch threads per process [cores / workers].")
    device: str = option(default_of(SelfPlayOptions, "device"), "--device", help="cpu, cuda, cuda:N or auto (CUDA "
                         "when torch sees a GPU); the network runs with bf16 autocast on CUDA.")
    seed: int = option(default_of(SelfPlayOptions, "seed"), "--seed", help="The games' random numbers.")
    model: str = option("zero", "--model", help="--init random: the network.")
    blocks: int | None = option(None, "--blocks", help="--init random: residual blocks.")
    filters: int | None = option(None, "--filters", help="--init random: filters.")
    encoder: str = option(DEFAULT_ENCODER, "--encoder", help="--init random: the input planes.")


@with_options(game=GameOptions, run=SelfPlayRunOptions)
def selfplay_cmd(
    game: GameOptions,
    run: SelfPlayRunOptions,
    out: Path = typer.Option(..., "--out", help="Output folder (a rerun of the same command resumes it)."),
    games: int = typer.Option(..., "--games", help="Games to play."),
    agent: Path = typer.Option(None, "--agent", help="Agent package with policy and value heads."),
    init: str = typer.Option(None, "--init", help="'random': a new randomly initialised network (see --model) "
                             "instead of --agent; it is saved as OUT/agent-init.gotk."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Play games of an agent against itself with search; write SGF files and a gotk dataset of the positions
    with the search's targets (policy, root value, ownership, score, weight). Exit code 2 on bad options."""
    from gotk.errors import GotkError
    from gotk.selfplay.run import INIT_NAME, new_agent, selfplay

    if (agent is None) == (init is None):
        fail("give --agent FILE or --init random (one of them)")
    if init is not None and init != "random":
        fail(f"--init takes 'random', not {init!r}")
    try:
        cfg = game.config()
        opts = SelfPlayOptions(agent=str(out / INIT_NAME if init is not None else agent), out=str(out), games=games,
                               config=cfg, chunk_games=run.chunk_games, workers=run.workers, executor=run.executor,
                               scheduler=run.scheduler, seed=run.seed, threads=run.threads,
                               device=run.device).validate()
        if init is not None:
            new_agent(out / INIT_NAME, game.size, run.model, run.encoder, run.seed, blocks=run.blocks,
                      filters=run.filters)

        def progress(rec: dict) -> None:
            typer.echo(f"chunk {rec['chunk']:>5}: {rec['count']} games, {rec['rows']} positions, "
                       f"{rec['seconds']:.1f} s", err=True)

        report = selfplay(opts, progress)
    except GotkError as e:
        fail(str(e))
    if as_json:
        typer.echo(json.dumps(report, indent=2))
        return
    _print_selfplay(report, out)


def _print_selfplay(report: dict, out: Path) -> None:
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


def _zero(name: str):
    return default_of(ZeroOptions, name)


def _rl(name: str):
    from gotk.zero.methods import RL_DEFAULTS

    return RL_DEFAULTS[name]


@dataclass(frozen=True)
class LoopOptions:
    """The loop's own settings (:class:`gotk.zero.options.ZeroOptions`' defaults): its shape, network, training,
    evaluation and where it runs."""

    loop: str = option(_zero("loop"), "--loop", help="actors: self-play actors and a learner at once, evaluation "
                       "after the learning; generations: self-play, training and evaluation in turn.")
    games_per_generation: int = option(_zero("games"), "--games", help="Generations: self-play games per "
                                       "generation.")
    model: str = option(_zero("model"), "--model", help="The network (a new random one; see --init-agent).")
    blocks: int = option(_zero("blocks"), "--blocks", help="Residual blocks of the new network.")
    filters: int = option(_zero("filters"), "--filters", help="Filters of the new network.")
    encoder: str = option(_zero("encoder"), "--encoder", help="Input planes.")
    globals_: bool = option(_zero("globals"), "--globals/--no-globals", help="The new network takes the komi and the "
                            "side to move as global inputs (resnet and zero models).")
    init_agent: Path | None = option(None, "--init-agent", help="Start from this agent instead of a random network, "
                                     "e.g. a supervised one (zero: policy and value heads; rl: the heads its method "
                                     "trains).")
    window: int = option(_zero("window"), "--window", help="Generations: generations of self-play games trained on.")
    window_rows: int | None = option(None, "--window-rows", help="Actors: the newest self-play rows trained on "
                                     f"[zero: {_zero('window_rows')}; rl: {_rl('window_rows')}].")
    min_rows: int | None = option(None, "--min-rows", help="Actors: rows played before the first training round "
                                  f"[zero: {_zero('min_rows')}; rl: {_rl('min_rows')}].")
    window_growth: float = option(_zero("window_growth"), "--window-growth", help="Actors: the window grows with "
                                  "the rows played, by KataGo's power law c(1 + b((rows/c)^a - 1)/a), c = "
                                  "--window-rows, b this, a --window-exponent (0: fixed).")
    window_exponent: float = option(_zero("window_exponent"), "--window-exponent", help="Actors: the growing "
                                    "window's exponent a (KataGo's 0.65).")
    games_per_step: int | None = option(None, "--games-per-step", help="Actors: a learner step over the rows of "
                                        "this many whole new games, each game used once (AlphaGo's RL policy: 128) "
                                        "[a step per batch at --reuse].")
    positions_per_game: int | None = option(None, "--positions-per-game", help="Actors, with --games-per-step: at "
                                            "most this many positions of a game, drawn at random [all].")
    epochs_per_batch: int = option(1, "--epochs-per-batch", help="Actors, with --games-per-step: passes over each "
                                   "round's games.")
    heldout: str | None = option(None, "--heldout", help="Score every published network on these held-out "
                                 "positions (a dataset's test split, or SGF files / archives): top-1, NLL and value "
                                 "MSE in the report, the start's too.")
    heldout_positions: int = option(_zero("heldout_positions"), "--heldout-positions", help="With --heldout: at "
                                    "most this many positions per network (the learner's time).")
    grow: str = option("", "--grow", help="Actors: grow the network at shares of the budget, comma separated "
                       "AT=[MODEL:]BLOCKSxFILTERS (e.g. 0.5=6x64): the same function, more capacity "
                       "(gotk.nets.growth), trained on from there with a fresh optimizer.")
    lr_schedule: str | None = option(None, "--lr-schedule", help="The learning rate over the run's budget: "
                                     "constant, or cosine (down to 0.05 of --lr at the end of --hours or "
                                     f"--generations) [zero: {_zero('lr_schedule')}; rl: {_rl('lr_schedule')}].")
    reuse: float | None = option(None, "--reuse", help="Actors: samples trained per new position (the learner "
                                 f"waits for new rows beyond it) [zero: {_zero('reuse')}; rl: {_rl('reuse')}].")
    train_steps: int | None = option(None, "--train-steps", help="Training steps per network (a generation, or a "
                                     f"learner round between published networks) [zero: {_zero('train_steps')}; "
                                     f"rl: {_rl('train_steps')}].")
    batch_size: int = option(_zero("batch_size"), "--batch-size", help="Training batch.")
    lr: float | None = option(None, "--lr", help="Learning rate [the model's default].")
    optimizer: str | None = option(None, "--optimizer", help="Optimizer [the model's default].")
    carry_optimizer: bool = option(_zero("carry_optimizer"), "--carry-optimizer/--fresh-optimizer",
                                   help="Each generation's optimizer goes on from the previous one's state (Adam's "
                                   "moments and step count; default), or starts fresh with a warm-up every "
                                   "generation.")
    warmup_steps: int | None = option(None, "--warmup-steps", help="Steps over which a fresh optimizer raises the "
                                      "learning rate linearly to --lr (the first generation; every generation with "
                                      "--fresh-optimizer) [min(100, --train-steps)].")
    gating: bool = option(_zero("gating"), "--gating/--continuous", help="Gating: a new network replaces the best "
                          "only when it wins --gate of --gating-games; continuous (default): always.")
    gate: float = option(_zero("gate"), "--gate", help="Gating: the share of games a new network must win.")
    gating_games: int = option(_zero("gating_games"), "--gating-games", help="Gating: games against the best.")
    eval_games: int = option(_zero("eval_games"), "--eval-games", help="Games against each anchor per evaluation "
                             "(0: none).")
    eval_visits: int | None = option(None, "--eval-visits", help="Search visits of the networks in evaluation "
                                     "games (with the search they were trained with) [self-play's --visits].")
    eval_every: int = option(_zero("eval_every"), "--eval-every", help="Play the anchors every this many "
                             "networks.")
    no_aux: bool = option(False, "--no-aux", help="Train no ownership and score outputs (for comparisons).")
    value_mix: float = option(_zero("value_mix"), "--value-mix", help="The value target: (1 - m) x the game's "
                              "result + m x the search's root value (KataGo's short-term value targets; 0: the "
                              "result).")
    threads: int | None = option(None, "--threads", help="torch threads of self-play and training [actors: 1 each "
                                 "and 1 for the learner; generations: cores].")
    device: str = option(_zero("device"), "--device", help="Self-play and training: cpu, cuda, cuda:N or auto (CUDA "
                         "when torch sees a GPU).")
    gnugo_levels: str = option("1", "--gnugo-levels", help="GNU Go levels played as anchors, comma separated ('' "
                               "for none; skipped when gnugo is not installed).")
    gnugo_anchors: str = option("", "--gnugo-anchors", help="Further GNU Go anchors, comma separated: mcN, its Monte "
                                "Carlo mode at N simulations a move (9x9); LhH, level L in handicap games of H stones "
                                "(komi 0.5).")
    workers: int | None = option(None, "--workers", help="Self-play processes [actors: one per core; generations: "
                                 "1].")
    chunk_games: int = option(_zero("chunk_games"), "--chunk-games", help="Games played together in a process.")
    executor: str = option(_zero("executor"), "--executor", help="Actors: local processes or dask.")
    scheduler: str | None = option(None, "--scheduler", help="Actors: a Dask scheduler tcp://HOST:PORT [a "
                                   "LocalCluster].")
    calibrate_s: float = option(_zero("calibrate_s"), "--calibrate-s", help="Actors: seconds of host calibration "
                                "at the start of each session, in the report (0: none).")
    seed: int = option(_zero("seed"), "--seed", help="The run's random numbers.")

    def levels(self) -> tuple[int, ...]:
        """``--gnugo-levels`` as integers (a bad list is a one-line error)."""
        try:
            levels = tuple(int(x) for x in self.gnugo_levels.split(",") if x.strip())
        except ValueError:
            fail(f"--gnugo-levels takes comma-separated integers, not {self.gnugo_levels!r}")
        if any(not 1 <= lv <= 10 for lv in levels):
            fail("GNU Go levels are 1..10")
        return levels


#: LoopOptions fields named otherwise in ZeroOptions
_RENAMED = {"games_per_generation": "games", "globals_": "globals"}


def zero_options(game: GameOptions, run: LoopOptions, method: str = "zero", **given) -> ZeroOptions:
    """The run's :class:`ZeroOptions` from the command line's groups, field by field (a LoopOptions field is the
    ZeroOptions field of its name, :data:`_RENAMED` aside; the flags that are spelt otherwise converted here) and
    ``given`` (out, the budget, a learner's settings). ``method`` (:data:`gotk.zero.methods.METHODS`) says what the
    games record (policy games as experience, or searched games) and the learner settings that ``None`` left to
    it.
    Raises :class:`gotk.errors.GotkError` for a bad value."""
    from dataclasses import asdict

    from gotk.zero.methods import METHODS, RL_DEFAULTS

    values = {_RENAMED.get(k, k): v for k, v in asdict(run).items() if k not in ("no_aux", "gnugo_levels",
                                                                                  "gnugo_anchors", "init_agent",
                                                                                  "grow")}
    values.update(aux_targets=not run.no_aux, gnugo_levels=run.levels(),
                  gnugo_anchors=tuple(a.strip() for a in run.gnugo_anchors.split(",") if a.strip()),
                  grow=tuple(a.strip() for a in run.grow.split(",") if a.strip()),
                  init_agent=str(run.init_agent) if run.init_agent else None)
    recipe = METHODS[method]
    defaults = recipe.defaults or {k: default_of(ZeroOptions, k) for k in RL_DEFAULTS}
    values.update({k: v for k, v in defaults.items() if values.get(k) is None})
    return ZeroOptions(size=game.size, selfplay=game.config(experience=recipe.experience, greedy=recipe.greedy),
                       method=method,
                       **values, **given)


@with_options(game=GameOptions, run=LoopOptions)
def zero_cmd(
    game: GameOptions,
    run: LoopOptions,
    out: Path = typer.Option(..., "--out", help="Run folder (a rerun of the same command resumes it)."),
    hours: float = typer.Option(None, "--hours", help="Stop after this many hours in all (over resumed sessions)."),
    generations: int = typer.Option(None, "--generations", help="Stop after this many networks in all."),
) -> None:
    """Run the AlphaGo Zero loop: self-play actors and a learner at once (default), or generations of self-play →
    train → evaluate; writes RUN/report.json, RUN/report.png, the games, the networks and the match reports."""
    from gotk.errors import GotkError
    from gotk.zero.run import zero

    if hours is None and generations is None:
        fail("give --hours H and/or --generations N (the run's budget)")
    try:
        opts = zero_options(game, run, out=str(out), hours=hours, generations=generations)
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


@dataclass(frozen=True)
class LearnerOptions:
    """What ``gotk rl`` learns and from whom: the method (its objective, gotk.train.objectives) and the opponents
    of the acting network."""

    method: str = option("pg", "--method", help="pg: policy gradient (REINFORCE; AlphaGo's RL policy); ac: "
                         "actor-critic (a policy and a value head); q: Q-learning (an action value per move, "
                         "epsilon-greedy play); exit: expert iteration (the network's searched games, --visits, "
                         "the search's policy its raw policy's target).")
    opponents: str = option("self", "--opponents", help="self: the network plays both colours; pool: the other "
                            "colour is one of the run's networks so far, drawn uniformly each chunk (AlphaGo).")
    baseline: str = option(_zero("baseline"), "--baseline", help="pg: none (the book) | mean (the batch's return) | "
                           "play-value (the value recorded at play time).")
    entropy_weight: float = option(_zero("entropy_weight"), "--entropy-weight", help="ac: the entropy bonus's "
                                   "weight.")
    ratio_clip: float = option(_zero("ratio_clip"), "--ratio-clip", help="pg and ac: clip the ratio of a move's "
                               "probability now to its probability at play time to 1 ± this (PPO's clipped "
                               "surrogate; 0: the plain gradient).")
    kl_target: float | None = option(None, "--kl-target", help="Anchor the learner to its start: KL(pi || "
                                     "pi_start) joins the loss, its weight doubled or halved each round to keep the "
                                     "KL on the probe set near this many nats (PPO's adaptive KL) [none].")
    kl_weight: float = option(_zero("kl_weight"), "--kl-weight", help="With --kl-target: the anchor's weight in "
                              "the first round.")


@with_options(game=GameOptions, run=LoopOptions, learner=LearnerOptions)
def rl_cmd(
    game: GameOptions,
    run: LoopOptions,
    learner: LearnerOptions,
    out: Path = typer.Option(..., "--out", help="Run folder (a rerun of the same command resumes it)."),
    hours: float = typer.Option(None, "--hours", help="Stop after this many hours of learning in all (over resumed "
                                "sessions)."),
    generations: int = typer.Option(None, "--generations", help="Stop after this many networks in all."),
) -> None:
    """Learn from experience: actors play policy games with the newest network (against itself or a pool of its
    earlier versions) recorded move by move, a learner trains on them by policy gradient, actor-critic or
    Q-learning and publishes networks; evaluation against the start and the anchors after the learning. The loop
    of gotk zero (resumable after kill -9, --executor dask, the same report); docs/rl.md."""
    from gotk.errors import GotkError
    from gotk.zero.run import zero

    if hours is None and generations is None:
        fail("give --hours H and/or --generations N (the run's budget)")
    from gotk.zero.methods import RL_METHODS, find_method

    try:
        find_method(learner.method, RL_METHODS)
    except ValueError as e:
        fail(str(e))
    try:
        opts = zero_options(game, run, method=learner.method, out=str(out), hours=hours, generations=generations,
                            opponents=learner.opponents, baseline=learner.baseline,
                            entropy_weight=learner.entropy_weight, ratio_clip=learner.ratio_clip,
                            kl_target=learner.kl_target, kl_weight=learner.kl_weight)
        report = zero(opts, log=lambda line: typer.echo(line, err=True))
    except GotkError as e:
        fail(str(e))
    except ValueError as e:  # the trainer's refusals (one line)
        fail(str(e))
    typer.echo(f"{len(report['generations'])} networks in {report['hours']:.2f} h; report: {out}/report.json, "
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
