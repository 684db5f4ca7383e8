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
