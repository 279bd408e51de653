"""Fixtures of the SDK's tests: the tfk8s binary, and an environment with no cluster
and no S3 settings unless a test gives them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import tfk8s

REPO = Path(__file__).resolve().parents[2]

# test/e2e's TestPythonSDK sets these to its cluster's: the tests of test_cluster.py
# run only then.
CLUSTER_ENV = ("TFK8S_E2E_KUBECONFIG", "TFK8S_E2E_CONFIG", "TFK8S_E2E_IMAGE")


@pytest.fixture(scope="session")
def binary() -> str:
    """The tfk8s binary under test: $TFK8S_BIN, else bin/tfk8s (make build)."""
    path = tfk8s.find_binary(os.environ.get("TFK8S_BIN") or REPO / "bin" / "tfk8s")
    if not os.access(path, os.X_OK):
        pytest.fail(f"no tfk8s binary at {path}: run make build, or set TFK8S_BIN")
    return path


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No S3 settings and an empty kubeconfig, whatever this machine has; returns the
    kubeconfig."""
    for name in list(os.environ):
        if name.startswith(("TFK8S_S3_", "AWS_ACCESS_KEY", "AWS_SECRET")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("TFK8S_CONFIG", str(tmp_path / "no-config"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("")
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    return kubeconfig
