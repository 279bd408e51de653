"""Typed results of the tfk8s SDK, read from the TFJob JSON the CLI prints."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

# The GPU resource tfk8s counts, as the CLI's GPUS column does.
GPU_RESOURCE = "nvidia.com/gpu"

# The states in which a job has finished.
FINISHED_STATES = frozenset({"Succeeded", "Failed"})

# The APIs a TFJob is served under: tfk8s's own, and Kubeflow's, which tfk8s runs too.
TFK8S_API_VERSION = "tfk8s.io/v1alpha1"
KUBEFLOW_GROUP = "kubeflow.org"


# A fraction of a second: Go writes 1 to 9 digits, Python 3.10's fromisoformat reads 3
# or 6.
_FRACTION = re.compile(r"\.(\d+)")


def parse_time(value: str | None) -> datetime | None:
    """A Kubernetes or Go timestamp (RFC 3339, "Z" for UTC) as an aware datetime."""
    if not value:
        return None
    value = _FRACTION.sub(lambda m: "." + m.group(1)[:6].ljust(6, "0"), value.replace("Z", "+00:00"))
    return datetime.fromisoformat(value)


@dataclass(frozen=True)
class Condition:
    """A condition of a job: Created, Running, Restarting, Suspended, Succeeded, Failed."""

    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: datetime | None = None


@dataclass(frozen=True)
class Replica:
    """One replica type of a job (Chief, PS, Worker, Evaluator) and its pods' counts."""

    type: str
    # replicas is how many the job asks for; the others count its pods.
    replicas: int
    active: int = 0
    succeeded: int = 0
    failed: int = 0
    restarts: int = 0
    gpus: int = 0
    image: str = ""


@dataclass(frozen=True)
class Job:
    """A TFJob as the cluster has it (or, for submit's dry_run, as it would be)."""

    name: str
    namespace: str
    # state is the newest of the job's true conditions; "" before the controller saw it.
    state: str
    replicas: list[Replica]
    # gpus is the GPUs the job's replicas ask for, in all.
    gpus: int
    created: datetime | None
    start_time: datetime | None
    completion_time: datetime | None
    conditions: list[Condition]
    # tensorboard_url is the job's TensorBoard inside the cluster, "" without one;
    # tfk8s tensorboard JOB opens it from outside.
    tensorboard_url: str
    # manifest is the TFJob itself, for what the fields above leave out.
    manifest: dict[str, Any] = field(repr=False, compare=False)
    # api_version is the API the job is served under: tfk8s.io/v1alpha1, or
    # kubeflow.org/v1 for a Kubeflow TFJob, which tfk8s runs too.
    api_version: str = TFK8S_API_VERSION

    @property
    def finished(self) -> bool:
        """Whether the job succeeded or failed."""
        return self.state in FINISHED_STATES

    @property
    def is_kubeflow(self) -> bool:
        """Whether the job is a Kubeflow TFJob (kubeflow.org/v1): it has no code, data,
        artifacts, runs or TensorBoard, which are tfk8s.io TFJobs' alone."""
        return self.api_version.startswith(KUBEFLOW_GROUP + "/")

    @property
    def ref(self) -> str:
        """The name every method takes for this job: kubeflow.org/NAME for a Kubeflow
        TFJob, so that it is never taken for a tfk8s.io job of the same name."""
        return f"{KUBEFLOW_GROUP}/{self.name}" if self.is_kubeflow else self.name

    @classmethod
    def from_manifest(cls, obj: dict[str, Any]) -> Job:
        """The job of a TFJob object, as tfk8s get -o json prints it."""
        meta = obj.get("metadata", {})
        spec = obj.get("spec", {})
        status = obj.get("status", {})
        counts = status.get("replicaStatuses", {})
        replicas = []
        for rtype, rspec in spec.get("tfReplicaSpecs", {}).items():
            n = rspec.get("replicas", 1)
            containers = rspec.get("template", {}).get("spec", {}).get("containers", [])
            main = containers[0] if containers else {}
            limits = main.get("resources", {}).get("limits", {})
            c = counts.get(rtype) or {}
            replicas.append(
                Replica(
                    type=rtype,
                    replicas=n,
                    active=c.get("active", 0),
                    succeeded=c.get("succeeded", 0),
                    failed=c.get("failed", 0),
                    restarts=c.get("restarts", 0),
                    gpus=int(limits.get(GPU_RESOURCE, 0)),
                    image=main.get("image", ""),
                )
            )
        conditions = [
            Condition(
                type=c.get("type", ""),
                status=c.get("status", ""),
                reason=c.get("reason", ""),
                message=c.get("message", ""),
                last_transition_time=parse_time(c.get("lastTransitionTime")),
            )
            for c in status.get("conditions", [])
        ]
        return cls(
            name=meta.get("name", ""),
            namespace=meta.get("namespace", ""),
            state=status.get("state", ""),
            replicas=replicas,
            gpus=sum(r.replicas * r.gpus for r in replicas),
            created=parse_time(meta.get("creationTimestamp")),
            start_time=parse_time(status.get("startTime")),
            completion_time=parse_time(status.get("completionTime")),
            conditions=conditions,
            tensorboard_url=(status.get("tensorBoard") or {}).get("url", ""),
            manifest=obj,
            api_version=obj.get("apiVersion") or TFK8S_API_VERSION,
        )


@dataclass(frozen=True)
class LogLine:
    """A line of a replica's log; replica is e.g. "worker-0"."""

    replica: str
    text: str


@dataclass(frozen=True)
class Artifact:
    """A file a job's replica stored in S3; path is relative to the job's files."""

    path: str
    size: int
    modified: datetime | None
