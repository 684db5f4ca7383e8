"""The file commands of the command line, end to end: `pysketch sketch | merge | privatize | fit |
query | info SKETCH`, by subprocess (``python -m pysketch``) on small files, and their errors.

Tolerances. Sketches compared with the in-memory ``fm.sketch`` of the same records are equal up
to the order of the float64 additions of the same features (the files are read in blocks and
their sums added): every |feature| <= 1, so the rounding of any order of n additions is below
n * n * 2**-52 (recursive summation's bound, n - 1 additions of partial sums of at most n), which
is 2e-8 at the n = 6000 here, while one record more or less moves a sum by about 1: the
tolerance cannot hide a record read twice or missed. Counts are compared exactly.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from pysketch import Sketch
from pysketch.cli import main
from pysketch.features import make_box_map, make_feature_map
from pysketch.metrics import kmeans_plus_plus, sse
from pysketch.privacy import PrivateSketch, make_private

CENTERS = np.array([[-4.0, 0.0], [4.0, 0.0], [0.0, 5.0]])


def run(*argv, cwd=None):
    """`python -m pysketch argv...` in a child process: (exit code, stdout, stderr)."""
    done = subprocess.run([sys.executable, "-m", "pysketch", *map(str, argv)], capture_output=True, text=True,
                          cwd=cwd, timeout=300)
    return done.returncode, done.stdout, done.stderr


def order_tolerance(n):
    """The bound on the rounding of n float64 additions of features of modulus <= 1."""
    return n * n * 2.0**-52


def default_map(d, sigma=1.0, m=1000):
    """The map of `pysketch sketch --kernel-scale SIGMA -m M` (SIGMA = 1, M = 1000 unless
    given): complex, dense float32 below d = 64, Gaussian frequencies, seed 0. Without
    those options the scale is read from the records (--kernel-scale auto) and m = 10 K d."""
    from pysketch.frequencies import GaussianLaw

    return make_feature_map(d, m, "complex", law=GaussianLaw(sigma), random_state=0, dtype=np.float32)


def blobs(n, seed):
    rng = np.random.default_rng(seed)
    return CENTERS[rng.integers(0, 3, n)] + 0.5 * rng.standard_normal((n, 2))


@pytest.fixture(scope="module")
def blob_files(tmp_path_factory):
    """Three .npy files of blobs and their sketch by `pysketch sketch` with a quoted glob."""
    folder = tmp_path_factory.mktemp("blobs")
    parts = [blobs(2000, seed) for seed in range(3)]
    for i, X in enumerate(parts):
        np.save(folder / f"part{i}.npy", X)
    np.save(folder / "other.npy", np.zeros((5, 2)))  # not matched by the pattern
    code, out, err = run("sketch", "part*.npy", "-o", "s.npz", cwd=folder)
    assert code == 0, err
    return folder, parts, out, err


def test_sketch_of_npy_files_is_the_in_memory_sketch(blob_files):
    folder, parts, out, err = blob_files
    X = np.vstack(parts)
    cli = Sketch.load(folder / "s.npz")
    # the default map: m = 10 K d = 200 (K = 10), the scale read from a pilot (--kernel-scale auto)
    sigma = cli.feature_map.operator.law.sigma
    ref = default_map(2, sigma, 200).sketch(X)
    assert cli.feature_map == ref.feature_map
    assert cli.count == ref.count == 6000  # other.npy was not read
    np.testing.assert_allclose(cli.sum, ref.sum, rtol=0, atol=order_tolerance(6000))
    assert "wrote s.npz: 6000 records from 3 files, d = 2" in out
    assert "Traceback" not in err


def test_text_npz_and_parquet_files_give_the_sketch_of_the_same_records(tmp_path, capsys):
    X = blobs(1500, 7)
    ref = default_map(2).sketch(X)
    np.savetxt(tmp_path / "x.csv", X, delimiter=",", fmt="%.17g", header="a,b", comments="")  # exact decimals
    np.savetxt(tmp_path / "x.tsv", X, delimiter="\t", fmt="%.17g")
    np.savez(tmp_path / "x.npz", first=X[:1000], second=X[1000:])
    inputs = ["x.csv", "x.tsv", "x.npz"]
    try:
        import pandas as pd
        import pyarrow  # noqa: F401
    except ImportError:
        pass
    else:
        frame = pd.DataFrame({"a": X[:, 0], "label": ["u"] * len(X), "b": X[:, 1]})  # a text column is skipped
        frame.to_parquet(tmp_path / "x.parquet")
        inputs.append("x.parquet")
    for name in inputs:
        out = tmp_path / (name.replace(".", "_") + ".npz")
        assert main(["sketch", str(tmp_path / name), "-o", str(out), "--kernel-scale", "1", "-m", "1000"]) == 0
        s = Sketch.load(out)
        assert s.count == 1500, name
        np.testing.assert_allclose(s.sum, ref.sum, rtol=0, atol=order_tolerance(1500), err_msg=name)
    err = capsys.readouterr().err
    assert "x.csv: first line 1 taken as a header (a, b)" in err
    if "x.parquet" in inputs:
        assert "x.parquet: non-numeric columns skipped: label" in err


def test_columns_by_name_and_index(tmp_path):
    X = blobs(300, 3)
    full = np.column_stack([X[:, 1], np.arange(300.0), X[:, 0]])
    np.savetxt(tmp_path / "x.csv", full, delimiter=",", header="b,id,a", comments="", fmt="%.17g")
    np.save(tmp_path / "x.npy", full)
    ref = default_map(2).sketch(X)
    for name, cols, out in (("x.csv", "a,b", "c.npz"), ("x.npy", "2,0", "n.npz")):
        assert main(["sketch", str(tmp_path / name), "--columns", cols, "-o", str(tmp_path / out),
                     "--kernel-scale", "1", "-m", "1000"]) == 0
    for name in ("c.npz", "n.npz"):
        np.testing.assert_allclose(Sketch.load(tmp_path / name).sum, ref.sum, rtol=0, atol=order_tolerance(300))


def test_kernel_scale_auto_is_the_estimators_choice_on_a_pilot(tmp_path, capsys):
    from pysketch.kernel_scale import kernel_scale

    X = blobs(3000, 5)  # fewer records than the pilot's 5000: the pilot is X itself, in its order
    np.save(tmp_path / "x.npy", X)
    for extra, k, task in (([], 10, "kmeans"), (["--clusters", "3"], 3, "kmeans"), (["--task", "gmm"], 10, "gmm")):
        assert main(["sketch", str(tmp_path / "x.npy"), "-o", str(tmp_path / "a.npz"), "--force", *extra]) == 0
        fm = Sketch.load(tmp_path / "a.npz").feature_map
        want = kernel_scale(None, k, method="auto", task=task, pilot=X, random_state=np.random.default_rng([0, 2]))
        assert fm.operator.law.sigma == want and fm.m == 10 * k * 2, extra
        assert f"kernel scale auto: {want:.9g} ({task} with {k} clusters, from a pilot of 3000 of 3000" in \
            capsys.readouterr().err
    # the scale given: no pilot; auto with a box, or --task without auto: refused
    assert main(["sketch", str(tmp_path / "x.npy"), "-o", str(tmp_path / "b.npz"), "--sigma", "2", "-q"]) == 0
    assert Sketch.load(tmp_path / "b.npz").feature_map.operator.law.sigma == 2.0
    for argv, message in ((["--kernel-scale", "auto", "--bounds", "-9", "9"], "--kernel-scale auto applies without "
                           "--bounds"), (["--sigma", "2", "--task", "gmm"], "--task applies only to --kernel-scale "
                           "auto"), (["--kernel-scale", "two"], "must be 'auto' or a positive finite number"),
                          (["--clusters", "4000"], "3000 record(s) read, too few for 4000 clusters")):
        with pytest.raises(SystemExit) as exit_info:
            main(["sketch", str(tmp_path / "x.npy"), "-o", str(tmp_path / "c.npz"), *argv])
        assert exit_info.value.code == 2 and message in capsys.readouterr().err, argv


def test_kernel_scale_auto_reads_a_uniform_pilot_of_every_file(tmp_path):
    # pysketch.pilot.stream_pilot over the files' blocks, as `pysketch sketch` reads them
    from pysketch.cli import _checked_blocks
    from pysketch.files import open_data
    from pysketch.pilot import stream_pilot

    # two files, rows numbered 0..11999 in the first column: the pilot's 5000 rows are distinct,
    # in file order, from both files in proportion, and uniform over the rows
    rows = np.column_stack([np.arange(12_000.0), np.zeros(12_000)])
    np.save(tmp_path / "a.npy", rows[:4000])
    np.save(tmp_path / "b.npy", rows[4000:])
    sources = [open_data(str(tmp_path / name)) for name in ("a.npy", "b.npy")]
    P, n = stream_pilot(_checked_blocks(sources), 5000, np.random.default_rng(1))
    idx = P[:, 0]
    assert n == 12_000 and P.shape == (5000, 2) and np.all(np.diff(idx) > 0)
    # a uniform draw without replacement: mean index 5999.5, sd sqrt((N^2 - 1) / 12 (N - p) / ((N - 1) p))
    sd = np.sqrt((12_000**2 - 1) / 12 * 7000 / (11_999 * 5000))
    assert abs(idx.mean() - 5999.5) < 4 * sd  # 4 standard deviations: fails by chance < 1e-4
    assert abs(np.mean(idx < 4000) - 1 / 3) < 4 * np.sqrt(1 / 3 * 2 / 3 / 5000)
    assert not np.array_equal(idx, stream_pilot(_checked_blocks(sources), 5000, np.random.default_rng(2))[0][:, 0])
    # fewer rows than n0: all of them, in order; no block: refused
    small, n = stream_pilot(iter([rows[:3], rows[3:10]]), 5000, 0)
    assert n == 10 and np.array_equal(small, rows[:10])
    with pytest.raises(ValueError, match="no block"):
        stream_pilot(iter([]), 10, 0)


def test_kmeans_of_a_users_file_needs_no_scale(tmp_path):
    """Issue 32's example: digits (k = 10) sketched and fitted with the defaults gave 5.47 x
    scikit-learn's SSE (a kernel scale of 1). Now the scale is chosen on a pilot, the size
    is 10 k d, and the sketch is read alone by CL-OMPR (d = 64)."""
    from sklearn.datasets import load_digits

    X = load_digits().data
    np.savetxt(tmp_path / "digits.csv", X, delimiter=",", fmt="%g")
    lo = X.min(axis=0)
    np.save(tmp_path / "box.npy", np.column_stack([lo, np.maximum(X.max(axis=0), lo + 1)]))  # the data's box
    code, _, err = run("sketch", "digits.csv", "-o", "s.npz", "-q", cwd=tmp_path)
    assert code == 0, err
    code, _, err = run("fit", "s.npz", "--task", "kmeans", "-k", "10", "--bounds-file", "box.npy", "-o", "m.json",
                       "-q", cwd=tmp_path)
    assert code == 0, err
    model = json.loads((tmp_path / "m.json").read_text())
    _, base = kmeans_plus_plus(X, 10, n_init=3, random_state=0)
    assert model["decoder"] == "clompr" and model["m"] == 6400  # d = 64 > SKETCH_ALONE_MIXTURE_MAX_D
    assert sse(X, np.array(model["centers"])) / base < 1.15  # measured 1.052 (the box 0..16: 1.6)


def test_merge_is_the_sketch_of_the_union(tmp_path):
    fm = default_map(2)
    A, B = blobs(1000, 11), blobs(700, 12)
    fm.sketch(A).save(tmp_path / "a.npz")
    fm.sketch(B).save(tmp_path / "b.npz")
    code, out, err = run("merge", "a.npz", "b.npz", "-o", "ab.npz", cwd=tmp_path)
    assert code == 0, err
    merged, union = Sketch.load(tmp_path / "ab.npz"), fm.sketch(np.vstack([A, B]))
    assert merged.count == 1700 and merged.feature_map == fm
    np.testing.assert_allclose(merged.sum, union.sum, rtol=0, atol=order_tolerance(1700))
    assert "wrote ab.npz: 1700 records from 2 sketches" in out


def test_merge_refuses_other_maps_and_private_sketches(tmp_path, capsys):
    X = blobs(100, 1)
    default_map(2).sketch(X).save(tmp_path / "a.npz")
    make_feature_map(2, 1000, "complex", random_state=1, dtype=np.float32).sketch(X).save(tmp_path / "seed1.npz")
    make_private(default_map(2).sketch(X), 1.0).save(tmp_path / "p.npz")
    with pytest.raises(SystemExit) as info:
        main(["merge", str(tmp_path / "a.npz"), str(tmp_path / "seed1.npz"), "-o", str(tmp_path / "x.npz")])
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert "a.npz and" in err and "seed1.npz were made with different feature maps" in err and "--seed" in err
    with pytest.raises(SystemExit) as info:
        main(["merge", str(tmp_path / "a.npz"), str(tmp_path / "p.npz"), "-o", str(tmp_path / "x.npz")])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "p.npz: is a private sketch; private sketches are not merged" in err
    assert not (tmp_path / "x.npz").exists()


def test_privatize_writes_a_private_sketch_with_its_record(blob_files, tmp_path):
    folder, _, _, _ = blob_files
    code, out, err = run("privatize", folder / "s.npz", "-o", tmp_path / "p.npz", "--epsilon", "2", "--delta", "1e-6")
    assert code == 0, err
    clean, private = Sketch.load(folder / "s.npz"), Sketch.load(tmp_path / "p.npz")
    assert isinstance(private, PrivateSketch) and private.feature_map == clean.feature_map
    record = private.privacy
    assert record["epsilon"] == 2.0 and record["delta"] == 1e-6 and record["mechanism"] == "gaussian"
    assert record["neighbouring"] == "add_remove" and record["secure_noise"] is True
    noise = private.sum - clean.sum
    # sigma per real coordinate: the differences are noise of that scale, not zero
    assert np.std(np.concatenate([noise.real, noise.imag])) == pytest.approx(record["noise_scale_sum"], rel=0.15)
    assert "epsilon: 2" in out and "mechanism: gaussian" in out


def test_privatize_asks_quadratic_maps_for_a_bound(tmp_path, capsys):
    from pysketch.frequencies import OrthonormalBasesLaw

    fm = make_feature_map(3, 30, "quadratic", law=OrthonormalBasesLaw(), random_state=0)
    fm.sketch(np.ones((10, 3))).save(tmp_path / "q.npz")
    with pytest.raises(SystemExit) as info:
        main(["privatize", str(tmp_path / "q.npz"), "-o", str(tmp_path / "p.npz"), "--epsilon", "1"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "quadratic features need data_norm" in err and "give --data-norm R" in err
    assert main(["privatize", str(tmp_path / "q.npz"), "-o", str(tmp_path / "p.npz"), "--epsilon", "1",
                 "--bounds", "-2", "2", "-q"]) == 0
    p = Sketch.load(tmp_path / "p.npz")
    # the box's farthest corner from the centre 0: sqrt(3) * 2; L1 sensitivity R^2 ||Omega||^2 = 12 * (30 / 3)
    assert p.privacy["sensitivity_sum"] == pytest.approx(12.0 * 10.0, rel=1e-6)


def test_fit_kmeans_recovers_the_centers(blob_files, tmp_path):
    folder, _, _, _ = blob_files
    code, out, err = run("fit", folder / "s.npz", "--task", "kmeans", "--k", "3", "--bounds", "-8", "8",
                         "-o", tmp_path / "model.json", "--plot", tmp_path / "model.png")
    assert code == 0, err
    model = json.loads((tmp_path / "model.json").read_text())
    C, w = np.array(model["centers"]), np.array(model["weights"])
    # each cluster has about 2000 records of spread 0.5: its mean is within ~0.01 of its center;
    # 0.15 (under a third of the spread) separates a recovered center from a wrong one
    dist = np.linalg.norm(C[:, None, :] - CENTERS[None, :, :], axis=2)
    assert sorted(dist.argmin(axis=1)) == [0, 1, 2] and dist.min(axis=1).max() < 0.15
    np.testing.assert_allclose(np.sort(w), 1 / 3, atol=0.05)
    assert model["task"] == "kmeans" and model["n_records"] == 6000 and model["privacy"] is None
    assert model["bounds"] == {"lower": [-8.0, -8.0], "upper": [8.0, 8.0]}
    assert "center  weight" in out
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "matplotlib is not installed: no plot" in out and not (tmp_path / "model.png").exists()
    else:
        assert (tmp_path / "model.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_grid_sketch_privatize_and_fit_kmeans(blob_files, tmp_path):
    """--map grid: the joint histogram on the box; privatized and decoded by the grid decoder
    (--decoder auto); a Fourier decoder on it is refused by name; the model's JSON has no NaN."""
    folder, _, _, _ = blob_files
    code, out, err = run("sketch", "part*.npy", "-o", tmp_path / "g.npz", "--map", "grid", "--bounds", "-8", "8",
                         "--bins", "40", cwd=folder)
    assert code == 0, err
    sk = Sketch.load(tmp_path / "g.npz")
    assert sk.feature_map.kind == "grid" and sk.feature_map.m == 1600 and sk.count == 6000
    assert run("privatize", tmp_path / "g.npz", "-o", tmp_path / "p.npz", "--epsilon", "1")[0] == 0
    code, out, err = run("fit", tmp_path / "p.npz", "--task", "kmeans", "--k", "3", "--bounds", "-8", "8",
                         "-o", tmp_path / "m.json")
    assert code == 0, err
    text = (tmp_path / "m.json").read_text()
    assert "NaN" not in text
    model = json.loads(text)
    assert model["decoder"] == "grid" and model["kernel_scale"] is None and model["residual"] is None
    C = np.array(model["centers"])
    dist = np.linalg.norm(C[:, None, :] - CENTERS[None, :, :], axis=2)
    # cells of width 0.4 and Laplace noise of scale about 1 on counts of about 2000 per cluster
    assert sorted(dist.argmin(axis=1)) == [0, 1, 2] and dist.min(axis=1).max() < 0.15
    code, out, err = run("fit", tmp_path / "p.npz", "--task", "kmeans", "--k", "3", "--bounds", "-8", "8",
                         "--decoder", "clompr")
    assert code == 2 and "decoder 'clompr' cannot read a sketch of FeatureMap(kind='grid'" in err
    assert "Traceback" not in err


def test_fit_pca_from_a_quadratic_sketch_of_a_file(tmp_path):
    rng = np.random.default_rng(5)
    Q = np.linalg.qr(rng.standard_normal((6, 6)))[0]
    X = (rng.standard_normal((5000, 6)) * [4.0, 2.0, 0.5, 0.5, 0.5, 0.5]) @ Q.T
    np.save(tmp_path / "x.npy", X)
    code, _, err = run("sketch", "x.npy", "--map", "quadratic", "--centre", "0", "-o", "q.npz", "-q", cwd=tmp_path)
    assert code == 0, err
    code, out, err = run("fit", "q.npz", "--task", "pca", "--k", "2", "-o", "pca.json", cwd=tmp_path)
    assert code == 0, err
    model = json.loads((tmp_path / "pca.json").read_text())
    # the two leading directions (variances 16 and 4 against 0.25): cosines near 1
    cosines = np.linalg.svd(np.array(model["components"]) @ Q[:, :2], compute_uv=False)
    assert cosines.min() > 0.99
    assert model["explained_variance"][0] == pytest.approx(16.0, rel=0.1)


def _main_in(tmp_path, monkeypatch, capsys):
    """`pysketch argv...` in this process, in tmp_path: (exit code, stdout, stderr)."""
    monkeypatch.chdir(tmp_path)

    def call(*argv):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:
            code = exc.code
        out, err = capsys.readouterr()
        return code, out, err
    return call


def test_map_pca_centres_by_itself_and_privatize_takes_the_offset_of_its_radius(tmp_path, monkeypatch, capsys):
    # --map pca on 6 columns: the whole covariance with an offset, so that fit reads the mean
    # and the covariance about it from the one sketch (exact PCA of a clean sketch, the data's
    # mean far from 0); privatize rescales the offset to half the release's radius
    run_here = _main_in(tmp_path, monkeypatch, capsys)
    rng = np.random.default_rng(7)
    Q = np.linalg.qr(rng.standard_normal((6, 6)))[0]
    X = (rng.standard_normal((4000, 6)) * [4.0, 2.0, 0.5, 0.5, 0.5, 0.5]) @ Q.T + 10.0
    np.savetxt(tmp_path / "x.csv", X, delimiter=",")
    code, _, err = run_here("sketch", "x.csv", "--map", "pca", "-o", "s.npz")
    assert code == 0, err
    assert "--map pca: second_moment" in err and "centred by itself" in err
    sketch = Sketch.load(tmp_path / "s.npz")
    assert sketch.feature_map.kind == "second_moment" and sketch.feature_map.offset == 1.0
    code, out, err = run_here("fit", "s.npz", "--task", "pca", "--k", "2", "-o", "pca.json")
    assert code == 0, err
    model = json.loads((tmp_path / "pca.json").read_text())
    np.testing.assert_allclose(model["mean"], X.mean(axis=0), rtol=1e-10)
    w, V = np.linalg.eigh(np.cov(X.T, bias=True))
    np.testing.assert_allclose(model["explained_variance"], w[::-1][:2], rtol=1e-8)
    np.testing.assert_allclose(np.abs(np.array(model["components"]) @ V[:, ::-1][:, :2]), np.eye(2), atol=1e-8)
    R = float(np.linalg.norm(X, axis=1).max()) * 1.01
    code, out, err = run_here("privatize", "s.npz", "-o", "p.npz", "--epsilon", "1", "--delta", "1e-6",
                              "--data-norm", R)
    assert code == 0, err
    private = Sketch.load(tmp_path / "p.npz")
    assert private.feature_map.offset == pytest.approx(R / 2, rel=1e-15)
    assert private.privacy.sensitivity_sum == pytest.approx(R * R * 1.25, rel=1e-12)
    code, out, err = run_here("fit", "p.npz", "--task", "pca", "--k", "2", "-o", "p.json")
    assert code == 0, err
    # pure epsilon: without --k the covariance is released, with a note; with --k 1 (below
    # d / 4) CompressivePCA's rule releases the compressive sketch about a private mean
    code, out, err = run_here("privatize", "s.npz", "-o", "c.npz", "--epsilon", "1", "--data-norm", R)
    assert code == 0 and "pass --k K to release by its rule" in err, err
    assert Sketch.load(tmp_path / "c.npz").feature_map.kind == "second_moment"
    code, out, err = run_here("privatize", "s.npz", "-o", "q.npz", "--epsilon", "1", "--data-norm", R, "--k", "1")
    assert code == 0, err
    q = Sketch.load(tmp_path / "q.npz")
    assert q.feature_map.kind == "quadratic" and q.privacy.epsilon_pilot == pytest.approx(0.2)
    code, out, err = run_here("fit", "q.npz", "--task", "pca", "--k", "1", "-o", "q.json")
    assert code == 0, err
    code, out, err = run_here("privatize", "p.npz", "-o", "x.npz", "--epsilon", "1", "--k", "1")
    assert code == 2 and "already private" in err


def test_quadratic_without_a_centre_is_noted_and_pca_of_many_columns_needs_one(tmp_path, monkeypatch, capsys):
    run_here = _main_in(tmp_path, monkeypatch, capsys)
    X = np.random.default_rng(0).standard_normal((50, 3)) + 5.0
    np.save(tmp_path / "x.npy", X)
    code, _, err = run_here("sketch", "x.npy", "--map", "quadratic", "-o", "q.npz")
    assert code == 0 and "without --centre" in err and "first component will point at the records' mean" in err
    # 4800 columns: (d + 1)^2 * 48 bytes > 1 GiB, so --map pca is the quadratic sketch, which needs --centre
    np.save(tmp_path / "wide.npy", np.zeros((2, 4800)))
    code, _, err = run_here("sketch", "wide.npy", "--map", "pca", "-o", "w.npz")
    assert code == 2 and "--map pca: the covariance of 4800 columns does not fit 1024 MiB" in err
    assert "Traceback" not in err


def test_query_mean_and_box_from_a_histogram_sketch(tmp_path, capsys):
    rng = np.random.default_rng(9)
    X = rng.uniform(size=(20000, 3)) ** np.array([1.0, 2.0, 0.5])
    np.save(tmp_path / "u.npy", X)
    code, _, err = run("sketch", "u.npy", "--map", "hist", "--bounds", "0", "1", "-o", "h.npz", "-q", cwd=tmp_path)
    assert code == 0, err
    code, out, err = run("query", "h.npz", "mean", "-o", "mean.json", cwd=tmp_path)
    assert code == 0, err
    answer = json.loads((tmp_path / "mean.json").read_text())
    # a clean HIST sketch knows each column's counts in 100 bins: its mean is off by at most half a
    # bin (0.005); 10^5 synthetic points (about 1000 per bin) add about 1e-4
    np.testing.assert_allclose(answer["result"], X.mean(axis=0), atol=0.005 + 0.001)
    assert answer["query"] == "mean" and answer["n_records"] == 20000 and "x0: 0.5" in out
    main(["query", str(tmp_path / "h.npz"), "box", "--lower", "0.2,,", "--upper", ",0.5,"])
    frac = float(capsys.readouterr().out.strip().splitlines()[-1].split(": ")[1].split()[0])
    truth = np.mean((X[:, 0] >= 0.2) & (X[:, 1] <= 0.5))
    assert frac == pytest.approx(truth, abs=0.01)  # two box edges on bin edges: 2 bins' sampling at most


def test_info_prints_what_a_sketch_file_holds(blob_files, tmp_path, capsys):
    folder, _, _, _ = blob_files
    code, out, err = run("info", folder / "s.npz")
    assert code == 0, err
    for line in ("format: pysketch.sketch, version 1 (clean sketch)", "checksum: OK", "count: 6000",
                 "map: complex, d = 2, m = 200", "operator: dense, float32; law: gaussian, sigma = ",
                 "subsampling: none", "privacy: none"):
        assert line in out, line
    make_private(Sketch.load(folder / "s.npz"), 1.0, neighbouring="replace").save(tmp_path / "p.npz")
    assert main(["info", str(tmp_path / "p.npz")]) == 0
    out = capsys.readouterr().out
    assert "(private sketch)" in out and "epsilon: 1" in out and "neighbouring: replace" in out
    # a map whose own fields include d and m (second_moment) names each once
    np.save(tmp_path / "x.npy", np.ones((10, 3)))
    code, out, err = run("sketch", "x.npy", "--map", "second_moment", "-o", "sm.npz", cwd=tmp_path)
    assert code == 0, err
    code, out, err = run("info", "sm.npz", cwd=tmp_path)
    line = next(v for v in out.splitlines() if v.startswith("map: "))
    assert code == 0 and line.startswith("map: second_moment, d = 3, m = 10") and line.count("d = ") == 1, line


def test_bad_files_exit_2_without_a_traceback(tmp_path):
    np.save(tmp_path / "x.npy", np.ones((10, 2)))
    default_map(2).sketch(np.ones((10, 2))).save(tmp_path / "s.npz")
    data = bytearray((tmp_path / "s.npz").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (tmp_path / "bad.npz").write_bytes(bytes(data))
    for argv, message in ((["info", "bad.npz"], "pysketch info: error: bad.npz:"),
                          (["sketch", "x.npy", "missing.csv", "-o", "o.npz"], "missing.csv: no such file")):
        code, out, err = run(*argv, cwd=tmp_path)
        assert code == 2 and message in err and "Traceback" not in err, err
    assert not (tmp_path / "o.npz").exists()


def _make_inputs(folder):
    np.save(folder / "x.npy", blobs(50, 0))
    np.save(folder / "x3.npy", np.ones((5, 3)))
    np.save(folder / "v.npy", np.ones(5))
    (folder / "x.dat").write_text("1 2\n")
    (folder / "ragged.csv").write_text("1,2\n3,4,5\n")
    (folder / "nan.csv").write_text("1,2\n3,nan\n")
    default_map(2).sketch(blobs(50, 0)).save(folder / "s.npz")
    (folder / "trunc.npz").write_bytes((folder / "s.npz").read_bytes()[:200])
    (folder / "exists.npz").write_bytes(b"keep")


@pytest.mark.parametrize("argv, message", [
    (["sketch", "missing.npy", "-o", "o.npz"], "missing.npy: no such file"),
    (["sketch", "nothing*.npy", "-o", "o.npz"], "nothing*.npy: no file matches this pattern"),
    (["sketch", "x.dat", "-o", "o.npz"], "x.dat: unknown kind of data file"),
    (["sketch", "x.npy", "-o", "o.txt"], "-o o.txt: must name a .npz file"),
    (["sketch", "x.npy", "-o", "exists.npz"], "-o exists.npz: the file exists; pass --force to overwrite it"),
    (["sketch", "x.npy", "x3.npy", "-o", "o.npz"], "x3.npy: has 3 columns, but x.npy has 2"),
    (["sketch", "v.npy", "-o", "o.npz"], "v.npy: must hold a 2-D array of records"),
    (["sketch", "ragged.csv", "-o", "o.npz"], "ragged.csv, line 2: 3 fields where the file has 2 columns"),
    (["sketch", "nan.csv", "-o", "o.npz"], "nan.csv: record 1 (counting from 0) contains NaN or infinity"),
    (["sketch", "x.npy", "--sketch-size", "ten", "-o", "o.npz"], "argument --sketch-size/-m: must be a positive"),
    (["sketch", "x.npy", "--map", "hist", "-o", "o.npz"], "--map hist needs --bounds LO HI"),
    (["sketch", "x.npy", "--map", "hist", "--bounds", "0,0,0", "1", "-o", "o.npz"],
     "--bounds: 3 numbers given but the records have 2 columns"),
    (["sketch", "x.npy", "--map", "hist", "--bounds", "1", "0", "-o", "o.npz"],
     "--bounds: every upper bound must exceed its lower bound"),
    (["sketch", "x.npy", "--bins", "5", "-o", "o.npz"], "--bins applies only to box maps"),
    (["sketch", "x.npy", "--columns", "4", "-o", "o.npz"], "x.npy: column 4 is out of range"),
    (["sketch", "x.npy", "--map", "quadratic", "--sketch-size", "7", "-o", "o.npz"],
     "--sketch-size 7: a union of orthonormal bases needs a multiple of 2"),
    (["sketch", "x.npy", "--map", "second_moment", "--sketch-size", "7", "-o", "o.npz"],
     "--sketch-size does not apply to --map second_moment (it has no frequencies"),
    (["info", "trunc.npz"], "trunc.npz: not a readable pysketch sketch file"),
    (["info", "x.npy"], "x.npy: a sketch file is a .npz file"),
    (["info", "s.npz", "--n", "64"], "--n, --rows and --repeat time the transform"),
    (["privatize", "s.npz", "-o", "p.npz", "--epsilon", "0"], "argument --epsilon: must be a positive finite number"),
    (["privatize", "s.npz", "-o", "p.npz", "--epsilon", "1", "--delta", "1"], "argument --delta: must be a number"),
    (["privatize", "s.npz", "-o", "exists.npz", "--epsilon", "1"], "-o exists.npz: the file exists"),
    (["privatize", "s.npz", "-o", "p.npz", "--epsilon", "1", "--k", "2"],
     "--k applies to self-centred second_moment sketches"),
    (["fit", "s.npz", "--task", "kmeans", "--k", "3"], "--bounds LO HI is required for --task kmeans"),
    (["fit", "s.npz", "--task", "pca", "--k", "2"], "subspace decoders need quadratic features"),
    (["fit", "s.npz", "--task", "kmeans", "--k", "0", "--bounds", "-1", "1"], "argument --k/-k: must be a positive"),
    (["query", "s.npz", "mean"], "--bounds LO HI is required: M2M draws its synthetic points"),
    (["query", "s.npz", "--bounds", "-5", "5", "cdf", "--column", "2", "--at", "0"], "--column 2 is out of range"),
    (["merge", "s.npz", "missing.npz", "-o", "m.npz"], "missing.npz: no such file"),
])
def test_bad_arguments_exit_2_with_a_message_naming_them(argv, message, tmp_path, monkeypatch, capsys):
    _make_inputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"pysketch {argv[0]}: error:" in err and message in err and "Traceback" not in err, err
    assert (tmp_path / "exists.npz").read_bytes() == b"keep"
    assert not (tmp_path / "o.npz").exists() and not (tmp_path / "p.npz").exists()


def test_force_overwrites(tmp_path, monkeypatch):
    _make_inputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["sketch", "x.npy", "-o", "exists.npz", "--force", "-q"]) == 0
    assert Sketch.load("exists.npz").count == 50
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat("exists.npz").st_mode & 0o777 == 0o666 & ~umask  # not the temporary file's 0600
    assert [p for p in os.listdir(tmp_path) if p.startswith(".pysketch-")] == []  # no temporary file left


def test_box_maps_and_the_map_options(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    X = np.random.default_rng(0).uniform(-1, 1, size=(400, 2))
    np.save("x.npy", X)
    with open("box.json", "w") as f:
        json.dump({"lower": [-1, -1], "upper": [1, 1]}, f)
    assert main(["sketch", "x.npy", "--map", "race", "--bounds-file", "box.json", "--hashes", "20", "--buckets", "10",
                 "--seed", "4", "-o", "r.npz", "-q"]) == 0
    ref = make_box_map("race", [-1, -1], [1, 1], n_hashes=20, n_buckets=10, random_state=4).sketch(X)
    s = Sketch.load("r.npz")
    assert s.feature_map == ref.feature_map and np.array_equal(s.sum, ref.sum)  # integer counts: exact
    assert main(["sketch", "x.npy", "--map", "real", "-m", "64", "--sigma", "0.5", "--operator", "dense",
                 "--dtype", "float64", "--seed", "3", "-o", "f.npz", "-q"]) == 0
    ref = make_feature_map(2, 64, "real", sigma=0.5, operator="dense", random_state=3).sketch(X)
    np.testing.assert_allclose(Sketch.load("f.npz").sum, ref.sum, rtol=0, atol=order_tolerance(400))


def test_parquet_without_pyarrow_says_so(tmp_path, monkeypatch, capsys):
    (tmp_path / "x.parquet").write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now raises ImportError
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(SystemExit) as info:
        main(["sketch", str(tmp_path / "x.parquet"), "-o", str(tmp_path / "o.npz")])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "x.parquet: reading Parquet files needs pyarrow" in err
