"""Decoders: learning a model from a sketch alone.

- :mod:`~pysketch.decoders.problem`: the DecodingProblem, atom families and solutions;
- :mod:`~pysketch.decoders.base`: the Decoder contract (``decode(task)``, the tasks
  MixtureTask and SubspaceTask) and the DECODERS registry;
- :mod:`~pysketch.decoders.clompr` (CL-OMPR), :mod:`~pysketch.decoders.cl_amp` (CL-AMP)
  and :mod:`~pysketch.decoders.coreset`: the mixture decoders, registered by name;
- :mod:`~pysketch.decoders.grid`: k-means of grid sketches (joint histograms), clean or
  private;
- :mod:`~pysketch.decoders.subspace`: the SubspaceProblem of quadratic sketches and the
  Burer-Monteiro decoder (principal subspaces);
- :mod:`~pysketch.decoders.eigen`: the CovarianceProblem of second-moment sketches and the
  eigen decoder (principal subspaces of the whole matrix).
"""

from .base import DECODERS, Decoder, MixtureTask, SubspaceTask, Task
from .cl_amp import ClAmpSolution, cl_amp
from .clompr import clompr
from .coreset import coreset, mixture_kmeans
from .eigen import CovarianceProblem, EigenDecoder
from .grid import GridKMeansDecoder, GridProblem, GridSolution, grid_kmeans
from .problem import DecodingProblem, DiagonalGaussianAtoms, DiracAtoms, IsotropicGaussianAtoms, MixtureSolution
from .subspace import BurerMonteiro, SubspaceProblem, SubspaceSolution

__all__ = ["BurerMonteiro", "ClAmpSolution", "CovarianceProblem", "DECODERS", "Decoder", "DecodingProblem",
           "DiagonalGaussianAtoms", "DiracAtoms", "EigenDecoder", "GridKMeansDecoder", "GridProblem", "GridSolution",
           "IsotropicGaussianAtoms", "MixtureSolution", "MixtureTask", "SubspaceProblem", "SubspaceSolution",
           "SubspaceTask", "Task", "cl_amp", "clompr", "coreset", "grid_kmeans", "mixture_kmeans"]
