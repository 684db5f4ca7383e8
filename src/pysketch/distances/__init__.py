"""Private Euclidean distances from noisy sparse JL sketches (Stausholm 2021,
"Improved differentially private Euclidean distance approximation").

Each party releases S x + eta under one public operator S (`SparseJLOperator.draw(d, k,
s, random_state=public_seed)`); anyone estimates ||x - y||^2 from two releases, unbiased,
with the exact variance of `pysketch.distances.formulas`. A private k-nearest-neighbour
search over releases:

>>> import numpy as np
>>> from pysketch.distances import PrivateJLTransformer, nearest_neighbors, pairwise_sq_distances
>>> X = np.random.default_rng(0).poisson(3.0, size=(200, 1000)).astype(float)  # count vectors
>>> tr = PrivateJLTransformer(256, sparsity=1, epsilon=1.0, random_state=2024).fit(X)  # public seed
>>> R = tr.release(X)
>>> D = pairwise_sq_distances(R)                 # unbiased estimates of ||x_i - x_j||^2 (200 x 200)
>>> idx, est = nearest_neighbors(R, n_neighbors=5)  # five nearest of each row, in blocks

Also: the fast JL transform with output (`release`) or input (`release_input`)
perturbation, and the dense Gaussian JL baseline (`gaussian_jl_operator`,
`kenthapadi_release`).
"""

from . import formulas
from .release import (DistanceRelease, choose_mechanism, clean_release, gaussian_jl_operator, kenthapadi_release, max_column_norm,
                      nearest_neighbors, pairwise_sq_distances, release, release_cost, release_input,
                      sq_distance)
from .transformer import PrivateJLTransformer

__all__ = ["DistanceRelease", "release", "release_cost", "release_input", "sq_distance", "pairwise_sq_distances", "nearest_neighbors", "max_column_norm",
           "choose_mechanism", "clean_release", "gaussian_jl_operator", "kenthapadi_release", "formulas",
           "PrivateJLTransformer"]
