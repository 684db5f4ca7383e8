"""The ``pysketch`` command line.

``pysketch`` (or ``pysketch info``, or ``python -m pysketch``) prints the version, the
instruction set and thread count the compiled core uses, checks the Walsh-Hadamard
transform against its definition and times it.

``pysketch demo`` runs compressive k-means end to end: on generated data (by default
10^6 records, d = 10, k = 10) or a user's data file (read as ``pysketch sketch`` reads
one: .npy, .npz, CSV with or without a header row, Parquet...), it sketches the data in one
pass (with a progress bar), learns the centers from the sketch alone, and prints the
sketch time, decode time and relative SSE, with scikit-learn's KMeans alongside when it
is installed; with matplotlib it also draws the data's two first principal directions
with the true and learned centers.

Sketch files (the format of ``Sketch.save``):

- ``pysketch sketch DATA... -o S.npz``: the sketch of the records of every file (.npy,
  .npz, .csv / .tsv / .txt, possibly gzipped, Parquet with pyarrow; globs are expanded
  here too), read a block at a time (pysketch.files) through one `SketchAccumulator`, in
  memory that does not grow with the number or size of the files. The map is public: the
  same options and --seed give the same map, so that sketches made apart can be merged.
- ``pysketch merge A.npz B.npz ... -o S.npz``: the sketch of the union (their sum).
- ``pysketch privatize S.npz -o P.npz --epsilon E``: one differentially private release
  through `pysketch.privacy.make_private` (noise from the OS, never from a public seed).
- ``pysketch fit S.npz --task kmeans|gmm|pca --k K``: a model from the sketch alone.
- ``pysketch query S.npz [--bounds LO HI] QUERY``: M2M statistics (means, moments,
  covariance, CDF, histogram, box counts) from the sketch alone.
- ``pysketch info S.npz``: what a sketch file holds.

The JSON outputs of ``fit`` and ``query`` (``-o X.json``) start with ``"format"``
(``"pysketch.fit_result"``, ``"pysketch.query_result"``) and ``"version": 1`` and end with
``"checksum"`` (the SHA-256 of the rest, pysketch._archive.write_json); ``--bounds-file``
reads the box of such a file back, checked.

Bad arguments, missing or damaged files exit with status 2 and a message
``pysketch COMMAND: error: ...`` naming the argument or the file, never a traceback; the
output file is then neither written nor changed. A standard output closed by its reader
(``pysketch info S.npz | head -2``) ends the command quietly with status 141 (128 + SIGPIPE,
as a Unix tool killed by that signal).
"""

import argparse
import inspect
import json
import math
import os
import platform
import re
import sys
import time
import warnings

import numpy as np

from . import __version__
from ._archive import read_json, replace_when_done, write_json
from .hadamard import fwht
from .runtime import get_num_threads, max_simd_level, simd_level

__all__ = ["main"]

#: The default number of frequencies of `pysketch sketch` for maps other than Fourier ones
#: (10 k d for k = d = 10); Fourier maps have the estimators' 10 K d, K = --clusters.
DEFAULT_SKETCH_SIZE = 1000
#: Fourier maps: m = SKETCH_FACTOR * K * d by default (CompressiveKMeans' sketch_size).
SKETCH_FACTOR = 10
#: The default kernel scale of box maps (--bounds; units of the box's side). Fourier maps
#: without --bounds default to --kernel-scale auto (read from a pilot of the records).
DEFAULT_KERNEL_SCALE = 1.0
#: --kernel-scale auto: the records of the pilot (a uniform sample of every file) and the
#: number of clusters the scale is chosen for (--clusters), as the estimators' defaults.
PILOT_SIZE = 5000
DEFAULT_CLUSTERS = 10
#: The default public seed of the map.
DEFAULT_SEED = 0
#: The formats of the JSON outputs of `pysketch fit` and `pysketch query`, and their version.
FIT_FORMAT = "pysketch.fit_result"
QUERY_FORMAT = "pysketch.query_result"
JSON_VERSION = 1
#: Notes (header rows taken, columns skipped...) printed before "... and N more".
MAX_NOTES = 5
#: The exit status when the reader of standard output has gone: 128 + SIGPIPE (13), the
#: status a shell shows for a process killed by that signal.
EXIT_CLOSED_PIPE = 128 + 13
#: Column names listed in a message before "...".
MAX_NAMES = 8

# negative numbers, infinities and comma-separated lists of them are values, not options
_NEGATIVE_VALUE = re.compile(r"^-(?:\d|\.\d|inf|nan)", re.IGNORECASE)


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that reads '-5', '-inf' and '-1,2,-3' as values."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NEGATIVE_VALUE


class _CommandError(Exception):
    """A bad argument or input found by a command: exit 2 with the message."""


def main(argv=None):
    """Run the command line with `argv` (default: ``sys.argv[1:]``); returns the exit code.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after ``pysketch``: a command (``info``, ``demo``, ``sketch``,
        ``merge``, ``privatize``, ``fit``, ``query``) and its options (see the module
        docstring and ``pysketch COMMAND --help``). None (the default) reads
        ``sys.argv[1:]``; no command at all is ``info``.

    Returns
    -------
    int
        The exit status: 0 on success, 141 (128 + SIGPIPE) when the reader of standard
        output has gone.

    Raises
    ------
    SystemExit
        As argparse and the command line end: with status 2 and a message
        ``pysketch COMMAND: error: ...`` on standard error for bad arguments and for
        missing, damaged or unreadable files (the output file is then neither written nor
        changed); 130 when interrupted; 0 after ``--help`` and ``--version``.

    Examples
    --------
    >>> import contextlib, io, os, tempfile
    >>> import numpy as np
    >>> from pysketch.cli import main
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     data, sketch = os.path.join(folder, "x.npy"), os.path.join(folder, "s.npz")
    ...     np.save(data, np.zeros((100, 3)))
    ...     with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()):
    ...         status = main(["sketch", data, "-o", sketch, "--kernel-scale", "1"])
    >>> status, "100 records from 1 file, d = 3" in out.getvalue()
    (0, True)
    """
    try:
        code = _main(argv)
        sys.stdout.flush()  # an output that fit in the buffer meets a closed pipe here
    except BrokenPipeError:
        return _closed_pipe()
    except SystemExit:  # argparse's --help and --version print, then exit
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            return _closed_pipe()
        raise
    return code


#: The library's names of the sizes the command line passes on, and the options they come from:
#: a refusal of the library (pysketch._checks.check_size) is prefixed with the option.
SIZE_FLAGS = {"m": "--sketch-size", "n_frequencies": "--sketch-size", "sketch_size": "--sketch-size",
              "n_bins": "--bins", "bins": "--bins", "n_hashes": "--hashes", "n_buckets": "--buckets",
              "n_synthetic": "--n-synthetic", "n_init": "--n-init", "n_clusters": "--k", "n_components": "--k"}


def _with_flag(exc):
    """The message of exc, prefixed with the command-line option when it is a ValueError
    about one of the library's sizes (``m = 10^12 would need ...`` -> ``--sketch-size: m = ...``)."""
    text = str(exc)
    if isinstance(exc, (ValueError, _CommandError)):  # the refusal may follow the name of the file it was read from
        size = re.search(r"(?:^|: )([a-z_]+) (?:= \d|must be an int)", text)
        if size and size.group(1) in SIZE_FLAGS:
            return f"{SIZE_FLAGS[size.group(1)]}: {text}"
    return text


def _closed_pipe():
    """The reader of standard output has gone (``pysketch info S.npz | head -2``): end quietly,
    as a Unix tool that SIGPIPE ends. Standard output is pointed at the null device, so that
    the interpreter's flush at exit does not meet the closed pipe again."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, sys.stdout.fileno())
        finally:
            os.close(null)
    except (OSError, ValueError, AttributeError):  # a standard output without a descriptor
        pass
    return EXIT_CLOSED_PIPE


def _main(argv):
    parser = _build_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # plain `pysketch`: the same as `pysketch info` with its defaults
        args = parser.parse_args(["info"])
    if args.command == "demo":
        from .demo import run_demo

        try:
            return run_demo(args)
        except BrokenPipeError:
            raise
        except (OSError, ValueError) as exc:  # a bad file or bad data: say so, no traceback
            parser.exit(2, f"pysketch demo: error: {_with_flag(exc)}\n")
    if args.command == "info" and args.sketch is None:
        return _info(args.n or 1024, args.rows or 4096, args.repeat or 20)
    return _run(parser, args)


def _run(parser, args):
    """Run a file command: its errors exit 2 with a message, its warnings are printed
    as ``pysketch COMMAND: warning: ...``."""
    from .files import DataFileError
    from .sketch import SketchFileError

    handler = _COMMANDS[args.command]
    caught = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            code = handler(args)
    except KeyboardInterrupt:
        _print_warnings(args.command, caught)
        parser.exit(130, f"pysketch {args.command}: interrupted\n")
    except BrokenPipeError:  # the reader of standard output has gone: see main
        raise
    except (_CommandError, DataFileError, SketchFileError, OSError, ValueError) as exc:
        _print_warnings(args.command, caught)
        parser.exit(2, f"pysketch {args.command}: error: {_with_flag(exc)}\n")
    _print_warnings(args.command, caught)
    return code


def _print_warnings(command, caught):
    seen = set()
    for w in caught or ():
        text = str(w.message)
        if text not in seen:
            seen.add(text)
            print(f"pysketch {command}: warning: {text}", file=sys.stderr)


# ---------------------------------------------------------------------------- the parser


def _build_parser():
    from .features import FEATURE_MAPS

    parser = _Parser(
        prog="pysketch",
        description="pysketch: private compressive learning from one short sketch of a dataset.",
    )
    parser.add_argument("--version", action="version", version=f"pysketch {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    info = commands.add_parser(
        "info",
        help="without a file: the version, SIMD level and threads, the FWHT checked and timed (the default); "
             "with a sketch file: what it holds",
        description="Without SKETCH: print the version, the instruction set and thread count in use, check the fast "
        "Walsh-Hadamard transform against its definition and time it. With SKETCH: print what the sketch file "
        "holds (format, version, map, operator, count, subsampling, privacy record) after checking its checksum.",
    )
    info.add_argument("sketch", nargs="?", metavar="SKETCH", help="a sketch file (.npz) to describe")
    info.add_argument("--n", type=_power_of_two, default=None, help="transform length to time (default 1024)")
    info.add_argument("--rows", type=_positive, default=None, help="rows in the timed batch (default 4096)")
    info.add_argument("--repeat", type=_positive, default=None, help="timed trials, best is shown (default 20)")

    demo = commands.add_parser(
        "demo",
        help="compressive k-means end to end on generated data or your file",
        description="Sketch a dataset in one pass, learn k-means centers from the sketch alone, and compare "
        "with k-means on the full data. Without --data, 10^6 records are generated: k unit-variance "
        "clusters with centers drawn N(0, 4 I_d).",
    )
    demo.add_argument("--data", metavar="FILE",
                      help="a data file of records (rows) to cluster, read as pysketch sketch reads it (.npy, .npz, "
                           ".csv / .tsv / .txt, optionally .gz, with or without a header row, .parquet)")
    demo.add_argument("-k", "--clusters", type=_positive, default=10, help="number of clusters (default 10)")
    demo.add_argument("--n", type=_positive, default=10**6, help="records to generate without --data (default 10^6)")
    demo.add_argument("--d", type=_positive, default=10, help="dimension to generate without --data (default 10)")
    demo.add_argument("--sketch-size", type=_positive, default=None,
                      help="number of frequencies m (default 10 * k * d)")
    demo.add_argument("--output", metavar="PNG", default="pysketch_demo.png",
                      help="where to write the plot (needs matplotlib; default pysketch_demo.png; 'none' to skip)")
    demo.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    demo.add_argument("--no-baseline", action="store_true", help="skip scikit-learn's KMeans on the full data")
    demo.add_argument("--epsilon", type=float, default=None,
                      help="also release the sketch with epsilon-differential privacy (add/remove neighbours) "
                           "and show the centers learned from it")
    demo.add_argument("--delta", type=float, default=0.0,
                      help="with --epsilon: delta > 0 uses the analytic Gaussian mechanism (default 0: Laplace)")

    _add_sketch_parser(commands, FEATURE_MAPS.names())
    _add_merge_parser(commands)
    _add_privatize_parser(commands)
    _add_fit_parser(commands)
    _add_query_parser(commands)
    return parser


_BOUNDS_HELP = ("a public box holding the records: LO and HI are numbers, or comma-separated lists of one number "
                "per column")


def _add_bounds(p, more, default=None):
    p.add_argument("--bounds", nargs=2, default=default, metavar=("LO", "HI"), help=_BOUNDS_HELP + more)
    p.add_argument("--bounds-file", default=default, metavar="FILE",
                   help="the box as a .json file ({\"lower\": [...], \"upper\": [...]} or [[lo, hi], ...]) or a "
                        ".npy file (a (d, 2) array), instead of --bounds")


def _add_output(p, what, suffix):
    p.add_argument("-o", "--output", required=suffix == ".npz", metavar=f"FILE{suffix.upper()}",
                   help=f"where to write {what} (a {suffix} file; never overwritten without --force)")
    p.add_argument("--force", action="store_true", help="overwrite existing output files")


def _add_sketch_parser(commands, kinds):
    p = commands.add_parser(
        "sketch",
        help="sketch the records of data files (.npy, .npz, .csv, .parquet...) into a sketch file",
        description="Sketch the records (rows) of every DATA file into one sketch file, reading a block of rows at "
        "a time: memory does not grow with the number or size of the files. DATA are files or glob patterns "
        "(expanded here too, so quoted patterns work) of .npy (memory-mapped, pages released once read), .npz "
        "(every array, or --key), .csv / .tsv / .txt (optionally .gz; a first line of names, none of them a number, "
        "is a header) or .parquet (numeric columns; needs pyarrow). Every file must give the same number of columns. "
        "The map is public: the same options and --seed give the same map, so sketches made apart merge "
        "(pysketch merge). The output is a clean sketch: release it with pysketch privatize.",
    )
    p.add_argument("data", nargs="+", metavar="DATA", help="data files or glob patterns")
    _add_output(p, "the sketch", ".npz")
    m = p.add_argument_group("the feature map")
    m.add_argument("--map", default="complex", choices=(*kinds, "pca"),
                   help="the features (default complex): complex / real / quantized random Fourier features, "
                        "second_moment (the whole covariance, for PCA; centred by itself: the mean is read from the "
                        "same sketch), quadratic (the compressive sketch for PCA; needs a public --centre), pca "
                        "(what CompressivePCA picks for the records' d: second_moment when its (d + 1)^2 matrices "
                        "fit 1 GiB, quadratic otherwise), hist / race (one-hot box maps for M2M queries; need "
                        "--bounds), grid (the joint histogram on the box, for k-means in low dimension; needs "
                        "--bounds)")
    m.add_argument("--sketch-size", "-m", type=_positive, default=None, metavar="M",
                   help=f"number of frequencies m (default: {SKETCH_FACTOR} K d for Fourier maps, K = --clusters, "
                        f"as the estimators; {DEFAULT_SKETCH_SIZE} otherwise, quadratic rounded up to whole "
                        "orthonormal bases); not for hist / race, whose size is set by --bins, --hashes, --buckets")
    m.add_argument("--kernel-scale", "--sigma", type=_kernel_scale, default=None, metavar="SIGMA",
                   help="kernel scale of the frequency law, in the data's units, or auto (the default without "
                        "--bounds): the scale CompressiveKMeans (or CompressiveGaussianMixture, --task gmm) chooses "
                        f"for --clusters clusters, read from a uniform pilot of at most {PILOT_SIZE} records drawn "
                        "in a first pass over the files (so they are read twice; the scale is printed: pass it on "
                        "every site whose sketches are to be merged). With --bounds: units of the box's side "
                        f"(default {DEFAULT_KERNEL_SCALE:g})")
    m.add_argument("--clusters", type=_positive, default=None, metavar="K",
                   help=f"Fourier maps: the number of clusters or components K the default size ({SKETCH_FACTOR} K d) "
                        f"and --kernel-scale auto are chosen for (default {DEFAULT_CLUSTERS}; the sketch serves "
                        "other numbers too)")
    m.add_argument("--task", default=None, choices=("kmeans", "gmm"),
                   help="--kernel-scale auto: the model it is chosen for (default kmeans)")
    m.add_argument("--law", default=None, choices=_law_names(),
                   help="frequency law (default gaussian for Fourier maps, orthonormal_bases for quadratic)")
    m.add_argument("--operator", default=None, choices=("auto", "dense", "r3", "gr2", "fastfood"),
                   help="the frequency operator (default auto: dense below d = 64, r3 blocks on the fast "
                        "Walsh-Hadamard transform from 64)")
    m.add_argument("--seed", type=_seed, default=None,
                   help=f"the map's public seed (default {DEFAULT_SEED}); never used for privacy noise")
    m.add_argument("--dtype", default=None, choices=("float32", "float64"),
                   help="precision of the features (default float32; the sums are float64 either way)")
    _add_bounds(m, "; required by hist and race, optional for Fourier maps (then the frequencies are drawn in "
                   "units of the box's side, as M2M queries expect)")
    m.add_argument("--bins", type=_positive, default=None,
                   help="hist: bins per column (default 100); grid: bins per column of the joint grid (default 16)")
    m.add_argument("--hashes", type=_positive, default=None, help="race: number of hashes (default 80)")
    m.add_argument("--buckets", type=_positive, default=None, help="race: buckets per hash (default 80)")
    m.add_argument("--width", type=_positive_float, default=None,
                   help="race: bucket width in units of the box's side (default 0.1)")
    m.add_argument("--data-norm", type=_positive_float, default=None, metavar="R",
                   help="quadratic, second_moment: a public radius; records with ||x - centre|| > R are rescaled "
                        "onto that sphere (and counted in a warning), so that a later release holds for any data")
    m.add_argument("--centre", "--center", default=None, metavar="C",
                   help="quadratic, second_moment: a public centre subtracted from every record (a number or one "
                        "per column). quadratic: PCA needs the data's mean known in advance (without it, component 0 "
                        "is the mean's direction); second_moment without it centres by itself (the records' mean "
                        "and their covariance about it are read from the sketch, released with it by privatize)")
    r = p.add_argument_group("reading")
    r.add_argument("--columns", default=None, metavar="LIST",
                   help="columns to read: comma-separated indices from 0, ranges start:stop, or names (CSV "
                        "header, Parquet)")
    r.add_argument("--by-position", action="store_true",
                   help="combine the files' columns by position (default: when every file has a header of column "
                        "names, as CSV and Parquet files do, columns are matched by name, and files whose headers "
                        "name other columns are refused)")
    r.add_argument("--key", default=None, help=".npz: the array to read (default every array)")
    r.add_argument("--delimiter", default=None,
                   help="text files: the field separator (default ',' for .csv, tab for .tsv, whitespace for .txt; "
                        "'\\t' or 'tab' for a tab)")
    r.add_argument("--skip-header", action="store_true",
                   help="text files: always skip the first line (default: skipped when none of its fields is a number)")
    r.add_argument("--batch-rows", type=_positive, default=None,
                   help="rows sketched at a time (default: about 8 MiB of records)")
    r.add_argument("--threads", type=_positive, default=None, help="sketching threads (default: every core)")
    r.add_argument("-q", "--quiet", action="store_true", help="no progress bar, notes or summary")


def _add_merge_parser(commands):
    p = commands.add_parser(
        "merge",
        help="add sketches of the same map (the sketch of the union of their data)",
        description="Write the sum of clean sketches made with the same map (same options and seed): the sketch "
        "of the union of their records. Private sketches are refused: merge the clean sketches, then release the "
        "sum once with pysketch privatize.",
    )
    p.add_argument("sketches", nargs="+", metavar="SKETCH", help="sketch files (.npz) or glob patterns")
    _add_output(p, "the merged sketch", ".npz")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary")


def _add_privatize_parser(commands):
    p = commands.add_parser(
        "privatize",
        help="release a sketch with differential privacy (pysketch.privacy.make_private)",
        description="Release a clean sketch with (epsilon, delta)-differential privacy through "
        "pysketch.privacy.make_private: Laplace noise for delta = 0, the analytic Gaussian for delta > 0, the "
        "count noised too under add_remove. The noise comes from the operating system, never from the map's "
        "public seed. The output holds the noisy sketch and its privacy record, never the clean sum. Fourier, "
        "hist and race maps need no bound on the data; quadratic and second_moment maps need --data-norm (or "
        "--bounds) unless they were sketched with --data-norm. A self-centred second_moment sketch (pysketch sketch "
        "--map pca or second_moment without --centre) gets the offset of the release's radius R (R / 2, as "
        "CompressivePCA), so that the mean is released with the covariance.",
    )
    p.add_argument("sketch", metavar="SKETCH", help="a clean sketch file (.npz)")
    _add_output(p, "the private sketch", ".npz")
    p.add_argument("--epsilon", type=_positive_float, required=True, help="the privacy budget epsilon > 0")
    p.add_argument("--delta", type=_delta, default=0.0,
                   help="delta in [0, 1) (default 0: Laplace noise, pure epsilon-DP; > 0: analytic Gaussian)")
    p.add_argument("--neighbouring", "--neighboring", default="add_remove", choices=("add_remove", "replace"),
                   help="add_remove (default; the count is private and noised) or replace (the count is public)")
    p.add_argument("--mechanism", default="auto", choices=("auto", "laplace", "gaussian"),
                   help="auto (default): laplace for delta = 0, gaussian otherwise")
    p.add_argument("--n-lower", type=_positive_float, default=None, metavar="N",
                   help="add_remove: a public lower bound on the number of records, at which the split of epsilon "
                        "between the sum and the count is optimized (default: the size from which the sketch is "
                        "useful, n0(m, epsilon); for hist and race maps, the size at which the noise of the sum "
                        "equals its signal, pysketch.privacy.nsr.budget_split_one_hot)")
    p.add_argument("--data-norm", type=_positive_float, default=None, metavar="R",
                   help="quadratic and second_moment maps: a public bound R on ||x - centre|| of every record")
    p.add_argument("--k", "-k", type=_positive, default=None, metavar="K",
                   help="self-centred second_moment sketches (--map pca): release for K principal components by "
                        "CompressivePCA's rule, as its fit would (pure epsilon with K below about d / 4: the "
                        "compressive quadratic sketch about a private mean, computed exactly from the sketch; else "
                        "the covariance itself)")
    _add_bounds(p, "; quadratic maps: R is the distance of its farthest corner from the map's centre")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary")


def _add_fit_parser(commands):
    p = commands.add_parser(
        "fit",
        help="learn k-means centers, a Gaussian mixture or principal components from a sketch",
        description="Learn a model from the sketch alone (CompressiveKMeans, CompressiveGaussianMixture or "
        "CompressivePCA fit_sketch), print it and write it as JSON with -o (the sketch's privacy record included "
        "when it is private). kmeans and gmm need a Fourier sketch and --bounds (the decoder searches the "
        "centers in that box); pca needs a quadratic sketch.",
    )
    p.add_argument("sketch", metavar="SKETCH", help="a sketch file (.npz), clean or private")
    p.add_argument("--task", required=True, choices=("kmeans", "gmm", "pca"), help="the model to learn")
    p.add_argument("--k", "-k", type=_positive, required=True,
                   help="clusters (kmeans), components (gmm) or principal components (pca)")
    _add_bounds(p, "; kmeans, gmm: the decoder searches the centers in it")
    p.add_argument("--decoder", default="auto", choices=("auto", "clompr", "cl_amp", "coreset", "grid"),
                   help="kmeans, gmm: the decoder (default auto: grid for a grid sketch, else clompr; gmm: clompr)")
    p.add_argument("--n-init", type=_positive, default=3, help="decoder restarts (default 3)")
    p.add_argument("--seed", type=_seed, default=0, help="seed of the decoder's starts (default 0)")
    _add_output(p, "the model", ".json")
    p.add_argument("--plot", metavar="FILE.png", default=None,
                   help="draw the model (needs matplotlib): centers on the first two coordinates, or the "
                        "explained variances")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")


def _add_query_parser(commands):
    p = commands.add_parser(
        "query",
        help="M2M statistics from a sketch: mean, moments, covariance, cdf, histogram, box counts",
        description="Answer a statistical query from the sketch alone by the M2M method (pysketch.m2m.M2M): "
        "synthetic points drawn in the public box of the records are weighted so that their features match the "
        "sketch; every query is a weighted average over them, post-processing of a private sketch. Best with "
        "box maps (pysketch sketch --map hist|race|real --bounds ...). The number of records divides the sketch: "
        "for a private sketch, the noisy count pooled with every other estimate the release holds (the total of "
        "each block of a hist or race map). The answers are projected onto what is possible for records in the "
        "box (means inside it, fractions in [0, 1], histograms summing to 1, CDFs non-decreasing; --raw: not), "
        "and a warning names the answers whose noise is more than a tenth of their possible range.",
    )
    p.add_argument("sketch", metavar="SKETCH", help="a sketch file (.npz), clean or private")
    _add_query_options(p, False)
    queries = p.add_subparsers(dest="query", metavar="QUERY", required=True)

    def query(name, help):
        q = queries.add_parser(name, help=help, description=help[0].upper() + help[1:] + ".")
        _add_query_options(q, True)  # the common options are accepted after QUERY too
        return q

    query("mean", "the mean of every column")
    q = query("moments", "(1/n) sum x_j^k for the given orders k and columns j")
    q.add_argument("--orders", default="1,2", help="comma-separated orders (default 1,2)")
    q.add_argument("--columns", default=None, help="comma-separated column indices (default all)")
    query("covariance", "the (1/n) covariance matrix")
    q = query("cdf", "the fraction of records with x_column <= t, for every threshold t")
    q.add_argument("--column", type=int, required=True, help="the column (from 0)")
    q.add_argument("--at", required=True, metavar="T1,T2,...", help="comma-separated thresholds")
    q = query("histogram", "the fractions of records in bins of one column")
    q.add_argument("--column", type=int, required=True, help="the column (from 0)")
    q.add_argument("--edges", default=None, metavar="E0,E1,...", help="comma-separated increasing bin edges")
    q.add_argument("--bins", type=_positive, default=None, help="equal bins over the domain (default 10)")
    q = query("box", "the fraction (or number) of records in a box: lower <= x <= upper")
    q.add_argument("--lower", default="-inf", metavar="L",
                   help="a number or one per column, comma-separated; -inf or empty: no bound (default)")
    q.add_argument("--upper", default="inf", metavar="U",
                   help="a number or one per column, comma-separated; inf or empty: no bound (default)")
    q.add_argument("--count", action="store_true", help="a number of records (times the released count)")


def _add_query_options(p, again):
    """The options of `pysketch query`, on its parser and (again=True: without defaults, so
    that an option given before QUERY is kept) on the parser of each query."""
    default = (lambda value: argparse.SUPPRESS) if again else (lambda value: value)
    _add_bounds(p, "; the domain of the synthetic points (default: the map's own box, for hist maps)", default(None))
    p.add_argument("--n-synthetic", type=_positive, default=default(None),
                   help="synthetic points (default 100000, as in the M2M paper; the time grows with them and with "
                        "the square of the sketch's size)")
    p.add_argument("--seed", type=_seed, default=default(0), help="seed of the synthetic points (default 0; public)")
    p.add_argument("--raw", action="store_true", default=default(False),
                   help="the M2M estimates as they are, not projected onto what is possible in the box")
    p.add_argument("-o", "--output", default=default(None), metavar="FILE.JSON",
                   help="where to write the answer (a .json file; never overwritten without --force)")
    p.add_argument("--force", action="store_true", default=default(False), help="overwrite an existing output file")
    p.add_argument("-q", "--quiet", action="store_true", default=default(False), help="print nothing but errors")


# ---------------------------------------------------------------------------- argument types


def _power_of_two(text):
    value = _positive(text)
    if value & (value - 1) or value > 1 << 30:
        raise argparse.ArgumentTypeError(f"must be a power of two between 1 and 2**30, got {value}")
    return value


def _positive(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def _seed(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {value}")
    return value


def _kernel_scale(text):
    if text == "auto":
        return text
    try:
        return _positive_float(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be 'auto' or a positive finite number, got {text!r}") from None


def _positive_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {text!r}")
    return value


def _delta(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1), got {text!r}") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1), got {text!r}")
    return value


def _law_names():
    from .frequencies import (AdaptedRadiusLaw, FoldedGaussianLaw, GaussianLaw, LogUniformLaw, OrthonormalBasesLaw,
                              QuadraticGaussianLaw)

    return tuple(law.name for law in (GaussianLaw, AdaptedRadiusLaw, FoldedGaussianLaw, LogUniformLaw,
                                      QuadraticGaussianLaw, OrthonormalBasesLaw))


def _numbers(text, flag):
    """The numbers of a comma-separated list ('inf', '-inf' allowed; an empty item is nan)."""
    values = []
    for item in str(text).split(","):
        item = item.strip()
        try:
            values.append(float(item) if item else math.nan)
        except ValueError:
            raise _CommandError(f"{flag}: {item!r} is not a number (in {text!r})") from None
    return np.array(values)


def _per_column(values, d, flag):
    """values (from _numbers) broadcast to the d columns."""
    if values.size == 1:
        return np.full(d, values[0])
    if values.size != d:
        raise _CommandError(f"{flag}: {values.size} numbers given but the records have {d} columns "
                            "(give one number for all columns, or one per column)")
    return values


def _has_box(args):
    return getattr(args, "bounds", None) is not None or getattr(args, "bounds_file", None) is not None


def _box(args, d):
    """(lower, upper) of --bounds or --bounds-file, for records of d columns; None if neither."""
    if args.bounds is not None and args.bounds_file is not None:
        raise _CommandError("give --bounds or --bounds-file, not both")
    if args.bounds_file is not None:
        return _read_box([args.bounds_file], d, "--bounds-file")
    if args.bounds is not None:
        return _read_box(args.bounds, d)
    return None


def _read_box(values, d, flag="--bounds"):
    """(lower, upper) float64 arrays of shape (d,) from LO HI or a file."""
    if len(values) == 1:
        path = values[0]
        if not os.path.isfile(path):
            raise _CommandError(f"{flag}: no such file: {path}")
        try:
            if path.endswith(".npy"):
                box = np.load(path, allow_pickle=False)
            elif path.endswith(".json"):
                with open(path) as f:
                    obj = json.load(f)
                if isinstance(obj, dict) and "format" in obj:  # an output of fit or query: checked, its box
                    obj = read_json(path, {FIT_FORMAT: (JSON_VERSION,), QUERY_FORMAT: (JSON_VERSION,)})
                    if "bounds" not in obj:
                        raise _CommandError(f"{flag}: {path} holds no box (a {obj['format']} without bounds)")
                    obj = obj["bounds"]
                box = (obj["lower"], obj["upper"]) if isinstance(obj, dict) else obj
            else:
                raise _CommandError(f"{flag}: {path} must be a .json or .npy file")
            if isinstance(box, tuple):
                lo = _per_column(np.asarray(box[0], dtype=np.float64).reshape(-1), d, flag)
                hi = _per_column(np.asarray(box[1], dtype=np.float64).reshape(-1), d, flag)
            else:
                arr = np.asarray(box, dtype=np.float64)
                if arr.shape != (d, 2):
                    raise _CommandError(f"{flag}: {path} must hold a ({d}, 2) array of [lower, upper] per column, "
                                        f"got shape {arr.shape}")
                lo, hi = arr[:, 0].copy(), arr[:, 1].copy()
        except (OSError, ValueError, KeyError, TypeError) as exc:
            if isinstance(exc, _CommandError):
                raise
            raise _CommandError(f"{flag}: cannot read a box from {path} ({type(exc).__name__}: {exc})") from None
    elif len(values) == 2:
        lo = _per_column(_numbers(values[0], flag), d, flag)
        hi = _per_column(_numbers(values[1], flag), d, flag)
    else:
        raise _CommandError(f"{flag} takes LO HI, got {len(values)} values")
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        raise _CommandError(f"{flag}: the box must be finite")
    if not (hi > lo).all():
        j = int(np.flatnonzero(~(hi > lo))[0])
        raise _CommandError(f"{flag}: every upper bound must exceed its lower bound; column {j} has "
                            f"[{lo[j]:g}, {hi[j]:g}]")
    return lo, hi


# ---------------------------------------------------------------------------- files


def _check_output(path, suffix, force, flag="-o"):
    """Refuse an output of the wrong kind, in a missing directory, or existing without
    --force, before any work is done."""
    if path is None:
        return None
    if not path.lower().endswith(suffix):
        raise _CommandError(f"{flag} {path}: must name a {suffix} file")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise _CommandError(f"{flag} {path}: no such directory {folder}")
    if os.path.isdir(path):
        raise _CommandError(f"{flag} {path}: is a directory")
    if os.path.exists(path) and not force:
        raise _CommandError(f"{flag} {path}: the file exists; pass --force to overwrite it")
    return path


def _write_atomically(path, force, write, flag="-o"):
    """write(tmp) into a temporary file of the output's folder, then move it into place
    (a failed or interrupted run leaves no partial output)."""
    def still_free():
        if os.path.exists(path) and not force:  # appeared while we worked
            raise _CommandError(f"{flag} {path}: the file exists; pass --force to overwrite it")

    with replace_when_done(path, still_free) as tmp:
        write(tmp)


def _write_json(path, obj, force, format):
    """Write `obj` as a JSON output of `format` (with its version and checksum)."""
    _write_atomically(path, force, lambda tmp: write_json(tmp, format, JSON_VERSION, _jsonable(obj)))


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def _load_sketch(path):
    from . import privacy  # noqa: F401  (registers the private sketch format, so that Sketch.load reads it)
    from .sketch import Sketch

    if not os.path.exists(path):
        raise _CommandError(f"{path}: no such file")
    if not path.lower().endswith(".npz"):
        raise _CommandError(f"{path}: a sketch file is a .npz file (written by pysketch sketch)")
    return Sketch.load(path)


def _is_private(sketch):
    from .privacy import PrivateSketch

    return isinstance(sketch, PrivateSketch)


# ---------------------------------------------------------------------------- pysketch sketch


class _Progress:
    """Progress through the files, weighted by their sizes: tqdm on stderr when it is
    installed, else a plain one-line bar; nothing when quiet."""

    def __init__(self, sizes, quiet):
        self.sizes = [max(1, s) for s in sizes]
        self.total = float(sum(self.sizes))
        self.before = 0.0  # bytes of the files finished
        self.records = 0
        self.bar = None
        self.quiet = quiet
        self._last_pct, self._last_t = -1, 0.0
        self._tty = sys.stderr.isatty()
        if quiet:
            return
        try:
            from tqdm import tqdm
        except ImportError:
            return
        self.bar = tqdm(total=int(self.total), unit="B", unit_scale=True, unit_divisor=1024, desc="sketching",
                        file=sys.stderr, leave=True, dynamic_ncols=True)

    def update(self, index, done, records):
        """File `index` is read to the fraction `done`; `records` in total so far."""
        self.records = records
        now = self.before + done * self.sizes[index]
        if self.quiet:
            return
        if self.bar is not None:
            self.bar.set_postfix_str(f"{records:,} records, file {index + 1}/{len(self.sizes)}", refresh=False)
            self.bar.update(int(round(now)) - self.bar.n)
            return
        pct = int(100 * now / self.total)
        t = time.monotonic()
        if pct != self._last_pct and (t - self._last_t > 0.5 or pct == 100) and (self._tty or pct % 10 == 0):
            self._last_pct, self._last_t = pct, t
            end = "" if self._tty else "\n"
            filled = pct // 5
            print(f"\rsketching: [{'#' * filled}{'.' * (20 - filled)}] {pct:3d}% ({records:,} records, file "
                  f"{index + 1}/{len(self.sizes)})", end=end, file=sys.stderr, flush=True)

    def next_file(self, index):
        self.before += self.sizes[index]

    def close(self):
        if self.quiet:
            return
        if self.bar is not None:
            self.bar.close()
        elif self._tty:
            print(file=sys.stderr)


def _cmd_sketch(args):
    from .accumulate import SketchAccumulator
    from .files import ColumnError, expand_paths, open_data, parse_columns

    out = _check_output(args.output, ".npz", args.force)
    paths = expand_paths(args.data)
    try:
        columns = None if args.columns is None else parse_columns(args.columns)
    except ValueError as exc:
        raise _CommandError(f"--columns: {exc}") from None
    if args.key is not None and not any(p.lower().endswith(".npz") for p in paths):
        raise _CommandError("--key applies to .npz files, and no DATA file is one")
    delimiter = {"\\t": "\t", "tab": "\t"}.get(args.delimiter, args.delimiter)

    def reader(path, columns):
        try:
            return open_data(path, columns=columns, key=args.key, delimiter=delimiter, skip_header=args.skip_header)
        except ColumnError as exc:
            raise _CommandError(f"--columns {args.columns}: {exc}" if args.columns is not None else str(exc)) from None

    sources = [reader(p, columns) for p in paths]
    sources, matched = (sources, []) if args.by_position else _match_columns(sources, reader)
    first = sources[0]
    d = first.n_columns
    for src in sources[1:]:
        if src.n_columns != d:
            raise _CommandError(f"{src.path}: has {src.n_columns} columns, but {first.path} has {d}: every DATA file "
                                "must give the same number of columns (select them with --columns)")
    notes = [note for src in sources for note in src.notes] + matched
    if not args.quiet:
        for note in notes[:MAX_NOTES]:
            print(f"pysketch sketch: note: {note}", file=sys.stderr)
        if len(notes) > MAX_NOTES:
            print(f"pysketch sketch: note: ... and {len(notes) - MAX_NOTES} more notes", file=sys.stderr)
    map_note = _resolve_pca_map(args, d)
    scale_note = _resolve_kernel_scale(args, sources, d)
    for note in (map_note, scale_note):
        if note and not args.quiet:
            print(f"pysketch sketch: note: {note}", file=sys.stderr)
    fm = _make_map(args, d)
    if args.threads is not None:
        from .runtime import set_num_threads

        set_num_threads(args.threads)
    acc = SketchAccumulator(fm, batch_size=args.batch_rows)
    progress = _Progress([_size(s.path) for s in sources], args.quiet)
    t0 = time.perf_counter()
    try:
        for i, src in enumerate(sources):
            for block in src.blocks():
                try:
                    acc.update(block.data)
                except ValueError as exc:
                    raise _CommandError(_bad_block(src, block, exc)) from None
                progress.update(i, block.done, acc.count)
                del block  # before the next block is read: one block in memory at a time
            progress.next_file(i)
    finally:
        progress.close()
    sketch = acc.sketch()
    seconds = time.perf_counter() - t0
    _write_atomically(out, args.force, sketch.save)
    if not args.quiet:
        rate = f", {sketch.count / seconds:.3g} records/s" if seconds > 0 and sketch.count else ""
        print(f"wrote {out}: {sketch.count} records from {len(sources)} file{'s' * (len(sources) != 1)}, "
              f"d = {d}, in {seconds:.2f} s{rate}")
        print(f"map: {fm!r}")
    return 0


def _names_text(names):
    names = list(names)
    more = f", ... ({len(names)} columns)" if len(names) > MAX_NAMES else ""
    return ", ".join(names[:MAX_NAMES]) + more


def _match_columns(sources, reader):
    """When every file names its columns (a CSV header, Parquet), the files in the first
    one's order of names: a file with the same names in another order is opened again with
    its columns selected by name; one with other names is refused. Returns the sources and
    notes of the files reordered. Files without names are combined by position."""
    first = sources[0]
    want = first.column_names
    if len(sources) < 2 or any(src.column_names is None for src in sources):
        return sources, []
    out, notes = [first], []
    for src in sources[1:]:
        names = src.column_names
        if names == want:
            out.append(src)
            continue
        if sorted(names) != sorted(want):
            missing = [n for n in want if n not in names]
            extra = [n for n in names if n not in want]
            diff = "; ".join(part for part in (
                f"it lacks {_names_text(missing)}" if missing else "",
                f"it has {_names_text(extra)}, which {first.path} lacks" if extra else "",
            ) if part) or "the same names, repeated another number of times"
            raise _CommandError(f"{src.path}: its columns ({_names_text(names)}) are not those of {first.path} "
                                f"({_names_text(want)}): {diff}. Files whose headers name their columns are combined "
                                "by name: select the same columns by name with --columns, or pass --by-position")
        if len(set(want)) != len(want):
            twice = sorted({n for n in want if want.count(n) > 1})
            raise _CommandError(f"{src.path}: its columns are those of {first.path} in another order, but "
                                f"{first.path} names {_names_text(twice)} more than once, so they cannot be matched "
                                "by name: select the columns by name with --columns, or pass --by-position")
        out.append(reader(src.path, list(want)))
        notes.append(f"{src.path}: columns matched by name, in the order of {first.path} ({_names_text(want)}; "
                     f"this file has {_names_text(names)})")
    return out, notes


def _wants_auto_scale(args):
    """Whether the map's kernel scale is --kernel-scale auto: given, or the default of a
    Fourier map (complex, real, quantized) without --bounds whose law has a scale."""
    from .features import FEATURE_MAPS, FourierMap
    from .frequencies import OrthonormalBasesLaw, QuadraticGaussianLaw

    cls = FEATURE_MAPS.get(args.map)
    fourier = isinstance(cls, type) and issubclass(cls, FourierMap)
    scaled_law = (args.law or "gaussian") not in (OrthonormalBasesLaw.name, QuadraticGaussianLaw.name)
    if args.kernel_scale == "auto":
        if _has_box(args):
            raise _CommandError("--kernel-scale auto applies without --bounds (with a box the scale is a number, "
                                "in units of the box's side)")
        if not (fourier and scaled_law):
            raise _CommandError(f"--kernel-scale auto applies to the Fourier maps (complex, real, quantized) with a "
                                f"law that has a scale, not --map {args.map}" + (f" --law {args.law}" if args.law else ""))
        return True
    auto = args.kernel_scale is None and not _has_box(args) and fourier and scaled_law
    if args.task is not None and not auto:
        raise _CommandError("--task applies only to --kernel-scale auto (the default of Fourier maps without --bounds)")
    if args.clusters is not None and not (fourier and not _has_box(args)):
        raise _CommandError("--clusters applies only to the Fourier maps (complex, real, quantized) without --bounds")
    return auto


def _checked_blocks(sources):
    """The records of every source, block by block, NaN and infinity refused by name."""
    for src in sources:
        for block in src.blocks():
            data = np.asarray(block.data, dtype=np.float64)
            if not np.isfinite(data).all():
                raise _CommandError(_bad_block(src, block, ValueError("NaN or infinity")))
            yield data


def _resolve_kernel_scale(args, sources, d):
    """Replace --kernel-scale auto (given or by default) by the scale the estimators would
    choose on a pilot of the records; the note to print, or None."""
    from .kernel_scale import kernel_scale
    from .pilot import stream_pilot

    if not _wants_auto_scale(args):
        return None
    seed = DEFAULT_SEED if args.seed is None else args.seed
    pilot, n = stream_pilot(_checked_blocks(sources), PILOT_SIZE, np.random.default_rng([seed, 1]))
    k = DEFAULT_CLUSTERS if args.clusters is None else args.clusters
    task = args.task or "kmeans"
    if pilot.shape[0] < 2 or k > pilot.shape[0]:
        raise _CommandError(f"--kernel-scale auto: {n} record(s) read, too few for {k} clusters (--clusters); "
                            "pass --kernel-scale SIGMA")
    try:
        sigma = kernel_scale(None, k, method="auto", task=task, pilot=pilot, random_state=np.random.default_rng([seed, 2]))
    except ValueError as exc:
        raise _CommandError(f"--kernel-scale auto: {exc}; pass --kernel-scale SIGMA") from None
    args.kernel_scale = float(sigma)
    return (f"kernel scale auto: {sigma:.9g} ({task} with {k} clusters, from a pilot of {pilot.shape[0]} of {n} "
            f"records read in a first pass; pass --kernel-scale {sigma:.9g} on every site whose sketches are merged)")


def _resolve_pca_map(args, d):
    """--map pca: the map CompressivePCA's rule picks for d features (the covariance,
    self-centred, when it fits its default memory budget; else the compressive quadratic
    sketch, which needs a public --centre). --map quadratic without --centre: a note that
    the components will hold the mean. Returns the note to print, or None."""
    from .pca import DEFAULT_MEMORY_BUDGET, covariance_fits

    if args.map == "pca":
        if covariance_fits(d):
            args.map = "second_moment"
            return (f"--map pca: second_moment (the whole covariance, {d} columns, "
                    + ("centred by itself: the mean is read from the same sketch)" if args.centre is None
                       else "about the given --centre)"))
        if args.centre is None:
            raise _CommandError(f"--map pca: the covariance of {d} columns does not fit {DEFAULT_MEMORY_BUDGET >> 20} "
                                "MiB, and the compressive quadratic sketch cannot centre by itself: give a public "
                                "--centre (the records' mean, known in advance), or --map second_moment to sketch "
                                "the whole covariance anyway")
        args.map = "quadratic"
        return f"--map pca: quadratic (the compressive sketch: the covariance of {d} columns does not fit " \
               f"{DEFAULT_MEMORY_BUDGET >> 20} MiB)"
    if args.map == "quadratic" and args.centre is None:
        return ("--map quadratic without --centre: the sketch is of the second moments about 0, so PCA's first "
                "component will point at the records' mean unless it is 0; give --centre (the mean), or use --map "
                "second_moment (centred by itself) or --map pca")
    return None


def _size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 1


def _bad_block(src, block, exc):
    """The message of a block the accumulator refused: the record with NaN or infinity
    named by its index in the file."""
    data = np.asarray(block.data)
    if data.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(data).all(axis=1))
        if bad.size:
            return (f"{src.path}: record {block.first_row + int(bad[0])} (counting from 0) contains NaN or infinity"
                    " (missing values are not records: remove them first)")
    return f"{src.path}: {exc}"


def _make_map(args, d):
    """The feature map of the options of `pysketch sketch` for records of d columns."""
    from .features import FEATURE_MAPS, FourierMap, OneHotMap, box_map_kinds, make_box_map, make_feature_map

    kind = args.map
    cls = FEATURE_MAPS.get(kind)
    seed = DEFAULT_SEED if args.seed is None else args.seed
    from_box = getattr(cls, "from_box", None)
    # options of one family of maps only: (flag, value, the parameter it sets)
    box_options = [("--bins", args.bins, "n_bins"), ("--hashes", args.hashes, "n_hashes"),
                   ("--buckets", args.buckets, "n_buckets"), ("--width", args.width, "width")]
    if _has_box(args):
        if from_box is None:
            raise _CommandError(f"--bounds: --map {kind} has no box form (box maps: {', '.join(box_map_kinds())})"
                                + ("; its records are bounded by --data-norm" if _takes(cls, "data_norm") else ""))
        for flag, value in (("--operator", args.operator), ("--dtype", args.dtype), ("--law", args.law),
                            ("--data-norm", args.data_norm), ("--centre", args.centre)):
            if value is not None:
                raise _CommandError(f"{flag} applies only without --bounds (a box map draws Gaussian frequencies "
                                    "in units of the box's side, as a dense float64 operator)")
        lo, hi = _box(args, d)
        accepted = inspect.signature(from_box).parameters
        params = {}
        for flag, value, name in box_options + [("--sketch-size", args.sketch_size, "n_frequencies"),
                                                ("--kernel-scale", args.kernel_scale, "sigma")]:
            if value is not None:
                if name not in accepted:
                    raise _CommandError(f"{flag} does not apply to --map {kind}")
                params[name] = value
        if "n_frequencies" in accepted:
            params.setdefault("n_frequencies", DEFAULT_SKETCH_SIZE)
        return make_box_map(kind, lo, hi, random_state=seed, **params)
    if issubclass(cls, OneHotMap):
        raise _CommandError(f"--map {kind} needs --bounds LO HI: its features are laid on a public box of the records")
    for flag, value, _ in box_options:
        if value is not None:
            raise _CommandError(f"{flag} applies only to box maps made with --bounds (--map hist or race)")
    options = {}
    for flag, value, name in (("--data-norm", args.data_norm, "data_norm"), ("--centre", args.centre, "centre")):
        if value is not None:
            if not _takes(cls, name):
                raise _CommandError(f"{flag} does not apply to --map {kind}")
            options[name] = value if name != "centre" else _per_column(_numbers(value, flag), d, flag)
    if not _takes(cls, "random_state"):  # a map with no frequencies (second_moment): d and its options
        for flag, value in (("--sketch-size", args.sketch_size), ("--law", args.law), ("--operator", args.operator),
                            ("--kernel-scale", args.kernel_scale), ("--dtype", args.dtype)):
            if value is not None:
                raise _CommandError(f"{flag} does not apply to --map {kind} (it has no frequencies: its size is set "
                                    "by d, its precision is float64)")
        if _takes(cls, "offset") and "centre" not in options:
            # self-centred: a public constant appended to every record (privatize rescales it to the
            # release's radius), so that the mean is read from the same sketch
            from .pca import self_centring_offset

            options["offset"] = self_centring_offset(args.data_norm) if args.data_norm is not None else 1.0
        try:
            return cls(d, **options)
        except ValueError as exc:
            raise _CommandError(f"--map {kind}: {exc}") from None
    law, m = _law_and_size(args, cls, issubclass(cls, FourierMap), d)
    return make_feature_map(d, m, kind, operator=args.operator or "auto", law=law, random_state=seed,
                            dtype=np.dtype(args.dtype or "float32"), **options)


def _takes(fn, name):
    if isinstance(fn, type):  # a class's own __init__ (a __new__ of (*args, **kwargs) hides its signature)
        fn = fn.__init__
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _law_and_size(args, cls, fourier, d):
    """The frequency law of the options and the sketch size (for a union of orthonormal
    bases, the default size rounded up to whole bases)."""
    from .frequencies import OrthonormalBasesLaw, QuadraticGaussianLaw, make_law
    from .operators import AUTO_STRUCTURED_MIN_D

    name = args.law or ("gaussian" if fourier else OrthonormalBasesLaw.name)
    m = args.sketch_size
    if name in (OrthonormalBasesLaw.name, QuadraticGaussianLaw.name):
        if args.kernel_scale is not None:
            raise _CommandError(f"--kernel-scale does not apply to --law {name} (its scale is set by d)")
        law = OrthonormalBasesLaw() if name == OrthonormalBasesLaw.name else QuadraticGaussianLaw()
        if name == OrthonormalBasesLaw.name:
            op = args.operator or "auto"
            structured = op != "dense" and (op != "auto" or d >= AUTO_STRUCTURED_MIN_D)
            block = 1 << max(0, math.ceil(math.log2(d))) if structured else d
            if m is None:
                m = -(-DEFAULT_SKETCH_SIZE // block) * block
            elif m % block:
                raise _CommandError(f"--sketch-size {m}: a union of orthonormal bases needs a multiple of {block} "
                                    f"({'the padded d' if structured else 'd'})")
        return law, m if m is not None else DEFAULT_SKETCH_SIZE
    try:
        law = make_law(name, DEFAULT_KERNEL_SCALE if args.kernel_scale is None else args.kernel_scale)
    except ValueError as exc:
        raise _CommandError(f"--law {name}: {exc}") from None
    if m is None:
        m = SKETCH_FACTOR * (args.clusters or DEFAULT_CLUSTERS) * d if fourier else DEFAULT_SKETCH_SIZE
    return law, m


# ---------------------------------------------------------------------------- pysketch merge


def _cmd_merge(args):
    from .files import expand_paths

    out = _check_output(args.output, ".npz", args.force)
    paths = expand_paths(args.sketches)
    total = None
    first_path = None
    for path in paths:
        sketch = _load_sketch(path)
        if _is_private(sketch):
            raise _CommandError(
                f"{path}: is a private sketch; private sketches are not merged. Their sum would carry the sum of "
                "independent noises (not the mechanism its record states) and its guarantee would need the parts' "
                "records to be disjoint, which no file shows: merge the clean sketches, then release the sum once "
                "with pysketch privatize")
        if total is None:
            total, first_path = sketch, path
            continue
        if sketch.feature_map != total.feature_map:
            raise _CommandError(f"{first_path} and {path} were made with different feature maps "
                                f"({_map_difference(total.feature_map, sketch.feature_map)}): sketch every part "
                                "with the same --map options, --kernel-scale and --seed (auto reads the scale from "
                                "each site's records: pass the value the first site printed)")
        if sketch.subsampling != total.subsampling:
            raise _CommandError(f"{first_path} and {path} have different feature subsampling")
        total = total + sketch
    _write_atomically(out, args.force, total.save)
    if not args.quiet:
        print(f"wrote {out}: {total.count} records from {len(paths)} sketch{'es' * (len(paths) != 1)}")
    return 0


def _map_difference(a, b):
    """What differs between two maps' public descriptions, or that their random draws do."""
    meta_a, meta_b = a.get_state()[0], b.get_state()[0]
    diffs = []

    def walk(x, y, where):
        if isinstance(x, dict) and isinstance(y, dict):
            for key in sorted(set(x) | set(y)):
                walk(x.get(key), y.get(key), f"{where}.{key}" if where else key)
        elif x != y:
            diffs.append(f"{where}: {x!r} vs {y!r}")

    walk(meta_a, meta_b, "")
    if diffs:
        return "; ".join(diffs[:4])
    return "same parameters but different random frequencies: another --seed"


# ---------------------------------------------------------------------------- pysketch privatize


def _cmd_privatize(args):
    from .privacy import make_private

    out = _check_output(args.output, ".npz", args.force)
    sketch = _load_sketch(args.sketch)
    if _is_private(sketch):
        raise _CommandError(f"{args.sketch}: is already private (epsilon = {sketch.privacy['epsilon']:g}); "
                            "release the clean sketch once")
    fm = sketch.feature_map
    if args.data_norm is not None and _has_box(args):
        raise _CommandError("give --data-norm or --bounds, not both")
    data_norm = args.data_norm
    if _has_box(args):
        lo, hi = _box(args, fm.d)
        centre = getattr(fm, "centre", None)
        c = np.zeros(fm.d) if centre is None else np.asarray(centre, dtype=np.float64)
        data_norm = float(np.linalg.norm(np.maximum(np.abs(lo - c), np.abs(hi - c))))
    norm = 1 if args.mechanism == "laplace" or (args.mechanism == "auto" and args.delta == 0) else 2
    try:
        without = fm.sensitivity(norm, args.neighbouring)
    except ValueError as exc:
        without = None
        if data_norm is None:
            raise _CommandError(f"{args.sketch}: {exc}; give --data-norm R (or --bounds LO HI), a public bound "
                                "that every record satisfies") from None
    if data_norm is not None and without is not None:
        if fm.sensitivity(norm, args.neighbouring, data_norm=data_norm) == without:
            if not args.quiet:
                print(f"pysketch privatize: note: {'--bounds' if _has_box(args) else '--data-norm'} is not "
                      "needed for this map (its sensitivity holds for any data) and was ignored", file=sys.stderr)
            data_norm = None
    radius = data_norm if data_norm is not None else getattr(fm, "data_norm", None)
    self_centred = getattr(fm, "offset", None) is not None
    if args.k is not None:
        if not self_centred:
            raise _CommandError(f"--k applies to self-centred second_moment sketches (pysketch sketch --map pca), not "
                                f"{fm!r}")
        for flag, given in (("--mechanism", args.mechanism != "auto"), ("--n-lower", args.n_lower is not None)):
            if given:
                raise _CommandError(f"{flag} does not apply with --k (the release follows CompressivePCA's rule)")
        if args.k > fm.d:
            raise _CommandError(f"--k {args.k} is larger than the records' dimension {fm.d}")
        from .pca import CompressivePCA

        est = CompressivePCA(args.k, epsilon=args.epsilon, delta=args.delta, neighbouring=args.neighbouring,
                             data_norm=radius)
        try:
            private = est.release_sketch(sketch)
        except ValueError as exc:
            raise _CommandError(f"{args.sketch}: {exc}") from None
    else:
        if self_centred and radius is not None:
            # a self-centred covariance sketch: its offset rescaled to the one the release's radius calls for
            from .pca import self_centring_offset

            sketch = fm.reoffset(sketch, self_centring_offset(radius))
            if args.delta == 0 and not args.quiet:
                print("pysketch privatize: note: pure epsilon: for k below about d / 4 principal components, "
                      "CompressivePCA releases the compressive sketch about a private mean instead of the "
                      "covariance (it measured better); pass --k K to release by its rule", file=sys.stderr)
        private = make_private(sketch, args.epsilon, args.delta, neighbouring=args.neighbouring,
                               mechanism=args.mechanism, n_lower=args.n_lower, data_norm=data_norm)
    _write_atomically(out, args.force, private.save)
    if not args.quiet:
        print(f"wrote {out}: private sketch of {args.sketch}")
        _print_privacy(private.privacy)
    return 0


def _print_privacy(record, indent="  "):
    for key, value in record.to_dict().items():
        print(f"{indent}{key}: {_fmt(value)}")


def _fmt(value):
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


# ---------------------------------------------------------------------------- pysketch fit


def _cmd_fit(args):
    out = _check_output(args.output, ".json", args.force)
    plot = _check_output(args.plot, "", args.force, "--plot") if args.plot else None
    sketch = _load_sketch(args.sketch)
    if sketch.count < 1:
        raise _CommandError(f"{args.sketch}: the sketch's count is {sketch.count}: nothing to learn from")
    model = _FITS[args.task](sketch, args)
    model.update(sketch=args.sketch, n_records=int(sketch.count), d=int(sketch.feature_map.d),
                 m=int(sketch.feature_map.m), map=repr(sketch.feature_map),
                 privacy=sketch.privacy.to_dict() if _is_private(sketch) else None,
                 pysketch_version=__version__)
    if not args.quiet:
        _print_model(model, sketch)
    if out is not None:
        _write_json(out, model, args.force, FIT_FORMAT)
        if not args.quiet:
            print(f"model written to {out}")
    if plot is not None:
        _plot_model(model, plot, args)
    return 0


def _fit_mixture(sketch, args):
    from .estimators import CompressiveGaussianMixture, CompressiveKMeans

    if not _has_box(args):
        raise _CommandError(f"--bounds LO HI is required for --task {args.task}: the decoder searches the centers in "
                            "a public box that holds the records")
    box = _box(args, sketch.feature_map.d)
    estimator = CompressiveKMeans if args.task == "kmeans" else CompressiveGaussianMixture
    est = estimator(args.k, n_init=args.n_init, random_state=args.seed, decoder=args.decoder)
    try:
        est.fit_sketch(sketch, box)
    except ValueError as exc:  # a decoder that cannot read this sketch, or not of the task's atoms, names it
        raise _CommandError(f"{args.sketch}: {exc}") from None
    model = {"task": args.task, "k": args.k, "weights": est.weights_, "bounds": {"lower": box[0], "upper": box[1]},
             "kernel_scale": est.kernel_scale_,
             # None where no sketch distance is fitted (the grid decoder): JSON has no NaN
             "residual": float(est.residual_) if math.isfinite(est.residual_) else None}
    if args.task == "kmeans":
        model.update(decoder=est.decoder_, centers=est.cluster_centers_)
    else:
        model.update(decoder=est.decoder_, centers=est.means_, variances=est.covariances_)
    return model


def _fit_pca(sketch, args):
    from .pca import CompressivePCA

    if _has_box(args):
        raise _CommandError("--bounds does not apply to --task pca (the quadratic sketch needs no box)")
    if args.decoder != "auto":  # the subspace decoder follows the sketch's map (CompressivePCA)
        raise _CommandError("--decoder applies to --task kmeans and gmm only")
    if args.k > sketch.feature_map.d:
        raise _CommandError(f"--k {args.k} is larger than the records' dimension {sketch.feature_map.d}")
    est = CompressivePCA(args.k, n_init=args.n_init, random_state=args.seed).fit_sketch(sketch)
    return {"task": "pca", "k": args.k, "components": est.components_, "explained_variance": est.explained_variance_,
            "explained_variance_ratio": est.explained_variance_ratio_, "total_variance": float(est.total_variance_),
            "noise_variance": float(est.noise_variance_), "mean": est.mean_, "residual": float(est.residual_)}


_FITS = {"kmeans": _fit_mixture, "gmm": _fit_mixture, "pca": _fit_pca}


def _vector_text(v, limit=8):
    v = np.asarray(v, dtype=np.float64).reshape(-1)
    text = " ".join(f"{x:9.4g}" for x in v[:limit])
    return text + (f" ... ({v.size} values)" if v.size > limit else "")


def _print_model(model, sketch):
    kind = "private" if model["privacy"] is not None else "clean"
    print(f"{model['task']} from {model['sketch']} ({kind} sketch: n = {model['n_records']} records, "
          f"d = {model['d']}, m = {model['m']})")
    if model["task"] == "pca":
        print(f"{'component':>9} {'variance':>10} {'ratio':>7}  direction")
        for j, row in enumerate(np.asarray(model["components"])):
            print(f"{j:9d} {model['explained_variance'][j]:10.4g} {model['explained_variance_ratio'][j]:7.3f}  "
                  f"{_vector_text(row)}")
        print(f"total variance {model['total_variance']:.4g}, noise variance {model['noise_variance']:.4g}")
    else:
        print(f"{'center':>6} {'weight':>7}  coordinates")
        for j, row in enumerate(np.asarray(model["centers"])):
            print(f"{j:6d} {model['weights'][j]:7.3f}  {_vector_text(row)}")
            if "variances" in model:
                print(f"{'':6} {'':7}  {_vector_text(np.asarray(model['variances'])[j])}  (variances)")
        facts = []
        if model["kernel_scale"] is not None:  # None: a grid sketch has no kernel
            facts.append(f"kernel scale {model['kernel_scale']:.4g}")
        if model["residual"] is not None and math.isfinite(model["residual"]):  # NaN: the grid decoder fits none
            facts.append(f"residual {model['residual']:.4g}")
        if facts:
            print(", ".join(facts))
    if model["privacy"] is not None:
        p = model["privacy"]
        print(f"privacy: epsilon = {p['epsilon']:g}, delta = {p['delta']:g}, {p['neighbouring']}, {p['mechanism']}")


def _plot_model(model, path, args):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        if not args.quiet:
            print("matplotlib is not installed: no plot (pip install matplotlib)")
        return
    fig, ax = plt.subplots(figsize=(6, 5))
    if model["task"] == "pca":
        ratio = np.asarray(model["explained_variance_ratio"])
        ax.bar(np.arange(1, ratio.size + 1), ratio)
        ax.set_xlabel("component")
        ax.set_ylabel("explained variance ratio")
    else:
        C = np.asarray(model["centers"])
        w = np.asarray(model["weights"])
        y = C[:, 1] if C.shape[1] > 1 else np.zeros(C.shape[0])
        ax.scatter(C[:, 0], y, s=50 + 2000 * w, alpha=0.6)
        for j in range(C.shape[0]):
            ax.annotate(str(j), (C[j, 0], y[j]))
        if "variances" in model and C.shape[1] > 1:
            from matplotlib.patches import Ellipse

            V = np.asarray(model["variances"])
            for j in range(C.shape[0]):
                ax.add_patch(Ellipse((C[j, 0], C[j, 1]), 4 * math.sqrt(V[j, 0]), 4 * math.sqrt(V[j, 1]),
                                     fill=False, alpha=0.5))
        ax.set_xlabel("x0")
        ax.set_ylabel("x1" if C.shape[1] > 1 else "")
    ax.set_title(f"pysketch fit --task {model['task']} ({model['sketch']})")
    fig.tight_layout()

    def write(tmp):
        fig.savefig(tmp, format=os.path.splitext(path)[1][1:] or "png")

    _write_atomically(path, args.force, write, "--plot")
    plt.close(fig)
    if not args.quiet:
        print(f"plot written to {path}")


# ---------------------------------------------------------------------------- pysketch query


def _cmd_query(args):
    from .m2m import M2M, Domain

    out = _check_output(args.output, ".json", args.force)
    sketch = _load_sketch(args.sketch)
    fm = sketch.feature_map
    d = fm.d
    own = None
    if getattr(fm, "lower", None) is not None and getattr(fm, "upper", None) is not None:
        own = np.asarray(fm.lower, dtype=np.float64), np.asarray(fm.upper, dtype=np.float64)
    if _has_box(args):
        lo, hi = _box(args, d)
        if own is not None and not _same_box((lo, hi), own):
            flag = "--bounds-file" if args.bounds_file is not None else "--bounds"
            raise _CommandError(f"{flag}: the box {_box_text(lo, hi)} contradicts the sketch's own box "
                                f"{_box_text(*own)} (the box {args.sketch}'s map was made on): omit {flag}, or give "
                                "that box")
    elif own is not None:
        lo, hi = own
    else:
        raise _CommandError("--bounds LO HI is required: M2M draws its synthetic points in the public box of the "
                            "records (this sketch's map carries no box)")
    ask = _QUERIES[args.query](args, d, (lo, hi))  # the query's arguments checked before the fit
    kwargs = {} if args.n_synthetic is None else {"n_synthetic": args.n_synthetic}
    stats = M2M(Domain(lo, hi), random_state=args.seed, **kwargs).fit(sketch)
    result, labels = ask(stats)
    answer = {"query": args.query, "sketch": args.sketch, "result": result, "labels": labels,
              "n_records": int(round(stats.count_)), "n_records_std": stats.count_std_, "mass": stats.mass_,
              "n_synthetic": stats.n_synthetic,
              "bounds": {"lower": lo, "upper": hi},
              "privacy": sketch.privacy.to_dict() if _is_private(sketch) else None, "pysketch_version": __version__}
    if not args.quiet:
        _print_answer(answer)
    if out is not None:
        _write_json(out, answer, args.force, QUERY_FORMAT)
        if not args.quiet:
            print(f"answer written to {out}")
    return 0


def _same_box(a, b):
    """Whether two boxes (lower, upper) are the same, up to rounding (1e-9 of a side)."""
    side = b[1] - b[0]
    return bool(np.all(np.abs(a[0] - b[0]) <= 1e-9 * side) and np.all(np.abs(a[1] - b[1]) <= 1e-9 * side))


def _box_text(lo, hi):
    """A box as LO HI would give it on the command line: numbers, or one per column."""
    def side(v):
        v = np.asarray(v, dtype=np.float64)
        if np.all(v == v[0]):
            return f"{v[0]:.10g}"
        return ",".join(f"{x:.10g}" for x in v[:MAX_NAMES]) + (",..." if v.size > MAX_NAMES else "")

    return f"'{side(lo)} {side(hi)}'"


def _int_list(text, flag):
    try:
        return [int(x) for x in str(text).split(",")]
    except ValueError:
        raise _CommandError(f"{flag}: {text!r} must be comma-separated integers") from None


def _query_mean(args, d, box):
    return lambda stats: (stats.mean(project=not args.raw), [f"x{j}" for j in range(d)])


def _query_moments(args, d, box):
    orders = _int_list(args.orders, "--orders")
    if min(orders) < 0:
        raise _CommandError(f"--orders {args.orders}: orders must be >= 0")
    cols = list(range(d)) if args.columns is None else _int_list(args.columns, "--columns")
    for c in cols:
        if not -d <= c < d:
            raise _CommandError(f"--columns: column {c} is out of range (the records have {d} columns)")
    cols = [c % d for c in cols]
    return lambda stats: (stats.moments(orders, cols, project=not args.raw),
                          {"orders": orders, "columns": [f"x{c}" for c in cols]})


def _query_covariance(args, d, box):
    return lambda stats: (stats.covariance(project=not args.raw), [f"x{j}" for j in range(d)])


def _column(args, d):
    if not -d <= args.column < d:
        raise _CommandError(f"--column {args.column} is out of range (the records have {d} columns)")
    return args.column % d


def _query_cdf(args, d, box):
    j = _column(args, d)
    t = _numbers(args.at, "--at")
    if np.isnan(t).any():
        raise _CommandError(f"--at {args.at}: every threshold must be a number")
    return lambda stats: (stats.cdf(j, t, project=not args.raw), [f"x{j} <= {x:g}" for x in t])


def _query_histogram(args, d, box):
    j = _column(args, d)
    if args.edges is not None and args.bins is not None:
        raise _CommandError("give --edges or --bins, not both")
    if args.edges is not None:
        e = _numbers(args.edges, "--edges")
        if e.size < 2 or not np.isfinite(e).all() or (np.diff(e) <= 0).any():
            raise _CommandError(f"--edges {args.edges}: at least two finite, increasing numbers")
    else:
        e = np.linspace(box[0][j], box[1][j], (args.bins or 10) + 1)
    return lambda stats: (stats.histogram(j, e, project=not args.raw),
                          [f"[{a:g}, {b:g})" for a, b in zip(e[:-1], e[1:])])


def _query_box(args, d, box):
    lo = _per_column(_numbers(args.lower, "--lower"), d, "--lower")
    hi = _per_column(_numbers(args.upper, "--upper"), d, "--upper")
    lo = np.where(np.isnan(lo), -np.inf, lo)
    hi = np.where(np.isnan(hi), np.inf, hi)
    if (lo == np.inf).any() or (hi == -np.inf).any():
        raise _CommandError("--lower must not be +inf and --upper not -inf")
    parts = [f"{lo[j]:g} <= x{j} <= {hi[j]:g}" if np.isfinite(lo[j]) and np.isfinite(hi[j]) else
             (f"x{j} >= {lo[j]:g}" if np.isfinite(lo[j]) else f"x{j} <= {hi[j]:g}")
             for j in range(d) if np.isfinite(lo[j]) or np.isfinite(hi[j])]
    labels = {"box": " and ".join(parts) or "all records", "as": "count" if args.count else "fraction",
              "lower": [None if not np.isfinite(x) else x for x in lo],
              "upper": [None if not np.isfinite(x) else x for x in hi]}
    return lambda stats: (stats.counting_queries(lo, hi, as_count=args.count, project=not args.raw)[0], labels)


_QUERIES = {"mean": _query_mean, "moments": _query_moments, "covariance": _query_covariance, "cdf": _query_cdf,
            "histogram": _query_histogram, "box": _query_box}


def _print_answer(answer):
    kind = "private" if answer["privacy"] is not None else "clean"
    n = (f"n = {answer['n_records']} +- {answer['n_records_std']:.2g} records (estimated)" if answer["n_records_std"]
         else f"n = {answer['n_records']} records")
    print(f"{answer['query']} from {answer['sketch']} ({kind} sketch: {n}; M2M over "
          f"{answer['n_synthetic']} synthetic points, total weight {answer['mass']:.4g})")
    result, labels = np.asarray(answer["result"], dtype=np.float64), answer["labels"]
    q = answer["query"]
    if q == "box":
        print(f"{labels['box']}: {result.item():.6g} ({labels['as']})")
    elif q == "moments":
        print(f"{'order':>5}  " + " ".join(f"{c:>10}" for c in labels["columns"]))
        for k, row in zip(labels["orders"], result):
            print(f"{k:5d}  " + " ".join(f"{x:10.5g}" for x in row))
    elif q == "covariance":
        print(f"{'':>6} " + " ".join(f"{c:>11}" for c in labels))
        for c, row in zip(labels, result):
            print(f"{c:>6} " + " ".join(f"{x:11.5g}" for x in row))
    else:
        for label, x in zip(labels, result):
            print(f"{label}: {x:.6g}")


# ---------------------------------------------------------------------------- pysketch info SKETCH


def _cmd_info(args):
    if any(v is not None for v in (args.n, args.rows, args.repeat)):
        raise _CommandError("--n, --rows and --repeat time the transform: they apply only without a SKETCH file")
    path = args.sketch
    sketch = _load_sketch(path)  # checks the checksum
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
    fm = sketch.feature_map
    fmeta = dict(meta["feature_map"])
    op = fmeta.pop("operator", None)
    kind = fmeta.pop("kind")
    private = _is_private(sketch)
    print(f"file: {path} ({_size(path)} bytes)")
    print(f"format: {meta['format']}, version {meta['version']} ({'private' if private else 'clean'} sketch)")
    print(f"checksum: OK (sha256 {str(meta.get('checksum', ''))[:16]}...)")
    print(f"count: {sketch.count}{' (noisy)' if private and sketch.privacy['epsilon_count'] > 0 else ''}")
    extra = "".join(f", {k} = {_fmt(v)}" for k, v in fmeta.items() if k not in ("d", "m"))  # printed first
    print(f"map: {kind}, d = {fm.d}, m = {fm.m}{extra}")
    for name, (shape, dtype) in fm.sum_layout().items():
        print(f"sum: {name}, shape {tuple(shape)}, {np.dtype(dtype).name}")
    if op is not None:
        law = op.pop("law", None)
        law_text = "none" if law is None else law.get("name", "?") + "".join(
            f", {k} = {_fmt(v)}" for k, v in law.items() if k != "name")
        rest = "".join(f", {k} = {_fmt(v)}" for k, v in op.items() if k not in ("kind", "d", "m", "dtype"))
        print(f"operator: {op.get('kind')}, {op.get('dtype')}{rest}; law: {law_text}")
    print(f"dither: {'yes' if getattr(fm, 'dither', None) is not None else 'none'}")
    sub = sketch.subsampling
    print("subsampling: " + ("none" if sub is None else ", ".join(f"{k} = {_fmt(v)}" for k, v in sub.items())))
    if private:
        print("privacy:")
        _print_privacy(sketch.privacy)
    else:
        print("privacy: none (a clean sketch: release it with pysketch privatize before sharing it)")
    return 0


_COMMANDS = {"sketch": _cmd_sketch, "merge": _cmd_merge, "privatize": _cmd_privatize, "fit": _cmd_fit,
             "query": _cmd_query, "info": _cmd_info}


# ---------------------------------------------------------------------------- pysketch info (no file)


def _info(n, rows, repeat):
    level, best = simd_level(), max_simd_level()
    print(f"pysketch {__version__} (Python {platform.python_version()}, numpy {np.__version__})")
    print(f"SIMD level: {level} (max {best}{', capped by PYSKETCH_SIMD' if level != best else ''})")
    print(f"threads: {get_num_threads()}")
    ok = _self_check()
    print(f"self-check: fwht {'matches' if ok else 'DOES NOT match'} its definition for n = 1 .. 256")
    per_row = _time_fwht(n, rows, repeat)
    print(
        f"fwht float32 n={n}: {per_row * 1e6:.3g} us per row "
        f"(batch of {rows} rows, best of {repeat})"
    )
    return 0 if ok else 1


def _self_check():
    """Does fwht equal y[i] = sum_j (-1)^popcount(i & j) x[j] on small integer data (exact)?"""
    rng = np.random.default_rng(12345)
    for log_n in range(9):
        n = 1 << log_n
        i = np.arange(n)
        matrix = np.ones((n, n))
        for bit in range(log_n):  # (-1)^popcount(i & j), one bit at a time
            matrix *= 1 - 2 * ((i[:, None] >> bit) & (i[None, :] >> bit) & 1)
        x = rng.integers(-100, 100, size=(3, n)).astype(np.float64)
        if not np.array_equal(fwht(x), x @ matrix.T):
            return False
    return True


def _time_fwht(n, rows, repeat):
    """Best time per row of an in-place, normalized float32 transform of a batch."""
    x = np.random.default_rng(0).standard_normal((rows, n), dtype=np.float32)
    fwht(x, normalized=True, out=x, check_finite=False)  # warm up (threads, pages)
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter_ns()
        fwht(x, normalized=True, out=x, check_finite=False)  # orthonormal: values stay bounded
        best = min(best, time.perf_counter_ns() - start)
    return best * 1e-9 / rows
