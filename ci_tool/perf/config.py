"""Perf-sanity configs: `tests/scripts/perf-sanity/<config>.yaml` -> frozen cases, validated once.

    version: 1
    model: gemma-like                 # an engine model preset
    rounds: 5                         # measured rounds per GPU case, in one process: the median and its noise
    warmup_rounds: 1                  # rounds run first and discarded (caches, clocks, allocator)
    server_configs:                   # the server part: one engine set-up each
    - name: pool4g
      max_batch_size: 256             # also the largest CUDA-graph batch size
      max_num_tokens: 2048
      hidden_size: 2048
      cuda_graphs: required           # required (lost coverage fails) | enabled | off
      kv_cache_config: {budget_gib: 4, tokens_per_block: 32, avg_seq_len: null, pool_ratio: null}
      client_configs:                 # the client part: one load each; a case = server x client
      - name: b80
        concurrency: 80
        input_len: 96
        output_len: 32
        cpu: {hidden_size: 64, output_len: 4}   # optional: also run eagerly on CPU, these sizes changed
                                                 # (CPU cases check coverage, not speed: 1 round unless set)

A case's id is `<mode>-<config>-<server>-<client>` (mode `gpu`, or `cpu` for a client with a `cpu` part):
what `tests/perf/test_perf_sanity.py::test_e2e[...]` is parametrized with and the history is keyed by.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from yaml.nodes import Node, SequenceNode

from ci_tool.errors import PerfError, Where, did_you_mean
from ci_tool.text_file import read_text
from ci_tool.yaml_fields import Field, Found, ValueReader, choice, integer, read_fields
from ci_tool.yaml_nodes import NodeKind, NodeReader, compose

CONFIG_DIR = Path("tests/scripts/perf-sanity")  # relative to the repository root
CASE_TEST = "tests/perf/test_perf_sanity.py::test_e2e"  # parametrized with the case ids
CONFIG_VERSION = 1
WARMUP_STEPS = 2  # untimed decode steps before a case's output_len timed ones
DEFAULT_ROUNDS = 5  # a GPU case's measured rounds: enough for a median and a MAD that one stray round cannot move
DEFAULT_WARMUP_ROUNDS = 1
CPU_ROUNDS = 1  # CPU cases gate coverage, never speed: one round, no warm-up, unless their `cpu` part says
_NAME = re.compile(r"[a-z0-9_]+")  # no dashes: they separate the parts of a case id


class Mode(enum.StrEnum):
    """Where a case runs: `gpu` with CUDA graphs and full sizes, `cpu` eagerly at the client's CPU sizes."""

    GPU = "gpu"
    CPU = "cpu"


class GraphPolicy(enum.StrEnum):
    REQUIRED = "required"  # every requested capture size captured and no eager step, or the case fails
    ENABLED = "enabled"  # graphs on; lost coverage is recorded, not failed
    OFF = "off"


@dataclass(frozen=True)
class KvCacheSpec:
    budget_gib: float
    tokens_per_block: int = 32
    avg_seq_len: int | None = None  # None: the allocator-fallback split (the fixed Gemma default)
    pool_ratio: tuple[float, ...] | None = None


@dataclass(frozen=True)
class Load:
    """The client part: how many sequences decode side by side, their prompt and generated lengths."""

    concurrency: int
    input_len: int
    output_len: int


@dataclass(frozen=True)
class Rounds:
    """How a case measures: `warmup` rounds discarded, then `measured` rounds summarised (noise.py)."""

    measured: int = DEFAULT_ROUNDS
    warmup: int = DEFAULT_WARMUP_ROUNDS


@dataclass(frozen=True)
class PerfCase:
    """One case: a model preset under a server set-up and a client load, in one mode."""

    mode: Mode
    config: str  # the config file's stem
    server: str
    client: str
    model: str
    max_batch_size: int
    max_num_tokens: int | None
    hidden_size: int
    cuda_graphs: GraphPolicy
    kv_cache: KvCacheSpec
    load: Load
    source: str  # file:line of the client entry, for messages
    rounds: Rounds = Rounds()

    @property
    def case_id(self) -> str:
        return f"{self.mode}-{self.config}-{self.server}-{self.client}"

    @property
    def max_context_tokens(self) -> int:
        """The block-table width of the decode step: a prompt and all its generated tokens."""
        return self.load.input_len + WARMUP_STEPS + self.load.output_len


@dataclass(frozen=True)
class PerfConfig:
    path: Path
    model: str
    cases: tuple[PerfCase, ...]


def config_path(root: Path, config: str) -> Path:
    return root / CONFIG_DIR / f"{config}.yaml"


def parse_case_id(case_id: str) -> tuple[Mode, str, str] | None:
    """(mode, config, `server-client`) of a case id, or None when it is not shaped like one."""
    parts = case_id.split("-", 2)
    if len(parts) != 3 or parts[0] not in Mode.__members__.values():
        return None
    return Mode(parts[0]), parts[1], parts[2]


def load_configs(folder: Path, *, models: Iterable[str] | None = None) -> tuple[PerfConfig, ...]:
    """Every `*.yaml` of `folder`, sorted by name; `models`, when given, are the valid model names."""
    known = tuple(models) if models is not None else None
    return tuple(load_config(path, models=known) for path in sorted(folder.glob("*.yaml")))


def load_config(path: Path, *, models: Iterable[str] | None = None) -> PerfConfig:
    """One config file; the first problem raises a located PerfError (the hint counts the others)."""
    text = read_text(path, name="perf-sanity config", error=PerfError)
    reader = _Reader(str(path), PerfError)
    root = compose(text, file=str(path), error=PerfError)
    if root is None:
        raise PerfError("expected a perf-sanity config (version, model, server_configs), found an empty file",
                        where=Where(str(path)), hint="copy an existing config in the same folder")  # fmt: skip
    config = reader.config(root, path, tuple(models) if models is not None else None)
    if not _NAME.fullmatch(path.stem):
        reader.problem(root, None, f"expected a config file name of [a-z0-9_]+, found {path.name!r}",
                       "rename it with underscores: a dash separates the parts of a case id")  # fmt: skip
    if reader.problems or config is None:
        reader.raise_all()
    assert config is not None  # raise_all raised otherwise
    return config


def _name_reader(*, allow_dash: bool = False) -> ValueReader:
    """A name of [a-z0-9_]+ (with dashes too for a model preset: a case id's parts are split at dashes)."""
    pattern = re.compile(r"[a-z0-9_-]+") if allow_dash else _NAME

    def read(reader: NodeReader, node: Node, path: str) -> str | None:
        text = reader.scalar(node, path, (NodeKind.STR,), "a name")
        if text is None:
            return None
        if not pattern.fullmatch(text):
            hint = None if allow_dash else "use underscores: a dash separates the parts of a case id"
            reader.problem(node, path, f"expected a name of {pattern.pattern}, found {text!r}", hint)
            return None
        return text

    return read


def _non_empty_list(what: str) -> ValueReader:
    """A non-empty list's node, its items read later with what the rest of the mapping says."""

    def read(reader: NodeReader, node: Node, path: str) -> Node | None:
        if not isinstance(node, SequenceNode) or not node.value:
            reader.mismatch(node, path, what)
            return None
        return node

    return read


def _read_budget(reader: NodeReader, node: Node, path: str) -> float | None:
    value = reader.number(node, path, "a budget in GiB > 0")
    if value is not None and value <= 0:
        reader.problem(node, path, f"expected a budget in GiB > 0, found {value:g}")
        return None
    return value


def _read_pool_ratio(reader: NodeReader, node: Node, path: str) -> tuple[float, ...] | None:
    if not isinstance(node, SequenceNode) or not node.value:
        reader.mismatch(node, path, "a list of positive weights, one per pool")
        return None
    weights = [reader.number(n, f"{path}[{i}]", "a weight > 0") for i, n in enumerate(node.value)]
    if all(w is not None and w > 0 for w in weights):
        return tuple(w for w in weights if w is not None)
    reader.mismatch(node, path, "a list of weights > 0")
    return None


_POSITIVE = integer("an integer >= 1", minimum=1)
_ROUND_FIELDS = (
    Field("rounds", _POSITIVE),
    Field("warmup_rounds", integer("an integer >= 0", minimum=0)),
)
_LOAD_FIELDS = tuple(Field(key, _POSITIVE, required=True) for key in ("concurrency", "input_len", "output_len"))
_TOP_FIELDS = (
    Field("version", integer(f"version {CONFIG_VERSION}", minimum=0), required=True),
    Field("model", _name_reader(allow_dash=True), required=True),
    *_ROUND_FIELDS,
    Field("server_configs", _non_empty_list("a non-empty list of server configs"), required=True),
)
_KV_FIELDS = (
    Field("budget_gib", _read_budget, required=True, example="4"),
    Field("tokens_per_block", _POSITIVE, nullable=True),
    Field("avg_seq_len", _POSITIVE, nullable=True),
    Field("pool_ratio", _read_pool_ratio, nullable=True),
)


def _read_kv(reader: NodeReader, node: Node, path: str) -> KvCacheSpec | None:
    found = read_fields(reader, node, path, "a KV-cache config mapping", _KV_FIELDS)
    if found is None or "budget_gib" not in found.values:
        return None
    budget, ratio = found.get("budget_gib", float), found.get("pool_ratio", tuple)
    assert budget is not None  # checked above
    return KvCacheSpec(budget, found.get("tokens_per_block", int) or 32, found.get("avg_seq_len", int), ratio)


_SERVER_FIELDS = (
    Field("name", _name_reader(), required=True),
    Field("max_batch_size", _POSITIVE, required=True),
    Field("max_num_tokens", _POSITIVE, nullable=True),
    Field("hidden_size", _POSITIVE, nullable=True),
    Field("cuda_graphs", choice(GraphPolicy, "required, enabled or off", hint="use required, enabled or off")),
    Field("kv_cache_config", _read_kv, required=True),
    Field("client_configs", _non_empty_list("a non-empty list of client configs"), required=True),
)
_CLIENT_FIELDS = (
    Field("name", _name_reader(), required=True),
    *_LOAD_FIELDS,
    Field("cpu", lambda reader, node, path: node),  # read with the GPU case it changes
)
_CPU_FIELDS = (
    Field("hidden_size", _POSITIVE, nullable=True),
    Field("budget_gib", _read_budget),
    Field("max_batch_size", _POSITIVE, nullable=True),
    *(dataclasses.replace(spec, required=False) for spec in _LOAD_FIELDS),  # the GPU case's when not written
    *_ROUND_FIELDS,
)


class _Reader(NodeReader):
    def config(self, root: Node, path: Path, models: tuple[str, ...] | None) -> PerfConfig | None:
        found = read_fields(self, root, "", "a mapping of version, model, server_configs", _TOP_FIELDS)
        if found is None:
            return None
        values = found.values
        version = values.get("version")
        if version is not None and version != CONFIG_VERSION:
            self.problem(found.nodes["version"], "version", f"expected version {CONFIG_VERSION}, found {version}")
        model = values.get("model")
        assert model is None or isinstance(model, str)  # read by _name_reader
        if model is not None and models is not None and model not in models:
            hint = did_you_mean(model, models) or f"models are {', '.join(models)}"
            self.problem(found.nodes["model"], "model", f"expected a model preset, found {model!r}", hint)
        rounds = _rounds(found, Rounds())
        cases: list[PerfCase] = []
        servers = values.get("server_configs")
        if isinstance(servers, SequenceNode):
            seen: set[str] = set()
            for index, node in enumerate(servers.value):
                cases += self._server(node, f"server_configs[{index}]", path.stem, model or "", seen)
        if rounds is not None:
            cases = [c if c.mode is Mode.CPU else dataclasses.replace(c, rounds=rounds) for c in cases]
        return PerfConfig(path, model or "", tuple(cases))

    def _unique(self, found: Found, path: str, seen: set[str]) -> str | None:
        """The mapping's name, once among `seen` (its siblings' names)."""
        name = found.values.get("name")
        if not isinstance(name, str):
            return None
        if name in seen:
            self.problem(found.nodes["name"], f"{path}.name", f"expected each name once, found {name!r} again",
                         "rename one of them")  # fmt: skip
            return None
        seen.add(name)
        return name

    def _server(self, node: Node, path: str, config: str, model: str, seen: set[str]) -> list[PerfCase]:
        found = read_fields(self, node, path, "a server config mapping", _SERVER_FIELDS)
        if found is None:
            return []
        name = self._unique(found, path, seen)
        batch, kv = found.get("max_batch_size", int), found.get("kv_cache_config", KvCacheSpec)
        clients = found.get("client_configs", SequenceNode)
        if name is None or batch is None or kv is None or clients is None:
            return []
        tokens, hidden = found.get("max_num_tokens", int), found.get("hidden_size", int) or 2048
        graphs = found.get("cuda_graphs", GraphPolicy) or GraphPolicy.REQUIRED
        cases = []
        names: set[str] = set()
        for index, client_node in enumerate(clients.value):
            where = f"{self.file}:{client_node.start_mark.line + 1}"
            base = PerfCase(Mode.GPU, config, name, "", model, batch, tokens, hidden, graphs, kv, Load(1, 1, 1), where)
            cases += self._client(client_node, f"{path}.client_configs[{index}]", base, names)
        return cases

    def _client(self, node: Node, path: str, base: PerfCase, names: set[str]) -> list[PerfCase]:
        found = read_fields(self, node, path, "a client config mapping", _CLIENT_FIELDS)
        if found is None:
            return []
        name = self._unique(found, path, names)
        load = _load(found, None)
        if name is None or load is None:
            return []
        if load.concurrency > base.max_batch_size:
            self.problem(found.nodes["concurrency"], f"{path}.concurrency",
                         f"expected a concurrency <= max_batch_size {base.max_batch_size}, found {load.concurrency}",
                         "raise max_batch_size or lower the concurrency")  # fmt: skip
            return []
        gpu = dataclasses.replace(base, client=name, load=load)
        cases = [gpu]
        if "cpu" in found.nodes:
            cpu = self._cpu(found.nodes["cpu"], f"{path}.cpu", gpu)
            if cpu is not None:
                cases.append(cpu)
        return cases

    def _cpu(self, node: Node, path: str, gpu: PerfCase) -> PerfCase | None:
        found = read_fields(self, node, path, "a mapping of CPU sizes", _CPU_FIELDS)
        if found is None or not found.complete:
            return None
        values = found.values
        load = _load(found, gpu.load)
        hidden = values.get("hidden_size") or gpu.hidden_size
        batch = values.get("max_batch_size") or gpu.max_batch_size
        budget = values.get("budget_gib")
        assert load is not None and isinstance(hidden, int) and isinstance(batch, int)  # found complete
        assert budget is None or isinstance(budget, float)  # read by _read_budget
        if load.concurrency > batch:
            self.problem(node, path, f"expected a concurrency <= max_batch_size {batch}, found {load.concurrency}",
                         "raise max_batch_size or lower the concurrency")  # fmt: skip
            return None
        rounds = _rounds(found, Rounds(CPU_ROUNDS, 0))
        assert rounds is not None  # found complete
        kv = dataclasses.replace(gpu.kv_cache, budget_gib=budget) if budget is not None else gpu.kv_cache
        return dataclasses.replace(gpu, mode=Mode.CPU, load=load, hidden_size=hidden, kv_cache=kv,
                                   max_batch_size=batch, rounds=rounds)  # fmt: skip


def _rounds(found: Found, default: Rounds) -> Rounds | None:
    """The rounds written (`default`'s where not); None when one written did not read."""
    measured = found.values.get("rounds", None if "rounds" in found.nodes else default.measured)
    warmup = found.values.get("warmup_rounds", None if "warmup_rounds" in found.nodes else default.warmup)
    return None if measured is None or warmup is None else Rounds(measured, warmup)  # type: ignore[arg-type]


def _load(found: Found, default: Load | None) -> Load | None:
    """The load written (`default`'s parts where not); None when a part written did not read."""
    values = {}
    for key in ("concurrency", "input_len", "output_len"):
        if key in found.nodes:
            values[key] = found.values.get(key)
        elif default is not None:
            values[key] = getattr(default, key)
    if len(values) < 3 or any(v is None for v in values.values()):
        return None
    return Load(**values)  # type: ignore[arg-type]
