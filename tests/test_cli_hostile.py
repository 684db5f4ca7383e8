"""Hostile input at the edges of the command line and of the data-file readers (issue 33):
damaged compressed data files, text that is not UTF-8, a closed output pipe, a CSV of a
header alone, a column range beyond the file, files whose headers name their columns in
another order or name others, and a query box that contradicts the sketch's own.

Every refusal is the command's one-line error with exit status 2, no traceback, and no
output file written or changed; through the API, a `DataFileError` naming the file and the
line, member or records where the damage was found.
"""

import gzip
import io
import os
import re
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from pysketch import Sketch
from pysketch.cli import EXIT_CLOSED_PIPE, main
from pysketch.features import make_feature_map
from pysketch.files import DataFileError, open_data
from pysketch.frequencies import GaussianLaw

KEEP = b"an earlier output, never to be changed"


def run(*argv, cwd=None, stdout=subprocess.PIPE):
    """`python -m pysketch argv...` in a child process: (exit code, stdout, stderr)."""
    done = subprocess.run([sys.executable, "-m", "pysketch", *map(str, argv)], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, cwd=cwd, timeout=300)
    return done.returncode, done.stdout, done.stderr


def records(n=400, d=3, seed=0):
    return np.random.default_rng(seed).standard_normal((n, d))


def read_all(path, **kwargs):
    src = open_data(str(path), **kwargs)
    return np.concatenate([np.asarray(b.data, dtype=np.float64) for b in src.blocks(block_bytes=1024)])


def the_map(d):
    """The map of `pysketch sketch --kernel-scale 1 -m 64`."""
    return make_feature_map(d, 64, "complex", law=GaussianLaw(1.0), random_state=0, dtype=np.float32)


def csv_bytes(X, header=None):
    text = io.BytesIO()
    np.savetxt(text, X, delimiter=",", fmt="%.17g", header=header or "", comments="")
    return text.getvalue()


def npz_member(raw, name):
    """(offset, size) of the stored bytes of member `name` of the ZIP archive `raw`."""
    with zipfile.ZipFile(io.BytesIO(raw)) as zf:
        info = zf.getinfo(name)
    name_len, extra_len = int.from_bytes(raw[info.header_offset + 26:info.header_offset + 28], "little"), \
        int.from_bytes(raw[info.header_offset + 28:info.header_offset + 30], "little")
    return info.header_offset + 30 + name_len + extra_len, info.compress_size


# ---------------------------------------------------------------------------- damaged data files


def _truncated_gz(folder):
    raw = gzip.compress(csv_bytes(records(), "a,b,c"))
    (folder / "bad.csv.gz").write_bytes(raw[: len(raw) // 2])
    return "bad.csv.gz", r"bad\.csv\.gz, after line \d+: damaged or truncated gzip data \(EOFError: Compressed file"


def _gz_crc(folder):
    raw = bytearray(gzip.compress(csv_bytes(records())))
    raw[-8] ^= 0x01  # the trailer's CRC-32 of the text
    (folder / "bad.csv.gz").write_bytes(bytes(raw))
    return "bad.csv.gz", r"bad\.csv\.gz, its checksum \(the CRC-32 of all its lines\): damaged or truncated gzip " \
                         r"data \(BadGzipFile: CRC check failed"


def _gz_deflate(folder):
    raw = bytearray(gzip.compress(csv_bytes(records())))
    raw[10] = 0x07  # the first deflate block: final, of the reserved (invalid) type
    (folder / "bad.csv.gz").write_bytes(bytes(raw))
    return "bad.csv.gz", r"bad\.csv\.gz: damaged or truncated gzip data \(error: Error -3 .*invalid block type"


def _npz_crc(folder):
    np.savez(folder / "x.npz", first=records(), second=records(seed=1))
    raw = bytearray((folder / "x.npz").read_bytes())
    start, size = npz_member(bytes(raw), "second.npy")
    raw[start + size - 5] ^= 0x10  # a byte of the last row's data
    (folder / "bad.npz").write_bytes(bytes(raw))
    return "bad.npz", r"bad\.npz\[second\], its checksum \(the CRC-32 of all its rows\): damaged or truncated " \
                      r"archive member \(BadZipFile: Bad CRC-32 for file 'second\.npy'\)"


def _npz_deflate(folder):
    np.savez_compressed(folder / "x.npz", first=records())
    raw = bytearray((folder / "x.npz").read_bytes())
    start, _ = npz_member(bytes(raw), "first.npy")
    raw[start] = 0x07  # the member's first deflate block: of the reserved (invalid) type
    (folder / "bad.npz").write_bytes(bytes(raw))
    return "bad.npz", r"bad\.npz\[first\]: not a readable \.npz archive \(error: Error -3 .*invalid block type"


def _npz_deflate_rows(folder):
    """Damage inside the deflate stream of the rows (the issue's 'Bad CRC-32' traceback):
    found by the CRC-32 or the inflater, named with the member and its rows."""
    np.savez_compressed(folder / "x.npz", first=records(2000))
    raw = bytearray((folder / "x.npz").read_bytes())
    start, size = npz_member(bytes(raw), "first.npy")
    raw[start + size // 2] ^= 0x04
    (folder / "bad.npz").write_bytes(bytes(raw))
    return "bad.npz", r"bad\.npz\[first\], (rows \d+-\d+|its checksum \(the CRC-32 of all its rows\)): damaged or " \
                      r"truncated archive member \((BadZipFile: Bad CRC-32|error: Error -3)"


def _latin1(folder):
    (folder / "bad.csv").write_bytes("t,p\n1,2\n3,4\n5,\xe9\n".encode("latin-1"))
    return "bad.csv", r"bad\.csv, line 4: not UTF-8 text \(byte 0xe9 at byte 2 of the line\): save the file as UTF-8"


def _latin1_header(folder):
    (folder / "bad.csv.gz").write_bytes(gzip.compress("temp\xe9rature,p\n1,2\n".encode("latin-1")))
    return "bad.csv.gz", r"bad\.csv\.gz, line 1: not UTF-8 text \(byte 0xe9 at byte 4 of the line\)"


def _parse(folder):
    (folder / "bad.csv.gz").write_bytes(gzip.compress(b"a,b\n1,2\n3,x\n"))
    return "bad.csv.gz", r"bad\.csv\.gz, line 3, column 1: 'x' is not a number"


def _parquet_page(folder):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    X = records()
    pq.write_table(pa.table({"a": X[:, 0], "b": X[:, 1]}), folder / "x.parquet", write_page_checksum=True,
                   compression="none", use_dictionary=False)
    raw = bytearray((folder / "x.parquet").read_bytes())
    column = pq.ParquetFile(folder / "x.parquet").metadata.row_group(0).column(1)
    raw[column.data_page_offset + column.total_compressed_size - 20] ^= 0x01  # a value of column b
    (folder / "bad.parquet").write_bytes(bytes(raw))
    return "bad.parquet", r"bad\.parquet, at its first records: damaged or truncated Parquet data \(OSError: .*CRC"


def _parquet_rows(folder):
    """A footer whose row group declares fewer rows than the file (no checksum covers the
    footer): pyarrow reads fewer records without a word; the count is checked."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    X = records(200)
    pq.write_table(pa.table({"a": X[:, 0]}), folder / "x.parquet", row_group_size=100)
    raw = (folder / "x.parquet").read_bytes()
    footer = len(raw) - 8 - int.from_bytes(raw[-8:-4], "little")
    # the first row group's num_rows in the footer (thrift i64, a zigzag varint: 100 is c8 01, 99 is c6 01),
    # found among the fields of that value
    for at in (i for i in range(footer, len(raw) - 1) if raw[i:i + 2] == b"\xc8\x01"):
        (folder / "bad.parquet").write_bytes(raw[:at] + b"\xc6\x01" + raw[at + 2:])
        meta = pq.ParquetFile(folder / "bad.parquet").metadata
        if meta.row_group(0).num_rows == 99 and meta.num_rows == 200:
            break
    else:
        raise AssertionError("no row group size found in the footer")
    return "bad.parquet", r"bad\.parquet: damaged Parquet metadata: its row groups hold 199 records, its footer " \
                          r"declares 200"


def _parquet_truncated(folder):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"a": records()[:, 0]}), folder / "x.parquet")
    (folder / "bad.parquet").write_bytes((folder / "x.parquet").read_bytes()[:-100])
    return "bad.parquet", r"bad\.parquet: not a readable Parquet file \("


def _npy_truncated(folder):
    np.save(folder / "x.npy", records())
    (folder / "bad.npy").write_bytes((folder / "x.npy").read_bytes()[:-7])
    return "bad.npy", r"bad\.npy: not a readable \.npy file \(.*mmap length is greater than file size"


DAMAGES = [_npy_truncated, _truncated_gz, _gz_crc, _gz_deflate, _npz_crc, _npz_deflate, _npz_deflate_rows, _latin1,
           _latin1_header, _parse, _parquet_page, _parquet_rows, _parquet_truncated]


@pytest.mark.parametrize("damage", DAMAGES, ids=[f.__name__[1:] for f in DAMAGES])
def test_a_damaged_data_file_is_a_data_file_error_naming_the_file_and_where(damage, tmp_path):
    name, pattern = damage(tmp_path)
    with pytest.raises(DataFileError, match=pattern) as info:
        read_all(tmp_path / name)
    assert str(info.value).startswith(str(tmp_path / name))
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("damage", DAMAGES, ids=[f.__name__[1:] for f in DAMAGES])
def test_sketch_of_a_damaged_data_file_exits_2_and_writes_nothing(damage, tmp_path, monkeypatch, capsys):
    name, pattern = damage(tmp_path)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kept.npz").write_bytes(KEEP)
    for argv in (["sketch", name, "-o", "o.npz", "--kernel-scale", "1"],  # read once
                 ["sketch", name, "-o", "kept.npz", "--force"],  # read twice: --kernel-scale auto's pilot first
                 ["demo", "--data", name, "--output", "none", "--no-baseline"]):
        with pytest.raises(SystemExit) as info:
            main(argv)
        err = capsys.readouterr().err
        assert info.value.code == 2, argv
        lines = err.strip().splitlines()
        prefix = f"pysketch {argv[0]}: error: " + ("--data: " if argv[0] == "demo" else "")
        assert lines[-1].startswith(prefix + name), err
        assert re.search(pattern, lines[-1]), err
        assert "Traceback" not in err
    assert (tmp_path / "kept.npz").read_bytes() == KEEP
    assert sorted(os.listdir(tmp_path)) == sorted(["kept.npz", name] + [
        f for f in os.listdir(tmp_path) if f.startswith("x.")])  # no o.npz, no temporary file


def test_the_issues_damaged_files_on_the_command_line(tmp_path):
    """The two tracebacks of the issue, end to end: one line on stderr, exit 2."""
    for damage in (_truncated_gz, _npz_crc):
        name, _ = damage(tmp_path)
        code, out, err = run("sketch", name, "-o", "o.npz", "-q", cwd=tmp_path)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert err.startswith(f"pysketch sketch: error: {name}") and "Traceback" not in err
        assert not (tmp_path / "o.npz").exists()


def test_a_bom_is_not_part_of_the_first_name_or_number(tmp_path):
    X = records(5, 2)
    (tmp_path / "h.csv").write_bytes(b"\xef\xbb\xbf" + csv_bytes(X, "a,b"))
    (tmp_path / "n.csv").write_bytes(b"\xef\xbb\xbf" + csv_bytes(X))
    assert np.array_equal(read_all(tmp_path / "h.csv", columns=["a"]), X[:, :1])
    assert np.array_equal(read_all(tmp_path / "n.csv"), X)  # the first record is data, not a header


def test_a_damaged_npz_directory_hides_no_member(tmp_path):
    """Found by the fuzz target damaged_data_files: a flipped bit turned the directory's
    'b.npy' into 'b/npy', and the reader skipped the member (not an array) without a word."""
    np.savez_compressed(tmp_path / "x.npz", a=records(1), b=records(11))
    raw = (tmp_path / "x.npz").read_bytes()
    at = raw.rindex(b"b.npy")  # the name in the ZIP directory
    (tmp_path / "bad.npz").write_bytes(raw[:at + 1] + b"/" + raw[at + 2:])
    with pytest.raises(DataFileError, match=r"bad\.npz\[b/npy\]: not a readable \.npz archive \(BadZipFile: File "
                                            r"name in directory 'b/npy' and header b'b\.npy' differ"):
        open_data(str(tmp_path / "bad.npz"))
    with zipfile.ZipFile(tmp_path / "x.npz", "a") as zf:  # an intact member that is not an array: a note
        zf.writestr("README.txt", "about")
    src = open_data(str(tmp_path / "x.npz"))
    assert src.n_rows == 12 and src.notes == [f"{tmp_path / 'x.npz'}: members that are not .npy arrays skipped: "
                                              "README.txt"]


def test_a_damaged_npz_directory_comment_hides_no_member(tmp_path, monkeypatch):
    """Found by the fuzz target damaged_data_files (its 10^5 run): a flipped bit in the
    comment length of the directory's first entry swallowed the second entry, and zipfile
    listed one member of two without a word. The end record's count is compared."""
    np.savez_compressed(tmp_path / "x.npz", a=records(1, 1), b=records(18, 1))
    raw = bytearray((tmp_path / "x.npz").read_bytes())
    entry = raw.index(b"PK\x01\x02")  # the directory's entry of a.npy
    raw[entry + 33] ^= 0x01  # its comment length + 256
    (tmp_path / "bad.npz").write_bytes(bytes(raw))
    with zipfile.ZipFile(tmp_path / "bad.npz") as zf:
        assert [i.filename for i in zf.infolist()] == ["a.npy"]
    with pytest.raises(DataFileError, match=r"bad\.npz: damaged ZIP directory: it lists 1 members, its end record "
                                            r"declares 2"):
        open_data(str(tmp_path / "bad.npz"))
    # a ZIP64 end record (more than 65535 members, here forced): its count is read there
    monkeypatch.setattr(zipfile, "ZIP_FILECOUNT_LIMIT", 1)
    np.savez(tmp_path / "z.npz", a=records(3, 2), b=records(4, 2))
    raw = bytearray((tmp_path / "z.npz").read_bytes())
    end = raw.rindex(b"PK\x05\x06")
    raw[end + 8:end + 12] = b"\xff\xff\xff\xff"  # the end record's counts: see the ZIP64 record
    (tmp_path / "z.npz").write_bytes(bytes(raw))
    assert open_data(str(tmp_path / "z.npz")).n_rows == 7
    z64 = raw.rindex(b"PK\x06\x06")
    raw[z64 + 32] = 3  # the ZIP64 record's count of members
    (tmp_path / "z.npz").write_bytes(bytes(raw))
    with pytest.raises(DataFileError, match=r"z\.npz: damaged ZIP directory: it lists 2 members, its end record "
                                            r"declares 3"):
        open_data(str(tmp_path / "z.npz"))


def test_an_npz_member_whose_header_promises_other_bytes_is_refused(tmp_path):
    member = io.BytesIO()
    np.lib.format.write_array(member, records(10))
    with zipfile.ZipFile(tmp_path / "bad.npz", "w") as zf:  # (its CRC-32 is that of the lying member)
        zf.writestr("a.npy", member.getvalue().replace(b"(10, 3)", b"(90, 3)"))
    with pytest.raises(DataFileError, match=r"bad\.npz\[a\]: damaged or truncated: its header declares a float64 "
                                            r"array of shape \(90, 3\) \(2160 bytes\) but the member holds 240 bytes"):
        open_data(str(tmp_path / "bad.npz"))


# ---------------------------------------------------------------------------- a closed output pipe


@pytest.fixture(scope="module")
def sketches(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pipe")
    X = np.random.default_rng(3).uniform(size=(500, 2))
    np.save(folder / "x.npy", X)
    the_map(2).sketch(X).save(folder / "s.npz")
    assert main(["sketch", str(folder / "x.npy"), "--map", "hist", "--bounds", "0", "1", "--bins", "8", "-q",
                 "-o", str(folder / "h.npz")]) == 0
    return folder


PRINTING = [
    ["info", "s.npz"],
    ["info", "--n", "64", "--rows", "8", "--repeat", "1"],
    ["sketch", "x.npy", "-o", "o.npz", "--kernel-scale", "1", "-m", "16", "--force"],
    ["merge", "s.npz", "s.npz", "-o", "m.npz", "--force"],
    ["privatize", "s.npz", "-o", "p.npz", "--epsilon", "1", "--force"],
    ["fit", "s.npz", "--task", "kmeans", "-k", "2", "--bounds", "0", "1", "--n-init", "1"],
    ["query", "h.npz", "mean", "--n-synthetic", "200"],
    ["demo", "--n", "2000", "-k", "2", "--d", "2", "--output", "none", "--no-baseline"],
    ["--help"],
    ["--version"],
]


@pytest.mark.parametrize("argv", PRINTING, ids=[" ".join(a[:2]) for a in PRINTING])
def test_a_closed_output_pipe_ends_the_command_quietly(argv, sketches):
    """`pysketch info S.npz | head -2`: the reader of stdout has gone (here before the first
    write: its end of the pipe is closed). Status 141 (128 + SIGPIPE), nothing on stderr (it
    was 'pysketch info: error: [Errno 32] Broken pipe', status 2)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        code, _, err = run(*argv, cwd=sketches, stdout=write_end)
    finally:
        os.close(write_end)
    if argv[0] in ("--help", "--version"):  # argparse ignores a failed write of its own (OSError): 0 or 141
        assert code in (0, EXIT_CLOSED_PIPE), err
    else:
        assert code == EXIT_CLOSED_PIPE == 141, err
    assert err.strip() == "" or "error" not in err and "Traceback" not in err and "Exception" not in err, err


def test_a_closed_pipe_after_the_output_started(sketches):
    """The literal `| head -2`: the reader takes two lines and goes."""
    shell = f"{sys.executable} -m pysketch info s.npz | head -2; exit ${{PIPESTATUS[0]}}"
    done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, cwd=sketches, timeout=300)
    assert len(done.stdout.splitlines()) == 2 and done.stderr == ""
    assert done.returncode in (0, EXIT_CLOSED_PIPE)  # 0 when all 12 lines were written before head left


def test_a_closed_pipe_in_process_returns_141(sketches, monkeypatch):
    class Closed(io.StringIO):
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", Closed())
    assert main(["info", str(sketches / "s.npz")]) == EXIT_CLOSED_PIPE


# ---------------------------------------------------------------------------- files of no records


@pytest.mark.parametrize("name, write, message", [
    ("h.csv", lambda p: p.write_text("a,b\n"), "h.csv: holds no records (only the header line 1: a, b)"),
    ("h.csv.gz", lambda p: p.write_bytes(gzip.compress(b"# made today\na,b\n\n# none\n")),
     "h.csv.gz: holds no records (only the header line 2: a, b)"),
    ("e.csv", lambda p: p.write_text(""), "e.csv: holds no records"),
    ("e.npy", lambda p: np.save(p, np.zeros((0, 2))), "e.npy: holds no records (its array has shape (0, 2))"),
    ("e.npz", lambda p: np.savez(p, a=np.zeros((0, 2))), "e.npz: holds no records (every array read has 0 rows)"),
])
def test_a_file_of_no_records_is_refused(name, write, message, tmp_path, monkeypatch, capsys):
    """A CSV of a header alone gave a sketch of 0 records and status 0; an empty CSV was refused."""
    write(tmp_path / name)
    np.save(tmp_path / "x.npy", records(10, 2))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as info:
        main(["sketch", "x.npy", name, "-o", "o.npz", "--kernel-scale", "1"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and f"pysketch sketch: error: {message}" in err, err
    assert not (tmp_path / "o.npz").exists()


def test_a_parquet_file_of_no_records_is_refused(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"a": np.zeros(0)}), tmp_path / "e.parquet")
    with pytest.raises(DataFileError, match="e.parquet: holds no records"):
        open_data(str(tmp_path / "e.parquet"))


# ---------------------------------------------------------------------------- column ranges


@pytest.mark.parametrize("spec, message", [
    ("0:20", "--columns 0:20: w.csv: column range 0:20 reaches beyond the file's 11 columns (its stop 20 is outside "
             "[-11, 11]; 0:11 is all of them)"),
    ("-12:", "--columns -12:: w.csv: column range -12: reaches beyond the file's 11 columns (its start -12"),
    ("2,15:", "--columns 2,15:: w.csv: column range 15: reaches beyond the file's 11 columns (its start 15"),
    ("11::-1", "--columns 11::-1: w.csv: column range 11::-1 reaches beyond the file's 11 columns (its start 11 is "
               "outside [-11, 10]"),
    ("12", "--columns 12: w.csv: column 12 is out of range (the file has 11 columns)"),
    ("x", "--columns x: w.csv: has no column names, so column 'x' cannot be selected by name"),
])
def test_a_column_range_beyond_the_file_is_refused(spec, message, tmp_path, monkeypatch, capsys):
    """`--columns 0:20` on 11 columns read 11 columns without a word (a slice clips)."""
    np.savetxt(tmp_path / "w.csv", records(20, 11), delimiter=",")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as info:
        main(["sketch", "w.csv", "--columns", spec, "-o", "o.npz", "--kernel-scale", "1"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and f"pysketch sketch: error: {message}" in err, err
    assert not (tmp_path / "o.npz").exists()


def test_column_ranges_within_the_file_are_read(tmp_path):
    X = records(20, 11)
    np.save(tmp_path / "w.npy", X)
    for spec, cols in (("0:11", slice(0, 11)), ("5:", slice(5, None)), (":-1", slice(None, -1)),
                       ("-11:", slice(-11, None)), ("::-1", slice(None, None, -1)), ("10:-12:-1", slice(10, None, -1)),
                       ("3:3,1", [1])):
        from pysketch.files import parse_columns

        assert np.array_equal(read_all(tmp_path / "w.npy", columns=parse_columns(spec)), X[:, cols]), spec


# ---------------------------------------------------------------------------- columns matched by name


def test_files_naming_the_same_columns_in_another_order_are_matched_by_name(tmp_path, monkeypatch, capsys):
    """Two CSVs (and a Parquet file) whose headers name the same columns in other orders were
    combined column by column without a word: now by name, with a note."""
    X, Y = records(300, 3, 1), records(200, 3, 2)
    (tmp_path / "abc.csv").write_bytes(csv_bytes(X, "a,b,c"))
    (tmp_path / "cab.csv").write_bytes(csv_bytes(Y[:, [2, 0, 1]], "c,a,b"))
    names = ["abc.csv", "cab.csv"]
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        Z = np.zeros((0, 3))
    else:
        Z = records(100, 3, 3)
        pq.write_table(pa.table({"b": Z[:, 1], "label": ["x"] * 100, "c": Z[:, 2], "a": Z[:, 0]}),
                       tmp_path / "bca.parquet")
        names.append("bca.parquet")
    monkeypatch.chdir(tmp_path)
    assert main(["sketch", *names, "-o", "s.npz", "--kernel-scale", "1", "-m", "64"]) == 0
    err = capsys.readouterr().err
    assert "pysketch sketch: note: cab.csv: columns matched by name, in the order of abc.csv (a, b, c; this file " \
           "has c, a, b)" in err
    want = the_map(3).sketch(np.vstack([X, Y, Z]))
    got = Sketch.load(tmp_path / "s.npz")
    assert got.count == 300 + 200 + len(Z)
    np.testing.assert_allclose(got.sum, want.sum, rtol=0, atol=1e-9)
    # by position (the old behaviour, asked for): the columns as they come
    assert main(["sketch", "abc.csv", "cab.csv", "-o", "p.npz", "--kernel-scale", "1", "-m", "64", "-q",
                 "--by-position"]) == 0
    np.testing.assert_allclose(Sketch.load("p.npz").sum, the_map(3).sketch(np.vstack([X, Y[:, [2, 0, 1]]])).sum,
                               rtol=0, atol=1e-9)
    # selected by name: one order for every file, no note needed
    assert main(["sketch", "abc.csv", "cab.csv", "--columns", "c,a", "-o", "n.npz", "--kernel-scale", "1", "-m",
                 "64"]) == 0
    assert "matched by name" not in capsys.readouterr().err


@pytest.mark.parametrize("second, header, message", [
    ("abd.csv", "a,b,d", "abd.csv: its columns (a, b, d) are not those of abc.csv (a, b, c): it lacks c; it has d, "
                         "which abc.csv lacks. Files whose headers name their columns are combined by name"),
    ("ab.csv", "b,a", "ab.csv: its columns (b, a) are not those of abc.csv (a, b, c): it lacks c."),
])
def test_files_naming_other_columns_are_refused(second, header, message, tmp_path, monkeypatch, capsys):
    (tmp_path / "abc.csv").write_bytes(csv_bytes(records(30, 3), "a,b,c"))
    (tmp_path / second).write_bytes(csv_bytes(records(30, len(header.split(","))), header))
    (tmp_path / "kept.npz").write_bytes(KEEP)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as info:
        main(["sketch", "abc.csv", second, "-o", "kept.npz", "--force", "--kernel-scale", "1"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and f"pysketch sketch: error: {message}" in err, err
    assert "--columns" in err and "--by-position" in err
    assert (tmp_path / "kept.npz").read_bytes() == KEEP


def test_repeated_names_in_another_order_are_refused(tmp_path, monkeypatch, capsys):
    (tmp_path / "a.csv").write_bytes(csv_bytes(records(5, 3), "x,x,y"))
    (tmp_path / "b.csv").write_bytes(csv_bytes(records(5, 3), "x,y,x"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as info:
        main(["sketch", "a.csv", "b.csv", "-o", "o.npz", "--kernel-scale", "1"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "b.csv: its columns are those of a.csv in another order, but a.csv names x " \
                                    "more than once" in err, err


def test_files_without_names_are_combined_by_position(tmp_path, monkeypatch):
    X = records(40, 2)
    (tmp_path / "ab.csv").write_bytes(csv_bytes(X[:20], "a,b"))
    np.save(tmp_path / "x.npy", X[20:])
    monkeypatch.chdir(tmp_path)
    assert main(["sketch", "ab.csv", "x.npy", "-o", "o.npz", "--kernel-scale", "1", "-m", "64", "-q"]) == 0
    np.testing.assert_allclose(Sketch.load("o.npz").sum, the_map(2).sketch(X).sum, rtol=0, atol=1e-9)


# ---------------------------------------------------------------------------- a query box against the sketch's


def test_a_query_box_that_contradicts_the_sketchs_own_is_refused(sketches, tmp_path, capsys):
    """`query H.npz mean --bounds 0 1` replaced the hist sketch's own box and answered from
    synthetic points drawn elsewhere."""
    import json

    h = tmp_path / "h.npz"
    assert main(["sketch", str(sketches / "x.npy"), "--map", "hist", "--bounds", "-5", "5", "--bins", "40", "-q",
                 "-o", str(h)]) == 0
    (tmp_path / "box.json").write_text(json.dumps({"lower": [0, 0], "upper": [1, 1]}))
    for flag in (["--bounds", "0", "1"], ["--bounds", "-5", "5,6"], ["--bounds-file", str(tmp_path / "box.json")]):
        with pytest.raises(SystemExit) as info:
            main(["query", str(h), "mean", *flag, "-o", str(tmp_path / "a.json")])
        err = capsys.readouterr().err
        lines = err.strip().splitlines()
        assert info.value.code == 2 and len(lines) == 1, err
        assert lines[0].startswith(f"pysketch query: error: {flag[0]}: the box '") and \
            f"contradicts the sketch's own box '-5 5' (the box {h}'s map was made on)" in lines[0], err
        assert not (tmp_path / "a.json").exists()
    # the sketch's own box, given again (even with rounding), is its box
    assert main(["query", str(h), "mean", "--bounds", "-5.000000000001", "5", "--n-synthetic", "500", "-q"]) == 0
    assert main(["query", str(h), "mean", "--n-synthetic", "500", "-q"]) == 0
