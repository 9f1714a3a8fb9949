"""ObservationView: the planner and the decision snapshot show their observations' views (targets, y, locations)
through one mechanism, read-only (issue 34: they were restated one-line properties on both)."""
import pytest
import torch

from uncertain_bo.acquisition import DecisionContext
from uncertain_bo.acquisition.observation_view import ObservationView
from uncertain_bo.distributions import Gaussian, GaussianExecutionNoise
from uncertain_bo.planning.planner import Planner

BOUNDS = torch.tensor([[0.0, 0.0], [10.0, 10.0]])


def planner_with(readings):
    planner = Planner(BOUNDS, GaussianExecutionNoise.isotropic(0.5, 2), n_initial=2, seed=0)
    for x, y in readings:
        target = torch.tensor(x)
        planner.observe(target, Gaussian(target.reshape(1, 2) + 0.1, torch.eye(2).unsqueeze(0) * 0.04), y)
    planner.observe(None, Gaussian(torch.tensor([[5.0, 5.0]]), torch.eye(2).unsqueeze(0) * 0.04), 7.0)
    return planner


@pytest.mark.parametrize('owner,names', [(Planner, ('targets', 'y', 'locations', 'n', 'n_en_route', 'en_route_y',
                                                    'en_route_locations')),
                                         (DecisionContext, ('targets', 'y', 'locations', 'places'))])
def test_the_views_are_one_mechanism_with_docs(owner, names):
    for name in names:
        view = owner.__dict__[name]
        assert isinstance(view, ObservationView) and view.name == name and view.__doc__


def test_planner_and_snapshot_show_the_same_observations_and_the_snapshot_stays():
    planner = planner_with([([1.0, 2.0], 3.0), ([4.0, 6.0], -1.5)])
    ctx = planner.snapshot()
    assert planner.n == ctx.observations.n == 2 and planner.n_en_route == 1
    assert torch.equal(planner.targets, torch.tensor([[1.0, 2.0], [4.0, 6.0]], dtype=planner.targets.dtype))
    assert planner.y.tolist() == ctx.y.tolist() == [3.0, -1.5] and planner.en_route_y.tolist() == [7.0]
    assert torch.allclose(planner.locations.mean, ctx.locations.mean)
    assert torch.allclose(planner.locations.mean, torch.tensor([[1.1, 2.1], [4.1, 6.1]], dtype=torch.float64))
    planner.observe(torch.tensor([8.0, 8.0]), Gaussian(torch.tensor([[8.0, 8.0]]), torch.eye(2).unsqueeze(0) * 0.04),
                    0.5)
    assert planner.y.tolist() == [3.0, -1.5, 0.5] and ctx.y.tolist() == [3.0, -1.5]   # the snapshot is read-only


def test_a_view_cannot_be_assigned():
    planner = planner_with([([1.0, 2.0], 3.0)])
    with pytest.raises(AttributeError, match='view of the observations'):
        planner.y = torch.zeros(1)
    assert planner.y.tolist() == [3.0]
