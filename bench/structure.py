"""The structure figures of gotk's own code, counted from its source (``python bench/structure.py [--json]``).

What it counts, each over ``gotk/`` (static analysis: nothing is imported or run):

* **kind branches**: comparisons (``==``, ``!=``, ``in``) of an expression against a string literal that names a
  player kind, a loop method or an objective (:data:`KINDS`), outside the registries that own those names
  (:data:`REGISTRIES`); a registry is where such a name may be written;
* **probes**: ``getattr(x, "name", default)`` and ``hasattr`` calls in the play side and the loop (:data:`PROBED`),
  the sign of a caller asking what an object is instead of an interface that says it;
* **long signatures**: functions with more than 12 parameters (``self`` and ``cls`` not counted), compiled kernels
  (numba's ``@njit`` / ``@jit``, gotk's ``@kernel`` / ``@internal_kernel``) aside;
* **long modules**: modules over 600 lines;
* **imports inside functions**: their share of gotk's own imports (``gotk.*`` and relative), and how many carry a
  comment on their line or the line before (the reason: an optional dependency, start-up time);
* **import circles**: strongly connected groups of modules in the graph of module-level imports of gotk's own
  modules (``if TYPE_CHECKING:`` blocks left out).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "gotk"
KINDS = ("mcts", "alphabeta", "random", "policy-gradient", "actor-critic", "q-learning", "supervised",
         "expert-iteration", "pg", "ac", "q", "exit", "zero")
#: the modules that own the names above (their registries)
REGISTRIES = ("gotk/train/objectives.py", "gotk/zero/methods.py", "gotk/play/kinds.py")
PROBED = ("play", "search", "serve", "selfplay", "zero")
MAX_PARAMS = 12
MAX_LINES = 600


def _modules() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py") if "__pycache__" not in p.parts)


def _rel(p: Path) -> str:
    return str(p.relative_to(ROOT.parent))


def _module_name(p: Path) -> str:
    parts = list(p.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def kind_branches(tree: ast.AST, path: str) -> list[str]:
    if path in REGISTRIES:
        return []
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        for op, right in zip(node.ops, node.comparators, strict=True):
            if not isinstance(op, ast.Eq | ast.NotEq | ast.In | ast.NotIn):
                continue
            values = [right, node.left]
            if isinstance(right, ast.Tuple | ast.List | ast.Set):
                values += list(right.elts)
            if any(isinstance(v, ast.Constant) and v.value in KINDS for v in values):
                out.append(f"{path}:{node.lineno}")
                break
    return out


def probes(tree: ast.AST, path: str) -> list[str]:
    if path.split("/")[1] not in PROBED:
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr"):
            if node.func.id == "hasattr" or len(node.args) == 3:
                out.append(f"{path}:{node.lineno}")
    return out


def _compiled(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for d in fn.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name in ("njit", "jit", "vectorize", "guvectorize", "kernel", "internal_kernel"):
            return True
    return False


def long_signatures(tree: ast.AST, path: str) -> list[str]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not _compiled(node):
            a = node.args
            names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs if x.arg not in ("self", "cls")]
            n = len(names) + (a.vararg is not None) + (a.kwarg is not None)
            if n > MAX_PARAMS:
                out.append(f"{path}:{node.lineno} {node.name} ({n})")
    return out


def _own(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.level > 0 or (node.module or "").split(".")[0] == "gotk"
    return any(a.name.split(".")[0] == "gotk" for a in node.names)


def _targets(node: ast.Import | ast.ImportFrom, module: str, known: set[str]) -> set[str]:
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            pkg = module.split(".")[: -node.level] if not module.endswith("__init__") else module.split(".")
            base = ".".join([*pkg, base] if base else pkg)
        subs = [f"{base}.{a.name}" for a in node.names]
        # ``from pkg import sub``: an edge to the submodule; the package itself only for names defined in it
        names = subs + ([base] if any(n not in known for n in subs) else [])
    out = set()
    for n in names:
        while n and n not in known:
            n = n.rpartition(".")[0]
        if n:
            out.add(n)
    return out


def _type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (isinstance(t, ast.Attribute)
                                                                     and t.attr == "TYPE_CHECKING")


def _top_imports(tree: ast.Module):
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and not _type_checking(node):
            yield from (n for n in ast.walk(node) if isinstance(n, ast.Import | ast.ImportFrom))
        elif isinstance(node, ast.Try):
            yield from (n for n in ast.walk(node) if isinstance(n, ast.Import | ast.ImportFrom))


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10_000)

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def count() -> dict:
    mods = _modules()
    known = {_module_name(p) for p in mods}
    kinds, probed, sigs, big = [], [], [], []
    inner = commented = top = 0
    graph: dict[str, set[str]] = {}
    for p in mods:
        text = p.read_text()
        lines = text.splitlines()
        tree = ast.parse(text)
        path = _rel(p)
        kinds += kind_branches(tree, path)
        probed += probes(tree, path)
        sigs += long_signatures(tree, path)
        if len(lines) > MAX_LINES:
            big.append(f"{path} ({len(lines)})")
        name = _module_name(p)
        tops = [n for n in _top_imports(tree) if _own(n)]
        top += len(tops)
        graph[name] = set().union(*(_targets(n, name if not p.name == "__init__.py" else name + ".__init__",
                                             known) for n in tops)) - {name} if tops else set()
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                for node in ast.walk(fn):
                    if isinstance(node, ast.Import | ast.ImportFrom) and _own(node):
                        inner += 1
                        around = " ".join(lines[max(0, node.lineno - 2): node.lineno])
                        commented += "#" in around
    loops = circles(graph)
    return {
        "kind_branches": {"count": len(kinds), "where": kinds},
        "probes": {"count": len(probed), "where": probed},
        "long_signatures": {"count": len(sigs), "where": sigs},
        "long_modules": {"count": len(big), "where": big},
        "imports_inside_functions": {"count": inner, "share": round(inner / max(1, inner + top), 3),
                                     "with_a_reason": commented},
        "import_circles": {"count": len(loops), "where": loops},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the whole report as JSON")
    args = ap.parse_args()
    r = count()
    if args.json:
        print(json.dumps(r, indent=2))
        return
    for key, v in r.items():
        extra = f" (share {v['share']:.1%}, {v['with_a_reason']} with a reason)" if "share" in v else ""
        print(f"{key.replace('_', ' ')}: {v['count']}{extra}")


if __name__ == "__main__":
    main()
