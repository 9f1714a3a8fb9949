r"""Cross-validation hyperparameter tuning as Bayesian quadrature optimisation (Nguyen et al. 2020, §6.2 and
App. C).

:math:`f(\mathbf x, w_i)` is the validation accuracy of a model with hyperparameters :math:`\mathbf x` trained
on the training set without fold ``i`` and scored on fold ``i``; the folds are the fixed samples
:math:`S_n`, encoded one-hot in :math:`\mathbb R^n` (as in the paper, so a kernel on the joint space gives
each pair of folds its own covariance). The data, the train/test split (80:20) and the folds are fixed (the
same for every seed and method); a seed changes the initial design and the methods' random draws.

The paper's data sets (MNIST, UCI Glass and Sonar) need downloads; these problems use data sets that
scikit-learn ships instead:

==================================  ==============================================  =====  ===================
problem                             model and hyperparameters                       folds  data
==================================  ==============================================  =====  ===================
``drbqo-cv-elasticnet-digits``      ``SGDClassifier`` (log loss, elastic net,        10     ``load_digits``
                                    20 epochs): :math:`\log_{10}\alpha \in [-6, 1]`,
                                    ``l1_ratio`` :math:`\in [0, 1]`
``drbqo-cv-svm-wine``               RBF ``SVC``: :math:`\log_{10} C \in [-2, 4]`,    5      ``load_wine``
                                    :math:`\log_{10}\gamma \in [-5, 1]`
``drbqo-cv-svm-breast-cancer``      as above                                        5      ``load_breast_cancer``
==================================  ==============================================  =====  ===================

Features are standardised inside each fit. The recommendation's **test error** (%, the paper's Table 1
metric: the model refitted on the whole training set at :math:`\hat{\mathbf x}_t`, scored on the held-out 20 %)
is recorded as ``rec_test_error``.

**Tabular.** So that runs are fast, the hyperparameters are evaluated on a grid (15 points per axis, 11 for the
elastic net, whose 20-epoch fits are the slow ones): a query
is scored at the nearest grid point, from fold-score and test-error tables computed once (minutes for the
elastic net on digits, seconds for the SVMs) and cached under ``~/.cache/uncertain_bo/cv``. The ρ-robust
optimum behind the ρ-regret is then exact (the best grid point).
"""
from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

import numpy as np

from ..caught_warnings import logged_warnings
from .quadrature import QuadratureObjective, QuadratureProblem, register_problem

__all__ = ['CVObjective', 'CV_PROBLEMS']

log = logging.getLogger(__name__)

DATASETS = ('digits', 'wine', 'breast_cancer')
MODELS = {'elasticnet': np.array([[-6.0, 0.0], [1.0, 1.0]]), 'svm': np.array([[-2.0, -5.0], [4.0, 1.0]])}


def _load(dataset: str) -> tuple[np.ndarray, np.ndarray]:
    from sklearn import datasets

    data = getattr(datasets, f'load_{dataset}')()
    return data.data.astype(float), data.target


def _make(model: str, x: np.ndarray):
    from sklearn.linear_model import SGDClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    if model == 'elasticnet':
        est = SGDClassifier(loss='log_loss', penalty='elasticnet', alpha=10.0 ** x[0], l1_ratio=float(x[1]),
                            max_iter=20, tol=None, random_state=1)
    else:
        est = SVC(C=10.0 ** x[0], gamma=10.0 ** x[1], kernel='rbf')
    return make_pipeline(StandardScaler(), est)


class CVObjective(QuadratureObjective):
    """Validation accuracy per fold on a hyperparameter grid (module docstring).

    Args:
        model: ``'elasticnet'`` or ``'svm'``.
        dataset: ``'digits'``, ``'wine'`` or ``'breast_cancer'``.
        n_folds: number of folds ``n``.
        grid: points per hyperparameter axis.

    Raises:
        ValueError: unknown model or data set.

    Example:
        The RBF SVM on wine: a query (:math:`\\log_{10} C`, :math:`\\log_{10}\\gamma`) is scored at the nearest
        point of the 15 x 15 grid, one accuracy per fold (the folds one-hot):

        >>> svm = CVObjective('svm', 'wine', n_folds=5)
        >>> svm.points.shape, svm.contexts.shape
        ((225, 2), (5, 5))
        >>> svm.points[svm.grid_index([[0.1, -2.2]])].round(3).tolist()
        [[0.143, -2.0]]
        >>> CVObjective('svm', 'mnist', n_folds=5)
        Traceback (most recent call last):
        ...
        ValueError: unknown model 'svm' or data set 'mnist'
    """

    polish = False

    def __init__(self, model: str, dataset: str, n_folds: int, grid: int = 15):
        if model not in MODELS or dataset not in DATASETS:
            raise ValueError(f'unknown model {model!r} or data set {dataset!r}')
        self.model, self.dataset, self.n_folds, self.grid = model, dataset, n_folds, grid
        self.x_bounds = MODELS[model]
        self.contexts = np.eye(n_folds)
        lo, hi = self.x_bounds
        self.axes = [np.linspace(a, b, grid) for a, b in zip(lo, hi)]
        self.points = np.stack(np.meshgrid(*self.axes, indexing='ij'), -1).reshape(-1, 2)
        self._tables: tuple[np.ndarray, np.ndarray] | None = None

    def _data(self):
        from sklearn.model_selection import StratifiedKFold, train_test_split

        X, y = _load(self.dataset)
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
        folds = list(StratifiedKFold(self.n_folds, shuffle=True, random_state=0).split(X_train, y_train))
        return X_train, X_test, y_train, y_test, folds

    def _compute(self) -> tuple[np.ndarray, np.ndarray]:
        X_train, X_test, y_train, y_test, folds = self._data()

        from sklearn.exceptions import ConvergenceWarning

        def score(x, Xa, ya, Xb, yb):
            with logged_warnings(log, ConvergenceWarning):   # at 20 epochs, as in the paper's set-up
                return float(_make(self.model, x).fit(Xa, ya).score(Xb, yb))

        table = np.array([[score(x, X_train[tr], y_train[tr], X_train[va], y_train[va]) for tr, va in folds]
                          for x in self.points])
        test = np.array([100.0 * (1.0 - score(x, X_train, y_train, X_test, y_test)) for x in self.points])
        return table, test

    @property
    def tables(self) -> tuple[np.ndarray, np.ndarray]:
        """``(fold accuracies (G, n), test errors % (G,))`` on the grid, computed once and cached on disk."""
        if self._tables is None:
            cache = Path(os.environ.get('XDG_CACHE_HOME', Path.home() / '.cache')) / 'uncertain_bo' / 'cv'
            tag = hashlib.sha1(f'{self.model}-{self.dataset}-{self.n_folds}-{self.points.tobytes().hex()}'
                               .encode()).hexdigest()[:12]
            path = cache / f'{self.model}-{self.dataset}-{tag}.npz'
            try:
                with np.load(path) as z:
                    self._tables = (z['table'], z['test'])
            except (OSError, ValueError, KeyError):
                self._tables = self._compute()
                try:
                    cache.mkdir(parents=True, exist_ok=True)
                    np.savez(path, table=self._tables[0], test=self._tables[1])
                except OSError:
                    pass
        return self._tables

    def grid_index(self, x: np.ndarray) -> np.ndarray:
        """Index of the grid point nearest to each row of ``x`` ``(q, 2)`` -> ``(q,)``."""
        x = np.asarray(x, dtype=float).reshape(-1, 2)
        lo, hi = self.x_bounds
        ij = np.clip(np.rint((x - lo) / (hi - lo) * (self.grid - 1)), 0, self.grid - 1).astype(int)
        return ij[:, 0] * self.grid + ij[:, 1]

    def values(self, x: np.ndarray) -> np.ndarray:
        return self.tables[0][self.grid_index(x)]

    def extra_values(self, x: np.ndarray) -> dict[str, np.ndarray]:
        return {'test_error': self.tables[1][self.grid_index(x)]}

    def search_points(self) -> np.ndarray:
        return self.points


class CVProblem(QuadratureProblem):
    """A cross-validation tuning problem (module docstring).

    Example:
        >>> from uncertain_bo.benchmarks import get_problem
        >>> wine = get_problem('drbqo-cv-svm-wine')
        >>> isinstance(wine, CVProblem), wine.n_folds, wine.default_methods, wine.params
        (True, 5, 'drbqo,bqo_ei,bqo_ts,mtbo', {'rho': 1.0})
    """

    model = 'elasticnet'
    dataset = 'digits'
    n_folds = 10
    grid = 15
    _objectives: dict = {}

    def objective(self, seed: int) -> CVObjective:
        key = (self.model, self.dataset, self.n_folds, self.grid)
        if key not in CVProblem._objectives:   # one per process: the memo is shared by every seed
            CVProblem._objectives[key] = CVObjective(*key)
        return CVProblem._objectives[key]


def _cv(name: str, model: str, dataset: str, n_folds: int, iterations: int, n_initial: int,
        grid: int = 15) -> type[CVProblem]:
    return type(f'CV_{model}_{dataset}', (CVProblem,), {
        'name': name, 'model': model, 'dataset': dataset, 'n_folds': n_folds, 'default_iterations': iterations,
        'grid': grid,
        'n_initial': n_initial, 'default_seeds': 20,
        'default_methods': 'drbqo,bqo_ei,bqo_ts,mtbo',
        'description': f'DRBQO cross-validation tuning: {model} on sklearn load_{dataset}, {n_folds} folds '
                       f'(stand-in for the paper\'s downloads; Nguyen et al. 2020 §6.2 / App. C); problem parameter '
                       f'rho'})


CV_PROBLEMS = {
    'drbqo-cv-elasticnet-digits': _cv('drbqo-cv-elasticnet-digits', 'elasticnet', 'digits', 10, 60, 6, grid=11),
    'drbqo-cv-svm-wine': _cv('drbqo-cv-svm-wine', 'svm', 'wine', 5, 40, 5),
    'drbqo-cv-svm-breast-cancer': _cv('drbqo-cv-svm-breast-cancer', 'svm', 'breast_cancer', 5, 40, 5),
}
for _name, _cls in CV_PROBLEMS.items():
    register_problem(_name, _cls)
