"""The oracle widget in a real browser: JupyterLab and Jupyter Notebook 7, headless Chromium.

A Jupyter server is started on localhost (a free port, a random token, a temporary root
holding a copy of ``tests/data/oracle_widget.ipynb``; its kernels import this checkout).
Playwright drives Debian's Chromium through the notebook as a student would: it runs
the widget cell, answers queries with the buttons and the keys ``m`` / ``c`` / ``d``,
clicks two points and links them (a must-link, then a cannot-link), and runs the cell
that prints the kernel's state. The test checks that

* each answer reached the kernel as given (the kernel's list of answers and own pairs),
  and the counts and labels the page shows are the kernel's;
* an own must-link joins two points of different clusters and an own cannot-link
  separates two of one cluster (the notebook's estimator weighs constraints heavily);
* what is drawn follows: one line per constraint, the violated ones dashed, the query
  circled, and the plot's pixels differ from the first picture;
* the notebook's own keyboard shortcuts did not fire (``m`` would make a cell
  Markdown, ``c`` copy it, ``d d`` delete it).

Skipped, with the reason, without Playwright, JupyterLab, Notebook 7, anywidget or a
Chromium binary (``HMRF_CHROMIUM`` or ``chromium`` on the PATH; ``.ci/run`` installs
Debian's package). Playwright's own browser downloads are never used.
"""

from __future__ import annotations

import io
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

sync_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (the test extra)")
pytest.importorskip("jupyterlab", reason="needs jupyterlab (the test extra)")
pytest.importorskip("notebook", reason="needs notebook>=7 (the test extra)")
pytest.importorskip("anywidget", reason="needs anywidget (the widgets extra)")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "tests" / "data" / "oracle_widget.ipynb"
CHROMIUM = os.environ.get("HMRF_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
if not CHROMIUM:
    pytest.skip("no Chromium binary (apt-get install chromium, or set HMRF_CHROMIUM)", allow_module_level=True)

# Without the background-networking flags Chromium tries to reach Google's services,
# which a closed network refuses; a fresh user-data-dir keeps every run independent.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WAIT_MS = 60_000
FRONTENDS = {"lab": "lab/tree/{name}", "notebook": "notebooks/{name}"}
PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"  # the notebook in view


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A Jupyter server on localhost serving a copy of the notebook per front end."""
    base = tmp_path_factory.mktemp("jupyter")
    root = base / "root"
    root.mkdir()
    for frontend in FRONTENDS:
        shutil.copy(NOTEBOOK, root / f"oracle_{frontend}.ipynb")
    config = base / "config"
    (config / "labconfig").mkdir(parents=True)
    # no "would you like news?" pop-up over the page
    (config / "labconfig" / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               JUPYTER_CONFIG_DIR=str(config), JUPYTER_RUNTIME_DIR=str(base / "runtime"),
               JUPYTERLAB_WORKSPACES_DIR=str(base / "workspaces"))
    log = open(base / "server.log", "w")  # noqa: SIM115 - closed in the teardown
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1",
           "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
           "--allow-root", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
           "--LabApp.news_url=None", "--LabApp.extension_manager=readonly"]
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"the Jupyter server exited: {(base / 'server.log').read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the Jupyter server did not answer: {(base / 'server.log').read_text()[-3000:]}")
            time.sleep(0.3)
        yield url, token, base
    finally:
        proc.terminate()  # the server shuts its kernels down
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    with sync_api.sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=CHROMIUM, headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1300, "height": 950})
        try:
            yield context
        finally:
            context.close()


def _state(page) -> dict:
    return page.evaluate("""() => {
        const root = document.querySelector('.hmrf-oracle');
        const labels = [...root.querySelectorAll('.points circle')].map(c => +c.dataset.label);
        const lines = [...root.querySelectorAll('line.constraint')];
        return {...root.dataset, labels, lines: lines.length, pairs: lines.map(l => l.dataset.pair),
                dashed: root.querySelectorAll('line.constraint.violated[stroke-dasharray="5 4"]').length,
                rings: root.querySelectorAll('.query-ring').length,
                focused: !!document.activeElement.closest('.hmrf-oracle')};
    }""")


def _start_kernel(url: str, token: str, name: str) -> None:
    """Start the notebook's kernel session through the REST API before the page opens.

    The page then attaches to it instead of choosing a kernel itself (which, on a busy
    machine, can end in a "Select Kernel" dialog).
    """
    body = json.dumps({"path": name, "name": name, "type": "notebook", "kernel": {"name": "python3"}})
    request = urllib.request.Request(f"{url}/api/sessions", data=body.encode(), method="POST",
                                     headers={"Authorization": f"token {token}",
                                              "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as r:
        assert r.status == 201, r.status


def _after(page, version: int) -> dict:
    """Wait for the kernel's reply to the message sent at ``version`` (it bumps ``version``)."""
    page.wait_for_function(
        f"() => {{ const r = document.querySelector('.hmrf-oracle');"
        f" return +r.dataset.version > {version} && r.dataset.busy === '0'; }}", timeout=WAIT_MS)
    return _state(page)


def _click_point(page, i: int) -> None:
    box = page.locator(f".hmrf-oracle .points circle[data-index='{i}']").bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


def _run_cell(page, index: int) -> None:
    """Select code cell ``index`` by its prompt (command mode) and run it in place.

    The notebook may still be laying out its cells when the page first shows them;
    until the prompt shows ``[*]`` or a number the key press is repeated.
    """
    prompt = page.locator(f"{PANEL} .jp-CodeCell").nth(index).locator(".jp-InputPrompt")
    started = (f"() => !/\\[ \\]/.test(document.querySelectorAll('{PANEL} .jp-CodeCell')[{index}]"
               ".querySelector('.jp-InputPrompt').textContent)")
    for _ in range(5):
        dialog = page.locator(".jp-Dialog .jp-mod-accept")
        if dialog.count():
            dialog.first.click()
        prompt.click()
        page.keyboard.press("Control+Enter")
        try:
            page.wait_for_function(started, timeout=5_000)
            return
        except sync_api.TimeoutError:
            continue
    pytest.fail(f"code cell {index} did not start running: {prompt.inner_text()!r}")


def _pixels(png: bytes):
    from matplotlib.image import imread

    return imread(io.BytesIO(png), format="png")


@pytest.mark.parametrize("frontend", sorted(FRONTENDS))
def test_student_answers_and_links_points_in_the_browser(server, browser, frontend):
    url, token, _ = server
    page = browser.new_page()
    errors = []  # uncaught errors in the widget's own module (anywidget loads it from a blob: URL)
    page.on("pageerror", lambda exc: errors.append(exc.stack or str(exc)) if "blob:" in (exc.stack or "") else None)
    try:
        name = f"oracle_{frontend}.ipynb"
        _start_kernel(url, token, name)
        page.goto(f"{url}/{FRONTENDS[frontend].format(name=name)}?token={token}", timeout=WAIT_MS)
        page.wait_for_function(f"() => document.querySelectorAll('{PANEL} .jp-Cell').length === 3",
                               timeout=WAIT_MS)
        _run_cell(page, 0)
        page.wait_for_selector(".hmrf-oracle .points circle", timeout=WAIT_MS)
        page.wait_for_function("() => +document.querySelector('.hmrf-oracle').dataset.version >= 1")
        s0 = _state(page)
        plot = page.locator(".hmrf-oracle-svg")
        first_picture = _pixels(plot.screenshot())
        assert len(s0["labels"]) == 75 and set(s0["labels"]) == {0, 1, 2}
        assert s0["nAnswers"] == "0" and s0["nConstraints"] == "0" and s0["lines"] == 0
        q0 = [int(v) for v in s0["query"].split(",")]
        assert len(q0) == 2 and s0["rings"] == 2

        # answers: button, key, key, key
        page.click(".hmrf-oracle button[data-action='must']")
        s1 = _after(page, int(s0["version"]))
        assert (s1["nAnswers"], s1["nConstraints"], s1["lines"]) == ("1", "1", 1)
        assert s1["query"] != s0["query"] and s1["focused"]
        page.keyboard.press("c")
        s2 = _after(page, int(s1["version"]))
        page.keyboard.press("d")
        s3 = _after(page, int(s2["version"]))
        page.keyboard.press("m")
        s4 = _after(page, int(s3["version"]))
        assert [s["nAnswers"] for s in (s2, s3, s4)] == ["2", "3", "4"]
        assert [s["nConstraints"] for s in (s2, s3, s4)] == ["2", "2", "3"]  # "don't know" adds none
        assert len({s["query"] for s in (s0, s1, s2, s3, s4)}) == 5

        # a must-link of one's own between two points of different clusters joins them
        labels = s4["labels"]
        i = 0
        j = next(v for v in range(len(labels) - 1, 0, -1) if labels[v] != labels[i])
        _click_point(page, i)
        _click_point(page, j)
        assert _state(page)["selected"] == f"{i},{j}"
        page.keyboard.press("m")
        s5 = _after(page, int(s4["version"]))
        assert s5["labels"][i] == s5["labels"][j] and s5["selected"] == ""
        assert (s5["nAnswers"], s5["nConstraints"]) == ("5", "4")
        # a cannot-link of one's own between two points of one cluster parts them (button)
        a = 1
        b = next(v for v in range(len(labels) - 1, 1, -1)
                 if s5["labels"][v] == s5["labels"][a] and v != j and f"{a},{v}" not in s5["pairs"])
        _click_point(page, a)
        _click_point(page, b)
        page.click(".hmrf-oracle button[data-action='cannot']")
        s6 = _after(page, int(s5["version"]))
        assert s6["labels"][a] != s6["labels"][b]
        assert (s6["nAnswers"], s6["nConstraints"], s6["lines"]) == ("6", "5", 5)
        assert s6["dashed"] == int(s6["nViolated"])
        assert s6["labels"] != s0["labels"]
        changed = (_pixels(plot.screenshot()) != first_picture).any(axis=-1).sum()
        assert changed > 200, f"only {changed} pixels of the plot changed"

        # the notebook's own shortcuts did not fire: same cells, still code
        assert page.locator(f"{PANEL} .jp-Cell").count() == 3
        assert page.locator(f"{PANEL} .jp-CodeCell").count() == 2
        assert page.locator(f"{PANEL} .jp-MarkdownCell").count() == 1

        # the kernel holds what the page shows
        _run_cell(page, 1)
        out = page.locator(f"{PANEL} .jp-OutputArea-output", has_text="STATE")
        out.wait_for(timeout=WAIT_MS)
        kernel = json.loads(out.inner_text().split("STATE", 1)[1])
        assert kernel["answers"] == [True, False, None, True]
        assert kernel["own_pairs"] == [[i, j, 1], sorted([a, b]) + [-1]]
        assert (kernel["n_answers"], kernel["n_constraints"]) == (6, 5)
        assert kernel["labels"] == s6["labels"]
        assert not errors, errors
    except Exception:
        # what the page showed, for the failure report
        shot = Path(server[2]) / f"failure-{frontend}.png"
        page.screenshot(path=str(shot))
        dialogs = page.locator(".jp-Dialog").all_inner_texts()
        print(f"screenshot: {shot}; dialogs: {dialogs}; page errors: {errors}")
        raise
    finally:
        page.close()
