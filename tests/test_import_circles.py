"""No new import circles between the files of dgp/ (issue 39).

Every ``import`` of a dgp module in ``dgp/`` is read with :mod:`ast`, at module level, inside
functions and under ``TYPE_CHECKING`` alike (an edge to the module named, or to the submodule
when ``from package import submodule``), and the strongly connected groups of that graph are
the circles. Three remain after the split of issue 39, each inside one room: three solver
modules; two prototypes modules; the design figure, phase map and sweep (the engine's, through
its block classification, dense spectra and zero patterns, went when the dense spectra were
imported from their own module). A circle is tolerated only inside
those rooms, so a new one anywhere else, or across rooms, fails here.
"""

from __future__ import annotations

from pathlib import Path

from _dgp_imports import imports_of, module_of

ROOT = Path(__file__).resolve().parents[1]
#: rooms that still hold a circle (each one inside the room); none may appear elsewhere
ROOMS_WITH_CIRCLES = {"solver", "prototypes", "design"}


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the dgp modules it imports (each file of ``root/dgp``)."""
    files = {module_of(p, root): p for p in sorted((root / "dgp").rglob("*.py"))}
    graph: dict[str, set[str]] = {m: set() for m in files}
    for module, path in files.items():
        for _, target, names in imports_of(path, root):
            # an edge to the submodule named by `from package import submodule`, else to the
            # module itself (`import dgp.x` names nothing)
            for sub in [f"{target}.{name}" for name in names] or [target]:
                if sub in files:
                    graph[module].add(sub)
                elif target in files:
                    graph[module].add(target)
        graph[module].discard(module)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                group = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    group.append(w)
                    if w == v:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def _room(module: str) -> str:
    return module.split(".")[1] if "." in module else "__init__"


def test_circles_stay_inside_the_rooms_that_still_have_one():
    bad = [group for group in circles(import_graph(ROOT))
           if len({_room(m) for m in group}) > 1 or _room(group[0]) not in ROOMS_WITH_CIRCLES]
    assert not bad, "new import circles between files:\n" + "\n".join(map(" <-> ".join, bad))


def test_the_reader_sees_a_circle_through_a_function_and_a_submodule(tmp_path):
    pkg = tmp_path / "dgp" / "io"
    pkg.mkdir(parents=True)
    (tmp_path / "dgp" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("from dgp.io import _a\n")
    (pkg / "_a.py").write_text("def f():\n    from . import _b\n")
    (pkg / "_b.py").write_text("from dgp.io._a import f\n")
    (pkg / "_c.py").write_text("import dgp.io._a\n")  # imports into the circle, not part of it
    graph = import_graph(tmp_path)
    assert circles(graph) == [["dgp.io._a", "dgp.io._b"]]
    assert "dgp.io._a" in graph["dgp.io._c"] and "dgp.io._a" in graph["dgp.io"]
