"""Decoders: learning a model from a sketch alone."""

from .clamp import ClampSolution, clamp
from .clompr import DecodingProblem, DiagonalGaussianAtoms, DiracAtoms, MixtureSolution, clompr

__all__ = ["ClampSolution", "DecodingProblem", "DiagonalGaussianAtoms", "DiracAtoms", "MixtureSolution", "clamp", "clompr"]
