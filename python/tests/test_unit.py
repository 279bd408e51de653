"""The SDK without a cluster: arguments, dry runs against tfk8s render, errors, import
time."""

from __future__ import annotations

import inspect
import json
import re
import shutil
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import tfk8s
from tfk8s._errors import from_stderr
from tfk8s._submit import SUBMIT_FLAGS

from .conftest import REPO

TRAINER = REPO / "examples" / "trainer"


def test_submit_args(binary: str) -> None:
    c = tfk8s.Client(binary=binary, namespace="team", kubeconfig="/k")
    args, stdin = c.submit_args(
        "code",
        {"workers": 3, "chief": True, "evaluator": False, "env": ["A=1", "B=2"], "artifacts": "ckpt",
         "active_deadline": timedelta(hours=2), "ttl_after_finished": 90, "artifacts_interval": 0.5,
         "restart_policy": "Never", "ps": None},
        ["python3", "train.py", "--lr", "0.1"],
        {"apiVersion": "tfk8s.io/v1alpha1", "kind": "TFJob"},
        True,
    )
    assert args == [
        "submit", "code", "--workers=3", "--chief=true", "--evaluator=false", "--env=A=1", "--env=B=2",
        "--artifacts=ckpt", "--active-deadline=7200s", "--ttl-after-finished=90s", "--artifacts-interval=0.5s",
        "--restart-policy=Never", "-f", "-", "--dry-run", "-o", "json", "--", "python3", "train.py", "--lr", "0.1",
    ]
    assert json.loads(stdin or "") == {"apiVersion": "tfk8s.io/v1alpha1", "kind": "TFJob"}
    assert c.command("list")[:3] == [binary, "--kubeconfig=/k", "--namespace=team"]


def test_positional_arguments_follow_a_dash_dash(binary: str) -> None:
    """Every command line puts "--" before its positional arguments, and submit's DIR,
    which the command follows, cannot read as a flag."""
    c = tfk8s.Client(binary=binary)
    args, _ = c.submit_args("--dry-run", {}, ["python3", "train.py"], None, False)
    assert args == ["submit", "./--dry-run", "-o", "json", "--", "python3", "train.py"]
    args, _ = c.submit_args("/abs/-code", {}, None, None, False)
    assert args[:2] == ["submit", "/abs/-code"]


def test_code_dir_beginning_with_dashes(
    binary: str, offline: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A code directory called "--dry-run" is packed as the job's code, not taken as
    submit's flag (which left the job without code)."""
    monkeypatch.setenv("TFK8S_S3_ENDPOINT", "127.0.0.1:1")  # never dialled by a dry run
    monkeypatch.setenv("TFK8S_S3_BUCKET", "bucket")
    shutil.copytree(TRAINER, tmp_path / "--dry-run")
    monkeypatch.chdir(tmp_path)
    job = tfk8s.Client(binary=binary).submit(
        "--dry-run", name="x", image="python:3.11", command=["python3", "trainer.py"], dry_run=True
    )
    assert job.manifest["spec"]["code"]["source"].startswith("s3://bucket/")


@pytest.mark.parametrize("name", ["--help", "-h", "--all-namespaces"])
def test_names_beginning_with_dashes_are_names(binary: str, offline: Path, name: str) -> None:
    """A job name beginning with "-" reaches tfk8s as a name, which it refuses or looks
    up, never as a flag: --help would print the help, which is no job."""
    c = tfk8s.Client(binary=binary)
    for call in (lambda: c.get_job(name), lambda: c.delete_job(name), lambda: c.list_artifacts("x", name)):
        with pytest.raises(tfk8s.Tfk8sError):
            call()


@pytest.mark.parametrize(
    "kwargs", [{"workers": "3"}, {"workers": True}, {"chief": "yes"}, {"command": "python3 train.py"}]
)
def test_submit_refuses_wrong_types(binary: str, kwargs: dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        tfk8s.Client(binary=binary).submit(name="x", image="i", **kwargs)


def test_submit_documents_every_flag(binary: str) -> None:
    """help(Client.submit) names every keyword, and the keywords are every flag of
    tfk8s submit but those the SDK has its own way for."""
    doc = inspect.getdoc(tfk8s.Client.submit) or ""
    params = list(inspect.signature(tfk8s.Client.submit).parameters)[1:]
    for name in params:
        assert re.search(rf"^    {name}: \S", doc, re.MULTILINE), f"help(Client.submit) does not document {name}"
    help_text = subprocess.run([binary, "submit", "--help"], capture_output=True, text=True, check=True).stdout
    flags = set(re.findall(r"^\s+(?:-\w, )?--([\w-]+)", help_text.split("Global Flags:")[0], re.MULTILINE))
    own = {"dry-run", "follow", "wait", "output", "help", "filename"}
    assert {f.replace("-", "_") for f in flags - own} == set(SUBMIT_FLAGS), "run make generate"
    assert {"code_dir", "command", "manifest", "dry_run"} <= set(params)


# The same job twice: as submit's keywords, and as tfk8s render's flags typed by hand.
SAME_JOB: tuple[dict[str, Any], list[str]] = (
    {"name": "mnist", "image": "python:3.11", "ps": 2, "workers": 3, "chief": True, "evaluator": True,
     "gpus": 1, "cpu": "500m", "memory": "1Gi", "restart_policy": "OnFailure", "backoff_limit": 2,
     "active_deadline": "2h", "ttl_after_finished": timedelta(days=1), "clean_pod_policy": "All",
     "tensorboard": True, "env": ["A=1", "B=two words"], "artifacts": ["checkpoints", "logs"],
     "artifacts_interval": 30, "spread_ps": True, "queue": "team-a", "gpu_type": "NVIDIA-A100",
     "data": "s3://bucket/data/", "expose_storage_credentials": True, "s3_cluster_endpoint": "minio.s3:9000",
     "volume": ["name=scratch,mount=/scratch,size=1Gi"]},
    ["--name", "mnist", "--image", "python:3.11", "--ps", "2", "--workers", "3", "--chief", "--evaluator",
     "--gpus", "1", "--cpu", "500m", "--memory", "1Gi", "--restart-policy", "OnFailure", "--backoff-limit", "2",
     "--active-deadline", "2h", "--ttl-after-finished", "24h", "--clean-pod-policy", "All", "--tensorboard",
     "--env", "A=1", "--env", "B=two words", "--artifacts", "checkpoints", "--artifacts", "logs",
     "--artifacts-interval", "30s", "--spread-ps", "--queue", "team-a", "--gpu-type", "NVIDIA-A100",
     "--data", "s3://bucket/data/", "--expose-storage-credentials", "--s3-cluster-endpoint", "minio.s3:9000",
     "--volume", "name=scratch,mount=/scratch,size=1Gi"],
)


def test_dry_run_is_render(binary: str, offline: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """submit(dry_run=True) prints, byte for byte, what tfk8s render prints for the same
    parameters typed as flags, and returns that job."""
    monkeypatch.setenv("TFK8S_S3_ENDPOINT", "127.0.0.1:1")  # never dialled by a dry run
    monkeypatch.setenv("TFK8S_S3_BUCKET", "bucket")
    kwargs, flags = SAME_JOB
    command = ["python3", "trainer.py", "--steps", "10"]
    c = tfk8s.Client(binary=binary)
    args, stdin = c.submit_args(TRAINER, {k: kwargs[k] for k in kwargs}, command, None, True)
    sdk = c._run(*args, stdin=stdin)
    render = subprocess.run(
        [binary, "render", str(TRAINER), *flags, "-o", "json", "--", *command],
        capture_output=True, text=True, check=True,
    ).stdout
    assert sdk == render
    job = c.submit(TRAINER, **kwargs, command=command, dry_run=True)
    assert job.manifest == json.loads(render)
    assert (job.name, job.namespace, job.state) == ("mnist", "default", "")
    assert [(r.type, r.replicas, r.gpus) for r in job.replicas] == [
        ("Chief", 1, 1), ("Evaluator", 1, 1), ("PS", 2, 0), ("Worker", 3, 1)]
    assert job.gpus == 5


def test_gpus_without_image(binary: str, offline: Path) -> None:
    """gpus and no image: every replica runs in the CUDA image, and gpu_resource takes
    the count from nvidia.com/gpu."""
    c = tfk8s.Client(binary=binary)
    job = c.submit(name="g", gpus=2, gpu_resource="nvidia.com/mig-1g.10gb", command=["python3", "t.py"], dry_run=True)
    (worker,) = [r for r in job.replicas if r.type == "Worker"]
    assert worker.image == "ghcr.io/tfk8s/tensorflow:2.21.0-gpu"
    container = job.manifest["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"nvidia.com/mig-1g.10gb": "2"}
    with pytest.raises(tfk8s.Tfk8sError, match="--image is required"):
        c.submit(name="c", command=["python3", "t.py"], dry_run=True)


def test_manifest_as_dict_or_yaml(binary: str, offline: Path) -> None:
    """A Kubeflow TFJob, as a dict or as YAML text, makes the same job, the keywords
    applied over it."""
    kubeflow = {
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "kf"},
        "spec": {"tfReplicaSpecs": {"worker": {"replicas": 2, "template": {"spec": {"containers": [
            {"name": "tensorflow", "image": "python:3.11", "command": ["python3", "-c", "print(1)"]}]}}}}},
    }
    yaml_text = """apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: kf}
spec:
  tfReplicaSpecs:
    worker:
      replicas: 2
      template:
        spec:
          containers:
          - {name: tensorflow, image: "python:3.11", command: [python3, -c, print(1)]}
"""
    c = tfk8s.Client(binary=binary)
    from_dict = c.submit(manifest=kubeflow, workers=4, dry_run=True)
    from_yaml = c.submit(manifest=yaml_text, workers=4, dry_run=True)
    assert from_dict.manifest == from_yaml.manifest
    assert from_dict.manifest["apiVersion"] == "tfk8s.io/v1alpha1"
    assert [(r.type, r.replicas) for r in from_dict.replicas] == [("Worker", 4)]


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"workers": -1}, "--workers"),
        ({"ps": -2}, "--ps"),
        ({"cpu": "lots"}, "--cpu"),
        ({"env": ["NOEQUALS"]}, "--env"),
        ({"active_deadline": "2x"}, "--active-deadline"),
        ({"name": "Not_A_Name"}, "--name"),
        ({"code_dir": TRAINER, "command": None}, "command"),
        ({"code_dir": "/nonexistent/code"}, "DIR"),
        ({"manifest": "kind: [unclosed"}, "-f"),
        ({"manifest": {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
                        "spec": {"tfReplicaSpecs": {"Foo": {}}}}}, "spec.tfReplicaSpecs.Foo"),
    ],
)
def test_invalid_job_names_the_field(
    binary: str, offline: Path, monkeypatch: pytest.MonkeyPatch, kwargs: dict[str, Any], field: str
) -> None:
    monkeypatch.setenv("TFK8S_S3_ENDPOINT", "127.0.0.1:1")  # never dialled by a dry run
    monkeypatch.setenv("TFK8S_S3_BUCKET", "bucket")
    params: dict[str, Any] = {"name": "x", "image": "python:3.11", "command": ["true"], "dry_run": True} | kwargs
    with pytest.raises(tfk8s.InvalidJob) as refused:
        tfk8s.Client(binary=binary).submit(**params)
    assert refused.value.field == field
    assert str(refused.value)
    assert isinstance(refused.value, tfk8s.Tfk8sError)


def test_storage_not_configured(binary: str, offline: Path) -> None:
    with pytest.raises(tfk8s.StorageNotConfigured, match="no S3 endpoint"):
        tfk8s.Client(binary=binary).submit(TRAINER, name="x", image="i", command=["true"], dry_run=True)


def test_cluster_unavailable_without_kubeconfig(binary: str, offline: Path) -> None:
    c = tfk8s.Client(binary=binary)
    for call in (c.list_jobs, lambda: c.get_job("x"), lambda: list(c.get_job_logs("x", "worker-0", follow=True)),
                 lambda: c.submit(name="x", image="i", command=["true"]), lambda: c.delete_job("x", wait=True),
                 lambda: c.suspend_job("x"), lambda: c.resume_job("x"), lambda: c.list_artifacts("x", "worker-0"),
                 lambda: c.download_artifacts("x", "worker-0", offline.parent / "dest")):
        with pytest.raises(tfk8s.ClusterUnavailable, match=f"no kubeconfig at {offline}"):
            call()


def test_cluster_unavailable_when_refused(binary: str, offline: Path) -> None:
    """A kubeconfig whose API server refuses connections: the cluster is unavailable."""
    offline.write_text("""apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {token: t}}]
current-context: c
""")
    with pytest.raises(tfk8s.ClusterUnavailable, match="connection refused"):
        tfk8s.Client(binary=binary).get_job("x")


def test_import_time() -> None:
    """import tfk8s takes at most 0.3 s, and runs no binary."""
    code = "import time; t = time.perf_counter(); import tfk8s; print(time.perf_counter() - t)"
    src = str(Path(tfk8s.__file__).parents[1])
    took = min(
        float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={"PYTHONPATH": src, "PATH": "/nonexistent"}).stdout)
        for _ in range(3)
    )
    assert took <= 0.3, f"import tfk8s took {took:.3f} s"


def test_not_submitted_carries_the_shown_job() -> None:
    """What tfk8s submit --from-run prints when it shows the run's job instead of
    submitting it (test/integration/cli's TestFromRunTreatsTheRecordAsData checks the
    CLI prints this): NotSubmitted, with the job shown."""
    stderr = ('warning: --from-run rec: ignored namespace "kube-system" in run.json\n'
              '{"error":{"type":"NotSubmitted","message":"--from-run rec: no tfjob team/rec is left to compare'
              ' run.json\'s spec with; the job is shown, not submitted. Check it, then submit it with --yes"}}\n')
    stdout = json.dumps({"metadata": {"name": "rec", "namespace": "team"}, "spec": {"tfReplicaSpecs": {}}})
    err = from_stderr(stderr, ["submit", "--from-run", "rec"], 1, stdout)
    assert isinstance(err, tfk8s.NotSubmitted) and "shown, not submitted" in err.message
    assert err.job is not None and (err.job.name, err.job.namespace) == ("rec", "team")
    unshown = from_stderr(stderr, ["submit"], 1, "not json")
    assert isinstance(unshown, tfk8s.NotSubmitted) and unshown.job is None


def test_wait_timeout_is_both() -> None:
    err = tfk8s.WaitTimeout("slow")
    assert isinstance(err, TimeoutError) and isinstance(err, tfk8s.Tfk8sError)
    assert "TimeoutError" not in tfk8s.__all__, "a star import would shadow the builtin"


def test_timeout_error_is_a_deprecated_alias() -> None:
    """A user's `except tfk8s.TimeoutError:` from before the rename still catches a
    timeout, with a DeprecationWarning, rather than raising AttributeError."""
    with pytest.warns(DeprecationWarning, match="WaitTimeout"):
        alias = tfk8s.TimeoutError
    assert alias is tfk8s.WaitTimeout
    caught = ""
    try:
        raise tfk8s.WaitTimeout("slow")
    except alias as err:
        caught = err.message
    assert caught == "slow"
    with pytest.raises(AttributeError, match="NoSuchName"):
        tfk8s.NoSuchName  # noqa: B018


def test_job_from_manifest() -> None:
    """A TFJob's status, as the API server writes it, read into typed fields."""
    job = tfk8s.Job.from_manifest({
        "metadata": {"name": "mnist", "namespace": "team", "creationTimestamp": "2026-01-02T03:04:05Z"},
        "spec": {"tfReplicaSpecs": {
            "PS": {"replicas": 2, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}},
            "Worker": {"replicas": 3, "template": {"spec": {"containers": [
                {"name": "tensorflow", "image": "tf", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}}},
        }},
        "status": {
            "state": "Succeeded",
            "startTime": "2026-01-02T03:04:06Z",
            "completionTime": "2026-01-02T03:14:06.5Z",
            "conditions": [{"type": "Succeeded", "status": "True", "reason": "JobSucceeded", "message": "done",
                            "lastTransitionTime": "2026-01-02T03:14:06Z"}],
            "replicaStatuses": {"Worker": {"succeeded": 3, "restarts": 1}, "PS": {"active": 1}},
            "tensorBoard": {"serviceName": "mnist-tensorboard", "url": "http://mnist-tensorboard.team:6006", "ready": True},
        },
    })
    assert (job.name, job.namespace, job.state, job.finished, job.gpus) == ("mnist", "team", "Succeeded", True, 6)
    assert job.replicas == [tfk8s.Replica("PS", 2, active=1, image="tf"),
                            tfk8s.Replica("Worker", 3, succeeded=3, restarts=1, gpus=2, image="tf")]
    assert job.conditions[0].type == "Succeeded" and job.conditions[0].last_transition_time is not None
    assert job.completion_time is not None and job.completion_time.microsecond == 500000
    assert job.start_time is not None and job.created is not None and job.created.tzinfo is not None
    assert job.tensorboard_url == "http://mnist-tensorboard.team:6006"


def test_kubeflow_job_from_manifest() -> None:
    """A Kubeflow TFJob, as tfk8s get -o json prints it, is named by its group."""
    manifest = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "kf", "namespace": "team"},
                "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2}}}, "status": {"state": "Running"}}
    job = tfk8s.Job.from_manifest(manifest)
    assert (job.api_version, job.is_kubeflow, job.ref, job.state) == ("kubeflow.org/v1", True, "kubeflow.org/kf", "Running")
    own = tfk8s.Job.from_manifest({**manifest, "apiVersion": "tfk8s.io/v1alpha1"})
    assert (own.is_kubeflow, own.ref) == (False, "kf")
