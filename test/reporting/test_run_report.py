"""`uncertain-bo report` on a run without ground truth (a real robot's run folder) and on a simulated run whose
search bounds are smaller than its field."""
import json

import numpy as np
import pytest
import torch

from uncertain_bo.distributions import Gaussian
from uncertain_bo.journal.journal import Journal, location_to_record


def field_run(run_dir, bounds=(0.0, 60.0, 0.0, 40.0), reading_type='float64', **parameters):
    """A real robot's run folder as the explorer leaves it: journal (header with the explorer's parameters,
    observations, recommendations, a keep-out) and explorer_result.json; no parameters.json, no field."""
    run_dir.mkdir(parents=True)
    j = Journal(run_dir / 'journal.jsonl', metadata={
        'method': 'ugp_ucb', 'bounds': [[bounds[0], bounds[2]], [bounds[1], bounds[3]]],
        'parameters': {'search_bounds': list(bounds), 'execution_noise_std': [0.5, 0.5],
                       'reading_type': reading_type, **parameters}})
    rng = np.random.default_rng(0)
    for i in range(6):
        t = [float(rng.uniform(bounds[0], bounds[1])), float(rng.uniform(bounds[2], bounds[3]))]
        loc = Gaussian(torch.tensor([t]), torch.eye(2)[None] * 0.09)
        j.append({'type': 'decision', 'index': i, 'target': t, 'phase': 'initial', 'seconds': 0.1})
        j.append({'type': 'observation', 'index': i, 'target': t, 'location': location_to_record(loc),
                  'y': 0.2 + 0.025 * i, 'reading_variance': 0.0004, 'distance_driven_m': 10.0 * i,
                  'mission_time_s': 30.0 * i})
        j.append({'type': 'recommendation', 'index': i, 'target': t, 'mean': 0.2 + 0.025 * i, 'std': 0.01})
    j.append({'type': 'keep_out', 'index': 6, 'centre': [30.0, 20.0], 'radius': 2.0, 'reason': 'sensor silent'})
    (run_dir / 'explorer_result.json').write_text(json.dumps({'stopped_because': 'max_measurements = 6 reached'}))
    return run_dir


def test_a_real_run_is_reported_without_regret_over_its_own_bounds(tmp_path, capsys):
    """Before: scored against the simulator's elevation field (regret 0.25 of a 318-981 m map under a 0.2-0.35
    soil-moisture survey) and drawn over 200 m x 200 m."""
    from uncertain_bo.cli import main
    run = field_run(tmp_path / 'paddock')
    assert main(['report', str(run)]) == 0
    out = capsys.readouterr().out
    assert 'no ground truth' in out and 'regret' not in out.split('no ground truth')[0]
    summary = json.loads((run / 'summary.json').read_text())
    assert summary['ground_truth'] is None
    assert not any('regret' in k or k == 'robust_optimum' for k in summary)
    assert summary['search_bounds'] == [0.0, 60.0, 0.0, 40.0] and summary['reading_unit'] is None   # Float64: none
    assert summary['readings'] == {'min': 0.2, 'max': pytest.approx(0.325), 'mean': pytest.approx(0.2625)}
    assert summary['targets_skipped'] == 1 and summary['keep_out_zones'][0]['reason'] == 'sensor silent'
    assert summary['recommended_target'] is not None and summary['distance_driven_m'] == 50.0
    assert (run / 'run.png').stat().st_size > 10_000


def test_the_plot_of_a_real_run_spans_its_search_bounds(tmp_path, monkeypatch):
    import matplotlib.figure
    from uncertain_bo.reporting.run_report import plot_field_run, summarize_run
    run = field_run(tmp_path / 'orchard', bounds=(100.0, 200.0, -50.0, 0.0), reading_type='temperature')
    summarize_run(run)
    limits = []
    saved = matplotlib.figure.Figure.savefig
    monkeypatch.setattr(matplotlib.figure.Figure, 'savefig', lambda fig, *a, **k: (
        limits.extend((ax.get_xlim(), ax.get_ylim(), ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes[:2]),
        saved(fig, *a, **k))[1])
    plot_field_run(run)
    assert limits[0][:2] == ((100.0, 200.0), (-50.0, 0.0))
    assert json.loads((run / 'summary.json').read_text())['reading_unit'] == '°C'


def test_a_simulated_run_is_scored_within_its_search_bounds(tmp_path):
    """g* is the robust optimum inside search_bounds: a peak outside the searched area is no regret."""
    from uncertain_bo.sim.field import Field
    from uncertain_bo.sim.report import summarize
    xs = np.linspace(0.0, 200.0, 201)
    X, Y = np.meshgrid(xs, xs)
    field = Field(10.0 * np.exp(-((X - 150) ** 2 + (Y - 150) ** 2) / 200.0)
                  + 6.0 * np.exp(-((X - 40) ** 2 + (Y - 30) ** 2) / 200.0), (0.0, 200.0, 0.0, 200.0))
    run = field_run(tmp_path / 'sim')             # search bounds [0, 60] x [0, 40]: only the lower peak
    summary = summarize(run, field, np.diag([0.25, 0.25]))
    opt = summary['robust_optimum']
    assert np.allclose(opt['target'], [40.0, 30.0]) and opt['search_bounds'] == [0.0, 60.0, 0.0, 40.0]
    assert opt['value'] == pytest.approx(field.convolved(np.diag([0.25, 0.25])).value(np.array([40.0, 30.0])))
    whole = summarize(run, field, np.diag([0.25, 0.25]), search_bounds=[0.0, 200.0, 0.0, 200.0])
    assert np.allclose(whole['robust_optimum']['target'], [150.0, 150.0])


def test_a_run_has_one_distance_driven_in_every_file_and_the_true_path_length_under_its_own_name(tmp_path):
    """Before: summary.json's distance_driven_m was the true trajectory's length (1166 m in a field try) where
    explorer_result.json said 453 m (the explorer's odometer) for the same run."""
    from uncertain_bo.reporting.run_report import summarize_run
    from uncertain_bo.sim.field import Field
    from uncertain_bo.sim.report import summarize, write_trajectory
    run = field_run(tmp_path / 'sim')
    result = json.loads((run / 'explorer_result.json').read_text())
    result.update(distance_driven_m=53.5, mission_time_s=160.0)      # the odometer at the end (last reading: 50 m)
    (run / 'explorer_result.json').write_text(json.dumps(result))
    # the true path: 100 m along x then 20 m back, at 1 Hz (longer than the odometer's 53.5 m)
    rows = [(float(t), float(min(t, 100) - max(t - 100, 0)), 10.0, 0.0, 0.0) for t in range(121)]
    write_trajectory(run / 'trajectory.csv', rows)
    xs = np.linspace(0.0, 60.0, 61)
    X, Y = np.meshgrid(xs, np.linspace(0.0, 40.0, 41))
    sim = summarize(run, Field(np.exp(-((X - 30) ** 2 + (Y - 20) ** 2) / 50.0), (0.0, 60.0, 0.0, 40.0)),
                    np.diag([0.25, 0.25]))
    real = summarize_run(run)
    for summary in (sim, real):
        assert summary['distance_driven_m'] == 53.5 and summary['mission_time_s'] == 160.0
        assert [p['distance_driven_m'] for p in summary['per_measurement']] == [10.0 * i for i in range(6)]
    assert sim['true_path_length_m'] == pytest.approx(120.0) and 'true_path_length_m' not in real


def test_a_teams_distance_is_the_sum_of_its_rovers_odometers(tmp_path):
    from uncertain_bo.reporting.run_report import summarize_run
    run = field_run(tmp_path / 'team')
    (run / 'explorer_result.json').write_text(json.dumps({'rovers': {
        'rover0': {'distance_driven_m': 120.0, 'mission_time_s': 300.0},
        'rover1': {'distance_driven_m': 80.5, 'mission_time_s': 310.0}}}))
    summary = summarize_run(run)
    assert summary['distance_driven_m'] == 200.5 and summary['mission_time_s'] == 310.0


def _plot_labels(run, monkeypatch):
    """The colour-bar and axis labels of ``run``'s report plot."""
    import matplotlib.figure
    from uncertain_bo.reporting.run_report import plot_field_run, summarize_run
    summarize_run(run)
    labels = []
    saved = matplotlib.figure.Figure.savefig
    monkeypatch.setattr(matplotlib.figure.Figure, 'savefig', lambda fig, *a, **k: (
        labels.extend(t for ax in fig.axes for t in (ax.get_xlabel(), ax.get_ylabel())), saved(fig, *a, **k))[1])
    plot_field_run(run)
    return ' | '.join(labels)


@pytest.mark.parametrize('reading_type, reading_unit, expected, label', [
    ('temperature', 'm (elevation)', 'm (elevation)', '[m (elevation)]'),   # sim.launch.py's run of an elevation map
    ('float64', 'm³/m³', 'm³/m³', '[m³/m³]'),                              # config/examples/paddock_nav2.yaml
    ('float64', '', None, '(float64 readings)'),                            # no unit known: the reading type
    ('temperature', 'none', None, '(temperature readings)'),                # a simulated field file of no known unit
    ('temperature', '', '°C', '[°C]'),                                      # a real temperature sensor
])
def test_the_units_in_a_report_are_the_runs_own(tmp_path, monkeypatch, reading_type, reading_unit, expected, label):
    """Before: the unit followed the reading type alone, so a simulated elevation map (carried in
    sensor_msgs/Temperature) was labelled °C, and a Float64 probe 'sensor units'."""
    run = field_run(tmp_path / 'run', reading_type=reading_type, reading_unit=reading_unit)
    labels = _plot_labels(run, monkeypatch)
    assert json.loads((run / 'summary.json').read_text())['reading_unit'] == expected
    assert f'reading {label}' in labels and f'GP std {label}' in labels
    assert ('°C' in labels) == (expected == '°C')


def _team_run(run_dir):
    """A two-rover run (each observation with its rover) whose first target lies on the field's west edge."""
    run = field_run(run_dir)
    journal = run / 'journal.jsonl'
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    for rec in lines:
        if rec.get('type') == 'observation':
            rec['rover'] = f"rover{rec['index'] % 2}"
            if rec['index'] == 0:
                rec['target'] = [0.0, 20.0]
    journal.write_text(''.join(json.dumps(rec) + '\n' for rec in lines))
    return run


def _figure_of(draw, monkeypatch):
    """The figure ``draw()`` saves, drawn (its artists placed)."""
    import matplotlib.figure
    figures = []
    saved = matplotlib.figure.Figure.savefig
    monkeypatch.setattr(matplotlib.figure.Figure, 'savefig',
                        lambda fig, *a, **k: (figures.append(fig), fig.canvas.draw(), saved(fig, *a, **k))[-1])
    draw()
    return figures[0]


def _check_map(ax):
    """No legend over the map; no marker clipped at its edge; the targets' entries, one colour each."""
    legend = ax.get_legend()
    if legend is not None:
        assert not legend.get_window_extent().overlaps(ax.get_window_extent()), 'a legend covers the map'
    markers = [c for c in ax.collections if c.get_offsets().shape[0]]
    assert markers and not any(c.get_clip_on() for c in markers), 'a marker is clipped at the edge'
    return {c.get_label(): tuple(c.get_edgecolor()[0]) if c.get_facecolor().size == 0 else tuple(c.get_facecolor()[0])
            for c in markers if 'targets' in c.get_label()}


def test_plots_keep_legends_and_markers_off_the_data_and_tell_rovers_apart(tmp_path, monkeypatch):
    """Before: a comparison's legends sat on the map (lower right), a target or the optimum on the field's edge was
    cut in half, and a team's targets all had one colour and one legend entry."""
    from uncertain_bo.reporting.run_report import plot_field_run, summarize_run
    from uncertain_bo.sim.field import Field
    from uncertain_bo.sim.report import plot_comparison, plot_run, summarize
    run = _team_run(tmp_path / 'team')
    xs, ys = np.linspace(0.0, 60.0, 61), np.linspace(0.0, 40.0, 41)
    X, Y = np.meshgrid(xs, ys)
    field = Field(np.exp(-((X - 5) ** 2 + (Y - 35) ** 2) / 80.0), (0.0, 60.0, 0.0, 40.0))
    cov = np.diag([0.25, 0.25])
    summarize(run, field, cov)
    fig = _figure_of(lambda: plot_run(run, field, cov, grid_points=10), monkeypatch)
    entries = _check_map(fig.axes[0])
    assert set(entries) == {'rover0: targets', 'rover1: targets'} and len(set(entries.values())) == 2
    summarize_run(run)
    fig = _figure_of(lambda: plot_field_run(run, grid_points=10), monkeypatch)
    assert set(_check_map(fig.axes[0])) == {'rover0: targets', 'rover1: targets'}
    other = field_run(tmp_path / 'survey')
    fig = _figure_of(lambda: plot_comparison([run, other], field, cov, tmp_path / 'compare.png'), monkeypatch)
    for ax in fig.axes[:2]:
        _check_map(ax)
