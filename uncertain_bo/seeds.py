"""Seeds derived from a run's seed: one formula for every random draw a decision or a recommendation makes."""
from __future__ import annotations

__all__ = ['SEED_STRIDE', 'decision_seed']

#: a prime larger than any run's number of measurements, so that two (run seed, count) pairs never share a seed
SEED_STRIDE = 100_003


def decision_seed(run_seed: int, count: int) -> int:
    """The seed of the decision or recommendation made at measurement ``count`` of a run seeded ``run_seed``:
    ``run_seed * 100_003 + count``."""
    return int(run_seed) * SEED_STRIDE + int(count)
