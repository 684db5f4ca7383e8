"""The one file container of pysketch: sketches, private sketches, distance releases and
models are written and read here, and the command line's JSON outputs are checked here.

Layout (a NumPy .npz archive, as the first sketch files were: every file written before
still reads): an uncompressed ZIP whose members are

- ``meta.npy``: a 0-d unicode array, the JSON metadata, with ``"format"`` (what the file
  holds), ``"version"`` (of that format) and ``"checksum"``: the SHA-256
  (:func:`pysketch._state.digest`) of the metadata without its checksum and of every array;
- ``<name>.npy``: one plain numeric array (bool, integer, float or complex) per name.

`read` trusts nothing it has not checked, in an order that never allocates more than the
file's own size:

1. the file is exactly one ZIP: its end record is its last 22 bytes (no comment, nothing
   appended), its directory ends there, and its members fill the bytes before the
   directory one after the other from offset 0, each stored uncompressed (its declared
   size is the size it occupies). A compressed member (a zip bomb), a member or directory
   that claims more bytes than the file holds, and data before, between or after the
   members are refused before anything is decompressed or allocated;
2. members are ``meta.npy`` and ``<name>.npy`` with names the format allows, each once;
   the .npy header of a member is parsed first and the member refused unless its dtype is
   plain numeric (unicode for ``meta``) and shape x itemsize is exactly its data size;
   only then is its data read (never unpickled) and the ZIP's CRC-32 checked;
3. the format and version must be ones the caller reads (a newer version is named as
   such), then the checksum must match.

A missing path raises FileNotFoundError and a directory IsADirectoryError; every other
problem is a :class:`SketchFileError` (a ValueError) naming the path and the cause.

Every file is written to a temporary file in its folder and moved onto its path only when
complete (`replace_when_done`): a failed or interrupted save leaves the previous file, if
any, as it was, and no partial file.

JSON files (`write_json`, `read_json`: the command line's outputs) carry the same
``"format"``, ``"version"`` and ``"checksum"`` (the digest of the object without its
checksum) at their top level, and are refused above `MAX_JSON_BYTES`.
"""

import collections
import contextlib
import errno
import json
import math
import os
import re
import struct
import tempfile
import zipfile

import numpy as np
from numpy.lib import format as npy

from ._state import digest

__all__ = ["SketchFileError", "Archive", "write", "read", "write_json", "read_json", "replace_when_done",
           "NUMERIC_KINDS", "MAX_JSON_BYTES"]

#: dtype kinds an array member may have: bool, signed and unsigned integers, floats, complex.
NUMERIC_KINDS = "biufc"
#: The largest JSON file `read_json` reads.
MAX_JSON_BYTES = 1 << 26

_END = struct.Struct("<4s4H2LH")  # ZIP end of central directory record
_END64_LOCATOR = struct.Struct("<4sLQL")
_END64 = struct.Struct("<4sQ2H2L4Q")
_LOCAL = struct.Struct("<4s2B4HL2L2H")  # ZIP local file header
_NAME = re.compile(r"[A-Za-z0-9_]+")
_CHUNK = 1 << 20

Archive = collections.namedtuple("Archive", "meta arrays")
Archive.__doc__ = "What `read` returns: the metadata (without its checksum) and the arrays by name."


class SketchFileError(ValueError):
    """A pysketch file that cannot be read: truncated, damaged, edited, oversize, of another
    format or of a newer version (the message names the path and the cause).

    Examples
    --------
    >>> import pysketch
    >>> try:
    ...     pysketch.Sketch.load(pysketch.__file__)  # a Python source file, not a sketch
    ... except pysketch.SketchFileError as exc:
    ...     print(isinstance(exc, ValueError), "ZIP" in str(exc))
    True True
    """


class _Refused(Exception):
    """A cause of refusal found while reading (the caller adds the path)."""


def _check_array(name, a):
    if not isinstance(a, np.ndarray):
        raise TypeError(f"array {name!r} must be a numpy array, got {type(a).__name__}")
    if not _plain_numeric(a.dtype):
        raise TypeError(f"array {name!r} has dtype {a.dtype}; a pysketch file holds bool, integer, float and "
                        "complex arrays only")


def _plain_numeric(dtype):
    return dtype.kind in NUMERIC_KINDS and dtype.fields is None and dtype.subdtype is None and not dtype.hasobject


@contextlib.contextmanager
def replace_when_done(path, before_replace=None):
    """Yield a temporary path in `path`'s folder; when the block ends without an exception,
    call ``before_replace()`` (if given; it may raise to cancel) and move the temporary
    file onto `path` (os.replace: atomic on one file system). On any exception, including
    KeyboardInterrupt, the temporary file is removed and `path` is left untouched. The new
    file gets the permissions a plain ``open(path, "w")`` would give it. An OSError on the
    temporary file (a missing or read-only folder, a full disk, `path` a directory) names
    `path`, the file the caller asked for, never the hidden temporary one."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".pysketch-", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise _naming_target(exc, path, folder) from None
    os.close(fd)
    try:
        yield tmp
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's files are 0600
        if before_replace is not None:
            before_replace()
        os.replace(tmp, path)
    except OSError as exc:
        if tmp not in (exc.filename, exc.filename2):
            raise
        raise _naming_target(exc, path, folder) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _naming_target(exc, path, folder):
    """exc (an OSError about the temporary file of a save to `path`) as the same error
    about `path`: its folder missing or not a folder said as such."""
    reason = exc.strerror or str(exc)
    if isinstance(exc, (FileNotFoundError, NotADirectoryError)) and not os.path.isdir(folder):
        reason += f" (its folder {folder} does not exist)" if not os.path.lexists(folder) else \
            f" (its folder {folder} is not a directory)"
    return type(exc)(exc.errno, reason, path)


def write(path, format, version, meta, arrays):
    """Write `meta` (JSON-ready dict) and `arrays` ({name: numeric array}) to `path` as a
    file of `format` and `version`, with its checksum (see the module docstring)."""
    meta = dict(meta)
    meta.pop("checksum", None)
    meta.update(format=format, version=version)
    for name, a in arrays.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name) or name == "meta":
            raise ValueError(f"array name {name!r} must be letters, digits and '_' (and not 'meta')")
        _check_array(name, a)
    meta["checksum"] = digest(meta, arrays)
    text = json.dumps(meta, sort_keys=True)
    with replace_when_done(path) as tmp:
        with open(tmp, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as zf:
            _write_member(zf, "meta", np.array(text))
            for name in sorted(arrays):
                _write_member(zf, name, arrays[name])


def _write_member(zf, name, a):
    with zf.open(name + ".npy", "w", force_zip64=True) as f:
        npy.write_array(f, a, allow_pickle=False)


def _open(path, what):
    """The file at `path` opened for reading; FileNotFoundError / IsADirectoryError as
    Python raises them, with a message that says what was expected."""
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, f"is a directory, not a {what}", path)
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, f"no such {what}", path) from None


def read(path, formats, *, what="pysketch file", names=None):
    """The checked contents of a file written by `write`.

    formats : {format name: versions read}; a file of any other format or version is refused.
    what : what the file should be, for messages ("pysketch sketch file").
    names : a regular expression every array name must match whole (default: any name
        of letters, digits and '_').
    Returns an `Archive` (meta without "checksum", arrays as native-endian, aligned ndarrays).
    """
    path = os.fsdecode(os.fspath(path))
    pattern = re.compile(names) if names is not None else _NAME
    with _open(path, what) as f:
        try:
            size = os.fstat(f.fileno()).st_size
            _check_layout(f, size, what)
            with zipfile.ZipFile(f) as zf:
                return _read_members(zf, formats, what, pattern)
        except _Refused as exc:
            raise SketchFileError(f"{path}: {exc}") from None
        except Exception as exc:  # zipfile, numpy's header parser, json: a damaged file
            raise SketchFileError(f"{path}: not a readable {what} ({type(exc).__name__}: {exc})") from exc


def _check_layout(f, size, what):
    """Refuse any byte the ZIP does not account for, compressed members and sizes beyond
    the file (see the module docstring), reading only the ZIP's own records."""
    if size < _END.size:
        raise _Refused(f"not a readable {what}: {size} bytes is too short for a ZIP archive")
    f.seek(size - _END.size)
    sig, _, _, _, n, cd_size, cd_offset, comment = _END.unpack(f.read(_END.size))
    if sig != b"PK\x05\x06" or comment:
        raise _Refused(f"not a readable {what}: it does not end with a ZIP end record (truncated, data "
                       "appended, or not a ZIP archive)")
    cd_end = size - _END.size
    if n == 0xFFFF or cd_size == 0xFFFFFFFF or cd_offset == 0xFFFFFFFF:  # ZIP64
        if cd_end < _END64_LOCATOR.size + _END64.size:
            raise _Refused("damaged ZIP64 end records")
        f.seek(cd_end - _END64_LOCATOR.size)
        sig, _, end64, _ = _END64_LOCATOR.unpack(f.read(_END64_LOCATOR.size))
        if sig != b"PK\x06\x07" or end64 + _END64.size != cd_end - _END64_LOCATOR.size:
            raise _Refused("damaged ZIP64 end records")
        f.seek(end64)
        sig, _, _, _, _, _, _, n, cd_size, cd_offset = _END64.unpack(f.read(_END64.size))
        if sig != b"PK\x06\x06":
            raise _Refused("damaged ZIP64 end record")
        cd_end = end64
    if cd_offset + cd_size != cd_end:
        raise _Refused(f"its ZIP directory claims bytes {cd_offset}..{cd_offset + cd_size} but ends at {cd_end} "
                       "(truncated, oversize or edited)")
    f.seek(0)
    with zipfile.ZipFile(f) as zf:
        infos = zf.infolist()
    if len(infos) != n:
        raise _Refused(f"its ZIP directory lists {len(infos)} members, its end record {n}")
    pos = 0
    for info in sorted(infos, key=lambda i: i.header_offset):
        if info.header_offset != pos:
            raise _Refused(f"bytes {pos}..{info.header_offset} belong to no member (edited or not written by "
                           "pysketch)")
        if info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size:
            raise _Refused(f"member {info.filename!r} is compressed ({info.compress_size} bytes declared to expand "
                           f"to {info.file_size}): pysketch files are stored uncompressed")
        if info.flag_bits & 0x9:
            raise _Refused(f"member {info.filename!r} is encrypted or uses a data descriptor")
        f.seek(pos)
        local = f.read(_LOCAL.size)
        if len(local) != _LOCAL.size or local[:4] != b"PK\x03\x04":
            raise _Refused(f"member {info.filename!r}: no ZIP header at offset {pos}")
        fields = _LOCAL.unpack(local)
        pos += _LOCAL.size + fields[-2] + fields[-1] + info.compress_size
        if pos > cd_offset:
            raise _Refused(f"member {info.filename!r} claims {info.compress_size} bytes, more than the file "
                           "holds before its directory (truncated or oversize)")
    if pos != cd_offset:
        raise _Refused(f"bytes {pos}..{cd_offset} belong to no member (edited or not written by pysketch)")


def _read_members(zf, formats, what, pattern):
    members = {}
    for info in zf.infolist():
        name = info.filename
        if not name.endswith(".npy"):
            raise _Refused(f"unexpected member {name!r} in a {what}")
        if name[:-4] in members:
            raise _Refused(f"member {name!r} appears twice")
        members[name[:-4]] = info
    if "meta" not in members:
        raise _Refused(f"not a {what}: no metadata (member 'meta.npy')")
    meta = json.loads(str(_read_array(zf, members.pop("meta"), meta=True)[()]))
    if not isinstance(meta, dict):
        raise _Refused(f"not a {what}: its metadata is a {type(meta).__name__}, not a JSON object")
    _check_format(meta, formats, what)
    for key in members:
        if not pattern.fullmatch(key):
            raise _Refused(f"unexpected member {key + '.npy'!r} in a {what}")
    arrays = {key: _read_array(zf, info) for key, info in members.items()}
    stored = meta.pop("checksum", None)
    if not isinstance(stored, str) or stored != digest(meta, arrays):
        raise _Refused("checksum mismatch: the file was modified or damaged")
    return Archive(meta, {k: _native(a) for k, a in arrays.items()})


def _check_format(meta, formats, what):
    fmt, version = meta.get("format"), meta.get("version")
    if not isinstance(fmt, str) or fmt not in formats:
        raise _Refused(f"not a {what} (its format is {fmt!r}; expected {' or '.join(sorted(formats))})")
    known = sorted(formats[fmt])
    if isinstance(version, bool) or not isinstance(version, int) or version not in known:
        if isinstance(version, int) and not isinstance(version, bool) and version > known[-1]:
            raise _Refused(f"{fmt} format version {version} is newer than this pysketch reads "
                           f"(versions {', '.join(map(str, known))}): it was written by a newer pysketch")
        raise _Refused(f"{fmt} format version {version!r} is not one this pysketch reads "
                       f"(versions {', '.join(map(str, known))})")


def _read_array(zf, info, meta=False):
    """The array of one member: header checked against the member's size before the data
    are read (see the module docstring)."""
    name = info.filename
    with zf.open(info) as fp:
        version = npy.read_magic(fp)
        if version == (1, 0):
            shape, fortran, dtype = npy.read_array_header_1_0(fp)
        elif version == (2, 0):
            shape, fortran, dtype = npy.read_array_header_2_0(fp)
        else:
            raise _Refused(f"member {name!r}: .npy format version {version} is not read")
        ok = (dtype.kind == "U" and shape == ()) if meta else _plain_numeric(dtype)
        if not ok:
            raise _Refused(f"member {name!r} holds a {dtype} array of shape {shape}: "
                           + ("the metadata is one unicode string" if meta else
                              "a pysketch file holds bool, integer, float and complex arrays only"))
        if any(s < 0 for s in shape):
            raise _Refused(f"member {name!r}: negative shape {shape}")
        nbytes = math.prod(shape) * dtype.itemsize
        held = info.file_size - fp.tell()
        if nbytes != held:
            raise _Refused(f"member {name!r}: its header promises a {dtype} array of shape {shape} "
                           f"({nbytes} bytes) but it holds {held} bytes")
        buf = bytearray(nbytes)
        pos = 0
        while pos < nbytes:
            chunk = fp.read(min(_CHUNK, nbytes - pos))
            if not chunk:
                raise _Refused(f"member {name!r} is truncated")
            buf[pos:pos + len(chunk)] = chunk
            pos += len(chunk)
        if fp.read(1):  # (also completes the CRC-32 check)
            raise _Refused(f"member {name!r} holds more bytes than its header says")
    a = np.reshape(np.frombuffer(buf, dtype=dtype), shape, order="F" if fortran else "C")
    return a if a.flags.aligned else a.copy()


def _native(a):
    return a if a.dtype.isnative else a.astype(a.dtype.newbyteorder("="))


# ------------------------------------------------------------------------------ JSON


def write_json(path, format, version, obj):
    """Write the JSON object `obj` (a dict of JSON-ready values) to `path` with
    ``"format"``, ``"version"`` first and ``"checksum"`` last."""
    clash = {"format", "version", "checksum"} & set(obj)
    if clash:
        raise ValueError(f"obj must not hold the keys {sorted(clash)} (the file's own)")
    body = {"format": format, "version": version, **obj}
    body["checksum"] = digest(body, {})
    with replace_when_done(path) as tmp:
        with open(tmp, "w") as f:
            json.dump(body, f, indent=2)
            f.write("\n")


def read_json(path, formats, *, what="pysketch JSON file"):
    """The object of a JSON file written by `write_json`, checked like `read` (format,
    version, checksum; size at most MAX_JSON_BYTES); returned without its checksum."""
    path = os.fsdecode(os.fspath(path))
    with _open(path, what) as f:
        try:
            size = os.fstat(f.fileno()).st_size
            if size > MAX_JSON_BYTES:
                raise _Refused(f"{size} bytes: larger than a {what} may be ({MAX_JSON_BYTES} bytes)")
            obj = json.loads(f.read(size + 1).decode("utf-8"))
            if not isinstance(obj, dict):
                raise _Refused(f"not a {what} (a JSON {type(obj).__name__}, not an object)")
            _check_format(obj, formats, what)
            stored = obj.pop("checksum", None)
            if not isinstance(stored, str) or stored != digest(obj, {}):
                raise _Refused("checksum mismatch: the file was modified or damaged")
            return obj
        except _Refused as exc:
            raise SketchFileError(f"{path}: {exc}") from None
        except Exception as exc:  # bad UTF-8, bad JSON, nesting too deep
            raise SketchFileError(f"{path}: not a readable {what} ({type(exc).__name__}: {exc})") from exc
