"""The built documentation renders its formulas, offline, in a real browser.

The site is built once (``mkdocs build --strict`` into a temporary folder) and checked two ways:

- statically, every page: all TeX is inside the elements that pymdownx.arithmatex hands to
  MathJax (``.arithmatex``); raw ``$``, ``$$``, ``\\(``, ``\\[`` or TeX commands left in the
  text mean a formula that never renders (Markdown ate it, e.g. underscores read as emphasis);
- in Debian's headless Chromium, with the site served on 127.0.0.1 only and every request
  recorded: each page with formulas is opened (``--dump-dom`` after MathJax ran, under a
  virtual-time budget), and every formula must have become MathJax output (``mjx-container``),
  none may be a MathJax error (``mjx-merror``), no raw TeX may be left in the text, MathJax and
  its fonts must come from the site itself, and no request may fail.

The browser checks skip, saying why, where ``chromium`` is not installed (``apt-get install
chromium``); under CI (``CI`` set) its absence is a failure, since .ci/run installs it.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import functools
import html.parser
import http.server
import importlib
import inspect
import json
import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

pytest.importorskip("mkdocs", reason="the docs build needs the dev extra (mkdocs)")

#: the site build (~12 s) and the browser (~1 min on 2 cores) take long: the whole module runs in
#: the slow step of CI (``-m slow``), which builds the site once for all of it
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
#: pages whose formulas must render, whatever else changes: the theory, the theorems (all
#: display formulas) and a page of the API reference (formulas from docstrings, via
#: mkdocstrings; the reference has one page per module under api/)
REQUIRED_PAGES = ("theory/", "theorems/", "api/dgp.classification/")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    # no name resolves but the loopback address: the test is offline on any machine
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
)
#: TeX that must not appear in the text of a page outside the math MathJax typesets
RAW_TEX = re.compile(r"\$|\\[()\[\]]|\\(?:begin|end)\{|\\[A-Za-z]{2,}")
#: elements whose text is not prose: code, scripts, and MathJax's own output
NOT_PROSE = {"code", "pre", "script", "style", "textarea", "mjx-container", "svg", "math"}
VOID = {
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
    "track", "wbr",
}  # fmt: skip


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def need_chromium() -> str:
    path = chromium_path()
    if path is None:
        reason = "Debian's chromium is not installed (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; .ci/run installs it, so CI must not skip this test")
        pytest.skip(reason)
    return path


# ---------------------------------------------------------------------------------------------
# reading a page


@dataclass
class Formula:
    text: str = ""  # text outside MathJax's output (raw TeX if MathJax did not run)
    rendered: int = 0  # mjx-container elements inside
    errors: list[str] = field(default_factory=list)  # mjx-merror texts


@dataclass
class Page:
    formulas: list[Formula] = field(default_factory=list)
    raw_tex: list[str] = field(default_factory=list)  # prose snippets with TeX in them
    typeset: bool = False  # the marker docs/javascripts/mathjax.js sets when MathJax is done


class _Reader(html.parser.HTMLParser):
    """Split a page into formulas (``.arithmatex``) and prose, skipping code and scripts."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Page()
        self.stack: list[tuple[str, bool, bool]] = []  # (tag, opens a formula, not prose)
        self.formula: Formula | None = None
        self.depth_formula = 0
        self.skip = 0
        self.merror: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "html" and a.get("data-mathjax") == "typeset":
            self.page.typeset = True
        if tag in VOID:
            return
        classes = (a.get("class") or "").split()
        opens = self.formula is None and "arithmatex" in classes
        if opens:
            self.formula = Formula()
            self.page.formulas.append(self.formula)
        if self.formula is not None and tag == "mjx-container":
            self.formula.rendered += 1
        if tag == "mjx-merror":
            self.merror = []
        not_prose = tag in NOT_PROSE
        self.skip += not_prose
        self.stack.append((tag, opens, not_prose))

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        while self.stack:
            name, opens, not_prose = self.stack.pop()
            self.skip -= not_prose
            if name == "mjx-merror" and self.merror is not None and self.formula is not None:
                self.formula.errors.append("".join(self.merror))
                self.merror = None
            if opens:
                self.formula = None
            if name == tag:
                break

    def handle_data(self, data: str) -> None:
        if self.merror is not None:
            self.merror.append(data)
        if self.skip:
            return
        if self.formula is not None:
            self.formula.text += data
        elif RAW_TEX.search(data):
            self.page.raw_tex.append(" ".join(data.split())[:120])


def read_page(markup: str) -> Page:
    reader = _Reader()
    reader.feed(markup)
    reader.close()
    return reader.page


# ---------------------------------------------------------------------------------------------
# the site, served on the loopback interface


def session_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of this test session's that every pytest-xdist worker sees (the one above the
    worker's own), or the session's own folder without xdist."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once per test session: under pytest-xdist the workers share one build in
    a folder of the session's (the first builds it, the others wait on a file lock)."""
    base = session_folder(tmp_path_factory)
    out, done = base / "docs-site", base / "docs-site.built"
    with open(base / "docs-site.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(out, ignore_errors=True)  # what a failed build left
            out.mkdir()
            env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
            proc = subprocess.run(
                [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(out)],
                cwd=ROOT,
                capture_output=True,
                text=True,
                env=env,
                timeout=300,
            )
            assert proc.returncode == 0, (
                f"mkdocs build --strict failed:\n{proc.stdout}{proc.stderr}")
            done.touch()
    return out


def math_pages(site: Path) -> list[str]:
    """Site paths (``theory/``) of the pages with at least one formula."""
    pages = []
    for path in sorted(site.rglob("index.html")):
        if 'class="arithmatex"' in path.read_text(encoding="utf-8"):
            rel = path.parent.relative_to(site).as_posix()
            pages.append("" if rel == "." else f"{rel}/")
    return pages


class _Server(http.server.ThreadingHTTPServer):
    requests: list[tuple[str, int]]

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a tab closed mid-transfer
            super().handle_error(request, client_address)


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        self.server.requests.append((self.path, int(code)))  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass


@pytest.fixture(scope="module")
def served(site: Path):
    handler = functools.partial(_Handler, directory=str(site))
    server = _Server(("127.0.0.1", 0), handler)
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", server.requests
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


class Browser:
    """Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
    JSON messages ending in NUL on file descriptors 3 and 4), so no port and no websocket."""

    def __init__(self, chromium: str, profile: str) -> None:
        cmd_r, self._cmd_w = os.pipe()
        self._resp_r, resp_w = os.pipe()

        def child_fds() -> None:  # in the child, before exec: the pipe ends on fds 3 and 4
            a = fcntl.fcntl(cmd_r, fcntl.F_DUPFD, 10)  # first clear of 3 and 4
            b = fcntl.fcntl(resp_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [
                chromium,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=child_fds,
            pass_fds=(3, 4),
            start_new_session=True,  # its helper processes in a group of their own
        )
        os.close(cmd_r)
        os.close(resp_w)
        self._next = 0
        self._lock = threading.Lock()
        self._replies: dict[int, dict] = {}
        self._events: list[dict] = []
        self._cond = threading.Condition(self._lock)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        buf = b""
        while True:
            chunk = os.read(self._resp_r, 1 << 16)
            if not chunk:
                break
            buf += chunk
            *messages, buf = buf.split(b"\0")
            with self._cond:
                for raw in messages:
                    msg = json.loads(raw)
                    if "id" in msg:
                        self._replies[msg["id"]] = msg
                    else:
                        self._events.append(msg)
                self._cond.notify_all()
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    _closed = False

    def send(self, method: str, session: str | None = None, timeout: float = 60, **params):
        """Send one command and wait for its reply; a protocol error fails the test."""
        with self._cond:
            self._next += 1
            ident = self._next
        msg = {"id": ident, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        with self._cond:
            ok = self._cond.wait_for(lambda: ident in self._replies or self._closed, timeout)
            reply = self._replies.pop(ident, None)
        assert ok and reply is not None, f"chromium gave no reply to {method} in {timeout} s"
        assert "error" not in reply, f"{method}: {reply['error']}"
        return reply["result"]

    def events(self, session: str) -> list[dict]:
        with self._cond:
            return [e for e in self._events if e.get("sessionId") == session]

    def open(self, url: str) -> str:
        """Open ``url`` in a new tab; return the tab's session id."""
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Network"):
            self.send(f"{domain}.enable", session)
        self.send(
            "Emulation.setDeviceMetricsOverride",
            session,
            width=1280,
            height=900,
            deviceScaleFactor=1,
            mobile=False,
        )
        self.send("Page.navigate", session, url=url)
        return session

    def wait_typeset(self, session: str, timeout_ms: int = 30_000) -> str:
        """The page's HTML once MathJax has marked it typeset (``data-mathjax``), or as it is
        when ``timeout_ms`` ran out."""
        js = f"""new Promise(done => {{
            const t0 = Date.now();
            const poll = () => (document.documentElement.dataset.mathjax === "typeset"
                                || Date.now() - t0 > {timeout_ms})
                ? done(document.documentElement.outerHTML) : setTimeout(poll, 50);
            poll();
        }})"""
        # until the navigation has replaced about:blank and the page's scripts can run: on a
        # loaded machine that takes seconds, and a page read before it is a blank one
        deadline = time.monotonic() + timeout_ms / 1000
        while time.monotonic() < deadline:
            state = self.send("Runtime.evaluate", session, returnByValue=True,
                              expression="[location.href, document.readyState]")
            href, ready = state["result"].get("value") or ("", "loading")
            if href.startswith("http") and ready != "loading":
                break
            time.sleep(0.05)
        out = self.send(
            "Runtime.evaluate",
            session,
            timeout=timeout_ms / 1000 + 30,
            expression=js,
            awaitPromise=True,
            returnByValue=True,
        )
        return out["result"]["value"]

    def screenshot(self, session: str, path: Path) -> None:
        """A PNG of the whole page (not only the viewport)."""
        self.send("Page.bringToFront", session)  # a background tab draws no frames
        size = self.send("Page.getLayoutMetrics", session)["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": 1280, "height": min(size["height"], 16000), "scale": 1}
        shot = self.send(
            "Page.captureScreenshot", session, format="png", clip=clip, captureBeyondViewport=True
        )
        path.write_bytes(base64.b64decode(shot["data"]))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.send("Browser.close", timeout=10)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        with contextlib.suppress(ProcessLookupError):  # helpers still running: end them
            os.killpg(self.proc.pid, signal.SIGTERM)
        os.close(self._cmd_w)
        self._reader.join(timeout=5)
        os.close(self._resp_r)


@dataclass
class Visit:
    page: Page
    requested: list[str]  # every URL the page asked for, as the browser saw it
    failed: list[str]  # requests that failed (no answer, refused, 4xx/5xx)
    exceptions: list[str]  # uncaught JavaScript exceptions
    base: str = ""  # the address the site was served at when the browser opened the page


def _visit(browser: Browser, session: str, shots: Path | None, name: str) -> Visit:
    markup = browser.wait_typeset(session)
    if shots is not None:
        browser.screenshot(session, shots / f"{name.strip('/').replace('/', '-') or 'home'}.png")
    events = browser.events(session)
    requested = [
        e["params"]["request"]["url"] for e in events if e["method"] == "Network.requestWillBeSent"
    ]
    urls = {e["params"]["requestId"]: e["params"]["request"]["url"] for e in events
            if e["method"] == "Network.requestWillBeSent"}  # fmt: skip
    failed = [
        f"{urls.get(e['params']['requestId'], '?')} ({e['params'].get('errorText')})"
        for e in events
        if e["method"] == "Network.loadingFailed"
    ] + [
        f"{e['params']['response']['url']} (HTTP {e['params']['response']['status']})"
        for e in events
        if e["method"] == "Network.responseReceived" and e["params"]["response"]["status"] >= 400
    ]
    exceptions = [
        e["params"]["exceptionDetails"].get("exception", {}).get("description", "?")
        for e in events
        if e["method"] == "Runtime.exceptionThrown"
    ]
    return Visit(read_page(markup), requested, failed, exceptions)


#: the pages with formulas are opened in this many groups, one browser each, so that no test
#: waits on all of them (about a second of Chromium's time a page on 2 cores)
RENDER_GROUPS = 4


@pytest.fixture(
    scope="module", params=range(RENDER_GROUPS), ids=lambda g: f"pages{g + 1}of{RENDER_GROUPS}"
)
def rendered(
    request: pytest.FixtureRequest, site: Path, served, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Visit]:
    """Every ``RENDER_GROUPS``-th page with formulas, from the ``request.param``-th on, as the
    browser left it (all of the group open at once in one browser).

    Each group is opened once per test session: under pytest-xdist the tests of one group may
    run on two workers, which share the visits through a folder of the session's (the first
    opens the pages, the other waits on a file lock and reads what it saw).

    ``DGP_DOCS_SCREENSHOTS=DIR`` also saves a full-page PNG of each into DIR, to look at.
    """
    chromium = need_chromium()
    base, _ = served
    saved = session_folder(tmp_path_factory) / f"docs-rendered-{request.param}.pickle"
    with open(saved.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if saved.exists():
            return pickle.loads(saved.read_bytes())
        pages = math_pages(site)[request.param :: RENDER_GROUPS]
        shots = os.environ.get("DGP_DOCS_SCREENSHOTS")
        shot_dir = Path(shots) if shots else None
        if shot_dir is not None:
            shot_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="dgp-chromium-",
                                         ignore_cleanup_errors=True) as profile:
            browser = Browser(chromium, profile)
            try:
                sessions = {p: browser.open(base + p) for p in pages}
                visits = {p: _visit(browser, s, shot_dir, p) for p, s in sessions.items()}
            finally:
                browser.close()
        for visit in visits.values():
            visit.base = base
        saved.write_bytes(pickle.dumps(visits))
        return visits


# ---------------------------------------------------------------------------------------------
# tests


def test_reader_sees_raw_and_rendered_math() -> None:
    page = read_page(
        '<html data-mathjax="typeset"><body><p>a <em>ij</em> $x$ and \\(y\\)</p>'
        "<pre><code>$ dgp tour</code></pre>"
        '<div class="arithmatex"><mjx-container><mjx-merror>Undefined control sequence'
        "</mjx-merror></mjx-container></div>"
        '<span class="arithmatex">\\(z_i\\)</span><br><img src="x.png"></body></html>'
    )
    assert page.typeset
    assert page.raw_tex == ["$x$ and \\(y\\)"]  # not the code, not the formulas
    assert [f.rendered for f in page.formulas] == [1, 0]
    assert page.formulas[0].errors == ["Undefined control sequence"]
    assert page.formulas[1].text == "\\(z_i\\)"


def test_every_page_hands_all_its_tex_to_mathjax(site: Path) -> None:
    """No page has TeX that arithmatex did not wrap: that TeX would never render."""
    bad = {}
    for path in sorted(site.rglob("*.html")):
        page = read_page(path.read_text(encoding="utf-8"))
        if page.raw_tex:
            bad[path.relative_to(site).as_posix()] = page.raw_tex
    assert not bad, "TeX outside the math MathJax typesets:\n" + "\n".join(
        f"  {k}: {s!r}" for k, v in bad.items() for s in v
    )
    pages = math_pages(site)
    assert set(REQUIRED_PAGES) <= set(pages), pages


def test_mathjax_is_part_of_the_site(site: Path) -> None:
    mathjax = site / "assets" / "mathjax"
    assert (mathjax / "tex-mml-chtml.js").stat().st_size > 500_000
    fonts = list((mathjax / "output" / "chtml" / "fonts" / "woff-v2").glob("*.woff"))
    assert len(fonts) > 10
    for path in site.rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        # every script and style sheet is the site's own: nothing is fetched from elsewhere
        external = re.findall(r'<(?:script|link)[^>]*(?:src|href)="(https?:)?//[^"]*"', text)
        assert not external, f"{path.relative_to(site)} loads {external}"


def test_the_required_pages_have_formulas(site: Path) -> None:
    pages = math_pages(site)
    assert set(REQUIRED_PAGES) <= set(pages), sorted(pages)


# The browser's reading of every page takes about a minute on 2 cores, in RENDER_GROUPS pieces.
def test_formulas_render_in_the_browser(rendered: dict[str, Visit]) -> None:
    assert rendered, "a group of pages with formulas is empty"
    problems = []
    for name, visit in rendered.items():
        page = visit.page
        if not page.typeset:
            problems.append(f"{name}: MathJax did not finish typesetting")
        for k, f in enumerate(page.formulas):
            if not f.rendered:
                problems.append(f"{name}: formula {k} not rendered: {f.text.strip()[:100]!r}")
            elif f.text.strip():
                problems.append(f"{name}: formula {k} left raw TeX: {f.text.strip()[:100]!r}")
            problems += [f"{name}: formula {k}: MathJax error {e!r}" for e in f.errors]
        problems += [f"{name}: raw TeX in the text: {s!r}" for s in page.raw_tex]
        problems += [f"{name}: JavaScript exception {e}" for e in visit.exceptions]
        if not page.formulas:
            problems.append(f"{name}: no formula found")
    assert not problems, "\n".join(problems)


def test_the_browser_fetched_only_the_site(rendered: dict[str, Visit]) -> None:
    for name, visit in rendered.items():
        base = visit.base  # the site as served when the page was opened
        assert base.startswith("http://127.0.0.1:"), (name, base)
        assert not visit.failed, f"{name}: requests that failed: {visit.failed}"
        outside = [u for u in visit.requested if not u.startswith((base, "data:", "blob:"))]
        assert not outside, f"{name} asked for something outside the site: {outside}"
        local = [u[len(base) - 1 :] for u in visit.requested]
        assert "/assets/mathjax/tex-mml-chtml.js" in local, (name, local)
        fonts = [u for u in local if u.startswith("/assets/mathjax/output/chtml/fonts/")]
        assert fonts, (name, local)


# ---------------------------------------------------------------------------------------------
# the API reference (mkdocstrings)

_HEADING = re.compile(r'<h\d id="(dgp(?:\.\w+)+)" class="doc doc-heading"')
_ROW = re.compile(
    r'<tr class="doc-section-item">\s*<td>\s*<code[^>]*>(?:<span[^>]*>)?(\w+)(?:</span>)?</code>'
    r"(.*?)</tr>",
    re.S,
)


def api_pages(site: Path) -> dict[str, str]:
    """The HTML of each page of the API reference (``api/<module>/``), by module name."""
    return {
        path.parent.name: path.read_text(encoding="utf-8")
        for path in sorted((site / "api").glob("*/index.html"))
    }


def api_sections(site: Path) -> dict[str, str]:
    """The HTML of each documented object of the API pages, up to the next object's heading."""
    out: dict[str, str] = {}
    for markup in api_pages(site).values():
        heads = list(_HEADING.finditer(markup))
        ends = [h.start() for h in heads[1:]] + [len(markup)] * bool(heads)
        for h, end in zip(heads, ends, strict=True):
            assert h.group(1) not in out, f"{h.group(1)} is documented twice"
            out[h.group(1)] = markup[h.end() : end]
    return out


def section_rows(html_segment: str, title: str) -> list[tuple[str, str]]:
    """(name, rest of the row) of the table of a docstring section (``Parameters:``, ...)."""
    m = re.search(
        rf'doc-section-title">{title}:</span>(?:</p>)?\s*<table>(.*?)</table>', html_segment, re.S
    )
    return _ROW.findall(m.group(1)) if m else []


def resolve(ident: str) -> object | None:
    """The object ``dgp.x.y.name`` names; None where its module needs a missing extra."""
    parts = ident.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError as exc:
            if exc.name and not exc.name.startswith("dgp"):
                return None  # torch, matplotlib, ... not installed
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name)
        return obj
    raise AssertionError(f"cannot import {ident}")


def test_api_parameter_defaults_are_the_signatures(site: Path) -> None:
    """A parameter shown as ``required`` has no default in the signature, and conversely (the
    first of numpydoc's ``{choices}`` is no default for a required argument)."""
    checked = {}
    wrong = []
    for ident, segment in api_sections(site).items():
        rows = section_rows(segment, "Parameters")
        if not rows:
            continue
        obj = resolve(ident)
        if obj is None:
            continue
        params = inspect.signature(obj).parameters
        for name, rest in rows:
            if name not in params:
                continue
            p = params[name]
            needed = p.default is inspect.Parameter.empty and p.kind not in (
                inspect.Parameter.VAR_POSITIONAL,
                inspect.Parameter.VAR_KEYWORD,
            )
            shown = "<em>required</em>" in rest
            checked[f"{ident}({name})"] = needed
            if shown != needed:
                wrong.append(f"{ident}: {name} shown {'required' if shown else 'with a default'}")
    assert not wrong, "\n".join(wrong)
    objective = [v for k, v in checked.items() if k.endswith(".classify_objective(objective)")]
    assert objective == [True], "classify_objective's objective must be checked and required"
    assert sum(checked.values()) > 20 and len(checked) > 60, len(checked)


def _numpydoc_attributes(doc: str) -> list[str]:
    m = re.search(r"^Attributes\n-{5,}\n(.*?)(?=^\S[^\n]*\n-{5,}\n|\Z)", doc, re.S | re.M)
    if not m:
        return []
    names = []
    for line in m.group(1).splitlines():
        mm = re.match(r"^(\w+(?:, \w+)*)(?: :|$)", line)
        if mm:
            names += mm.group(1).split(", ")
    return names


def test_api_shows_the_attributes_of_result_classes(site: Path) -> None:
    """Every class whose docstring has a numpydoc ``Attributes`` section shows it as a table
    naming each attribute."""
    shown = {}
    for ident, segment in api_sections(site).items():
        obj = resolve(ident)
        if not isinstance(obj, type) or not obj.__module__.startswith("dgp"):
            continue
        names = _numpydoc_attributes(inspect.getdoc(obj) or "")
        if names:
            rows = [name for name, _ in section_rows(segment, "Attributes")]
            assert rows == names, f"{ident}: the page shows attributes {rows}, not {names}"
            shown[ident] = names
    assert any(k.endswith(".Prototypes") for k in shown), sorted(shown)


# ---------------------------------------------------------------------------------------------
# the site as a reader sees it: figures, the split API reference, tables, code, search, footer

#: the API reference was one page of 228,000 px; a page per module stays far below this
API_PAGE_MAX_PX = 40_000
API_PAGE_MAX_BYTES = 400_000
#: pages with the figures of the site (three-panel ones among them) and with wide tables/code
FIGURE_PAGES = ("getting-started/", "figures/", "tutorials/choose-tau/")
TABLE_PAGES = ("theory/", "getting-started/", "api/", "figures/", "audit/", "decide/")
CODE_PAGES = ("cli/", "getting-started/", "audit/")


def evaluate(browser: Browser, session: str, js: str, timeout: float = 60):
    """The value of a JavaScript expression (a promise is awaited) in the page."""
    out = browser.send(
        "Runtime.evaluate",
        session,
        timeout=timeout,
        expression=js,
        awaitPromise=True,
        returnByValue=True,
    )
    assert "exceptionDetails" not in out, out["exceptionDetails"]
    return out["result"].get("value")


@pytest.fixture(scope="module")
def reader(site: Path, served):
    """A headless Chromium at a normal desktop viewport (1280 x 900, scale 1) and a function
    that opens a page of the site and waits until it is typeset."""
    chromium = need_chromium()
    base, _ = served
    with tempfile.TemporaryDirectory(prefix="dgp-chromium-", ignore_cleanup_errors=True) as profile:
        browser = Browser(chromium, profile)

        def open_page(path: str) -> str:
            assert (site / path / "index.html").exists(), f"the site has no page {path}"
            session = browser.open(base + path)
            browser.wait_typeset(session)
            return session

        try:
            yield browser, open_page
        finally:
            browser.close()


_IMAGES_JS = """(async () => {
    const imgs = [...document.querySelectorAll(".md-content .md-typeset img")];
    await Promise.all(imgs.map(i => i.decode().catch(() => null)));
    return imgs.map(i => ({src: i.getAttribute("src"), natural: i.naturalWidth,
        shown: i.getBoundingClientRect().width,
        zoomable: i.classList.contains("dgp-zoomable")}));
})()"""

_ZOOM_JS = """(async () => {
    const img = [...document.querySelectorAll(".md-content .md-typeset img")][%d];
    img.scrollIntoView();
    img.click();
    const box = document.querySelector(".dgp-lightbox");
    if (!box) return null;
    const big = box.querySelector("img");
    await big.decode().catch(() => null);
    return {natural: big.naturalWidth, shown: big.getBoundingClientRect().width,
            reach: box.scrollWidth, open: document.querySelectorAll(".dgp-lightbox").length};
})()"""

_CLOSE_JS = """(() => {
    document.dispatchEvent(new KeyboardEvent("keydown", {key: "Escape"}));
    return document.querySelectorAll(".dgp-lightbox").length;
})()"""


def test_figures_open_at_full_size(reader) -> None:
    """A figure squeezed into the text column (a three-panel figure is ~1.5-2.3 times wider than
    the column at 1280 px) opens on click at its natural size, 1 image pixel per screen pixel,
    the whole width reachable by scrolling: its tick labels and legends are as legible as the
    figure was drawn. Escape closes it."""
    browser, open_page = reader
    shots = os.environ.get("DGP_DOCS_SCREENSHOTS")
    squeezed = []
    for path in FIGURE_PAGES:
        session = open_page(path)
        images = evaluate(browser, session, _IMAGES_JS)
        assert images, f"{path}: no figure found"
        for k, img in enumerate(images):
            assert img["natural"] > 0, f"{path}: {img['src']} did not load"
            assert img["zoomable"], f"{path}: {img['src']} cannot be clicked open"
            if img["natural"] <= img["shown"] + 1:
                continue  # shown at full size already
            squeezed.append((path, img))
            zoom = evaluate(browser, session, _ZOOM_JS % k)
            assert zoom is not None, f"{path}: clicking {img['src']} opened nothing"
            assert zoom["open"] == 1
            assert zoom["shown"] >= zoom["natural"] - 0.5, (path, img["src"], zoom)
            assert zoom["reach"] >= zoom["natural"], (path, img["src"], zoom)
            if shots:
                Path(shots).mkdir(parents=True, exist_ok=True)
                name = f"zoom-{path.strip('/').replace('/', '-')}-{k}.png"
                browser.send("Page.bringToFront", session)
                shot = browser.send("Page.captureScreenshot", session, format="png")
                (Path(shots) / name).write_bytes(base64.b64decode(shot["data"]))
            assert evaluate(browser, session, _CLOSE_JS) == 0, "Escape left the figure open"
    wide = [img for _, img in squeezed if img["natural"] >= 1.5 * img["shown"]]
    assert wide, f"no figure much wider than the column on {FIGURE_PAGES}: {squeezed}"


def test_api_reference_is_split_per_module(site: Path, reader) -> None:
    """One page per module of docs/api.md, each of a readable size; the index links them all;
    the same object is never documented twice (the old single page repeated its entries)."""
    hook_spec = importlib.util.spec_from_file_location("_hooks_api", ROOT / "docs" / "_hooks.py")
    hooks = importlib.util.module_from_spec(hook_spec)
    hook_spec.loader.exec_module(hooks)
    entries = hooks.api_entries((ROOT / "docs" / "api.md").read_text(encoding="utf-8"))
    pages = api_pages(site)
    assert sorted(pages) == sorted(e.module for e in entries) and len(pages) >= 30
    index = (site / "api" / "index.html").read_text(encoding="utf-8")
    assert "doc-heading" not in index  # the index documents nothing itself
    for name, markup in pages.items():
        assert f'href="{name}/"' in index, f"the API index has no link to {name}"
        assert len(markup.encode()) < API_PAGE_MAX_BYTES, (name, len(markup))
    # the longest pages, measured as a browser lays them out
    browser, open_page = reader
    biggest = sorted(pages, key=lambda n: len(pages[n]), reverse=True)[:3]
    for name in biggest:
        session = open_page(f"api/{name}/")
        height = evaluate(browser, session, "document.documentElement.scrollHeight")
        assert 1000 < height < API_PAGE_MAX_PX, (name, height)
    # one entry per object: no function or class documented under two names
    seen: dict[int, str] = {}
    for ident in api_sections(site):
        obj = resolve(ident)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        assert id(obj) not in seen, f"{ident} repeats {seen[id(obj)]}"
        seen[id(obj)] = ident
    assert len(seen) > 100, len(seen)


_SIGNATURE = re.compile(r'<div class="doc-signature[^"]*">(.*?)</div>', re.S)


def test_api_signatures_show_real_default_values(site: Path) -> None:
    """Signatures show the value of a default, not the name of the constant it comes from."""
    import dgp

    named = []
    for name, markup in api_pages(site).items():
        for sig in _SIGNATURE.findall(markup):
            text = html.unescape(re.sub(r"<[^>]+>", "", sig))
            named += [f"{name}: {m}" for m in re.findall(r"\w+=[A-Z][A-Z0-9_]{2,}\b", text)]
    assert not named, "\n".join(named)
    rtol = inspect.signature(dgp.classify).parameters["rtol"].default
    page = html.unescape(re.sub(r"<[^>]+>", "", api_pages(site)["dgp.classification"]))
    assert f"rtol={rtol!r}" in page.replace("\n", "").replace(" ", "")


def test_search_previews_show_no_tex(site: Path) -> None:
    """The search index (what the previews show) has formulas as text, not TeX source."""
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    raw = []
    for doc in index["docs"]:
        for key in ("title", "text"):
            prose = re.sub(r"<(pre|code)>.*?</\1>", "", doc[key], flags=re.S)
            if RAW_TEX.search(prose):
                raw.append(f"{doc['location']}: {prose[:120]!r}")
    assert not raw, "\n".join(raw[:20])
    theory = " ".join(d["text"] for d in index["docs"] if d["location"].startswith("theory/"))
    assert "log w_ij" in theory and "τ" in theory  # the formulas are there, as text


def test_search_text_of_formulas() -> None:
    spec = importlib.util.spec_from_file_location("_hooks_tex", ROOT / "docs" / "_hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    cases = {
        r"\(s_{ij} = \langle \hat z_i, \hat z_j\rangle/\tau\)": "s_ij = ⟨z_i, z_j⟩/τ",
        r"\(\rho = 1 + \tau\log\varepsilon \ge -\frac{1}{K-1}\)": "ρ = 1 + τ log ε ≥ -1/(K-1)",
        r"\[ G \succeq 0, \quad e^{s_{ik}} \in \mathbb R^d \]": "G ⪰ 0, e^s_ik ∈ ℝ^d",
        r"x \(\Lambda\) y": "x Λ y",
    }
    for tex, text in cases.items():
        assert hooks.search_text(tex) == text, (tex, hooks.search_text(tex))


def test_every_page_has_previous_and_next_links(site: Path) -> None:
    """Material's navigation footer: every page but the first and the last links both ways."""
    prev_next = {}
    for path in sorted(site.rglob("index.html")):
        text = path.read_text(encoding="utf-8")
        prev_next[path.parent.relative_to(site).as_posix()] = (
            "md-footer__link--prev" in text,
            "md-footer__link--next" in text,
        )
    assert prev_next["."] == (False, True)
    one_way = [p for p, (a, b) in prev_next.items() if not (a and b) and p != "."]
    assert len(one_way) <= 1, one_way  # the last page of the nav only
    assert prev_next["api"] == (True, True)


_BROKEN_WORDS_JS = """(() => {
    const broken = [];
    const walker = document.createTreeWalker(
        document.querySelector(".md-content"), NodeFilter.SHOW_TEXT,
        {acceptNode: n => n.parentElement.closest("table")
            && !n.parentElement.closest("mjx-container")
            ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_REJECT});
    let cells = 0;
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        cells += 1;
        for (const m of node.data.matchAll(/[A-Za-z0-9_]{2,}/g)) {
            const range = document.createRange();
            range.setStart(node, m.index);
            range.setEnd(node, m.index + m[0].length);
            const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
            if (lines.size > 1) broken.push(m[0]);
        }
    }
    return {cells, broken};
})()"""


def test_tables_do_not_break_words(reader) -> None:
    """No word of a table cell is split across two lines ("similarit/y"): a table too wide for
    the column scrolls instead."""
    browser, open_page = reader
    bad = []
    for path in TABLE_PAGES:
        out = evaluate(browser, open_page(path), _BROKEN_WORDS_JS)
        assert out["cells"] > 0, f"{path}: no table"
        bad += [f"{path}: {w}" for w in out["broken"]]
    assert not bad, "words broken across lines:\n" + "\n".join(bad)


_CODE_JS = """(() => [...document.querySelectorAll(".md-content pre > code")].map(el => {
    const wide = el.scrollWidth > el.clientWidth + 1;
    const overflow = getComputedStyle(el).overflowX;
    el.scrollLeft = el.scrollWidth;
    const style = getComputedStyle(el);
    return {wide, overflow, reached: el.scrollLeft + el.clientWidth >= el.scrollWidth - 1,
            bar: el.offsetHeight - el.clientHeight,
            shadow: style.backgroundAttachment.includes("local")
                && style.backgroundImage.includes("radial-gradient"),
            text: el.textContent.slice(0, 60)};
}))()"""


def test_long_code_lines_scroll(reader) -> None:
    """A code block wider than the column scrolls sideways to its last character, with a scroll
    bar that takes room under it and a shadow at the edge past which the lines continue: no line
    looks cut at the right edge (headless screenshots hide scroll bars; the shadow shows)."""
    browser, open_page = reader
    wide = 0
    for path in CODE_PAGES:
        for block in evaluate(browser, open_page(path), _CODE_JS):
            if not block["wide"]:
                continue
            wide += 1
            assert block["overflow"] in ("auto", "scroll"), (path, block)
            assert block["reached"], (path, block)
            assert block["bar"] > 0 and block["shadow"], (path, block)
    assert wide > 0, "no code block wider than the column: the test checks nothing"
