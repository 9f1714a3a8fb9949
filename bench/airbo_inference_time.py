"""AIRBO Table 1 on this CPU: posterior inference time of the MMD-GP for 512 test distributions.

Setting (AIRBO §5.2, Table 1): 1-D inputs on [0, 1] with execution noise
beta(0.4, 0.2, scale 0.1) (one-sided), 50 training distributions, 512 test distributions, each given by
``m`` samples; the MMD kernel with the additive-RQ base kernel (Eq. 32), empirical (Eq. 8) or Nyström
(Eq. 12) estimator. Timed: ``DistributionGP.set_data`` + ``posterior`` (mean and variance of all 512 test
distributions) under ``torch.no_grad()``, i.e. the training kernel matrix and its Cholesky factor are
rebuilt in every repeat. Hyperparameters are the initial ones (inference only, no fitting).

Usage::

    .venv/bin/python bench/airbo_inference_time.py [--repeats 5] [--threads 1] [--with-m1000]
        [--settings nystrom-100-10,empirical-20] [--reference-times ref.json] [--device cpu|cuda]

``--device cuda`` builds the data on the CPU (the same numbers as ``--device cpu``), moves the samples, the
targets and the model to the GPU and synchronises before reading the clock. Every setting first runs one
untimed inference, reported as "first call": it compiles the fused CPU loops of the MMD kernel for the large
settings (seconds; inductor caches the compiled code on disk) or initialises CUDA; the timed repeats follow.

Output: a Markdown table with our median wall time (± half the min-max range), our median CPU time
(``time.process_time``: on a loaded machine the wall time also counts the time other processes held the
core), the paper's GPU time, the target, and, with ``--reference-times``, the time of AIRBO's reference
implementation measured on this machine and the ratio reference / ours. ``ref.json`` maps setting names
(``nystrom-100-10``, ``nystrom-1000-100``, ``empirical-20``, ``empirical-100``, ``empirical-1000``) to
seconds, either a number or ``{"seconds": s, "note": "..."}``; this script only reads those numbers.

The empirical estimator with m = 1000 needs 512 x 50 x 10^6 base-kernel evaluations (tens of minutes here):
by default its row is extrapolated from ``--subset`` test distributions (our cost is linear in their
number, see :func:`estimate_ours`); ``--with-m1000`` times it in full (one repeat). The paper's GPU times
are printed beside ours for reference (its GPU is not named). Default ``--threads 1``: with other
processes on the 2 cores (load average about 3), two OpenMP threads were 10-25x *slower* than one
(threads wait for each other at every elementwise op); on an idle machine try ``--threads 2``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))

from uncertain_bo.benchmarks.functions_airbo import double_peak  # noqa: E402
from uncertain_bo.distributions import DTYPE, Empirical  # noqa: E402
from uncertain_bo.kernels import MMDKernel  # noqa: E402
from uncertain_bo.models import DistributionGP  # noqa: E402
from uncertain_bo.noise import BetaNoise  # noqa: E402

N_TRAIN, N_TEST = 50, 512

# (estimator, m, h, paper GPU seconds (mean, std), paper batch size)
TABLE1 = [
    ('empirical', 20, None, (1.143, 0.083), 512),
    ('empirical', 100, None, (8.117, 0.040), 128),
    ('empirical', 1000, None, (840.715, 2.182), 1),
    ('nystrom', 100, 10, (0.780, 0.001), 512),
    ('nystrom', 1000, 100, (21.473, 0.984), 128),
]


def make_data(m: int, seed: int = 0, device: str = 'cpu') -> tuple[torch.Tensor, ...]:
    """Training/test targets and their beta(0.4, 0.2, 0.1) sample clouds, drawn on the CPU (the same numbers
    for every device) and moved to ``device``.

    Returns:
        ``(train_samples (50, m, 1), train_y (50,), test_samples (512, m, 1), test_targets (512, 1))``.
    """
    gen = torch.Generator().manual_seed(seed)
    noise = BetaNoise(0.4, 0.2, 0.1)
    x_train = torch.rand(N_TRAIN, 1, dtype=DTYPE, generator=gen)
    x_test = torch.linspace(0, 1, N_TEST, dtype=DTYPE).unsqueeze(-1)
    train = noise.sample_locations(x_train, m, gen)
    executed = noise.sample_executed(x_train, gen)
    y = double_peak(executed) + 0.01 * torch.randn(N_TRAIN, dtype=DTYPE, generator=gen)
    test = noise.sample_locations(x_test, m, gen)
    return tuple(t.to(device) for t in (train, y, test, x_test))


def make_model(estimator: str, h: int | None, device: str = 'cpu') -> DistributionGP:
    """MMD-GP with initial hyperparameters (RQ lengthscales 1, MMD lengthscale GPyTorch's default) on ``device``."""
    kernel = MMDKernel(1, estimator=estimator, n_landmarks=h or 1)
    return DistributionGP(torch.tensor([[0.0], [1.0]], dtype=DTYPE, device=device), kernel).to(device)


def _sync(device: str) -> None:
    if torch.device(device).type == 'cuda':
        torch.cuda.synchronize()


def time_ours(estimator: str, m: int, h: int | None, repeats: int, seed: int = 0,
              cpu_times: list[float] | None = None, device: str = 'cpu',
              first_call: list[float] | None = None) -> tuple[list[float], tuple]:
    """Wall times (s) of ``repeats`` posterior inferences, and the last ``(mean, variance)``; the process CPU
    times are appended to ``cpu_times`` if given. With ``first_call`` (a list), one untimed-for-the-table
    inference runs first (compilation, CUDA initialisation) and its wall time is appended there."""
    train, y, test, _ = make_data(m, seed, device)
    model = make_model(estimator, h, device)
    times, out = [], None
    with torch.no_grad():
        if first_call is not None:
            t0 = time.perf_counter()
            model.set_data(Empirical(train), y)
            model.marginals(Empirical(test))
            _sync(device)
            first_call.append(time.perf_counter() - t0)
        for _ in range(repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            model.set_data(Empirical(train), y)
            out = model.marginals(Empirical(test))
            _sync(device)
            times.append(time.perf_counter() - t0)
            if cpu_times is not None:
                cpu_times.append(time.process_time() - c0)
    return times, out


def estimate_ours(estimator: str, m: int, h: int | None, n_sub: int, seed: int = 0,
                  device: str = 'cpu') -> tuple[float, float]:
    """Extrapolated wall and CPU times (s) for all 512 test distributions from a run on ``n_sub`` of them.

    Our posterior is linear in the number of test distributions (no test-test kernel block), so
    ``T(512) = T_train + 512 / n_sub * T_test(n_sub)``, with the training-side cost (kernel matrix, Cholesky)
    timed separately.
    """
    train, y, test, _ = make_data(m, seed, device)
    model = make_model(estimator, h, device)
    with torch.no_grad():
        t0, c0 = time.perf_counter(), time.process_time()
        model.set_data(Empirical(train), y)
        model.marginals(Empirical(test[:1]))  # builds the training cache (+ one test distribution)
        _sync(device)
        t1, c1 = time.perf_counter(), time.process_time()
        model.marginals(Empirical(test[1:1 + n_sub]))
        _sync(device)
        t2, c2 = time.perf_counter(), time.process_time()
    scale = (N_TEST - 1) / n_sub
    return (t1 - t0) + (t2 - t1) * scale, (c1 - c0) + (c2 - c1) * scale


def setting_name(estimator: str, m: int, h: int | None) -> str:
    """``nystrom-100-10``, ``empirical-20``: the keys of ``--settings`` and ``--reference-times``."""
    return f'{estimator}-{m}' + (f'-{h}' if h else '')


def fmt(times: list[float]) -> str:
    """Median ± half the min-max range (one run: the value)."""
    if len(times) == 1:
        return f'{times[0]:.3f} (1 run)'
    return f'{statistics.median(times):.3f} ± {(max(times) - min(times)) / 2:.3f} ({len(times)} runs)'


def load_reference_times(path: str | None) -> dict[str, tuple[float, str]]:
    """``{setting: (seconds, note)}`` from a JSON file of measured reference times (numbers only)."""
    if not path:
        return {}
    with open(path) as fh:
        raw = json.load(fh)
    out = {}
    for key, val in raw.items():
        if isinstance(val, dict):
            out[key] = (float(val['seconds']), str(val.get('note', '')))
        else:
            out[key] = (float(val), '')
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--repeats', type=int, default=5)
    p.add_argument('--threads', type=int, default=1, help='torch threads (1: see the module docstring)')
    p.add_argument('--with-m1000', action='store_true', help='time the empirical estimator with m = 1000 in full')
    p.add_argument('--subset', type=int, default=8,
                   help='without --with-m1000: test distributions timed for the extrapolated m = 1000 row')
    p.add_argument('--settings', default=None,
                   help='comma-separated subset of ' + ', '.join(setting_name(e, m, h) for e, m, h, *_ in TABLE1))
    p.add_argument('--device', default='cpu', help="torch device of the samples and the model: cpu, cuda, cuda:1, ...")
    p.add_argument('--reference-times', default=None, metavar='JSON',
                   help="measured times of AIRBO's reference implementation on this machine (see docstring)")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    reference = load_reference_times(args.reference_times)
    wanted = set(args.settings.split(',')) if args.settings else None
    known = {setting_name(e, m, h) for e, m, h, *_ in TABLE1}
    if wanted and not wanted <= known:
        p.error(f'unknown settings {sorted(wanted - known)}; choose from {sorted(known)}')
    device = torch.device(args.device)
    where = torch.cuda.get_device_name(device) if device.type == 'cuda' else f'{torch.get_num_threads()} thread(s)'
    print(f'torch {torch.__version__}, device {device} ({where}), float64, '
          f'load average at start {os.getloadavg()[0]:.2f}\n')
    print('| setting | paper GPU (s) | ours, first call (s) | ours, wall (s) | ours, CPU (s) | reference, this CPU (s) '
          '| ratio | target |')
    print('|---|---|---|---|---|---|---|---|')
    for estimator, m, h, (pm, ps), _ in TABLE1:
        name = setting_name(estimator, m, h)
        if wanted and name not in wanted:
            continue
        cpu: list[float] = []
        first: list[float] = []
        if estimator == 'empirical' and m == 1000 and not args.with_m1000:
            ours, ours_cpu = estimate_ours(estimator, m, h, args.subset, device=str(device))
            cpu_txt = f'~{ours_cpu:.0f} (extrap.)'
            ours_txt = f'~{ours:.0f} (extrapolated from {args.subset} test distributions)'
        else:
            reps = 1 if m * (h or m) >= 10 ** 6 else args.repeats
            times, _ = time_ours(estimator, m, h, reps, cpu_times=cpu, device=str(device), first_call=first)
            ours = statistics.median(times)
            ours_txt, cpu_txt = fmt(times), f'{statistics.median(cpu):.3f}'
        ref_txt, ratio_txt, ratio = '-', '-', None
        if name in reference:
            ref_s, note = reference[name]
            ratio = ref_s / ours
            ref_txt = f'{ref_s:.3f}' + (f' ({note})' if note else '')
            ratio_txt = f'{ratio:.1f}x'
        target = []
        if estimator == 'nystrom':
            target.append(f'<= {pm:.3f} s: {"yes" if ours <= pm else "NO"}')
        if ratio is not None:
            target.append(f'>= 5x ref.: {"yes" if ratio >= 5 else "NO"}')
        label = f'{estimator} m={m}' + (f', h={h}' if h else '')
        first_txt = f'{first[0]:.3f}' if first else '-'
        print(f'| {label} | {pm:.3f} ± {ps:.3f} | {first_txt} | {ours_txt} | {cpu_txt} | {ref_txt} | {ratio_txt} | '
              f'{"; ".join(target) or "-"} |', flush=True)
    print(f'\nload average at end {os.getloadavg()[0]:.2f}')


if __name__ == '__main__':
    main()
