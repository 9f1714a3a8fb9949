"""The planner's journal (uncertain_bo/planning/journal_writer.py): resuming a run from it, the records of readings, the
pending target handed back once."""
import json

import torch

from uncertain_bo.distributions import Gaussian, GaussianExecutionNoise
from uncertain_bo.planning.planner import Planner

from .test_planner import BOUNDS, SIGMA, run


def test_resume_from_journal_continues_the_run(tmp_path):
    path = tmp_path / 'run' / 'journal.jsonl'
    first = run(0, n=8, journal=path)
    lines = [json.loads(s) for s in path.read_text().splitlines()]
    assert lines[0]['type'] == 'header' and sum(r['type'] == 'observation' for r in lines) == 8
    resumed = Planner(BOUNDS, GaussianExecutionNoise.isotropic(SIGMA, 2), n_initial=5, seed=0,
                      journal=path)
    assert resumed.n == 8
    assert torch.equal(resumed.targets, first.targets)
    assert torch.allclose(resumed.y, first.y)
    # continuing adds observations after the earlier ones, nothing duplicated
    done = run(0, n=10, journal=path)
    assert done.n == 10
    assert sum(json.loads(s)['type'] == 'observation' for s in path.read_text().splitlines()) == 10


def test_reading_records_carry_their_index_and_the_meta_in_order(tmp_path):
    path = tmp_path / 'j.jsonl'
    p = Planner(BOUNDS, GaussianExecutionNoise.isotropic(SIGMA, 2), n_initial=2, journal=path)
    loc = Gaussian(torch.tensor([[0.5, 0.5]]), 1e-3 * torch.eye(2).unsqueeze(0))
    assert p.observe(torch.tensor([0.4, 0.6]), loc, 1.5, reading_variance=0.2, reading_stamp=3.0) == 0
    assert p.observe(None, loc, 2.5, pose_stamp=4.0) == 0
    assert p.observe(torch.tensor([0.6, 0.4]), loc, 0.5, goal_timed_out=True) == 1
    header, *records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [list(r) for r in records] == [   # the run each belongs to, last (journal_schema: run identity)
        ['type', 'index', 'target', 'location', 'y', 'reading_variance', 'wall_time', 'reading_stamp', 'run_id'],
        ['type', 'index', 'measurements', 'location', 'y', 'reading_variance', 'wall_time', 'pose_stamp', 'run_id'],
        ['type', 'index', 'target', 'location', 'y', 'reading_variance', 'wall_time', 'goal_timed_out', 'run_id']]
    assert {r['run_id'] for r in records} == {header['run_id']}
    assert [(r['type'], r['index']) for r in records] == [('observation', 0), ('en_route', 0), ('observation', 1)]
    assert records[0]['target'] == [0.4, 0.6] and records[0]['reading_variance'] == 0.2
    assert records[1]['measurements'] == 1 and records[1]['y'] == 2.5


def test_a_pending_decision_is_handed_back_once_after_a_restart(tmp_path):
    path = tmp_path / 'j.jsonl'
    first = Planner(BOUNDS, GaussianExecutionNoise.isotropic(SIGMA, 2), n_initial=3, journal=path)
    target = first.suggest()                                  # decided and journaled; the process stops
    again = Planner(BOUNDS, GaussianExecutionNoise.isotropic(SIGMA, 2), n_initial=3, journal=path)
    assert again.n == 0 and torch.equal(again.resumed_target, target)
    assert torch.equal(again.take_resumed_target(), target)
    assert again.take_resumed_target() is None and again.resumed_target is None
    assert again.next_index == 0 and again.journal_damage['records_skipped'] == 0


def test_a_route_horizon_run_resumed_from_its_journal_goes_on_with_the_design_where_it_stood(tmp_path):
    """Stopped after k measurements (mid-design, or before its last target) and resumed from the journal, a lone
    rover with route_horizon 3 is sent the design targets it had left, in order, once each, then the acquisition."""
    from .test_planner import PADDOCK, drive
    start = torch.tensor([0.0, 0.0], dtype=torch.float64)

    def planner(path):
        return Planner(PADDOCK, GaussianExecutionNoise.isotropic(1.0, 2), n_initial=5, seed=2, start=start,
                       route_horizon=3, journal=path)
    for k in (2, 4):
        path = tmp_path / f'k{k}' / 'journal.jsonl'
        first = planner(path)
        design = first.initial_design.clone()
        assert torch.equal(drive(first, k), design[:k])
        resumed = planner(path)
        assert resumed.n == k and torch.equal(resumed.initial_design, design)
        sent = drive(resumed, 6 - k)
        assert torch.equal(sent[:-1], design[k:])
        assert resumed.decisions[-1].phase == 'acquisition' and torch.cdist(sent[-1:], design).min() > 1e-6


def test_the_journal_writer_is_the_one_writer_of_the_run(tmp_path):
    """The explorer's own records go through the planner's writer (JournalWriter.write) into the same journal, in
    order with the planner's; without a journal the writer writes nothing."""
    p = Planner(BOUNDS, GaussianExecutionNoise.isotropic(SIGMA, 2), journal=tmp_path / 'j.jsonl')
    x = p.suggest()
    p.journal_writer.write({'type': 'parameters', 'changed': {'beta': 2.0}, 'index': 0, 'wall_time': 1.0})
    p.observe(x, Gaussian(x.reshape(1, 2), torch.eye(2) * 1e-4), 0.5)
    kinds = [json.loads(line)['type'] for line in (tmp_path / 'j.jsonl').read_text().splitlines()]
    assert kinds == ['header', 'decision', 'parameters', 'observation']
    lone = Planner(BOUNDS, GaussianExecutionNoise.isotropic(SIGMA, 2))
    lone.journal_writer.write({'type': 'parameters'})
    assert lone.journal_file is None and lone.next_index == 0
