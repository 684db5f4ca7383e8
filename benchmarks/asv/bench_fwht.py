"""asv benchmarks of pysketch.fwht (time per call).

Run with ``asv run`` from the repository root (see asv.conf.json), or against the
installed package with ``asv run --environment existing --quick``.
"""

import numpy as np

import pysketch

DTYPES = ["float32", "float64"]
LENGTHS = [2**6, 2**10, 2**14, 2**17, 2**20]  # from L1 to far beyond L2


class FwhtSingleRow:
    """One row of length n per call, on one thread."""

    params = (DTYPES, LENGTHS)
    param_names = ["dtype", "n"]

    def setup(self, dtype, n):
        pysketch.set_num_threads(1)
        self.x = np.random.default_rng(0).standard_normal(n).astype(dtype)
        self.buffer = self.x.copy()

    def time_in_place(self, dtype, n):
        # normalized keeps the values bounded over repeated in-place calls
        pysketch.fwht(self.buffer, out=self.buffer, normalized=True, check_finite=False)

    def time_default_call(self, dtype, n):
        pysketch.fwht(self.x)


class FwhtBatch:
    """A batch of 2**18 elements (rows of length n) per call, on 1 or 2 threads.

    (asv runs every benchmark in a process of its own, so the thread setting does not leak.)
    """

    params = (DTYPES, [2**6, 2**10, 2**14], [1, 2])
    param_names = ["dtype", "n", "threads"]

    def setup(self, dtype, n, threads):
        pysketch.set_num_threads(threads)
        rows = 2**18 // n
        self.x = np.random.default_rng(0).standard_normal((rows, n)).astype(dtype)
        self.buffer = self.x.copy()

    def time_in_place(self, dtype, n, threads):
        pysketch.fwht(self.buffer, out=self.buffer, normalized=True, check_finite=False)

    def time_default_call(self, dtype, n, threads):
        pysketch.fwht(self.x)


class FwhtSmallCallOverhead:
    """The Python-level cost of one call on a tiny input."""

    def setup(self):
        self.x = np.ones(8, np.float32)

    def time_tiny_default_call(self):
        pysketch.fwht(self.x)

    def time_tiny_in_place(self):
        pysketch.fwht(self.x, out=self.x, normalized=True, check_finite=False)


class FwhtLongRow:
    """One long row per call, on 1 or 2 threads (split into sub-rows, then columns)."""

    params = (DTYPES, [2**22], [1, 2])
    param_names = ["dtype", "n", "threads"]

    def setup(self, dtype, n, threads):
        pysketch.set_num_threads(threads)
        self.buffer = pysketch.empty_aligned(n, dtype)
        self.buffer[...] = np.random.default_rng(0).standard_normal(n)

    def time_in_place(self, dtype, n, threads):
        pysketch.fwht(self.buffer, out=self.buffer, normalized=True, check_finite=False)


class FwhtAlignment:
    """In place on rows that start on a 64-byte boundary, and 16 bytes past one (where
    numpy usually puts large arrays), on one thread."""

    params = (DTYPES, [2**10, 2**16], [0, 16])
    param_names = ["dtype", "n", "offset_bytes"]

    def setup(self, dtype, n, offset_bytes):
        pysketch.set_num_threads(1)
        rows = max(1, 2**17 // n)
        raw = pysketch.empty_aligned(rows * n * np.dtype(dtype).itemsize + 64, np.uint8)
        start = offset_bytes
        self.buffer = raw[start : start + rows * n * np.dtype(dtype).itemsize].view(dtype).reshape(rows, n)
        self.buffer[...] = np.random.default_rng(0).standard_normal((rows, n))

    def time_in_place(self, dtype, n, offset_bytes):
        pysketch.fwht(self.buffer, out=self.buffer, normalized=True, check_finite=False)
