"""Re-localisation as a decision (uncertain_bo/explorer/relocalising.py): the rule, the relocalising stage, its
journal records, and an in-process mission that drives to a fix source, is fixed and goes on (and resumes)."""
import numpy as np
import pytest

from uncertain_bo.explorer import State
from uncertain_bo.journal.journal import Journal
from uncertain_bo.parameters.specs import ParameterError
from uncertain_bo.reporting.run_report import summarize_run
from uncertain_bo.sim.mission import Mission, mission_parameters

from explorer_cycle import journal_on_disk, make, pose, settle
from recording_host import RecordingHost

BEACON = np.array([40.0, 40.0])


class SurfacingHost(RecordingHost):
    """A host whose vehicle can surface (an AUV)."""

    def __init__(self):
        super().__init__()
        self.surfacings = 0

    def request_surfacing(self):
        self.surfacings += 1
        return True


def first_goal(std, tmp_path=None, host=None, **params):
    """The first goal the explorer sends from (5, 5) with a position std ``std`` per axis (m), with the model's
    lengthscale 10 m and κ = 0.1 (threshold 1 m) unless ``params`` say otherwise."""
    params = {'relocalise_kappa': 0.1, 'fix_sources': [*BEACON, 3.0, 0.0], 'relocalise_max_detour': 200.0,
              'max_speed': 0.0, **params}
    ex, _ = make(tmp_path, host=host, **params)
    ex.planner.model.set_hyperparameters(lengthscale=10.0)
    cov = np.eye(2) * std ** 2
    settle(ex, (5.0, 5.0), make_pose=lambda t, xy: pose(t, xy, cov))
    return ex, ex.outputs


@pytest.mark.parametrize('std, params, goes', [
    (2.0, {}, True),                                          # σ_L 2 m > 0.1 x 10 m, the anchor within budget
    (0.5, {}, False),                                         # σ_L below the threshold
    (2.0, {'relocalise_kappa': 0.0}, False),                  # the rule off (the default)
    (2.0, {'relocalise_kappa': 0.3}, False),                  # 2 m < 0.3 x 10 m
    (2.0, {'relocalise_max_detour': 1.0}, False),             # the anchor is a longer detour than the budget
    (2.0, {'fix_sources': [0.0, 0.0, 0.0, 0.0]}, False),      # no fix source known
])
def test_the_rule_sends_the_rover_to_a_fix_source_only_when_sigma_l_is_large_and_one_is_within_budget(
        std, params, goes):
    ex, host = first_goal(std, **params)
    target = ex.planner.decisions[-1].target.numpy()
    if goes:
        assert ex.state is State.RELOCALISING and np.allclose(host.goals[-1], BEACON)
    else:
        assert ex.state is State.DRIVING and np.allclose(host.goals[-1], target)
    if 'relocalise_max_detour' in params:      # the case means what it says: the detour is over 1 m
        p = np.array([5.0, 5.0])
        assert np.linalg.norm(p - BEACON) + np.linalg.norm(BEACON - target) - np.linalg.norm(p - target) > 1.0


def test_the_nearest_detour_wins_and_a_source_the_rover_is_within_is_not_a_detour():
    ex, host = first_goal(2.0, fix_sources=[5.0, 5.0, 3.0, 0.0, *BEACON, 3.0, 0.0, *BEACON + 1.0, 3.0, 500.0])
    assert ex.state is State.RELOCALISING and np.allclose(host.goals[-1], BEACON)   # not the third: its cost


def test_surfacing_is_asked_for_only_from_a_host_that_offers_it_and_when_its_cost_is_within_the_limit():
    no_sources = {'fix_sources': [0.0, 0.0, 0.0, 0.0], 'surface_cost': 60.0}
    ex, host = first_goal(2.0, host=SurfacingHost(), **no_sources)
    assert host.surfacings == 1 and ex.state is State.RELOCALISING and host.stops and not host.goals
    ex, host = first_goal(2.0, host=SurfacingHost(), **no_sources, relocalise_max_time=30.0)
    assert host.surfacings == 0 and ex.state is State.DRIVING
    ex, host = first_goal(2.0, **no_sources)      # RecordingHost: no surfacing action
    assert ex.state is State.DRIVING


def test_at_the_source_it_waits_for_the_fix_then_sends_the_held_target_and_journals_both_ends(tmp_path):
    ex, host = first_goal(2.0, tmp_path)
    target = ex.planner.decisions[-1].target.numpy()
    t, big = 1.0, np.eye(2) * 4.0
    for k in range(30):                     # at the anchor, no fix yet: it waits (and does not measure)
        t = round(t + 0.1, 6)
        ex.on_pose(pose(t, BEACON, big), now=t)
        ex.tick(t)
    assert ex.state is State.RELOCALISING and len(host.goals) == 1 and host.stops
    for k in range(30):                     # fixes: the std falls to 0.3 m, below half the threshold (0.5 m)
        t = round(t + 0.1, 6)
        ex.on_pose(pose(t, BEACON, np.eye(2) * max(4.0 * 0.7 ** k, 0.09)), now=t)
        ex.tick(t)
        if ex.state is not State.RELOCALISING:
            break
    assert ex.state is State.DRIVING and np.allclose(host.goals[-1], target)
    assert ex.relocalisations == 1 and ex.planner.n == 0
    records, observed = journal_on_disk(tmp_path / 'j.jsonl')
    start, end = [r for r in records if r['type'] == 'relocalisation']
    assert (start['phase'], end['phase']) == ('start', 'end') and observed == []
    assert start['kind'] == 'fix_source' and start['source'] == 0 and start['sigma_l'] == pytest.approx(2.0)
    assert start['threshold'] == pytest.approx(1.0) and np.allclose(start['target'], target)
    assert end['sigma_l'] <= 0.5 and end['seconds'] > 3.0
    # the strict reader (report, export) accepts them
    assert [r['phase'] for r in Journal(tmp_path / 'j.jsonl', read_only=True).records
            if r['type'] == 'relocalisation'] == ['start', 'end']


@pytest.mark.parametrize('value', [[1.0, 2.0, 3.0], [1.0, 2.0, -3.0, 0.0], [1.0, 2.0, 3.0, -1.0]])
def test_malformed_fix_sources_are_one_parameter_error(value):
    with pytest.raises(ParameterError, match=r"parameter 'fix_sources' = .* is invalid: "):
        mission_parameters({'explorer': {'fix_sources': value}})


def beacon_mission(journal, max_measurements, max_sim_time=3000.0):
    """A 60 m field, dead reckoning from the centre with fixes only within 6 m of an anchor at (30, 30); the rule
    (κ tiny: always on when away from it) sends the rover back to it before every target."""
    start = {'initial_x': 30.0, 'initial_y': 30.0}
    params = mission_parameters({
        'sim_rover': {'field_extent': [0.0, 60.0, 0.0, 60.0], 'seed': 3, 'fix_beacons': [30.0, 30.0, 6.0, 0.3],
                      'odometry_source': 'wheel_gyro', **start},
        'ekf': start,
        'explorer': {'max_measurements': max_measurements, 'n_initial': 3, 'method': 'lawnmower',
                     'max_covariance_trace': 1e4, 'relocalise_kappa': 1e-3, 'fix_sources': [30.0, 30.0, 6.0, 0.0],
                     'relocalise_max_detour': 200.0}})
    mission = Mission(params, journal=journal)
    return mission, mission.run(max_sim_time=max_sim_time)


def test_a_mission_drives_to_the_anchor_is_fixed_goes_on_and_resumes_mid_relocalisation(tmp_path):
    path = tmp_path / 'a' / 'journal.jsonl'
    _, result = beacon_mission(path, 3)
    assert result.completed and len(result.measurements) == 3
    records, observed = journal_on_disk(path)
    reloc = [r for r in records if r['type'] == 'relocalisation']
    starts, ends = reloc[0::2], reloc[1::2]
    assert len(starts) >= 2 and [r['phase'] for r in reloc] == ['start', 'end'] * len(starts)
    for s, e in zip(starts, ends):           # the rover reached the anchor and its std dropped there
        assert e['sigma_l'] < 0.5 * s['sigma_l'] and np.linalg.norm(np.array(e['position']) - 30.0) < 6.0
        assert any(f.source == 'beacon' and s['stamp'] < f.t <= e['stamp'] for f in result.fix_events)
    assert observed == [0, 1, 2]
    # killed while re-localising (the second start, before its end), then resumed to 5 measurements
    cut = starts[1]['stamp'] + 2.0
    path2 = tmp_path / 'b' / 'journal.jsonl'
    _, killed = beacon_mission(path2, 3, max_sim_time=cut)
    assert not killed.completed and journal_on_disk(path2)[0][-1]['type'] == 'relocalisation'
    _, resumed = beacon_mission(path2, 5)
    assert resumed.completed
    records, observed = journal_on_disk(path2)
    assert observed == [0, 1, 2, 3, 4]                      # every reading stored once
    reloc = [r for r in records if r['type'] == 'relocalisation']
    assert reloc[-1]['phase'] == 'end' and len(Journal(path2, read_only=True).observations) == 5
    # the report knows them: one per start, the killed one included
    assert summarize_run(path2.parent)['relocalisations'] == sum(r['phase'] == 'start' for r in reloc) >= 3
