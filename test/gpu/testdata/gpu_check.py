"""The GPU test's job: each of two workers of a MultiWorkerMirroredStrategy job says
which device nodes and which GPU it sees, through TensorFlow and through NVML (the
tfk8s-nvml the agent brought), then the two train a small model together on their
GPUs. No nvidia-smi: the image has none, and the checks need none."""

import glob
import json
import subprocess

import numpy as np
import tensorflow as tf

nodes = sorted(glob.glob("/dev/nvidia[0-9]*"))
print("GPUCHECK device-nodes " + json.dumps(nodes), flush=True)
nvml = subprocess.run(["/tfk8s/bin/tfk8s-nvml", "devices"], capture_output=True, text=True)
print("GPUCHECK nvml " + (nvml.stdout.strip() or json.dumps({"error": nvml.stderr.strip()})), flush=True)
gpus = tf.config.list_physical_devices("GPU")
names = [tf.config.experimental.get_device_details(g).get("device_name", "") for g in gpus]
print("GPUCHECK tensorflow " + json.dumps(names), flush=True)

strategy = tf.distribute.MultiWorkerMirroredStrategy()
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input((32,)), tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
rng = np.random.default_rng(0)
x, y = rng.normal(size=(1024, 32)).astype("float32"), rng.normal(size=(1024, 1)).astype("float32")
history = model.fit(x, y, epochs=2, batch_size=64, verbose=0)
print("GPUCHECK trained " + json.dumps({"loss": history.history["loss"][-1],
                                        "on": [d.name for d in strategy.extended.worker_devices]}), flush=True)
