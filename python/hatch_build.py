"""Puts the tfk8s binary into the wheel, as tfk8s/_bin/tfk8s, and tags the wheel for
the binary's platform.

make python gives the binary and the platform tag: TFK8S_WHEEL_BINARY and
TFK8S_WHEEL_PLATFORM (e.g. manylinux_2_17_x86_64). Installed from the source tree
(pip install python/) without them, the hook builds the binary with go, if go and the
repository are there, for this machine; else the wheel carries none and the package
runs tfk8s from PATH.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

BINARY_IN_WHEEL = "tfk8s/_bin/tfk8s"


class CustomBuildHook(BuildHookInterface):
    _tmp: str | None = None

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        binary = os.environ.get("TFK8S_WHEEL_BINARY")
        platform = os.environ.get("TFK8S_WHEEL_PLATFORM")
        if binary:
            if not platform:
                raise RuntimeError("TFK8S_WHEEL_BINARY needs TFK8S_WHEEL_PLATFORM, the wheel's platform tag")
            build_data["tag"] = f"py3-none-{platform}"
        else:
            binary = self._build_binary()
            if binary is None:
                return
            build_data["infer_tag"] = True
        build_data["pure_python"] = False
        build_data["force_include"][binary] = BINARY_IN_WHEEL

    def _build_binary(self) -> str | None:
        """Builds tfk8s for this machine, as make python does; None without go or the
        repository."""
        repo = Path(self.root).parent
        go = shutil.which("go")
        if go is None or not (repo / "go.mod").is_file() or not (repo / "cmd" / "tfk8s").is_dir():
            return None
        self._tmp = tempfile.mkdtemp(prefix="tfk8s-wheel-")
        out = Path(self._tmp) / "tfk8s"
        env = {**os.environ, "CGO_ENABLED": "0"}
        subprocess.run(
            [go, "build", "-tags", "sdk", "-trimpath", "-ldflags", "-s -w", "-o", str(out), "./cmd/tfk8s"],
            cwd=repo,
            env=env,
            check=True,
        )
        return str(out)

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
