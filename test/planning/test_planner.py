"""Planner (uGP-UCB, Algorithm 1) on a 2-D problem whose robust optimum is known in closed form."""
import json

import pytest
import torch

from uncertain_bo.distributions import Gaussian, GaussianExecutionNoise
from uncertain_bo.planning.planner import InvalidObservationError, Planner

BOUNDS = torch.tensor([[0.0, 0.0], [1.0, 1.0]])
# f = tall narrow bump + lower broad bump; execution noise N(0, σ² I)
BUMPS = [(1.0, 0.03, (0.2, 0.2)), (0.8, 0.15, (0.7, 0.7))]
SIGMA = 0.08


def f(x):
    return sum(a * torch.exp(-(x - torch.tensor(c)).pow(2).sum(-1) / (2 * s * s)) for a, s, c in BUMPS)


def g(x):
    """Robust objective E[f(x + ε)], ε ~ N(0, σ²I): Gaussian bumps convolve in closed form."""
    return sum(a * s * s / (s * s + SIGMA ** 2)
               * torch.exp(-(x - torch.tensor(c)).pow(2).sum(-1) / (2 * (s * s + SIGMA ** 2)))
               for a, s, c in BUMPS)


def run(seed, n=25, journal=None):
    gen = torch.Generator().manual_seed(seed)
    planner = Planner(BOUNDS, GaussianExecutionNoise.isotropic(SIGMA, 2), n_initial=5, seed=seed,
                      journal=journal)
    for _ in range(n - planner.n):
        x = planner.suggest()
        assert ((x >= BOUNDS[0]) & (x <= BOUNDS[1])).all()
        x_true = x + SIGMA * torch.randn(2, generator=gen)          # execution noise
        est = x_true + 0.5 * SIGMA * torch.randn(2, generator=gen)  # localisation estimate
        loc = Gaussian(est.reshape(1, 2), torch.eye(2) * (0.5 * SIGMA) ** 2)
        y = float(f(x_true.reshape(1, 2))) + 0.01 * float(torch.randn(1, generator=gen))
        planner.observe(x, loc, y)
    return planner


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_finds_robust_not_nominal_optimum(seed):
    planner = run(seed)
    rec = planner.recommend()
    g_star = float(g(torch.tensor([[0.7, 0.7]])))
    regret = g_star - float(g(rec.target.reshape(1, 2)))
    assert regret < 0.05 * g_star, (rec, regret)
    # the nominal peak (0.2, 0.2) has higher f but much lower g; it must not be recommended
    assert (rec.target - torch.tensor([0.2, 0.2])).norm() > 0.2
    assert len(planner.decisions) == 25
    assert [d.phase for d in planner.decisions] == ['initial'] * 5 + ['acquisition'] * 20
    assert all(d.seconds > 0 and d.beta == 3.0 for d in planner.decisions[5:])


def test_invalid_observations_store_nothing(tmp_path):
    path = tmp_path / 'j.jsonl'
    planner = Planner(BOUNDS, GaussianExecutionNoise.isotropic(SIGMA, 2), journal=path)
    x = planner.suggest()
    size = path.stat().st_size
    bad_cov = torch.tensor([[[1.0, 2.0], [2.0, 1.0]]])
    cases = [
        (x, Gaussian(torch.zeros(1, 2), bad_cov, validate=False), 1.0, 'positive semi-definite'),
        (x, Gaussian(torch.full((1, 2), float('nan')), torch.eye(2), validate=False), 1.0, 'NaN'),
        (x, Gaussian(torch.zeros(1, 2), torch.eye(2)), float('inf'), 'finite'),
        (torch.tensor([float('nan'), 0.0]), Gaussian(torch.zeros(1, 2), torch.eye(2)), 1.0, 'target'),
        (x, Gaussian(torch.zeros(2, 2), torch.eye(2)), 1.0, 'batch of 1'),
    ]
    for target, loc, y, msg in cases:
        with pytest.raises(InvalidObservationError, match=msg):
            planner.observe(target, loc, y)
    assert planner.n == 0
    assert path.stat().st_size == size


def test_fixed_hyperparameters_use_cheap_updates():
    planner = Planner(BOUNDS, GaussianExecutionNoise.isotropic(SIGMA, 2), refit_every=0, n_initial=3)
    planner.model.set_hyperparameters(lengthscale=0.15, outputscale=1.0, noise=1e-3)
    before = planner.model.hyperparameters()
    for _ in range(6):
        x = planner.suggest()
        planner.observe(x, Gaussian(x.reshape(1, 2), torch.eye(2) * 1e-4), float(f(x.reshape(1, 2))))
    planner.suggest()
    assert planner.model.hyperparameters()['lengthscale'] == pytest.approx(before['lengthscale'])
    assert all(d.fit_seconds == 0.0 for d in planner.decisions)


def test_the_model_holds_every_observation_as_soon_as_it_is_stored():
    """Before: ``planner.model`` lagged ``observe()`` until the next decision, prediction or recommendation (contrary
    to docs/methods.md: the model a user's BoTorch acquisition evaluates is the one the planner decides on)."""
    p = Planner(BOUNDS, GaussianExecutionNoise.isotropic(SIGMA, 2), n_initial=3, seed=1)
    X = torch.tensor([[0.2, 0.3], [0.7, 0.6]], dtype=torch.float64)
    for _ in range(5):
        x = p.suggest()
        p.observe(x, Gaussian(x.reshape(1, 2), torch.eye(2) * 1e-4), float(f(x.reshape(1, 2))))
        assert p.model.n == p.n and torch.equal(p.model.train_y, p.y)
    p.observe(None, Gaussian(X[:1], torch.eye(2) * 1e-4), 0.5)          # an en-route reading
    assert p.model.n == p.n + p.n_en_route == 6
    with torch.no_grad():
        mean, var = p.model.marginals(p.candidates(X))
    assert torch.equal(mean, p.predict(X)[0]) and torch.equal(var.sqrt(), p.predict(X)[1])


def test_refit_schedule_fits_through_the_initial_design_then_every_refit_every():
    """With refit_every > 1 the first decision must not rest on a fit to the first observation (review
    defect: fits happened at n = 1 and n = 1 + refit_every)."""
    import torch

    from uncertain_bo.distributions import Gaussian, GaussianExecutionNoise
    from uncertain_bo.planning.planner import Planner

    bounds = torch.tensor([[0.0, 0.0], [10.0, 10.0]], dtype=torch.float64)
    p = Planner(bounds, GaussianExecutionNoise.isotropic(0.1, 2), n_initial=5, refit_every=10, seed=3)
    fitted = []
    for _ in range(16):
        x = p.suggest()
        if p.decisions[-1].phase == 'acquisition':
            fitted.append(p.fitted_on)
        p.observe(x, Gaussian(x[None], torch.eye(2, dtype=torch.float64)[None] * 0.01),
                  float(torch.sin(x[0]) * torch.cos(x[1])))
        p.recommend()
        if p.n <= 5:
            assert p.fitted_on == p.n            # every observation of the initial design
    assert fitted[0] == 5                        # the first decision uses the whole initial design
    assert set(fitted[:10]) == {5} and fitted[10] == 15   # then every refit_every = 10 observations


def test_initial_design_does_not_depend_on_torchs_default_dtype():
    # torch's SobolEngine computes its first point in the default dtype when constructed: under a float32 default
    # the first target was rounded to float32 (1e-8 off), and a benchmark's records depended on the process
    designs = []
    default = torch.get_default_dtype()
    try:
        for dtype in (torch.float32, torch.float64):
            torch.set_default_dtype(dtype)
            designs.append(Planner(BOUNDS, GaussianExecutionNoise.isotropic(SIGMA, 2), n_initial=5, seed=3)
                           .initial_design)
    finally:
        torch.set_default_dtype(default)
    assert designs[0].dtype == designs[1].dtype == torch.float64
    assert torch.equal(designs[0], designs[1])


def test_a_team_rovers_decision_numbers_on_after_the_pending_targets_and_tours_the_design_from_its_position(
        tmp_path):
    """``suggest(pending=..., position=..., rover=...)`` (one rover of a team, uncertain_bo/team/mission.py): the
    initial-design pick is the design target nearest to the rover among those neither measured nor pending, the index
    counts the pending targets, and the rover is journaled with the decision."""
    p = Planner(BOUNDS, GaussianExecutionNoise.isotropic(SIGMA, 2), n_initial=5, seed=3,
                journal=tmp_path / 'journal.jsonl')
    design = p.initial_design.clone()
    near = torch.tensor([0.001, 0.0])   # a rover next to a design target
    first = p.suggest(position=design[3] + near, rover='rover0')
    assert torch.equal(first, design[3])
    # another rover next to the same target: it is pending, so the nearest of the others
    second = p.suggest(pending=first, position=design[3] - near, rover='rover1')
    others = torch.cat([design[:3], design[4:]])
    assert torch.equal(second, others[(others - design[3]).norm(dim=-1).argmin()])
    # measured targets are taken too
    p.observe(first, Gaussian(first.reshape(1, 2), 1e-4 * torch.eye(2)), 0.5)
    third = p.suggest(pending=second, position=first, rover='rover0')
    left = [t for t in design if not (torch.equal(t, first) or torch.equal(t, second))]
    assert torch.equal(third, min(left, key=lambda t: float((t - first).norm())))
    assert [(d.index, d.rover) for d in p.decisions] == [(0, 'rover0'), (1, 'rover1'), (2, 'rover0')]
    records = [json.loads(line) for line in (tmp_path / 'journal.jsonl').read_text().splitlines()]
    assert [r.get('rover') for r in records if r['type'] == 'decision'] == ['rover0', 'rover1', 'rover0']
    with pytest.raises(ValueError, match='position must be'):
        p.suggest(position=torch.tensor([0.5, float('nan')]))


# ----------------------------------------------------------------- the initial design, visited once in its order
PADDOCK = torch.tensor([[0.0, 0.0], [60.0, 40.0]], dtype=torch.float64)   # m, a field engineer's paddock


def drive(planner, steps, skip_at=None):
    """The targets ``suggest()`` hands a lone rover over ``steps`` measurements, each measured where it was sent;
    at measurement ``skip_at`` the first target sent is not measurable (a keep-out zone of 3 m, as the explorer
    adds) and the one decided instead is measured."""
    from uncertain_bo.acquisition.optimize import OptimizerSettings
    planner.optimizer = OptimizerSettings(num_restarts=2, raw_samples=32, maxiter=30)
    sent = []
    for i in range(steps):
        target = planner.suggest()
        if i == skip_at:
            planner.add_keep_out(target, 3.0, 'sensor silent')
            sent.append(target)
            target = planner.suggest()
        sent.append(target)
        planner.observe(target, Gaussian(target.reshape(1, 2), 0.04 * torch.eye(2, dtype=torch.float64)[None]),
                        float(torch.sin(target[0] / 9.0) + torch.cos(target[1] / 7.0)))
    return torch.stack(sent)


@pytest.mark.parametrize('method, horizon', [('ugp_ucb', 1), ('ugp_ucb', 3), ('ugp_bucb', 1)])
@pytest.mark.parametrize('n_initial, start', [(2, (0.0, 0.0)), (4, (0.0, 0.0)), (4, (60.0, 40.0)),
                                              (5, (30.0, 20.0)), (6, (60.0, 0.0))])
def test_a_lone_rover_visits_each_design_target_once_in_its_order_whatever_the_route_horizon(
        n_initial, start, horizon, method):
    """The design's targets are handed out once each, in their visiting order (``initial_design``), whatever the
    route horizon or batch; the decision after them is the acquisition's, not a design target again (the first
    batch after the design mixes no design target in)."""
    p = Planner(PADDOCK, GaussianExecutionNoise.isotropic(1.0, 2), method=method, n_initial=n_initial, seed=1,
                start=torch.tensor(start, dtype=torch.float64), route_horizon=horizon)
    sent = drive(p, n_initial + 1)
    assert torch.equal(sent[:n_initial], p.initial_design)
    assert [d.phase for d in p.decisions[:n_initial + 1]] == ['initial'] * n_initial + ['acquisition']
    assert torch.cdist(sent[-1:], p.initial_design).min() > 1e-6
    assert [d.index for d in p.decisions[:n_initial + 1]] == list(range(n_initial + 1))


def test_a_design_target_that_cannot_be_measured_is_moved_out_of_its_zone_and_the_tour_goes_on():
    """A skipped design target (keep-out zone) is measured just outside the zone in its place; every other design
    target once, in order, with the route horizon on."""
    p = Planner(PADDOCK, GaussianExecutionNoise.isotropic(1.0, 2), n_initial=5, seed=1,
                start=torch.tensor([0.0, 0.0], dtype=torch.float64), route_horizon=3)
    design = p.initial_design
    sent = drive(p, 5, skip_at=1)
    assert torch.equal(sent[:2], design[:2])                               # sent, then found not measurable
    assert (sent[2] - design[1]).norm() == pytest.approx(3.0, rel=1e-5)    # measured at the zone's edge instead
    assert torch.equal(sent[3:], design[2:])
    assert [d.index for d in p.decisions] == [0, 1, 1, 2, 3, 4]


def test_a_team_rover_is_not_sent_again_to_a_design_target_moved_out_of_a_keep_out_zone():
    """A design target in a keep-out zone is measured at the zone's edge; it is then taken like any measured target,
    so no rover of a team is sent to that edge again (each design target once)."""
    p = Planner(PADDOCK, GaussianExecutionNoise.isotropic(1.0, 2), n_initial=5, seed=0)
    where = torch.tensor([0.0, 0.0], dtype=torch.float64)
    first = p.suggest(position=where, rover='rover0')
    p.add_keep_out(first, 2.0, 'sensor silent')
    sent = []
    for _ in range(5):
        sent.append(p.suggest(position=where, rover='rover0'))
        p.observe(sent[-1], Gaussian(sent[-1].reshape(1, 2), 0.04 * torch.eye(2, dtype=torch.float64)[None]), 0.5)
        where = sent[-1]
    sent = torch.stack(sent)
    assert (sent[0] - first).norm() == pytest.approx(2.0, rel=1e-5)
    assert torch.pdist(sent).min() > 1.0                                   # no target twice
    others = torch.stack([t for t in p.initial_design if not torch.equal(t, first)])
    assert torch.cdist(others, sent[1:]).min(-1).values.max() < 1e-9       # the other four, each once


def sobol_points(bounds, n, seed):
    """``n`` scrambled Sobol points of ``seed`` in ``bounds`` (torch's engine: the oracle of the grown design)."""
    unit = torch.quasirandom.SobolEngine(bounds.shape[1], scramble=True, seed=seed).draw(n, dtype=torch.float64)
    return bounds[0] + unit * (bounds[1] - bounds[0])


def test_a_team_with_more_rovers_than_the_design_gets_a_design_target_each_before_the_first_reading():
    """Three rovers, ``n_initial=2``: before any measurement no acquisition can be computed (the GP has no data), so
    the design grows by the next point of its Sobol sequence: the three rovers get the 3-point design of the seed,
    one target each; once a reading is in, the next decision is the acquisition's."""
    p = Planner(PADDOCK, GaussianExecutionNoise.isotropic(1.0, 2), n_initial=2, seed=4)
    sent = []
    for i, where in enumerate(([0.0, 0.0], [30.0, 20.0], [60.0, 40.0])):
        sent.append(p.suggest(pending=torch.stack(sent) if sent else None,
                              position=torch.tensor(where, dtype=torch.float64), rover=f'rover{i}'))
    sent = torch.stack(sent)
    assert [d.phase for d in p.decisions] == ['initial'] * 3 and [d.index for d in p.decisions] == [0, 1, 2]
    assert torch.cdist(sobol_points(PADDOCK, 3, 4), sent).min(-1).values.max() < 1e-9   # each Sobol point once
    p.observe(sent[0], Gaussian(sent[0].reshape(1, 2), 0.04 * torch.eye(2, dtype=torch.float64)[None]), 0.5)
    fourth = p.suggest(pending=sent[1:], position=sent[0], rover='rover0')
    assert p.decisions[-1].phase == 'acquisition' and torch.cdist(fourth.reshape(1, 2), sent).min() > 1.0


def test_a_batch_larger_than_the_design_before_the_first_reading_is_the_grown_design():
    """``suggest(q=4)`` with ``n_initial=2`` and no data: the 4-point design of the seed, the first two in the
    design's visiting order."""
    p = Planner(PADDOCK, GaussianExecutionNoise.isotropic(1.0, 2), n_initial=2, seed=4,
                start=torch.tensor([0.0, 0.0], dtype=torch.float64))
    design = p.initial_design.clone()
    batch = p.suggest(q=4)
    assert torch.equal(batch[:2], design) and [d.phase for d in p.decisions] == ['initial'] * 4
    assert torch.cdist(sobol_points(PADDOCK, 4, 4), batch).min(-1).values.max() < 1e-9


def test_a_team_rover_gets_one_target_per_call_with_a_batch_method():
    """A team rover's ``suggest(position=...)`` decides one target even for a batch method: nothing queued that no
    rover would be sent to (nor counted as pending), and a second rover is given a design target of its own."""
    p = Planner(PADDOCK, GaussianExecutionNoise.isotropic(1.0, 2), method='ugp_bucb', n_initial=4, seed=0)
    a = p.suggest(position=torch.tensor([0.0, 0.0]), rover='rover0')
    b = p.suggest(pending=a, position=torch.tensor([60.0, 40.0]), rover='rover1')
    assert len(p.queued) == 0 and [d.index for d in p.decisions] == [0, 1]
    assert torch.cdist(torch.stack([a, b]), p.initial_design).min(-1).values.max() < 1e-9 and not torch.equal(a, b)


def test_a_decision_snapshot_is_frozen_and_does_not_follow_the_planner():
    """The planner hands a method an immutable snapshot, never itself: later observations and a run-time change of
    the search box leave a snapshot taken before them as it was."""
    import dataclasses

    p = Planner(BOUNDS, GaussianExecutionNoise.isotropic(SIGMA, 2), n_initial=3, seed=1)
    for _ in range(3):
        x = p.suggest()
        p.observe(x, Gaussian(x.reshape(1, 2), torch.eye(2) * 1e-4), float(f(x.reshape(1, 2))))
    ctx = p.snapshot()
    targets, y, places = ctx.targets.clone(), ctx.y.clone(), ctx.places.clone()
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.index = 7
    x = p.suggest()
    p.observe(x, Gaussian(x.reshape(1, 2), torch.eye(2) * 1e-4), 0.3)
    p.set_bounds(torch.tensor([[0.0, 0.0], [0.5, 0.5]]))
    assert ctx.index == 3 and torch.equal(ctx.targets, targets) and torch.equal(ctx.y, y)
    assert torch.equal(ctx.places, places) and torch.equal(ctx.target_bounds, BOUNDS.double())
    assert not any(isinstance(v, Planner) for v in vars(ctx).values())
