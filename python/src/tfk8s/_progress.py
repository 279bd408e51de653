"""What the Keras callback (tfk8s.keras) reports, without TensorFlow: tested alone."""

from __future__ import annotations

from typing import Any

# The scalar tags the tfk8s agent reads from a job's TensorFlow event files.
TOTAL_STEPS_TAG = "tfk8s/total_steps"
STEP_TAG = "tfk8s/step"


def total_steps(params: dict[str, Any]) -> int | None:
    """The step at which Keras' fit ends: epochs x steps per epoch, from the params
    Keras gives its callbacks; None where the input's length is unknown (a dataset
    without a cardinality and no steps_per_epoch)."""
    epochs, steps = params.get("epochs"), params.get("steps")
    if not isinstance(epochs, int) or not isinstance(steps, int) or epochs < 1 or steps < 1:
        return None
    return epochs * steps


def report_every(params: dict[str, Any], every: int | None) -> int:
    """How many batches between two reports of the step: as given, else a tenth of an
    epoch, so that progress moves within an epoch without a write per batch."""
    if every is not None:
        if every < 1:
            raise ValueError(f"every={every}: want 1 or more batches")
        return every
    steps = params.get("steps")
    return max(1, steps // 10) if isinstance(steps, int) else 10


def epoch_scalars(logs: dict[str, Any] | None) -> dict[str, float]:
    """The numbers among the logs Keras gives at an epoch's end (loss, metrics), as
    the scalars the callback writes: the agent keeps a progress record only for a
    program that writes scalars other than tfk8s's own, and shows their last values."""
    out: dict[str, float] = {}
    for name, value in (logs or {}).items():
        try:
            out[name] = float(value)
        except (TypeError, ValueError):
            continue
    return out
