"""The lab (``make lab``): a student opens ``notebooks/NAME.py`` and works on a copy
of their own; the tracked sources change only when someone means to change them.

:class:`LabContentsManager` is the Jupyter server's contents manager there
(``jupyter/jupyter_server_config.json``, found through ``make lab``'s
``JUPYTER_CONFIG_PATH``). It is jupytext's — a ``.py`` file opens as a
notebook — with one difference, for a ``.py`` opened *as a notebook*:

* saving it (by hand or autosave) writes the notebook, outputs included, to its
  copy ``build/lab/notebooks/NAME.ipynb`` (:attr:`LabContentsManager.copies_dir`),
  never to the ``.py``;
* opening it reads that copy when there is one (the student's cells and outputs,
  as they left them), else the ``.py``; its checkpoints (File ▸ Revert) are the
  copy's.

The same file opened with the text editor (right click ▸ Open With ▸ Editor)
is the ``.py`` itself, and saving it writes it: that is how a source is changed
on purpose. Deleting ``build/lab/notebooks/NAME.ipynb`` starts the notebook
afresh from its source; ``jupytext --to py:percent build/lab/notebooks/NAME.ipynb
-o notebooks/NAME.py`` carries a copy's cells back into the source.

A notebook opens with the ``kernelspec`` and ``language_info`` the kernel will
report (:func:`kernel_metadata`), so starting the kernel changes nothing and the
tab does not open as modified.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from jupytext.async_contentsmanager import AsyncTextFileContentsManager
from traitlets import Unicode

from mdlnb.infra._io import atomic_write_text
from mdlnb.tools.runner._paths import LAB_DIR

CHECKPOINT = "checkpoint"


def kernel_metadata() -> dict[str, Any]:
    """The notebook metadata JupyterLab writes once a Python 3 (ipykernel) kernel is
    connected: its kernelspec, and the ``language_info`` ipykernel reports."""
    from ipykernel.ipkernel import IPythonKernel

    info = dict(IPythonKernel.language_info)
    info["version"] = platform.python_version()
    return {
        "kernelspec": {
            "display_name": "Python 3 (ipykernel)",
            "language": "python",
            "name": "python3",
        },
        "language_info": info,
    }


def _mtime(path: Path) -> datetime:
    return datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)


class LabContentsManager(AsyncTextFileContentsManager):
    """jupytext's contents manager whose ``.py`` notebooks save to a copy of their own
    (see the module docstring)."""

    copies_dir = Unicode(
        str(LAB_DIR / "notebooks"),
        config=True,
        help="Where a .py opened as a notebook is saved (NAME.ipynb, the "
        "same sub-folders as under the server's root).",
    )

    def copy_of(self, path: str) -> Path | None:
        """The copy of ``path`` when it is a ``.py`` file, else None."""
        path = path.strip("/")
        if not path.endswith(".py"):
            return None
        return Path(self.copies_dir) / Path(path).with_suffix(".ipynb")

    def _as_notebook(self, path: str, type: str | None) -> Path | None:
        """The copy of ``path`` when it is read or written as a notebook."""
        copy = self.copy_of(path)
        return copy if copy is not None and type in ("notebook", None) else None

    async def get(self, path, content=True, type=None, format=None, require_hash=False, **kw):
        copy = self._as_notebook(path, type)
        if copy is None or type is None and not copy.exists():
            return await super().get(
                path, content=content, type=type, format=format, require_hash=require_hash, **kw
            )
        if not copy.exists():  # the source, with the kernel's metadata already in place
            model = await super().get(
                path,
                content=content,
                type="notebook",
                format=format,
                require_hash=require_hash,
                **kw,
            )
            if content:
                model["content"]["metadata"].update(kernel_metadata())
            return model
        import nbformat

        model = await super().get(path, content=False, type="notebook")
        model.update(last_modified=_mtime(copy), format="json" if content else None)
        if content:
            nb = nbformat.read(copy, as_version=4)
            self.mark_trusted_cells(nb, path)
            model["content"] = nb
            self.validate_notebook_model(model)
        if require_hash:
            model.update(
                hash=hashlib.sha256(copy.read_bytes()).hexdigest(), hash_algorithm="sha256"
            )
        return model

    async def save(self, model, path=""):
        copy = self.copy_of(path)
        if copy is None or model.get("type") != "notebook":
            return await super().save(model, path)
        import nbformat

        if "content" not in model:
            raise ValueError("model: no content to save")
        nb = nbformat.from_dict(model["content"])
        self.check_and_sign(nb, path)
        copy.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(copy, nbformat.writes(nb))
        self.log.info("Saved %s to its lab copy %s (the source is unchanged)", path, copy)
        saved = await self.get(path, content=False, type="notebook")
        saved["message"] = None
        return saved

    # -- checkpoints of a copy are the copy's --------------------------------------

    def _checkpoint(self, path: str) -> Path | None:
        copy = self.copy_of(path)
        if copy is None or not copy.exists():
            return None
        return copy.parent / ".checkpoints" / copy.name

    async def create_checkpoint(self, path):
        cp = self._checkpoint(path)
        if cp is None:
            return await super().create_checkpoint(path)
        cp.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(self.copy_of(path), cp)
        return {"id": CHECKPOINT, "last_modified": _mtime(cp)}

    async def list_checkpoints(self, path):
        cp = self._checkpoint(path)
        if cp is None:
            return await super().list_checkpoints(path)
        return [{"id": CHECKPOINT, "last_modified": _mtime(cp)}] if cp.exists() else []

    async def restore_checkpoint(self, checkpoint_id, path):
        cp = self._checkpoint(path)
        if cp is None:
            return await super().restore_checkpoint(checkpoint_id, path)
        if not cp.exists():
            raise ValueError(f"checkpoint_id: no checkpoint of {path!r}")
        shutil.copy2(cp, self.copy_of(path))

    async def delete_checkpoint(self, checkpoint_id, path):
        cp = self._checkpoint(path)
        if cp is None:
            return await super().delete_checkpoint(checkpoint_id, path)
        if cp.exists():
            os.unlink(cp)
