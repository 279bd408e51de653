"""Kubeflow's own Python SDK, kubeflow-training, drives tfk8s's kubeflow.org/v1 TFJobs,
each call as Kubeflow's users write it; test/e2e's TestKubeflowSDK runs this in the
venv make kubeflow-venv makes, against a local cluster.

Two jobs train with ParameterServerStrategy in tfk8s's TensorFlow image:
  kf-ps    a KubeflowOrgV1TFJob with a Chief, a PS and two Workers, running
           examples/tensorflow/ps_strategy.py from a ConfigMap volume (a kubeflow.org
           job has no spec.code);
  kf-func  create_job(train_func=...): the SDK packs train_ps's source into the
           container's command.
Each check says what the user would have seen instead; the script exits non-zero at
the first that fails, and prints every call's result as it goes.

Before deleting them, it checks that tfk8s's own CLI (KF_TFK8S) shows the same jobs,
as a user who switched would run it beside the SDK.

Environment: KUBECONFIG, KF_IMAGE (the TensorFlow image), KF_PROGRAM (ps_strategy.py),
KF_TFK8S (bin/tfk8s).
"""

import os
import subprocess
import time

from kubeflow.training import TrainingClient, models
from kubernetes import client as k8s
from kubernetes import config as k8s_config

NAMESPACE = "default"
IMAGE = os.environ["KF_IMAGE"]
PROGRAM = os.environ["KF_PROGRAM"]
# Bounds every wait: the TensorFlow processes share two cores, each taking seconds to
# import TensorFlow.
WAIT_SECONDS = 480


def check(ok, what):
    if not ok:
        raise AssertionError(what)
    print(f"ok: {what}", flush=True)


def train_ps():
    """A train_func: the SDK ships its source alone, so it imports what it uses. No
    dollar sign or backquote: the SDK passes the source through a bash here-document."""
    import json
    import os

    import tensorflow as tf

    tf_config = json.loads(os.environ["TF_CONFIG"])
    task = tf_config["task"]
    print(f"train_func {task['type']} {task['index']} in {sorted(tf_config['cluster'])}", flush=True)
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if resolver.task_type in ("ps", "worker"):
        tf.distribute.Server(resolver.cluster_spec(), job_name=resolver.task_type,
                             task_index=resolver.task_id, protocol="grpc", start=True).join()
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        w = tf.Variable(0.0)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = (w - 3.0) ** 2
        w.assign_sub(0.1 * tape.gradient(loss, w))
        return loss

    for _ in range(20):
        coordinator.schedule(step)
    coordinator.join()
    print(f"train_func chief trained w to {float(w.numpy()):.2f}", flush=True)


def program_config_map(core):
    """ps_strategy.py as a ConfigMap, as a user would kubectl create configmap it."""
    with open(PROGRAM) as f:
        source = f.read()
    body = k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="ps-strategy"), data={"ps_strategy.py": source})
    core.create_namespaced_config_map(NAMESPACE, body)


def replica(n):
    container = models.V1Container(
        name="tensorflow", image=IMAGE,
        command=["python3", "/program/ps_strategy.py", "--epochs", "2", "--steps-per-epoch", "10",
                 "--model-dir", "/model"],
        volume_mounts=[models.V1VolumeMount(name="program", mount_path="/program"),
                       models.V1VolumeMount(name="model", mount_path="/model")])
    volumes = [models.V1Volume(name="program", config_map=models.V1ConfigMapVolumeSource(name="ps-strategy")),
               models.V1Volume(name="model", empty_dir=models.V1EmptyDirVolumeSource())]
    return models.KubeflowOrgV1ReplicaSpec(
        replicas=n, restart_policy="OnFailure",
        template=models.V1PodTemplateSpec(spec=models.V1PodSpec(containers=[container], volumes=volumes)))


def ps_job():
    # cleanPodPolicy None keeps every pod, so that each one's log stays readable.
    return models.KubeflowOrgV1TFJob(
        api_version="kubeflow.org/v1", kind="TFJob",
        metadata=models.V1ObjectMeta(name="kf-ps", namespace=NAMESPACE),
        spec=models.KubeflowOrgV1TFJobSpec(
            run_policy=models.KubeflowOrgV1RunPolicy(clean_pod_policy="None"),
            tf_replica_specs={"Chief": replica(1), "PS": replica(1), "Worker": replica(2)}))


def check_succeeded(tc, name, chief_line):
    job = tc.wait_for_job_conditions(name, wait_timeout=WAIT_SECONDS, polling_interval=2)
    types = [c.type for c in tc.get_job_conditions(name) if c.status == "True"]
    print(f"{name} conditions: {[(c.type, c.status, c.reason) for c in job.status.conditions]}", flush=True)
    check(types[-1:] == ["Succeeded"], f"{name}: the last True condition is Succeeded, of {types}")
    check("Created" in [c.type for c in job.status.conditions], f"{name}: has a Created condition")
    check(tc.is_job_succeeded(name) and not tc.is_job_failed(name), f"{name}: is_job_succeeded, not is_job_failed")
    chief = job.status.replica_statuses.get("Chief")
    check(chief is not None and chief.succeeded == 1, f"{name}: replicaStatuses Chief succeeded 1, got {chief}")
    check(job.status.start_time is not None and job.status.completion_time is not None,
          f"{name}: startTime and completionTime set")
    logs, _ = tc.get_job_logs(name)
    check(len(logs) == 1 and chief_line in next(iter(logs.values())),
          f"{name}: get_job_logs by master: one pod, {list(logs)}, printing {chief_line!r}")


def check_replica_logs(tc):
    logs, _ = tc.get_job_logs("kf-ps", is_master=False, replica_type="ps")
    check(list(logs) == ["kf-ps-ps-0"] and "[ps 0] server started" in logs["kf-ps-ps-0"],
          f"kf-ps: get_job_logs by replica type ps: {list(logs)}, the PS's server started")
    logs, _ = tc.get_job_logs("kf-ps", is_master=False, replica_type="worker")
    check(sorted(logs) == ["kf-ps-worker-0", "kf-ps-worker-1"],
          f"kf-ps: get_job_logs by replica type worker: {sorted(logs)}")
    logs, _ = tc.get_job_logs("kf-ps", is_master=False, replica_type="worker", replica_index=1)
    check(list(logs) == ["kf-ps-worker-1"] and "[worker 1] server started" in logs["kf-ps-worker-1"],
          f"kf-ps: get_job_logs by index 1: {list(logs)}, worker 1's server started")


def check_tfk8s_cli():
    def tfk8s(*args):
        return subprocess.run([os.environ["KF_TFK8S"], *args], capture_output=True, text=True, timeout=60).stdout

    listed = tfk8s("list")
    print(listed, flush=True)
    check(any(line.split()[:2] == ["kubeflow.org/kf-ps", "Succeeded"] for line in listed.splitlines()),
          "tfk8s list: kubeflow.org/kf-ps Succeeded")
    logs = tfk8s("logs", "kf-ps", "chief-0")
    check("[chief] training finished at step 20" in logs, "tfk8s logs kf-ps chief-0: the chief's last line")


def check_update(tc):
    tc.update_job(models.KubeflowOrgV1TFJob(metadata=models.V1ObjectMeta(labels={"team": "kubeflow-sdk"})), "kf-ps")
    labels = tc.get_job("kf-ps").metadata.labels or {}
    check(labels.get("team") == "kubeflow-sdk", f"kf-ps: update_job set the label team, labels {labels}")


def check_deleted(tc, names):
    for name in names:
        tc.delete_job(name)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        jobs = [j.metadata.name for j in tc.list_jobs() if j.metadata.name in names]
        if not jobs:
            break
        time.sleep(1)
    check(not jobs, f"delete_job: {names} gone from list_jobs, left {jobs}")


def main():
    k8s_config.load_kube_config()
    core = k8s.CoreV1Api()
    tc = TrainingClient(job_kind="TFJob", namespace=NAMESPACE)
    start = time.monotonic()
    program_config_map(core)
    tc.create_job(job=ps_job())
    tc.create_job(name="kf-func", train_func=train_ps, num_workers=1, num_ps_replicas=1,
                  num_chief_replicas=1, base_image=IMAGE)
    names = sorted(j.metadata.name for j in tc.list_jobs())
    check(names == ["kf-func", "kf-ps"], f"list_jobs: {names}")
    check(tc.get_job("kf-ps").spec.tf_replica_specs["Worker"].replicas == 2, "get_job: kf-ps has 2 workers")
    check_succeeded(tc, "kf-ps", "[chief] training finished at step 20")
    check_succeeded(tc, "kf-func", "train_func chief trained w to")
    print(f"both jobs Succeeded {time.monotonic() - start:.1f} s after create_job", flush=True)
    check_replica_logs(tc)
    check_tfk8s_cli()
    check_update(tc)
    check_deleted(tc, ["kf-ps", "kf-func"])


if __name__ == "__main__":
    main()
