"""tfk8s: submit, follow and fetch TensorFlow training jobs on Kubernetes from Python.

    from tfk8s import Client

    c = Client()
    job = c.submit("examples/tensorflow", name="mnist", image="ghcr.io/tfk8s/tensorflow:2.21.0-cpu",
                   ps=2, workers=3, chief=True, artifacts=["checkpoints"],
                   command=["python3", "ps_strategy.py", "--epochs", "2"])
    for line in c.get_job_logs("mnist", follow=True):
        print(line.replica, line.text)
    job = c.wait_for_job_status("mnist", status={"Succeeded"}, timeout=900)

The package runs the tfk8s CLI (the wheel carries it) and reads its JSON, so that
packing, uploads, validation and error messages are the CLI's own.
"""

import warnings
from typing import Any

from ._client import JOB_STATES, Client, find_binary
from ._errors import (
    AccessDenied,
    ClusterUnavailable,
    InvalidJob,
    JobEnded,
    JobExists,
    JobNotFound,
    NotSubmitted,
    StorageNotConfigured,
    Tfk8sError,
    WaitTimeout,
)
from ._types import Artifact, Condition, Job, LogLine, Replica
from ._version import __version__

__all__ = [
    "JOB_STATES",
    "AccessDenied",
    "Artifact",
    "Client",
    "ClusterUnavailable",
    "Condition",
    "InvalidJob",
    "Job",
    "JobEnded",
    "JobExists",
    "JobNotFound",
    "LogLine",
    "NotSubmitted",
    "Replica",
    "StorageNotConfigured",
    "Tfk8sError",
    "WaitTimeout",
    "__version__",
    "find_binary",
]


def __getattr__(name: str) -> Any:
    """tfk8s.TimeoutError, WaitTimeout's name before its rename: kept so that
    a user's `except tfk8s.TimeoutError:` still catches a timeout rather than raising
    AttributeError. Deprecated, and left out of __all__ so that `from tfk8s import *`
    does not shadow the builtin TimeoutError."""
    if name == "TimeoutError":
        warnings.warn("tfk8s.TimeoutError is deprecated: use tfk8s.WaitTimeout",
                      DeprecationWarning, stacklevel=2)
        return WaitTimeout
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
