"""Keep-out zones: the nearest admissible target against a brute-force grid, and the planner hook for every kind
of decision (initial design, survey, acquisition maximiser), the journal and resume; pending targets as temporary
zones of the same hook."""
import math

import pytest
import torch

from uncertain_bo.distributions import Gaussian, GaussianExecutionNoise
from uncertain_bo.acquisition import Proposal
from uncertain_bo.planning.keep_out import KeepOut, NoAdmissibleTargetError, default_radius, noise_radius
from uncertain_bo.acquisition.optimize import OptimizerSettings
from uncertain_bo.planning.planner import Planner

BOX = torch.tensor([[0.0, 0.0], [20.0, 10.0]], dtype=torch.float64)


def brute_force_nearest(keep, target, bounds, step=0.01):
    xs = torch.arange(float(bounds[0, 0]), float(bounds[1, 0]) + 1e-9, step, dtype=torch.float64)
    ys = torch.arange(float(bounds[0, 1]), float(bounds[1, 1]) + 1e-9, step, dtype=torch.float64)
    grid = torch.cartesian_prod(xs, ys)
    grid = grid[~keep.inside(grid)]
    return float((grid - target).norm(dim=-1).min())


@pytest.mark.parametrize('zones, target', [
    ([((10.0, 5.0), 2.0)], (10.5, 5.2)),                       # one zone: radial projection
    ([((10.0, 5.0), 2.0)], (10.0, 5.0)),                       # at the centre
    ([((10.0, 5.0), 2.0), ((12.0, 5.0), 2.0)], (11.0, 5.1)),   # two overlapping zones
    ([((1.0, 1.0), 3.0)], (0.5, 0.5)),                         # zone over the corner: the box edge matters
    ([((10.0, 9.5), 2.0), ((10.0, 6.5), 2.0)], (10.0, 8.0)),   # a gap closed by two zones
])
def test_nearest_admissible_point_matches_a_brute_force_grid(zones, target):
    keep = KeepOut()
    for c, r in zones:
        keep.add(torch.tensor(c, dtype=torch.float64), r)
    target = torch.tensor(target, dtype=torch.float64)
    got = keep.admissible(target, BOX)
    assert got is not None and not bool(keep.inside(got.reshape(1, -1))[0])
    assert bool(((got >= BOX[0]) & (got <= BOX[1])).all())
    best = brute_force_nearest(keep, target, BOX)
    # within the grid step and the ring spacing (2 pi r / 360) of the true nearest point
    assert float((got - target).norm()) <= best + 0.01 * math.sqrt(2) + 2 * math.pi * 2.0 / 360


def test_admissible_targets_are_left_alone_and_a_covered_box_has_none():
    keep = KeepOut()
    keep.add(torch.tensor([10.0, 5.0], dtype=torch.float64), 1.0)
    t = torch.tensor([15.0, 5.0], dtype=torch.float64)
    assert keep.admissible(t, BOX) is t
    keep.add(torch.tensor([10.0, 5.0], dtype=torch.float64), 12.0)   # covers the whole box
    assert keep.admissible(t, BOX) is None


def test_zones_apply_to_the_target_part_of_joint_decision_points():
    keep = KeepOut()
    keep.add(torch.tensor([10.0, 5.0], dtype=torch.float64), 2.0)
    joint = torch.tensor([[10.5, 5.0, 0.3], [15.0, 5.0, 0.3]], dtype=torch.float64)
    assert keep.inside(joint).tolist() == [True, False]
    bounds = torch.tensor([[0.0, 0.0, 0.0], [20.0, 10.0, 1.0]], dtype=torch.float64)
    moved = keep.admissible(joint[0], bounds)
    assert moved[2] == 0.3 and float((moved[:2] - torch.tensor([10.0, 5.0])).norm()) == pytest.approx(2.0, rel=1e-5)


def test_default_radius_is_twice_the_execution_noise_at_least_the_xy_goal_tolerance():
    assert default_radius([0.75, 0.5], 1.0) == 1.5
    assert default_radius([0.2, 0.2], 1.0) == 1.0


def test_invalid_zones_are_refused():
    with pytest.raises(ValueError, match='radius'):
        KeepOut().add(torch.zeros(2), 0.0)
    with pytest.raises(ValueError, match='centre'):
        KeepOut().add(torch.tensor([math.nan, 0.0]), 1.0)


def _observe_at(planner, target, y):
    planner.observe(target, Gaussian(target.reshape(1, -1), 0.01 * torch.eye(2, dtype=torch.float64)[None]), y)


@pytest.mark.parametrize('method', ['ugp_ucb', 'lawnmower', 'random'])
def test_every_decision_respects_the_zones(method, tmp_path):
    """The initial design, a survey's tour and the acquisition maximiser: a failed target is never proposed
    again, whichever method decides."""
    planner = Planner(BOX, GaussianExecutionNoise.isotropic(0.5, 2), method=method, n_initial=3, budget=8,
                      seed=3, journal=tmp_path / 'j.jsonl')
    first = planner.suggest()
    planner.add_keep_out(first, 2.0, 'sensor silent')
    again = planner.suggest()
    assert float((again - first).norm()) >= 2.0 - 1e-9       # the same index decided again: moved out
    t = again
    for i in range(6):
        _observe_at(planner, t, float(torch.sin(t).sum()))
        t = planner.suggest()
        assert float((t - first).norm()) >= 2.0 - 1e-9
        assert bool(((t >= BOX[0]) & (t <= BOX[1])).all())
    moved = [r for r in planner.journal_file.records if r.get('type') == 'decision' and 'kept_out_from' in r]
    assert moved and moved[0]['kept_out_from'] == first.tolist()


def test_a_pending_target_in_a_zone_is_not_resent_after_a_restart(tmp_path):
    planner = Planner(BOX, GaussianExecutionNoise.isotropic(0.5, 2), n_initial=3, journal=tmp_path / 'j.jsonl')
    first = planner.suggest()
    planner.add_keep_out(first, 1.5, 'sensor silent')
    again = Planner(BOX, GaussianExecutionNoise.isotropic(0.5, 2), n_initial=3, journal=tmp_path / 'j.jsonl')
    assert again.take_resumed_target() is None and len(again.keep_out) == 1
    assert float((again.suggest() - first).norm()) >= 1.5 - 1e-9
    # and a pending target decided after the zone is re-sent as usual
    pending = again.suggest()
    third = Planner(BOX, GaussianExecutionNoise.isotropic(0.5, 2), n_initial=3, journal=tmp_path / 'j.jsonl')
    assert torch.equal(third.take_resumed_target(), pending)


def test_no_admissible_target_is_an_error_the_explorer_can_report():
    planner = Planner(BOX, GaussianExecutionNoise.isotropic(0.5, 2), n_initial=3)
    planner.add_keep_out(torch.tensor([10.0, 5.0], dtype=torch.float64), 50.0)
    with pytest.raises(NoAdmissibleTargetError, match='keep-out zones cover'):
        planner.suggest()


# ----------------------------------------------------------------------------------------- pending targets
def _fed(pending_radius=None, **kwargs):
    """A planner past its design: four measurements of a smooth field (exploitation only with ``beta=0``)."""
    planner = Planner(BOX, GaussianExecutionNoise.isotropic(0.5, 2), n_initial=4, seed=3, refit_every=0,
                      pending_radius=pending_radius, optimizer=OptimizerSettings(num_restarts=4, raw_samples=64),
                      **kwargs)
    for _ in range(4):
        t = planner.suggest()
        _observe_at(planner, t, float(-(t - torch.tensor([12.0, 6.0], dtype=torch.float64)).pow(2).sum() / 20))
    return planner


def test_a_team_rover_is_not_sent_next_to_the_target_another_rover_is_driving_to(tmp_path):
    """With beta = 0 the acquisition is the posterior mean, which GP-BUCB's fantasised reading keeps: the second
    rover's maximiser is the first rover's target again. It is sent to the nearest point 2 sigma (the execution
    noise's, 1 m) away instead, and the journal's record says where the method wanted it."""
    planner = _fed(beta=0.0, journal=tmp_path / 'j.jsonl')
    first = planner.suggest(position=torch.tensor([0.0, 0.0]), rover='rover0')
    second = planner.suggest(pending=first, position=torch.tensor([20.0, 10.0]), rover='rover1')
    assert planner.decisions[-1].phase == 'acquisition'
    assert float((second - first).norm()) == pytest.approx(1.0, rel=1e-5)
    record = planner.journal_file.records[-1]
    assert record['rover'] == 'rover1' and float((torch.tensor(record['kept_out_from']) - first).norm()) < 1e-3


def test_whatever_a_method_proposes_no_target_lands_near_a_pending_one_or_another_pick_of_its_batch():
    """The rule is the planner's, after any method's decision: a method proposing the pending target itself, three
    times, gets three targets at least the radius from it and from each other (an explicit ``pending_radius``)."""
    planner = _fed(pending_radius=3.0)
    pending = torch.tensor([[10.0, 5.0], [14.0, 5.0]], dtype=torch.float64)

    def decide(ctx):
        return Proposal(ctx.pending[:1].expand(ctx.q, -1).clone(), ('acquisition',) * ctx.q,
                        (0.0,) * ctx.q, (0.0,) * ctx.q)
    planner.method_object.decide = decide
    batch = planner.suggest(q=3, pending=pending)
    assert float(torch.cdist(batch, pending).min()) >= 3.0 - 1e-9
    assert float(torch.pdist(batch).min()) >= 3.0 - 1e-9
    assert bool(((batch >= BOX[0]) & (batch <= BOX[1])).all())


def test_pending_zones_that_leave_no_room_give_way_to_the_keep_out_rule():
    """In a box the pending zones cover, the method's target is sent (nothing to gain by failing); the keep-out zones
    still apply."""
    planner = _fed(pending_radius=50.0)
    planner.add_keep_out(torch.tensor([12.0, 6.0], dtype=torch.float64), 2.0, 'sensor silent')
    target = planner.suggest(pending=torch.tensor([10.0, 5.0], dtype=torch.float64),
                             position=torch.tensor([0.0, 0.0]), rover='rover1')
    assert float((target - torch.tensor([12.0, 6.0], dtype=torch.float64)).norm()) >= 2.0 - 1e-9


def test_the_pending_radius_is_twice_the_largest_execution_noise_std_there():
    noise = GaussianExecutionNoise(torch.diag(torch.tensor([0.3, 0.8], dtype=torch.float64) ** 2))
    points = torch.tensor([[1.0, 2.0], [5.0, 5.0]], dtype=torch.float64)
    assert noise_radius(noise, points).tolist() == pytest.approx([1.6, 1.6], rel=1e-12)
    assert Planner(BOX, noise).pending_radii(points).tolist() == pytest.approx([1.6, 1.6], rel=1e-12)
    assert Planner(BOX, noise, pending_radius=0.5).pending_radii(points).tolist() == [0.5, 0.5]
    for bad in (-1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match='pending_radius'):
            Planner(BOX, noise, pending_radius=bad)


def test_a_route_horizons_look_ahead_picks_are_not_kept_apart():
    """Only the first stop of a lone rover's route is sent: its look-ahead picks are not pending targets and do not
    repel each other, so the rover decides as before. A method proposing one point three times gets that point,
    though the pick a zone would move 3 m towards the rover would be the route's first stop."""
    planner = _fed(pending_radius=3.0, route_horizon=3)
    point = planner.position - torch.tensor([6.0, 0.0], dtype=torch.float64)
    assert bool(((point >= BOX[0]) & (point <= BOX[1])).all())

    def decide(ctx):
        return Proposal(point.expand(ctx.q, -1).clone(), ('acquisition',) * ctx.q, (0.0,) * ctx.q, (0.0,) * ctx.q)
    planner.method_object.decide = decide
    assert torch.equal(planner.suggest(), point) and len(planner.decisions) == 5
