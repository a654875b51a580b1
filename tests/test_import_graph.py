"""The package's import graph, read from its source (``ast``: nothing is imported).

Three rules (README, "Architecture"):

* each top-level part belongs to a layer (:data:`LAYERS`) and imports only its own
  layer and those before it;

* no cycle between the top-level parts of ``signal_eval_cli`` (the packages and modules
  directly under it; the package's own ``__init__``, the public facade, is not a part).
  An import inside a function counts: it defers the cycle, it does not remove it.
  Imports under ``if TYPE_CHECKING:`` are left out (never executed);
* no import of a ``_private`` module, or of a ``_private`` name, from outside the
  package that owns it.

What breaks a rule today is listed below, each with its reason; a listed import that
is gone must leave the list too (the last test), so the list only shrinks.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "signal_eval_cli"
NAME = PACKAGE.name

LAYERS: list[tuple[str, set[str]]] = [
    (
        "foundations",
        {
            "case_runs", "collector", "diffing", "errors", "files", "frames", "jsjson", "json_events", "json_text",
            "kinds", "limits",
            "paths", "patterns", "pricing", "process_scope", "transport",
            "quick_yaml", "redaction", "regex_budget", "retrying", "schema_bundle", "schema_check",
            "sharding", "signal_wakeup", "signals", "stats", "workpaths",
        },
    ),
    ("engine", {"assertions", "results"}),
    ("documents", {"dataset", "dataset_append", "loading", "starter"}),
    ("sources", {"harness", "judges", "providers", "proxy", "traces"}),
    (
        "running",
        {
            "case_index", "compare", "compare_matrix", "comparison", "configured_dataset",
            "configured_runs",
            "deadline", "executors",
            "fingerprint", "interrupts", "journal", "journaled", "matrix", "matrix_files", "matrix_model",
            "matrix_proxies", "matrix_ranking", "matrix_run", "merging", "partial",
            "persistence", "ray_executor", "result_check", "resume", "run_config", "run_journals",
            "runner",
            "scenarios", "validate", "watchdog",
        },
    ),
    ("out", {"reports"}),
    ("cli", {"cli", "__main__", "pytest_plugin"}),
]  # fmt: skip
"""The layers, first to last: a part may import its own layer and the ones before it."""

ALLOWED_CYCLE_EDGES: dict[tuple[str, str], str] = {
    # (importing part, imported part): why it stays, and who removes it.
}
ALLOWED_PRIVATE: dict[tuple[str, str], str] = {
    # (importing module, imported private module or name): why it stays.
}


@dataclass(frozen=True)
class Import:
    source: str
    """The importing module, dotted."""
    target: str
    """The imported module, or module.name when the name is not a module."""
    line: int
    deferred: bool
    """Inside a function: run when it is called, not when the module is imported."""

    @property
    def where(self) -> str:
        return f"{self.source.replace('.', '/')}.py:{self.line}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(module: str, path: Path) -> list[Import]:
    """Every import in ``module`` that names this package, but those only a type
    checker runs."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[Import] = []

    def visit(node: ast.AST, deferred: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child.test):
                for other in child.orelse:
                    visit_one(other, deferred)
                continue
            visit_one(child, deferred)

    def visit_one(node: ast.AST, deferred: bool) -> None:
        if isinstance(node, ast.Import):
            found.extend(Import(module, a.name, node.lineno, deferred) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            for alias in node.names:
                full = f"{base}.{alias.name}"
                target = base if base == NAME and full not in MODULES else full  # facade
                found.append(Import(module, target, node.lineno, deferred))
        else:
            inner = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            visit(node, deferred or inner)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), False)
    return [i for i in found if i.target == NAME or i.target.startswith(NAME + ".")]


IMPORTS = [i for module, path in MODULES.items() for i in imports_of(module, path)]


def part(dotted: str) -> str | None:
    """The top-level part a module (or module.name) belongs to; None for the facade."""
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else None


def part_edges(imports: list[Import]) -> dict[tuple[str, str], list[Import]]:
    edges: dict[tuple[str, str], list[Import]] = defaultdict(list)
    for each in imports:
        a, b = part(each.source), part(each.target)
        if a is not None and b is not None and a != b:
            edges[(a, b)].append(each)
    return edges


def cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected components with more than one part (Tarjan)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def private_imports(imports: list[Import]) -> list[Import]:
    """Imports of a ``_private`` module or name from outside the package that owns it."""
    wrong = []
    for each in imports:
        parts = each.target.split(".")
        for at, piece in enumerate(parts):
            if piece.startswith("_") and not piece.startswith("__"):
                owner = ".".join(parts[:at])
                source_package = (
                    each.source
                    if MODULES[each.source].name == "__init__.py"
                    else each.source.rpartition(".")[0]
                )
                if source_package != owner and not source_package.startswith(owner + "."):
                    wrong.append(each)
                break
    return wrong


def test_the_graph_is_read() -> None:
    """The reader sees the imports it must (one at module level, one deferred, a
    relative one): a reader that found nothing would pass every rule."""
    edges = part_edges(IMPORTS)
    assert ("runner", "harness") in edges and ("cli", "runner") in edges
    assert any(i.deferred for i in IMPORTS)
    assert ("runner", "results") in edges
    assert len(MODULES) > 100 and len(IMPORTS) > 500


def test_the_checks_catch_what_they_forbid() -> None:
    """A made-up cycle and a made-up private import are caught."""
    assert cycles({("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")}) == [["a", "b", "c"]]
    assert cycles({("a", "b"), ("b", "c")}) == []
    made_up = Import(f"{NAME}.cli.run", f"{NAME}.runner._within", 1, False)
    own = Import(f"{NAME}.assertions.signal", f"{NAME}.assertions._registry", 1, False)
    assert private_imports([made_up, own]) == [made_up]


def test_no_cycle_between_top_level_parts() -> None:
    edges = part_edges(IMPORTS)
    kept = {edge for edge in edges if edge not in ALLOWED_CYCLE_EDGES}
    found = cycles(kept)
    if found:
        lines = []
        for component in found:
            for a, b in sorted(e for e in kept if e[0] in component and e[1] in component):
                first = edges[(a, b)][0]
                lines.append(f"  {a} -> {b} ({first.where})")
        pytest.fail("an import cycle between top-level parts of the package:\n" + "\n".join(lines))


def layer_of(part_name: str) -> int | None:
    return next((i for i, (_, parts) in enumerate(LAYERS) if part_name in parts), None)


def test_every_part_has_a_layer() -> None:
    parts = {p for edge in part_edges(IMPORTS) for p in edge}
    parts |= {m.split(".")[1] for m in MODULES if m.count(".") >= 1}
    unplaced = sorted(p for p in parts if layer_of(p) is None)
    assert not unplaced, f"place each top-level part in a layer of LAYERS: {', '.join(unplaced)}"


def test_no_part_imports_a_later_layer() -> None:
    wrong = []
    for (a, b), imports in sorted(part_edges(IMPORTS).items()):
        la, lb = layer_of(a), layer_of(b)
        if la is not None and lb is not None and lb > la and (a, b) not in ALLOWED_CYCLE_EDGES:
            wrong.append(f"{imports[0].where}: {a} ({LAYERS[la][0]}) imports {b} ({LAYERS[lb][0]})")
    assert not wrong, "\n".join(wrong)


def test_no_private_module_is_imported_from_another_package() -> None:
    wrong = [
        i for i in private_imports(IMPORTS) if (i.source, _owner_target(i)) not in ALLOWED_PRIVATE
    ]
    assert not wrong, "\n".join(f"{i.where}: imports {i.target}" for i in wrong)


def _owner_target(each: Import) -> str:
    """The private module an import names (``a._b.name`` -> ``a._b``), else the target."""
    parts = each.target.split(".")
    for at, piece in enumerate(parts):
        if piece.startswith("_") and not piece.startswith("__"):
            return ".".join(parts[: at + 1])
    return each.target


def test_every_allowed_exception_is_still_needed() -> None:
    """An entry whose import is gone leaves the list, so the list only shrinks."""
    edges = part_edges(IMPORTS)
    private = {(i.source, _owner_target(i)) for i in private_imports(IMPORTS)}
    stale = [f"{a} -> {b}" for a, b in ALLOWED_CYCLE_EDGES if (a, b) not in edges]
    stale += [f"{a} -> {b}" for a, b in ALLOWED_PRIVATE if (a, b) not in private]
    assert not stale, "no longer imported: remove from the allow-list: " + ", ".join(stale)
