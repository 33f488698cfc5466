"""The posterior upper bound L+ on the risk (Snell & Griffiths 2025, Theorem 4.3).

For losses l_1..l_n in [0, B] the risk R is bounded by the right-rectangle quadrature rule

    L+ = sum_i U_i * l_(i) + U_{n+1} * B,      (U_1, ..., U_{n+1}) ~ Dirichlet(1, ..., 1),

where l_(1) <= ... <= l_(n) are the sorted losses and B gets its own, (n+1)-th, weight.

Writing T_i = U_1 + ... + U_i (the uniform order statistics) and x = (l_(1), ..., l_(n), B),
summation by parts gives ``L+ = B - sum_i T_i * (x_{i+1} - x_i)``. Only the jumps of the sorted
loss vector enter, so a loss vector with m distinct values needs m aggregated Dirichlet
components, not n + 1 — that is the "aggregation" path, and it is exact in distribution.

Three ways to get at L+:
* exact: when every loss of a row lies in {a, B} (0/1 losses are the main case), k of them equal
  to B, then L+ = a + (B - a) * Beta(k + 1, n - k);
* Monte Carlo with common random numbers: one fixed matrix of uniform order statistics T is
  shared by every row (every trial and every lambda), so each draw of L+ is monotone in lambda
  whenever the losses are, and a threshold search on the Monte Carlo quantile is valid;
* mean and variance always in closed form.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator

import numpy as np
from scipy import special

from icml25.conformal._validation import check_bound, check_losses

__all__ = ["RiskPosterior", "uniform_order_statistics"]

VARIANTS = ("paper", "official")
# Rows with at most this many jumps in the sorted loss vector use the aggregated (gather) path.
_MAX_GROUPS = 48
# Cap on the number of doubles a chunk of Monte Carlo samples may hold (~160 MB).
_CHUNK_DOUBLES = 20_000_000


@functools.lru_cache(maxsize=8)
def _cached_order_statistics(n: int, n_draws: int, seed: int) -> np.ndarray:
    out = _draw_order_statistics(n, n_draws, np.random.default_rng(seed))
    out.setflags(write=False)
    return out


def _draw_order_statistics(n: int, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    # Dirichlet(1,...,1) with n+1 components = normalised exponentials; cumulative sums of the
    # first n components are the sorted uniforms T_(1) <= ... <= T_(n).
    # Built as an (n, S) C-ordered array and returned transposed, so that gathering the
    # order statistic T_(i) for all draws (a row of the transpose) is one contiguous read.
    e = rng.standard_exponential((n + 1, n_draws))
    c = np.cumsum(e, axis=0)
    return (c[:n] / c[n]).T


def uniform_order_statistics(n: int, n_draws: int, random_state=0) -> np.ndarray:
    """``(n_draws, n)`` array of sorted Uniform(0,1) samples: the common random numbers.

    An integer ``random_state`` gives a cached, read-only array (the same draws for every call
    with the same ``(n, n_draws, random_state)``, which is what makes results monotone in lambda);
    a ``numpy.random.Generator`` gives fresh draws.

    Parameters
    ----------
    n : int
        Number of uniforms per draw.
    n_draws : int
        Number of draws (rows).
    random_state : int, numpy.random.Generator or None, default=0
        Seed (cached), a generator (fresh draws) or None (fresh, unseeded).

    Returns
    -------
    ndarray of shape (n_draws, n)
        Each row sorted ascending.

    Examples
    --------
    >>> import numpy as np
    >>> from icml25.conformal import uniform_order_statistics
    >>> u = uniform_order_statistics(3, 5, random_state=0)
    >>> u.shape, bool((np.diff(u, axis=1) >= 0).all())
    ((5, 3), True)
    >>> u is uniform_order_statistics(3, 5, random_state=0)     # cached
    True
    """
    if isinstance(random_state, np.random.Generator):
        return _draw_order_statistics(int(n), int(n_draws), random_state)
    if random_state is None:
        return _draw_order_statistics(int(n), int(n_draws), np.random.default_rng())
    return _cached_order_statistics(int(n), int(n_draws), int(random_state))


def support_values(losses: np.ndarray, bound: float, variant: str = "paper") -> np.ndarray:
    """Sorted values ``x`` (rows, n+1) whose Dirichlet(1,...,1) average is L+.

    ``paper``: (l_1, ..., l_n, B), B with its own weight. ``official``: the indexing of the
    authors' code, (l_1 + B, l_2, ..., l_n, 0): same mean, larger spread (kept only to compare
    with their published numbers).
    """
    losses = np.atleast_2d(losses)
    rows = losses.shape[0]
    if variant == "paper":
        x = np.concatenate([losses, np.full((rows, 1), float(bound))], axis=1)
    elif variant == "official":
        x = np.concatenate([losses, np.zeros((rows, 1))], axis=1)
        x[:, 0] += bound
    else:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    return np.sort(x, axis=1)


def mc_samples(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    """L+ draws (rows, S) from sorted support values ``x`` (rows, n+1) and order statistics ``t``.

    Uses ``L+ = x_{n+1} - sum_i T_i (x_{i+1} - x_i)``; rows with few jumps are evaluated by
    gathering only the needed columns of ``t`` (aggregated Dirichlet components).
    """
    jumps = np.diff(x, axis=1)
    nnz = np.count_nonzero(jumps, axis=1)
    top = x[:, -1][:, None]
    width = int(nnz.max()) if nnz.size else 0
    if width == 0:
        return np.broadcast_to(top, (x.shape[0], t.shape[0])).copy()
    if width > _MAX_GROUPS or width * 4 > jumps.shape[1]:
        return top - jumps @ t.T
    # Gather path: positions and sizes of each row's jumps, padded with zero-size jumps.
    mask = jumps != 0
    rank = np.cumsum(mask, axis=1) - 1
    r_idx, c_idx = np.nonzero(mask)
    pos = np.zeros((x.shape[0], width), dtype=np.intp)
    size = np.zeros((x.shape[0], width))
    pos[r_idx, rank[r_idx, c_idx]] = c_idx
    size[r_idx, rank[r_idx, c_idx]] = jumps[r_idx, c_idx]
    tt = np.ascontiguousarray(t.T)  # (n, S): already contiguous for the cached draws
    s_draws = t.shape[0]
    out = np.empty((x.shape[0], s_draws))
    # Work in row blocks small enough that the accumulator stays in cache.
    block = max(1, 262_144 // s_draws)
    buf = np.empty((block, s_draws))
    for start in range(0, x.shape[0], block):
        stop = min(x.shape[0], start + block)
        acc = out[start:stop]
        acc[:] = top[start:stop]
        b = buf[: stop - start]
        for j in range(int(nnz[start:stop].max())):
            np.take(tt, pos[start:stop, j], axis=0, out=b)
            b *= size[start:stop, j, None]
            acc -= b
    return out


def mc_prob_below(x: np.ndarray, t: np.ndarray, threshold) -> np.ndarray:
    """Share of Monte Carlo draws with L+ <= threshold, per row; same draws as ``mc_samples``.

    Never materialises the (rows, S) sample matrix: rows whose sorted losses have one jump
    (0/1 losses) are answered by a binary search in the pre-sorted column of ``t`` (the draw
    satisfies L+ = top - size * T_pos <= thr iff T_pos >= (top - thr) / size); other rows are
    evaluated block by block with the comparison fused in.
    """
    rows = x.shape[0]
    s_draws, n = t.shape
    thr = np.broadcast_to(np.asarray(threshold, dtype=float), (rows,))
    jumps = np.diff(x, axis=1)
    nnz = np.count_nonzero(jumps, axis=1)
    top = x[:, -1]
    out = np.empty(rows)
    zero = nnz == 0
    out[zero] = (top[zero] <= thr[zero]).astype(float)
    one = np.flatnonzero(nnz == 1)
    if one.size:
        pos = np.argmax(jumps[one] != 0, axis=1)
        size = jumps[one, pos]
        cut = (top[one] - thr[one]) / size
        if one.size <= 4 * n:  # few rows: compare the needed columns directly, no sort
            tt = t.T  # (n, S): rows are contiguous for the cached draws
            out[one] = [np.count_nonzero(tt[p] >= c) / s_draws
                        for p, c in zip(pos, cut, strict=True)]
        else:
            cols = np.sort(t, axis=0).T  # (n, S), rows sorted; offset rows to search at once
            flat = (cols + 2.0 * np.arange(n)[:, None]).ravel()
            below = np.searchsorted(flat, cut + 2.0 * pos, side="left") - pos * s_draws
            out[one] = (s_draws - np.clip(below, 0, s_draws)) / s_draws
    rest = np.flatnonzero(nnz > 1)
    if rest.size:
        block = max(1, 262_144 // s_draws)
        for start in range(0, rest.size, block):
            part = rest[start:start + block]
            out[part] = (mc_samples(x[part], t) <= thr[part, None]).mean(axis=1)
    return out


def _exact_params(losses: np.ndarray, bound: float):
    """Per row: (is_exact, a, k) with L+ = a + (B - a) Beta(k+1, n-k) where exact."""
    lo = losses.min(axis=1)
    at_top = losses == bound
    two_valued = np.all(at_top | (losses == lo[:, None]), axis=1)
    k = at_top.sum(axis=1)
    return two_valued, lo, k


class NotTwoValuedError(ValueError):
    """``exact=True`` was requested for losses that have no closed form."""


class RiskPosterior:
    """Posterior upper bound L+ on the risk given calibration losses in ``[0, bound]``.

    Parameters
    ----------
    losses : array-like, shape (n,) or (m, n)
        Calibration losses; a 2-D array is ``m`` independent loss vectors (trials, lambdas),
        and every summary then returns an array of length ``m``.
    bound : float
        B, the largest possible loss. It enters L+ with its own, (n+1)-th, Dirichlet weight.
    n_draws : int
        Monte Carlo draws for rows that have no closed form.
    random_state : int, Generator or None
        Seed of the common random numbers (an int gives the same draws for every posterior with
        the same n, which makes thresholds found on the Monte Carlo quantile monotone).
    exact : bool or None
        ``None`` (default): closed form (Beta) where a row's losses take values in {a, B},
        Monte Carlo otherwise. ``False``: Monte Carlo for every row. ``True``: closed form or error.
    variant : {"paper", "official"}
        ``"official"`` reproduces the authors' code's Dirichlet indexing (Monte Carlo only).

    Examples
    --------
    >>> post = RiskPosterior([0, 0, 1, 0, 0, 0, 0, 0, 0, 0])   # 1 miss out of 10
    >>> round(post.mean, 4)                                     # (1 + B) / (n + 1)
    0.1818
    >>> round(post.cdf(0.4), 4)                                 # Beta(2, 9) cdf
    0.9536
    """

    def __init__(self, losses, bound: float = 1.0, *, n_draws: int = 10_000, random_state=0,
                 exact: bool | None = None, variant: str = "paper"):
        self.bound = check_bound(bound)
        arr = check_losses(losses, self.bound, ndim=(1, 2))
        self._one_d = arr.ndim == 1
        self.losses = np.atleast_2d(arr)
        self.n = self.losses.shape[1]
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
        if not isinstance(n_draws, int | np.integer) or n_draws < 1:
            raise ValueError(f"n_draws must be a positive integer, got {n_draws!r}")
        self.variant = variant
        self.n_draws = int(n_draws)
        self.random_state = random_state
        ok, self._a, self._k = _exact_params(self.losses, self.bound)
        if exact is False or variant == "official":
            ok = np.zeros_like(ok)
        elif exact is True and not ok.all():
            raise NotTwoValuedError("exact=True needs every loss vector to take values in {a, B} "
                             "(e.g. 0/1 losses with bound=1); use exact=None for Monte Carlo")
        self._exact = ok
        self._exact_arg = exact
        self._t_cache: np.ndarray | None = None

    # ---------------------------------------------------------------- closed forms
    @property
    def is_exact(self):
        """Whether each row's distribution is in closed form (bool or bool array)."""
        return self._out(self._exact)

    @property
    def mean(self):
        """E[L+] = (sum_i l_i + B) / (n + 1)."""
        return self._out((self.losses.sum(axis=1) + self.bound) / (self.n + 1))

    @property
    def var(self):
        """Var[L+] = sum_j (x_j - xbar)^2 / ((n+1)(n+2)) with x the n+1 support values."""
        x = support_values(self.losses, self.bound, self.variant)
        dev = x - x.mean(axis=1, keepdims=True)
        return self._out((dev**2).sum(axis=1) / ((self.n + 1) * (self.n + 2)))

    @property
    def std(self):
        return np.sqrt(self.var)

    # ---------------------------------------------------------------- distribution
    def cdf(self, x):
        """Pr(L+ <= x). For 2-D posteriors x is a scalar, shape (m,) or (m, k)."""
        xx = self._points(x)
        out = np.empty(xx.shape)
        ex = self._exact
        if ex.any():
            out[ex] = self._exact_cdf(xx[ex], ex)
        if (~ex).any():
            rows = np.flatnonzero(~ex)
            t = self._order_stats()
            sv = support_values(self.losses[rows], self.bound, self.variant)
            for j in range(xx.shape[1]):
                out[rows, j] = mc_prob_below(sv, t, xx[rows, j])
        return self._shape_like(out, x)

    def quantile(self, q):
        """Smallest x with Pr(L+ <= x) >= q (the inverted-CDF rule, also for Monte Carlo)."""
        qq = self._points(q)
        if np.any((qq < 0) | (qq > 1)) or np.isnan(qq).any():
            raise ValueError("quantile levels must lie in [0, 1]")
        out = np.empty(qq.shape)
        ex = self._exact
        if ex.any():
            out[ex] = self._exact_ppf(qq[ex], ex)
        if (~ex).any():
            rows = np.flatnonzero(~ex)
            s = self._draw_count()
            for sl, samples in self._mc_chunks(rows):
                samples.sort(axis=1)
                idx = np.clip(np.ceil(qq[rows[sl]] * s - 1e-9).astype(np.intp) - 1, 0, s - 1)
                out[rows[sl]] = np.take_along_axis(samples, idx, axis=1)
        return self._shape_like(out, q)

    def prob_below(self, alpha):
        """Pr(L+ <= alpha): the posterior credibility that the risk is at most alpha."""
        return self.cdf(alpha)

    def sample(self, size: int, rng=None):
        """Fresh draws of L+: shape (size,) for 1-D losses, (m, size) for 2-D."""
        from icml25.core import make_rng

        rng = make_rng(rng)
        size = int(size)
        out = np.empty((self.losses.shape[0], size))
        ex = self._exact
        for r in np.flatnonzero(ex):
            out[r] = self._a[r] + (self.bound - self._a[r]) * _beta_draw(
                rng, self._k[r] + 1, self.n - self._k[r], size)
        rows = np.flatnonzero(~ex)
        if rows.size:
            t = _draw_order_statistics(self.n, size, rng)
            x = support_values(self.losses[rows], self.bound, self.variant)
            out[rows] = mc_samples(x, t)
        return out[0] if self._one_d else out

    def density(self, grid):
        """Density of L+ on ``grid`` (exact rows: Beta pdf; Monte Carlo rows: histogram)."""
        grid = np.asarray(grid, dtype=float)
        out = np.zeros((self.losses.shape[0], grid.size))
        for r in range(self.losses.shape[0]):
            if self._exact[r] and self._k[r] < self.n and self._a[r] < self.bound:
                scale = self.bound - self._a[r]
                from scipy import stats

                out[r] = stats.beta.pdf((grid - self._a[r]) / scale, self._k[r] + 1,
                                        self.n - self._k[r]) / scale
            else:
                # the posterior's own common random numbers (seeded by random_state), so the
                # histogram agrees with cdf / quantile
                x = support_values(self.losses[r:r + 1], self.bound, self.variant)
                samples = mc_samples(x, self._order_stats())[0]
                edges = np.linspace(grid.min(), grid.max(), min(grid.size, 80) + 1)
                hist, _ = np.histogram(samples, bins=edges, density=True)
                centres = 0.5 * (edges[1:] + edges[:-1])
                out[r] = np.interp(grid, centres, hist)
        return out[0] if self._one_d else out

    def plot(self, ax=None, *, alpha: float | None = None, beta: float | None = None,
             label: str | None = None):
        """Plot the density of L+ (1-D posteriors), marking alpha and the beta-quantile."""
        if not self._one_d:
            raise ValueError("plot() draws one posterior; index a row first (posterior[i])")
        from icml25.core import new_figure

        if ax is None:
            _, ax = new_figure()
        hi = float(min(self.bound, self.quantile(0.9999) * 1.1 + 1e-9))
        lo = float(max(0.0, self.quantile(0.0001) * 0.9))
        grid = np.linspace(lo, hi, 400)
        dens = self.density(grid)
        ax.plot(grid, dens, label=label or "posterior of L+")
        ax.fill_between(grid, dens, alpha=0.2)
        if alpha is not None:
            ax.axvline(alpha, color="#D55E00", linestyle="--",
                       label=f"alpha = {alpha:g}: Pr(L+ <= alpha) = {self.cdf(alpha):.3f}")
        if beta is not None:
            ax.axvline(self.quantile(beta), color="#009E73", linestyle=":",
                       label=f"{beta:g}-quantile = {self.quantile(beta):.3f}")
        ax.set_xlabel("risk")
        ax.set_ylabel("density")
        from icml25.core.figures import legend_outside

        legend_outside(ax, "below", fontsize=8)
        return ax

    def __getitem__(self, index) -> RiskPosterior:
        """Row(s) of a 2-D posterior, sharing the same common random numbers."""
        rows = self.losses[index]
        return RiskPosterior(rows, self.bound, n_draws=self.n_draws,
                             random_state=self.random_state, exact=self._exact_arg,
                             variant=self.variant)

    def __len__(self) -> int:
        if self._one_d:
            raise TypeError("a 1-D posterior has no length")
        return self.losses.shape[0]

    def summary(self, alpha: float | None = None, beta: float = 0.95) -> dict:
        """Plain-number summary (1-D posteriors): n, mean, std, quantile, Pr(L+ <= alpha)."""
        out = {"n": self.n, "bound": self.bound, "mean": float(self.mean),
               "std": float(self.std), "beta": beta, "quantile": float(self.quantile(beta)),
               "exact": bool(self.is_exact),
               "n_draws": None if bool(self.is_exact) else self.n_draws}
        if alpha is not None:
            out["alpha"] = alpha
            out["prob_below_alpha"] = float(self.cdf(alpha))
        return out

    def __repr__(self) -> str:
        shape = f"n={self.n}" if self._one_d else f"m={self.losses.shape[0]}, n={self.n}"
        return f"RiskPosterior({shape}, bound={self.bound:g})"

    # ---------------------------------------------------------------- internals
    def _out(self, arr):
        arr = np.asarray(arr)
        return arr[0].item() if self._one_d else arr

    def _points(self, x) -> np.ndarray:
        """Broadcast query points to (m, k)."""
        x = np.asarray(x, dtype=float)
        m = self.losses.shape[0]
        if self._one_d:
            return x.reshape(1, -1)
        if x.ndim == 0:
            return np.full((m, 1), float(x))
        if x.shape[0] != m or x.ndim > 2:
            raise ValueError(f"for {m} loss vectors, points must be a scalar, shape ({m},) "
                             f"or ({m}, k); got shape {x.shape}")
        return x.reshape(m, -1)

    def _shape_like(self, out: np.ndarray, x):
        x = np.asarray(x)
        if self._one_d:
            return out[0].item() if x.ndim == 0 else out[0].reshape(x.shape)
        return out[:, 0] if x.ndim <= 1 else out

    def _exact_cdf(self, xx: np.ndarray, rows_mask: np.ndarray) -> np.ndarray:
        a, k, n, b = self._a[rows_mask, None], self._k[rows_mask, None], self.n, self.bound
        span = b - a
        degenerate = (k >= n) | (span <= 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.clip((xx - a) / np.where(span > 0, span, 1.0), 0.0, 1.0)
            val = special.betainc(k + 1, np.maximum(n - k, 1), z)
        val = np.where(xx < a, 0.0, np.where(xx >= b, 1.0, val))
        top = np.where(k >= n, b, a)  # point mass location when degenerate
        return np.where(degenerate, (xx >= top).astype(float), val)

    def _exact_ppf(self, qq: np.ndarray, rows_mask: np.ndarray) -> np.ndarray:
        a, k, n, b = self._a[rows_mask, None], self._k[rows_mask, None], self.n, self.bound
        val = a + (b - a) * special.betaincinv(k + 1, np.maximum(n - k, 1), qq)
        return np.where(k >= n, b, val)

    def _draw_count(self) -> int:
        return self._order_stats().shape[0]

    def _order_stats(self) -> np.ndarray:
        if self._t_cache is None:
            self._t_cache = uniform_order_statistics(self.n, self.n_draws, self.random_state)
        return self._t_cache

    def _mc_chunks(self, rows: np.ndarray) -> Iterator[tuple[slice, np.ndarray]]:
        t = self._order_stats()
        step = max(1, _CHUNK_DOUBLES // (t.shape[0] * 2))
        for start in range(0, rows.size, step):
            sl = slice(start, start + step)
            x = support_values(self.losses[rows[sl]], self.bound, self.variant)
            yield sl, mc_samples(x, t)


def _count_le(samples: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Per row, how many samples are <= each point: (r, S) x (r, k) -> (r, k)."""
    out = np.empty(points.shape)
    for j in range(points.shape[1]):
        out[:, j] = (samples <= points[:, j, None]).sum(axis=1)
    return out


def _beta_draw(rng: np.random.Generator, a: float, b: float, size: int) -> np.ndarray:
    if b <= 0:
        return np.ones(size)
    return rng.beta(a, b, size)


def beta_prob_below(k, n, alpha, bound: float = 1.0, a=0.0):
    """Exact Pr(L+ <= alpha) for losses in {a, B} with k of them equal to B (vectorised)."""
    k = np.asarray(k)
    span = bound - np.asarray(a, dtype=float)
    z = np.clip((alpha - a) / span, 0.0, 1.0)
    val = special.betainc(k + 1, np.maximum(n - k, 1), z)
    return np.where(k >= n, float(alpha >= bound), val)


def min_n_bq(alpha: float, beta: float, bound: float = 1.0) -> int:
    """Smallest n with 1 - (1 - alpha/B)^n >= beta: below it, even all-zero losses fail."""
    if alpha >= bound:
        return 1
    n = max(1, math.ceil(math.log1p(-beta) / math.log1p(-alpha / bound) - 1e-9))
    while n > 1 and 1 - (1 - alpha / bound) ** (n - 1) >= beta:
        n -= 1
    while 1 - (1 - alpha / bound) ** n < beta:
        n += 1
    return n
