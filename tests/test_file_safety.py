"""Every file pysketch writes (sketches, subsampled and private sketches, distance releases,
models, the command line's JSON outputs) against damaged, foreign, newer, oversize and
hostile files (pysketch._archive, pysketch.model_files).

The properties:

- a round trip gives the same object (the same state: metadata and arrays, bit for bit; a
  model also the same predictions);
- a truncated file, a foreign file (empty, text, another npz, another pysketch kind) and a
  newer version are refused with SketchFileError naming the path;
- one flipped bit anywhere in a small file is refused or, when it lands in ZIP bookkeeping
  that no reader uses (timestamps, version fields, attributes, the local copies of sizes),
  loads the very same object; a flip inside a member's name or stored bytes is always
  refused (the CRC-32 and the checksum cover them);
- a header that promises more than the member holds, a directory that claims more than the
  file holds, appended data and a zip bomb are refused before anything of that size is
  allocated (tracemalloc's peak stays far below it);
- object and structured arrays are refused and never unpickled;
- a missing path raises FileNotFoundError, a directory IsADirectoryError; a save into a
  missing folder (or onto a directory) raises the OS error naming the path given, never
  the hidden temporary file;
- no file of a private release holds its noise, its clean sum or a noise seed.
"""

import json
import os
import pickle
import re
import struct
import tracemalloc
import warnings
import zipfile

import numpy as np
import pytest

from pysketch import Sketch, SketchFileError
from pysketch._archive import read_json, write, write_json
from pysketch._state import digest
from pysketch.cli import FIT_FORMAT, QUERY_FORMAT, main
from pysketch.distances.release import DistanceRelease, release
from pysketch.features import make_feature_map
from pysketch.model_files import load_model, model_state, save_model
from pysketch.operators import SparseJLOperator
from pysketch.privacy import PrivateSketch, make_private

BOX = (-5 * np.ones(3), 5 * np.ones(3))
#: Peak Python allocation allowed while refusing a file that promises far more (bytes).
SMALL = 1 << 20


def _data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = np.clip(rng.standard_normal((n, 3)), -4.9, 4.9)
    return X, X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.standard_normal(n)


def _fit(kind):
    """A fitted model of each kind (small, quick), with its data."""
    from pysketch.estimators import CompressiveGaussianMixture, CompressiveKMeans
    from pysketch.m2m.models import M2MLinearRegression, M2MLogisticRegression
    from pysketch.pca import CompressivePCA
    from pysketch.rfm.estimators import PrivateRFRegressor

    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "kmeans":  # private: its sketch_ is a PrivateSketch
            return CompressiveKMeans(2, epsilon=1.0, bounds=BOX, n_init=1, random_state=0).fit(X), X, y
        if kind == "gmm":
            return CompressiveGaussianMixture(2, kernel_scale=1.0, n_init=1, random_state=0).fit(X), X, y
        if kind == "pca":
            return CompressivePCA(2, epsilon=1.0, centre=0.0, data_norm=9.0, n_init=1, random_state=0).fit(X), X, y
        if kind == "rf":
            return PrivateRFRegressor(1.0, 1e-5, bounds=BOX, target_bounds=(-20, 20), n_frequencies=8,
                                      random_state=0).fit(X, y), X, y
        if kind == "m2m_linear":
            return M2MLinearRegression(bounds=BOX, y_bounds=(-20, 20), epsilon=1.0, n_synthetic=100,
                                       sketch_params={"n_frequencies": 10}, random_state=0).fit(X, y), X, y
        if kind == "m2m_logistic":
            return M2MLogisticRegression(bounds=BOX, epsilon=1.0, n_synthetic=100, sketch_params={"n_frequencies": 10},
                                         random_state=0).fit(X, y > 0), X, y > 0
    raise AssertionError(kind)


MODEL_KINDS = ("kmeans", "gmm", "pca", "rf", "m2m_linear", "m2m_logistic")
ZIP_KINDS = ("sketch", "subsampled", "private", "release") + MODEL_KINDS
KINDS = ZIP_KINDS + ("cli_json",)


class Kind:
    """One file type: the object, how it is saved and loaded, and when two are the same."""

    def __init__(self, name, obj, save, load, state, data=None):
        self.name, self.obj, self.save, self.load, self.state, self.data = name, obj, save, load, state, data

    def same(self, a, b):
        return type(a) is type(b) and self.state(a) == self.state(b)


def _sketch_state(s):
    return digest(*s.get_state())


def _release_state(r):
    meta = {k: v for k, v in vars(r).items() if k != "values"}
    return digest(meta, {"values": r.values})


def _model_state(est):
    return digest(*model_state(est))


def _read_cli_json(path):
    return read_json(path, {FIT_FORMAT: (1,), QUERY_FORMAT: (1,)})


def _make(name, tmp_path_factory):
    X, _ = _data()
    fm = make_feature_map(3, 8, "complex", random_state=0)
    if name == "sketch":
        return Kind(name, fm.sketch(X), lambda o, p: o.save(p), Sketch.load, _sketch_state)
    if name == "subsampled":
        return Kind(name, fm.sketch_subsampled(X, 2, random_state=0), lambda o, p: o.save(p), Sketch.load,
                    _sketch_state)
    if name == "private":
        return Kind(name, make_private(fm.sketch(X), 1.0), lambda o, p: o.save(p), PrivateSketch.load,
                    _sketch_state)
    if name == "release":
        op = SparseJLOperator.draw(3, 8, 2, random_state=0)
        return Kind(name, release(op, X[:4], 1.0), lambda o, p: o.save(p), DistanceRelease.load, _release_state)
    if name in MODEL_KINDS:
        est, Xf, yf = _fit(name)
        return Kind(name, est, save_model, load_model, _model_state, (Xf, yf))
    if name == "cli_json":  # the JSON of `pysketch fit`, written by the command line itself
        folder = tmp_path_factory.mktemp("cli")
        fm.sketch(X).save(folder / "s.npz")
        assert main(["fit", str(folder / "s.npz"), "--task", "kmeans", "--k", "2", "--bounds", "-5", "5",
                     "--n-init", "1", "-o", str(folder / "fit.json"), "-q"]) == 0
        obj = _read_cli_json(folder / "fit.json")

        def save(o, p):
            with open(folder / "fit.json", "rb") as f:
                data = f.read()
            with open(p, "wb") as f:
                f.write(data)

        return Kind(name, obj, save, _read_cli_json, lambda o: json.dumps(o, sort_keys=True))
    raise AssertionError(name)


@pytest.fixture(scope="module")
def kinds(tmp_path_factory):
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = _make(name, tmp_path_factory)
        return cache[name]

    return get


def _saved(kind, tmp_path, name="f"):
    path = tmp_path / (name + (".json" if kind.name == "cli_json" else ".npz"))
    kind.save(kind.obj, path)
    return path


def _refused(kind, path, match=None):
    with pytest.raises(SketchFileError) as info:
        kind.load(path)
    assert str(path) in str(info.value)
    if match is not None:
        assert re.search(match, str(info.value)), str(info.value)
    return str(info.value)


# ------------------------------------------------------------------------------ round trips


@pytest.mark.parametrize("name", KINDS)
def test_round_trip_is_exact(kinds, tmp_path, name):
    kind = kinds(name)
    back = kind.load(_saved(kind, tmp_path))
    assert kind.same(kind.obj, back)
    if kind.data is not None:  # a model: the same predictions, bit for bit
        X, _ = kind.data
        methods = [m for m in ("predict", "transform", "predict_proba", "score_samples", "decision_function")
                   if hasattr(kind.obj, m)]
        assert methods
        for m in methods:
            np.testing.assert_array_equal(getattr(back, m)(X), getattr(kind.obj, m)(X))
    if name == "release":
        np.testing.assert_array_equal(back.values, kind.obj.values)


def test_a_state_check_would_see_a_difference(kinds):
    # the round-trip comparison is not vacuous: one changed value of a model changes its state
    kind = kinds("gmm")
    other, _, _ = _fit("gmm")
    other.means_ = other.means_ + 1e-12
    assert not kind.same(kind.obj, other)


def test_one_array_referenced_twice_is_stored_once_and_loaded_as_one(kinds, tmp_path):
    kind = kinds("m2m_linear")
    back = kind.load(_saved(kind, tmp_path))
    assert back.m2m_.design_.X is back.m2m_.synthetic_
    np.testing.assert_array_equal(back.m2m_.estimate(lambda Z: Z[:, 0]), kind.obj.m2m_.estimate(lambda Z: Z[:, 0]))


def test_files_written_before_the_container_still_load():
    # the sketch files of tests/data were written by np.savez before pysketch._archive
    folder = os.path.join(os.path.dirname(__file__), "data")
    for name in sorted(os.listdir(folder)):
        if name.endswith(".npz"):
            assert Sketch.load(os.path.join(folder, name)).count >= 0


# ------------------------------------------------------------------------------ damage


@pytest.mark.parametrize("name", KINDS)
def test_truncated_files_are_refused(kinds, tmp_path, name):
    kind = kinds(name)
    raw = _saved(kind, tmp_path).read_bytes()
    n = len(raw)
    # the JSON file ends with a newline after its closing brace: cut before the brace
    end = n - 2 if name == "cli_json" else n - 1
    for cut in sorted({0, 1, 4, 21, 22, 30, 64, n // 4, n // 2, 3 * n // 4, n - 23, n - 22, end}):
        path = tmp_path / f"cut{cut}"
        path.write_bytes(raw[:cut])
        _refused(kind, path)


def _protected_ranges(raw):
    """(the (start, stop) of every member's stored bytes, the same of those bytes and of
    every member's name, local and central)."""
    out, stored = [], []
    with zipfile.ZipFile(_BytesFile(raw)) as zf:
        for info in zf.infolist():
            start = info.header_offset
            name_len, extra_len = struct.unpack("<2H", raw[start + 26:start + 30])
            out.append((start + 30, start + 30 + name_len))
            data = start + 30 + name_len + extra_len
            stored.append((data, data + info.compress_size))
        cd = raw.rfind(b"PK\x05\x06")
        count, _, cd_offset = struct.unpack("<H2L", raw[cd + 10:cd + 20])
        pos = cd_offset
        for _ in range(count):
            name_len, extra_len, comment_len = struct.unpack("<3H", raw[pos + 28:pos + 34])
            out.append((pos + 46, pos + 46 + name_len))
            pos += 46 + name_len + extra_len + comment_len
    return stored, out + stored


def _BytesFile(raw):
    import io

    return io.BytesIO(raw)


@pytest.mark.parametrize("name", KINDS)
def test_every_flipped_bit_is_refused_or_harmless(kinds, tmp_path, name):
    kind = kinds(name)
    raw = _saved(kind, tmp_path).read_bytes()
    if name == "cli_json":
        positions, protected = range(len(raw)), []
    else:
        data, protected = _protected_ranges(raw)
        # every byte outside the arrays' stored bytes (the ZIP's own records, the names, the
        # .npy headers' first 128 bytes), and a dense sample inside them (the CRC covers them all)
        inside = set()
        for start, stop in data:
            inside.update(range(start + 128, stop))
        stride = 1 if name in ("sketch", "subsampled", "private", "release") else 19
        positions = [i for i in range(len(raw)) if i not in inside or (i - 3) % stride == 0]
    path = tmp_path / ("flip.json" if name == "cli_json" else "flip.npz")
    path.write_bytes(raw)
    harmless = []
    with open(path, "r+b") as f:  # one byte changed in place and restored (no rewrite of the file)
        for i in positions:
            f.seek(i)
            f.write(bytes([raw[i] ^ (1 << (i % 8))]))
            f.flush()
            try:
                back = kind.load(path)
            except SketchFileError as exc:
                assert str(path) in str(exc)
                continue
            finally:
                f.seek(i)
                f.write(raw[i:i + 1])
                f.flush()
            assert kind.same(kind.obj, back), f"byte {i}: a damaged file loaded a different object"
            assert not any(start <= i < stop for start, stop in protected), f"byte {i} of a member loaded"
            harmless.append(i)
    # most flips are refused: the harmless ones are a few bookkeeping bytes per member
    assert len(harmless) < 0.25 * len(positions)


@pytest.mark.parametrize("name", ZIP_KINDS)
def test_an_edited_array_in_a_valid_zip_is_refused_by_the_checksum(kinds, tmp_path, name):
    # the ZIP's CRC-32 matches (the member is rewritten whole): only the checksum sees the edit
    import io

    kind = kinds(name)
    target, members = _largest_array(_saved(kind, tmp_path))
    a = np.load(io.BytesIO(members[target]), allow_pickle=False)
    edited = a.copy()
    edited.reshape(-1)[0] += 1 if edited.dtype.kind in "iu" else 1e-9
    f = io.BytesIO()
    np.save(f, edited)
    path = tmp_path / "edited.npz"
    _zip(path, [(m, f.getvalue() if m == target else data) for m, data in members.items()])
    _refused(kind, path, "checksum mismatch")


# ------------------------------------------------------------------------------ foreign files


def _other_kind_file(kind, kinds, tmp_path):
    other = kinds("release") if kind.name in ("sketch", "subsampled", "private") or kind.name in MODEL_KINDS \
        else kinds("sketch")
    return _saved(other, tmp_path, "other")


@pytest.mark.parametrize("name", KINDS)
def test_foreign_files_are_refused(kinds, tmp_path, name):
    kind = kinds(name)
    (tmp_path / "empty").write_bytes(b"")
    _refused(kind, tmp_path / "empty")
    (tmp_path / "text").write_text("hello, I am not a pysketch file\n")
    _refused(kind, tmp_path / "text")
    np.savez(tmp_path / "random.npz", x=np.arange(5.0), meta=np.arange(3))
    _refused(kind, tmp_path / "random.npz")
    np.savez(tmp_path / "nometa.npz", sum=np.arange(5.0))
    _refused(kind, tmp_path / "nometa.npz")
    if name == "cli_json":
        (tmp_path / "list.json").write_text("[1, 2, 3]\n")
        _refused(kind, tmp_path / "list.json", "not a pysketch JSON file")
        (tmp_path / "plain.json").write_text('{"lower": [0], "upper": [1]}\n')
        _refused(kind, tmp_path / "plain.json", "format is None")
        _refused(kind, _saved(kinds("sketch"), tmp_path, "sk"))
    else:
        _refused(kind, _other_kind_file(kind, kinds, tmp_path), "not a pysketch")


def test_a_private_sketch_file_is_not_a_clean_one_and_back(kinds, tmp_path):
    with pytest.raises(SketchFileError, match="a clean sketch file, not a PrivateSketch"):
        PrivateSketch.load(_saved(kinds("sketch"), tmp_path))


def _rewrite(path, out, edit):
    """The file at `path` rewritten by the container with edit(meta) applied (a valid checksum)."""
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays.pop("meta")))
    meta.pop("checksum")
    edit(meta)
    write(out, meta.pop("format"), meta.pop("version"), meta, arrays)


@pytest.mark.parametrize("name", KINDS)
def test_a_newer_version_is_refused_as_such(kinds, tmp_path, name):
    kind = kinds(name)
    path = _saved(kind, tmp_path)
    future = tmp_path / ("future.json" if name == "cli_json" else "future.npz")
    if name == "cli_json":
        obj = json.loads(path.read_text())
        obj.pop("checksum")
        fmt, version = obj.pop("format"), obj.pop("version")
        write_json(future, fmt, version + 1, obj)
        _refused(kind, future, f"version {version + 1} is newer than this pysketch reads")
        write_json(future, fmt, version, obj)  # the same rewrite at the current version reads
    else:
        def bump(meta):  # (sketch files read versions 1 and 2, the subsampled ones)
            meta["version"] = 3 if name in ("sketch", "subsampled", "private") else meta["version"] + 1

        _rewrite(path, future, bump)
        _refused(kind, future, "is newer than this pysketch reads")
        _rewrite(path, future, lambda meta: None)
    assert kind.same(kind.obj, kind.load(future))


# ------------------------------------------------------------------------------ hostile files


def _members(path):
    """{name: stored bytes} of a ZIP, in order."""
    with zipfile.ZipFile(path) as zf:
        return {info.filename: zf.read(info) for info in zf.infolist()}


def _zip(path, members, deflate=()):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate names
        with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
            for name, data in members:
                zf.writestr(name, data, zipfile.ZIP_DEFLATED if name in deflate else zipfile.ZIP_STORED)


def _largest_array(path):
    members = _members(path)
    return max((n for n in members if n != "meta.npy"), key=lambda n: len(members[n])), members


def _npy_header(descr, shape):
    import io

    f = io.BytesIO()
    np.lib.format.write_array_header_1_0(f, {"descr": descr, "fortran_order": False, "shape": shape})
    return f.getvalue()


def _peak(fn):
    """(exception raised by fn(), peak bytes allocated by Python while it ran)."""
    tracemalloc.start()
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - returned to the caller
        err = exc
    else:
        err = None
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return err, peak


@pytest.mark.parametrize("name", ZIP_KINDS)
def test_a_lying_npy_header_is_refused_without_allocating(kinds, tmp_path, name):
    kind = kinds(name)
    target, members = _largest_array(_saved(kind, tmp_path))
    huge = _npy_header("<f8", (10**11,))  # 800 GB promised, 16 bytes held
    path = tmp_path / "lying.npz"
    _zip(path, [(n, huge + b"\0" * 16 if n == target else data) for n, data in members.items()])
    err, peak = _peak(lambda: kind.load(path))
    assert isinstance(err, SketchFileError) and "promises" in str(err), err
    assert peak < SMALL


@pytest.mark.parametrize("name", ZIP_KINDS)
def test_a_directory_claiming_more_than_the_file_holds_is_refused(kinds, tmp_path, name):
    kind = kinds(name)
    raw = bytearray(_saved(kind, tmp_path).read_bytes())
    cd = raw.rfind(b"PK\x05\x06")
    cd_offset = struct.unpack("<L", raw[cd + 16:cd + 20])[0]
    assert raw[cd_offset:cd_offset + 4] == b"PK\x01\x02"
    # the first member of the directory declares 2 GiB, compressed and not
    raw[cd_offset + 20:cd_offset + 28] = struct.pack("<2L", 1 << 31, 1 << 31)
    path = tmp_path / "big.npz"
    path.write_bytes(bytes(raw))
    err, peak = _peak(lambda: kind.load(path))
    assert isinstance(err, SketchFileError) and "more than the file holds" in str(err), err
    assert peak < SMALL


@pytest.mark.parametrize("name", ZIP_KINDS)
def test_data_before_between_or_after_the_members_is_refused(kinds, tmp_path, name):
    kind = kinds(name)
    raw = _saved(kind, tmp_path).read_bytes()
    (tmp_path / "after.npz").write_bytes(raw + b"\0" * 64)
    _refused(kind, tmp_path / "after.npz", "end record")
    # a ZIP comment is also data after the directory
    with zipfile.ZipFile(tmp_path / "comment.npz", "w") as zf:
        for n, data in _members(tmp_path / "f.npz").items():
            zf.writestr(n, data)
        zf.comment = b"hello"
    _refused(kind, tmp_path / "comment.npz", "end record")
    # data before the first member (zipfile itself would read it: offsets are shifted)
    prefixed = b"\0" * 64 + raw
    (tmp_path / "before.npz").write_bytes(prefixed)
    _refused(kind, tmp_path / "before.npz")


@pytest.mark.parametrize("name", ZIP_KINDS)
def test_a_zip_bomb_is_refused_before_decompressing(kinds, tmp_path, name):
    kind = kinds(name)
    target, members = _largest_array(_saved(kind, tmp_path))
    n = 1 << 22  # 32 MiB of zeros (a consistent header), deflated to about 32 KiB
    bomb = _npy_header("<f8", (n,)) + bytes(8 * n)
    path = tmp_path / "bomb.npz"
    _zip(path, [(m, bomb if m == target else data) for m, data in members.items()], deflate=(target,))
    del bomb
    assert path.stat().st_size < (1 << 20)
    err, peak = _peak(lambda: kind.load(path))
    assert isinstance(err, SketchFileError) and "compressed" in str(err), err
    assert peak < SMALL


class _Trap:
    """Unpickling it would record the call: the loaders must never get that far."""

    sprung = []

    def __reduce__(self):
        return (_Trap.sprung.append, ("unpickled",))


@pytest.mark.parametrize("name", ZIP_KINDS)
def test_object_and_structured_arrays_are_refused_and_never_unpickled(kinds, tmp_path, name):
    import io

    kind = kinds(name)
    target, members = _largest_array(_saved(kind, tmp_path))
    f = io.BytesIO()
    np.save(f, np.array([_Trap(), 1], dtype=object), allow_pickle=True)
    assert b"unpickled" in f.getvalue()  # the pickle is there
    path = tmp_path / "object.npz"
    _zip(path, [(m, f.getvalue() if m == target else data) for m, data in members.items()])
    _refused(kind, path, "object")
    assert not _Trap.sprung
    f = io.BytesIO()
    np.save(f, np.zeros(3, dtype=[("a", "<f8"), ("b", "<i4")]))
    _zip(path, [(m, f.getvalue() if m == target else data) for m, data in members.items()])
    _refused(kind, path, "arrays only")


@pytest.mark.parametrize("name", ZIP_KINDS)
def test_unexpected_members_are_refused(kinds, tmp_path, name):
    kind = kinds(name)
    members = _members(_saved(kind, tmp_path))
    path = tmp_path / "extra.npz"
    _zip(path, list(members.items()) + [("notes.txt", b"hello")])
    _refused(kind, path, "unexpected member")
    first = next(n for n in members if n != "meta.npy")
    _zip(path, list(members.items()) + [(first, members[first])])
    _refused(kind, path, "twice")
    _zip(path, list(members.items()) + [("zz_extra.npy", members[first])])
    _refused(kind, path, "unexpected member|checksum")


@pytest.mark.parametrize("name", KINDS)
def test_missing_files_and_directories_raise_the_os_errors(kinds, tmp_path, name):
    kind = kinds(name)
    with pytest.raises(FileNotFoundError, match="no such"):
        kind.load(tmp_path / "missing.npz")
    with pytest.raises(IsADirectoryError, match="is a directory"):
        kind.load(tmp_path)


@pytest.mark.parametrize("name", ("sketch", "private", "release", "kmeans", "m2m_linear"))
def test_a_save_that_cannot_be_written_names_the_path_given_not_its_temporary_file(kinds, tmp_path, name):
    # issue 33: save_model into a missing folder named the hidden .pysketch-XXXX.tmp
    kind = kinds(name)
    (tmp_path / "a_file").write_text("")
    cases = [(tmp_path / "missing" / "out.npz", FileNotFoundError, "folder .*missing does not exist"),
             (tmp_path / "a_file" / "out.npz", NotADirectoryError, "folder .*a_file is not a directory"),
             (tmp_path, IsADirectoryError, "Is a directory")]
    for target, error, reason in cases:
        with pytest.raises(error) as info:
            kind.save(kind.obj, target)
        assert info.value.filename == str(target) and info.value.filename2 is None
        assert ".pysketch-" not in str(info.value) and re.search(reason, str(info.value)), str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]  # nothing written, no temporary file left


def test_a_json_output_that_cannot_be_written_names_the_path_given(tmp_path):
    target = tmp_path / "missing" / "out.json"
    with pytest.raises(FileNotFoundError) as info:
        write_json(target, "pysketch.test", 1, {"a": 1})
    assert info.value.filename == str(target) and ".pysketch-" not in str(info.value)


def test_an_oversize_json_file_is_refused_before_it_is_read(kinds, tmp_path, monkeypatch):
    import pysketch._archive as archive

    kind = kinds("cli_json")
    path = _saved(kind, tmp_path)
    monkeypatch.setattr(archive, "MAX_JSON_BYTES", path.stat().st_size - 1)
    _refused(kind, path, "larger than")


# ------------------------------------------------------------------------------ the command line


def test_the_command_line_reads_its_json_back_checked(kinds, tmp_path, capsys):
    kind = kinds("cli_json")
    fit = _saved(kind, tmp_path, "fit")
    X, _ = _data()
    make_feature_map(3, 8, "complex", random_state=0).sketch(X).save(tmp_path / "s.npz")
    # the box of a fit's output, read back through its checksum
    argv = ["query", str(tmp_path / "s.npz"), "mean", "--bounds-file", str(fit), "--n-synthetic", "500", "-q",
            "-o", str(tmp_path / "mean.json")]
    assert main(argv) == 0
    answer = _read_cli_json(tmp_path / "mean.json")
    assert answer["format"] == QUERY_FORMAT and answer["bounds"] == kind.obj["bounds"]
    # one edited number: refused, exit 2 naming the file and the cause
    text = fit.read_text()
    fit.write_text(text.replace('"k": 2', '"k": 3'))
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        main(argv[:-2] + ["-o", str(tmp_path / "mean2.json")])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert str(fit) in err and "checksum mismatch" in err


# ------------------------------------------------------------------------------ noise never saved

#: Keys of a private file that name noise but hold public calibration: its scale or
#: variance (a function of epsilon, delta and the sensitivity) or whether it was secure.
PUBLIC_NOISE_FIELDS = {"noise_scale_sum", "noise_scale_count", "secure_noise", "noise_variance_", "noise_std",
                       "sum_noise_variance"}
NOISY_NAME = re.compile(r"noise|clean|seed|zeta|(^|_)xi(_|$)|(^|_)eta(_|$)", re.IGNORECASE)


def _keys(node, out):
    if isinstance(node, dict):
        for k, v in node.items():
            out.append((k, v))
            _keys(v, out)
    elif isinstance(node, list):
        for v in node:
            _keys(v, out)
    return out


def _file_contents(path):
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    return json.loads(str(arrays.pop("meta"))), arrays


def _assert_no_noise(path, clean=(), noise=()):
    """No metadata key names noise or a seed (beyond the public calibration fields), no
    noise seed is set, and no array of the file equals (to 1e-6) a clean value or the noise."""
    meta, arrays = _file_contents(path)
    for key, value in _keys(meta, []):
        if key == "insecure_seed":
            assert value is None, f"{path}: a noise seed is saved"
        elif NOISY_NAME.search(key):
            assert key in PUBLIC_NOISE_FIELDS, f"{path}: the file holds a field {key!r}"
    for secret in list(clean) + list(noise):
        secret = np.asarray(secret)
        for name, a in arrays.items():
            for candidate in (a, a.real if np.iscomplexobj(a) else a):
                if candidate.size == secret.size and candidate.size > 1:
                    assert not np.allclose(candidate.reshape(-1), secret.reshape(-1), rtol=1e-6, atol=1e-6), \
                        f"{path}: array {name} holds a clean value or the noise"


def test_no_private_file_holds_its_noise_or_its_clean_sum(kinds, tmp_path):
    X, _ = _data()
    fm = make_feature_map(3, 8, "complex", random_state=0)
    clean = fm.sketch(X)
    private = kinds("private").obj
    path = _saved(kinds("private"), tmp_path, "p")
    _assert_no_noise(path, clean=[clean.sum], noise=[private.sum - clean.sum])
    assert private.privacy["secure_noise"]

    rel = kinds("release")
    op = SparseJLOperator.draw(3, 8, 2, random_state=0)
    S = np.atleast_2d(op.apply(X[:4]))
    _assert_no_noise(_saved(rel, tmp_path, "r"), clean=[S], noise=[rel.obj.values - S])

    km = kinds("kmeans").obj  # the private sketch it decoded: its map is public, its clean sum is not
    km_clean = km.sketch_.feature_map.sketch(kinds("kmeans").data[0]).sum
    _assert_no_noise(_saved(kinds("kmeans"), tmp_path, "km"), clean=[km_clean], noise=[km.sketch_.sum - km_clean])

    pca = kinds("pca").obj
    pca_clean = pca.sketch_.feature_map.sketch(kinds("pca").data[0]).sum
    _assert_no_noise(_saved(kinds("pca"), tmp_path, "pca"), clean=[pca_clean], noise=[pca.sketch_.sum - pca_clean])

    for name, label in (("m2m_linear", None), ("m2m_logistic", None)):
        est = kinds(name).obj
        Xm, ym = kinds(name).data
        records = np.column_stack([Xm, np.asarray(ym, dtype=np.float64)])
        fm2 = est.m2m_.feature_map_
        c = fm2.sketch(records)
        _assert_no_noise(_saved(kinds(name), tmp_path, name),
                         clean=[fm2.as_real(c.sum), fm2.as_real(c.sum / c.count)])

    _assert_no_noise(_saved(kinds("rf"), tmp_path, "rf"))


def test_the_noise_check_sees_a_saved_clean_sum(tmp_path):
    # the check itself: a file that does hold the clean sum, or a seed, is caught
    X, _ = _data()
    clean = make_feature_map(3, 8, "complex", random_state=0).sketch(X)
    write(tmp_path / "leak.npz", "x", 1, {"privacy": {"epsilon": 1.0}}, {"sum": clean.sum + 0})
    with pytest.raises(AssertionError, match="clean value"):
        _assert_no_noise(tmp_path / "leak.npz", clean=[clean.sum])
    write(tmp_path / "seed.npz", "x", 1, {"insecure_seed": 3}, {})
    with pytest.raises(AssertionError, match="noise seed"):
        _assert_no_noise(tmp_path / "seed.npz")
    write(tmp_path / "zeta.npz", "x", 1, {"count_noise": 0.5}, {})
    with pytest.raises(AssertionError, match="count_noise"):
        _assert_no_noise(tmp_path / "zeta.npz")


# ------------------------------------------------------------------------------ what a model refuses


def test_saving_refuses_what_cannot_be_stored_safely(kinds, tmp_path):
    from pysketch.privacy import BudgetAccountant
    from pysketch.rfm.estimators import PrivateRFRegressor

    est, _, _ = _fit("gmm")
    # an accountant is the budget of a session: saved as None, the rest of the model as it is
    acc = BudgetAccountant(10.0)
    est.set_params(accountant=acc)
    save_model(est, tmp_path / "with_accountant.npz")
    back = load_model(tmp_path / "with_accountant.npz")
    assert back.accountant is None and est.accountant is acc
    np.testing.assert_array_equal(back.means_, est.means_)
    est.set_params(accountant=None)
    est.labels_ = lambda x: x
    with pytest.raises(TypeError, match=r"labels_: a builtins\.function cannot be saved"):
        save_model(est, tmp_path / "m.npz")
    del est.labels_
    est.residual_ = np.array([object()])
    with pytest.raises(TypeError, match=r"residual_: an array of dtype object"):
        save_model(est, tmp_path / "m.npz")
    with pytest.raises(ValueError, match="insecure_seed = 3 seeds the privacy noise"):
        save_model(PrivateRFRegressor(insecure_seed=3), tmp_path / "m.npz")
    with pytest.raises(TypeError, match="estimator must be an estimator"):
        save_model(np.zeros(3), tmp_path / "m.npz")
    assert not (tmp_path / "m.npz").exists()


def test_loading_names_only_registered_classes(kinds, tmp_path):
    path = _saved(kinds("gmm"), tmp_path)
    meta, arrays = _file_contents(path)
    meta.pop("checksum")
    meta["model"]["class"] = "os.system"
    write(tmp_path / "evil.npz", meta.pop("format"), meta.pop("version"), meta, arrays)
    with pytest.raises(SketchFileError, match="unknown model class 'os.system'"):
        load_model(tmp_path / "evil.npz")


def test_pickled_models_are_not_what_load_model_reads(kinds, tmp_path):
    path = tmp_path / "pickled.npz"
    path.write_bytes(pickle.dumps(kinds("gmm").obj))
    _refused(kinds("gmm"), path, "end record")


def test_sketch_load_reads_a_private_file_in_a_program_that_never_imported_privacy(tmp_path):
    # the private sketch's format registers itself when pysketch.privacy is imported:
    # Sketch.load must import it, else a fresh program refuses a valid file as "unknown format"
    import subprocess
    import sys

    from pysketch import make_feature_map
    from pysketch.privacy import make_private

    fm = make_feature_map(2, 16, sigma=1.0, random_state=0)
    path = tmp_path / "private.npz"
    make_private(fm.sketch(np.random.default_rng(0).normal(size=(50, 2))), 1.0).save(path)
    code = ("import sys, pysketch; s = pysketch.Sketch.load(sys.argv[1]); "
            "print(type(s).__name__, s.epsilon, 'pysketch.privacy' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["PrivateSketch", "1.0", "True"]


# ------------------------------------------------------------------------------ interrupted saves


def _interrupt_second_member(monkeypatch):
    """Make _archive's member writer write half of the second member, then raise
    KeyboardInterrupt (a Ctrl-C in the middle of a save)."""
    import pysketch._archive as archive

    real = archive.npy.write_array
    calls = []

    def half_then_interrupt(f, a, allow_pickle=False):
        calls.append(1)
        if len(calls) == 2:
            f.write(b"\0" * 100)
            raise KeyboardInterrupt
        real(f, a, allow_pickle=allow_pickle)

    monkeypatch.setattr(archive.npy, "write_array", half_then_interrupt)
    return calls


@pytest.mark.parametrize("name", ZIP_KINDS)
def test_an_interrupted_save_leaves_the_previous_file_whole(kinds, tmp_path, monkeypatch, name):
    kind = kinds(name)
    path = _saved(kind, tmp_path)
    before = path.read_bytes()
    calls = _interrupt_second_member(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        kind.save(kind.obj, path)
    assert len(calls) == 2  # the save was really cut in the middle
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert kind.same(kind.obj, kind.load(path))
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # no temporary file left


def test_an_interrupted_first_save_leaves_no_file(kinds, tmp_path, monkeypatch):
    kind = kinds("sketch")
    _interrupt_second_member(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        kind.save(kind.obj, tmp_path / "s.npz")
    assert list(tmp_path.iterdir()) == []


def test_an_interrupted_json_write_leaves_the_previous_file_whole(tmp_path, monkeypatch):
    import pysketch._archive as archive

    path = tmp_path / "out.json"
    write_json(path, "pysketch.test", 1, {"a": 1})
    before = path.read_bytes()

    def half_then_interrupt(obj, f, **kwargs):
        f.write('{"format": ')
        raise KeyboardInterrupt

    monkeypatch.setattr(archive.json, "dump", half_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        write_json(path, "pysketch.test", 1, {"a": 2})
    monkeypatch.undo()
    assert path.read_bytes() == before and read_json(path, {"pysketch.test": (1,)}) == {
        "format": "pysketch.test", "version": 1, "a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_saved_files_get_the_permissions_of_a_plain_open(kinds, tmp_path):
    # the temporary file is made 0600 by mkstemp; the file put in place has 0666 & ~umask
    umask = os.umask(0o022)
    try:
        path = _saved(kinds("sketch"), tmp_path)
        assert (path.stat().st_mode & 0o777) == 0o644
        os.umask(0o077)
        path2 = _saved(kinds("sketch"), tmp_path, "g")
        assert (path2.stat().st_mode & 0o777) == 0o600
    finally:
        os.umask(umask)
