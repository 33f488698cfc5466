"""Devices, precision, compilation, accumulation and DDP: the scale-out paths of the trainer,
exercised on the CPU (the CUDA-only choices are tested through their pure functions)."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

import pytest
import torch

from icml25.nn import TrainConfig
from icml25.nn.device import (
    MAX_ACCELERATOR_BATCH,
    activation_bytes_per_row,
    check_device,
    inference_batch_size,
    process_group_backend,
    resolve_device,
    to_cpu,
    to_device,
    use_fused_adamw,
)
from icml25.nn.precision import autocast, grad_scaler

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import toy_train  # noqa: E402


def _close(a: dict, b: dict, atol: float) -> bool:
    return a.keys() == b.keys() and all(torch.allclose(a[k], b[k], atol=atol, rtol=0) for k in a)


# --- devices ----------------------------------------------------------------------------------

def test_device_names_are_checked_at_the_config():
    for name in ("auto", "cpu", "cuda", "cuda:3", "mps"):
        assert check_device(name) == name
    for bad in ("gpu", "cuda:", "cuda:x", "CPU", ""):
        with pytest.raises(ValueError, match="device must be"):
            TrainConfig(steps=1, device=bad)
    with pytest.raises(ValueError, match="precision must be one of fp32, bf16, fp16"):
        TrainConfig(steps=1, precision="fp8")
    with pytest.raises(ValueError, match="grad_accum_steps"):
        TrainConfig(steps=1, grad_accum_steps=0)
    with pytest.raises(ValueError, match="max_seconds"):
        TrainConfig(steps=1, max_seconds=0)
    assert TrainConfig(steps=1).device == "auto" and TrainConfig(steps=1).precision == "fp32"


def test_device_resolution_with_and_without_cuda(monkeypatch):
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    with mock.patch("torch.cuda.is_available", return_value=False):
        assert resolve_device("auto") == torch.device("cpu")
        with pytest.raises(ValueError, match="no CUDA device"):
            resolve_device("cuda:0")
    with mock.patch("torch.cuda.is_available", return_value=True):
        assert resolve_device("auto") == torch.device("cuda", 0)
        assert resolve_device("cuda:2") == torch.device("cuda", 2)
        monkeypatch.setenv("LOCAL_RANK", "3")  # under torchrun: each rank its own GPU
        assert resolve_device("auto") == torch.device("cuda", 3)
        assert resolve_device("cuda") == torch.device("cuda", 3)
        assert resolve_device("cuda:1") == torch.device("cuda", 1)  # explicit wins
        assert resolve_device("cpu") == torch.device("cpu")
    assert process_group_backend(torch.device("cuda", 0)) == "nccl"
    assert process_group_backend(torch.device("cpu")) == "gloo"
    assert use_fused_adamw(torch.device("cuda", 0)) and not use_fused_adamw(torch.device("cpu"))


def test_cuda_gets_tf32_its_local_gpu_and_fused_adamw():
    from icml25.nn.device import configure_backends
    from icml25.nn.trainer import _optimizer

    with mock.patch("torch.set_float32_matmul_precision") as tf32, \
            mock.patch("torch.cuda.set_device") as bind:
        configure_backends(torch.device("cpu"))
        assert not tf32.called and not bind.called
        configure_backends(torch.device("cuda", 1))
        tf32.assert_called_once_with("high")
        bind.assert_called_once_with(torch.device("cuda", 1))
    model = toy_train.make_model()
    cfg = TrainConfig(steps=1)
    assert all(g["fused"] for g in _optimizer(model, cfg, torch.device("cuda", 0)).param_groups)
    assert not any(g["fused"] for g in _optimizer(model, cfg, torch.device("cpu")).param_groups)


def test_batches_move_once_and_tensors_already_there_are_not_copied():
    gen = torch.Generator()
    x, y = torch.zeros(2, 3), torch.ones(2)
    moved = to_device((x, {"y": y, "n": 3}, [y], gen), torch.device("meta"))
    assert moved[0].device.type == "meta" and moved[1]["y"].device.type == "meta"
    assert moved[1]["n"] == 3 and moved[2][0].device.type == "meta" and moved[3] is gen
    same = to_device((x, y), torch.device("cpu"))
    assert same[0] is x and same[1] is y  # no copy per step when the batch is made in place
    meta = {"a": torch.zeros(2, device="meta"), "b": [torch.ones(1, device="meta")], "c": 1}
    with pytest.raises(NotImplementedError):  # meta tensors have no data: .cpu() was tried
        to_cpu(meta)


def test_model_batches_and_optimizer_state_are_on_the_configured_device(tmp_path):
    seen = []

    def probe(model, batch):
        param = next(model.parameters())
        seen.append((param.device, param.dtype, *(t.device for t in batch)))
        return toy_train.loss_fn(model, batch)

    model, state = toy_train.run(str(tmp_path), steps=6, loss=probe, precision="bf16")
    want = resolve_device("cpu")
    assert {s[0] for s in seen} == {want} and {s[2] for s in seen} == {want}
    assert {s[1] for s in seen} == {torch.float32}  # autocast never casts the weights
    saved = torch.load(tmp_path / "checkpoint" / "trainer_state.pt", weights_only=False)
    moments = [v for s in saved["optimizer"]["state"].values() for v in s.values()
               if isinstance(v, torch.Tensor) and v.dim() > 0]
    assert moments and all(m.device.type == "cpu" and m.dtype == torch.float32 for m in moments)
    from safetensors.torch import load_file

    weights = load_file(str(tmp_path / "checkpoint" / "model.safetensors"))
    assert {v.dtype for v in weights.values()} == {torch.float32}


def test_a_fused_optimizer_checkpoint_resumes_with_this_runs_optimizer(tmp_path, monkeypatch):
    """A CUDA run writes a fused AdamW state; a CPU run must resume it with its own choice."""
    monkeypatch.setattr("icml25.nn.trainer.use_fused_adamw", lambda device: True)
    whole_fused, _ = toy_train.run(None, steps=15, dropout=0.0)
    _interrupted(tmp_path, 10, steps=15, dropout=0.0)
    monkeypatch.setattr("icml25.nn.trainer.use_fused_adamw", lambda device: False)
    opts = []
    real = torch.optim.AdamW

    def spy(*a, **kw):
        opts.append(real(*a, **kw))
        return opts[-1]

    monkeypatch.setattr("torch.optim.AdamW", spy)
    resumed, state = toy_train.run(str(tmp_path), steps=15, dropout=0.0)
    assert state.step == 15 and not any(g.get("fused") for g in opts[0].param_groups)
    # The fused and for-each updates differ only in rounding.
    assert _close(whole_fused.state_dict(), resumed.state_dict(), atol=1e-5)


def test_inference_batch_fits_the_device():
    model = toy_train.make_model()
    row = activation_bytes_per_row(model)
    assert row > 0
    cpu, cuda = torch.device("cpu"), torch.device("cuda", 0)
    assert inference_batch_size(model, cpu, 100) == 100
    assert inference_batch_size(model, cuda, 100, free_bytes=4 * row * 700) == 700
    assert inference_batch_size(model, cuda, 100, free_bytes=4 * row * 10) == 100
    assert inference_batch_size(model, cuda, 100, free_bytes=10**15) == MAX_ACCELERATOR_BATCH
    assert inference_batch_size(model, torch.device("mps"), 100) == 400


# --- precision --------------------------------------------------------------------------------

# bf16 keeps 8 significant bits: each rounding of a matmul input costs up to 2^-9 relative, and
# the loss averages many such terms. 1% on the loss of a fixed batch is a loose bound (measured:
# 1.5e-5 relative on this toy; docs/nn.md has the figures at Sudoku-model size).
BF16_LOSS_RTOL = 1e-2


def test_bf16_autocast_on_cpu_is_finite_and_close_to_fp32():
    model = toy_train.make_model(0.0).eval()
    x = torch.randint(0, 8, (64, 6), generator=torch.Generator().manual_seed(3))
    fp32 = toy_train.loss_fn(model, (x, (x + 1) % 8))
    with autocast(torch.device("cpu"), "bf16"):
        logits = model(x)
        bf16 = toy_train.loss_fn(model, (x, (x + 1) % 8))
    assert logits.dtype == torch.bfloat16  # autocast is on...
    assert torch.isfinite(bf16) and bf16.item() != fp32.item()
    assert bf16.item() == pytest.approx(fp32.item(), rel=BF16_LOSS_RTOL)  # ...and close
    # Trained 60 steps each way, the curves stay within the same bound.
    _, s32 = toy_train.run(None, steps=60, dropout=0.0)
    _, s16 = toy_train.run(None, steps=60, dropout=0.0, precision="bf16")
    for a, b in zip(s32.log, s16.log, strict=True):
        assert b["loss"] == pytest.approx(a["loss"], rel=BF16_LOSS_RTOL)
    assert s16.log[-1]["loss"] < 0.5 * s16.log[0]["loss"]


class Killed(Exception):
    pass


def _stop_at(step):
    def on_log(row):
        if row["step"] == step:
            raise Killed  # a kill after the checkpoint of step - 5, before that of step
    return on_log


def _interrupted(path, stop, **kw):
    with pytest.raises(Killed):
        toy_train.run(str(path), on_log=_stop_at(stop), **kw)


def test_fp16_scaler_state_survives_resume(tmp_path):
    def loud(model, batch):  # gradients x 1e4: fp16 overflows until the scaler has backed off
        return toy_train.loss_fn(model, batch) * 1e4

    kw = dict(steps=15, dropout=0.0, precision="fp16", loss=loud)
    whole, whole_state = toy_train.run(None, **kw)
    assert whole_state.scaler["scale"] < 65536.0  # it did back off (skipped steps)
    _interrupted(tmp_path / "a", 10, **kw)
    saved = torch.load(tmp_path / "a" / "checkpoint" / "trainer_state.pt", weights_only=False)
    assert saved["step"] == 5 and saved["scaler"]["scale"] < 65536.0
    resumed, state = toy_train.run(str(tmp_path / "a"), **kw)
    assert state.step == 15 and state.scaler == whole_state.scaler
    assert all(torch.equal(v, resumed.state_dict()[k]) for k, v in whole.state_dict().items())
    # Without the scaler's state the resumed run overflows again and ends elsewhere.
    _interrupted(tmp_path / "b", 10, **kw)
    path = tmp_path / "b" / "checkpoint" / "trainer_state.pt"
    torch.save({**torch.load(path, weights_only=False), "scaler": None}, path)
    forgetful, _ = toy_train.run(str(tmp_path / "b"), **kw)
    assert not all(torch.equal(v, forgetful.state_dict()[k])
                   for k, v in whole.state_dict().items())


def test_grad_scaler_is_on_for_fp16_only():
    cpu = torch.device("cpu")
    assert grad_scaler(cpu, "fp16").is_enabled()
    assert not grad_scaler(cpu, "bf16").is_enabled() and not grad_scaler(cpu, "fp32").is_enabled()


# --- accumulation, compilation, time budget ---------------------------------------------------

def test_k_step_accumulation_equals_one_step_of_the_k_times_batch():
    big, big_state = toy_train.run(None, steps=12, pool=True, dropout=0.0, batch_size=16)
    acc, acc_state = toy_train.run(None, steps=12, pool=True, dropout=0.0, batch_size=4,
                                   grad_accum_steps=4)
    assert _close(big.state_dict(), acc.state_dict(), atol=1e-5)  # float rounding only
    for a, b in zip(big_state.log, acc_state.log, strict=True):
        assert b["loss"] == pytest.approx(a["loss"], rel=1e-6)
        assert b["examples_per_s"] > 0
    # ...and it is not a no-op: a quarter of the batch trains elsewhere.
    small, _ = toy_train.run(None, steps=12, pool=True, dropout=0.0, batch_size=4)
    assert not _close(big.state_dict(), small.state_dict(), atol=1e-4)


def _compiled_vs_eager(monkeypatch, backend):
    if backend != "inductor":  # the trainer's own call, on a backend that needs no C++ build
        real = torch.compile
        monkeypatch.setattr("torch.compile", lambda m, **kw: real(m, backend=backend, **kw))
    torch._dynamo.reset()
    _, eager = toy_train.run(None, steps=12, dropout=0.0, log_every=1)
    compiled_model, compiled = toy_train.run(None, steps=12, dropout=0.0, log_every=1,
                                             compile=True)
    assert not any(k.startswith("_orig_mod") for k in compiled_model.state_dict())
    for a, b in zip(eager.log, compiled.log, strict=True):
        assert b["loss"] == pytest.approx(a["loss"], rel=1e-5, abs=1e-6)


def test_compiled_and_eager_losses_agree(monkeypatch):
    _compiled_vs_eager(monkeypatch, "aot_eager")


@pytest.mark.slow
def test_compiled_with_inductor_and_eager_losses_agree(monkeypatch):
    _compiled_vs_eager(monkeypatch, "inductor")  # ~40 s on 2 cores with a cold cache


def test_max_seconds_stops_at_the_first_step_past_it_with_a_log_row_and_a_checkpoint(tmp_path):
    _, state = toy_train.run(str(tmp_path), steps=1000, slow=0.02, max_seconds=0.05)
    assert state.stopped_early and 1 <= state.step < 1000
    assert state.log[-1]["step"] == state.step  # the last row is the stopping step
    saved = torch.load(tmp_path / "checkpoint" / "trainer_state.pt", weights_only=False)
    assert saved["step"] == state.step
    _, whole = toy_train.run(None, steps=10)
    assert not whole.stopped_early


def test_a_budget_fits_the_step_count_after_start_up_and_resumes_with_it(tmp_path):
    # 0.01 s a step (plus the step's own work) after a slow start-up (the first 3 steps),
    # budget 5 s: the rate left out of the fit is the start-up's, so a few hundred steps fit,
    # not the 1000 configured (a busy machine fits fewer; never more).
    slow = {"n": 0}

    def clock(step, gen, rank):  # noqa: ARG001
        slow["n"] += 1
        time.sleep(0.1 if slow["n"] <= 3 else 0.01)
        return toy_train.batch_fn(step, gen, rank)

    _, state = toy_train.run(str(tmp_path), steps=1000, budget_seconds=5,
                             calibration_skip=3, calibration_steps=3, batch_source=clock)
    fit = state.budget
    assert fit["at_step"] == 6 and fit["configured_steps"] == 1000
    assert fit["startup_seconds"] >= 0.3 and fit["steps_per_s"] > 0
    assert 6 < fit["steps"] < 1000 and state.step == fit["steps"] and not state.stopped_early
    assert json.loads((tmp_path / "train_budget.json").read_text()) == fit
    saved = torch.load(tmp_path / "checkpoint" / "trainer_state.pt", weights_only=False)
    assert saved["budget"] == fit
    # resumed, the run keeps the steps it fitted (nothing left to do)
    _, again = toy_train.run(str(tmp_path), steps=1000, budget_seconds=5,
                             calibration_skip=3, calibration_steps=3)
    assert again.step == fit["steps"] and again.budget == fit


def test_a_sigterm_stops_training_at_the_next_step_with_a_checkpoint(tmp_path):
    import signal

    src = str(HERE.parents[1] / "src")  # this checkout's code, not an installed copy
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), src]), ICML25_NO_PROGRESS="1",
               OMP_NUM_THREADS="1")
    proc = subprocess.Popen([sys.executable, str(HERE / "toy_train.py"), str(tmp_path), "100000",
                             "0.01"], env=env, stderr=subprocess.PIPE, text=True)
    ckpt = tmp_path / "checkpoint" / "trainer_state.pt"
    deadline = time.monotonic() + 120
    while not ckpt.exists() and time.monotonic() < deadline:  # training has begun
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == 0, proc.stderr.read()[-2000:]  # it finished, not killed
    log = json.loads((tmp_path / "final_log.json").read_text())
    saved = torch.load(ckpt, weights_only=False)
    assert 5 <= saved["step"] < 100000 and saved["step"] == log[-1]["step"]


def test_budget_steps_never_exceed_the_configured_steps():
    from icml25.nn.trainer import steps_in_budget

    assert steps_in_budget(10, 1e6, 1.0, 100.0, 500) == 500
    assert steps_in_budget(10, 2.0, 1.0, 6.0, 500) == 20
    with pytest.raises(ValueError, match="budget_seconds"):
        TrainConfig(steps=1, budget_seconds=-1)
    with pytest.raises(ValueError, match="compile_mode"):
        TrainConfig(steps=1, compile_mode="fastest")


# --- many processes ---------------------------------------------------------------------------

def test_two_processes_accumulating_two_match_one_process_with_the_doubled_batch(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(HERE), ICML25_NO_PROGRESS="1", OMP_NUM_THREADS="1")
    torchrun = Path(sys.executable).with_name("torchrun")
    out = subprocess.run([str(torchrun), "--nproc_per_node=2", "--master_port=29514",
                          str(HERE / "toy_train.py"), str(tmp_path), "10", "0", "pool=1",
                          "dropout=0", "grad_accum_steps=2"],
                         env=env, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    ddp = torch.load(tmp_path / "final.pt")
    # Each of the 2 processes accumulates 2 micro-batches of 4: 16 rows a step, as 1 process
    # with the doubled batch (8) accumulating 2, or with all 16 rows in one batch.
    doubled, _ = toy_train.run(None, steps=10, pool=True, dropout=0.0, batch_size=8,
                               grad_accum_steps=2)
    whole, _ = toy_train.run(None, steps=10, pool=True, dropout=0.0, batch_size=16)
    assert _close(ddp, doubled.state_dict(), atol=1e-5)
    assert _close(ddp, whole.state_dict(), atol=1e-5)
    alone, _ = toy_train.run(None, steps=10, pool=True, dropout=0.0, grad_accum_steps=2)
    assert not _close(ddp, alone.state_dict(), atol=1e-4)  # rank 0's half alone differs
