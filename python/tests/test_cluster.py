"""The SDK against a real cluster: test/e2e's TestPythonSDK brings one up and runs
these with its kubeconfig, S3 settings and image in the environment. Every wait is
bounded: each job gets an active deadline, each wait a timeout."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import tfk8s

from .conftest import REPO

IMAGE = os.environ.get("TFK8S_E2E_IMAGE", "")
TF_IMAGE = os.environ.get("TFK8S_E2E_TF_IMAGE", "")
DENIED_KUBECONFIG = os.environ.get("TFK8S_E2E_DENIED_KUBECONFIG", "")

pytestmark = pytest.mark.skipif(not IMAGE, reason="needs the cluster of test/e2e's TestPythonSDK")

TRAINER = REPO / "examples" / "trainer"
# WAIT bounds each wait for a job; DEADLINE fails a job that hangs, ending any follow.
WAIT = 180
DEADLINE = "4m"
SUSPENDED = {"apiVersion": "tfk8s.io/v1alpha1", "kind": "TFJob", "spec": {"runPolicy": {"suspend": True}}}
PRINT_THREE = ["python3", "-c", "import time\nfor i in range(3):\n    print('line', i, flush=True)\n    time.sleep(0.2)"]


@pytest.fixture
def client(binary: str) -> tfk8s.Client:
    return tfk8s.Client(binary=binary, namespace="default")


def gone(client: tfk8s.Client, name: str) -> bool:
    try:
        client.get_job(name)
    except tfk8s.JobNotFound:
        return True
    return False


def test_job_lifecycle(client: tfk8s.Client, tmp_path: Path) -> None:
    """submit, list_jobs, get_job, get_job_logs (following, then not),
    wait_for_job_status, list_artifacts, download_artifacts and delete_job on a
    distributed job."""
    job = client.submit(
        TRAINER, name="sdk-demo", image=IMAGE, ps=1, workers=2, chief=True, artifacts=["checkpoints"],
        active_deadline=DEADLINE,
        command=["python3", "trainer.py", "--steps", "100", "--model-dir", "/workspace/checkpoints"],
    )
    assert (job.name, job.namespace) == ("sdk-demo", "default")
    assert [(r.type, r.replicas) for r in job.replicas] == [("Chief", 1), ("PS", 1), ("Worker", 2)]
    assert "sdk-demo" in [j.name for j in client.list_jobs()]

    followed = list(client.get_job_logs("sdk-demo", follow=True))
    replicas = {line.replica for line in followed}
    assert {"chief-0", "worker-0", "worker-1"} <= replicas, replicas
    assert any("loss" in line.text for line in followed if line.replica == "chief-0")

    job = client.wait_for_job_status("sdk-demo", timeout=WAIT)
    assert job.state == "Succeeded" and job.finished
    assert job.completion_time is not None and job.start_time is not None
    assert any(c.type == "Succeeded" and c.status == "True" for c in job.conditions)
    assert {r.type: r.succeeded for r in job.replicas}["Chief"] == 1
    assert client.get_job("sdk-demo").state == "Succeeded"

    chief = list(client.get_job_logs("sdk-demo", "chief-0"))
    assert chief and {line.replica for line in chief} == {"chief-0"}

    files = client.list_artifacts("sdk-demo")
    paths = {f.path for f in files}
    assert any(p.startswith("chief-0/artifacts/") for p in paths), paths
    assert any(p.startswith("chief-0/attempts/1/logs/") for p in paths), paths
    assert all(f.size >= 0 and f.modified is not None for f in files)
    dest = client.download_artifacts("sdk-demo", "chief-0", tmp_path / "out")
    downloaded = {p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()}
    assert any(p.startswith(("chief-0/artifacts/", "artifacts/")) for p in downloaded), downloaded

    client.delete_job("sdk-demo", wait=True)
    assert gone(client, "sdk-demo")

    # The job is gone, so its run's record cannot be checked: shown, not submitted.
    with pytest.raises(tfk8s.NotSubmitted) as shown:
        client.submit(from_run="sdk-demo")
    assert "shown, not submitted" in shown.value.message
    assert shown.value.job is not None and shown.value.job.name == "sdk-demo"
    assert gone(client, "sdk-demo")


def test_follow_waits_for_pods_not_yet_created(client: tfk8s.Client, monkeypatch: pytest.MonkeyPatch) -> None:
    """Following the logs of a suspended job, which has no pods, waits for them rather
    than returning nothing: resumed from another thread once the iterator has started
    the CLI, the job's pods are created and their lines come through."""
    client.submit(name="sdk-later", image=IMAGE, workers=1, manifest=SUSPENDED, active_deadline=DEADLINE,
                  command=PRINT_THREE)
    try:
        job = client.wait_for_job_status("sdk-later", {"Suspended"}, timeout=WAIT)
        assert [(r.type, r.active) for r in job.replicas] == [("Worker", 0)], job.replicas

        # The iterator runs tfk8s logs --follow on its first next(): the spy says when.
        following = threading.Event()
        command = client.command

        def spy(*args: str) -> list[str]:
            if args[:1] == ("logs",):
                following.set()
            return command(*args)

        monkeypatch.setattr(client, "command", spy)
        errors: list[Exception] = []

        def resume_once_following() -> None:
            try:
                assert following.wait(WAIT), "get_job_logs did not run tfk8s logs"
                client.resume_job("sdk-later")
            except (AssertionError, tfk8s.Tfk8sError) as e:  # reported by the test's thread
                errors.append(e)
                client.delete_job("sdk-later")  # which ends the follow

        resumer = threading.Thread(target=resume_once_following, daemon=True)
        resumer.start()
        lines = [(line.replica, line.text) for line in client.get_job_logs("sdk-later", follow=True)]
        resumer.join(timeout=WAIT)
        assert not errors, errors
        # The job stores in S3, so its agent runs the command and says so on the same
        # stream: the program's own lines are the others.
        program = [line for line in lines if not line[1].startswith("tfk8s-agent: ")]
        assert program == [("worker-0", f"line {i}") for i in range(3)], lines
        assert client.wait_for_job_status("sdk-later", timeout=WAIT).state == "Succeeded"
    finally:
        with contextlib.suppress(tfk8s.JobNotFound):  # the resumer's failure deleted it
            client.delete_job("sdk-later")


def test_suspend_and_wait_errors(client: tfk8s.Client) -> None:
    """suspend_job and resume_job; a name taken; a wait that runs out of time; a job
    that fails while its success is waited for."""
    client.submit(name="sdk-pause", image=IMAGE, workers=1, manifest=SUSPENDED, active_deadline=DEADLINE,
                  command=["python3", "-c", "import time; time.sleep(600)"])
    try:
        with pytest.raises(tfk8s.JobExists):
            client.submit(name="sdk-pause", image=IMAGE, workers=1, command=["true"])
        client.wait_for_job_status("sdk-pause", {"Suspended"}, timeout=WAIT)
        with pytest.raises(tfk8s.WaitTimeout):
            client.wait_for_job_status("sdk-pause", timeout=1, polling_interval=0.2)
        client.resume_job("sdk-pause")
        client.wait_for_job_status("sdk-pause", {"Running"}, timeout=WAIT)
        client.suspend_job("sdk-pause")
        assert client.wait_for_job_status("sdk-pause", {"Suspended"}, timeout=WAIT).state == "Suspended"
    finally:
        client.delete_job("sdk-pause")

    client.submit(name="sdk-fail", image=IMAGE, workers=1, restart_policy="Never", active_deadline=DEADLINE,
                  command=["python3", "-c", "raise SystemExit(3)"])
    try:
        with pytest.raises(tfk8s.JobEnded) as ended:
            client.wait_for_job_status("sdk-fail", timeout=WAIT)
        assert ended.value.job.state == "Failed"
    finally:
        client.delete_job("sdk-fail")


def test_not_found(client: tfk8s.Client) -> None:
    for call in (lambda: client.get_job("sdk-none"), lambda: client.delete_job("sdk-none"),
                 lambda: client.suspend_job("sdk-none"), lambda: client.list_artifacts("sdk-none")):
        with pytest.raises(tfk8s.JobNotFound):
            call()


def test_refused_s3_key_creates_nothing(binary: str, client: tfk8s.Client) -> None:
    denied = tfk8s.Client(binary=binary, namespace="default", s3_access_key_id="AKIAWRONGWRONG",
                          s3_secret_access_key="wrong-secret")
    with pytest.raises(tfk8s.AccessDenied, match="AKIAWRONGWRONG"):
        denied.submit(TRAINER, name="sdk-denied", image=IMAGE, command=["python3", "trainer.py"])
    assert gone(client, "sdk-denied")


def test_refused_token(binary: str) -> None:
    assert DENIED_KUBECONFIG, "TestPythonSDK sets TFK8S_E2E_DENIED_KUBECONFIG"
    with pytest.raises(tfk8s.AccessDenied):
        tfk8s.Client(binary=binary, kubeconfig=DENIED_KUBECONFIG).list_jobs()


def test_missing_s3_settings_create_nothing(
    binary: str, client: tfk8s.Client, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TFK8S_CONFIG", str(tmp_path / "none"))
    for name in list(os.environ):
        if name.startswith(("TFK8S_S3_", "AWS_ACCESS_KEY", "AWS_SECRET")):
            monkeypatch.delenv(name)
    with pytest.raises(tfk8s.StorageNotConfigured):
        tfk8s.Client(binary=binary).submit(TRAINER, name="sdk-nos3", image=IMAGE, command=["python3", "trainer.py"])
    assert gone(client, "sdk-nos3")


def test_kubeflow_job_beside_own(client: tfk8s.Client) -> None:
    """A kubeflow.org TFJob (TestPythonSDK creates it, suspended) is listed under its
    ref, read, refused its artifacts with the way to move it over, and deleted."""
    ref = "kubeflow.org/" + os.environ["TFK8S_E2E_KUBEFLOW_JOB"]
    listed = {job.ref: job for job in client.list_jobs()}
    assert ref in listed, f"{ref} not among {sorted(listed)}"
    assert listed[ref].is_kubeflow and listed[ref].api_version == "kubeflow.org/v1"
    job = client.get_job(ref)
    assert (job.ref, job.replicas[0].type) == (ref, "Worker")
    with pytest.raises(tfk8s.Tfk8sError, match="tfk8s render --to tfk8s"):
        client.list_artifacts(ref)
    client.delete_job(ref, wait=True)
    assert gone(client, ref)


# A Keras job of 6 epochs of 20 steps, 0.4 s a step: long enough for the controller's
# 30-second reads of its progress to see it move. It imports tfk8s.keras from the SDK
# shipped with its code (the TensorFlow image has no SDK).
KERAS_TRAIN = """
import time
import numpy as np
import tensorflow as tf
from tfk8s.keras import ProgressCallback

class Pace(tf.keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        time.sleep(0.4)

x = np.random.default_rng(0).normal(size=(640, 8)).astype("float32")
y = x.sum(axis=1, keepdims=True)
model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
progress = ProgressCallback("/workspace/logs")
model.fit(x, y, epochs=6, batch_size=32, callbacks=[progress, Pace()], verbose=0)
print("total steps", progress.total_steps, flush=True)
"""


def tfjob_progress(binary: str, name: str) -> dict[str, Any]:
    """The TFJob's status.progress, read with kubectl (bin/, beside tfk8s)."""
    kubectl = str(Path(binary).parent / "kubectl")
    out = subprocess.run([kubectl, "get", "tfjobs.tfk8s.io", name, "-n", "default", "-o", "json"],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    progress: dict[str, Any] = json.loads(out).get("status", {}).get("progress", {})
    return progress


def test_keras_callback_reports_total_steps(binary: str, client: tfk8s.Client, tmp_path: Path) -> None:
    """tfk8s.keras.ProgressCallback in real TensorFlow: the run's progress record
    carries the total steps Keras' params give (6 x 20), and the job's status shows
    PROGRESS and a falling ETA while it runs."""
    assert TF_IMAGE, "TestPythonSDK sets TFK8S_E2E_TF_IMAGE"
    code = tmp_path / "code"
    shutil.copytree(REPO / "python" / "src" / "tfk8s", code / "tfk8s",
                    ignore=shutil.ignore_patterns("_bin", "__pycache__"))
    (code / "train.py").write_text(KERAS_TRAIN)
    client.submit(str(code), name="sdk-keras", image=TF_IMAGE, workers=1, artifacts=["logs"],
                  artifacts_interval="5s", active_deadline=DEADLINE, command=["python3", "train.py"])
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline and client.get_job("sdk-keras").state not in ("Succeeded", "Failed"):
        progress = tfjob_progress(binary, "sdk-keras")
        if progress.get("totalSteps") and (not seen or progress != seen[-1]):
            seen.append(progress)
        time.sleep(2)
    job = client.wait_for_job_status("sdk-keras", status={"Succeeded"}, timeout=WAIT)
    assert job.state == "Succeeded"
    assert seen, "the status never carried a total"
    assert {p["totalSteps"] for p in seen} == {120}, seen
    percents = [p["progressPercentage"] for p in seen if "progressPercentage" in p]
    etas = [p["estimatedRemainingSeconds"] for p in seen if "estimatedRemainingSeconds" in p]
    assert percents and percents == sorted(percents) and percents[-1] > 0, seen
    assert etas and (len(etas) == 1 or etas[-1] < etas[0]), seen
    record = json.loads(subprocess.run([binary, "runs", "show", "sdk-keras", "-o", "json"], capture_output=True,
                                       text=True, check=True, timeout=60).stdout)
    assert record["progress"]["totalSteps"] == 120, record.get("progress")
    print("status progress seen:", seen)  # the figures, in TestPythonSDK's log with -s
    assert any(m["name"] == "train/loss" for m in seen[-1].get("metrics", [])), seen
    client.delete_job("sdk-keras", wait=True)
