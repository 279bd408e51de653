"""The exceptions of the tfk8s SDK, one per kind of failure the CLI reports."""

from __future__ import annotations

import builtins
import json

from ._types import Job


class Tfk8sError(Exception):
    """A tfk8s command failed; message is the CLI's own error message."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidJob(Tfk8sError, ValueError):
    """The job's parameters, manifest or code directory were refused; nothing was made.

    field names what was refused as the CLI spells it: a flag ("--workers"), "DIR"
    (code_dir), "-f" (the manifest) or a manifest's field path.
    """

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field


class JobNotFound(Tfk8sError, LookupError):
    """The job does not exist (nor, for its files, anything of it in S3)."""


class JobExists(Tfk8sError):
    """A job of that name exists already in the namespace."""


class ClusterUnavailable(Tfk8sError, ConnectionError):
    """No kubeconfig names a cluster, or the cluster's API server does not answer."""


class StorageNotConfigured(Tfk8sError):
    """An S3 setting the call needs (endpoint, bucket, both keys) is set nowhere."""


class AccessDenied(Tfk8sError, PermissionError):
    """The cluster or S3 refused the credentials, or the permission."""


class WaitTimeout(Tfk8sError, builtins.TimeoutError):
    """A wait ran out of time; also the builtin TimeoutError, whose name it does not
    take, so that a module importing it keeps the builtin."""


class JobEnded(Tfk8sError, RuntimeError):
    """wait_for_job_status: the job finished in a state not waited for (Failed)."""

    def __init__(self, message: str, job: Job) -> None:
        super().__init__(message)
        self.job = job


class NotSubmitted(Tfk8sError):
    """submit(from_run=...) without yes=True: the run's record could not be checked
    against the job in the cluster, so nothing was submitted.

    job is the job that would have been, as the record gives it: check it, then submit
    again with yes=True.
    """

    def __init__(self, message: str, job: Job | None = None) -> None:
        super().__init__(message)
        self.job = job


_TYPES: dict[str, type[Tfk8sError]] = {
    "NotFound": JobNotFound,
    "AlreadyExists": JobExists,
    "ClusterUnavailable": ClusterUnavailable,
    "StorageNotConfigured": StorageNotConfigured,
    "AccessDenied": AccessDenied,
    "Timeout": WaitTimeout,
}


def from_stderr(stderr: str, args: list[str], code: int, stdout: str = "") -> Tfk8sError:
    """The exception of a failed command, from the JSON error line it printed last;
    stdout is what it printed before failing (submit's shown job)."""
    for line in reversed(stderr.splitlines()):
        try:
            err = json.loads(line)["error"]
        except (ValueError, KeyError, TypeError):
            continue
        message = err.get("message", "")
        if err.get("type") == "InvalidJob":
            return InvalidJob(message, err.get("field", ""))
        if err.get("type") == "NotSubmitted":
            return NotSubmitted(message, _shown_job(stdout))
        return _TYPES.get(err.get("type", ""), Tfk8sError)(message)
    text = stderr.strip() or f"tfk8s {' '.join(args)}: exit code {code}"
    return Tfk8sError(text)


def _shown_job(stdout: str) -> Job | None:
    """The job a command printed as JSON, or None if it printed none."""
    try:
        return Job.from_manifest(json.loads(stdout))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
