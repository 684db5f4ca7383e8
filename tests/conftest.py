import warnings

import pytest

import pysketch


@pytest.fixture
def restore_threads():
    """Restore the process-wide thread count after the test."""
    before = pysketch.get_num_threads()
    yield
    pysketch.set_num_threads(before)


@pytest.fixture
def restore_simd():
    """Restore the process-wide SIMD level after the test."""
    before = pysketch.simd_level()
    yield
    pysketch.set_simd_level(before)


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False,
                     help="also run the tests marked slow (full-size privacy audits, long quality runs)")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long test, run only with --runslow")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def dask_client():
    """A dask.distributed LocalCluster of 2 worker processes (1 thread each) and its Client,
    started once for the test session (the Dask tests skip without distributed)."""
    distributed = pytest.importorskip("distributed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cluster's own start-up notices
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None, memory_limit="2GiB")
        client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()
