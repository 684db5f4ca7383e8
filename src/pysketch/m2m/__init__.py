"""M2M: any empirical average, and simple models, from one (private) sketch.

- :class:`Domain`: the public box (with discrete coordinates) synthetic points come from;
- :class:`M2M`: the ridge regression of a target on the features over the synthetic
  points, as f-independent weights: moments, means, covariances, CDFs, histograms and
  counting queries, or any f;
- implicit M2M models (:mod:`pysketch.m2m.models`): logistic and least-squares regression
  on the re-weighted synthetic points.

Sketch with a map of :func:`pysketch.features.make_box_map` ('real' RFF, 'race', 'hist'),
release it with :func:`pysketch.privacy.make_private`, then ask anything for free.
"""

from .core import LOSSES, M2M, REGULARIZATIONS
from .domain import Domain
from .models import M2MLinearRegression, M2MLogisticRegression

__all__ = ["Domain", "M2M", "M2MLogisticRegression", "M2MLinearRegression", "LOSSES", "REGULARIZATIONS"]
