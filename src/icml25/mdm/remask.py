"""Remasking schedules (ReMDM, Wang et al. 2025) for a count-based masked-diffusion decoder.

Without remasking a revealed token is final. With a schedule, each step also sends back to
[MASK] some of the tokens revealed earlier in the current block, and reveals as many more masked
positions, so the number still masked after the step follows the K schedule as before and the
number of forward passes does not change. The last step of a block never remasks (nothing may
stay masked), and remasking happens only in the part of the run given by ``start``/``stop``
(fractions of the block's steps; ReMDM's "switch"/"loop" windows).

ReMDM's per-token remasking probabilities, in counts: with ``u`` tokens revealed now and ``m``
to stay masked after this step, the largest probability that keeps the schedule is
``sigma_max = min(1, m / u)``. The schedules set how many to remask:

- ``cap``      ``min(eta, sigma_max) * u``; which ones: uniformly at random
- ``rescale``  ``eta * sigma_max * u``; which ones: uniformly at random
- ``conf``     ``eta * sigma_max * u``; which ones: the least confident when they were revealed
               (ReMDM-conf weights tokens by the softmax of minus that confidence; we take the
               lowest, deterministically)

**Paced** (``paced=True``, the default of every schedule): every remasked token is paid for by
revealing one more new token in the same pass, so remasking makes the decoder more parallel --
with 20 steps for ~56 blanks, ~3 new cells per pass became ~4, which cost more than the random
corrections earned (docs/mdm.md). ReMDM itself gives remasking passes of its own (its loop phase
holds the masking level constant). A paced schedule does the same within a fixed budget: no pass
reveals more new tokens than the K schedule's busiest pass of the block, ``ceil(masked /
steps)``, so remasking only fills the room the schedule's rounding leaves; and a pass that the
row can spare (more passes left than masked positions: plain decoding would finish early) holds
the masked count level, remasking and revealing alike. With fewer steps than blanks the room is
small (at 50 steps for 56 blanks: at most one token a pass; at 20 steps only in the last few
passes), so a paced schedule stays close to plain decoding; with more steps than blanks it gets
the spare passes. ``paced=False`` is ReMDM's count rule alone, as before.

Defaults (cap 0.05, rescale 0.05, conf 0.1, all paced) were chosen on one held-out Sudoku seed
and measured on another (``benchmarks/mdm_decoding_study.py``, docs/mdm.md).
Counts are rounded stochastically (unbiased). A revealed token is never re-predicted in place:
models trained with the masked-diffusion loss are scored on masked positions only, so their
output at a visible position means nothing; a remasked token is predicted afresh later.
Adding a schedule touches this file only.
"""

from __future__ import annotations

import dataclasses

import torch


def _uniform(shape, generator, like):
    where = generator.device if generator is not None else like.device
    return torch.rand(shape, generator=generator, device=where).to(like.device)


@dataclasses.dataclass(frozen=True)
class _Schedule:
    eta: float
    start: float = 0.0
    stop: float = 1.0
    paced: bool = True

    def __post_init__(self) -> None:
        if not 0.0 <= self.eta <= 1.0:
            raise ValueError(f"remask eta must be in [0, 1], got {self.eta}")
        if not 0.0 <= self.start <= self.stop <= 1.0:
            raise ValueError(f"remask window needs 0 <= start <= stop <= 1, got "
                             f"{self.start}, {self.stop}")

    def active(self, step: int, steps: int) -> bool:
        """Whether step ``step`` (0-based) of ``steps`` lies in the remasking window."""
        return self.start <= step / steps < self.stop

    def sigma(self, sigma_max: torch.Tensor) -> torch.Tensor:
        return self.eta * sigma_max

    def count(self, revealed: torch.Tensor, stay_masked: torch.Tensor,
              generator: torch.Generator | None) -> torch.Tensor:
        """How many revealed tokens each row remasks (``revealed``: u, ``stay_masked``: m)."""
        u = revealed.float()
        sigma_max = torch.where(u > 0, (stay_masked.float() / u.clamp_min(1)).clamp(max=1.0),
                                torch.zeros_like(u))
        expected = self.sigma(sigma_max) * u
        return (expected + _uniform(expected.shape, generator, expected)).floor().long()

    def plan(self, k: torch.Tensor, n_masked: torch.Tensor, revealed: torch.Tensor,
             steps_left: int, pace: torch.Tensor, generator: torch.Generator | None):
        """``(k, r)`` for one step: ``k``, how many masked positions the step reveals on net
        (the K schedule's count comes in), and ``r``, how many revealed tokens it sends back;
        the pass reveals ``k + r`` new ones. ``pace``: ``ceil(masked at the block's start /
        its steps)``, the linear K schedule's busiest pass. Paced, no pass reveals more than
        ``pace`` (remasking fills only the room ``pace - k``), and a pass the row can spare
        (more passes left than masked positions) holds the masked count level: ``k - 1``
        net, as in ReMDM's loop phase."""
        if not self.paced:
            r = self.count(revealed, n_masked - k, generator)
            return k, torch.minimum(r, n_masked - k).clamp_min(0)
        held = k - ((steps_left > n_masked) & (k > 0)).long()
        r = self.count(revealed, n_masked - held, generator)
        r = torch.minimum(r, torch.minimum(n_masked - held, pace - held)).clamp_min(0)
        return torch.where(r > 0, held, k), r

    def weights(self, candidates: torch.Tensor, confidence: torch.Tensor,
                generator: torch.Generator | None) -> torch.Tensor:
        """Larger = remasked first (random by default)."""
        return _uniform(candidates.shape, generator, confidence)

    def pick(self, candidates: torch.Tensor, confidence: torch.Tensor, r: torch.Tensor,
             generator: torch.Generator | None) -> torch.Tensor:
        """Boolean (B, L): ``r[b]`` of the ``candidates`` of row b to remask."""
        from icml25.mdm.planners import select_top_k

        return select_top_k(self.weights(candidates, confidence, generator), candidates, r)


@dataclasses.dataclass(frozen=True)
class Cap(_Schedule):
    """ReMDM-cap: remask probability ``min(eta, sigma_max)``."""

    eta: float = 0.05

    def sigma(self, sigma_max: torch.Tensor) -> torch.Tensor:
        return sigma_max.clamp(max=self.eta)


@dataclasses.dataclass(frozen=True)
class Rescale(_Schedule):
    """ReMDM-rescale: remask probability ``eta * sigma_max``."""

    eta: float = 0.05


@dataclasses.dataclass(frozen=True)
class Conf(_Schedule):
    """ReMDM-conf: ``eta * sigma_max`` of the revealed tokens, the least confident first."""

    eta: float = 0.1

    def weights(self, candidates, confidence, generator):
        return -confidence


REMASK_SCHEDULES: dict[str, type[_Schedule]] = {"cap": Cap, "rescale": Rescale, "conf": Conf}


def check_remask(remask) -> _Schedule | None:
    """``None``, a schedule name (default parameters), ``"name:eta"`` or
    ``"name:eta:start[:stop]"`` (paced), or a schedule object (``paced=False`` for ReMDM's
    count rule alone)."""
    if remask is None or isinstance(remask, _Schedule):
        return remask
    if isinstance(remask, str):
        name, *values = remask.split(":")
        if name in REMASK_SCHEDULES and len(values) <= 3:
            try:
                given = dict(zip(("eta", "start", "stop"), map(float, values), strict=False))
                return REMASK_SCHEDULES[name](**given)
            except ValueError as exc:
                raise ValueError(f"remask {remask!r}: {exc}") from None
    raise ValueError(f"unknown remask schedule {remask!r}; choose one of "
                     f"{tuple(REMASK_SCHEDULES)} (optionally 'name:eta[:start[:stop]]'), a "
                     "schedule object, or None")
