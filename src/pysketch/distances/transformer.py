"""A scikit-learn style transformer that releases private sparse JL sketches of rows."""

import dataclasses
import numbers

import numpy as np

from .._base import CHANGING, BaseEstimator, TransformerMixin, not_fitted_error
from .._checks import MAX_INT32, check_size
from .._params import Interval, Options
from ..blocks import as_dask_array, is_dask_collection, map_blocks, map_reduce
from ..operators import SparseJLOperator
from ..privacy.budget import Budget
from ..privacy.mechanisms import PRIVACY_PARAMETERS
from .release import MECHANISMS
from .release import release as _release_rows
from .release import clean_release, release_cost

__all__ = ["PrivateJLTransformer"]


class PrivateJLTransformer(TransformerMixin, BaseEstimator):
    """Release S x + eta for every row x, S a sparse JL transform of a public seed.

    `fit(X)` draws S for X's number of columns; `release(X)` gives a DistanceRelease (for
    `pairwise_sq_distances`); `transform(X)` its values, for pipelines. Each call draws
    fresh noise and spends epsilon again for the rows it releases.

    X may be a dask array or a data frame of numeric columns: `fit` reads only its number
    of columns (nothing is computed); `release` releases every block's rows where the block
    lives (each row has its own noise, so a block is a release of its rows) and gathers the
    released values; `transform` returns a dask array of the released values, computed once
    (persisted: on the workers of a dask.distributed client, else in this process), so that
    reading it again never releases the rows again.

    Parameters
    ----------
    n_components : int
        k, the sketch length (a multiple of `sparsity` for the block construction).
    sparsity : int
        s, nonzeros per column of S (the estimator's variance does not depend on s, its
        Laplace noise grows with it: s = 1 minimizes the variance under Laplace noise).
    construction : {'block', 'graph'}
    epsilon, delta, mechanism, contribution
        The release of each row (pysketch.distances.release): (epsilon, delta)-DP per row
        under ||x - y||_1 <= contribution. epsilon=None: the sketches without noise, not
        private (`clean_release`). Not given: epsilon is 1.0 in this version, with a
        FutureWarning, and None in the next, as for every pysketch estimator. Defaults:
        delta 0, mechanism 'auto', contribution 1.
    random_state : int or None
        The PUBLIC seed of S: every party must use the same one. The noise never comes
        from it (OS entropy).
    accountant : BudgetAccountant (pysketch or diffprivlib) or None
        Charged (epsilon, delta) by every `release` / `transform` call (once per call: each
        individual changes one row), before any noise is drawn.

    Attributes
    ----------
    operator_ : SparseJLOperator
        S, drawn by `fit`.
    n_features_in_ : int
        The number of columns of X seen by `fit`.

    Raises
    ------
    TypeError
        From `fit`, when n_components or sparsity is not an int.
    ValueError
        From `fit`, for n_components or sparsity out of range (sparsity >
        n_components), or X that is not one vector or a 2-D array with at least one
        column; from `release` and `transform`, for X of another width than at `fit`,
        a dask collection with no records, and the checks of
        :func:`~pysketch.distances.release` (epsilon, delta, mechanism, contribution).
    NotFittedError
        From `release` and `transform` before `fit` (scikit-learn's, a ValueError).
    BudgetError
        When `accountant` refuses the spend of a `release` or `transform`.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.distances import PrivateJLTransformer, pairwise_sq_distances
    >>> X = np.random.default_rng(0).poisson(3.0, size=(100, 500)).astype(float)
    >>> tr = PrivateJLTransformer(128, sparsity=1, epsilon=1.0, random_state=2024).fit(X)
    >>> tr.transform(X).shape, pairwise_sq_distances(tr.release(X)).shape
    ((100, 128), (100, 100))
    """

    _changing_defaults = {"epsilon": (1.0, None)}
    _parameter_constraints = {
        # k: the rows of S, int32 indices in the core; the memory of a release is checked per call
        "n_components": [Interval(numbers.Integral, 1, MAX_INT32)],
        "sparsity": [Interval(numbers.Integral, 1, None)],
        "construction": [Options(("block", "graph"))],
        "mechanism": [Options(MECHANISMS)],
        "contribution": [Interval(numbers.Real, 0, None, closed="neither")],
        "random_state": ["random_state"],
        **{name: PRIVACY_PARAMETERS[name] for name in ("epsilon", "delta", "accountant")},
    }

    def _check_param_relations(self):
        """S has at most one nonzero per row and column block: s <= k."""
        if self.sparsity > self.n_components:
            raise ValueError(f"sparsity must be <= n_components, got sparsity = {self.sparsity} > n_components = "
                             f"{self.n_components}")

    def __init__(self, n_components=256, *, sparsity=4, construction="block", epsilon=CHANGING, delta=0.0,
                 mechanism="auto", contribution=1.0, random_state=None, accountant=None):
        self.n_components = n_components
        self.sparsity = sparsity
        self.construction = construction
        self.epsilon = epsilon
        self.delta = delta
        self.mechanism = mechanism
        self.contribution = contribution
        self.random_state = random_state
        self.accountant = accountant

    def fit(self, X, y=None):
        self._validate_params()
        k, s = int(self.n_components), int(self.sparsity)
        if is_dask_collection(X):
            d = as_dask_array(X).shape[1]  # the number of columns: known without reading a block
        else:
            shape = tuple(X.shape) if hasattr(X, "shape") else np.shape(X)
            if len(shape) not in (1, 2):
                raise ValueError(f"X must be a 2-D array (n, d) or one vector (d,), got shape {shape}")
            d = shape[-1]
            if d < 1:
                raise ValueError(f"X must have at least one column (feature), got shape {shape}")
        # the tables of S (rows, signs, values of s entries per column) and its 2 s hashes' coefficients
        check_size(s, "sparsity", nbytes=lambda v: int(d) * (13 * v + 32) + v * 64,
                   what=f"for the tables of S ({d} columns)")
        self.operator_ = SparseJLOperator.draw(int(d), k, s, construction=self.construction,
                                               random_state=self.random_state)
        self.n_features_in_ = int(d)
        return self

    def _release_args(self):
        return self.operator_, self._param("epsilon"), self.delta, self.mechanism, self.contribution

    def _dask_rows(self, X):
        if not hasattr(self, "operator_"):
            raise not_fitted_error(self)
        A = as_dask_array(X)
        if A.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {A.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input")
        return A

    def release(self, X):
        """The DistanceRelease of the rows of X (fresh noise)."""
        if not hasattr(self, "operator_"):
            raise not_fitted_error(self)
        if is_dask_collection(X):
            A = self._dask_rows(X)
            self._charge()  # once for all blocks (their tasks are given no accountant)
            out = map_reduce(A, _release_block, _concat_releases, args=(self._release_args(),))
            if out is None:
                raise ValueError("X has no records")
            return out
        shape = tuple(X.shape) if hasattr(X, "shape") else np.shape(X)
        n = int(shape[0]) if len(shape) == 2 else 1
        # the released rows: S x and its noisy copy, refused before anything is charged
        check_size(self.operator_.m, "n_components", nbytes=n * self.operator_.m * 16,
                   what=f"for the release of {n} rows")
        return _rows(self.operator_, X, self._param("epsilon"), self.delta, mechanism=self.mechanism,
                     contribution=self.contribution, accountant=self.accountant)

    def _charge(self):
        if self._param("epsilon") is None:
            return  # not private: nothing is spent
        eps, delta = release_cost(self.operator_, self._param("epsilon"), self.delta, mechanism=self.mechanism,
                                  contribution=self.contribution)
        # the blocks draw in their tasks: the budget here is the charge, for all of them
        Budget(eps, delta, neighbouring="replace", what=type(self).__name__).charge(self.accountant)

    def transform(self, X):
        if is_dask_collection(X):
            import dask

            A = self._dask_rows(X)
            self._charge()
            params = dask.delayed(self._release_args(), traverse=False)
            Y = map_blocks(A, _values_block, params, chunks=(A.chunks[0], (self.operator_.m,)), dtype=np.float64)
            return Y.persist()  # released once: the noisy blocks are kept, never drawn again
        return self.release(X).values


def _release_block(block, first_row, params):
    """The DistanceRelease of one block's rows (None for an empty block): a task of
    `release`."""
    if block.shape[0] == 0:
        return None
    op, epsilon, delta, mechanism, contribution = params
    return _rows(op, block, epsilon, delta, mechanism=mechanism, contribution=contribution)


def _rows(operator, X, epsilon, delta, **options):
    """The DistanceRelease of X's rows: private (distances.release) or, with epsilon None,
    the clean sketches."""
    if epsilon is None:
        return clean_release(operator, X)
    return _release_rows(operator, X, epsilon, delta, **options)


def _concat_releases(a, b):
    """The releases of consecutive blocks as one (same operator and noise law)."""
    if a is None or b is None:
        return b if a is None else a
    return dataclasses.replace(a, values=np.concatenate([a.values, b.values]))


def _values_block(block, params):
    """The released values of one block's rows: a task of `transform`."""
    if block.shape[0] == 0:
        return np.empty((0, params[0].m))
    return _release_block(block, None, params).values
