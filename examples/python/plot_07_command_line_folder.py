"""
Sketching a folder of files from the command line
=================================================

Records often arrive as many files, kept at several sites. The ``pysketch`` command line
sketches files in constant memory, merges the sketches of different sites into the
sketch of their union, releases it with differential privacy, and fits a model from the
release alone. This example plays four sites: it writes the US towns of
``bokeh_sampledata`` as four CSV files, one per region, then runs the command line on
them through ``subprocess``, exactly as in a shell, and plots the model it writes.
"""

# %%
# Four sites, four CSV files
# --------------------------
# The files go to a temporary folder, removed at the end. Each has a header line
# (``lat,lon``), which the reader recognises because none of its names is a number.
import json
import pathlib
import subprocess
import sys
import tempfile

import matplotlib.pyplot as plt
import numpy as np

from pysketch.datasets import load_us_cities

lower, upper = np.array([24.0, -125.0]), np.array([50.0, -66.0])  # the contiguous US: public
towns = load_us_cities().data
towns = towns[np.all((towns >= lower) & (towns <= upper), axis=1)]
regions = {"west": towns[:, 1] < -104, "central": (towns[:, 1] >= -104) & (towns[:, 1] < -90),
           "southeast": (towns[:, 1] >= -90) & (towns[:, 0] < 37),
           "northeast": (towns[:, 1] >= -90) & (towns[:, 0] >= 37)}

folder = tempfile.TemporaryDirectory()
work = pathlib.Path(folder.name)
for name, rows in regions.items():
    np.savetxt(work / f"towns_{name}.csv", towns[rows], delimiter=",", header="lat,lon",
               comments="", fmt="%.5f")
print(sorted(p.name for p in work.iterdir()))


def pysketch(*args):
    """Run ``python -m pysketch ARGS`` in the folder, as one would in a shell; stop on an error."""
    cmd = [sys.executable, "-m", "pysketch", *args]
    done = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


# %%
# Each site sketches its own file
# -------------------------------
# In d <= 3 the grid map is the sketch to release: the towns' counts on a 64 x 64 grid
# over the public box (one town changes one count by one, whatever the grid). The map is
# public: every site passes the same ``--bounds`` and ``--bins``, so that their sketches
# merge. The box is the known extent of the contiguous United States, never read from the
# files (see the first example).
box = ["--bounds", "24,-125", "50,-66"]
for name in regions:
    pysketch("sketch", f"towns_{name}.csv", "-o", f"S_{name}.npz", "--map", "grid", *box,
             "--bins", "64", "-q")

# %%
# Merge, release once, fit from the release
# -----------------------------------------
# ``merge`` adds the sketches: the result is the sketch of all the towns. ``privatize``
# adds Laplace noise once, for epsilon = 1, with noise from the operating system; the
# clean sums do not enter its output. ``fit`` reads only the private file and writes the
# centres as JSON. ``info`` prints what a sketch file holds.
pysketch("merge", *(f"S_{name}.npz" for name in regions), "-o", "S.npz")
pysketch("privatize", "S.npz", "-o", "P.npz", "--epsilon", "1")
pysketch("fit", "P.npz", "--task", "kmeans", "--k", "8", *box, "-o", "model.json", "-q")
print(pysketch("info", "P.npz"))
model = json.loads((work / "model.json").read_text())
print(sorted(model))

# %%
# The centres on the map
# ----------------------
# Each site's towns in its own colour, and the eight centres learnt from the private,
# merged sketch. The command line's random choices have fixed seeds, but the privacy
# noise does not, so the centres move a little from run to run.
centres = np.asarray(model["centers"])
fig, ax = plt.subplots(figsize=(8, 4.6), layout="constrained")
for i, (name, rows) in enumerate(regions.items()):
    ax.scatter(towns[rows, 1], towns[rows, 0], s=0.3, color=f"C{i}", alpha=0.5, rasterized=True)
    ax.scatter([], [], s=20, color=f"C{i}", label=f"site {name}: {rows.sum()} towns")
ax.scatter(centres[:, 1], centres[:, 0], marker="x", s=80, color="black", linewidths=2,
           label="centres from the private merged sketch")
ax.set_xlim(lower[1], upper[1])
ax.set_ylim(lower[0], upper[0])
ax.set_aspect(1.3)
ax.set_xlabel("longitude (degrees)")
ax.set_ylabel("latitude (degrees)")
ax.legend(fontsize=8, loc="lower left")
ax.set_title("pysketch sketch, merge, privatize and fit on four CSV files (epsilon = 1)", fontsize=10)
plt.show()
folder.cleanup()

# %%
# The same steps in a shell::
#
#     pysketch sketch towns_west.csv -o S_west.npz --map grid --bounds 24,-125 50,-66 --bins 64
#     # ... one per site, then:
#     pysketch merge S_*.npz -o S.npz
#     pysketch privatize S.npz -o P.npz --epsilon 1
#     pysketch fit P.npz --task kmeans --k 8 --bounds 24,-125 50,-66 -o model.json
#
# ``merge`` takes clean sketches only: it refuses private ones, whose sum would carry
# several independent noises, not the mechanism their privacy records state. So the
# sites must trust the party that merges the clean sketches and releases their sum once.
