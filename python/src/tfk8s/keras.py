"""A Keras callback that tells tfk8s how far training is.

    from tfk8s.keras import ProgressCallback

    model.fit(dataset, epochs=10, steps_per_epoch=500,
              callbacks=[ProgressCallback("/workspace/model/logs")])

It writes, as TensorFlow summaries in log_dir/train (log_dir among the job's
artifacts, which the tfk8s agent reads), the step at which training ends when it
begins (tfk8s/total_steps: epochs x steps per epoch, from Keras' own params) and the
optimizer's step as it moves (tfk8s/step), and each epoch's loss and metrics. So
the job's status has a known length: kubectl get tfjobs shows its STEP, PROGRESS
and ETA.

This module imports TensorFlow; the rest of the tfk8s package does not.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from ._progress import (
    STEP_TAG,
    TOTAL_STEPS_TAG,
    epoch_scalars,
    report_every,
    total_steps,
)

_tf: Any = importlib.import_module("tensorflow")

__all__ = ["ProgressCallback"]


class ProgressCallback(_tf.keras.callbacks.Callback):  # type: ignore[misc]
    """Reports the total steps when fit begins, the step every `every` batches (a
    tenth of an epoch by default), and the step, loss and metrics at each epoch's
    end, flushed at once."""

    def __init__(self, log_dir: str, every: int | None = None) -> None:
        super().__init__()
        self.log_dir = log_dir
        self.every = every
        self._every = 1
        self._writer: Any = None
        self.total_steps: int | None = None

    def _step(self) -> int:
        return int(self.model.optimizer.iterations.numpy())

    def _write(self, tag: str, value: int) -> None:
        with self._writer.as_default():
            _tf.summary.scalar(tag, value, step=self._step())
        self._writer.flush()

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        self._every = report_every(self.params, self.every)
        self._writer = _tf.summary.create_file_writer(os.path.join(self.log_dir, "train"))
        self.total_steps = total_steps(self.params)
        if self.total_steps is not None:
            self._write(TOTAL_STEPS_TAG, self.total_steps)

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        if (batch + 1) % self._every == 0:
            self._write(STEP_TAG, self._step())

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        with self._writer.as_default():
            for name, value in epoch_scalars(logs).items():
                _tf.summary.scalar(name, value, step=self._step())
        self._write(STEP_TAG, self._step())

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        if self._writer is not None:
            self._writer.close()
