"""A team rover's revised locations reach the shared planner by (rover, seq) (team_planner.py): the rover's readings
only, journaled with rover and seq, and kept when the team resumes its journal."""
import numpy as np
import torch

from uncertain_bo.distributions import DTYPE, Gaussian, GaussianExecutionNoise
from uncertain_bo.explorer import EXPLORER_PARAMS, Explorer, PoseEstimate
from uncertain_bo.parameters.specs import validate
from uncertain_bo.planning.planner import LocationRevision, Planner
from uncertain_bo.team.planner import SeqRevision, TeamPlanner

from recording_host import RecordingHost

BOUNDS = torch.tensor([[0.0, 0.0], [50.0, 50.0]], dtype=DTYPE)


def loc(x, y, var=0.2):
    return Gaussian(torch.tensor([[x, y]], dtype=DTYPE), torch.eye(2, dtype=DTYPE)[None] * var)


def team(path):
    planner = Planner(BOUNDS, GaussianExecutionNoise.isotropic(1.0, 2), n_initial=3, refit_every=0, journal=path)
    t = TeamPlanner()
    return t, {name: t.add_rover(name, planner) for name in ('a', 'b')}


def merge_some(views):
    """Each rover: two measurements and an en-route reading, interleaved; readings stamped 10 * k + i."""
    for k in range(2):
        for i, (name, view) in enumerate(views.items()):
            x = 10.0 + 20 * i + 5 * k
            view.observe(torch.tensor([x, 10.0], dtype=DTYPE), loc(x, 10.5), float(k + i),
                         reading_stamp=10.0 * k + i, pose_stamp=10.0 * k + i)
            view.observe(None, loc(x + 2, 12.0), float(k), reading_stamp=10.0 * k + i + 5, pose_stamp=10.0 * k + i + 5)


def mean_of(planner, kind, index):
    return planner.observations.rows[planner.observations.row_of(kind, index)][1].mean[0].tolist()


def test_revisions_reach_the_shared_planner_by_rover_and_seq(tmp_path):
    path = tmp_path / 'journal.jsonl'
    t, views = team(path)
    merge_some(views)
    planner = views['a'].planner
    b_readings = views['b'].stored_readings()
    assert [r.seq for r in b_readings] == [0, 1, 2, 3] and {r.rover for r in b_readings} == {'b'}
    out = t.revise('b', [SeqRevision(2, loc(33.0, 9.0), 100.0), SeqRevision(3, loc(37.0, 11.0), 100.0),
                         SeqRevision(9, loc(1.0, 1.0), 100.0)])                         # never merged
    assert out.rejected == {'unknown reading': 1} and len(out.applied) == 2
    assert mean_of(planner, *b_readings[2].key) == [33.0, 9.0]
    assert mean_of(planner, *b_readings[3].key) == [37.0, 11.0]
    assert t.revise('c', [SeqRevision(0, loc(1.0, 1.0), 100.0)]).rejected == {'unknown reading': 1}   # no such rover
    assert planner.revisions_rejected == {'unknown reading': 2}
    # a rover's view revises its own readings only
    a0 = views['a'].stored_readings()[0].key
    out = views['b'].revise([LocationRevision(a0, loc(2.0, 2.0), 100.0),
                             LocationRevision(b_readings[0].key, loc(30.0, 11.0), 100.0)])
    assert out.rejected == {'unknown reading': 1} and out.applied == [b_readings[0].key]
    assert mean_of(planner, *a0) == [10.0, 10.5]
    recs = [r for r in planner.journal_file.records if r['type'] == 'revision']
    assert [(r['rover'], r['seq']) for r in recs] == [('b', 2), ('b', 3), ('b', 0)]
    # the restarted team's planner holds the revised locations, and the rover's seq numbers on
    t2, views2 = team(path)
    assert mean_of(views2['b'].planner, *b_readings[2].key) == [33.0, 9.0]
    assert views2['b'].seq == 4
    assert t2.revise('b', [SeqRevision(2, loc(34.0, 9.0), 99.0)]).rejected == {'out of order': 1}


def test_a_team_rovers_explorer_revises_its_own_readings_through_the_team(tmp_path):
    t, views = team(tmp_path / 'journal.jsonl')
    merge_some(views)
    params = validate(EXPLORER_PARAMS, {'search_bounds': [0.0, 50.0, 0.0, 50.0]})
    ex = Explorer(views['a'], RecordingHost(), params)
    stamps = [r.stamp for r in views['a'].stored_readings()] + [r.stamp for r in views['b'].stored_readings()]
    poses = [PoseEstimate(s, 'map', np.array([1.0 + s, 40.0]), np.eye(2) * 0.1) for s in stamps]
    out = ex.on_revised_trajectory(poses, stamp=100.0)
    assert sorted(out.applied) == sorted(r.key for r in views['a'].stored_readings())
    planner = views['a'].planner
    for r in views['b'].stored_readings():
        assert mean_of(planner, *r.key)[1] != 40.0                # rover b's readings are not rover a's to revise
    recs = [r for r in planner.journal_file.records if r['type'] == 'revision']
    assert {r['rover'] for r in recs} == {'a'} and sorted(r['seq'] for r in recs) == [0, 1, 2, 3]


def test_a_smoothed_reading_of_one_rover_moves_the_shared_gp_and_survives_resume(tmp_path):
    # issue 32 item 6: a smoother's revision of rover b's measurement re-places it in the ONE model the team shares
    # (oracle: a lone planner fed the same readings with that reading at its revised location from the start), is
    # journaled once as a revision of (b, seq) with where it was taken, and a resumed team's model holds it there
    path = tmp_path / 'journal.jsonl'
    t, views = team(path)
    merge_some(views)
    X = torch.tensor([[5.0, 5.0], [31.0, 10.0], [45.0, 30.0]], dtype=DTYPE)
    shared = views['a'].planner
    before = shared.predict(X)
    b0 = views['b'].stored_readings()[0]
    taken = mean_of(shared, *b0.key)
    revised = loc(30.0, 20.0, 0.05)
    assert len(t.revise('b', [SeqRevision(b0.seq, revised, 100.0, 'ekf_smoother')]).applied) == 1
    after = shared.predict(X)
    assert views['b'].planner is shared and not torch.allclose(after[0], before[0])
    lone = Planner(BOUNDS, GaussianExecutionNoise.isotropic(1.0, 2), n_initial=3, refit_every=0)
    row = shared.observations.row_of(*b0.key)
    for i, (target, location, y, var) in enumerate(shared.observations.rows):    # the GP's row order
        lone.observe(target, revised if i == row else location, y, var)
    for got, want in zip(after, lone.predict(X)):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-9)
    recs = [r for r in shared.journal_file.records if r['type'] == 'revision']
    assert [(r['rover'], r['seq'], r['source']) for r in recs] == [('b', b0.seq, 'ekf_smoother')]
    assert mean_of(shared, *b0.key) == [30.0, 20.0] and taken == [30.0, 10.5]
    _, views2 = team(path)
    for got, want in zip(views2['a'].planner.predict(X), after):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-9)
