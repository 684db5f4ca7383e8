"""Decoders: learning a model from a sketch alone."""

from .clompr import DecodingProblem, DiagonalGaussianAtoms, DiracAtoms, MixtureSolution, clompr

__all__ = ["DecodingProblem", "DiagonalGaussianAtoms", "DiracAtoms", "MixtureSolution", "clompr"]
