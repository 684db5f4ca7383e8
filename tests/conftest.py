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
