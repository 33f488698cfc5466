"""scripts/setup-env.sh picks the torch build by machine and says which (dry run: nothing is
installed). A fake `nvidia-smi` stands for a GPU; an empty pip configuration for a machine that
has no local wheels."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "setup-env.sh"
CPU_INDEX = "--index-url https://download.pytorch.org/whl/cpu"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None or sys.platform != "linux",
                                reason="the setup script is for Linux shells")


def _run(tmp_path, *, gpu: bool, pip_conf: str | None, torch: str | None = None,
         extras: str = "torch", env_extra: dict | None = None) -> subprocess.CompletedProcess:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    smi = bin_dir / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'GPU 0: Test'\n" if gpu else "#!/bin/sh\nexit 9\n")
    smi.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "ICML25_"))}
    conf = tmp_path / "pip.conf"
    conf.write_text(pip_conf or "")
    env.update(PATH=f"{bin_dir}{os.pathsep}{env['PATH']}", PIP_CONFIG_FILE=str(conf),
               HOME=str(tmp_path), ICML25_SETUP_DRY_RUN="1", PYTHON=sys.executable,
               **(env_extra or {}))
    if torch:
        env["ICML25_TORCH"] = torch
    return subprocess.run(["bash", str(SCRIPT), extras], capture_output=True, text=True,
                          env=env, timeout=120)


def test_no_gpu_and_no_local_wheel_takes_the_cpu_index(tmp_path):
    r = _run(tmp_path, gpu=False, pip_conf=None)
    assert r.returncode == 0, r.stderr
    assert "torch: cpu build" in r.stdout and CPU_INDEX in r.stdout


def test_a_gpu_takes_the_default_cuda_build(tmp_path):
    r = _run(tmp_path, gpu=True, pip_conf=None)
    assert "torch: cuda build" in r.stdout and "download.pytorch.org" not in r.stdout


def test_a_local_wheel_wins_and_is_pinned_with_indexes_on_disk_only(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(b"")
    simple = tmp_path / "simple" / "torch"
    simple.mkdir(parents=True)
    (simple / "index.html").write_text(
        "<a href='../../f/torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl'>x</a>")
    conf = (f"[global]\nfind-links = {wheels}\n"
            f"extra-index-url = file://{tmp_path / 'simple'}\n")
    cpu = _run(tmp_path, gpu=False, pip_conf=conf)
    assert "torch: local build" in cpu.stdout, cpu.stdout + cpu.stderr
    assert "torch==2.13.0+cpu" in cpu.stdout  # the CPU wheel where there is no GPU
    assert f"--index-url file://{tmp_path / 'simple'}" in cpu.stdout  # no network for torch
    gpu = _run(tmp_path, gpu=True, pip_conf=conf)
    assert "torch==2.14.1 " in gpu.stdout  # the CUDA build where there is a GPU


def test_overrides_and_a_bad_value(tmp_path):
    assert CPU_INDEX in _run(tmp_path, gpu=True, pip_conf=None, torch="cpu").stdout
    skip = _run(tmp_path, gpu=False, pip_conf=None, torch="skip")
    assert "torch: skip build" in skip.stdout and "install --quiet" in skip.stdout
    assert "torch==" not in skip.stdout and CPU_INDEX not in skip.stdout
    cuda = _run(tmp_path, gpu=False, pip_conf=None, torch="cuda")
    assert "torch: cuda build" in cuda.stdout and "PIP_CONFIG_FILE=/dev/null" in cuda.stdout
    bad = _run(tmp_path, gpu=False, pip_conf=None, torch="rocm")
    assert bad.returncode == 2 and bad.stderr.startswith("error: ICML25_TORCH")
    local = _run(tmp_path, gpu=False, pip_conf=None, torch="local")
    assert local.returncode == 2 and "offers no torch wheel" in local.stderr


def test_a_package_mirror_is_used_for_torch(tmp_path):
    r = _run(tmp_path, gpu=False, pip_conf=None,
             env_extra={"PIP_INDEX_URL": "https://mirror.invalid/simple"})
    assert "torch: local build" in r.stdout and "mirror.invalid" in r.stdout
    assert CPU_INDEX not in r.stdout


def test_no_torch_extra_installs_no_torch(tmp_path):
    r = _run(tmp_path, gpu=False, pip_conf=None, extras="dev")
    assert r.returncode == 0 and "torch" not in r.stdout.replace(".[dev]", "")
