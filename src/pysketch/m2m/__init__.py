"""M2M: any empirical average, and simple models, from one (private) sketch.

- :class:`Domain`: the public box (with discrete coordinates) synthetic points come from;
- :class:`M2M`: the ridge regression of a target on the features over the synthetic
  points, as f-independent weights: moments, means, covariances, CDFs, histograms and
  counting queries, or any f; the answers projected onto what is possible in the box, n
  pooled from every estimate in the release (:func:`pooled_count`), and a
  :class:`NoisyAnswerWarning` when a release is too noisy for the question asked;
- :class:`MarginalSynopsis`: a private release of fine one-way histograms and two-way
  marginal tables on bins chosen from them, for counting queries over several attributes
  of correlated real data (where sums of one-dimensional features cannot see the
  dependence), with CDFs and moments from the same release;
- implicit M2M models (:mod:`pysketch.m2m.models`): logistic and least-squares regression
  on the re-weighted synthetic points.

Sketch with a map of :func:`pysketch.features.make_box_map` ('real' RFF, 'race', 'hist'),
release it with :func:`pysketch.privacy.make_private`, then ask anything for free.
"""

from .core import LOSSES, M2M, NOISE_WARNING_RATIO, REGULARIZATIONS, NoisyAnswerWarning, pooled_count
from .domain import Domain
from .models import M2MLinearRegression, M2MLogisticRegression
from .synopsis import MarginalSynopsis

__all__ = ["Domain", "M2M", "M2MLogisticRegression", "M2MLinearRegression", "LOSSES", "REGULARIZATIONS",
           "NOISE_WARNING_RATIO", "NoisyAnswerWarning", "pooled_count", "MarginalSynopsis"]
