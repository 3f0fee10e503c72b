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
        out = subprocess.run(
            ["sh", "-c", sudo.replace("$(id -u)", uid)], capture_output=True, text=True
        ).stdout.strip()
        assert out == expect


def test_make_lab_ships_the_default_viewer_setting():
    """`make lab` points JUPYTER_CONFIG_PATH at jupyter/, whose labconfig makes jupytext's
    notebook factory the default viewer of Python files (the browser test below starts
    JupyterLab with the same path)."""
    text = (ROOT / "Makefile").read_text()
    assert re.search(r"^LAB_ENV := JUPYTER_CONFIG_PATH=\$\(CURDIR\)/jupyter", text, re.M)
    assert re.search(r"^lab:.*\n\t\$\(LAB_ENV\) \$\(BIN\)/jupyter lab ", text, re.M)
    settings = json.loads(
        (ROOT / "jupyter" / "labconfig" / "default_setting_overrides.json").read_text()
    )
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
    for mod, why in (
        ("jupyter_server", "jupyter_server (the test extra) is not installed"),
        ("jupytext", "jupytext is not installed"),
    ):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(why)
    # `make lab` runs JupyterLab; where only jupyter_server is installed, the same
    # server application (the contents API is the server's, not the lab UI's).
    app = "jupyterlab" if importlib.util.find_spec("jupyterlab") else "jupyter_server"
    token, port = secrets.token_hex(16), _free_port()
    cmd = [
        sys.executable,
        "-m",
        app,
        "--no-browser",
        f"--port={port}",
        "--ip=127.0.0.1",
        f"--ServerApp.root_dir={ROOT / 'notebooks'}",
        f"--IdentityProvider.token={token}",
    ]
    if os.geteuid() == 0:
        cmd.append("--allow-root")  # as `make lab` does for root
    env = {
        **os.environ,
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt"),
        "JUPYTER_DATA_DIR": str(tmp_path / "data"),
        "HOME": str(tmp_path),
    }
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
            assert "parameters" in tags, name  # papermill's cell survives the round trip
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

    chrome = next(
        filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None
    )
    driver = next(
        (
            p
            for p in (shutil.which("chromedriver"), "/usr/lib/chromium/chromedriver")
            if p and os.path.exists(p)
        ),
        None,
    )
    return (chrome, driver) if chrome and driver else None


def _lab(tmp_path: Path, root_dir: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    """JupyterLab as `make lab` starts it (its JUPYTER_CONFIG_PATH, --allow-root for
    root), on a free port with the token off and a throw-away home; returns the
    process and the base URL once it answers."""
    port = _free_port()
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        f"--port={port}",
        "--ip=127.0.0.1",
        f"--ServerApp.root_dir={root_dir}",
        "--IdentityProvider.token=",
        "--ServerApp.password=",
        *extra,
    ]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    env = {
        **os.environ,
        "JUPYTER_CONFIG_PATH": str(ROOT / "jupyter"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt"),
        "JUPYTER_DATA_DIR": str(tmp_path / "data"),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "cfg"),
        "HOME": str(tmp_path),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
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


def _chrome(found, tmp_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = found[0]
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1400,1000",
        f"--user-data-dir={tmp_path / 'chrome'}",
    ):
        opts.add_argument(flag)
    return webdriver.Chrome(service=Service(found[1]), options=opts)


def _tracked_state() -> tuple[str, dict]:
    """`git status` of notebooks/ and the bytes of every file there."""
    status = subprocess.run(
        ["git", "status", "--porcelain", "--", "notebooks"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout
    return status, {p.name: p.read_bytes() for p in (ROOT / "notebooks").iterdir() if p.is_file()}


_RUN_ALL_JS = """
const done = arguments[arguments.length - 1];
const panel = window.jupyterapp.shell.currentWidget;
panel.sessionContext.ready.then(() => {
  window.jupyterapp.commands.execute('notebook:run-all-cells');   // not awaited
  done(true);
}, e => done(String(e)));"""

_SET_PARAMETERS_JS = """
const panel = window.jupyterapp.shell.currentWidget;
for (const c of panel.content.widgets) {
  const s = c.model.sharedModel.getSource();
  if (s.startsWith('profile = ')) { c.model.sharedModel.setSource(arguments[0]); return true; }
}
return false;"""


def _wait_for_run(driver, timeout: float) -> list:
    """The code cells once each has run or one has failed (within ``timeout`` s)."""
    deadline = time.monotonic() + timeout
    while True:
        code = [c for c in driver.execute_script(_CELLS_JS) if c["type"] == "code"]
        errors = [o for c in code for o in c["outputs"] if o["output_type"] == "error"]
        busy = driver.execute_script(
            "return window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.status"
        )
        if errors or (all(c["count"] is not None for c in code) and busy == "idle"):
            return code
        assert time.monotonic() < deadline, f"the notebook did not finish in {timeout} s"
        time.sleep(1)


@pytest.mark.slow
def test_a_student_opens_edits_runs_closes_and_reopens_quickstart(tmp_path):
    """As a person meets `make lab` (its JUPYTER_CONFIG_PATH, the real notebooks/): a
    double click opens quickstart.py as a notebook, clean (not modified) once its kernel
    runs, and closing it untouched asks nothing; a misspelled parameter fails in the
    profile cell at once, naming it; with `profile = "smoke"` and `size = 500` typed in
    (never saved to the .py) Run All uses N = 500 and the smoke profile, with no error
    and no stderr; saved, closed and reopened it shows the same cells and outputs, from
    its copy under the lab's copies folder; and nothing under notebooks/ changed
    (`git status`, the bytes)."""
    for mod in ("jupyterlab", "selenium", "jupytext"):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"{mod} is not installed (make test installs it: the lab and test extras)")
    found = _browser()
    if found is None:
        pytest.skip("chromium and chromium-driver are not installed (make browser-packages)")
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    before = _tracked_state()
    copies = tmp_path / "copies"
    proc, base = _lab(
        tmp_path,
        ROOT / "notebooks",
        "--LabApp.expose_app_in_browser=True",
        f"--LabContentsManager.copies_dir={copies}",
    )
    driver = _chrome(found, tmp_path)
    wait = WebDriverWait(driver, 60)
    driver.set_script_timeout(60)

    def open_quickstart():
        item = wait.until(
            ec.element_to_be_clickable(
                (
                    By.XPATH,
                    "//li[contains(@class,'jp-DirListing-item')]"
                    "[.//span[@class='jp-DirListing-itemText']//*[text()='quickstart.py'] or "
                    ".//span[@class='jp-DirListing-itemText'][text()='quickstart.py']]",
                )
            )
        )
        ActionChains(driver).double_click(item).perform()
        panel = wait.until(
            ec.visibility_of_element_located(
                (By.CSS_SELECTOR, "#jp-main-dock-panel .jp-NotebookPanel")
            )
        )
        wait.until(lambda d: panel.find_elements(By.CSS_SELECTOR, ".jp-Cell.jp-MarkdownCell"))
        assert not driver.find_elements(By.CSS_SELECTOR, "#jp-main-dock-panel .jp-FileEditor")
        assert (
            driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            window.jupyterapp.shell.currentWidget.sessionContext.ready.then(
              () => setTimeout(() => done(true), 1500), e => done(String(e)));""")
            is True
        )

    def dirty() -> bool:
        return driver.execute_script(
            "return window.jupyterapp.shell.currentWidget.context.model.dirty"
        )

    def close() -> bool:
        """Close the tab; whether a dialog (save changes?) came up."""
        driver.execute_script("window.jupyterapp.commands.execute('application:close')")
        time.sleep(1.5)
        asked = bool(driver.find_elements(By.CSS_SELECTOR, ".jp-Dialog"))
        wait.until(
            lambda d: (
                not d.find_elements(By.CSS_SELECTOR, "#jp-main-dock-panel .jp-NotebookPanel")
                or asked
            )
        )
        return asked

    try:
        driver.get(f"{base}/lab")
        open_quickstart()
        assert not dirty()  # the kernel started, nothing changed
        assert "jp-mod-dirty" not in driver.find_element(
            By.CSS_SELECTOR, ".lm-TabBar-tab.jp-mod-current"
        ).get_attribute("class")
        assert close() is False  # untouched: no "save changes?"
        open_quickstart()
        cell = next(
            c["source"]
            for c in driver.execute_script(_CELLS_JS)
            if c["source"].startswith("profile = ")
        )
        smoke = cell.replace('profile = "default"', 'profile = "smoke"').replace(
            "size: int | None = None", "size = 500"
        )
        assert driver.execute_script(_SET_PARAMETERS_JS, smoke + "\nblockwise_epoch = 5\n")
        assert driver.execute_async_script(_RUN_ALL_JS) is True
        code = _wait_for_run(driver, 60)
        errors = [
            (i, o) for i, c in enumerate(code) for o in c["outputs"] if o["output_type"] == "error"
        ]
        assert [i for i, _ in errors] == [1], errors  # the profile cell, nothing later ran
        assert "'blockwise_epoch' is not a parameter of quickstart" in errors[0][1]["evalue"]
        assert "did you mean 'blockwise_epochs'" in errors[0][1]["evalue"]
        assert driver.execute_script(_SET_PARAMETERS_JS, smoke)
        t0 = time.monotonic()
        assert driver.execute_async_script(_RUN_ALL_JS) is True
        code = _wait_for_run(driver, 240)
        errors = [o for c in code for o in c["outputs"] if o["output_type"] == "error"]
        assert not errors, errors[0].get("evalue")
        stderr = [
            o["text"]
            for c in code
            for o in c["outputs"]
            if o["output_type"] == "stream" and o["name"] == "stderr"
        ]
        assert not stderr, stderr
        text = "".join(
            o.get("text", "") for c in code for o in c["outputs"] if o["output_type"] == "stream"
        )
        assert (
            "interactive run of quickstart, profile 'smoke': protocol='small', "
            "blockwise_epochs=5; writing to build/lab/paper"
        ) in text
        assert "Task(name='digits', N=500" in text  # the cell's size ran
        print(f"Run All (smoke, N = 500): {time.monotonic() - t0:.0f} s")
        shown = sum(len(c["outputs"]) for c in code)
        driver.execute_script("window.jupyterapp.commands.execute('docmanager:save')")
        wait.until(lambda d: not dirty())
        assert (copies / "quickstart.ipynb").is_file()
        assert close() is False
        open_quickstart()
        again = [c for c in driver.execute_script(_CELLS_JS) if c["type"] == "code"]
        assert sum(len(c["outputs"]) for c in again) == shown > 10  # outputs persisted
        assert any(c["source"] == smoke for c in again)  # and the student's edit
        assert not dirty()
    finally:
        driver.quit()
        _stop(proc)
    assert _tracked_state() == before  # notebooks/ as tracked, byte for byte


def test_lab_contents_manager_saves_a_py_notebook_to_its_copy_only(tmp_path):
    """Without a browser: a .py read as a notebook carries the kernel's metadata; saving
    it writes the copy (outputs included) and leaves the .py; reading it back reads the
    copy; the copy's checkpoint restores the copy; a .py saved as text is written."""
    import asyncio
    import shutil

    for mod in ("jupyter_server", "jupytext", "ipykernel"):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"{mod} is not installed")
    import nbformat

    from mdlnb.tools.runner._lab import LabContentsManager, kernel_metadata

    nbs = tmp_path / "notebooks"
    shutil.copytree(ROOT / "notebooks", nbs)
    cm = LabContentsManager(root_dir=str(nbs), copies_dir=str(tmp_path / "copies"))
    source = (nbs / "quickstart.py").read_bytes()

    async def scenario():
        model = await cm.get("quickstart.py", type="notebook")
        meta = model["content"]["metadata"]
        assert meta["kernelspec"]["name"] == "python3"
        assert meta["language_info"] == kernel_metadata()["language_info"]
        nb = model["content"]
        code = next(c for c in nb.cells if c.cell_type == "code")
        code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="hello\n")]
        saved = await cm.save(
            {"type": "notebook", "format": "json", "content": nb}, "quickstart.py"
        )
        assert (nbs / "quickstart.py").read_bytes() == source  # the source untouched
        copy = tmp_path / "copies" / "quickstart.ipynb"
        assert nbformat.read(copy, as_version=4).cells[0].source == nb.cells[0].source
        back = await cm.get("quickstart.py", type="notebook")
        first = next(c for c in back["content"].cells if c.cell_type == "code")
        assert first.outputs[0]["text"] == "hello\n"
        assert back["last_modified"] == saved["last_modified"]
        plain = await cm.get("quickstart.py", content=False)  # JupyterLab's check
        assert plain["last_modified"] == saved["last_modified"]
        await cm.create_checkpoint("quickstart.py")
        first.outputs = []
        await cm.save(
            {"type": "notebook", "format": "json", "content": back["content"]}, "quickstart.py"
        )
        (cp,) = await cm.list_checkpoints("quickstart.py")
        await cm.restore_checkpoint(cp["id"], "quickstart.py")
        restored = await cm.get("quickstart.py", type="notebook")
        assert next(c for c in restored["content"].cells if c.cell_type == "code").outputs
        text = await cm.get("quickstart.py", type="file", format="text")
        assert text["content"].encode() == source  # the editor: the .py
        await cm.save(
            {"type": "file", "format": "text", "content": text["content"] + "# mine\n"},
            "quickstart.py",
        )
        assert (nbs / "quickstart.py").read_bytes() == source + b"# mine\n"

    asyncio.run(scenario())


def test_make_lab_uses_the_lab_contents_manager():
    config = json.loads((ROOT / "jupyter" / "jupyter_server_config.json").read_text())
    assert (
        config["ServerApp"]["contents_manager_class"]
        == "mdlnb.tools.runner._lab.LabContentsManager"
    )


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
        meta["kernelspec"] = {
            "display_name": "Python 3 (ipykernel)",
            "language": "python",
            "name": "python3",
        }
        meta["language_info"] = {
            "name": "python",
            "version": sys.version.split()[0],
            "mimetype": "text/x-python",
            "file_extension": ".py",
        }
        for cell in model["content"]["cells"]:
            cell["metadata"].setdefault("trusted", True)
            if cell["cell_type"] == "code":
                cell["metadata"]["execution"] = {"iopub.status.idle": "2026-01-01T00:00:00Z"}
        manager.save(model, name)
        assert (nbs / name).read_bytes() == (ROOT / "notebooks" / name).read_bytes(), name
    # and the same through git: nothing under notebooks/ differs from what is tracked
    if shutil.which("git") and (ROOT / ".git").exists():
        diff = subprocess.run(
            ["git", "diff", "--no-index", "--stat", str(ROOT / "notebooks"), str(nbs)],
            capture_output=True,
            text=True,
        )
        assert diff.stdout == "", diff.stdout
