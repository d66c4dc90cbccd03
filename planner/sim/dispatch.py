"""The policy switches of the compiled code, written out from the policy registry.

A compiled loop runs the policy of a run through a switch on its id, its position in the
registry (``Policy.pid``). Its source says where, with one statement::

    out = by_policy(pid, now, pending, ...)

and ``compiled`` writes that statement out as the switch of the registry's kernels,
``if pid == 0: out = _policy_0(now, pending, ...) elif pid == 1: ...``, raising on any
other id, before Numba compiles the function: the loop's code is then what a switch
written by hand gives. (Measured: a switch function inlined into the loop made runs up to
2.6 times slower, Numba counting references to the arrays it passes at every decision; a
kernel passed as an argument makes Numba compile the loop once per kernel and never load
it from its cache; a call through a function pointer costs at every decision.)

The functions compiled for the built-in policies are cached on disk like every compiled
function (``planner.sim.jit``: the registry is in ``policies.py``, one of the compiled
sources, so an edit to it compiles them again). When the registry holds other policies (one
registered at run time, by a test or a script), the function is compiled for them once per
process, and never cached, since no source file describes it.
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
from collections.abc import Callable
from typing import Any

from planner.sim.jit import jit

MARKER = "by_policy"


def by_policy(pid: int, *arguments: Any) -> Any:
    """Stands, in a compiled function's source, for the call of policy ``pid``'s kernel
    on ``arguments``; ``compiled`` writes the switch out in its place."""
    raise NotImplementedError("compile the function through planner.sim.dispatch.compiled")


@functools.cache
def compiled(
    source: Callable[..., Any],
    kernels: tuple[Callable[..., Any], ...],
    cache: bool,
    options: tuple[tuple[str, Any], ...] = (),
) -> Callable[..., Any]:
    """``source`` (a plain function that calls ``by_policy``) with each ``x =
    by_policy(pid, ...)`` written out as the switch of ``kernels``, compiled through
    ``planner.sim.jit`` with ``options``; cached on disk when ``cache`` (the built-in
    policies only). One function per source, kernels and options in a process."""
    lines, first = inspect.getsourcelines(source)
    tree = ast.parse(textwrap.dedent("".join(lines)))
    ast.increment_lineno(tree, first - 1)  # the file's own line numbers, for Numba and tracebacks
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    function.decorator_list = []
    written = _Switches(len(kernels)).visit(tree)
    ast.fix_missing_locations(written)
    namespace = {**source.__globals__}
    namespace.update({f"_policy_{pid}": kernel for pid, kernel in enumerate(kernels)})
    exec(compile(written, inspect.getfile(source), "exec"), namespace)
    return jit(cached=cache, **dict(options))(namespace[function.name])


class _Switches(ast.NodeTransformer):
    """Writes each ``x = by_policy(pid, *arguments)`` out as the switch of ``count``
    kernels named ``_policy_0`` ..., which raises on an unknown id."""

    def __init__(self, count: int) -> None:
        self.count = count

    def visit_Assign(self, node: ast.Assign) -> ast.stmt:
        call = node.value
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id == MARKER
        ):
            return node
        pid, *arguments = call.args
        unknown: ast.stmt = ast.Raise(
            ast.Call(ast.Name("ValueError", ast.Load()), [ast.Constant("unknown policy id")], [])
        )
        switch: list[ast.stmt] = [unknown]
        for kernel in reversed(range(self.count)):
            branch = ast.Assign(
                node.targets, ast.Call(ast.Name(f"_policy_{kernel}", ast.Load()), arguments, [])
            )
            test = ast.Compare(pid, [ast.Eq()], [ast.Constant(kernel)])
            switch = [ast.If(test, [branch], switch)]
        for statement in switch:
            ast.copy_location(statement, node)
        return switch[0]
