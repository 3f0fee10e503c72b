"""Downstream tasks: a registry of offline image tasks in VTAB's three groups.

``names()``, ``load(name, split="train", size=None, seed=0, **options)``,
``info()``; ``reshuffle`` (paper App. A.2), ``subsample``; user data via
``from_image_folder`` (and ``mdlnb.Task.from_npz`` / ``from_parquet``); the
full VTAB benchmark via ``vtab`` when ``tensorflow_datasets`` is installed.

Images are uint8 ``(N, H, W, C)`` with C = 1 or 3.
"""

from mdlnb.data.registry import TaskSpec, info, load, names, register, spec
from mdlnb.data.splits import reshuffle, stratified_indices, stratified_split, subsample
from mdlnb.data.user import from_image_folder
from mdlnb.data.vtab import vtab

__all__ = ["TaskSpec", "info", "load", "names", "register", "spec", "reshuffle", "subsample",
           "stratified_indices", "stratified_split", "from_image_folder", "vtab"]
