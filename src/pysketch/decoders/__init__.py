"""Decoders: learning a model from a sketch alone.

- :mod:`~pysketch.decoders.problem`: the DecodingProblem, atom families and solutions;
- :mod:`~pysketch.decoders.base`: the Decoder contract and the DECODERS registry;
- :mod:`~pysketch.decoders.clompr` (CL-OMPR), :mod:`~pysketch.decoders.cl_amp` (CL-AMP)
  and :mod:`~pysketch.decoders.coreset`: the decoders, registered by name.
"""

from .base import DECODERS, Decoder
from .cl_amp import ClAmpSolution, cl_amp
from .clompr import clompr
from .coreset import coreset, mixture_kmeans
from .problem import DecodingProblem, DiagonalGaussianAtoms, DiracAtoms, IsotropicGaussianAtoms, MixtureSolution

__all__ = ["DECODERS", "ClAmpSolution", "Decoder", "DecodingProblem", "DiagonalGaussianAtoms", "DiracAtoms",
           "IsotropicGaussianAtoms", "MixtureSolution", "cl_amp", "clompr", "coreset", "mixture_kmeans"]
