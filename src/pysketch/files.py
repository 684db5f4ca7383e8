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
whose message starts with the file's name.
"""

import collections
import glob
import gzip
import mmap
import os
import warnings
import zipfile

import numpy as np

__all__ = ["DataFileError", "DataFile", "Block", "DATA_SUFFIXES", "expand_paths", "parse_columns", "open_data",
           "BLOCK_BYTES"]

#: Bytes per block: of parsed records (float64) for Parquet, of text and parsed records for
#: text files, of the file for .npy files with selected columns (copied) and .npz members;
#: .npy blocks without a selection are views of the file of _NPY_BLOCK_BYTES.
BLOCK_BYTES = 16 << 20
_NPY_BLOCK_BYTES = 64 << 20

_TEXT_DELIMITERS = {".csv": ",", ".tsv": "\t", ".txt": None}
#: The file names `open_data` reads, by their ending.
DATA_SUFFIXES = (".npy", ".npz", ".csv", ".tsv", ".txt", ".csv.gz", ".tsv.gz", ".txt.gz", ".parquet", ".pq")

#: One block of records of a file: `data` (rows are records), the index of its first row
#: among the file's records (over all arrays of an .npz), and how far into the file the
#: reader is after it, as a fraction in [0, 1] (for progress bars).
Block = collections.namedtuple("Block", "data first_row done")


class DataFileError(ValueError):
    """A data file cannot be read as records (missing, of an unknown kind, not numeric,
    damaged); the message names the file."""


# ---------------------------------------------------------------------------- paths and columns


def _has_magic(pattern):
    return any(c in pattern for c in "*?[")


def expand_paths(patterns):
    """The files named by `patterns` (paths or glob patterns, in order; the matches of a
    pattern sorted), each an existing file; DataFileError for a pattern that matches
    nothing or a path that does not exist. A file named twice is read twice."""
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
    """The column selection of a command line: comma-separated column indices (from 0;
    negative ones count from the end), ranges ``start:stop`` (Python slices; either end
    may be omitted) and column names. Returns a list of ints, slices and strings."""
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
            picked.extend(range(n_total)[item])
        elif isinstance(item, str):
            if names is None:
                raise DataFileError(f"{path}: has no column names, so column {item!r} cannot be selected by name "
                                    "(give indices from 0)")
            if item not in names:
                raise DataFileError(f"{path}: no column named {item!r} (its columns: {', '.join(names)})")
            picked.append(names.index(item))
        else:
            if not -n_total <= item < n_total:
                raise DataFileError(f"{path}: column {item} is out of range (the file has {n_total} columns)")
            picked.append(item % n_total)
    if not picked:
        raise DataFileError(f"{path}: the column selection picks no column (the file has {n_total} columns)")
    return np.asarray(picked, dtype=np.int64)


def _check_numeric(dtype, path):
    if dtype.kind not in "biuf":
        what = "complex numbers" if dtype.kind == "c" else f"dtype {dtype}"
        raise DataFileError(f"{path}: records must be real numbers, this file holds {what}")


# ---------------------------------------------------------------------------- the readers


class DataFile:
    """A file of records opened by `open_data`.

    Attributes: ``path``; ``n_columns`` (the columns read, after any selection);
    ``n_rows`` (the number of records, or None when unknown before reading: text files);
    ``column_names`` (of the columns read, or None); ``notes`` (things worth telling the
    user, e.g. columns skipped).
    """

    kind = None

    def __init__(self, path):
        self.path = path
        self.n_columns = None
        self.n_rows = None
        self.column_names = None
        self.notes = []

    def blocks(self, block_bytes=BLOCK_BYTES):
        """The records as Blocks of about `block_bytes` bytes each."""
        raise NotImplementedError

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
        self._array = A
        self._columns = None if columns is None else _resolve_columns(columns, A.shape[1], None, path)
        self.n_rows = int(A.shape[0])
        self.n_columns = int(A.shape[1]) if self._columns is None else int(self._columns.size)

    def blocks(self, block_bytes=BLOCK_BYTES):
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


class _NpzFile(DataFile):
    kind = "npz"

    def __init__(self, path, columns, key):
        super().__init__(path)
        try:
            with zipfile.ZipFile(path) as zf:
                names = [i.filename for i in zf.infolist() if i.filename.endswith(".npy")]
                if key is not None:
                    wanted = key if key.endswith(".npy") else key + ".npy"
                    if wanted not in names:
                        keys = ", ".join(n[:-4] for n in names) or "none"
                        raise DataFileError(f"{path}: no array named {key!r} (its arrays: {keys})")
                    names = [wanted]
                if not names:
                    raise DataFileError(f"{path}: holds no array")
                self._members = []
                for name in names:
                    with zf.open(name) as f:
                        shape, fortran, dtype = _read_npy_header(f, f"{path}[{name[:-4]}]")
                    self._members.append((name, shape, fortran, dtype))
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise DataFileError(f"{path}: not a readable .npz archive ({exc})") from None
        widths = {}
        for name, shape, _, dtype in self._members:
            where = f"{path}[{name[:-4]}]"
            if len(shape) != 2:
                raise DataFileError(f"{where}: must be a 2-D array of records (rows), got shape {shape}"
                                    + ("" if key is not None else "; pick one array with --key"))
            _check_numeric(dtype, where)
            widths.setdefault(shape[1], name)
        if len(widths) > 1:
            (w0, a0), (w1, a1) = list(widths.items())[:2]
            raise DataFileError(f"{path}: its arrays have different numbers of columns ({a0[:-4]}: {w0}, "
                                f"{a1[:-4]}: {w1}); pick one with --key")
        total = self._members[0][1][1]
        self._columns = None if columns is None else _resolve_columns(columns, total, None, path)
        self.n_rows = int(sum(shape[0] for _, shape, _, _ in self._members))
        self.n_columns = int(total) if self._columns is None else int(self._columns.size)
        if any(fortran for _, _, fortran, _ in self._members):
            self.notes.append(f"{path}: an array in Fortran (column) order is read whole, not as a stream of rows")

    def blocks(self, block_bytes=BLOCK_BYTES):
        first, n = 0, max(self.n_rows, 1)
        with zipfile.ZipFile(self.path) as zf:
            for name, shape, fortran, dtype in self._members:
                rows, width = shape
                with zf.open(name) as f:
                    where = f"{self.path}[{name[:-4]}]"
                    _read_npy_header(f, where)
                    if fortran:  # no stream of rows: the whole array
                        buf = f.read(rows * width * dtype.itemsize)
                        if len(buf) != rows * width * dtype.itemsize:
                            raise DataFileError(f"{where}: truncated (expected {rows} rows)")
                        chunks = [(0, np.frombuffer(buf, dtype=dtype).reshape(shape, order="F"))]
                    else:
                        chunks = self._row_chunks(f, rows, width, dtype, block_bytes, where)
                    for start, X in chunks:
                        if self._columns is not None:
                            X = X[:, self._columns]
                        yield Block(X, first + start, min(1.0, (first + start + X.shape[0]) / n))
                first += rows

    def _row_chunks(self, f, rows, width, dtype, block_bytes, where):
        row_bytes = width * dtype.itemsize
        step = self._rows_per_block(block_bytes, row_bytes)
        for start in range(0, rows, step):
            k = min(step, rows - start)
            buf = f.read(k * row_bytes)
            if len(buf) != k * row_bytes:
                raise DataFileError(f"{where}: truncated (expected {rows} rows)")
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


def _fields(line, delimiter):
    text = line.decode("utf-8", errors="replace").split("#", 1)[0].strip()
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
        header = None
        first_data = None
        self._skip = 0  # lines before the data (the header and what precedes it)
        try:
            with _open_text(path) as f:
                for lineno, line in enumerate(f, 1):
                    if not _is_data_line(line):
                        continue
                    fields = _fields(line, self.delimiter)
                    if header is None and (skip_header or _looks_like_header(fields)):
                        header, self._skip = fields, lineno
                        continue
                    first_data = fields
                    break
        except (OSError, EOFError, UnicodeDecodeError) as exc:
            raise DataFileError(f"{path}: not a readable text file ({exc})") from None
        if header is None and first_data is None:
            raise DataFileError(f"{path}: holds no records")
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

    def blocks(self, block_bytes=BLOCK_BYTES):
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
                lines = f.readlines(text_bytes)
                if not lines:
                    break
                X = self._parse(lines, usecols, lineno)
                lineno += len(lines)
                if X.shape[0]:
                    done = min(1.0, raw.tell() / self._size) if not raw.closed else 1.0
                    yield Block(X, first, done)
                    first += X.shape[0]

    def _parse(self, lines, usecols, lineno):
        text = [line.decode("utf-8", errors="replace") for line in lines]  # (a StringIO would take 4 bytes a character)
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
            fields = _fields(line, self.delimiter)
            if len(fields) != self._total:
                return f"{self.path}, line {i}: {len(fields)} fields where the file has {self._total} columns"
            for j, x in enumerate(fields):
                if not _is_number(x) and (self._columns is None or j in self._columns):
                    hint = ""
                    if any(c in x for c in ",;\t|") or self._total == 1:
                        hint = " (are the fields separated by another delimiter? see --delimiter)"
                    return f"{self.path}, line {i}, column {j}: {x!r} is not a number{hint}"
        return None


class _ParquetFile(DataFile):
    kind = "parquet"

    def __init__(self, path, columns):
        super().__init__(path)
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise DataFileError(f"{path}: reading Parquet files needs pyarrow, which is not installed "
                                "(pip install pyarrow)") from None
        try:
            pf = pq.ParquetFile(path)
            schema = pf.schema_arrow
            self.n_rows = int(pf.metadata.num_rows)
        except (OSError, pa.ArrowException) as exc:
            raise DataFileError(f"{path}: not a readable Parquet file ({exc})") from None
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

    def blocks(self, block_bytes=BLOCK_BYTES):
        import pyarrow.parquet as pq

        step = self._rows_per_block(block_bytes, 8 * self.n_columns)
        first, n = 0, max(self.n_rows, 1)
        pf = pq.ParquetFile(self.path)
        try:
            for batch in pf.iter_batches(batch_size=step, columns=self._names):
                X = np.empty((batch.num_rows, self.n_columns))
                for j, col in enumerate(batch.columns):
                    if col.null_count:
                        raise DataFileError(f"{self.path}: column {self._names[j]!r} has missing values (nulls) "
                                            f"among records {first}-{first + batch.num_rows - 1}")
                    X[:, j] = col.to_numpy(zero_copy_only=False)
                yield Block(X, first, min(1.0, (first + X.shape[0]) / n))
                first += X.shape[0]
        finally:
            close = getattr(pf, "close", None)
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

    columns : None or a list from `parse_columns`: the columns to read (default all; for
        Parquet all numeric ones).
    key : the array of an .npz archive to read (default: every array, which must all have
        the same number of columns).
    delimiter, skip_header : for text files (see the module docstring).
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

