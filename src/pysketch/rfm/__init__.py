"""Private random-feature regression (Liao, Needell & Xue 2024, "Differentially
private random feature model"): the published min-norm model with
output perturbation (:mod:`.published`), its baselines (:mod:`.baselines`), a
sufficient-statistics regressor with a worst-case guarantee (:mod:`.ssp`), the
scikit-learn estimators, and the excess-risk fairness measures (:mod:`.fairness`)."""

from .anova import AnovaFeatures
from .estimators import DPRFMRegressor, PrivateRFRegressor
from .fairness import ExcessRisk, ExcessRiskGaps, GroupExcessRisk, excess_risk, excess_risk_gaps
from .features import LAYOUTS, RandomFeatures
from .solvers import kaczmarz, min_norm, sgd
from .ssp import PrivateRFStatistics, RFStatistics, release_statistics, solve_ridge, statistics_sensitivities

__all__ = ["RandomFeatures", "AnovaFeatures", "LAYOUTS", "PrivateRFRegressor", "DPRFMRegressor", "RFStatistics",
           "PrivateRFStatistics", "release_statistics", "solve_ridge", "statistics_sensitivities", "min_norm",
           "kaczmarz", "sgd", "excess_risk", "excess_risk_gaps", "ExcessRisk", "ExcessRiskGaps", "GroupExcessRisk"]
