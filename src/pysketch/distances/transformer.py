"""A scikit-learn style transformer that releases private sparse JL sketches of rows."""

import numpy as np

from .._base import BaseEstimator, TransformerMixin, not_fitted_error
from .._checks import check_int
from ..operators import SparseJLOperator
from .release import release as _release_rows

__all__ = ["PrivateJLTransformer"]


class PrivateJLTransformer(TransformerMixin, BaseEstimator):
    """Release S x + eta for every row x, S a sparse JL transform of a public seed.

    Parameters
    ----------
    n_components : int
        k, the sketch length (a multiple of `sparsity` for the block construction).
    sparsity : int
        s, nonzeros per column of S (the estimator's variance does not depend on s, its
        Laplace noise grows with it: s = 1 minimizes the variance under Laplace noise;
        notes seed002 sec. 0 item 8).
    construction : {'block', 'graph'}
    epsilon, delta, mechanism, contribution
        The release of each row (pysketch.distances.release): (epsilon, delta)-DP per row
        under ||x - y||_1 <= contribution.
    random_state : int or None
        The PUBLIC seed of S: every party must use the same one. The noise never comes
        from it (OS entropy).

    `fit(X)` draws S for X's number of columns; `release(X)` gives a DistanceRelease (for
    `pairwise_sq_distances`); `transform(X)` its values, for pipelines. Each call draws
    fresh noise and spends epsilon again for the rows it releases.
    """

    def __init__(self, n_components=256, *, sparsity=4, construction="block", epsilon=1.0, delta=0.0,
                 mechanism="auto", contribution=1.0, random_state=None):
        self.n_components = n_components
        self.sparsity = sparsity
        self.construction = construction
        self.epsilon = epsilon
        self.delta = delta
        self.mechanism = mechanism
        self.contribution = contribution
        self.random_state = random_state

    def fit(self, X, y=None):
        k = check_int(self.n_components, "n_components")
        s = check_int(self.sparsity, "sparsity")
        d = X.shape[1] if hasattr(X, "shape") and len(X.shape) == 2 else np.asarray(X).shape[-1]
        self.operator_ = SparseJLOperator.draw(int(d), k, s, construction=self.construction,
                                               random_state=self.random_state)
        self.n_features_in_ = int(d)
        return self

    def release(self, X):
        """The DistanceRelease of the rows of X (fresh noise)."""
        if not hasattr(self, "operator_"):
            raise not_fitted_error(self)
        return _release_rows(self.operator_, X, self.epsilon, self.delta, mechanism=self.mechanism,
                             contribution=self.contribution)

    def transform(self, X):
        return self.release(X).values
