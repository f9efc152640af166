"""A user search space compiled into genes, and genes decoded back into what the objective receives.

Genotype: a tuple of ints, one per gene. Each parameter gives one *value gene* (an index into its
domain) and, when it can be knocked out, one *presence gene* (1 = present, 0 = left out). Engines
only see ``Gene`` records; they never learn what a value means. ``canonical`` sets the value gene
of a knocked-out parameter to 0, so two candidates that differ only in a value the objective never
sees are the same candidate (duplicate detection, NVIDIA's "neutral in-domain value" rule).

The top level is a dict (possibly nested), or a list of components (a "mixed" space: the
objective receives a list of the same length). A component is a dict space, or any object with
a ``to_component()`` method returning a ``Component`` (compiler search-space providers).
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from typing import Any, Sequence

from ..errors import SearchSpaceError
from .params import Param

Genotype = tuple


@dataclass(frozen=True)
class Gene:
    name: str  # "x", "outer.inner", "[1].x", "x?" for a presence gene: for messages and reports
    size: int  # number of values (2 for a presence gene)
    ordinal: bool  # index distance means value distance
    presence_of: int | None = None  # for a presence gene: the index of its value gene
    present_prob: float = 1.0  # for a presence gene: prior probability of "present"
    seed_window: tuple[int, int] | None = None  # first-generation bias (indices, inclusive)


class Component:
    """One element of a mixed space: owns a run of genes and decodes their values."""

    genes: list[Gene]

    def decode(self, values: Sequence[int]) -> Any:
        raise NotImplementedError

    def describe(self) -> Any:
        raise NotImplementedError

    def all_absent(self, values: Sequence[int]) -> bool:
        """True when the decoded candidate would equal BASELINE_CONFIG ({}): never offered."""
        return False


class DictComponent(Component):
    """A (possibly nested) dict of DSL parameters. Keys must be strings (they become JSON keys)."""

    def __init__(self, space: dict, prefix: str = ""):
        self.genes = []
        self._slots: list[tuple[tuple[str, ...], Param, int, int | None]] = []
        self._tree = self._walk(space, (), prefix)
        self._prefix = prefix
        if not self._slots:
            raise SearchSpaceError(f"search space {prefix or ''}{{}} is empty: give at least one parameter")

    def _walk(self, node: dict, path: tuple[str, ...], prefix: str) -> dict:
        """The tree with every parameter model (search_spaces.models) turned into its Param."""
        if not isinstance(node, dict):
            raise SearchSpaceError(f"{prefix}{'.'.join(path)}: expected a dict of parameters")
        out = {}
        for key, val in node.items():
            if not isinstance(key, str):
                raise SearchSpaceError(
                    f"{prefix}{'.'.join(path + (repr(key),))}: search-space keys must be strings, got {type(key).__name__}"
                )
            where = prefix + ".".join(path + (key,))
            if hasattr(val, "to_param") and callable(val.to_param):
                val = val.to_param()
            out[key] = val
            if isinstance(val, dict):
                out[key] = self._walk(val, path + (key,), prefix)
            elif isinstance(val, Param):
                vi = len(self.genes)
                self.genes.append(Gene(where, len(val.values), val.ordinal, seed_window=val.seed_window))
                pi = None
                if val.knockable:
                    pi = len(self.genes)
                    self.genes.append(Gene(where + "?", 2, False, presence_of=vi, present_prob=1.0 - val.knockout_prob))
                self._slots.append((path + (key,), val, vi, pi))
            else:
                raise SearchSpaceError(
                    f"{where}: {val!r} is not a search-space parameter; use compileiq.search_spaces.base."
                    "range / choice / literal / log_sampling (or a nested dict of them)"
                )
        return out

    def decode(self, values):
        slots = {path: (param, vi, pi) for path, param, vi, pi in self._slots}

        def walk(node, path):  # keeps the user's key order, nested dicts included
            out = {}
            for k, v in node.items():
                if isinstance(v, dict):
                    out[k] = walk(v, path + (k,))
                    continue
                param, vi, pi = slots[path + (k,)]
                if pi is None or values[pi] == 1:
                    out[k] = param.values[values[vi]]
            return out
        return walk(self._tree, ())

    def all_absent(self, values):
        return all(pi is not None and values[pi] == 0 for _, _, _, pi in self._slots)

    def describe(self):
        def walk(node):
            return {k: walk(v) if isinstance(v, dict) else v.describe() for k, v in node.items()}
        return walk(self._tree)


def compile_component(obj: Any, prefix: str = "") -> Component:
    if isinstance(obj, Component):
        return obj
    if isinstance(obj, dict):
        return DictComponent(obj, prefix)
    if hasattr(obj, "to_component"):
        return obj.to_component()
    if callable(getattr(obj, "retrieve", None)):  # compileiq.search_spaces.compilers.SearchSpaceProvider
        from ..search_spaces.compilers import provider_component
        return provider_component(obj)
    raise SearchSpaceError(
        f"search space {prefix or ''}: {type(obj).__name__} is not a search space. Give a dict of "
        "compileiq.search_spaces.base parameters, a compiler search-space provider "
        "(compileiq.search_spaces.compilers), or a list of those for a mixed space"
    )


class SearchSpace:
    """The compiled space: genes of every component, decoding, canonical form, sampling."""

    def __init__(self, space: Any):
        self.is_list = isinstance(space, (list, tuple))
        parts = list(space) if self.is_list else [space]
        if self.is_list and not parts:
            raise SearchSpaceError("a mixed search space (a list) needs at least one component")
        self.components = [compile_component(p, f"[{i}]" if self.is_list else "") for i, p in enumerate(parts)]
        self.genes: list[Gene] = []
        self._offsets = []
        for comp in self.components:
            self._offsets.append(len(self.genes))
            base = len(self.genes)
            for g in comp.genes:
                if g.presence_of is not None:
                    g = Gene(g.name, g.size, g.ordinal, g.presence_of + base, g.present_prob, g.seed_window)
                self.genes.append(g)
        self.sizes = tuple(g.size for g in self.genes)
        self._presence = [(i, g.presence_of) for i, g in enumerate(self.genes) if g.presence_of is not None]

    # -- identity -----------------------------------------------------------------------------
    def canonical(self, genotype: Sequence[int]) -> Genotype | None:
        """The canonical genotype, or None when it decodes to BASELINE_CONFIG (never offered)."""
        g = list(genotype)
        for pi, vi in self._presence:
            if g[pi] == 0:
                g[vi] = 0
        if not self.is_list and self.components[0].all_absent(g):
            return None
        return tuple(g)

    @property
    def size(self) -> int:
        """How many distinct canonical candidates the space holds (exact, may be huge)."""
        n = 1
        knock = {vi for _, vi in self._presence}
        for i, g in enumerate(self.genes):
            if g.presence_of is not None:
                continue
            n *= g.size + 1 if i in knock else g.size
        if not self.is_list and all(g.presence_of is not None or i in knock for i, g in enumerate(self.genes)):
            n -= 1  # every key knocked out at once would be BASELINE_CONFIG
        return n

    # -- decoding ------------------------------------------------------------------------------
    def decode(self, genotype: Sequence[int]) -> Any:
        parts = []
        for comp, off in zip(self.components, self._offsets):
            parts.append(comp.decode(genotype[off:off + len(comp.genes)]))
        return parts if self.is_list else parts[0]

    def describe(self) -> Any:
        d = [c.describe() for c in self.components]
        return d if self.is_list else d[0]

    def identity(self) -> str:
        """A stable text identity of the space (used to refuse resuming into a different space)."""
        return json.dumps(self.describe(), sort_keys=True, default=str)

    # -- sampling (shared by every engine so that priors mean the same everywhere) -------------
    def sample_gene(self, i: int, rng: random.Random, seeded: bool = False) -> int:
        g = self.genes[i]
        if g.presence_of is not None:
            return 1 if rng.random() < g.present_prob else 0
        if seeded and g.seed_window is not None:
            return rng.randint(g.seed_window[0], g.seed_window[1])
        return rng.randrange(g.size)

    def random_genotype(self, rng: random.Random, seeded: bool = False) -> Genotype:
        return tuple(self.sample_gene(i, rng, seeded) for i in range(len(self.genes)))

    def has_seed_windows(self) -> bool:
        return any(g.seed_window is not None for g in self.genes)

    def enumerate(self, limit: int) -> list[Genotype] | None:
        """Every canonical candidate when the space holds at most ``limit``; else None."""
        if self.size > limit:
            return None
        out, seen = [], set()
        total = math.prod(self.sizes)
        for flat in range(total):
            g, rem = [], flat
            for s in self.sizes:
                g.append(rem % s)
                rem //= s
            c = self.canonical(g)
            if c is not None and c not in seen:
                seen.add(c)
                out.append(c)
        return out


def params_key(params: Any) -> str:
    """The identity of a decoded candidate as text: what the results CSV stores and resume matches."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"))

