"""How the package is put together, measured: where one run's config travels, the import
graph and the largest modules.

- The config walk: a small sandbox training run through ``jobs.train.train`` (a tiny
  random backbone, two generations) under a profiler that notes every call of a
  ``workbench`` function handed the run's ``RunConfig`` (as an argument, or held by an
  argument such as ``self``). It counts the modules the config reaches and the climbs:
  calls that hand it from a module of a lower layer of core's layers contract
  (``pyproject.toml``) to one of a higher layer. Beside it, statically: the modules that
  ``jobs.train`` imports (directly or not) whose source names ``RunConfig``.
- The import graph (grimp, as import-linter builds it): modules, imports, the modules of
  each layer, import circles between modules (strongly connected components), upward
  imports between core's layers, and what ``lint-imports`` says.
- The largest modules by lines, and those over 700 (the store excepted by convention).

    python tests/benchmarks/bench_structure.py [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

LIMIT = 700  # lines: docs/CONVENTIONS.md


def core_layers() -> list[list[str]]:
    """Core's layers, top first, each a list of module prefixes (``pyproject.toml``)."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    for contract in data["tool"]["importlinter"]["contracts"]:
        layers = contract.get("layers", [])
        if contract["type"] == "layers" and all(
            m.strip().startswith("workbench.core.") for layer in layers for m in layer.split("|")
        ):
            return [[m.strip() for m in layer.split("|")] for layer in layers]
    raise SystemExit("no core layers contract in pyproject.toml")


def layer_of(module: str, layers: list[list[str]]) -> int | None:
    """The index (0 = top) of the layer ``module`` belongs to, by its longest prefix."""
    best: tuple[int, int] | None = None
    for index, layer in enumerate(layers):
        for prefix in layer:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), index)
    return None if best is None else best[1]


def config_walk(layers: list[list[str]], workspace: Path) -> dict[str, Any]:
    """Train a tiny sandbox run and follow its ``RunConfig`` (see the module's docstring)."""
    from tests.conftest import build_tiny_lm
    from workbench.core.config import RunConfig
    from workbench.core.coordinator import Backbone
    from workbench.core.jobs.train import train
    from workbench.core.workspace import Workspace

    config = RunConfig.from_dict(
        {
            "run": {"name": "walk", "seed": 1},
            "pool": {"workers": ["sandbox"]},
            "tasks": {"suite": "mixed", "train": 12, "validation": 4, "test": 4},
            "optimizer": {"popsize": 4, "rollouts": 2, "validate_every": 1},
            "budget": {"generations": 2},
            "protocol": {"max_turns": 3, "temperature": 0.0},
            "cache": {"policy": "off"},
        }
    )
    reached: dict[str, int] = {}
    climbs: dict[str, int] = {}
    seen_frames: set[int] = set()

    def holds_config(value: Any) -> bool:
        if isinstance(value, RunConfig):
            return True
        try:
            held = vars(value).values()
        except TypeError:  # no __dict__: a number, a string, a slotted object
            return False
        return any(isinstance(v, RunConfig) for v in held)

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("workbench."):
            return
        code = frame.f_code
        if id(frame) in seen_frames:  # a coroutine resumed, not called again
            return
        if code.co_flags & 0x380:  # a coroutine or generator: note its first entry only
            seen_frames.add(id(frame))
        n_args = code.co_argcount + code.co_kwonlyargcount
        if not any(holds_config(frame.f_locals.get(n)) for n in code.co_varnames[:n_args]):
            return
        reached[module] = reached.get(module, 0) + 1
        back = frame.f_back
        while back is not None and not back.f_globals.get("__name__", "").startswith("workbench."):
            back = back.f_back
        if back is None:
            return
        caller = back.f_globals["__name__"]
        here, there = layer_of(caller, layers), layer_of(module, layers)
        if here is not None and there is not None and there < here:
            key = f"{caller} -> {module}"
            climbs[key] = climbs.get(key, 0) + 1

    model, tokenizer = build_tiny_lm()
    backbone = Backbone("tiny", model=model, tokenizer=tokenizer)
    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        train(config, Workspace.open(workspace), backbone=backbone)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
        backbone.close()
    return {
        "modules": len(reached),
        "climbs": len(climbs),
        "climb_calls": sum(climbs.values()),
        "reached": dict(sorted(reached.items())),
        "climbed": dict(sorted(climbs.items())),
    }


def config_readers() -> list[str]:
    """The modules ``jobs.train`` imports, directly or not, whose source names
    ``RunConfig`` (they take the whole config rather than a typed part of it)."""
    import grimp

    graph = grimp.build_graph("workbench")
    reached = graph.find_upstream_modules("workbench.core.jobs.train") | {
        "workbench.core.jobs.train"
    }
    out = []
    for module in sorted(reached):
        path = ROOT / (module.replace(".", "/") + ".py")
        if not path.exists():
            path = ROOT / module.replace(".", "/") / "__init__.py"
        if module != "workbench.core.config" and "RunConfig" in path.read_text():
            out.append(module)
    return out


def import_graph(layers: list[list[str]]) -> dict[str, Any]:
    """The package's import graph as import-linter sees it (see the module's docstring)."""
    import grimp

    graph = grimp.build_graph("workbench")
    modules = sorted(graph.modules)
    edges = [
        (a, b)
        for a in modules
        for b in graph.find_modules_directly_imported_by(a)
        if b.startswith("workbench")
    ]
    circles = [sorted(c) for c in _components(modules, edges) if len(c) > 1]
    upward = sorted(
        f"{a} -> {b}"
        for a, b in edges
        if (la := layer_of(a, layers)) is not None
        and (lb := layer_of(b, layers)) is not None
        and lb < la
    )
    per_layer = [
        {"layer": " | ".join(layer), "modules": sum(1 for m in modules if layer_of(m, layers) == i)}
        for i, layer in enumerate(layers)
    ]
    lint = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    summary = [line for line in lint.stdout.splitlines() if "Contracts:" in line]
    return {
        "modules": len(modules),
        "core_modules": sum(1 for m in modules if m.startswith("workbench.core")),
        "imports": len(edges),
        "layers": len(layers),
        "per_layer": per_layer,
        "circles": circles,
        "upward_imports": upward,
        "lint_imports": summary[0].strip() if summary else lint.stdout.strip()[-200:],
    }


def _components(nodes: list[str], edges: list[tuple[str, str]]) -> list[list[str]]:
    """Strongly connected components (Tarjan, iterative)."""
    out: dict[str, list[str]] = {n: [] for n in nodes}
    for a, b in edges:
        if b in out:
            out[a].append(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on.add(node)
            if i < len(out[node]):
                work.append((node, i + 1))
                nxt = out[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on.discard(top)
                    component.append(top)
                    if top == node:
                        break
                found.append(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


def largest_modules(top: int = 12) -> dict[str, Any]:
    sizes = sorted(
        (
            (len(p.read_text().splitlines()), str(p.relative_to(ROOT)))
            for p in ROOT.glob("workbench/**/*.py")
        ),
        reverse=True,
    )
    return {
        "largest": [{"module": m, "lines": n} for n, m in sizes[:top]],
        "over_limit": [
            m for n, m in sizes if n > LIMIT and not m.startswith("workbench/core/store/")
        ],
    }


def main() -> None:
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the figures as a results file here")
    args = parser.parse_args()
    layers = core_layers()
    with tempfile.TemporaryDirectory() as folder:
        walk = config_walk(layers, Path(folder) / "ws")
    walk["static_readers"] = config_readers()
    graph = import_graph(layers)
    sizes = largest_modules()
    figures = {
        "config_modules": walk["modules"],
        "config_climbs": walk["climbs"],
        "config_readers_imported_by_train": len(walk["static_readers"]),
        "modules": graph["modules"],
        "imports": graph["imports"],
        "circles": len(graph["circles"]),
        "upward_imports": len(graph["upward_imports"]),
        "over_700_lines": len(sizes["over_limit"]),
    }
    print(json.dumps({"figures": figures, "walk": walk, "graph": graph, "sizes": sizes}, indent=1))
    if args.out is not None:
        from tests.benchmarks.results import write_results

        write_results(args.out, figures, walk=walk, graph=graph, sizes=sizes)


if __name__ == "__main__":
    main()
