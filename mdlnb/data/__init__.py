"""Downstream tasks: a registry of offline image tasks in VTAB's three groups.

``names()``, ``load(name, split="train", size=None, seed=0, **options)``,
``info()``; ``reshuffle`` (paper App. A.2), ``subsample``; user data via
``from_image_folder`` (and ``mdlnb.Task.from_npz`` / ``from_parquet``); the
full VTAB benchmark via ``vtab`` when ``tensorflow_datasets`` is installed.

Images are uint8 ``(N, H, W, C)`` with C = 1 or 3. Default tasks (all
offline; sizes at default options, ``info()`` gives the same table):

====================  ===========  ============  =======  ===========
name                  group        train / test  classes  image
====================  ===========  ============  =======  ===========
digits                natural      1,438 / 359   10       8×8×1
fashion_mnist         natural      60,000/10,000 10       28×28×1
photo_patches         natural      3,500 / 700   7        32×32×3
textures              natural      2,500 / 500   5        32×32×1
ihc_dab               specialized  2,000 / 400   2        32×32×3
lfw_faces             specialized  160 / 40      2        25×25×1
sci_patches           specialized  2,000 / 400   4        32×32×3
clevr_closest_colour  structured   4,000 / 1,000 7        64×64×3
clevr_count           structured   4,000 / 1,000 8        64×64×3
clevr_distance        structured   4,000 / 1,000 6        64×64×3
dsprites_location     structured   4,000 / 1,000 16       64×64×1
dsprites_orientation  structured   4,000 / 1,000 16       64×64×1
dsprites_scale        structured   4,000 / 1,000 6        64×64×1
dsprites_shape        structured   4,000 / 1,000 3        64×64×1
====================  ===========  ============  =======  ===========

Real datasets keep their official split (Fashion-MNIST) or a fixed seeded
stratified 80/20 split (digits, lfw_faces); ``seed`` then only drives
``size`` subsampling. Patch tasks crop train and test from disjoint image
regions; procedural tasks draw both splits from one seeded stream with
repeated images removed, so train and test never share an image.
"""

from mdlnb.data._vtab import vtab
from mdlnb.data.registry import TaskSpec, info, load, names, register, spec
from mdlnb.data.splits import reshuffle, stratified_indices, stratified_split, subsample
from mdlnb.data.user import from_image_folder

__all__ = [
    "TaskSpec",
    "info",
    "load",
    "names",
    "register",
    "spec",
    "reshuffle",
    "subsample",
    "stratified_indices",
    "stratified_split",
    "from_image_folder",
    "vtab",
]
