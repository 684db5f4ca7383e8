"""
A private k-means fit of a Dask array
=====================================

When the records do not fit in one place, pysketch sketches each block of a Dask array
where it lives, merges the partial sums in a tree, and brings only the merged sums back to
the caller, who adds the privacy noise once. Here the records are 200 000 patches of 4 x 4
pixels of scikit-learn's two sample photos (48 numbers each, in [0, 1]), split into four
blocks of 50 000 rows, and Dask runs on local threads: no cluster and no network. On a
cluster the same code runs unchanged once a ``dask.distributed.Client`` is connected.
"""

# %%
# The Dask array
# --------------
import time

import dask
import dask.array as da
import matplotlib.pyplot as plt
import numpy as np

from pysketch import CompressiveKMeans
from pysketch.datasets import load_image_patches

patches = load_image_patches(patch_size=4, n_patches=200_000, random_state=0)
A = da.from_array(patches.data, chunks=(50_000, patches.data.shape[1]))
print(A)

# %%
# A private fit, block by block
# -----------------------------
# ``fit`` takes the Dask array as it takes a NumPy array. The public box is the pixel
# range [0, 1] in all 48 coordinates (``patches.bounds``), not read from the data. Its
# ``labels_`` stay a lazy Dask array; they are read from the raw records for the caller
# and are not private.
with dask.config.set(scheduler="threads", num_workers=2):
    start = time.perf_counter()
    km = CompressiveKMeans(10, epsilon=1.0, bounds=patches.bounds, random_state=0).fit(A)
    seconds = time.perf_counter() - start
    print(f"private fit of {A.shape[0]} records in {A.numblocks[0]} blocks: {seconds:.1f} s; "
          f"labels_ is a {type(km.labels_).__module__}.{type(km.labels_).__name__}")

# %%
# The same sketch as in memory
# ----------------------------
# The feature map is public and travels with the sketch. Sketching the Dask array with it
# gives the in-memory sketch up to the order of the float64 additions; here they are equal.
with dask.config.set(scheduler="threads", num_workers=2):
    feature_map = km.sketch_.feature_map
    from_blocks = feature_map.sketch(A)
in_memory = feature_map.sketch(patches.data)
print(f"same count: {from_blocks.count == in_memory.count}; "
      f"same sums: {np.allclose(from_blocks.sum, in_memory.sum)}")

# %%
# The centres as patches
# ----------------------
# Each of the ten private centres drawn as a 4 x 4 colour patch, with its weight (its
# share of the records, estimated from the private sketch), heaviest first.
order = np.argsort(km.weights_)[::-1]
fig, axes = plt.subplots(1, 10, figsize=(11, 1.9), layout="constrained")
for ax, j in zip(axes, order):
    ax.imshow(np.clip(km.cluster_centers_[j].reshape(4, 4, 3), 0.0, 1.0))
    ax.set_title(f"{km.weights_[j]:.2f}", fontsize=9)
    ax.set_xticks([])
    ax.set_yticks([])
fig.suptitle(f"Ten private k-means centres (epsilon = 1) of {A.shape[0]} photo patches, "
             f"fitted from a Dask array of {A.numblocks[0]} blocks", fontsize=10)
plt.show()

# %%
# What to read: in our runs the centres were flat patches of the photos' main colours (the
# sky and the stone of one photo, the flower and its dark green background in the other):
# in patches this small, k-means finds colours, and edges are too rare to get a centre of
# their own. The noise is
# drawn once, in the caller, whatever the number of blocks: splitting the data costs no
# privacy.
