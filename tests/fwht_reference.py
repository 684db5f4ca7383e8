"""Independent NumPy definitions of the Walsh-Hadamard transform, for the tests."""

import numpy as np


def fwht_reference(x):
    """Butterflies level by level in increasing stride h = 1, 2, ..., n/2, in x's dtype.

    Each level views every row as (n / 2h) blocks of two halves a, b of length h and
    replaces them with a + b and a - b: the order of operations the library promises to
    reproduce bit for bit.
    """
    y = np.array(x, copy=True)
    shape = y.shape
    n = shape[-1]
    y = y.reshape(-1, n)
    h = 1
    while h < n:
        blocks = y.reshape(y.shape[0], n // (2 * h), 2, h)
        a, b = blocks[:, :, 0, :], blocks[:, :, 1, :]
        y = np.stack((a + b, a - b), axis=2).reshape(-1, n)
        h *= 2
    return y.reshape(shape)


def sylvester_signs(n):
    """The matrix (-1)^popcount(i & j), built bit by bit (the definition, not scipy's)."""
    i = np.arange(n)
    signs = np.ones((n, n), dtype=np.int64)
    bit = 1
    while bit < n:
        signs *= 1 - 2 * (((i[:, None] & bit) != 0) & ((i[None, :] & bit) != 0))
        bit <<= 1
    return signs


def seeded_batch(log_n, dtype, seed=0):
    """A reproducible batch of random real rows of length 2**log_n (same data in every process)."""
    n = 1 << log_n
    rows = max(1, (1 << 14) >> log_n)
    rng = np.random.default_rng(1000 * seed + log_n)
    return rng.standard_normal((rows, n)).astype(dtype)
