"""Streamed readers of data files: the records (rows) of a file a block at a time.

`open_data(path)` reads the header of a file (its shape, its column names where it has
some) and returns a `DataFile`, whose `blocks()` gives its records as 2-D arrays of a
bounded size, so that a pass over files of any number and size holds one block at a time:

- ``.npy``: ``np.load(path, mmap_mode='r')``; a block is a row slice of the memory map (no
  copy), so that `SketchAccumulator` reads it in batches and releases its pages once read
  (with ``columns``, the selected columns are copied and the pages released here);
- ``.npz``: every 2-D array of the archive in turn (or the one named by ``key``), each read
  from its zip member as a stream of rows (stored or deflated alike);
- ``.csv``, ``.tsv``, ``.txt`` (and the same names with ``.gz``): a block of lines at a time,
  parsed by ``np.loadtxt``; a first line that is not all numbers is taken for a header of
  column names (``skip_header=True`` always skips the first line); the delimiter is ``,``
  for .csv, a tab for .tsv and any whitespace for .txt unless given;
- ``.parquet``, ``.pq``: ``pyarrow.parquet.ParquetFile.iter_batches`` over the numeric
  columns (integer, floating point, boolean, decimal), when pyarrow is installed.

`expand_paths` expands glob patterns (so that quoted patterns work where no shell expands
them) and checks that every file exists. Every error is a `DataFileError` (a ValueError)
whose message starts with the file's name, and says where in the file it was found (the
line of a text file, the member and rows of an .npz archive, the records of a Parquet
file): a file that holds no records (a CSV of a header alone, an empty array), a
column selection beyond the file's columns (`ColumnError`), text that is not UTF-8, a
line that does not parse, and damage found while reading: a truncated or corrupt
compressed stream (gzip, deflate), a failed checksum (gzip's and ZIP's CRC-32, which are
checked by reading every member to its end; Parquet page checksums where the file has
them), a member or file holding another number of bytes or records than its header or
metadata declares.
"""

import collections
import glob
import gzip
import mmap
import os
import struct
import warnings
import zipfile
import zlib

import numpy as np

__all__ = ["DataFileError", "ColumnError", "DataFile", "Block", "DATA_SUFFIXES", "expand_paths", "parse_columns",
           "open_data", "BLOCK_BYTES"]

#: Bytes per block: of parsed records (float64) for Parquet, of text and parsed records for
#: text files, of the file for .npy files with selected columns (copied) and .npz members;
#: .npy blocks without a selection are views of the file of _NPY_BLOCK_BYTES.
BLOCK_BYTES = 16 << 20
_NPY_BLOCK_BYTES = 64 << 20

_TEXT_DELIMITERS = {".csv": ",", ".tsv": "\t", ".txt": None}
#: The file names `open_data` reads, by their ending.
DATA_SUFFIXES = (".npy", ".npz", ".csv", ".tsv", ".txt", ".csv.gz", ".tsv.gz", ".txt.gz", ".parquet", ".pq")

Block = collections.namedtuple("Block", "data first_row done")
Block.__doc__ = """One block of records of a file, as `DataFile.blocks` gives them.

Parameters
----------
data : numpy.ndarray
    The records of the block, one per row (2-D; a view of the file's memory map for an
    .npy file read without a column selection).
first_row : int
    The index of its first row among the file's records (over all arrays of an .npz).
done : float
    How far into the file the reader is after it, as a fraction in [0, 1] (for
    progress bars).

Examples
--------
>>> import os, tempfile
>>> import numpy as np
>>> from pysketch.files import open_data, parse_columns
>>> with tempfile.NamedTemporaryFile(suffix=".npy", delete=False) as f:
...     np.save(f, np.arange(10.0).reshape(5, 2))
>>> for block in open_data(f.name, columns=parse_columns("1")).blocks(block_bytes=32):
...     print(block.first_row, block.data.ravel(), block.done)
0 [1. 3.] 0.4
2 [5. 7.] 0.8
4 [9.] 1.0
>>> os.remove(f.name)
"""
Block.data.__doc__ = "The records of the block, one per row (2-D)."
Block.first_row.__doc__ = "The index of the block's first row among the file's records."
Block.done.__doc__ = "How far into the file the reader is after the block, in [0, 1]."


class DataFileError(ValueError):
    """A data file cannot be read as records (missing, of an unknown kind, not numeric,
    damaged); the message names the file.

    Examples
    --------
    >>> from pysketch.files import DataFileError, open_data
    >>> try:
    ...     open_data("no_such_file.csv")
    ... except DataFileError as exc:  # a ValueError
    ...     print(exc)
    no_such_file.csv: no such file
    """


class ColumnError(DataFileError):
    """A column selection that a file cannot satisfy (an index or a range beyond its
    columns, a name it does not have); the message names the file.

    Examples
    --------
    >>> import os, tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
    ...     _ = f.write("x,y\\n1,2\\n3,4\\n5,6\\n")
    >>> from pysketch.files import ColumnError, open_data, parse_columns
    >>> try:
    ...     open_data(f.name, columns=parse_columns("price"))
    ... except ColumnError as exc:  # a DataFileError
    ...     print(str(exc).endswith("no column named 'price' (its columns: x, y)"))
    True
    >>> os.remove(f.name)
    """


#: What decompressors and parsers raise on a damaged or truncated stream, besides OSError
#: (gzip's BadGzipFile, Parquet's I/O errors): read as a DataFileError naming the place.
_STREAM_DAMAGE = (EOFError, zlib.error, zipfile.BadZipFile)
#: ZIP members whose (undamaged) headers say they are encrypted or of an unknown compression
#: method: zipfile raises RuntimeError and NotImplementedError for them.
_ZIP_REFUSALS = (RuntimeError, NotImplementedError)
_BOM = b"\xef\xbb\xbf"


def _cause(exc):
    """The text of a low-level exception, with its type."""
    return f"{type(exc).__name__}: {exc}"


# ---------------------------------------------------------------------------- paths and columns


def _has_magic(pattern):
    return any(c in pattern for c in "*?[")


def expand_paths(patterns):
    """The files named by `patterns`, each an existing file.

    Glob patterns are expanded here, so that quoted patterns work where no shell expands
    them. A file named twice is read twice.

    Parameters
    ----------
    patterns : iterable of str or path-like
        Paths or glob patterns (``~`` expanded), in order; the matches of a pattern are
        sorted.

    Returns
    -------
    list of str
        The paths, in the order of the patterns.

    Raises
    ------
    DataFileError
        For a pattern that matches nothing, a path that does not exist, or a directory.

    Examples
    --------
    >>> import os, tempfile
    >>> from pysketch.files import expand_paths
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     for name in ("part2.csv", "part1.csv"):
    ...         open(os.path.join(folder, name), "w").close()
    ...     found = expand_paths([os.path.join(folder, "part*.csv")])
    >>> [os.path.basename(path) for path in found]
    ['part1.csv', 'part2.csv']
    """
    out = []
    for pattern in patterns:
        pattern = os.path.expanduser(os.fspath(pattern))
        if os.path.exists(pattern):
            matches = [pattern]
        elif _has_magic(pattern):
            matches = sorted(glob.glob(pattern))
            if not matches:
                raise DataFileError(f"{pattern}: no file matches this pattern")
        else:
            raise DataFileError(f"{pattern}: no such file")
        for path in matches:
            if os.path.isdir(path):
                raise DataFileError(f"{path}: is a directory, not a data file")
            out.append(path)
    return out


def parse_columns(text):
    """The column selection of a command line, parsed.

    Parameters
    ----------
    text : str
        Comma-separated column indices (from 0; negative ones count from the end), ranges
        ``start:stop`` or ``start:stop:step`` (Python slices; either end may be omitted)
        and column names (any other item).

    Returns
    -------
    list of int, slice and str
        For `open_data`'s `columns`.

    Raises
    ------
    ValueError
        For an empty item, a range whose ends are not integers, of more than three parts,
        or of step 0.

    Examples
    --------
    >>> from pysketch.files import parse_columns
    >>> parse_columns("0, 2:5, price, -1")
    [0, slice(2, 5, None), 'price', -1]
    """
    items = []
    for raw in str(text).split(","):
        token = raw.strip()
        if not token:
            raise ValueError(f"empty item in the column list {text!r}")
        if ":" in token:
            parts = token.split(":")
            try:
                bounds = [int(p) if p.strip() else None for p in parts]
            except ValueError:
                raise ValueError(f"column range {token!r} must be start:stop (integers)") from None
            if len(bounds) not in (2, 3):
                raise ValueError(f"column range {token!r} must be start:stop or start:stop:step")
            if len(bounds) == 3 and bounds[2] == 0:
                raise ValueError(f"column range {token!r} has step 0")
            items.append(slice(*bounds))
            continue
        try:
            items.append(int(token))
        except ValueError:
            items.append(token)  # a column name
    return items


def _resolve_columns(spec, n_total, names, path):
    """Indices (int64) of the columns `spec` (from parse_columns) selects among n_total
    columns named `names` (or None)."""
    picked = []
    for item in spec:
        if isinstance(item, slice):
            _check_range(item, n_total, path)
            picked.extend(range(n_total)[item])
        elif isinstance(item, str):
            if names is None:
                raise ColumnError(f"{path}: has no column names, so column {item!r} cannot be selected by name "
                                  "(give indices from 0)")
            if item not in names:
                raise ColumnError(f"{path}: no column named {item!r} (its columns: {', '.join(names)})")
            picked.append(names.index(item))
        else:
            if not -n_total <= item < n_total:
                raise ColumnError(f"{path}: column {item} is out of range (the file has {n_total} columns)")
            picked.append(item % n_total)
    if not picked:
        raise ColumnError(f"{path}: the column selection picks no column (the file has {n_total} columns)")
    return np.asarray(picked, dtype=np.int64)


def _range_text(item):
    text = ":".join("" if v is None else str(v) for v in (item.start, item.stop))
    return text if item.step is None else f"{text}:{item.step}"


def _check_range(item, n_total, path):
    """Refuse a range whose given ends lie beyond the file's columns (a Python slice would
    clip them silently: 0:20 of 11 columns would read 11)."""
    forward = item.step is None or item.step > 0
    # the ends a slice of n_total items can mean without clipping: start in [-n, n] (n: the
    # empty tail) and stop in [-n, n] forward; backward, start in [-n, n - 1] and stop in
    # [-n - 1, n - 1] (-n - 1: through the first column)
    limits = {"start": (-n_total, n_total if forward else n_total - 1),
              "stop": (-n_total if forward else -n_total - 1, n_total if forward else n_total - 1)}
    for end, (low, high) in limits.items():
        value = getattr(item, end)
        if value is not None and not low <= value <= high:
            raise ColumnError(f"{path}: column range {_range_text(item)} reaches beyond the file's {n_total} columns "
                              f"(its {end} {value} is outside [{low}, {high}]; {_range_text(slice(0, n_total))} "
                              "is all of them)")


def _check_numeric(dtype, path):
    if dtype.kind not in "biuf":
        what = "complex numbers" if dtype.kind == "c" else f"dtype {dtype}"
        raise DataFileError(f"{path}: records must be real numbers, this file holds {what}")


# ---------------------------------------------------------------------------- the readers


class DataFile:
    """A file of records opened by `open_data`.

    `blocks` gives its records in blocks (`Block`) of a bounded size. Each kind of file (.npy,
    .npz, text, Parquet) is a subclass, made by `open_data`.

    Parameters
    ----------
    path : str
        The file.

    Attributes
    ----------
    path : str
        The file.
    n_columns : int
        The columns read, after any selection.
    n_rows : int or None
        The number of records, or None when unknown before reading (text files).
    column_names : list of str or None
        The names of the columns read, where the file has some.
    notes : list of str
        Things worth telling the user (a first line taken for a header, columns skipped).

    Raises
    ------
    DataFileError
        From `blocks`, when damage is found while reading (a truncated or corrupt
        compressed stream, a failed checksum, a line that does not parse, more or fewer
        records than declared); the message names the file and where.

    Examples
    --------
    >>> import os, tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
    ...     _ = f.write("x,y\\n1,2\\n3,4\\n5,6\\n")
    >>> from pysketch.files import open_data
    >>> data = open_data(f.name)
    >>> data.column_names, data.n_columns, [block.data.shape for block in data.blocks()]
    (['x', 'y'], 2, [(3, 2)])
    >>> os.remove(f.name)
    """

    kind = None
    #: Exceptions of this kind's decoders that mean a damaged or unreadable file, and how
    #: such a file is called in the message.
    _damage = (OSError,) + _STREAM_DAMAGE
    _damaged = "cannot be read"

    def __init__(self, path):
        self.path = path
        self.n_columns = None
        self.n_rows = None
        self.column_names = None
        self.notes = []
        self._where = ""  # where the reading is, for messages: ", after line 12", "[a], rows 0-99"

    def blocks(self, block_bytes=BLOCK_BYTES):
        """The records as Blocks of about `block_bytes` bytes each. Damage found on the way
        (a truncated or corrupt compressed stream, a failed checksum) raises DataFileError
        naming the file and where; blocks given before it are not to be trusted."""
        self._where = ""
        try:
            yield from self._blocks(block_bytes)
        except DataFileError:
            raise
        except self._damage as exc:
            raise DataFileError(f"{self.path}{self._damage_where(exc)}: {self._damaged} ({_cause(exc)})") from None

    def _blocks(self, block_bytes):
        raise NotImplementedError

    def _damage_where(self, exc):
        """Where the damage `exc` was found (for messages, after it was)."""
        return self._where

    def _rows_per_block(self, block_bytes, row_bytes):
        return max(1, int(block_bytes) // max(1, int(row_bytes)))

    def __repr__(self):
        return f"{type(self).__name__}({self.path!r}, n_rows={self.n_rows}, n_columns={self.n_columns})"


def _pointer(a):
    return a.__array_interface__["data"][0]


def _extent(a):
    """[low, high) byte addresses spanned by the elements of the array a."""
    low = high = _pointer(a)
    for n, stride in zip(a.shape, a.strides):
        if n == 0:
            return low, low
        if stride < 0:
            low += stride * (n - 1)
        else:
            high += stride * (n - 1)
    return low, high + a.itemsize


def _mapping_of(a):
    """The mmap.mmap object under an array (following its bases), or None."""
    base = a
    while base is not None and not isinstance(base, mmap.mmap):
        base = getattr(base, "base", None)
    return base


def _drop_pages(part):
    """Release this process's resident pages of `part`, a view of a read-only memory map
    that has been read (MADV_DONTNEED: the page cache keeps them, a later read faults them
    in again), so that reading a large file keeps the process's memory bounded."""
    mm = _mapping_of(part)
    if mm is None or part.size == 0 or not hasattr(mm, "madvise") or not hasattr(mmap, "MADV_DONTNEED"):
        return
    start = _pointer(np.frombuffer(mm, np.uint8))
    low, high = _extent(part)
    page = mmap.PAGESIZE
    first = max(0, (low - start) // page * page)
    stop = min(len(mm), -(-(high - start) // page) * page)
    if stop > first:
        mm.madvise(mmap.MADV_DONTNEED, first, stop - first)


class _NpyFile(DataFile):
    kind = "npy"

    def __init__(self, path, columns):
        super().__init__(path)
        with open(path, "rb") as f:
            if f.read(6) != b"\x93NUMPY":
                raise DataFileError(f"{path}: not a .npy file (no NumPy array header)")
        try:
            A = np.load(path, mmap_mode="r", allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise DataFileError(f"{path}: not a readable .npy file ({exc})") from None
        if not isinstance(A, np.ndarray):
            raise DataFileError(f"{path}: not a .npy array file")
        if A.ndim != 2:
            raise DataFileError(f"{path}: must hold a 2-D array of records (rows), got shape {A.shape}")
        _check_numeric(A.dtype, path)
        if A.shape[0] == 0:
            raise DataFileError(f"{path}: holds no records (its array has shape {A.shape})")
        self._array = A
        self._columns = None if columns is None else _resolve_columns(columns, A.shape[1], None, path)
        self.n_rows = int(A.shape[0])
        self.n_columns = int(A.shape[1]) if self._columns is None else int(self._columns.size)

    def _blocks(self, block_bytes):
        A, cols, n = self._array, self._columns, self.n_rows
        # views cost nothing: large blocks (fewer updates); copies of selected columns: block_bytes
        size = max(block_bytes, _NPY_BLOCK_BYTES) if cols is None else block_bytes
        step = self._rows_per_block(size, A.shape[1] * A.itemsize)
        for start in range(0, n, step):
            part = A[start : start + step]
            done = min(start + step, n) / n
            if cols is None:
                # a view of the map: the accumulator converts it batch by batch and releases its pages
                yield Block(part, start, done)
            else:
                X = np.ascontiguousarray(part[:, cols])
                _drop_pages(part)  # read: its pages are not needed any more
                yield Block(X, start, done)
                del X
            _drop_pages(part)  # (again, for a consumer that did not)


_ZIP_END = struct.Struct("<4s4H2LH")
_ZIP64_LOCATOR = struct.Struct("<4sLQL")
_ZIP64_END = struct.Struct("<4sQ2H2L4Q")


def _zip_declared_members(path):
    """The number of members the end record of the ZIP archive `path` declares (None when it
    cannot be read here; zipfile has found the record already). zipfile does not compare it
    with the members its directory lists: a damaged comment length there hides the members
    that follow it."""
    with open(path, "rb") as f:
        size = f.seek(0, os.SEEK_END)
        start = max(0, size - _ZIP_END.size - 0xFFFF)  # the record, then a comment of at most 65535 bytes
        f.seek(start)
        tail = f.read()
        at = tail.rfind(b"PK\x05\x06")
        if at < 0 or at + _ZIP_END.size > len(tail):
            return None
        count = _ZIP_END.unpack_from(tail, at)[4]
        if count != 0xFFFF:
            return count
        at += start  # ZIP64: the count is in the ZIP64 end record, found by its locator before this one
        if at < _ZIP64_LOCATOR.size:
            return None
        f.seek(at - _ZIP64_LOCATOR.size)
        sig, _, offset, _ = _ZIP64_LOCATOR.unpack(f.read(_ZIP64_LOCATOR.size))
        f.seek(offset)
        record = f.read(_ZIP64_END.size)
        if sig != b"PK\x06\x07" or len(record) != _ZIP64_END.size or record[:4] != b"PK\x06\x06":
            return None
        return _ZIP64_END.unpack(record)[7]


class _NpzFile(DataFile):
    kind = "npz"
    _damage = DataFile._damage + _ZIP_REFUSALS + (UnicodeDecodeError,)
    _damaged = "damaged or truncated archive member"

    def __init__(self, path, columns, key):
        super().__init__(path)
        member = None
        try:
            with zipfile.ZipFile(path) as zf:
                declared = _zip_declared_members(path)
                if declared is not None and declared != len(zf.infolist()):
                    raise DataFileError(f"{path}: damaged ZIP directory: it lists {len(zf.infolist())} members, its "
                                        f"end record declares {declared}")
                infos = {i.filename: i for i in zf.infolist() if i.filename.endswith(".npy")}
                names = list(infos)
                if key is not None:
                    wanted = key if key.endswith(".npy") else key + ".npy"
                    if wanted not in names:
                        keys = ", ".join(n[:-4] for n in names) or "none"
                        raise DataFileError(f"{path}: no array named {key!r} (its arrays: {keys})")
                    names = [wanted]
                if not names:
                    raise DataFileError(f"{path}: holds no array")
                others = [i.filename for i in zf.infolist() if i.filename not in infos]
                if key is None:
                    for member in others:  # zipfile checks a member's own header against the directory
                        zf.open(member).close()
                    if others:
                        self.notes.append(f"{path}: members that are not .npy arrays skipped: {', '.join(others)}")
                self._members = []
                for member in names:
                    with zf.open(infos[member]) as f:
                        shape, fortran, dtype = _read_npy_header(f, f"{path}[{member[:-4]}]")
                        held = infos[member].file_size - f.tell()  # bytes of the array's data
                    self._members.append((member, shape, fortran, dtype, held))
        except DataFileError:
            raise
        except self._damage as exc:
            where = "" if member is None else f"[{member[:-4] if member.endswith('.npy') else member}]"
            raise DataFileError(f"{path}{where}: not a readable .npz archive ({_cause(exc)})") from None
        widths = {}
        for name, shape, _, dtype, held in self._members:
            where = f"{path}[{name[:-4]}]"
            if len(shape) != 2:
                raise DataFileError(f"{where}: must be a 2-D array of records (rows), got shape {shape}"
                                    + ("" if key is not None else "; pick one array with --key"))
            _check_numeric(dtype, where)
            nbytes = shape[0] * shape[1] * dtype.itemsize
            if nbytes != held:
                raise DataFileError(f"{where}: damaged or truncated: its header declares a {dtype} array of shape "
                                    f"{shape} ({nbytes} bytes) but the member holds {held} bytes of data")
            widths.setdefault(shape[1], name)
        if len(widths) > 1:
            (w0, a0), (w1, a1) = list(widths.items())[:2]
            raise DataFileError(f"{path}: its arrays have different numbers of columns ({a0[:-4]}: {w0}, "
                                f"{a1[:-4]}: {w1}); pick one with --key")
        total = self._members[0][1][1]
        self._columns = None if columns is None else _resolve_columns(columns, total, None, path)
        self.n_rows = int(sum(shape[0] for _, shape, _, _, _ in self._members))
        self.n_columns = int(total) if self._columns is None else int(self._columns.size)
        if self.n_rows == 0:
            raise DataFileError(f"{path}: holds no records (every array read has 0 rows)")
        if any(fortran for _, _, fortran, _, _ in self._members):
            self.notes.append(f"{path}: an array in Fortran (column) order is read whole, not as a stream of rows")

    def _blocks(self, block_bytes):
        first, n = 0, max(self.n_rows, 1)
        self._where = " (its ZIP directory)"
        with zipfile.ZipFile(self.path) as zf:
            for name, shape, fortran, dtype, _ in self._members:
                rows, width = shape
                where = f"{self.path}[{name[:-4]}]"
                self._member = name[:-4]
                self._where = f"[{name[:-4]}], its header"
                with zf.open(name) as f:
                    _read_npy_header(f, where)
                    if fortran:  # no stream of rows: the whole array
                        self._where = f"[{name[:-4]}], rows 0-{rows - 1}"
                        buf = f.read(rows * width * dtype.itemsize)
                        if len(buf) != rows * width * dtype.itemsize:
                            raise DataFileError(f"{where}: truncated (expected {rows} rows)")
                        chunks = [(0, np.frombuffer(buf, dtype=dtype).reshape(shape, order="F"))]
                    else:
                        chunks = self._row_chunks(f, name[:-4], rows, width, dtype, block_bytes)
                    for start, X in chunks:
                        if self._columns is not None:
                            X = X[:, self._columns]
                        yield Block(X, first + start, min(1.0, (first + start + X.shape[0]) / n))
                    # to the member's end: the ZIP's CRC-32 is checked there, and only there
                    self._where = f"[{name[:-4]}], at its end (after row {rows - 1})"
                    if f.read(1):
                        raise DataFileError(f"{where}: holds more bytes than its header's {rows} rows")
                first += rows

    def _damage_where(self, exc):
        if isinstance(exc, zipfile.BadZipFile) and "CRC" in str(exc):  # of the whole member, checked at its end
            return f"[{self._member}], its checksum (the CRC-32 of all its rows)"
        return self._where

    def _row_chunks(self, f, member, rows, width, dtype, block_bytes):
        row_bytes = width * dtype.itemsize
        step = self._rows_per_block(block_bytes, row_bytes)
        for start in range(0, rows, step):
            k = min(step, rows - start)
            self._where = f"[{member}], rows {start}-{start + k - 1}"
            buf = f.read(k * row_bytes)
            if len(buf) != k * row_bytes:
                raise DataFileError(f"{self.path}[{member}]: truncated (expected {rows} rows)")
            yield start, np.frombuffer(buf, dtype=dtype).reshape(k, width)


def _read_npy_header(f, where):
    """(shape, fortran_order, dtype) of the .npy stream f, positioned at its data after."""
    try:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            return np.lib.format.read_array_header_1_0(f)
        return np.lib.format.read_array_header_2_0(f)  # 2.0 and 3.0 (the same header, utf-8 names)
    except ValueError as exc:
        raise DataFileError(f"{where}: not a .npy array ({exc})") from None


def _open_text(path):
    return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")


def _is_data_line(line):
    s = line.strip()
    return bool(s) and not s.startswith(b"#")


def _decoded(line, path, lineno):
    """The text of one line of a file (UTF-8; a byte-order mark at the file's start is
    dropped); DataFileError naming the line and the byte otherwise."""
    if lineno == 1 and line.startswith(_BOM):
        line = line[len(_BOM):]
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataFileError(f"{path}, line {lineno}: not UTF-8 text (byte 0x{line[exc.start]:02x} at byte "
                            f"{exc.start} of the line): save the file as UTF-8") from None


def _fields(text, delimiter):
    text = text.split("#", 1)[0].strip()
    parts = text.split(delimiter) if delimiter is not None else text.split()
    return [p.strip().strip('"').strip() for p in parts]


def _looks_like_header(fields):
    """A first line of names: none of its fields is a number, and not all are empty (a first
    record with a missing value, such as "1,NA", is data, and fails to parse loudly)."""
    return any(fields) and not any(_is_number(x) for x in fields)


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


class _TextFile(DataFile):
    kind = "text"

    def __init__(self, path, columns, delimiter, skip_header):
        super().__init__(path)
        suffix = path[:-3] if path.endswith(".gz") else path
        self.delimiter = _TEXT_DELIMITERS[os.path.splitext(suffix)[1].lower()] if delimiter is None else delimiter
        self._gzip = path.lower().endswith(".gz")
        self._damaged = "damaged or truncated gzip data" if self._gzip else "cannot be read"
        header = None
        first_data = None
        self._skip = 0  # lines before the data (the header and what precedes it)
        lineno = 0
        try:
            with _open_text(path) as f:
                for lineno, line in enumerate(f, 1):
                    if not _is_data_line(line):
                        continue
                    fields = _fields(_decoded(line, path, lineno), self.delimiter)
                    if header is None and (skip_header or _looks_like_header(fields)):
                        header, self._skip = fields, lineno
                        continue
                    first_data = fields
                    break
        except self._damage as exc:
            where = f", after line {lineno}" if lineno else ""
            raise DataFileError(f"{path}{where}: {self._damaged} ({_cause(exc)})") from None
        if header is None and first_data is None:
            raise DataFileError(f"{path}: holds no records")
        if first_data is None:
            raise DataFileError(f"{path}: holds no records (only the header line {self._skip}: "
                                f"{', '.join(header)})")
        total = len(header) if header is not None else len(first_data)
        if first_data is not None and header is not None and len(first_data) != total:
            raise DataFileError(f"{path}: the header has {len(header)} columns but the first record {len(first_data)}")
        names = header if header is not None and _looks_like_header(header) else None
        if header is not None:
            self.notes.append(f"{path}: first line {self._skip} taken as a header"
                              + (f" ({', '.join(header)})" if names is not None else " and skipped"))
        self._columns = None if columns is None else _resolve_columns(columns, total, names, path)
        self.n_columns = total if self._columns is None else int(self._columns.size)
        if names is not None:
            self.column_names = names if self._columns is None else [names[i] for i in self._columns]
        self._total = total
        self._size = max(1, _file_size(path))

    def _blocks(self, block_bytes):
        # about block_bytes / 2 of text at a time: with its decoded copy and the parsed
        # records (fewer bytes than their text), about block_bytes in all
        text_bytes = max(1, int(block_bytes) // 2)
        usecols = None if self._columns is None else [int(c) for c in self._columns]
        first, lineno = 0, self._skip
        with _open_text(self.path) as f:
            raw = f.fileobj if isinstance(f, gzip.GzipFile) else f
            for _ in range(self._skip):
                f.readline()
            while True:
                self._where = f", after line {lineno}"
                lines = f.readlines(text_bytes)
                if not lines:
                    break
                try:
                    X = self._parse(lines, usecols, lineno)
                except DataFileError as exc:
                    if self._gzip:
                        self._check_rest(f, lineno + len(lines), exc)
                    raise
                lineno += len(lines)
                if X.shape[0]:
                    done = min(1.0, raw.tell() / self._size) if not raw.closed else 1.0
                    yield Block(X, first, done)
                    first += X.shape[0]

    def _damage_where(self, exc):
        """The last line before the damage: the lines read again up to it (a block holds
        many lines), or the checksum, which is of the whole file."""
        if isinstance(exc, OSError) and "CRC check failed" in str(exc):  # (gzip.BadGzipFile)
            return ", its checksum (the CRC-32 of all its lines)"
        lineno = 0
        try:
            with _open_text(self.path) as f:
                for lineno, _ in enumerate(f, 1):
                    pass
        except self._damage:
            pass
        return f", after line {lineno}"

    def _check_rest(self, f, lineno, exc):
        """A line of a gzipped file did not parse: if the compressed stream is damaged further
        on (its CRC-32 is checked at its end), say that, the cause, rather than the line."""
        self._where = f", after line {lineno}"
        try:
            while f.read(1 << 20):
                pass
        except self._damage as damage:
            raise DataFileError(f"{self.path}{self._damage_where(damage)}: {self._damaged} ({_cause(damage)}); a "
                                f"symptom before it: {exc}") from None

    def _parse(self, lines, usecols, lineno):
        try:  # (a StringIO would take 4 bytes a character)
            text = [line.decode("utf-8") for line in lines]
        except UnicodeDecodeError:
            text = [_decoded(line, self.path, i) for i, line in enumerate(lines, lineno + 1)]
        if lineno == 0 and text and text[0].startswith("\ufeff"):  # the file's byte-order mark
            text[0] = text[0][1:]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "input contained no data": a block of comments
                X = np.loadtxt(text, delimiter=self.delimiter, usecols=usecols, ndmin=2, comments="#", quotechar='"',
                               dtype=np.float64)
        except ValueError as exc:
            raise DataFileError(self._bad_line(lines, lineno) or f"{self.path}: lines {lineno + 1}-"
                                f"{lineno + len(lines)}: {exc}") from None
        if X.shape[0] and X.shape[1] != (self._total if usecols is None else len(usecols)):
            raise DataFileError(f"{self.path}: lines {lineno + 1}-{lineno + len(lines)} have {X.shape[1]} "
                                f"columns, the file's first record {self._total}")
        return X

    def _bad_line(self, lines, lineno):
        """The message of the first line of a block that does not parse (None if none)."""
        for i, line in enumerate(lines, lineno + 1):
            if not _is_data_line(line):
                continue
            fields = _fields(_decoded(line, self.path, i), self.delimiter)
            if len(fields) != self._total:
                return f"{self.path}, line {i}: {len(fields)} fields where the file has {self._total} columns"
            for j, x in enumerate(fields):
                if not _is_number(x) and (self._columns is None or j in self._columns):
                    hint = ""
                    if any(c in x for c in ",;\t|") or self._total == 1:
                        hint = " (are the fields separated by another delimiter? see --delimiter)"
                    return f"{self.path}, line {i}, column {j}: {x!r} is not a number{hint}"
        return None


def _parquet_file(path):
    """pyarrow's ParquetFile of path, verifying the checksums of its pages where it has them
    (a pyarrow that cannot: without)."""
    import inspect

    import pyarrow.parquet as pq

    if "page_checksum_verification" in inspect.signature(pq.ParquetFile).parameters:
        return pq.ParquetFile(path, page_checksum_verification=True)
    return pq.ParquetFile(path)


class _ParquetFile(DataFile):
    kind = "parquet"
    _damaged = "damaged or truncated Parquet data"

    def __init__(self, path, columns):
        super().__init__(path)
        try:
            import pyarrow as pa
        except ImportError:
            raise DataFileError(f"{path}: reading Parquet files needs pyarrow, which is not installed "
                                "(pip install pyarrow)") from None
        self._damage = (OSError, UnicodeDecodeError, pa.ArrowException)
        try:
            pf = _parquet_file(path)
            try:
                schema = pf.schema_arrow
                meta = pf.metadata
                self.n_rows = int(meta.num_rows)
                groups = [int(meta.row_group(i).num_rows) for i in range(meta.num_row_groups)]
            finally:
                _close(pf)
        except self._damage as exc:
            raise DataFileError(f"{path}: not a readable Parquet file ({_cause(exc)})") from None
        if sum(groups) != self.n_rows or min(groups, default=0) < 0:
            raise DataFileError(f"{path}: damaged Parquet metadata: its row groups hold {sum(groups)} records, "
                                f"its footer declares {self.n_rows}")
        if self.n_rows == 0:
            raise DataFileError(f"{path}: holds no records")
        names = list(schema.names)

        def numeric(t):
            return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t) or pa.types.is_decimal(t)

        if columns is None:
            picked = [i for i, field in enumerate(schema) if numeric(field.type)]
            skipped = [field.name for field in schema if not numeric(field.type)]
            if not picked:
                raise DataFileError(f"{path}: has no numeric column")
            if skipped:
                self.notes.append(f"{path}: non-numeric columns skipped: {', '.join(skipped)}")
        else:
            picked = [int(i) for i in _resolve_columns(columns, len(names), names, path)]
            for i in picked:
                if not numeric(schema.field(i).type):
                    raise DataFileError(f"{path}: column {names[i]!r} is not numeric ({schema.field(i).type})")
        self._names = [names[i] for i in picked]
        self.column_names = list(self._names)
        self.n_columns = len(picked)

    def _blocks(self, block_bytes):
        step = self._rows_per_block(block_bytes, 8 * self.n_columns)
        first, n = 0, max(self.n_rows, 1)
        pf = _parquet_file(self.path)
        try:
            batches = pf.iter_batches(batch_size=step, columns=self._names)
            while True:
                self._where = f", after record {first - 1}" if first else ", at its first records"
                batch = next(batches, None)
                if batch is None:
                    break
                if first + batch.num_rows > self.n_rows:
                    break  # more records than declared: refused below
                X = np.empty((batch.num_rows, self.n_columns))
                for j, col in enumerate(batch.columns):
                    if col.null_count:
                        raise DataFileError(f"{self.path}: column {self._names[j]!r} has missing values (nulls) "
                                            f"among records {first}-{first + batch.num_rows - 1}")
                    X[:, j] = col.to_numpy(zero_copy_only=False)
                yield Block(X, first, min(1.0, (first + X.shape[0]) / n))
                first += X.shape[0]
        finally:
            _close(pf)
        if first != self.n_rows or batch is not None:
            read = f"only {first}" if batch is None else f"at least {first + batch.num_rows}"
            raise DataFileError(f"{self.path}: damaged Parquet data: {read} records read where its metadata "
                                f"declares {self.n_rows}")


def _close(pf):
    close = getattr(pf, "close", None)  # (a ParquetFile of an old pyarrow has none)
    if close is not None:
        close()


def _file_size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _suffix(path):
    """The kind-defining ending of a file name (case-insensitive), or None."""
    low = path.lower()
    for suffix in sorted(DATA_SUFFIXES, key=len, reverse=True):
        if low.endswith(suffix):
            return suffix
    return None


def open_data(path, *, columns=None, key=None, delimiter=None, skip_header=False):
    """The DataFile of `path`, its kind given by its name (see DATA_SUFFIXES).

    Only the header is read here (the shape, the column names where the file has some);
    `DataFile.blocks` reads the records.

    Parameters
    ----------
    path : str or path-like
        The file: .npy, .npz, .csv, .tsv, .txt (and these three with .gz), .parquet or .pq
        (case-insensitive).
    columns : None or a list from `parse_columns`
        The columns to read (default all; for Parquet all numeric ones).
    key : str, optional
        The array of an .npz archive to read (default: every array, which must all have
        the same number of columns).
    delimiter : str, optional
        For text files: the field separator (default ``,`` for .csv, a tab for .tsv, any
        whitespace for .txt).
    skip_header : bool, default False
        For text files: skip the first line even when it is all numbers (a first line that
        is not all numbers is always taken for a header of column names).

    Returns
    -------
    DataFile

    Raises
    ------
    DataFileError
        If the file does not exist, its name is of no known kind, or its header shows it
        cannot be read as records (not numeric, not 2-D, no records, damaged, Parquet
        without pyarrow).
    ColumnError
        If `columns` selects a column the file does not have.

    Examples
    --------
    >>> import os, tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
    ...     _ = f.write("x,y\\n1,2\\n3,4\\n5,6\\n")
    >>> from pysketch.files import open_data
    >>> data = open_data(f.name)
    >>> data.column_names, [block.data.tolist() for block in data.blocks()]
    (['x', 'y'], [[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]])
    >>> os.remove(f.name)
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise DataFileError(f"{path}: no such file")
    suffix = _suffix(path)
    if suffix is None:
        raise DataFileError(f"{path}: unknown kind of data file; the names read are {', '.join(DATA_SUFFIXES)}")
    if suffix == ".npy":
        return _NpyFile(path, columns)
    if suffix == ".npz":
        return _NpzFile(path, columns, key)
    if suffix in (".parquet", ".pq"):
        return _ParquetFile(path, columns)
    return _TextFile(path, columns, delimiter, skip_header)

