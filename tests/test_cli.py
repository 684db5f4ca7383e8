"""The command line: `pysketch`, `pysketch info`, `python -m pysketch`."""

import re
import subprocess
import sys

import numpy as np
import pytest

import pysketch
from pysketch.cli import main


def test_info_prints_version_simd_threads_and_a_timing(capsys):
    assert main(["info", "--n", "64", "--rows", "8", "--repeat", "3"]) == 0
    out = capsys.readouterr().out
    assert f"pysketch {pysketch.__version__}" in out
    assert f"SIMD level: {pysketch.simd_level()} (max {pysketch.max_simd_level()}" in out
    assert f"threads: {pysketch.get_num_threads()}" in out
    assert "self-check: fwht matches its definition" in out
    assert re.search(r"^fwht float32 n=64: [0-9.]+(e[-+][0-9]+)? us per row \(batch of 8 rows, best of 3\)$", out, re.M)


def test_no_command_is_info(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "fwht float32 n=1024:" in out and "batch of 4096 rows, best of 20" in out


@pytest.mark.parametrize(
    "argv",
    [["info", "--n", "1000"], ["info", "--rows", "0"], ["demo", "-k", "0"], ["demo", "--n", "ten"],
     ["demo", "--bogus"], ["--bogus"]],
)
def test_bad_arguments_exit_with_usage_error(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert "usage: pysketch" in capsys.readouterr().err


def test_python_dash_m():
    done = subprocess.run([sys.executable, "-m", "pysketch", "--version"], capture_output=True, text=True)
    assert done.returncode == 0
    assert done.stdout.strip() == f"pysketch {pysketch.__version__}"
    done = subprocess.run(
        [sys.executable, "-m", "pysketch", "info", "--rows", "4", "--repeat", "1"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "fwht float32 n=1024:" in done.stdout


# ---------------------------------------------------------------------------- pysketch demo


def _table_rows(out):
    """{method: (sketch s, decode s, RSE)} from the demo's table."""
    rows = {}
    for line in out.splitlines():
        m = re.match(r"^(.{34}) +([0-9.]+) +([0-9.]+) +([0-9.]+)  ", line)
        if m:
            rows[m.group(1).strip()] = tuple(float(g) for g in m.groups()[1:])
    return rows


def test_demo_on_generated_data_prints_the_table_and_draws_the_plot(tmp_path, capsys):
    png = tmp_path / "demo.png"
    assert main(["demo", "--n", "30000", "--seed", "1", "--output", str(png)]) == 0
    out = capsys.readouterr().out
    rows = _table_rows(out)
    ours = rows["pysketch (sketch + CL-OMPR)"]
    assert ours[2] <= 1.10  # RSE of the learned centers (k = d = 10, well separated)
    assert rows["pysketch.metrics.kmeans_plus_plus"][2] == 1.0
    assert "m = 1000 frequencies, dense operator" in out
    try:
        import sklearn  # noqa: F401
    except ImportError:
        assert "scikit-learn is not installed" in out
    else:
        assert "scikit-learn KMeans(n_init=3)" in rows
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "matplotlib is not installed: no plot" in out
    else:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"plot written to {png}" in out


def test_demo_epsilon_prints_the_private_result_beside_the_clean_one(capsys):
    assert main(["demo", "--n", "30000", "--seed", "2", "--output", "none", "--no-baseline",
                 "--epsilon", "10"]) == 0
    rows = _table_rows(capsys.readouterr().out)
    assert rows["pysketch (sketch + CL-OMPR)"][2] <= 1.10
    assert rows["pysketch private (eps=10, delta=0)"][2] <= 1.20


def test_demo_on_a_users_csv_and_npy_file(tmp_path, capsys):
    from pysketch.datasets import make_blobs_gaussian_centers

    X = make_blobs_gaussian_centers(4000, 3, 4, random_state=2)[0]
    np.savetxt(tmp_path / "x.csv", X, delimiter=",")
    np.save(tmp_path / "x.npy", X.astype(np.float32))
    for name in ("x.csv", "x.npy"):
        argv = ["demo", "--data", str(tmp_path / name), "-k", "3", "--sketch-size", "150", "--output", "none",
                "--no-baseline"]
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert "n = 4000, d = 4" in out and "m = 150 frequencies" in out
        assert _table_rows(out)["pysketch (sketch + CL-OMPR)"][2] <= 1.10
        assert "scikit-learn KMeans" not in out and "plot written" not in out


@pytest.mark.parametrize(
    "make, argv_tail, message",
    [
        (None, ["--data", "missing.npy"], "--data: {}: no such file"),
        (lambda p: p.write_text("1 2 3\n"), ["--data", "x.dat"], "--data: {}: unknown kind of data file"),
        (lambda p: np.save(p, np.zeros(5)), ["--data", "x.npy"], "--data: {}: must hold a 2-D array of records"),
        (lambda p: np.savetxt(p, np.eye(4), delimiter=","), ["--data", "x.csv", "-k", "5"],
         "-k 5 is larger than the number of records 4"),
        (lambda p: p.write_text("1,2\nnan,3\n4,5\n"), ["--data", "x.csv", "-k", "2"],
         "--data: {}: record 1 (counting from 0) contains NaN or infinity"),
        (lambda p: p.write_text("a,b\n"), ["--data", "x.csv"], "--data: {}: holds no records (only the header"),
        (lambda p: p.write_text("1 2 3\n"), ["--data", "x.txt"],
         "--data: {} holds 1 record; the demo needs at least 2"),
    ],
)
def test_demo_bad_files_exit_with_a_message_and_no_traceback(tmp_path, make, argv_tail, message, capsys):
    argv_tail = list(argv_tail)
    if make is not None:
        make(tmp_path / argv_tail[1])
    argv_tail[1] = str(tmp_path / argv_tail[1])
    message = message.format(argv_tail[1])
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", *argv_tail, "--output", "none", "--no-baseline"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "pysketch demo: error:" in err and message in err and "Traceback" not in err, err


def test_demo_reads_data_as_sketch_does(tmp_path, capsys):
    """--data is read by pysketch.files, as `pysketch sketch` reads its DATA: a header row of
    names is skipped (the demo failed on it), and every kind of data file is read."""
    from pysketch.datasets import make_blobs_gaussian_centers

    X = make_blobs_gaussian_centers(600, 2, 3, random_state=4)[0]
    np.savetxt(tmp_path / "h.csv", X, delimiter=",", header="a,b,c", comments="", fmt="%.17g")
    np.savez_compressed(tmp_path / "x.npz", x=X)
    for name in ("h.csv", "x.npz"):
        assert main(["demo", "--data", str(tmp_path / name), "-k", "2", "--sketch-size", "60", "--output", "none",
                     "--no-baseline"]) == 0
        captured = capsys.readouterr()
        assert "n = 600, d = 3" in captured.out, name
    assert main(["sketch", str(tmp_path / "h.csv"), "-o", str(tmp_path / "s.npz"), "--kernel-scale", "1", "-q"]) == 0
    assert pysketch.Sketch.load(tmp_path / "s.npz").count == 600  # the same records as the demo's


def test_demo_console_script_runs():
    done = subprocess.run(
        [sys.executable, "-m", "pysketch", "demo", "--n", "5000", "-k", "4", "--d", "3", "--output", "none",
         "--no-baseline"],
        capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "pysketch (sketch + CL-OMPR)" in done.stdout
