"""Private baselines for comparisons, one module per task:

- :mod:`pysketch.baselines.kmeans`: DP-Lloyd (SuLQ k-means) and EUGkM (the noisy grid);
- :mod:`pysketch.baselines.pca`: exact, Laplace-covariance, Analyze-Gauss and Wishart PCA
  (the second-moment matrix released with noise);
- :mod:`pysketch.baselines.statistics`: the direct releases M2M's answers are compared
  with (moments, histograms, covariance, counting queries);
- :mod:`pysketch.baselines.erm`: L2-regularised logistic regression by objective
  perturbation.

Every public name is importable from ``pysketch.baselines`` itself.
"""

from .erm import LOGISTIC_C, PrivateLogisticModel, objective_perturbation_logistic
from .kmeans import DPLloyd, EUGkM
from .pca import (COUNT_SHARE, WISHART_FACTOR, AnalyzeGaussPCA, ExactPCA, LaplaceCovariancePCA, WishartPCA,
                  covariance_l1_sensitivity, covariance_l2_sensitivity)
from .statistics import (SUM_SHARE, DirectRelease, laplace_counting_queries, laplace_covariance, laplace_histogram,
                         laplace_moments)

__all__ = [
    "AnalyzeGaussPCA",
    "DPLloyd",
    "DirectRelease",
    "EUGkM",
    "ExactPCA",
    "LaplaceCovariancePCA",
    "PrivateLogisticModel",
    "WishartPCA",
    "covariance_l1_sensitivity",
    "covariance_l2_sensitivity",
    "laplace_counting_queries",
    "laplace_covariance",
    "laplace_histogram",
    "laplace_moments",
    "objective_perturbation_logistic",
]
