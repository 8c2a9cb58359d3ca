"""Which kernels of a schedule being built read which: the edges between groups of ops, with a
topological rank per group kept as groups grow, and the two questions the grouping asks of
them: does one group (transitively) read another, and in what order can the groups run."""

from __future__ import annotations

import heapq


class KernelDag:
    """Groups by index; `deps[g]` the groups g reads from, `readers[g]` the reverse; every group
    ranks above the groups it reads (`rank`), so a search for a path between two groups looks
    only at the groups ranked between them."""

    def __init__(self) -> None:
        self.deps: list[set[int]] = []
        self.readers: list[set[int]] = []
        self.rank: list[int] = []
        self.next_rank = 0

    def add(self) -> int:
        """A new group with no edges, ranked above every group so far; returns its index."""
        self.deps.append(set())
        self.readers.append(set())
        self.rank.append(self.next_rank)
        self.next_rank += 1
        return len(self.rank) - 1

    def edge(self, reader: int, producer: int) -> None:
        """Record that group `reader` reads from group `producer`, raising the rank of the
        reader (and of whatever reads it) above the producer's where it is not."""
        self.deps[reader].add(producer)
        self.readers[producer].add(reader)
        todo = [(reader, self.rank[producer])]
        while todo:
            g, floor = todo.pop()
            if self.rank[g] > floor:
                continue
            assert g != producer, "fusion produced a cycle between kernels"
            self.rank[g] = floor + 1
            self.next_rank = max(self.next_rank, floor + 2)
            todo += [(r, floor + 1) for r in self.readers[g]]

    def detach(self, g: int) -> None:
        """Remove every edge of group g (its ops have moved to another group)."""
        for d in self.deps[g]:
            self.readers[d].discard(g)
        for r in self.readers[g]:
            self.deps[r].discard(g)
        self.deps[g], self.readers[g] = set(), set()

    def depends_on(self, h: int, g: int) -> bool:
        """Does group h (transitively) read from group g? Every group on such a path ranks
        between the two, so only those are searched, from both ends in step: the answer costs
        the smaller side."""
        if self.rank[h] <= self.rank[g]:
            return False
        low, high = self.rank[g], self.rank[h]
        fwd, fseen = [h], {h}          # from h along deps
        bwd, bseen = [g], {g}          # from g along readers
        while fwd and bwd:
            for d in self.deps[fwd.pop()]:
                if d == g:
                    return True
                if d not in fseen and self.rank[d] > low:
                    fseen.add(d)
                    fwd.append(d)
            for r in self.readers[bwd.pop()]:
                if r == h:
                    return True
                if r not in bseen and self.rank[r] < high:
                    bseen.add(r)
                    bwd.append(r)
        return False

    def order(self, gids: list[int], first_op: list[int]) -> list[int]:
        """`gids` in an order that runs every producer first (a group may have absorbed an op
        that reads a later group's output); ties go to the group whose first op (`first_op`,
        by group) comes first in the graph."""
        indeg = {g: 0 for g in gids}
        users: dict[int, list[int]] = {g: [] for g in gids}
        for g in gids:
            for d in self.deps[g]:
                users[d].append(g)
                indeg[g] += 1
        ready = [(first_op[g], g) for g in gids if indeg[g] == 0]
        heapq.heapify(ready)
        out = []
        while ready:
            _, g = heapq.heappop(ready)
            out.append(g)
            for u in users[g]:
                indeg[u] -= 1
                if indeg[u] == 0:
                    heapq.heappush(ready, (first_op[u], u))
        assert len(out) == len(gids), "fusion produced a cycle between kernels"
        return out
