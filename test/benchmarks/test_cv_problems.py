"""Cross-validation tables of the DRBQO CV problems against sklearn's own cross-validation (small grid)."""
import numpy as np
import pytest

pytest.importorskip('sklearn')

from uncertain_bo.benchmarks.cv import CVObjective  # noqa: E402


def test_fold_accuracies_match_a_direct_sklearn_fit(tmp_path, monkeypatch):
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path))  # the cache is written under it, not in ~
    obj = CVObjective('svm', 'wine', 3, grid=2)
    table, test = obj.tables
    assert table.shape == (4, 3) and test.shape == (4,)
    assert ((table >= 0) & (table <= 1)).all() and ((test >= 0) & (test <= 100)).all()
    # oracle: the same fold split and model fitted here
    from uncertain_bo.benchmarks.cv import _make
    X_train, _, y_train, _, folds = obj._data()
    x = obj.points[3]
    tr, va = folds[1]
    direct = _make('svm', x).fit(X_train[tr], y_train[tr]).score(X_train[va], y_train[va])
    assert obj.values(x[None])[0, 1] == pytest.approx(direct)
    assert list((tmp_path / 'uncertain_bo' / 'cv').glob('*.npz'))  # cached
    again = CVObjective('svm', 'wine', 3, grid=2).tables[0]
    assert np.array_equal(again, table)
