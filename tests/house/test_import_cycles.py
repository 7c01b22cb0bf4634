"""No import circle among the project's modules: each can be read, tested and moved without the others.

import-linter's contracts (``make lint``) keep the floors apart; a circle
inside a floor (``tfbs.launch.session`` importing ``tfbs.launch.class_archive`` importing
``tfbs.launch.session``, even from inside a function) they do not see. This test
builds the whole import graph of the packages ``[tool.importlinter]`` names
(grimp, import-linter's own graph, counting imports inside functions and
under ``TYPE_CHECKING`` too) and of the script folders beside them
(``hadoop/``, ``airflow_dags/``: modules that import each other by bare
name, read here with :mod:`ast`), and names every circle it finds.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from collections import deque
from pathlib import Path

import grimp
import pytest
from conftest import REPO

from tfbs.moved import MOVED


def _root_packages() -> list[str]:
    settings = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    return list(settings["root_packages"])


#: Folders of scripts run as files (``python hadoop/hosts.py``), not packages.
SCRIPT_FOLDERS = ("hadoop", "airflow_dags")


def _folder_graph(folder: Path) -> grimp.ImportGraph:
    """The imports among one folder's modules, by bare name, wherever they sit (functions, TYPE_CHECKING)."""
    graph = grimp.ImportGraph()
    modules = {path.stem: path for path in sorted(folder.glob("*.py"))}
    for name in modules:
        graph.add_module(name)
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                imported = [alias.name.partition(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported = [node.module.partition(".")[0]]
            else:
                continue
            for target in imported:
                if target in modules and target != name:
                    graph.add_import(importer=name, imported=target)
    return graph


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(*_root_packages(), cache_dir=None)


def _circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Each strongly connected group of modules, as one shortest circle through its first module."""
    edges = {module: sorted(graph.find_modules_directly_imported_by(module)) for module in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        # Tarjan's algorithm, iterative: a frame is a module and its next edge.
        frames = [(root, 0)]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while frames:
            module, position = frames.pop()
            if position < len(edges[module]):
                frames.append((module, position + 1))
                target = edges[module][position]
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    frames.append((target, 0))
                elif target in on_stack:
                    low[module] = min(low[module], index[target])
                continue
            if frames:
                parent = frames[-1][0]
                low[parent] = min(low[parent], low[module])
            if low[module] == index[module]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == module:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return [_shortest_circle(edges, group) for group in groups]


def _shortest_circle(edges: dict[str, list[str]], group: list[str]) -> list[str]:
    """The shortest path from the group's first module back to itself, within the group."""
    start, members = group[0], set(group)
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        module = queue.popleft()
        for target in edges[module]:
            if target == start:
                path = [module]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [*reversed(path), start]
            if target in members and target not in came_from:
                came_from[target] = module
                queue.append(target)
    raise AssertionError(f"no circle through {start}")


def test_no_module_imports_itself_through_others(graph: grimp.ImportGraph) -> None:
    circles = _circles(graph)
    assert not circles, "import circles: " + "; ".join(" -> ".join(circle) for circle in circles)


@pytest.mark.parametrize("folder", SCRIPT_FOLDERS)
def test_no_script_imports_itself_through_others(folder: str) -> None:
    folder_graph = _folder_graph(REPO / folder)
    assert len(folder_graph.modules) > 1  # the folder's modules were read
    circles = _circles(folder_graph)
    assert not circles, f"import circles in {folder}/: " + "; ".join(" -> ".join(circle) for circle in circles)


def test_a_circle_is_found_and_named(tmp_path: Path) -> None:
    graph = grimp.ImportGraph()
    for module in ("p", "p.a", "p.b", "p.c"):
        graph.add_module(module)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.c")
    graph.add_import(importer="p.c", imported="p.a")
    assert _circles(graph) == [["p.a", "p.b", "p.c", "p.a"]]
    graph.remove_import(importer="p.c", imported="p.a")
    assert _circles(graph) == []
    # The same circle among scripts, one side of it only under TYPE_CHECKING, is found.
    (tmp_path / "a.py").write_text("import b\n")
    (tmp_path / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from a import X\n")
    assert _circles(_folder_graph(tmp_path)) == [["a", "b", "a"]]


def test_every_moved_module_imports_by_its_old_name_as_the_same_module_with_a_warning() -> None:
    """``import tfbs.bed`` gives :mod:`tfbs.formats.bed` itself and says where it went, in a fresh interpreter."""
    script = (
        "import importlib, json, sys, warnings\n"
        "from tfbs.moved import MOVED\n"
        "seen = {}\n"
        "for old, new in MOVED.items():\n"
        "    with warnings.catch_warnings(record=True) as caught:\n"
        "        warnings.simplefilter('always')\n"
        "        same = importlib.import_module(old) is importlib.import_module(new)\n"
        "    seen[old] = [same, [str(w.message) for w in caught if w.category is DeprecationWarning]]\n"
        "print(json.dumps(seen))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=REPO)
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen == {old: [True, [f"{old} moved to {new}"]] for old, new in MOVED.items()}
    assert len(MOVED) == 25
    assert not [old for old in MOVED if (REPO / Path(*old.split("."))).with_suffix(".py").exists()]
