#!/usr/bin/env python3
"""A parameter-server trainer that needs nothing but the Python standard library.

tfk8s runs it for its demo and end-to-end tests, where no TensorFlow is installed. It
behaves as a TensorFlow program does under tfk8s: it reads TF_CONFIG the way
TensorFlow's TFConfigClusterResolver does and takes the role of its task.

  ps         holds one shard of the parameter vector (shard i of len(cluster.ps)) and
             serves it over XML-RPC on the port of its own address, on all
             interfaces; applies each gradient as it arrives (asynchronous SGD).
             Exits 0 when the chief says training is over, or serves until killed.
  worker     trains on its shard of the data: pulls the parameters, computes a
             gradient on a mini-batch, pushes it, until the global step (the
             gradients applied by ps 0, all workers together) reaches --steps.
  chief      (or master; or worker 0 when the cluster has neither) trains like a
             worker and also checkpoints to --model-dir, restores a parameter server
             that restarted from the latest checkpoint, and at the end waits for the
             other workers, writes final.json and tells the parameter servers to stop.
             A restarted chief resumes from the latest checkpoint.
  evaluator  (left out of the cluster, as tfk8s does) evaluates every new checkpoint
             in --model-dir on the held-out data until final.json appears.

Without TF_CONFIG, or with an empty cluster, it trains alone with the same code. With
no ps in the cluster, the chief holds the parameters and serves them on its own port.

The model is linear regression on a seeded synthetic data set (or on the CSV files of
--data-dir: one example a row, the label last); every 10th example is held out for
evaluation, and training task k of n trains on the examples k, k+n, k+2n, ...

Exit codes: 0 done; 1 bad configuration or a parameter server that never answered;
128+N killed by signal N (143 for SIGTERM), after a last checkpoint on the chief.
"""

import argparse
import csv
import glob
import http.client
import json
import os
import random
import re
import signal
import socketserver
import sys
import threading
import time
import xmlrpc.client
import xmlrpc.server

CHIEF_TYPES = ("chief", "master")
TASK_TYPES = ("chief", "master", "worker", "ps", "evaluator")

# A call to a parameter server that takes longer than this is retried: the server is
# gone or stopped, and a fresh connection finds out which.
RPC_TIMEOUT_SECONDS = 30.0
MAX_BACKOFF_SECONDS = 5.0
# How long stopped parameter servers keep answering "finished" when the chief could not
# confirm that every worker is done, so that late workers exit 0 rather than fail.
FINISH_LINGER_SECONDS = 3.0
# Every EVAL_EVERY-th example is held out for evaluation.
EVAL_EVERY = 10
# Loss logs and checkpoints use at most this many examples of a shard: enough for a
# steady figure, few enough to cost less than a training step.
LOSS_PROBE_EXAMPLES = 1024
SYNTHETIC_NOISE = 0.1

POINTER_FILE = "checkpoint"
FINAL_FILE = "final.json"
CHECKPOINT_NAME = re.compile(r"^ckpt-(\d+)\.json$")
POINTER_LINE = re.compile(r'^model_checkpoint_path:\s*"([^"]+)"\s*$', re.MULTILINE)


class ConfigError(Exception):
    """TF_CONFIG, the flags or the data do not describe a task that can run."""


class Unreachable(Exception):
    """A parameter server did not answer within --connect-timeout."""


class Interrupted(BaseException):
    """Raised in the main thread on SIGTERM or SIGINT.

    A BaseException, so that no `except Exception` on the way swallows it.
    """

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _raise_interrupted(signum, _frame):
    raise Interrupted(signum)


class Logger:
    """Prints lines prefixed with the task, flushed at once so that logs interleave
    correctly and survive a kill."""

    def __init__(self, name):
        self.name = name

    def __call__(self, message):
        print(f"[{self.name}] {message}", flush=True)


# ---------------------------------------------------------------------------------
# TF_CONFIG
# ---------------------------------------------------------------------------------


def load_tf_config(environ):
    """TF_CONFIG as a dict; {} when unset or empty (a single-node job has none)."""
    raw = environ.get("TF_CONFIG", "")
    if not raw.strip():
        return {}
    try:
        config = json.loads(raw)
    except ValueError as err:
        raise ConfigError(f"TF_CONFIG is not JSON: {err}") from err
    if not isinstance(config, dict):
        raise ConfigError("TF_CONFIG is not a JSON object")
    return config


def cluster_spec(config):
    """The cluster of TF_CONFIG as TensorFlow's ClusterSpec reads it: task type to
    {index: address}. A list gives the indexes 0..n-1; an object (a sparse cluster)
    gives them as its keys."""
    cluster = config.get("cluster") or {}
    if not isinstance(cluster, dict):
        raise ConfigError("TF_CONFIG cluster is not an object")
    spec = {}
    for task_type, tasks in cluster.items():
        if isinstance(tasks, list):
            addresses = dict(enumerate(tasks))
        elif isinstance(tasks, dict):
            try:
                addresses = {int(index): address for index, address in tasks.items()}
            except ValueError as err:
                raise ConfigError(f"TF_CONFIG cluster.{task_type}: index is not an integer: {err}") from err
        else:
            raise ConfigError(f"TF_CONFIG cluster.{task_type} is neither a list nor an object")
        for index, address in addresses.items():
            if not isinstance(address, str) or not address:
                raise ConfigError(f"TF_CONFIG cluster.{task_type}[{index}] is not a host:port string")
        spec[task_type] = addresses
    return spec


def address_port(address):
    """The port of a host:port address ([v6]:port too)."""
    _, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError(f"address {address!r} has no port")
    return int(port)


class Role:
    """What this process does, from TF_CONFIG."""

    def __init__(self, task_type, task_index, name, *, local=False, is_chief=False,
                 own_address=None, training_tasks=(), ps_addresses=(), ps_names=(), hosts_parameters=False):
        self.task_type = task_type
        self.task_index = task_index
        self.name = name
        # local: no cluster; the parameters live in this process.
        self.local = local
        self.is_chief = is_chief
        self.own_address = own_address
        # training_tasks: (type, index) of every task that computes gradients, chief
        # first; a task's position is its data shard.
        self.training_tasks = list(training_tasks)
        # ps_addresses: where the parameter shards live, shard by shard.
        self.ps_addresses = list(ps_addresses)
        self.ps_names = list(ps_names)
        self.hosts_parameters = hosts_parameters

    @property
    def num_shards(self):
        return max(1, len(self.training_tasks))

    @property
    def shard_index(self):
        key = (self.task_type, self.task_index)
        return self.training_tasks.index(key) if key in self.training_tasks else 0

    @property
    def other_training_tasks(self):
        """Names of the training tasks the chief waits for at the end."""
        own = (self.task_type, self.task_index)
        return [f"{t} {i}" for t, i in self.training_tasks if (t, i) != own]


def resolve_role(config):
    """The role of this process, read from TF_CONFIG as TensorFlow reads it: task.type
    and task.index name the task, the cluster lists the chief, master, ps and worker
    addresses. The evaluator needs no address; a cluster that lists one anyway is fine."""
    task = config.get("task") or {}
    if not isinstance(task, dict):
        raise ConfigError("TF_CONFIG task is not an object")
    task_type = str(task["type"]) if "type" in task else None
    try:
        task_index = int(task["index"]) if "index" in task else None
    except (TypeError, ValueError) as err:
        raise ConfigError(f"TF_CONFIG task.index is not an integer: {task['index']!r}") from err
    if task_type is not None and task_type not in TASK_TYPES:
        raise ConfigError(f"TF_CONFIG task.type {task_type!r} is not one of {', '.join(TASK_TYPES)}")
    cluster = cluster_spec(config)
    name = f"{task_type} {task_index or 0}" if task_type else "local"

    if task_type == "evaluator":
        return Role(task_type, task_index or 0, name)

    chiefs = [(t, i) for t in CHIEF_TYPES for i in sorted(cluster.get(t, {}))]
    if len(chiefs) > 1:
        listed = ", ".join(f"{t} {i}" for t, i in chiefs)
        raise ConfigError(f"the cluster has more than one chief or master: {listed}")
    workers = cluster.get("worker", {})
    training = chiefs + [("worker", i) for i in sorted(workers)]
    ps = cluster.get("ps", {})

    if not training and not ps:
        # An empty cluster: TensorFlow trains locally, and so do we.
        if task_type == "ps":
            raise ConfigError("task ps in an empty cluster: there is no one to serve")
        return Role(task_type or "worker", task_index or 0, name, local=True, is_chief=True,
                    training_tasks=[(task_type or "worker", task_index or 0)])

    if task_type is None:
        raise ConfigError("TF_CONFIG has a cluster but no task.type")
    if task_index is None:
        task_index = 0
    name = f"{task_type} {task_index}"
    own_address = cluster.get(task_type, {}).get(task_index)
    if own_address is None:
        raise ConfigError(f"task {task_type} {task_index} is not in the TF_CONFIG cluster")
    if not training:
        raise ConfigError("the cluster has parameter servers but no chief, master or worker")

    # TensorFlow's rule: the chief (or master) if there is one, else worker 0.
    chief = chiefs[0] if chiefs else (("worker", 0) if 0 in workers else None)
    is_chief = (task_type, task_index) == chief
    if ps:
        ps_addresses = [ps[i] for i in sorted(ps)]
        ps_names = [f"ps {i}" for i in sorted(ps)]
        hosts = False
    else:
        # No parameter server: the chief holds the parameters on its own port.
        if chief is None:
            raise ConfigError("no ps in the cluster and no chief or worker 0 to hold the parameters")
        ps_addresses = [cluster[chief[0]][chief[1]]]
        ps_names = [f"{chief[0]} {chief[1]}"]
        hosts = is_chief
    return Role(task_type, task_index, name, is_chief=is_chief, own_address=own_address,
                training_tasks=training, ps_addresses=ps_addresses, ps_names=ps_names,
                hosts_parameters=hosts)


# ---------------------------------------------------------------------------------
# Data and model
# ---------------------------------------------------------------------------------


class Dataset:
    """Examples as (features, label) pairs, all with the same number of features."""

    def __init__(self, examples, num_features, source):
        self.examples = examples
        self.num_features = num_features
        self.source = source

    def split(self):
        """(training examples, held-out examples): every EVAL_EVERY-th is held out."""
        train, held_out = [], []
        for i, example in enumerate(self.examples):
            (held_out if i % EVAL_EVERY == EVAL_EVERY - 1 else train).append(example)
        return train, held_out


def synthetic_dataset(seed, num_examples, num_features):
    """y = w.x + b + noise, with w and b drawn from the seed: every task that uses the
    same seed sees the same data, so sharding by index needs no coordination."""
    rng = random.Random(seed)
    weights = [rng.uniform(-1.0, 1.0) for _ in range(num_features)]
    bias = rng.uniform(-1.0, 1.0)
    examples = []
    for _ in range(num_examples):
        x = [rng.gauss(0.0, 1.0) for _ in range(num_features)]
        y = sum(w * v for w, v in zip(weights, x)) + bias + rng.gauss(0.0, SYNTHETIC_NOISE)
        examples.append((x, y))
    return Dataset(examples, num_features, f"synthetic (seed {seed}, {num_examples} examples)")


def csv_dataset(data_dir):
    """Every *.csv under data_dir, in name order: numbers, the label last; a first line
    that is not numbers is taken for a header."""
    paths = sorted(glob.glob(os.path.join(data_dir, "**", "*.csv"), recursive=True))
    if not paths:
        raise ConfigError(f"--data-dir {data_dir}: no .csv file")
    examples, width = [], None
    for path in paths:
        with open(path, newline="") as f:
            for line, row in enumerate(csv.reader(f), 1):
                if not any(cell.strip() for cell in row):
                    continue
                try:
                    values = [float(cell) for cell in row]
                except ValueError as err:
                    if line == 1:
                        continue
                    raise ConfigError(f"{path}:{line}: {err}") from err
                if width is None:
                    width = len(values)
                    if width < 2:
                        raise ConfigError(f"{path}:{line}: want at least one feature and a label")
                elif len(values) != width:
                    raise ConfigError(f"{path}:{line}: {len(values)} columns, want {width}")
                examples.append((values[:-1], values[-1]))
    if not examples:
        raise ConfigError(f"--data-dir {data_dir}: no example in {len(paths)} .csv file(s)")
    return Dataset(examples, width - 1, f"{len(examples)} examples from {len(paths)} file(s) in {data_dir}")


def load_dataset(args):
    if args.data_dir:
        return csv_dataset(args.data_dir)
    return synthetic_dataset(args.seed, args.num_examples, args.num_features)


def predict(params, x):
    """params is the weights then the bias."""
    total = params[-1]
    for w, v in zip(params, x):
        total += w * v
    return total


def mean_squared_error(params, examples):
    if not examples:
        return float("nan")
    return sum((predict(params, x) - y) ** 2 for x, y in examples) / len(examples)


def loss_and_gradient(params, batch):
    """Mean squared error of the batch and its gradient with respect to params."""
    gradient = [0.0] * len(params)
    loss = 0.0
    for x, y in batch:
        error = predict(params, x) - y
        loss += error * error
        for j, v in enumerate(x):
            gradient[j] += error * v
        gradient[-1] += error
    scale = 2.0 / len(batch)
    return loss / len(batch), [g * scale for g in gradient]


def batches(examples, batch_size, seed, shard_index):
    """Mini-batches of a shard, reshuffled every epoch, forever."""
    rng = random.Random(f"{seed}/{shard_index}")
    order = list(range(len(examples)))
    while True:
        rng.shuffle(order)
        for start in range(0, len(order), batch_size):
            yield [examples[i] for i in order[start:start + batch_size]]


def shard_bounds(size, count):
    """[start, end) of each of count contiguous shards of a vector, the first ones one
    longer when size does not divide evenly."""
    base, extra = divmod(size, count)
    bounds, start = [], 0
    for i in range(count):
        end = start + base + (1 if i < extra else 0)
        bounds.append((start, end))
        start = end
    return bounds


# ---------------------------------------------------------------------------------
# Parameter store: what a ps task holds and serves
# ---------------------------------------------------------------------------------


class ParameterStore:
    """One shard of the parameters, updated by asynchronous SGD as gradients arrive.

    The shard is created (zeros) by the first pull or push: its size comes from the
    workers, so a ps task needs neither the data nor the model. step counts the
    gradients applied; ps 0's step is the global step. incarnation changes when the
    process restarts, which is how the chief knows to restore the shard."""

    def __init__(self):
        self._lock = threading.Lock()
        self._params = None
        self._step = 0
        self._finished = False
        self._restored = False
        self._done_workers = set()
        self.incarnation = f"{os.getpid()}-{time.time_ns()}-{random.getrandbits(32):08x}"
        # on_done(linger_seconds) is called once, when the chief calls done.
        self.on_done = None

    def _ensure(self, size):
        if self._params is None:
            self._params = [0.0] * size
        elif len(self._params) != size:
            raise ValueError(f"this shard has {len(self._params)} parameters, the caller expects {size}")

    def _state(self):
        return {"params": list(self._params or []), "step": self._step,
                "finished": self._finished, "incarnation": self.incarnation}

    def pull(self, size):
        with self._lock:
            self._ensure(size)
            return self._state()

    def push(self, gradient, learning_rate):
        """Applies one gradient and returns the new state, saving the worker a pull."""
        with self._lock:
            if not self._finished:
                self._ensure(len(gradient))
                params = self._params
                for i, g in enumerate(gradient):
                    params[i] -= learning_rate * g
                self._step += 1
            return self._state()

    def restore(self, params, step):
        """Replaces the shard with a checkpoint's, once per incarnation: a second
        restore (a restarted chief repeating itself) would undo training since."""
        with self._lock:
            if not self._restored:
                self._params = [float(p) for p in params]
                self._step = step
                self._restored = True
            return self._state()

    def worker_done(self, task_name):
        with self._lock:
            self._done_workers.add(task_name)
            return sorted(self._done_workers)

    def status(self):
        with self._lock:
            return {"step": self._step, "finished": self._finished,
                    "done_workers": sorted(self._done_workers)}

    def done(self, linger_seconds):
        """Training is over: later pushes are not applied but answered "finished", so
        that their workers stop, and the server stops serving after linger_seconds."""
        with self._lock:
            first = not self._finished
            self._finished = True
        if first and self.on_done is not None:
            self.on_done(float(linger_seconds))
        return True


class _RequestHandler(xmlrpc.server.SimpleXMLRPCRequestHandler):
    # Keep-alive saves a connection per call; without TCP_NODELAY each reply (headers,
    # then body) would wait for a delayed ACK, some 40 ms a call.
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args):
        # A line per call would drown the training log.
        pass


class _RPCServer(socketserver.ThreadingMixIn, xmlrpc.server.SimpleXMLRPCServer):
    # Each connection has its thread; they must not keep the process alive at exit.
    daemon_threads = True


def start_rpc_server(store, port):
    """An XML-RPC server for store on port, on all interfaces; not yet serving."""
    try:
        server = _RPCServer(("", port), requestHandler=_RequestHandler, logRequests=False, allow_none=True)
    except OSError as err:
        raise ConfigError(f"cannot listen on port {port}: {err}") from err
    for method in ("pull", "push", "restore", "worker_done", "status", "done"):
        server.register_function(getattr(store, method), method)

    def stop_later(linger_seconds):
        # shutdown() waits for serve_forever to return: it must not run on the thread
        # that serves, nor delay the reply to done.
        def stop():
            time.sleep(linger_seconds)
            server.shutdown()

        threading.Thread(target=stop, daemon=True).start()

    store.on_done = stop_later
    return server


class _TimeoutTransport(xmlrpc.client.Transport):
    def __init__(self, timeout):
        super().__init__()
        self._timeout = timeout

    def make_connection(self, host):
        connection = super().make_connection(host)
        connection.timeout = self._timeout
        return connection


class RemoteStore:
    """A parameter server over XML-RPC, retried with bounded exponential backoff: it may
    not be up yet (tfk8s starts every replica at once), not resolvable yet, or restarting.

    A push retried after its reply was lost may be applied twice; asynchronous SGD
    tolerates that as it tolerates stale gradients."""

    def __init__(self, name, address, log, retry_seconds):
        self.name = name
        self.address = address
        self._log = log
        self._retry_seconds = retry_seconds
        self._proxy = self._connect()

    def _connect(self):
        return xmlrpc.client.ServerProxy(f"http://{self.address}/", allow_none=True,
                                         transport=_TimeoutTransport(RPC_TIMEOUT_SECONDS))

    def call(self, method, *args, retry_seconds=None):
        budget = self._retry_seconds if retry_seconds is None else retry_seconds
        deadline, delay, failing = None, 0.1, False
        while True:
            try:
                result = getattr(self._proxy, method)(*args)
            except xmlrpc.client.Fault:
                raise
            except (OSError, http.client.HTTPException, xmlrpc.client.ProtocolError) as err:
                now = time.monotonic()
                if deadline is None:
                    deadline = now + budget
                if now >= deadline:
                    raise Unreachable(
                        f"{self.name} at {self.address} did not answer for {budget:g}s: {err}") from err
                if not failing:
                    self._log(f"waiting for {self.name} at {self.address}: {err}")
                    failing = True
                self._proxy("close")()
                self._proxy = self._connect()
                time.sleep(min(delay, deadline - now))
                delay = min(delay * 2, MAX_BACKOFF_SECONDS)
                continue
            if failing:
                self._log(f"reached {self.name} at {self.address}")
            return result


class LocalStore:
    """A parameter store in this process, called like a RemoteStore."""

    def __init__(self, name, store):
        self.name = name
        self.store = store

    def call(self, method, *args, retry_seconds=None):
        return getattr(self.store, method)(*args)


# ---------------------------------------------------------------------------------
# Checkpoints
# ---------------------------------------------------------------------------------


def _write_atomically(path, text):
    """Readers (the evaluator, tfk8s's artifact upload) see the old file or the new
    one, never half of one."""
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class Checkpointer:
    """ckpt-<step>.json files in model_dir, the newest named by a `checkpoint` file in
    TensorFlow's format, and final.json once training is over."""

    def __init__(self, model_dir, max_to_keep=5):
        self.model_dir = model_dir
        self.max_to_keep = max_to_keep

    def _path(self, name):
        return os.path.join(self.model_dir, name)

    def names(self):
        """Checkpoint file names, oldest first."""
        try:
            entries = os.listdir(self.model_dir)
        except FileNotFoundError:
            return []
        found = [(int(m.group(1)), name) for name in entries if (m := CHECKPOINT_NAME.match(name))]
        return [name for _, name in sorted(found)]

    def _load(self, name):
        with open(self._path(name)) as f:
            data = json.load(f)
        if not isinstance(data.get("step"), int) or not isinstance(data.get("params"), list):
            raise ValueError(f"{name} is not a checkpoint")
        data["name"] = name
        return data

    def latest(self):
        """The newest readable checkpoint, or None: the one the pointer names, else the
        highest step on disk (the pointer may be missing, or name a pruned file)."""
        candidates = []
        try:
            with open(self._path(POINTER_FILE)) as f:
                match = POINTER_LINE.search(f.read())
            if match:
                candidates.append(match.group(1))
        except OSError:
            pass
        candidates += reversed(self.names())
        for name in candidates:
            try:
                return self._load(name)
            except (OSError, ValueError):
                continue
        return None

    def save(self, step, params, **extra):
        os.makedirs(self.model_dir, exist_ok=True)
        name = f"ckpt-{step}.json"
        _write_atomically(self._path(name), json.dumps({"step": step, "params": params, **extra}))
        kept = self.names()
        for old in kept[:-self.max_to_keep]:
            if old != name:
                try:
                    os.remove(self._path(old))
                except FileNotFoundError:
                    pass
        kept = self.names()
        pointer = f'model_checkpoint_path: "{name}"\n'
        pointer += "".join(f'all_model_checkpoint_paths: "{n}"\n' for n in kept)
        _write_atomically(self._path(POINTER_FILE), pointer)
        return name

    def read_final(self):
        try:
            with open(self._path(FINAL_FILE)) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def write_final(self, data):
        os.makedirs(self.model_dir, exist_ok=True)
        _write_atomically(self._path(FINAL_FILE), json.dumps(data, indent=1))

    def remove_final(self):
        try:
            os.remove(self._path(FINAL_FILE))
        except FileNotFoundError:
            pass


# ---------------------------------------------------------------------------------
# Training: workers and the chief
# ---------------------------------------------------------------------------------


class Trainer:
    """A training task: the worker loop, plus the chief's duties when it is the chief.

    start(), then step() until done(), then finish(): split so that tests can drive it."""

    def __init__(self, role, args, log, stores, dataset):
        self.role = role
        self.args = args
        self.log = log
        self.stores = stores
        self.dim = dataset.num_features + 1
        self.bounds = shard_bounds(self.dim, len(stores))
        train, self.held_out = dataset.split()
        self.train = train
        self.shard = train[role.shard_index::role.num_shards]
        self.probe = self.shard[:LOSS_PROBE_EXAMPLES]
        self.batches = batches(self.shard, args.batch_size, args.seed, role.shard_index)
        self.params = [0.0] * self.dim
        self.ps_steps = [0] * len(stores)
        self.incarnations = [None] * len(stores)
        self.local_steps = 0
        self.finished_by_chief = False
        self.checkpointer = Checkpointer(args.model_dir, args.max_to_keep) if role.is_chief else None
        self.last_checkpoint = None

    @property
    def global_step(self):
        return self.ps_steps[0]

    def done(self):
        return self.finished_by_chief or self.global_step >= self.args.steps

    def _absorb(self, i, state):
        start, end = self.bounds[i]
        self.params[start:end] = [float(p) for p in state["params"]]
        self.ps_steps[i] = state["step"]
        if state["finished"]:
            self.finished_by_chief = True
        if self.role.is_chief:
            self._check_incarnation(i, state["incarnation"])
        else:
            self.incarnations[i] = state["incarnation"]

    def _check_incarnation(self, i, incarnation):
        """A parameter server whose incarnation changed has restarted with fresh
        parameters: the chief restores it from the latest checkpoint."""
        known = self.incarnations[i]
        self.incarnations[i] = incarnation
        if known is None or known == incarnation:
            return
        store = self.stores[i]
        if self.last_checkpoint is None:
            self.log(f"{store.name} restarted; no checkpoint yet to restore it from")
            return
        start, end = self.bounds[i]
        ckpt = self.last_checkpoint
        state = store.call("restore", ckpt["params"][start:end], ckpt["step"])
        self.log(f"loaded {ckpt['name']} into {store.name}, a new process")
        self._absorb(i, state)

    def start(self):
        """Pulls the parameters; the chief first loads the latest checkpoint, so that
        parameter servers that lost theirs get it back. Returns False when a previous
        chief already finished training to --steps."""
        if self.checkpointer is not None:
            final = self.checkpointer.read_final()
            if final is not None and final.get("step", -1) >= self.args.steps:
                self.log(f"training already finished at step {final['step']} "
                         f"({FINAL_FILE} in {self.args.model_dir})")
                self._stop_parameter_servers(linger_seconds=0, retry_seconds=10)
                return False
            if final is not None:
                self.log(f"removing {FINAL_FILE} of step {final.get('step')}: "
                         f"training on to step {self.args.steps}")
                self.checkpointer.remove_final()
            ckpt = self.checkpointer.latest()
            if ckpt is not None:
                if len(ckpt["params"]) != self.dim:
                    raise ConfigError(
                        f"{ckpt['name']} has {len(ckpt['params'])} parameters, the data needs {self.dim}")
                self.last_checkpoint = ckpt
                self.log(f"resuming from {ckpt['name']} (step {ckpt['step']})")
                recorded = ckpt.get("incarnations") or []
                if len(recorded) == len(self.stores):
                    self.incarnations = list(recorded)
                else:
                    # Another cluster shape: every parameter server counts as restarted.
                    self.incarnations = ["unknown"] * len(self.stores)
        for i, store in enumerate(self.stores):
            start, end = self.bounds[i]
            self._absorb(i, store.call("pull", end - start))
        loss = mean_squared_error(self.params, self.probe)
        shard = f"{self.role.shard_index + 1}/{self.role.num_shards}"
        self.log(f"step {self.global_step} loss {loss:.4f} (training on {len(self.shard)} examples, shard {shard})")
        return True

    def step(self):
        """One mini-batch: gradient, push to every parameter server (which returns its
        new shard), and the chief's checkpoint when one is due."""
        if self.shard:
            _, gradient = loss_and_gradient(self.params, next(self.batches))
            for i, store in enumerate(self.stores):
                start, end = self.bounds[i]
                self._absorb(i, store.call("push", gradient[start:end], self.args.lr))
        else:
            # More training tasks than examples: nothing to learn from, so follow the
            # global step until the others are done.
            time.sleep(0.2)
            for i, store in enumerate(self.stores):
                start, end = self.bounds[i]
                self._absorb(i, store.call("pull", end - start))
        self.local_steps += 1
        if self.args.step_delay:
            time.sleep(self.args.step_delay)
        if self.local_steps % self.args.log_every == 0:
            self.log(f"step {self.global_step} loss {mean_squared_error(self.params, self.probe):.4f}")
        if self.checkpointer is not None:
            last = self.last_checkpoint["step"] if self.last_checkpoint else 0
            if self.global_step >= last + self.args.checkpoint_every:
                self.save_checkpoint()

    def save_checkpoint(self):
        loss = mean_squared_error(self.params, self.probe)
        name = self.checkpointer.save(self.global_step, list(self.params), loss=loss,
                                      incarnations=list(self.incarnations), time=time.time())
        self.last_checkpoint = {"name": name, "step": self.global_step, "params": list(self.params)}
        self.log(f"saved {name} (step {self.global_step}, loss {loss:.4f})")

    def finish(self):
        """A worker tells the parameter servers it is done; the chief waits for the
        other workers, saves the final parameters and final.json, and stops the
        parameter servers."""
        if self.finished_by_chief:
            self.log(f"training was ended by the chief at step {self.global_step}")
            return
        if not self.role.is_chief:
            for store in self.stores:
                store.call("worker_done", self.role.name)
            self.log(f"done at step {self.global_step} after {self.local_steps} local steps")
            return
        all_done = self._wait_for_workers()
        for i, store in enumerate(self.stores):
            start, end = self.bounds[i]
            self._absorb(i, store.call("pull", end - start))
        if self.last_checkpoint is None or self.last_checkpoint["step"] != self.global_step:
            self.save_checkpoint()
        initial = [0.0] * self.dim
        final = {
            "step": self.global_step,
            "checkpoint": self.last_checkpoint["name"],
            "train_loss": mean_squared_error(self.params, self.train),
            "eval_loss": mean_squared_error(self.params, self.held_out),
            "initial_eval_loss": mean_squared_error(initial, self.held_out),
            "params": list(self.params),
        }
        self.checkpointer.write_final(final)
        self.log(f"finished at step {final['step']}: train loss {final['train_loss']:.4f}, eval loss "
                 f"{final['eval_loss']:.4f} (from {final['initial_eval_loss']:.4f}); wrote {FINAL_FILE}")
        linger = 0.0 if all_done else FINISH_LINGER_SECONDS
        self._stop_parameter_servers(linger_seconds=linger)
        if self.role.hosts_parameters and linger:
            # Late workers reach the parameters in this process: answer them a while.
            time.sleep(linger)

    def _wait_for_workers(self):
        """Waits, at most --worker-timeout, until every other training task has said it
        is done, so that the final checkpoint has their last gradients and the
        parameter servers outlive them. Returns whether all of them did."""
        expected = set(self.role.other_training_tasks)
        if not expected or self.role.local:
            return True
        deadline = time.monotonic() + self.args.worker_timeout
        announced = False
        while True:
            reported = set()
            for store in self.stores:
                reported.update(store.call("status")["done_workers"])
            missing = sorted(expected - reported)
            if not missing:
                return True
            if time.monotonic() >= deadline:
                self.log(f"gave up waiting for {', '.join(missing)} after {self.args.worker_timeout:g}s")
                return False
            if not announced:
                self.log(f"waiting for {', '.join(missing)} to finish")
                announced = True
            time.sleep(0.2)

    def _stop_parameter_servers(self, linger_seconds, retry_seconds=None):
        if self.role.local:
            return
        for store in self.stores:
            try:
                store.call("done", linger_seconds, retry_seconds=retry_seconds)
            except Unreachable as err:
                # Training is over either way; tfk8s deletes the parameter servers.
                self.log(f"could not stop {store.name}: {err}")
        self.log("told the parameter servers that training is finished")


def run_training(role, args, log):
    dataset = load_dataset(args)
    if role.local:
        stores = [LocalStore("parameters", ParameterStore())]
    elif role.hosts_parameters:
        store = ParameterStore()
        server = start_rpc_server(store, address_port(role.own_address))
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True).start()
        log(f"no ps in the cluster: serving the parameters on port {address_port(role.own_address)}")
        stores = [LocalStore(role.name, store)]
    else:
        stores = [RemoteStore(name, address, log, args.connect_timeout)
                  for name, address in zip(role.ps_names, role.ps_addresses)]
    log(f"{'chief' if role.is_chief else 'worker'} of {len(role.training_tasks)} training task(s), "
        f"{len(stores)} parameter shard(s); data: {dataset.source}; model dir: {args.model_dir}")
    trainer = Trainer(role, args, log, stores, dataset)
    try:
        if not trainer.start():
            return 0
        while not trainer.done():
            trainer.step()
        trainer.finish()
    except Interrupted:
        # A last checkpoint, so that the restarted chief loses nothing: tfk8s uploads the
        # model dir when the pod stops.
        if trainer.checkpointer is not None and trainer.local_steps:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            trainer.save_checkpoint()
        raise
    return 0


# ---------------------------------------------------------------------------------
# Parameter server and evaluator
# ---------------------------------------------------------------------------------


def run_ps(role, args, log):
    port = address_port(role.own_address)
    store = ParameterStore()
    server = start_rpc_server(store, port)
    log(f"serving parameter shard {role.task_index + 1}/{len(role.ps_addresses)} on port {port}")
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
    status = store.status()
    log(f"training finished at step {status['step']}: exiting")
    return 0


def run_evaluator(role, args, log):
    """Evaluates each new checkpoint in --model-dir on the held-out examples until
    final.json appears; gives up after --eval-timeout seconds without a new one. The
    model dir must be storage the chief writes to (a shared volume)."""
    dataset = load_dataset(args)
    _, held_out = dataset.split()
    dim = dataset.num_features + 1
    checkpointer = Checkpointer(args.model_dir)
    log(f"evaluating checkpoints in {args.model_dir} on {len(held_out)} held-out examples")
    last_step = None
    deadline = time.monotonic() + args.eval_timeout
    while True:
        final = checkpointer.read_final()
        if final is not None:
            if len(final.get("params", [])) != dim:
                raise ConfigError(
                    f"{FINAL_FILE} has {len(final.get('params', []))} parameters, the data needs {dim}")
            log(f"final step {final['step']} eval_loss {mean_squared_error(final['params'], held_out):.4f}")
            return 0
        ckpt = checkpointer.latest()
        if ckpt is not None and ckpt["step"] != last_step and len(ckpt["params"]) == dim:
            last_step = ckpt["step"]
            loss = mean_squared_error(ckpt["params"], held_out)
            log(f"step {last_step} eval_loss {loss:.4f} ({ckpt['name']})")
            deadline = time.monotonic() + args.eval_timeout
        elif time.monotonic() >= deadline:
            log(f"no new checkpoint and no {FINAL_FILE} for {args.eval_timeout:g}s: giving up")
            return 1
        time.sleep(args.eval_interval)


# ---------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Dependency-free parameter-server trainer: reads TF_CONFIG as TensorFlow does.")
    add = parser.add_argument
    add("--steps", type=int, default=1000,
        help="global steps to train: gradients applied, all workers together (default %(default)s)")
    add("--batch-size", type=int, default=32, help="examples per mini-batch (default %(default)s)")
    add("--lr", type=float, default=0.01, help="learning rate (default %(default)s)")
    add("--checkpoint-every", type=int, default=100, help="global steps between checkpoints (default %(default)s)")
    add("--model-dir", default=os.environ.get("TFK8S_MODEL_DIR") or "/workspace/checkpoints",
        help="where the chief writes checkpoints and the evaluator reads them "
             "(default $TFK8S_MODEL_DIR, else /workspace/checkpoints)")
    add("--data-dir", default=None,
        help="train on the *.csv files here (features..., label) instead of synthetic data")
    add("--seed", type=int, default=1, help="seed of the synthetic data and of batch order (default %(default)s)")
    add("--num-examples", type=int, default=4096, help="synthetic examples (default %(default)s)")
    add("--num-features", type=int, default=16, help="synthetic features (default %(default)s)")
    add("--log-every", type=int, default=10, help="local steps between loss lines (default %(default)s)")
    add("--max-to-keep", type=int, default=5, help="checkpoints kept (default %(default)s)")
    add("--step-delay", type=float, default=0.0,
        help="seconds to sleep after each step, to make a short job last (default %(default)s)")
    add("--connect-timeout", type=float, default=300.0,
        help="seconds to keep retrying an unreachable parameter server (default %(default)s)")
    add("--worker-timeout", type=float, default=120.0,
        help="seconds the chief waits at the end for the other workers (default %(default)s)")
    add("--eval-interval", type=float, default=1.0, help="seconds between evaluator polls (default %(default)s)")
    add("--eval-timeout", type=float, default=1800.0,
        help="seconds the evaluator waits for a new checkpoint before giving up (default %(default)s)")
    args = parser.parse_args(argv)
    for flag in ("batch_size", "checkpoint_every", "num_examples", "num_features", "log_every", "max_to_keep"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')} must be at least 1")
    if args.steps < 0:
        parser.error("--steps must not be negative")
    if args.lr <= 0:
        parser.error("--lr must be positive")
    return args


def main(argv=None):
    args = parse_args(argv)
    try:
        role = resolve_role(load_tf_config(os.environ))
    except ConfigError as err:
        Logger("trainer")(f"error: {err}")
        return 1
    log = Logger(role.name)
    signal.signal(signal.SIGTERM, _raise_interrupted)
    signal.signal(signal.SIGINT, _raise_interrupted)
    try:
        if role.task_type == "ps":
            return run_ps(role, args, log)
        if role.task_type == "evaluator":
            return run_evaluator(role, args, log)
        return run_training(role, args, log)
    except Interrupted as stop:
        # One signal is enough: a second one during the shutdown must not turn a clean
        # 143 into a traceback.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        log(f"received {signal.Signals(stop.signum).name}: exiting")
        return 128 + stop.signum
    except (ConfigError, Unreachable) as err:
        log(f"error: {err}")
        return 1
    except xmlrpc.client.Fault as fault:
        log(f"error from a parameter server: {fault.faultString}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
