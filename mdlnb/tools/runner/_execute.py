"""One notebook through papermill: a kernel on local sockets, the runner's
environment, and the executed ``.ipynb`` written only when the run succeeded."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mdlnb.infra import _progress
from mdlnb.infra._io import atomic_write_text
from mdlnb.tools.runner._paths import RUNNER_ENV, utc

# jupytext, nbformat, papermill and jupyter_client are imported inside the
# functions that use them, so the runner's light commands (--help, --check, --write-params) start
# without them.


def execute(
    src: Path,
    nb_out: Path,
    params: Mapping[str, Any],
    *,
    name: str,
    profile: str,
    cwd: str | Path,
    progress: bool,
    batch: bool,
) -> Path:
    """Execute the jupytext notebook ``src`` with papermill ``params`` in ``cwd``; write
    it, with ``metadata["mdlnb"]``, to ``nb_out`` only when the run succeeded (a failed
    run is left as ``NAME.failed.ipynb`` beside it) and return ``nb_out``.
    :func:`mdlnb.tools.runner.run` says what ``progress`` and ``batch`` do."""
    import jupytext
    import nbformat
    import papermill as pm

    nb_out.parent.mkdir(parents=True, exist_ok=True)
    # per process: two runs of one notebook at once (two `make reproduce` in a checkout)
    # never read or remove each other's input or half-executed copy
    nb_in = nb_out.with_name(f"{name}.{os.getpid()}.input.ipynb")
    nb_run = nb_out.with_name(f"{name}.{os.getpid()}.running.ipynb")
    nb_failed = nb_out.with_name(f"{name}.failed.ipynb")
    source = jupytext.read(src)
    # notebooks/*.py carry no header (notebooks/jupytext.toml): the kernel is Python's
    source.metadata.setdefault(
        "kernelspec", {"name": "python3", "display_name": "Python 3", "language": "python"}
    )
    jupytext.write(source, nb_in)
    started, t0 = time.time(), time.perf_counter()
    try:
        env = {RUNNER_ENV: "1", **({_progress.ENV: "0"} if batch else {})}
        with environ(env), ipc_kernels() as manager:
            pm.execute_notebook(
                str(nb_in),
                str(nb_run),
                parameters=params,
                cwd=str(cwd),
                kernel_name="python3",
                progress_bar=progress,
                log_output=False,
                kernel_manager_class=manager,
            )
    except BaseException:
        if nb_run.exists():
            os.replace(nb_run, nb_failed)
        raise
    finally:
        nb_in.unlink(missing_ok=True)
    nb = nbformat.read(nb_run, as_version=4)
    nb.metadata["mdlnb"] = {
        "notebook": name,
        "profile": profile,
        "parameters": json.loads(json.dumps(params, default=str)),
        "started": utc(started),
        "finished": utc(time.time()),
        "finished_epoch": time.time(),
        "wall_s": round(time.perf_counter() - t0, 2),
    }
    atomic_write_text(nb_out, nbformat.writes(nb))
    nb_run.unlink(missing_ok=True)
    nb_failed.unlink(missing_ok=True)
    return nb_out


@contextlib.contextmanager
def environ(values: Mapping[str, str]):
    """``os.environ`` with ``values`` set, restored afterwards."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def ipc_kernels():
    """A kernel manager class whose kernels talk over local (IPC) sockets in a
    temporary folder, removed afterwards: a kernel on TCP warns "Kernel is running
    over TCP without encryption" on every start, which batch runs printed once per
    notebook."""
    from jupyter_client.manager import AsyncKernelManager

    folder = tempfile.mkdtemp(prefix="mdlnb-kernel-")

    class IPCKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs: Any):
            super().__init__(**kwargs)
            self.transport = "ipc"
            self.ip = os.path.join(folder, "kernel")

    try:
        yield IPCKernelManager
    finally:
        shutil.rmtree(folder, ignore_errors=True)
