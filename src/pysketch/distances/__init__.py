"""Private Euclidean distances from noisy sparse JL sketches (Stausholm; notes seed002).

Each party releases S x + eta under one public operator S (`SparseJLOperator.draw(d, k,
s, random_state=public_seed)`); anyone estimates ||x - y||^2 from two releases, unbiased,
with the exact variance of `pysketch.distances.formulas`. A private k-nearest-neighbour
search over releases:

>>> import numpy as np
>>> from pysketch.distances import PrivateJLTransformer, pairwise_sq_distances
>>> X = np.random.default_rng(0).poisson(3.0, size=(200, 1000)).astype(float)  # count vectors
>>> tr = PrivateJLTransformer(256, sparsity=1, epsilon=1.0, random_state=2024).fit(X)  # public seed
>>> D = pairwise_sq_distances(tr.release(X))     # unbiased estimates of ||x_i - x_j||^2
>>> neighbours = np.argsort(D, axis=1)[:, 1:6]   # five nearest of each row (column 0 is itself)

Also: the fast JL transform with output (`release`) or input (`release_input`)
perturbation, and the dense Gaussian JL baseline (`gaussian_jl_operator`,
`kenthapadi_release`).
"""

from . import formulas
from .release import (DistanceRelease, choose_mechanism, gaussian_jl_operator, kenthapadi_release, max_column_norm,
                      pairwise_sq_distances, release, release_cost, release_input, sq_distance)
from .transformer import PrivateJLTransformer

__all__ = ["DistanceRelease", "release", "release_cost", "release_input", "sq_distance", "pairwise_sq_distances", "max_column_norm",
           "choose_mechanism", "gaussian_jl_operator", "kenthapadi_release", "formulas", "PrivateJLTransformer"]
