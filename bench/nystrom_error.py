"""Accuracy of the MMD² estimators in AIRBO's Table 1 settings (beta(0.4, 0.2, scale 0.1) inputs on [0, 1]).

For pairs ``P = law of x + δ``, ``Q = law of x + c + δ`` (δ ~ beta(0.4, 0.2, 0.1), offsets ``c`` from 0 to
0.5, i.e. the range of pairs in a [0, 1] design), with AIRBO's base kernel (Eq. 32, all lengthscales 1 in
unit-cube units), this prints the mean absolute error of

- Nyström (Eq. 12): m = 100, h = 10 and m = 1000, h = 100 (the Table's rows);
- the empirical U-statistic (Eq. 8): m = 20, 100, 1000 (the Table's other rows);

against the **empirical estimator with m = 10⁴ samples** (the issue's reference), and against the exact
population MMD² from Gauss-Jacobi quadrature over the beta density (which also gives the reference's own
error). Each estimate uses fresh samples (``--repeats`` per offset). No timing, no assertions.

Usage::

    .venv/bin/python bench/nystrom_error.py [--repeats 30] [--threads 1] [--only nystrom]

Output: the exact MMD² curve, the reference's own error, and a Markdown table with one row per estimator.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import torch
from scipy.special import roots_jacobi

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))

from uncertain_bo.distributions import DTYPE, Empirical  # noqa: E402
from uncertain_bo.kernels import (AdditiveRQKernel, MMDKernel, embedding_inner_products,  # noqa: E402
                                  embedding_self_inner_products)
from uncertain_bo.noise import BetaNoise  # noqa: E402

OFFSETS = np.round(np.linspace(0.0, 0.5, 11), 3)
ESTIMATORS = [('nystrom', 100, 10), ('nystrom', 1000, 100), ('empirical', 20, None), ('empirical', 100, None),
              ('empirical', 1000, None)]
A, B, SCALE = 0.4, 0.2, 0.1


def exact_mmd2(offsets: np.ndarray, base: AdditiveRQKernel, n_nodes: int = 300) -> np.ndarray:
    """Population MMD²(P, P + c) = 2 E k(u, u') - 2 E k(u, v + c), u, u', v ~ beta(A, B) * SCALE independent,
    by Gauss-Jacobi quadrature (the beta density is the Jacobi weight; the RQ kernel is analytic)."""
    x, w = roots_jacobi(n_nodes, B - 1.0, A - 1.0)  # weight (1-x)^(B-1) (1+x)^(A-1) on [-1, 1]
    s = torch.tensor(SCALE * (1.0 + x) / 2.0, dtype=DTYPE).unsqueeze(-1)
    w = torch.tensor(w / w.sum(), dtype=DTYPE)
    with torch.no_grad():
        out = []
        for c in offsets:
            e_self = w @ base.forward(s, s) @ w
            e_cross = w @ base.forward(s, s + float(c)) @ w
            out.append(float(2 * e_self - 2 * e_cross))
    return np.array(out)


def reference_mmd2(offsets: np.ndarray, base: AdditiveRQKernel, m: int, gen: torch.Generator) -> np.ndarray:
    """Empirical U-statistic with m samples per distribution (independent samples for P and Q)."""
    noise = BetaNoise(A, B, SCALE)
    zero = torch.zeros(1, 1, dtype=DTYPE)
    u = noise.sample_locations(zero, m, gen)  # (1, m, 1)
    v = noise.sample_locations(zero, m, gen)
    wts = torch.full((1, m), 1.0 / m, dtype=DTYPE)
    with torch.no_grad():
        kd = float(base.forward(u[0, :1], u[0, :1])[0, 0])  # k(x, x) (stationary)
        u_self = (float(embedding_self_inner_products(u, wts, base.forward)) - kd / m) * m / (m - 1)
        v_self = (float(embedding_self_inner_products(v, wts, base.forward)) - kd / m) * m / (m - 1)
        shifted = v + torch.tensor(offsets, dtype=DTYPE).reshape(-1, 1, 1)
        cross = embedding_inner_products(u, wts, shifted, wts.expand(len(offsets), -1), base.forward)
    return u_self + v_self - 2 * cross.reshape(-1).numpy()


def estimates(estimator: str, m: int, h: int | None, repeats: int, gen: torch.Generator) -> np.ndarray:
    """``(repeats, len(OFFSETS))`` estimates from fresh samples."""
    kernel = MMDKernel(1, estimator=estimator, n_landmarks=h or 1)
    noise = BetaNoise(A, B, SCALE)
    x0 = torch.full((repeats, 1), 0.25, dtype=DTYPE)
    out = np.empty((repeats, len(OFFSETS)))
    with torch.no_grad():
        for j, c in enumerate(OFFSETS):
            p = Empirical(noise.sample_locations(x0, m, gen))
            q = Empirical(noise.sample_locations(x0 + float(c), m, gen))
            out[:, j] = kernel.mmd2(kernel.encode(p), kernel.encode(q), diag=True).numpy()
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--repeats', type=int, default=30)
    ap.add_argument('--threads', type=int, default=1, help='torch threads')
    ap.add_argument('--reference-m', type=int, default=10_000)
    ap.add_argument('--only', choices=['nystrom', 'empirical'], default=None,
                    help="only the Nyström (Table 1's Nyström rows) or only the empirical estimators")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(0)
    base = AdditiveRQKernel()
    t0 = time.perf_counter()
    exact = exact_mmd2(OFFSETS, base)
    check = exact_mmd2(OFFSETS, base, n_nodes=600)
    ref = reference_mmd2(OFFSETS, base, args.reference_m, gen)
    print(f'offsets c: {OFFSETS.tolist()}')
    print(f'exact MMD²(c) (Gauss-Jacobi, 300 nodes; |300 - 600 nodes| = {np.abs(exact - check).max():.1e}):')
    print('   ' + ' '.join(f'{v:.5f}' for v in exact))
    print(f'reference: empirical m = {args.reference_m}, MAE vs exact {np.abs(ref - exact).mean():.2e} '
          f'(max {np.abs(ref - exact).max():.2e})')
    print(f'\nMMD² errors, {args.repeats} repeats x {len(OFFSETS)} offsets (fresh samples each):\n')
    print(f'| estimator | m | h | MAE vs empirical m={args.reference_m} | MAE vs exact | mean std | max abs bias |')
    print('|---|---|---|---|---|---|---|')
    for est, m, h in ESTIMATORS:
        if args.only and est != args.only:
            continue
        e = estimates(est, m, h, args.repeats, gen)
        print(f'| {est} | {m} | {h or "-"} | {np.abs(e - ref).mean():.2e} | {np.abs(e - exact).mean():.2e} '
              f'| {e.std(0).mean():.2e} | {np.abs(e.mean(0) - exact).max():.2e} |', flush=True)
    print(f'\n{time.perf_counter() - t0:.0f} s, {torch.get_num_threads()} threads, load {os.getloadavg()[0]:.1f}')


if __name__ == '__main__':
    main()
