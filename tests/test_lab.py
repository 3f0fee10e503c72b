"""`make lab`: a Jupyter server started the way the Makefile starts it (as root too)
serves every notebooks/*.py as a notebook through jupytext's contents manager."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted(p.name for p in (ROOT / "notebooks").glob("*.py") if not p.stem.startswith("_"))


def test_make_lab_passes_allow_root_exactly_when_root():
    """The recipe's ``--allow-root`` appears for uid 0 (no sudo) only."""
    text = (ROOT / "Makefile").read_text()
    sudo = re.search(r"^SUDO\s*:=\s*\$\(shell (.*)\)$", text, re.M).group(1).replace("$$", "$")
    lab = re.search(r"^lab:.*\n\t(.*)$", text, re.M).group(1)
    assert "$(if $(SUDO),,--allow-root)" in lab
    for uid, expect in (("0", ""), ("1000", "sudo")):
        out = subprocess.run(["sh", "-c", sudo.replace("$(id -u)", uid)], capture_output=True,
                             text=True).stdout.strip()
        assert out == expect


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, token: str) -> dict:
    req = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def test_server_serves_every_notebook_through_jupytext(tmp_path):
    for mod, why in (("jupyter_server", "jupyter_server (the test extra) is not installed"),
                     ("jupytext", "jupytext is not installed")):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(why)
    # `make lab` runs JupyterLab; where only jupyter_server is installed, the same
    # server application (the contents API is the server's, not the lab UI's).
    app = "jupyterlab" if importlib.util.find_spec("jupyterlab") else "jupyter_server"
    token, port = secrets.token_hex(16), _free_port()
    cmd = [sys.executable, "-m", app, "--no-browser", f"--port={port}", "--ip=127.0.0.1",
           f"--ServerApp.root_dir={ROOT / 'notebooks'}", f"--IdentityProvider.token={token}"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")                     # as `make lab` does for root
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt"),
           "JUPYTER_DATA_DIR": str(tmp_path / "data"), "HOME": str(tmp_path)}
    log = (tmp_path / "server.log").open("w")
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 40
        while True:
            try:
                _get(f"{base}/api/status", token)
                break
            except (urllib.error.URLError, ConnectionError, OSError):
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("server did not start:\n" + (tmp_path / "server.log").read_text())
                time.sleep(0.2)
        for name in NOTEBOOKS:
            model = _get(f"{base}/api/contents/{name}?content=1", token)
            assert model["type"] == "notebook", (name, model["type"])
            cells = model["content"]["cells"]
            assert len(cells) > 1 and {c["cell_type"] for c in cells} >= {"code", "markdown"}
            tags = [t for c in cells for t in c.get("metadata", {}).get("tags", [])]
            assert "parameters" in tags, name           # papermill's cell survives the round trip
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
