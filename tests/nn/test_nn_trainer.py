import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from icml25.nn import TrainConfig, train

sys.path.insert(0, str(Path(__file__).parent))
import toy_train  # noqa: E402

HERE = Path(__file__).parent


def _same_weights(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_training_lowers_the_loss_and_is_seeded(tmp_path):
    m1, s1 = toy_train.run(None, steps=60)
    m2, _ = toy_train.run(None, steps=60)
    assert _same_weights(m1.state_dict(), m2.state_dict())
    assert s1.log[-1]["loss"] < 0.8 * s1.log[0]["loss"]
    assert {"step", "loss", "lr", "grad_norm", "examples_per_s"} <= s1.log[0].keys()


def test_resume_after_kill_gives_the_same_weights(tmp_path):
    whole, _ = toy_train.run(str(tmp_path / "whole"), steps=30)
    run_dir = tmp_path / "killed"
    env = dict(os.environ, PYTHONPATH=str(HERE), ICML25_NO_PROGRESS="1")
    proc = subprocess.Popen([sys.executable, str(HERE / "toy_train.py"), str(run_dir), "30", "0.1"],
                            env=env)
    state_file = run_dir / "checkpoint" / "trainer_state.pt"
    deadline = time.time() + 60
    while not state_file.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    saved_step = torch.load(state_file, weights_only=False)["step"]
    assert 5 <= saved_step < 30, "the kill should land mid-run"
    resumed, state = toy_train.run(str(run_dir), steps=30)
    assert state.step == 30
    assert _same_weights(whole.state_dict(), resumed.state_dict())


def test_ema_tracks_the_weights():
    model, state = toy_train.run(None, steps=20, ema=0.9)
    assert state.ema is not None
    w = model.state_dict()["head.weight"]
    assert not torch.equal(state.ema["head.weight"], w)
    assert torch.allclose(state.ema["head.weight"], w, atol=0.1)


def test_non_finite_loss_stops_with_a_clear_error():
    model = toy_train.make_model()
    with pytest.raises(FloatingPointError, match="lower the lr"):
        train(model, lambda m, b: m(b).sum() * float("nan"),
              lambda s, g, r: torch.zeros(1, 6, dtype=torch.long), TrainConfig(steps=2))


def test_torchrun_two_processes_on_cpu(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(HERE), ICML25_NO_PROGRESS="1", OMP_NUM_THREADS="1")
    torchrun = Path(sys.executable).with_name("torchrun")
    out = subprocess.run([str(torchrun), "--nproc_per_node=2", "--master_port=29513",
                          str(HERE / "toy_train.py"), str(tmp_path), "10", "0"],
                         env=env, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    final = torch.load(tmp_path / "final.pt")
    saved = torch.load(tmp_path / "checkpoint" / "trainer_state.pt", weights_only=False)
    assert saved["step"] == 10 and "head.weight" in final
    # Gradients were averaged over 2 ranks: differs from a single-process run on rank 0's data.
    single, _ = toy_train.run(None, steps=10)
    assert not _same_weights(single.state_dict(), final)
