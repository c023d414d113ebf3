"""Every code example of the documentation runs, so that none can rot.

- ``docs/**/*.md`` and ``README.md``: fenced blocks run in page order, in one namespace and one
  temporary working directory per page:

  * ``python``: executed (its ``assert`` statements are the page's claims);
  * ``pycon``: a doctest (``>>>`` prompts, expected output), notebook-style;
  * ``bash``/``sh``/``shell``: every ``dgp ...`` / ``python -m dgp ...`` line runs through
    :func:`dgp.cli.main` and must exit 0; install and test lines (``pip``, ``python -m pytest``,
    ``mkdocs``) are not run; any other command fails the test, so a page cannot show one that
    is never checked; a phrase in double quotes in a command's trailing comment (``dgp optimum
    W.npy --tau 1 --dim 2  # ...: "globally optimal"``) is what the command prints: it must be
    in its output (whitespace-insensitive), so that a comment cannot claim a result the command
    does not show;
  * ``console``: ``$ dgp ...`` lines as above, and the lines that follow are the expected output
    (``...`` matches anything, as in doctests).

  An HTML comment on the line before a fence changes that: ``<!-- docs-test: skip -->`` (not
  run), ``<!-- docs-test: exit=2 -->`` (each command must exit 2). A page may start with
  ``<!-- docs-test: requires=MODULE[,MODULE] -->``: skipped when one is missing.
- Doctests of every ``dgp`` module (``doctest.testmod``); ``dgp.torch*`` is skipped without
  torch, a module that needs another missing optional dependency is skipped by name.
- The CLI reference lists exactly the real subcommands (it is generated from ``--help``).
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import io
import os
import pkgutil
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

import dgp

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [*sorted(DOCS.rglob("*.md")), ROOT / "README.md"]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
NOT_RUN = ("pip ", "python -m pytest", "mkdocs ", "python docs/make_figures.py",
           "python docs/make_audit_table.py")

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>```+)(?P<info>[^`]*)$")
_MARK = re.compile(r"<!--\s*docs-test:\s*(?P<what>[^>]*?)\s*-->")


@dataclass
class Block:
    lang: str
    code: str
    line: int
    mark: str  # "", "skip", "exit=2", ...


def blocks(text: str) -> list[Block]:
    """The fenced code blocks of a Markdown page, with the docs-test mark before each."""
    out: list[Block] = []
    lines = text.splitlines()
    i = 0
    prev = ""
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            if lines[i].strip():
                prev = lines[i]
            i += 1
            continue
        indent, ticks = m.group("indent"), m.group("ticks")
        info = m.group("info").strip().split()
        lang = info[0].lstrip(".{").rstrip("}") if info else ""
        start = i + 1
        j = start
        while j < len(lines) and not lines[j].strip().startswith(ticks):
            j += 1
        body = [ln[len(indent) :] if ln.startswith(indent) else ln for ln in lines[start:j]]
        mm = _MARK.search(prev)
        out.append(Block(lang, "\n".join(body) + "\n", start + 1, mm.group("what") if mm else ""))
        prev = ""
        i = j + 1
    return out


def _dgp_argv(command: str) -> list[str]:
    """The arguments after ``dgp`` (or ``python -m dgp``) of one command line of a page."""
    argv = shlex.split(command, comments=True)  # a shell drops trailing comments
    if argv[:3] == ["python", "-m", "dgp"]:
        return argv[3:]
    if argv[:1] == ["dgp"]:
        return argv[1:]
    raise AssertionError(f"not a dgp command: {command!r}")


def _commands(code: str) -> list[str]:
    joined = code.replace("\\\n", " ")
    return [
        ln.strip() for ln in joined.splitlines() if ln.strip() and not ln.strip().startswith("#")
    ]


def _claims(command: str) -> list[str]:
    """The phrases in double quotes of a command line's trailing comment (``# ... "phrase"``):
    what the comment says the command prints."""
    depth = None
    for k, ch in enumerate(command):  # the first '#' outside quotes that starts a word
        if ch in "'\"" and depth in (None, ch):
            depth = ch if depth is None else None
        elif ch == "#" and depth is None and (k == 0 or command[k - 1].isspace()):
            return re.findall(r'"([^"]+)"', command[k:])
    return []


def test_claims_are_the_quoted_phrases_of_the_comment() -> None:
    assert _claims('dgp optimum W.npy --tau 1  # best: "globally optimal", "rank 2"') == [
        "globally optimal", "rank 2"]
    assert _claims('dgp phase --label "a # b" --x 1') == []
    assert _claims("dgp tour  # walks through the results") == []


def _expect_exit(mark: str) -> int:
    m = re.search(r"exit=(\d+)", mark)
    return int(m.group(1)) if m else 0


def _run_shell(block: Block, where: str, cli) -> None:
    for cmd in _commands(block.code):
        if cmd.startswith(NOT_RUN):
            continue
        assert cmd.startswith(("dgp ", "python -m dgp")), (
            f"{where}: the docs test runs only dgp commands; mark this block "
            f"<!-- docs-test: skip --> or change it: {cmd!r}"
        )
        r = cli(*_dgp_argv(cmd))
        assert r.code == _expect_exit(block.mark), f"{where}: `{cmd}` exited {r.code}:\n{r.output}"
        said = " ".join(r.output.split())
        for phrase in _claims(cmd):
            assert " ".join(phrase.split()) in said, (
                f"{where}: the comment of `{cmd}` says {phrase!r}, which its output does not "
                f"show:\n{r.output}"
            )


def _run_console(block: Block, where: str, cli) -> None:
    checker = doctest.OutputChecker()
    items: list[tuple[str, list[str]]] = []
    for ln in block.code.splitlines():
        if ln.startswith("$ "):
            items.append((ln[2:].strip(), []))
        elif items:
            items[-1][1].append(ln)
    assert items, f"{where}: a console block needs `$ ` command lines"
    for cmd, expected in items:
        r = cli(*_dgp_argv(cmd))
        out = r.output  # stdout and stderr, as a terminal shows them
        assert r.code == _expect_exit(block.mark), f"{where}: `{cmd}` exited {r.code}:\n{out}"
        want = "\n".join(expected).strip("\n") + "\n"
        got = "\n".join(ln.rstrip() for ln in out.splitlines()).strip("\n") + "\n"
        assert checker.check_output(want, got, FLAGS), (
            f"{where}: output of `{cmd}` differs.\n--- expected\n{want}--- got\n{got}"
        )


def _run_pycon(block: Block, where: str, ns: dict) -> None:
    test = doctest.DocTestParser().get_doctest(block.code, ns, where, where, block.line)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report = io.StringIO()
    runner.run(test, out=report.write, clear_globs=False)
    assert runner.failures == 0, report.getvalue()


def _requires(text: str) -> list[str]:
    m = re.search(r"<!--\s*docs-test:\s*requires=([\w.,]+)\s*-->", text)
    return m.group(1).split(",") if m else []


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except ModuleNotFoundError:  # a missing parent package
        return True


#: pages whose examples take long (audit.md runs five `dgp audit`s, each in a child importing
#: torch): they run in the slow step of CI (``-m slow``)
SLOW_PAGES = (
    "docs/audit.md",
    # pages whose examples take more than about 3 s of CPU
    "docs/decide.md",
    "docs/tutorials/batch-optimum.md",
    "docs/tutorials/choose-tau.md",
    "docs/tutorials/fixed-targets.md",
    "docs/tutorials/neighbour-embedding.md",
    "docs/tutorials/property-testing.md",
    "docs/tutorials/supcon-imbalance.md",
    "README.md",  # about 10 s: its fixed-dimension and batch examples
)


@pytest.mark.parametrize(
    "page",
    [pytest.param(p, marks=pytest.mark.slow) if p.relative_to(ROOT).as_posix() in SLOW_PAGES
     else p for p in PAGES],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_page_examples(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli
) -> None:
    text = page.read_text(encoding="utf-8")
    for mod in _requires(text):
        if _missing(mod):
            pytest.skip(f"{page.name} needs {mod}")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    ns: dict = {"__name__": "__docs__"}
    for block in blocks(text):
        where = f"{page.relative_to(ROOT)}:{block.line}"
        if block.mark == "skip":
            continue
        if block.lang == "python":
            exec(compile(block.code, where, "exec"), ns)
        elif block.lang == "pycon":
            _run_pycon(block, where, ns)
        elif block.lang in ("bash", "sh", "shell"):
            _run_shell(block, where, cli)
        elif block.lang == "console":
            _run_console(block, where, cli)


def test_fence_parser() -> None:
    text = "a\n<!-- docs-test: exit=2 -->\n```bash\ndgp x \\\n  --y\n```\n```python\n1\n```\n"
    bs = blocks(text)
    assert [(b.lang, b.mark) for b in bs] == [("bash", "exit=2"), ("python", "")]
    assert _commands(bs[0].code) == ["dgp x    --y"]


def _modules() -> list[str]:
    names = []
    for m in pkgutil.walk_packages(dgp.__path__, "dgp."):
        if m.name.endswith("__main__"):
            continue
        names.append(m.name)
    return sorted(names)


@pytest.mark.parametrize("name", _modules())
def test_module_doctests(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if name.startswith("dgp.torch") and _missing("torch"):
        pytest.skip("torch is not installed")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    try:
        module = importlib.import_module(name)
    except ImportError as exc:  # an optional dependency of that module (not dgp itself)
        if exc.name and not exc.name.startswith("dgp"):
            pytest.skip(f"{name} needs {exc.name}")
        raise
    res = doctest.testmod(module, optionflags=FLAGS, report=False, verbose=False)
    assert res.failed == 0, f"{res.failed} of {res.attempted} doctest examples in {name} failed"


def test_cli_reference_lists_every_command() -> None:
    import argparse

    from dgp.cli import build_parser

    page = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert "<!-- cli-help -->" in page  # the hook inserts the real --help of each command
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    hook = _load_hooks()
    generated = hook.cli_help_markdown()
    for name in sub.choices:
        assert f"### `dgp {name}`" in generated
    # every flag the hand-written part of the page mentions exists on the parser
    flags = {s for a in parser._actions for s in a.option_strings}
    for p in sub.choices.values():
        flags |= {s for a in p._actions for s in a.option_strings}
    mentioned = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", page))
    assert mentioned <= flags, f"docs/cli.md mentions unknown flags: {sorted(mentioned - flags)}"


def _load_hooks():
    spec = importlib.util.spec_from_file_location("_docs_hooks", DOCS / "_hooks.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


def test_mkdocs_nav_pages_exist() -> None:
    """Every page in the nav exists, except the optional ones the hook prunes."""
    hook = _load_hooks()
    nav_text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:", 1)[1]
    for target in re.findall(r":\s*([\w/.-]+\.md)\s*$", nav_text, flags=re.M):
        assert (DOCS / target).exists() or target in hook.OPTIONAL_PAGES, target


def test_markdown_outputs_are_not_stale_figures() -> None:
    """Figures the pages show exist (they are made by docs/make_figures.py)."""
    for page in DOCS.rglob("*.md"):
        for ref in re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", page.read_text(encoding="utf-8")):
            assert (page.parent / ref).resolve().exists(), f"{page.name}: missing {ref}"


os.environ.setdefault("MPLBACKEND", "Agg")


#: public modules documented on pages of their own rather than in the API reference
NOT_IN_API = {
    "dgp.cli": "the CLI reference (docs/cli.md, generated from --help)",
    "dgp.proofs": "the theorems page (docs/theorems.md)",
}


def test_api_reference_documents_every_public_module() -> None:
    listed = set(re.findall(r"^::: ([\w.]+)\s*$", (DOCS / "api.md").read_text(), flags=re.M))
    public = [m for m in _modules() if not any(p.startswith("_") for p in m.split("."))]
    missing = [
        m for m in public if m not in listed and not any(
            m == k or m.startswith(k + ".") for k in NOT_IN_API
        )
    ]  # fmt: skip
    assert not missing, f"docs/api.md has no `::: module` entry for {missing}"


def test_rst_lists_become_markdown_lists() -> None:
    """A math block and a second paragraph inside a reST list item stay inside the Markdown
    item (indented four spaces past the marker), so arithmatex sees the block."""
    spec = importlib.util.spec_from_file_location("_griffe_rst", DOCS / "_griffe_rst.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    text = (
        "Intro:\n\n* first :math:`x_i`,\n\n  .. math::\n\n      a_{ij} = 1\n\n  where more\n"
        "  text.\n* second\n\n  * nested\n    cont\n\nback to the text.\n"
    )
    lines = mod.rst_to_markdown(text).splitlines()
    assert lines[2] == "* first $x_i$,"
    body = [ln for ln in lines if ln.strip()]
    assert body[2:7] == ["    $$", "    a_{ij} = 1", "    $$", "    where more", "    text."]
    assert body[7:] == ["* second", "    * nested", "        cont", "back to the text."]


def test_theorems_page_is_written_from_the_modules():
    """docs/theorems.md lists exactly the theorems dgp prove runs (docs/make_theorems.py)."""
    import pathlib
    import runpy

    mod = runpy.run_path(str(pathlib.Path(__file__).resolve().parents[1] / "docs"
                             / "make_theorems.py"))
    assert mod["main"](["--check"]) == 0, "run python docs/make_theorems.py"


def _ci_test_line() -> str:
    """The test command .ci/run runs: its own ``test_line=$(...)`` extraction, run by bash."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    m = re.search(r"^test_line=\$\((.*)\)$", ci, flags=re.M)
    assert m, ".ci/run no longer sets test_line=$(...)"
    import subprocess

    out = subprocess.run(
        ["bash", "-c", m.group(1)], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def test_getting_started_shows_the_readme_test_line() -> None:
    """One test line everywhere: the getting-started page includes the README's Quickstart
    block (docs/_hooks.py), whose second line is the command CI runs."""
    line = _ci_test_line()
    assert line.startswith("pip install") and "python -m pytest" in line, line
    page = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    hook = _load_hooks()
    assert hook.QUICKSTART_MARKER in page
    # no second, hand-written test line that could drift
    assert not [ln for ln in page.splitlines() if ln.startswith("pip ") and "pytest" in ln]
    rendered = hook.on_page_markdown(page)
    assert line in rendered.splitlines()
    assert hook.readme_quickstart().splitlines()[2] == line
    # the CPU wheel of the README is the page's too
    cpu = 'pip install "torch==2.13.0" --index-url https://download.pytorch.org/whl/cpu'
    assert cpu in page and cpu in (ROOT / "README.md").read_text(encoding="utf-8")


#: the verdict words of a `dgp verify soft-supcon-tau` report, whitespace-normalised
_VERIFY_VERDICTS = re.compile(
    r"([\d.]+ tau\* vs simplex: \w+)|(tau\* (?:located|not located))|(the interval \w+ it)"
    r"|(supports: \w+)"
)


def _verify_verdicts(text: str) -> list[str]:
    flat = " ".join(text.split())
    return [next(g for g in m.groups() if g) for m in _VERIFY_VERDICTS.finditer(flat)]


@pytest.mark.slow
def test_digits_walkthrough_training_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli):
    """The training check of the digits walkthrough (its `dgp verify --data` block, skipped by
    the page test: minutes of training), run as the page shows it: every verdict it prints
    (where tau* is located, each comparison, what the experiment supports) is the page's."""
    pytest.importorskip("torch")
    pytest.importorskip("sklearn")
    page = DOCS / "tutorials" / "digits.md"
    found = blocks(page.read_text(encoding="utf-8"))
    setup = next(b for b in found if b.lang == "python")
    verify = next(b for b in found if b.lang == "console" and "dgp verify" in b.code)
    monkeypatch.chdir(tmp_path)
    exec(compile(setup.code, str(page), "exec"), {})  # writes digits.npz
    command, *shown = verify.code.splitlines()
    assert command.startswith("$ dgp verify") and "--data digits.npz" in command
    r = cli(*_dgp_argv(command[2:]), "--quiet")
    assert r.code == 0, r.output
    expected = _verify_verdicts("\n".join(shown))
    assert len(expected) >= 8 and "supports: prediction" in expected, expected
    assert _verify_verdicts(r.out) == expected, r.out
