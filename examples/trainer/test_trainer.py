"""Tests of the dependency-free trainer: real processes on 127.0.0.1, as tfk8s runs them.

Run from anywhere, with nothing but python3:
    python3 -m unittest -v examples/trainer/test_trainer.py
Every process a test starts is killed when the test ends, whatever its outcome.
"""

import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.dont_write_bytecode = True  # leave no __pycache__ beside the example

HERE = os.path.dirname(os.path.abspath(__file__))
TRAINER = os.path.join(HERE, "trainer.py")

# The trainer as a module, for the tests that drive it in-process. Loaded by path: the
# directory is no package, and its name must not matter.
_spec = importlib.util.spec_from_file_location("tfk8s_example_trainer", TRAINER)
trainer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(trainer)

# Bound on every wait for a process: generous for 2 busy cores, yet a hang fails the
# test instead of stalling the suite.
TIMEOUT_SECONDS = 60
STEP_LINE = re.compile(r"^\[[^\]]+\] step (\d+) loss ([0-9.]+)", re.MULTILINE)


def free_ports(count):
    """Ports free on 127.0.0.1 now: all bound at once, so they are distinct."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def tf_config(cluster, task_type, index):
    """TF_CONFIG as tfk8s writes it; the evaluator is not part of the cluster."""
    return json.dumps({"cluster": cluster, "task": {"type": task_type, "index": index},
                       "environment": "cloud"})


class Processes:
    """Trainer processes with their output in files (a pipe nobody reads would block
    them), killed at the end of the test that started them."""

    def __init__(self, test, workdir):
        self.workdir = workdir
        self.tasks = {}
        test.addCleanup(self.kill_all)

    def start(self, name, args, tf_config_value=None):
        env = {k: v for k, v in os.environ.items() if k not in ("TF_CONFIG", "TFK8S_MODEL_DIR")}
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        if tf_config_value is not None:
            env["TF_CONFIG"] = tf_config_value
        path = os.path.join(self.workdir, name.replace(" ", "-") + ".log")
        out = open(path, "wb")
        try:
            proc = subprocess.Popen([sys.executable, TRAINER, *args], env=env,
                                    stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        finally:
            out.close()  # the child has its own descriptor
        self.tasks[name] = (proc, path)
        return proc

    def output(self, name):
        with open(self.tasks[name][1], errors="replace") as f:
            return f.read()

    def all_output(self):
        return "\n".join(f"--- {name} (exit {proc.poll()}) ---\n{self.output(name)}"
                         for name, (proc, _) in sorted(self.tasks.items()))

    def wait(self, name, deadline):
        """The exit code of a task; fails the test with every task's output when the
        task is still running at deadline (a time.monotonic() value)."""
        proc = self.tasks[name][0]
        try:
            return proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{name} still running after the deadline\n{self.all_output()}") from None

    def wait_for_output(self, name, needle, deadline):
        while time.monotonic() < deadline:
            if needle in self.output(name):
                return
            if self.tasks[name][0].poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"{name} never printed {needle!r}\n{self.all_output()}")

    def kill_all(self):
        for proc, _ in self.tasks.values():
            if proc.poll() is None:
                proc.kill()
        for proc, _ in self.tasks.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass


def logged_losses(output):
    return [(int(step), float(loss)) for step, loss in STEP_LINE.findall(output)]


class TempDirTestCase(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory(prefix="tfk8s-trainer-")
        self.addCleanup(tmp.cleanup)
        self.dir = tmp.name
        self.model_dir = os.path.join(self.dir, "model")
        self.procs = Processes(self, self.dir)

    def read_json(self, name):
        with open(os.path.join(self.model_dir, name)) as f:
            return json.load(f)


class DistributedTest(TempDirTestCase):
    def test_ps_chief_workers_and_evaluator(self):
        ps_ports, chief_port, worker_ports = (lambda p: (p[:2], p[2], p[3:]))(free_ports(5))
        cluster = {
            "chief": [f"127.0.0.1:{chief_port}"],
            "ps": [f"127.0.0.1:{p}" for p in ps_ports],
            "worker": [f"127.0.0.1:{p}" for p in worker_ports],
        }
        args = ["--steps", "300", "--checkpoint-every", "50", "--model-dir", self.model_dir,
                "--seed", "7", "--connect-timeout", "30", "--worker-timeout", "30",
                "--eval-interval", "0.2", "--eval-timeout", "30"]
        start = time.monotonic()
        deadline = start + TIMEOUT_SECONDS
        # Workers, chief and evaluator before the parameter servers: tfk8s starts every
        # replica at once, so the trainers must wait for the parameter servers.
        for index in range(2):
            self.procs.start(f"worker {index}", args, tf_config(cluster, "worker", index))
        self.procs.start("chief 0", args, tf_config(cluster, "chief", 0))
        self.procs.start("evaluator 0", args, tf_config(cluster, "evaluator", 0))
        for name in ("worker 0", "worker 1", "chief 0"):
            self.procs.wait_for_output(name, "waiting for ps 0", deadline)
        for index in range(2):
            self.procs.start(f"ps {index}", args, tf_config(cluster, "ps", index))

        for name in ("chief 0", "worker 0", "worker 1", "ps 0", "ps 1", "evaluator 0"):
            self.assertEqual(self.procs.wait(name, deadline), 0, f"{name} failed\n{self.procs.all_output()}")
        print(f"\n  distributed job of 6 processes took {time.monotonic() - start:.1f}s", file=sys.stderr)

        # The trainers waited for the parameter servers instead of failing.
        self.assertIn("reached ps 0", self.procs.output("chief 0"))
        # Training converged: the training loss fell, and so did the held-out loss. The
        # losses of all training tasks together, by global step: on a busy machine the
        # chief may reach the parameter servers when the workers are nearly done.
        losses = sorted(loss for name in ("chief 0", "worker 0", "worker 1")
                        for loss in logged_losses(self.procs.output(name)))
        self.assertGreaterEqual(len(losses), 2, self.procs.all_output())
        self.assertLess(losses[-1][1], losses[0][1])
        final = self.read_json("final.json")
        self.assertGreaterEqual(final["step"], 300)
        self.assertLess(final["eval_loss"], final["initial_eval_loss"] / 10)
        # Every worker trained, on its own shard.
        for index in range(2):
            output = self.procs.output(f"worker {index}")
            self.assertTrue(logged_losses(output), output)
            self.assertIn(f"shard {index + 2}/3", output)
            self.assertIn("done at step", output)
        # Checkpoints: the pointer names the newest, which holds the final parameters;
        # old ones were pruned to --max-to-keep (5). (A chief that reached the parameter
        # servers late saved fewer.)
        names = sorted((f for f in os.listdir(self.model_dir) if f.startswith("ckpt-")),
                       key=lambda f: int(f[5:-5]))
        self.assertTrue(1 <= len(names) <= 5, names)
        with open(os.path.join(self.model_dir, "checkpoint")) as f:
            self.assertIn(f'model_checkpoint_path: "{names[-1]}"', f.read())
        self.assertEqual(self.read_json(names[-1])["params"], final["params"])
        self.assertEqual(final["checkpoint"], names[-1])
        self.assertFalse([f for f in os.listdir(self.model_dir) if ".tmp-" in f])
        # The parameter servers stopped because the chief said so, not by a signal.
        for index in range(2):
            self.assertIn("training finished at step", self.procs.output(f"ps {index}"))
        self.assertIn("told the parameter servers", self.procs.output("chief 0"))
        # The evaluator saw checkpoints, then the final one.
        evaluator = self.procs.output("evaluator 0")
        self.assertIn("eval_loss", evaluator)
        self.assertIn(f"final step {final['step']} eval_loss", evaluator)

    def test_no_ps_the_chief_holds_the_parameters(self):
        chief_port, worker_port = free_ports(2)
        cluster = {"chief": [f"127.0.0.1:{chief_port}"], "worker": [f"127.0.0.1:{worker_port}"]}
        args = ["--steps", "150", "--model-dir", self.model_dir, "--connect-timeout", "30",
                "--worker-timeout", "30"]
        self.procs.start("worker 0", args, tf_config(cluster, "worker", 0))
        self.procs.start("chief 0", args, tf_config(cluster, "chief", 0))
        deadline = time.monotonic() + TIMEOUT_SECONDS
        for name in ("chief 0", "worker 0"):
            self.assertEqual(self.procs.wait(name, deadline), 0, f"{name} failed\n{self.procs.all_output()}")
        self.assertIn("serving the parameters", self.procs.output("chief 0"))
        self.assertIn("done at step", self.procs.output("worker 0"))
        self.assertGreaterEqual(self.read_json("final.json")["step"], 150)


class SingleNodeTest(TempDirTestCase):
    def test_trains_without_tf_config_and_resumes(self):
        args = ["--steps", "100", "--checkpoint-every", "25", "--model-dir", self.model_dir]
        self.procs.start("first", args)
        self.assertEqual(self.procs.wait("first", time.monotonic() + TIMEOUT_SECONDS), 0, self.procs.all_output())
        output = self.procs.output("first")
        self.assertTrue(output.startswith("[local] "), output)
        losses = logged_losses(output)
        self.assertLess(losses[-1][1], losses[0][1])
        final = self.read_json("final.json")
        self.assertEqual(final["step"], 100)
        self.assertLess(final["eval_loss"], final["initial_eval_loss"])
        self.assertTrue(os.path.exists(os.path.join(self.model_dir, "ckpt-100.json")))

        # A second run to more steps resumes where the first stopped.
        args[1] = "150"
        self.procs.start("second", args)
        self.assertEqual(self.procs.wait("second", time.monotonic() + TIMEOUT_SECONDS), 0, self.procs.all_output())
        output = self.procs.output("second")
        self.assertIn("resuming from ckpt-100.json", output)
        self.assertEqual(logged_losses(output)[0][0], 100)
        self.assertEqual(self.read_json("final.json")["step"], 150)

        # A third run to the same step has nothing left to do.
        self.procs.start("third", args)
        self.assertEqual(self.procs.wait("third", time.monotonic() + TIMEOUT_SECONDS), 0, self.procs.all_output())
        self.assertIn("training already finished at step 150", self.procs.output("third"))

    def test_csv_data_dir(self):
        data_dir = os.path.join(self.dir, "data")
        os.makedirs(data_dir)
        dataset = trainer.synthetic_dataset(3, 500, 4)
        for part in range(2):
            with open(os.path.join(data_dir, f"part-{part}.csv"), "w") as f:
                f.write("a,b,c,d,label\n")
                for x, y in dataset.examples[part::2]:
                    f.write(",".join(map(repr, [*x, y])) + "\n")
        self.procs.start("csv", ["--steps", "200", "--lr", "0.05", "--data-dir", data_dir,
                                 "--model-dir", self.model_dir])
        self.assertEqual(self.procs.wait("csv", time.monotonic() + TIMEOUT_SECONDS), 0, self.procs.all_output())
        self.assertIn("500 examples from 2 file(s)", self.procs.output("csv"))
        final = self.read_json("final.json")
        self.assertEqual(len(final["params"]), 5)
        self.assertLess(final["eval_loss"], final["initial_eval_loss"] / 10)


class SignalTest(TempDirTestCase):
    def test_sigterm_exits_143(self):
        ps_port, chief_port, worker_port = free_ports(3)
        cluster = {"chief": [f"127.0.0.1:{chief_port}"], "ps": [f"127.0.0.1:{ps_port}"],
                   "worker": [f"127.0.0.1:{worker_port}"]}
        deadline = time.monotonic() + TIMEOUT_SECONDS
        # A worker waiting for its parameter server, a parameter server serving with no
        # one to stop it, and a chief in the middle of training alone.
        self.procs.start("worker 0", ["--model-dir", self.model_dir], tf_config(cluster, "worker", 0))
        self.procs.start("ps 0", [], tf_config(dict(cluster, ps=[f"127.0.0.1:{free_ports(1)[0]}"]), "ps", 0))
        self.procs.start("local", ["--steps", "1000000", "--step-delay", "0.01", "--log-every", "5",
                                   "--model-dir", self.model_dir])
        self.procs.wait_for_output("worker 0", "waiting for ps 0", deadline)
        self.procs.wait_for_output("ps 0", "serving parameter shard", deadline)
        self.procs.wait_for_output("local", "step 5 loss", deadline)
        for name in ("worker 0", "ps 0", "local"):
            self.procs.tasks[name][0].send_signal(signal.SIGTERM)
        for name in ("worker 0", "ps 0", "local"):
            self.assertEqual(self.procs.wait(name, deadline), 143, f"{name}\n{self.procs.all_output()}")
            self.assertIn("received SIGTERM: exiting", self.procs.output(name))
        # The chief of a single-node job saved a last checkpoint on its way out.
        self.assertIn("saved ckpt-", self.procs.output("local"))
        self.assertTrue(os.path.exists(os.path.join(self.model_dir, "checkpoint")))


class TFConfigTest(unittest.TestCase):
    CLUSTER = {"chief": ["c:2222"], "ps": ["p0:2222", "p1:2222"], "worker": ["w0:2222", "w1:2222"]}

    def role(self, config):
        return trainer.resolve_role(trainer.load_tf_config({"TF_CONFIG": json.dumps(config)}))

    def test_roles(self):
        chief = self.role({"cluster": self.CLUSTER, "task": {"type": "chief", "index": 0}})
        self.assertTrue(chief.is_chief)
        self.assertEqual((chief.shard_index, chief.num_shards), (0, 3))
        self.assertEqual(chief.ps_addresses, ["p0:2222", "p1:2222"])
        self.assertEqual(chief.other_training_tasks, ["worker 0", "worker 1"])
        worker = self.role({"cluster": self.CLUSTER, "task": {"type": "worker", "index": 1}})
        self.assertFalse(worker.is_chief)
        self.assertEqual((worker.name, worker.shard_index), ("worker 1", 2))
        ps = self.role({"cluster": self.CLUSTER, "task": {"type": "ps", "index": "1"}})
        self.assertEqual((ps.task_type, ps.task_index, ps.own_address), ("ps", 1, "p1:2222"))

    def test_worker_0_is_chief_without_chief_or_master(self):
        cluster = {"ps": ["p:1"], "worker": ["w0:1", "w1:1"]}
        self.assertTrue(self.role({"cluster": cluster, "task": {"type": "worker", "index": 0}}).is_chief)
        self.assertFalse(self.role({"cluster": cluster, "task": {"type": "worker", "index": 1}}).is_chief)
        master = self.role({"cluster": dict(cluster, master=["m:1"]), "task": {"type": "master", "index": 0}})
        self.assertTrue(master.is_chief)
        self.assertEqual(master.training_tasks[0], ("master", 0))

    def test_evaluator_needs_no_cluster_entry(self):
        evaluator = self.role({"cluster": self.CLUSTER, "task": {"type": "evaluator", "index": 0}})
        self.assertEqual(evaluator.name, "evaluator 0")
        # A cluster that lists the evaluator anyway does not make it a training task.
        chief = self.role({"cluster": dict(self.CLUSTER, evaluator=["e:1"]), "task": {"type": "chief", "index": 0}})
        self.assertEqual(chief.other_training_tasks, ["worker 0", "worker 1"])

    def test_sparse_cluster(self):
        worker = self.role({"cluster": {"chief": ["c:1"], "ps": ["p:1"], "worker": {"3": "w3:1"}},
                            "task": {"type": "worker", "index": 3}})
        self.assertEqual(worker.own_address, "w3:1")

    def test_single_node(self):
        for environ in ({}, {"TF_CONFIG": ""}, {"TF_CONFIG": '{"task": {"type": "worker", "index": 0}}'}):
            role = trainer.resolve_role(trainer.load_tf_config(environ))
            self.assertTrue(role.local and role.is_chief, environ)

    def test_errors(self):
        bad = [
            "not json",
            '["a list"]',
            json.dumps({"cluster": self.CLUSTER, "task": {"type": "worker", "index": 7}}),
            json.dumps({"cluster": self.CLUSTER, "task": {"type": "driver", "index": 0}}),
            json.dumps({"cluster": self.CLUSTER}),
            json.dumps({"cluster": dict(self.CLUSTER, master=["m:1"]), "task": {"type": "chief", "index": 0}}),
            json.dumps({"cluster": {"ps": ["p:1"]}, "task": {"type": "ps", "index": 0}}),
        ]
        for raw in bad:
            with self.assertRaises(trainer.ConfigError, msg=raw):
                trainer.resolve_role(trainer.load_tf_config({"TF_CONFIG": raw}))


class ChiefRestoresParameterServersTest(unittest.TestCase):
    """A parameter server that restarts comes back empty; the chief notices its new
    incarnation and loads the latest checkpoint into it. Driven in-process."""

    def test_restarted_ps_is_restored(self):
        with tempfile.TemporaryDirectory() as model_dir:
            args = trainer.parse_args(["--steps", "100", "--checkpoint-every", "20", "--model-dir", model_dir])
            role = trainer.Role("chief", 0, "chief 0", is_chief=True, training_tasks=[("chief", 0)])
            stores = [trainer.LocalStore(f"ps {i}", trainer.ParameterStore()) for i in range(2)]
            log_lines = []
            chief = trainer.Trainer(role, args, log_lines.append, stores, trainer.synthetic_dataset(1, 500, 6))
            self.assertTrue(chief.start())
            while chief.global_step < 30:
                chief.step()
            checkpoint = chief.last_checkpoint
            self.assertEqual(checkpoint["step"], 20)

            stores[1].store = trainer.ParameterStore()  # ps 1 restarted, empty
            chief.step()
            self.assertIn("loaded ckpt-20.json into ps 1, a new process", log_lines)
            start, end = chief.bounds[1]
            shard = stores[1].store.pull(end - start)
            self.assertEqual(shard["step"], 20)  # the checkpoint's, replacing the push it had
            self.assertNotEqual(shard["params"], [0.0] * (end - start))

            # A second restore of the same incarnation (a restarted chief) is refused.
            again = stores[1].store.restore([0.0] * (end - start), 5)
            self.assertEqual(again["step"], 20)


if __name__ == "__main__":
    unittest.main()
