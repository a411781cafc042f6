"""``gotk zero``: runs or resumes a run with the loop its options name."""

from __future__ import annotations

from gotk.zero.options import ZeroOptions


def zero(opts: ZeroOptions, log=print) -> dict:
    """Run or resume ``gotk zero`` (``opts.loop``: actors and a learner, or generations); returns the report."""
    if opts.loop == "actors":
        from gotk.zero.actor_learner import ActorLearnerRun

        return ActorLearnerRun(opts).run(log)
    from gotk.zero.loop import ZeroRun

    return ZeroRun(opts).run(log)



__all__ = ["zero"]
