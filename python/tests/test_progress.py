"""What tfk8s.keras.ProgressCallback reports, without TensorFlow (its module imports
it); the callback itself runs in TensorFlow in test_cluster.py."""

from __future__ import annotations

from typing import Any

import pytest

from tfk8s._progress import epoch_scalars, report_every, total_steps


@pytest.mark.parametrize(
    "params, want",
    [
        ({"epochs": 10, "steps": 40, "verbose": 0}, 400),
        ({"epochs": 3, "steps": None}, None),  # a dataset of unknown length
        ({"epochs": 3}, None),
        ({"epochs": 0, "steps": 40}, None),
    ],
)
def test_total_steps(params: dict[str, Any], want: int | None) -> None:
    assert total_steps(params) == want


def test_report_every() -> None:
    assert report_every({"steps": 40}, None) == 4
    assert report_every({"steps": 5}, None) == 1
    assert report_every({"steps": None}, None) == 10
    assert report_every({"steps": 40}, 7) == 7
    with pytest.raises(ValueError, match="every=0"):
        report_every({"steps": 40}, 0)


def test_epoch_scalars() -> None:
    class Scalar:  # as numpy's and TensorFlow's scalars convert
        def __float__(self) -> float:
            return 0.25

    logs = {"loss": 1.5, "accuracy": Scalar(), "lr_schedule": "cosine", "none": None}
    assert epoch_scalars(logs) == {"loss": 1.5, "accuracy": 0.25}
    assert epoch_scalars(None) == {}
