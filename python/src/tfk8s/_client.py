"""Client: the tfk8s CLI's commands as Python methods, spoken to as JSON."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from ._errors import JobEnded, Tfk8sError, WaitTimeout, from_stderr
from ._submit import SUBMIT_FLAGS, SubmitMixin
from ._types import FINISHED_STATES, Artifact, Job, LogLine, parse_time

# The states a job can be waited for in: its condition types.
JOB_STATES = frozenset({"Created", "Running", "Restarting", "Suspended", "Succeeded", "Failed"})

_EXE = "tfk8s.exe" if sys.platform == "win32" else "tfk8s"


def find_binary(binary: str | os.PathLike[str] | None = None) -> str:
    """The tfk8s binary the client runs.

    binary if given, else $TFK8S_BIN (a file, or a directory holding tfk8s), else the
    one the wheel carries, else tfk8s on PATH.
    """
    if binary is not None:
        return os.fspath(binary)
    env = os.environ.get("TFK8S_BIN")
    if env:
        path = Path(env)
        return str(path / _EXE if path.is_dir() else path)
    bundled = Path(__file__).parent / "_bin" / _EXE
    if bundled.is_file():
        return str(bundled)
    on_path = shutil.which("tfk8s")
    if on_path:
        return on_path
    raise Tfk8sError(
        "no tfk8s binary: this tfk8s package carries none and there is no tfk8s on PATH "
        "(install a tfk8s wheel, put tfk8s on PATH or set TFK8S_BIN)"
    )


class Client(SubmitMixin):
    """Submits, follows and fetches tfk8s TFJobs, through the tfk8s CLI.

    Every argument left out is found as the CLI finds it: the kubeconfig from
    $KUBECONFIG or ~/.kube/config (or the pod's service account in a notebook), the
    namespace from the kubeconfig's context, the S3 settings from $TFK8S_S3_ENDPOINT,
    $TFK8S_S3_BUCKET, $AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY, else
    ~/.tfk8s/config.

    Args:
        kubeconfig: the kubeconfig file (--kubeconfig).
        context: the kubeconfig context (--context).
        namespace: the namespace of the jobs (-n).
        s3_endpoint: S3 endpoint, host:port or http(s)://host:port (--s3-endpoint).
        s3_bucket: S3 bucket for code, data and artifacts (--s3-bucket).
        s3_region: S3 region (--s3-region).
        s3_insecure: plain HTTP to S3 (--s3-insecure).
        s3_access_key_id: S3 access key ($AWS_ACCESS_KEY_ID).
        s3_secret_access_key: S3 secret key ($AWS_SECRET_ACCESS_KEY).
        binary: the tfk8s binary; see find_binary.
    """

    def __init__(
        self,
        kubeconfig: str | os.PathLike[str] | None = None,
        context: str | None = None,
        namespace: str | None = None,
        s3_endpoint: str | None = None,
        s3_bucket: str | None = None,
        s3_region: str | None = None,
        s3_insecure: bool | None = None,
        s3_access_key_id: str | None = None,
        s3_secret_access_key: str | None = None,
        binary: str | os.PathLike[str] | None = None,
    ) -> None:
        self.binary = find_binary(binary)
        self.namespace = namespace
        flags: list[str] = []
        for flag, value in (
            ("--kubeconfig", kubeconfig),
            ("--context", context),
            ("--namespace", namespace),
            ("--s3-endpoint", s3_endpoint),
            ("--s3-bucket", s3_bucket),
            ("--s3-region", s3_region),
        ):
            if value is not None:
                flags.append(f"{flag}={os.fspath(value)}")
        if s3_insecure is not None:
            flags.append(f"--s3-insecure={str(bool(s3_insecure)).lower()}")
        self._flags = flags
        self._env = {"TFK8S_ERRORS": "json"}
        if s3_access_key_id is not None:
            self._env["AWS_ACCESS_KEY_ID"] = s3_access_key_id
        if s3_secret_access_key is not None:
            self._env["AWS_SECRET_ACCESS_KEY"] = s3_secret_access_key

    def __repr__(self) -> str:
        return f"Client(binary={self.binary!r}, flags={self._flags!r})"

    # Running the CLI.

    def command(self, *args: str) -> list[str]:
        """The command line the client runs for tfk8s args."""
        return [self.binary, *self._flags, *args]

    def _environ(self) -> dict[str, str]:
        return {**os.environ, **self._env}

    def _run(self, *args: str, stdin: str | None = None) -> str:
        """Runs tfk8s args and returns its stdout; raises the error it reports."""
        cmd = self.command(*args)
        try:
            proc = subprocess.run(
                cmd,
                input=stdin if stdin is not None else "",
                capture_output=True,
                text=True,
                encoding="utf-8",
                errors="replace",
                env=self._environ(),
                check=False,
            )
        except OSError as e:
            raise Tfk8sError(f"running {self.binary}: {e}") from e
        if proc.returncode != 0:
            raise from_stderr(proc.stderr, list(args), proc.returncode, proc.stdout)
        return proc.stdout

    def _json(self, words: Sequence[str], positional: Sequence[str]) -> Any:
        """Runs tfk8s words -o json -- positional and decodes what it prints."""
        return json.loads(self._run(*_argv(words, ["-o", "json"], positional)))

    # Submitting.

    def submit_args(
        self,
        code_dir: str | os.PathLike[str] | None,
        flags: Mapping[str, Any],
        command: Sequence[str] | None,
        manifest: Mapping[str, Any] | str | None,
        dry_run: bool,
    ) -> tuple[list[str], str | None]:
        """The arguments of tfk8s submit for submit's, and what its stdin gets."""
        args = ["submit"]
        if code_dir is not None:
            args.append(_dir_arg(code_dir))
        for name, value in flags.items():
            flag, kind = SUBMIT_FLAGS[name]
            args.extend(_flag_args(flag, kind, value))
        stdin = None
        if manifest is not None:
            stdin = manifest if isinstance(manifest, str) else json.dumps(manifest)
            args.extend(["-f", "-"])
        if dry_run:
            args.append("--dry-run")
        args.extend(["-o", "json"])
        if command is not None:
            if isinstance(command, str):
                raise TypeError("command: want a list of words, e.g. ['python3', 'train.py']")
            args.extend(["--", *command])
        return args, stdin

    def _submit(self, *args: Any) -> Job:
        """submit, once its keywords are gathered: see submit_args."""
        argv, stdin = self.submit_args(*args)
        return Job.from_manifest(json.loads(self._run(*argv, stdin=stdin)))

    # Reading jobs.

    def list_jobs(self, all_namespaces: bool = False) -> list[Job]:
        """The jobs of the namespace (or of every namespace), sorted by name."""
        words = ["list", "--all-namespaces"] if all_namespaces else ["list"]
        return [Job.from_manifest(item) for item in self._json(words, []).get("items", [])]

    def get_job(self, name: str) -> Job:
        """The job called name. Raises JobNotFound."""
        return Job.from_manifest(self._json(["get"], [name]))

    def get_job_logs(
        self, name: str, replica: str | None = None, follow: bool = False
    ) -> Iterator[LogLine]:
        """The lines of the job's logs, of every replica (or of one, e.g. "worker-0").

        Logs of running pods come from Kubernetes; once the pods are gone, from the
        copies stored in S3. With follow, the lines come as the replicas write them,
        until the job finishes: replicas whose pods are not created yet are waited for.
        Stopping the iteration stops the reading.
        """
        flags = ["-o", "json"] + (["--follow"] if follow else [])
        args = _argv(["logs"], flags, [name] + ([replica] if replica else []))
        cmd = self.command(*args)
        try:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                encoding="utf-8",
                errors="replace",
                env=self._environ(),
            )
        except OSError as e:
            raise Tfk8sError(f"running {self.binary}: {e}") from e
        assert proc.stdout is not None and proc.stderr is not None
        stderr: list[str] = []
        drain = threading.Thread(target=lambda: stderr.append(proc.stderr.read()), daemon=True)  # type: ignore[union-attr]
        drain.start()
        try:
            for line in proc.stdout:
                if line.strip():
                    obj = json.loads(line)
                    yield LogLine(replica=obj["replica"], text=obj["text"])
            code = proc.wait()
            drain.join()
            if code != 0:
                raise from_stderr("".join(stderr), args, code)
        finally:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            proc.stdout.close()
            drain.join(timeout=5)
            proc.stderr.close()

    def wait_for_job_status(
        self,
        name: str,
        status: Iterable[str] = frozenset({"Succeeded"}),
        timeout: float = 600,
        polling_interval: float = 2,
    ) -> Job:
        """Waits until the job is in one of the states of status, and returns it.

        States: Created, Running, Restarting, Suspended, Succeeded, Failed. A job that
        finishes in another state raises JobEnded at once; timeout seconds without
        the state raise WaitTimeout.
        """
        wanted = set(status)
        unknown = wanted - JOB_STATES
        if unknown:
            raise ValueError(f"status {sorted(unknown)}: want states of {sorted(JOB_STATES)}")
        deadline = time.monotonic() + timeout
        while True:
            job = self.get_job(name)
            if job.state in wanted:
                return job
            if job.state in FINISHED_STATES:
                raise JobEnded(f"tfjob {name} is {job.state}, not {' or '.join(sorted(wanted))}", job)
            left = deadline - time.monotonic()
            if left <= 0:
                raise WaitTimeout(
                    f"tfjob {name} is {job.state or 'not yet seen by the controller'} after "
                    f"{timeout:g}s, not {' or '.join(sorted(wanted))}"
                )
            time.sleep(min(polling_interval, left))

    # Acting on jobs.

    def delete_job(self, name: str, wait: bool = False) -> None:
        """Deletes the job (its pods, Secret and TensorBoard go with it); with wait,
        returns once it is gone. Its files in S3 stay."""
        self._run(*_argv(["delete"], ["--wait"] if wait else [], [name]))

    def suspend_job(self, name: str) -> None:
        """Suspends the job: its pods are deleted, and resume_job re-creates them."""
        self._run(*_argv(["suspend"], [], [name]))

    def resume_job(self, name: str) -> None:
        """Resumes a suspended job."""
        self._run(*_argv(["resume"], [], [name]))

    # The job's files in S3.

    def list_artifacts(self, name: str, path: str | None = None) -> list[Artifact]:
        """The files the job's replicas stored in S3, under path (e.g.
        "chief-0/artifacts") if given: artifacts, logs of each attempt, manifests."""
        items = self._json(["artifacts", "ls"], [name] + ([path] if path else []))
        return [
            Artifact(path=i["path"], size=i["size"], modified=parse_time(i.get("modified")))
            for i in items
        ]

    def download_artifacts(
        self, name: str, path: str | None = None, dest: str | os.PathLike[str] | None = None
    ) -> Path:
        """Downloads the job's stored files, or those under path, into dest (default
        ./NAME), checks each against its replica's manifest, and returns dest."""
        target = Path(dest) if dest is not None else Path(name)
        output = f"--output={os.fspath(target)}"
        self._run(*_argv(["artifacts", "get"], [output], [name] + ([path] if path else [])))
        return target.absolute()


def _argv(words: Sequence[str], flags: Sequence[str], positional: Sequence[str]) -> list[str]:
    """A command line: the command's words and flags, then "--" and its positional
    arguments, so that a name or path beginning with "-" is not read as a flag."""
    return [*words, *flags, "--", *positional]


def _dir_arg(code_dir: str | os.PathLike[str]) -> str:
    """submit's DIR, which must come before "--" (what follows is the command): a
    relative path beginning with "-" gets "./" before it, so that it is not read as
    a flag."""
    path = os.fspath(code_dir)
    return os.path.join(os.curdir, path) if path.startswith("-") else path


def _flag_args(flag: str, kind: str, value: Any) -> list[str]:
    """The command-line arguments of one of submit's keywords."""
    if value is None:
        return []
    if kind == "bool":
        if not isinstance(value, bool):
            raise TypeError(f"{flag}: want True or False, got {value!r}")
        return [f"{flag}={'true' if value else 'false'}"]
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{flag}: want an int, got {value!r}")
        return [f"{flag}={value}"]
    if kind == "duration":
        return [f"{flag}={_duration(value)}"]
    if kind == "list":
        values = [value] if isinstance(value, str) else list(value)
        return [f"{flag}={v}" for v in values]
    return [f"{flag}={value}"]


def _duration(value: str | float | timedelta) -> str:
    """A duration as Go reads it: "90s" for 90 seconds or timedelta(seconds=90)."""
    if isinstance(value, str):
        return value
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    return f"{int(seconds)}s" if seconds.is_integer() else f"{seconds!r}s"
