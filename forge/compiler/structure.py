"""The dependency structure of a plan: ids, edges, topological order and cycles.

Plain dicts do the common path. One pass indexes the steps (``duplicate_id``,
``missing_dependency``) and notes whether every step comes after its dependencies; if so,
document order is the topological order. Otherwise a Kahn pass, taking the earliest ready
step in document order, sorts them. Only when it cannot place every step does networkx
come in, on the leftover steps alone, for their strongly connected components: each
nontrivial one holds at least one cycle and is reported on its own. Within one, a
breadth-first search finds the shortest cycle through each of its first steps, at most
``MAX_CYCLES_PER_COMPONENT`` of them, so a dense tangle costs a few linear passes rather
than an exponential enumeration. An author fixes a cycle by removing one edge, so short
cycles are the ones to show; ``networkx.simple_cycles`` yields cycles in depth-first order,
and in a 10,000-step tangle its first ones ran through 22 to 25 steps while two-step cycles
existed. Building a networkx graph of every step, checking it for cycles and walking the
deliverable's ancestors in it took from half to all of a whole compile's time (measured at
10,000 and 100,000 steps), hence plain dicts on the common path. networkx is given
document positions rather than ids, so sorting the sets it returns gives document order,
the same in every process whatever the string hash seed.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from itertools import chain

from forge.compiler.diagnostics import Diagnostic, name_list
from forge.plan import Step

__all__ = ["MAX_CYCLES_PER_COMPONENT", "Structure", "analyse_structure"]

MAX_CYCLES_PER_COMPONENT = 3


@dataclass(frozen=True)
class Structure:
    """Steps keyed by id (the first step of a duplicated id stands for it), each id's known
    dependencies, the ids some step depends on, and the topological order, which holds
    every id only when there is no cycle."""

    steps: Mapping[str, Step]
    depends_on: Mapping[str, tuple[str, ...]]
    depended_on: Set[str]
    order: tuple[str, ...]
    diagnostics: tuple[Diagnostic, ...]

    def terminals(self) -> list[str]:
        """Ids no step depends on, in document order."""
        return [step_id for step_id in self.steps if step_id not in self.depended_on]

    def dependents(self, node_id: str) -> list[str]:
        """Ids of the steps that depend on ``node_id`` directly, in document order."""
        return [step_id for step_id, deps in self.depends_on.items() if node_id in deps]

    def lineage(self, node_id: str) -> set[str]:
        """``node_id`` and all its transitive dependencies."""
        depends_on = self.depends_on
        seen = {node_id}
        stack = [node_id]
        while stack:
            for dep in depends_on[stack.pop()]:
                if dep not in seen:
                    seen.add(dep)
                    stack.append(dep)
        return seen


def analyse_structure(steps: Sequence[Step]) -> Structure:
    """Index ``steps``, order them and report duplicate ids, missing dependencies and
    cycles, each kind in document order."""
    ids = [step.id for step in steps]
    # The first step of an id stands for it: made in C, where a later step's id would
    # win; with a repeated id, it is made step by step instead.
    first: dict[str, Step] = dict(zip(ids, steps, strict=True))
    position = dict(zip(ids, range(len(ids)), strict=True))
    repeated: dict[str, int] = {}
    if len(first) < len(ids):
        first, position = {}, {}
        for index, step in enumerate(steps):
            if step.id in first:
                repeated[step.id] = repeated.get(step.id, 1) + 1
            else:
                first[step.id] = step
                position[step.id] = index
    diagnostics = [
        Diagnostic.of("duplicate_id", f"step id {step_id!r} is used by {count} steps", (step_id,))
        for step_id, count in repeated.items()
    ]
    depends_on: dict[str, tuple[str, ...]] = {}
    # Whether every step comes after its dependencies, as planners and most authors
    # write them: then document order is the topological order and no cycle can exist.
    in_order = True
    for index, step in enumerate(steps):
        step_id = step.id
        deps = step.depends_on
        if len(deps) > 1 and len(set(deps)) < len(deps):  # a repeated one counts once
            deps = tuple(dict.fromkeys(deps))
        known = True
        for dep in deps:
            at = position.get(dep)
            if at is None:
                diagnostics.append(_missing(step_id, dep))
                known = False
            elif at >= index:
                in_order = False
        if repeated and position[step_id] != index:
            continue  # a later step reusing an id: checked above, not part of the graph
        if not known:
            deps = tuple(dep for dep in deps if dep in position)
        depends_on[step_id] = deps
    depended_on = set(chain.from_iterable(depends_on.values()))
    if in_order:
        order = tuple(first)
    else:
        order = _topological_order(list(first), depends_on)
        if len(order) < len(first):
            placed = set(order)
            diagnostics.extend(_cycles([i for i in first if i not in placed], depends_on))
    return Structure(first, depends_on, depended_on, order, tuple(diagnostics))


def _missing(step_id: str, dep: str) -> Diagnostic:
    message = f"step {step_id!r} depends on {dep!r}, which is not a step of this plan"
    return Diagnostic.of("missing_dependency", message, (step_id, dep), ((dep, step_id),))


def _topological_order(
    ids: list[str], depends_on: Mapping[str, tuple[str, ...]]
) -> tuple[str, ...]:
    """Kahn's algorithm, taking the earliest ready step in document order, so the order
    depends on the document alone. Steps on or behind a cycle are left out."""
    position = {step_id: index for index, step_id in enumerate(ids)}
    dependents: dict[str, list[str]] = {step_id: [] for step_id in ids}
    for step_id, deps in depends_on.items():
        for dep in deps:
            dependents[dep].append(step_id)
    waiting = {step_id: len(deps) for step_id, deps in depends_on.items()}
    ready = [position[step_id] for step_id, count in waiting.items() if count == 0]
    order: list[str] = []
    while ready:
        step_id = ids[heapq.heappop(ready)]
        order.append(step_id)
        for child in dependents[step_id]:
            waiting[child] -= 1
            if not waiting[child]:
                heapq.heappush(ready, position[child])
    return tuple(order)


def _cycles(stuck: list[str], depends_on: Mapping[str, tuple[str, ...]]) -> list[Diagnostic]:
    """Cycle diagnostics for ``stuck`` (the steps Kahn could not place, in document
    order): per strongly connected component, in order of its earliest step, the
    shortest cycles through its earliest steps, at most ``MAX_CYCLES_PER_COMPONENT``."""
    import networkx as nx  # only a plan with a cycle pays for its import

    position = {step_id: index for index, step_id in enumerate(stuck)}
    graph = nx.DiGraph()
    graph.add_nodes_from(range(len(stuck)))
    graph.add_edges_from(
        (position[dep], position[step_id])
        for step_id in stuck
        for dep in depends_on[step_id]
        if dep in position
    )
    components = sorted(
        sorted(component)
        for component in nx.strongly_connected_components(graph)
        if len(component) > 1 or any(graph.has_edge(node, node) for node in component)
    )
    diagnostics = []
    for component in components:
        members = set(component)
        cycles: list[list[int]] = []
        # Each start costs one breadth-first search of the component; starts whose
        # shortest cycle was found already are skipped, but only so many are tried.
        for start in component[: 2 * MAX_CYCLES_PER_COMPONENT]:
            cycle = _rotated(_shortest_cycle(graph.succ, members, start))
            if cycle not in cycles:
                cycles.append(cycle)
            if len(cycles) == MAX_CYCLES_PER_COMPONENT:
                break
        names = [stuck[index] for index in component]
        for cycle in sorted(cycles, key=lambda c: (len(c), c)):
            diagnostics.append(_cycle_diagnostic(tuple(stuck[index] for index in cycle), names))
    return diagnostics


def _shortest_cycle(succ: Mapping[int, Iterable[int]], members: Set[int], start: int) -> list[int]:
    """The shortest cycle through ``start`` within ``members``, a strongly connected
    component, so one exists: a breadth-first search from ``start`` until an edge leads
    back to it."""
    parent = {start: start}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in succ[node]:
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                return path[::-1]
            if child in members and child not in parent:
                parent[child] = node
                queue.append(child)
    raise AssertionError(f"node {start} is on no cycle of its component")


def _rotated(cycle: list[int]) -> list[int]:
    start = cycle.index(min(cycle))
    return cycle[start:] + cycle[:start]


def _cycle_diagnostic(nodes: tuple[str, ...], component: list[str]) -> Diagnostic:
    edges = tuple(zip(nodes, nodes[1:] + nodes[:1], strict=True))
    message = f"dependency cycle: {' -> '.join(nodes + nodes[:1])}"
    if len(component) > len(nodes):
        message += f" (one of the cycles among {len(component)} steps: {name_list(component)})"
    return Diagnostic.of("cycle", message, nodes, edges)
