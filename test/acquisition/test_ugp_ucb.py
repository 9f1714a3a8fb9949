"""uGP-UCB (``acquisition/ugp_ucb.py``) against closed forms: the score against the posterior of the expected SE
kernel written out in NumPy (``oracle.py``), for Gaussian candidates (uGP-UCB) and point candidates (IGP-UCB), its
gradient against finite differences; the in-box share of the kernel footprint against numerical quadrature; the
batch value (GP-BUCB) against the conditional variances of the NumPy posterior; the batch method through the
planner."""
import math

import numpy as np
import pytest
import torch
from scipy.integrate import dblquad

from uncertain_bo.acquisition.ucb import TargetUpperConfidenceBound, in_box_fraction
from uncertain_bo.distributions import Dirac, Gaussian, GaussianExecutionNoise
from uncertain_bo.models import DistributionGP
from uncertain_bo.acquisition.optimize import maximize
from uncertain_bo.planning.planner import Planner

from . import oracle
from .gaussian_inputs import BOX, DT, EXEC_COV, FAST, LAM, MEAN0, SF2, ELL, gaussian_inputs_gp, noise_model

TARGETS = np.array([[0.0, 11.0], [3.3, 12.5], [6.0, 14.0], [-2.0, 10.0]])   # corners included


@pytest.fixture(scope='module')
def data():
    return gaussian_inputs_gp()


@pytest.mark.parametrize('beta', [0.0, 0.7, 2.5])
def test_ucb_of_gaussian_candidates_is_the_closed_form_mean_plus_beta_std(data, beta):
    gp, x, covs, y = data
    mu, var = oracle.posterior(x, covs, y, TARGETS, [EXEC_COV] * len(TARGETS), ELL, SF2, LAM, MEAN0)
    got = TargetUpperConfidenceBound(gp, noise_model(), beta ** 2).score(torch.as_tensor(TARGETS))
    np.testing.assert_allclose(got.detach().numpy(), mu + beta * np.sqrt(var), rtol=1e-10, atol=1e-12)


def test_ucb_of_point_candidates_is_the_closed_form_of_the_se_kernel(data):
    """Dirac candidates (IGP-UCB's): the expected kernel at Σ = 0 is the plain SE kernel."""
    gp, x, covs, y = data
    mu, var = oracle.posterior(x, covs, y, TARGETS, [np.zeros((2, 2))] * len(TARGETS), ELL, SF2, LAM, MEAN0)
    got = TargetUpperConfidenceBound(gp, Dirac, 9.0).score(torch.as_tensor(TARGETS))
    np.testing.assert_allclose(got.detach().numpy(), mu + 3.0 * np.sqrt(var), rtol=1e-10, atol=1e-12)


def test_ucb_batch_interface_and_gradient(data):
    """BoTorch's ``(b, 1, d) -> (b,)`` call equals the scores; the gradient w.r.t. the targets (what L-BFGS-B
    follows) matches central differences of the closed form."""
    gp, x, covs, y = data
    ucb = TargetUpperConfidenceBound(gp, noise_model(), 4.0)
    t = torch.as_tensor(TARGETS[:2]).clone().requires_grad_(True)
    torch.testing.assert_close(ucb(t.unsqueeze(-2)), ucb.score(t), rtol=0, atol=0)
    ucb.score(t).sum().backward()

    def closed(z):
        mu, var = oracle.posterior(x, covs, y, z[None], [EXEC_COV], ELL, SF2, LAM, MEAN0)
        return float(mu[0] + 2.0 * np.sqrt(var[0]))

    h = 1e-6
    for i, z in enumerate(TARGETS[:2]):
        fd = [(closed(z + h * e) - closed(z - h * e)) / (2 * h) for e in np.eye(2)]
        np.testing.assert_allclose(t.grad[i].numpy(), fd, rtol=1e-6, atol=1e-8)


def test_ucb_rejects_a_negative_or_nan_beta(data):
    for beta in (-0.1, float('nan')):
        with pytest.raises(ValueError, match='beta'):
            TargetUpperConfidenceBound(data[0], Dirac, beta)


def bucb_oracle(data, batch, pending=None, beta=2.0):
    """GP-BUCB's value of ``batch`` (q, 2) with ``pending`` targets: Σ_j μ_j + β σ_j, σ_j² the variance of g at pick j
    given noisy readings (noise λ) at the pending targets and picks 0 .. j-1, from the joint NumPy posterior."""
    gp, x, covs, y = data
    pts = batch if pending is None else np.concatenate([pending, batch])
    mu, cov = oracle.joint_posterior(x, covs, y, pts, [EXEC_COV] * len(pts), ELL, SF2, LAM, MEAN0)
    p = 0 if pending is None else len(pending)
    total = 0.0
    for j in range(p, len(pts)):
        before = slice(0, j)
        c = cov[j, before]
        var = cov[j, j] - (c @ np.linalg.solve(cov[before, before] + LAM * np.eye(j), c) if j else 0.0)
        total += mu[j] + beta * math.sqrt(var)
    return total


def test_batch_value_is_gp_bucb_over_the_joint_posterior(data):
    """q = 3 jointly (``forward`` on ``b x 3 x d``): each pick's σ conditioned on hallucinated readings at the earlier
    picks, against the Schur complements of the NumPy joint posterior."""
    gp = data[0]
    ucb = TargetUpperConfidenceBound(gp, noise_model(), 4.0)
    batches = np.stack([TARGETS[:3], TARGETS[[3, 1, 0]], np.array([[1.0, 12.0], [1.1, 12.1], [5.0, 10.5]])])
    got = ucb(torch.as_tensor(batches)).detach().numpy()
    np.testing.assert_allclose(got, [bucb_oracle(data, b) for b in batches], rtol=1e-9)


def test_pending_targets_shrink_the_variance_where_they_will_measure(data):
    """``X_pending``: the model conditioned on hallucinated readings at the pending targets' candidates (the kriging
    believer keeps the mean) gives each target σ given them, against the NumPy posterior; ``set_X_pending(None)``
    restores the plain score."""
    gp = data[0]
    pending = np.array([[1.0, 12.0], [4.0, 13.0]])
    ucb = TargetUpperConfidenceBound(gp, noise_model(), 4.0, X_pending=torch.as_tensor(pending))
    got = ucb.score(torch.as_tensor(TARGETS)).detach().numpy()
    expected = [bucb_oracle(data, t[None], pending) for t in TARGETS]
    np.testing.assert_allclose(got, expected, rtol=1e-9)
    plain = TargetUpperConfidenceBound(gp, noise_model(), 4.0).score(torch.as_tensor(TARGETS))
    assert (got < plain.detach().numpy()).all()
    ucb.set_X_pending(None)
    torch.testing.assert_close(ucb.score(torch.as_tensor(TARGETS)), plain)


def test_joint_maximisation_of_a_batch_stays_in_the_box(data):
    gp = data[0]
    ucb = TargetUpperConfidenceBound(gp, noise_model(), 4.0)
    x, value = maximize(ucb, BOX, FAST, seed=0, q=2)
    assert x.shape == (2, 2) and ((x >= BOX[0]) & (x <= BOX[1])).all()
    assert value == pytest.approx(float(ucb(x.unsqueeze(0))), rel=1e-9)
    assert float((x[0] - x[1]).norm()) > 0.1          # the hallucinated reading pushes the second pick away


# ----------------------------------------------------------------------------- in-box exploration
@pytest.fixture(scope='module')
def wide():
    box = torch.tensor([[0.0, 0.0], [200.0, 100.0]], dtype=DT)
    gen = torch.Generator().manual_seed(0)
    x = box[0] + torch.rand(12, 2, generator=gen, dtype=DT) * (box[1] - box[0])
    y = torch.sin(x[:, 0] / 30) + torch.cos(x[:, 1] / 20)
    gp = DistributionGP(box, standardize=False, priors=False)
    gp.set_data(Gaussian(x, torch.eye(2, dtype=DT).expand(12, 2, 2) * 0.25), y)
    gp.set_hyperparameters(lengthscale=[25.0, 15.0], outputscale=1.0, noise=1e-3, mean=0.0)
    return gp, box, x.numpy(), y.numpy()


def footprint_inside(point, ell, box):
    """Share of the SE footprint exp(-½‖(z - x)/ℓ‖²) inside the box, by numerical quadrature."""
    x0, y0 = point

    def k(y, x):
        return math.exp(-0.5 * (((x - x0) / ell[0]) ** 2 + ((y - y0) / ell[1]) ** 2))

    inside, _ = dblquad(k, float(box[0, 0]), float(box[1, 0]), float(box[0, 1]), float(box[1, 1]), epsabs=1e-10)
    return inside / (2 * math.pi * ell[0] * ell[1])


@pytest.mark.parametrize('point', [(100.0, 50.0), (0.0, 50.0), (0.0, 0.0), (7.0, 96.0), (190.0, 30.0)])
def test_in_box_fraction_matches_quadrature(wide, point):
    gp, box = wide[0], wide[1]
    got = float(in_box_fraction(gp, torch.tensor([point], dtype=DT))[0])
    assert got == pytest.approx(footprint_inside(point, [25.0, 15.0], box), rel=1e-6)


def test_in_box_ucb_damps_only_the_exploration_term(wide):
    """μ + β φ σ with μ, σ from the NumPy posterior and φ from quadrature: 1/4 in a corner, ~1 in the middle."""
    gp, box, x, y = wide
    cov = np.eye(2) * 0.75 ** 2
    noise = GaussianExecutionNoise.isotropic(0.75, 2)
    pts = np.array([[100.0, 50.0], [0.0, 0.0], [200.0, 55.0]])
    mu, var = oracle.posterior(x, [np.eye(2) * 0.25] * len(x), y, pts, [cov] * len(pts), [25.0, 15.0], 1.0, 1e-3, 0.0)
    phi = np.array([footprint_inside(p, [25.0, 15.0], box) for p in pts])
    got = TargetUpperConfidenceBound(gp, noise, 9.0, in_box=True).score(torch.as_tensor(pts)).detach().numpy()
    np.testing.assert_allclose(got, mu + 3.0 * phi * np.sqrt(var), rtol=1e-6)
    assert phi[1] == pytest.approx(0.25, rel=1e-6) and phi[0] > 0.99


def test_planner_in_box_exploration_applies_to_ucb_methods_only():
    box = torch.tensor([[0.0, 0.0], [200.0, 100.0]], dtype=DT)

    def run(method, in_box):
        p = Planner(box, GaussianExecutionNoise.isotropic(0.75, 2), method=method, n_initial=3, seed=1,
                    in_box_exploration=in_box, optimizer=FAST)
        for _ in range(3):
            x = p.suggest()
            p.observe(x, Gaussian(x[None], torch.eye(2, dtype=DT)[None] * 0.1), float(x[0] / 100))
        return p.suggest()

    x = run('gp_ucb', True)
    assert ((x >= box[0]) & (x <= box[1])).all()
    assert torch.equal(run('uei', True), run('uei', False))   # no exploration bonus to weight


# ----------------------------------------------------------------------------- batches through the planner
def field(x):
    return float(torch.sin(x[0]) + torch.cos(0.8 * x[1]))


def planner(method='ugp_ucb', journal=None, seed=3):
    return Planner(BOX, noise_model(), method=method, n_initial=3, seed=seed, optimizer=FAST, journal=journal)


def observe(p, x, g):
    ex = x + 0.1 * torch.randn(2, generator=g, dtype=DT)
    p.observe(x, Gaussian(ex[None], 0.01 * torch.eye(2, dtype=DT)[None]), field(ex))


def test_suggest_q_is_greedy_gp_bucb_with_the_earlier_picks_pending():
    """``suggest(q=3)``: three decisions (indices n .. n+2); pick j maximises uGP-UCB on the model conditioned on
    picks 0 .. j-1 — so re-deciding pick 2 alone with picks 0, 1 as ``pending`` gives the same target."""
    g = torch.Generator().manual_seed(0)
    p = planner()
    for _ in range(4):
        observe(p, p.suggest(), g)
    batch = p.suggest(q=3)
    assert batch.shape == (3, 2) and ((batch >= BOX[0]) & (batch <= BOX[1])).all()
    assert [d.index for d in p.decisions[-3:]] == [4, 5, 6]
    assert len({tuple(t.tolist()) for t in batch}) == 3
    q = planner()
    g = torch.Generator().manual_seed(0)
    for _ in range(4):
        observe(q, q.suggest(), g)
    q.decisions.clear()
    again = q.suggest(q=1, pending=batch[:2])
    # the same pick, up to the seed: pick 2 of the batch used the seed of measurement 6, this one of measurement 4
    ucb_batch = TargetUpperConfidenceBound(p.model, p.candidates, 9.0, X_pending=batch[:2])
    assert float(ucb_batch.score(again)) == pytest.approx(float(ucb_batch.score(batch[2:])), rel=1e-3)


def test_batch_method_hands_out_its_batch_and_resumes_it_from_the_journal(tmp_path):
    """``ugp_bucb`` decides 3 targets when none is queued and hands them out one per ``suggest()``; a planner reopened
    on the journal mid-batch re-sends the pending target, then the rest of the batch."""
    g = torch.Generator().manual_seed(1)
    path = tmp_path / 'journal.jsonl'
    p = planner('ugp_bucb', journal=path)
    for _ in range(3):
        observe(p, p.suggest(), g)
    first = p.suggest()
    batch = torch.stack([d.target for d in p.decisions[-3:]])
    assert torch.equal(first, batch[0]) and torch.equal(p.queued, batch[1:])
    observe(p, first, g)
    second = p.suggest()
    assert torch.equal(second, batch[1]) and len(p.decisions) == 6        # handed out, not decided again
    resumed = planner('ugp_bucb', journal=path)
    assert torch.equal(resumed.take_resumed_target(), batch[1]) and torch.equal(resumed.queued, batch[2:])
    observe(resumed, batch[1], g)
    assert torch.equal(resumed.suggest(), batch[2])


def test_a_lone_rover_visits_its_batch_along_the_shortest_route_and_an_asked_batch_is_as_decided():
    """Without ``q`` the batch is handed out as the shortest open path from the rover's position (against every
    order, NumPy); the journal numbers the decisions in that order. With ``q`` the caller gets the decided order."""
    import itertools
    g = torch.Generator().manual_seed(4)
    p = planner('ugp_bucb')
    for _ in range(3):
        observe(p, p.suggest(), g)
    position = p.position.numpy()
    visited = torch.stack([p.suggest()] + list(p.queued)).numpy()
    assert [d.index for d in p.decisions[-3:]] == [3, 4, 5]
    assert np.array_equal(np.stack([d.target.numpy() for d in p.decisions[-3:]]), visited)

    def length(order):
        path = np.vstack([position, visited[list(order)]])
        return np.linalg.norm(np.diff(path, axis=0), axis=1).sum()
    assert length(range(3)) == pytest.approx(min(length(o) for o in itertools.permutations(range(3))), rel=1e-12)
    q = planner('ugp_bucb')
    g = torch.Generator().manual_seed(4)
    for _ in range(3):
        observe(q, q.suggest(), g)
    asked = q.suggest(q=3).numpy()                           # decided order: pick j maximises with 0 .. j-1 pending
    assert sorted(map(tuple, asked.round(9))) == sorted(map(tuple, visited.round(9)))


def test_a_route_horizon_drives_to_the_first_stop_of_the_routed_batch_and_decides_again():
    """``route_horizon=3``: ``suggest()`` is the first stop of the shortest route (every order, NumPy) through the
    GP-BUCB batch that ``suggest(q=3)`` decides on the same data; one decision is journaled, nothing is queued, and
    the next call decides afresh from the new position."""
    import itertools

    def fed(horizon):                                       # the same four measurements, past the initial design
        g = torch.Generator().manual_seed(5)
        p = Planner(BOX, noise_model(), n_initial=3, seed=3, optimizer=FAST, route_horizon=horizon)
        for x in torch.as_tensor(TARGETS + [[1.0, 0.5]], dtype=DT):
            observe(p, x, g)
        return p
    batch = fed(1).suggest(q=3).numpy()
    p = fed(3)
    first = p.suggest().numpy()
    position = p.position.numpy()

    def length(order):
        path = np.vstack([position, batch[list(order)]])
        return np.linalg.norm(np.diff(path, axis=0), axis=1).sum()
    best = min(itertools.permutations(range(3)), key=length)
    np.testing.assert_allclose(first, batch[best[0]], atol=1e-9)
    assert len(p.decisions) == 1 and p.decisions[-1].index == 4 and len(p.queued) == 0
    observe(p, torch.as_tensor(first), torch.Generator().manual_seed(6))
    p.suggest()
    assert len(p.decisions) == 2 and p.decisions[-1].index == 5


def test_a_survey_keeps_its_own_tour_whatever_the_route_horizon():
    tours = []
    for horizon in (1, 3):
        p = Planner(BOX, noise_model(), method='lawnmower', budget=6, seed=2, optimizer=FAST, route_horizon=horizon)
        g = torch.Generator().manual_seed(0)
        tour = []
        for _ in range(6):
            tour.append(p.suggest())
            observe(p, tour[-1], g)
        tours.append(torch.stack(tour))
    assert torch.equal(tours[0], tours[1])


@pytest.mark.parametrize('horizon', [0, True, 2.5])
def test_a_route_horizon_is_a_count(horizon):
    with pytest.raises(ValueError, match='route_horizon must be an integer >= 1'):
        Planner(BOX, noise_model(), route_horizon=horizon)


def test_a_route_horizon_longer_than_the_initial_design_starts_without_readings():
    """Before the first reading there is no GP to fantasise on: the first decision routes the design only."""
    g = torch.Generator().manual_seed(7)
    p = Planner(BOX, noise_model(), n_initial=1, seed=3, optimizer=FAST, route_horizon=3)
    first = p.suggest()
    assert torch.equal(first, p.initial_design[0]) and p.decisions[-1].phase == 'initial'
    observe(p, first, g)
    assert p.decisions[-1].index == 0 and p.suggest().shape == (2,) and p.decisions[-1].phase == 'acquisition'


@pytest.mark.parametrize('beta', [0.0, 0.5, 4.0, 9.0])
def test_target_ucb_takes_botorchs_beta(data, beta):
    """``TargetUpperConfidenceBound(beta=b)`` is BoTorch's ``UpperConfidenceBound(beta=b)`` (σ weighted by √b) on the
    model seen over targets (its target view, BoTorch's class as the oracle); the old class weighted σ by b itself."""
    from botorch.acquisition import UpperConfidenceBound

    from uncertain_bo.models import TargetModel
    gp = data[0]
    X = torch.as_tensor(TARGETS).unsqueeze(-2)
    with torch.no_grad():
        ours = TargetUpperConfidenceBound(gp, noise_model(), beta)(X)
        botorch = UpperConfidenceBound(TargetModel(gp, noise_model()), beta=beta)(X)
    torch.testing.assert_close(ours, botorch, rtol=1e-12, atol=1e-12)
