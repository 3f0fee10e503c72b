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


def test_make_lab_ships_the_default_viewer_setting():
    """`make lab` points JUPYTER_CONFIG_PATH at jupyter/, whose labconfig makes jupytext's
    notebook factory the default viewer of Python files (the browser test below starts
    JupyterLab with the same path)."""
    text = (ROOT / "Makefile").read_text()
    assert re.search(r"^LAB_ENV := JUPYTER_CONFIG_PATH=\$\(CURDIR\)/jupyter", text, re.M)
    assert re.search(r"^lab:.*\n\t\$\(LAB_ENV\) \$\(BIN\)/jupyter lab ", text, re.M)
    settings = json.loads((ROOT / "jupyter" / "labconfig" /
                           "default_setting_overrides.json").read_text())
    viewers = settings["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]
    assert viewers == {"python": "Jupytext Notebook"}


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


# ---- what a person sees: JupyterLab in a headless browser ---------------------------

def _browser() -> tuple[str, str] | None:
    """(chromium, chromedriver) paths, or None where the browser is not installed
    (`make browser-packages` installs Debian's)."""
    import shutil

    chrome = next(filter(None, map(shutil.which, ("chromium", "chromium-browser",
                                                  "google-chrome"))), None)
    driver = next((p for p in (shutil.which("chromedriver"), "/usr/lib/chromium/chromedriver")
                   if p and os.path.exists(p)), None)
    return (chrome, driver) if chrome and driver else None


def _lab(tmp_path: Path, root_dir: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    """JupyterLab as `make lab` starts it (its JUPYTER_CONFIG_PATH, --allow-root for
    root), on a free port with the token off and a throw-away home; returns the
    process and the base URL once it answers."""
    port = _free_port()
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}",
           "--ip=127.0.0.1", f"--ServerApp.root_dir={root_dir}", "--IdentityProvider.token=",
           "--ServerApp.password=", *extra]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    env = {**os.environ, "JUPYTER_CONFIG_PATH": str(ROOT / "jupyter"),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt"), "JUPYTER_DATA_DIR": str(tmp_path / "data"),
           "JUPYTER_CONFIG_DIR": str(tmp_path / "cfg"), "HOME": str(tmp_path),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env.pop("MDLNB_RUNNER", None)
    env.pop("MDLNB_PROGRESS", None)
    log = (tmp_path / "lab.log").open("w")
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{base}/api/status", timeout=5):
                return proc, base
        except (urllib.error.URLError, ConnectionError, OSError):
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail("JupyterLab did not start:\n" + (tmp_path / "lab.log").read_text())
            time.sleep(0.3)


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()


_CELLS_JS = """
const panel = window.jupyterapp.shell.currentWidget;
return panel.content.widgets.map(c => ({type: c.model.type, source: c.model.sharedModel.getSource(),
  count: c.model.type === 'code' ? c.model.executionCount : null,
  outputs: c.model.type === 'code' ? c.model.outputs.toJSON() : []}));
"""


@pytest.mark.slow
def test_double_click_opens_quickstart_as_a_notebook_that_runs(tmp_path):
    """A double click on quickstart.py in JupyterLab's file browser opens a notebook
    (not the text editor); with ``profile = "smoke"`` typed into its parameters cell
    it runs through with no error output, the smoke profile applied and nothing
    written next to the notebooks."""
    for mod in ("jupyterlab", "selenium", "jupytext"):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"{mod} is not installed (make test installs it: the lab and test extras)")
    found = _browser()
    if found is None:
        pytest.skip("chromium and chromium-driver are not installed (make browser-packages)")
    import shutil

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    # a copy of notebooks/: whatever the session autosaves never touches the checkout
    nbs = tmp_path / "notebooks"
    shutil.copytree(ROOT / "notebooks", nbs)
    proc, base = _lab(tmp_path, nbs, "--LabApp.expose_app_in_browser=True")
    opts = webdriver.ChromeOptions()
    opts.binary_location = found[0]
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1400,1000",
                 f"--user-data-dir={tmp_path / 'chrome'}"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(found[1]), options=opts)
    try:
        driver.get(f"{base}/lab")
        wait = WebDriverWait(driver, 60)
        item = wait.until(ec.element_to_be_clickable(
            (By.XPATH, "//li[contains(@class,'jp-DirListing-item')]"
                       "[.//span[@class='jp-DirListing-itemText']//*[text()='quickstart.py'] or "
                       ".//span[@class='jp-DirListing-itemText'][text()='quickstart.py']]")))
        ActionChains(driver).double_click(item).perform()
        panel = wait.until(ec.visibility_of_element_located(
            (By.CSS_SELECTOR, "#jp-main-dock-panel .jp-NotebookPanel")))
        # the panel shows before its cells render: wait for them (was a race under load)
        cells = wait.until(lambda d: panel.find_elements(By.CSS_SELECTOR,
                                                         ".jp-Cell.jp-MarkdownCell"))
        assert cells
        assert not driver.find_elements(By.CSS_SELECTOR, "#jp-main-dock-panel .jp-FileEditor")
        # the smoke profile, as a person would type it into the parameters cell
        driver.set_script_timeout(60)
        started = driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            const panel = window.jupyterapp.shell.currentWidget;
            panel.sessionContext.ready.then(() => {
              for (const c of panel.content.widgets) {
                const s = c.model.sharedModel.getSource();
                if (s.startsWith('profile = "default"'))
                  c.model.sharedModel.setSource(s.replace('profile = "default"', 'profile = "smoke"'));
              }
              window.jupyterapp.commands.execute('notebook:run-all-cells');   // not awaited
              done(true);
            }, e => done(String(e)));""")
        assert started is True, started
        deadline = time.monotonic() + 75
        while True:
            cells = driver.execute_script(_CELLS_JS)
            code = [c for c in cells if c["type"] == "code"]
            errors = [o for c in code for o in c["outputs"] if o["output_type"] == "error"]
            if errors or all(c["count"] is not None for c in code):
                break
            assert time.monotonic() < deadline, "the notebook did not finish in 75 s"
            time.sleep(1)
        assert not errors, errors[0].get("evalue")
        stderr = [o["text"] for c in code for o in c["outputs"]
                  if o["output_type"] == "stream" and o["name"] == "stderr"]
        assert not stderr, stderr
        text = "".join(o.get("text", "") for c in code for o in c["outputs"]
                       if o["output_type"] == "stream")
        assert "interactive run of quickstart, profile 'smoke': size=300" in text
        assert "writing to build/lab/paper" in text
        assert "Task(name='digits', N=300" in text                  # the smoke size ran
        assert sorted(p.name for p in nbs.iterdir() if p.is_dir()) in ([], [".ipynb_checkpoints"])
    finally:
        driver.quit()
        _stop(proc)


def test_open_and_save_through_jupytext_changes_nothing_tracked(tmp_path):
    """What JupyterLab does to a notebook (open it, start a kernel, which sets the
    kernelspec and language_info, autosave) through jupytext's contents manager, with
    notebooks/jupytext.toml: every file comes back byte for byte (no jupytext_version,
    no other kernel display name, the parameters tag kept)."""
    import shutil

    for mod in ("jupyter_server", "jupytext"):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"{mod} is not installed")
    from jupyter_server.services.contents.largefilemanager import LargeFileManager
    from jupytext.sync_contentsmanager import build_sync_jupytext_contents_manager_class

    nbs = tmp_path / "notebooks"
    shutil.copytree(ROOT / "notebooks", nbs)
    manager = build_sync_jupytext_contents_manager_class(LargeFileManager)(root_dir=str(nbs))
    for name in NOTEBOOKS:
        model = manager.get(name, content=True)
        assert model["type"] == "notebook", name
        meta = model["content"]["metadata"]
        meta["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python",
                              "name": "python3"}
        meta["language_info"] = {"name": "python", "version": sys.version.split()[0],
                                 "mimetype": "text/x-python", "file_extension": ".py"}
        for cell in model["content"]["cells"]:
            cell["metadata"].setdefault("trusted", True)
            if cell["cell_type"] == "code":
                cell["metadata"]["execution"] = {"iopub.status.idle": "2026-01-01T00:00:00Z"}
        manager.save(model, name)
        assert (nbs / name).read_bytes() == (ROOT / "notebooks" / name).read_bytes(), name
    # and the same through git: nothing under notebooks/ differs from what is tracked
    if shutil.which("git") and (ROOT / ".git").exists():
        diff = subprocess.run(["git", "diff", "--no-index", "--stat", str(ROOT / "notebooks"),
                               str(nbs)], capture_output=True, text=True)
        assert diff.stdout == "", diff.stdout
