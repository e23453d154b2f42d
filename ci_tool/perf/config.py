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

from yaml.nodes import Node, ScalarNode, SequenceNode

from ci_tool.errors import PerfError, Where, did_you_mean
from ci_tool.text_file import read_text
from ci_tool.yaml_nodes import NodeReader, compose, kind

CONFIG_DIR = Path("tests/scripts/perf-sanity")  # relative to the repository root
CASE_TEST = "tests/perf/test_perf_sanity.py::test_e2e"  # parametrized with the case ids
CONFIG_VERSION = 1
WARMUP_STEPS = 2  # untimed decode steps before a case's output_len timed ones
DEFAULT_ROUNDS = 5  # a GPU case's measured rounds: enough for a median and a MAD that one stray round cannot move
DEFAULT_WARMUP_ROUNDS = 1
CPU_ROUNDS = 1  # CPU cases gate coverage, never speed: one round, no warm-up, unless their `cpu` part says
_NAME = re.compile(r"[a-z0-9_]+")  # no dashes: they separate the parts of a case id
_ROUND_KEYS = ("rounds", "warmup_rounds")
_TOP_KEYS = ("version", "model", *_ROUND_KEYS, "server_configs")
_SERVER_KEYS = ("name", "max_batch_size", "max_num_tokens", "hidden_size", "cuda_graphs", "kv_cache_config",
                "client_configs")  # fmt: skip
_KV_KEYS = ("budget_gib", "tokens_per_block", "avg_seq_len", "pool_ratio")
_CLIENT_KEYS = ("name", "concurrency", "input_len", "output_len", "cpu")
_CPU_KEYS = ("hidden_size", "budget_gib", "max_batch_size", "concurrency", "input_len", "output_len", *_ROUND_KEYS)


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


class _Reader(NodeReader):
    def config(self, root: Node, path: Path, models: tuple[str, ...] | None) -> PerfConfig | None:
        top = self.mapping(root, "", "a mapping of version, model, server_configs", _TOP_KEYS)
        if top is None:
            return None
        for key in ("version", "model", "server_configs"):
            if key not in top:
                self.problem(root, None, f"expected the key {key!r}, found none", f"add `{key}:`")
        if "version" in top:
            version = self.integer(top["version"], "version", f"version {CONFIG_VERSION}", minimum=0)
            if version is not None and version != CONFIG_VERSION:
                self.problem(top["version"], "version", f"expected version {CONFIG_VERSION}, found {version}")
        model = self._name(top["model"], "model", allow_dash=True) if "model" in top else None
        if model is not None and models is not None and model not in models:
            hint = did_you_mean(model, models) or f"models are {', '.join(models)}"
            self.problem(top["model"], "model", f"expected a model preset, found {model!r}", hint)
        rounds = self._rounds(top, "", Rounds())
        cases: list[PerfCase] = []
        servers = top.get("server_configs")
        if servers is not None:
            if not isinstance(servers, SequenceNode) or not servers.value:
                self.mismatch(servers, "server_configs", "a non-empty list of server configs")
            else:
                seen: set[str] = set()
                for index, node in enumerate(servers.value):
                    cases += self._server(node, f"server_configs[{index}]", path.stem, model or "", seen)
        if rounds is not None:
            cases = [c if c.mode is Mode.CPU else dataclasses.replace(c, rounds=rounds) for c in cases]
        return PerfConfig(path, model or "", tuple(cases))

    def _rounds(self, entry: dict[str, Node], path: str, default: Rounds) -> Rounds | None:
        prefix = f"{path}." if path else ""
        measured: int | None = default.measured
        warmup: int | None = default.warmup
        if "rounds" in entry:
            measured = self.integer(entry["rounds"], f"{prefix}rounds", "an integer >= 1", minimum=1)
        if "warmup_rounds" in entry:
            warmup = self.integer(entry["warmup_rounds"], f"{prefix}warmup_rounds", "an integer >= 0", minimum=0)
        return None if measured is None or warmup is None else Rounds(measured, warmup)

    def _name(self, node: Node, path: str, *, allow_dash: bool = False) -> str | None:
        text = self.scalar(node, path, ("str",), "a name")
        if text is None:
            return None
        pattern = re.compile(r"[a-z0-9_-]+") if allow_dash else _NAME
        if not pattern.fullmatch(text):
            hint = None if allow_dash else "use underscores: a dash separates the parts of a case id"
            self.problem(node, path, f"expected a name of {pattern.pattern}, found {text!r}", hint)
            return None
        return text

    def _unique(self, node: Node, path: str, seen: set[str]) -> str | None:
        name = self._name(node, path)
        if name is not None and name in seen:
            self.problem(node, path, f"expected each name once, found {name!r} again", "rename one of them")
            return None
        if name is not None:
            seen.add(name)
        return name

    def _server(self, node: Node, path: str, config: str, model: str, seen: set[str]) -> list[PerfCase]:
        entry = self.mapping(node, path, "a server config mapping", _SERVER_KEYS)
        if entry is None:
            return []
        for key in ("name", "max_batch_size", "kv_cache_config", "client_configs"):
            if key not in entry:
                self.problem(node, path, f"expected the key {key!r}, found none", f"add `{key}:`")
        if any(key not in entry for key in ("name", "max_batch_size", "kv_cache_config", "client_configs")):
            return []
        name = self._unique(entry["name"], f"{path}.name", seen)
        batch = self.integer(entry["max_batch_size"], f"{path}.max_batch_size", "an integer >= 1", minimum=1)
        tokens = self._optional_int(entry, "max_num_tokens", path)
        hidden = self._optional_int(entry, "hidden_size", path) or 2048
        graphs = GraphPolicy.REQUIRED
        if "cuda_graphs" in entry:
            text = self.scalar(entry["cuda_graphs"], f"{path}.cuda_graphs", ("str",), "required, enabled or off")
            if text is not None and text not in GraphPolicy.__members__.values():
                hint = did_you_mean(text, [g.value for g in GraphPolicy]) or "use required, enabled or off"
                self.problem(entry["cuda_graphs"], f"{path}.cuda_graphs",
                             f"expected required, enabled or off, found {text!r}", hint)  # fmt: skip
            elif text is not None:
                graphs = GraphPolicy(text)
        kv = self._kv(entry["kv_cache_config"], f"{path}.kv_cache_config")
        clients = entry["client_configs"]
        if not isinstance(clients, SequenceNode) or not clients.value:
            self.mismatch(clients, f"{path}.client_configs", "a non-empty list of client configs")
            return []
        if name is None or batch is None or kv is None:
            return []
        cases = []
        names: set[str] = set()
        for index, client_node in enumerate(clients.value):
            base = PerfCase(Mode.GPU, config, name, "", model, batch, tokens, hidden, graphs, kv, Load(1, 1, 1),
                            f"{self.file}:{client_node.start_mark.line + 1}")  # fmt: skip
            cases += self._client(client_node, f"{path}.client_configs[{index}]", base, names)
        return cases

    def _optional_int(self, entry: dict[str, Node], key: str, path: str) -> int | None:
        node = entry.get(key)
        if node is None or (isinstance(node, ScalarNode) and kind(node) == "null"):
            return None
        return self.integer(node, f"{path}.{key}", "an integer >= 1", minimum=1)

    def _kv(self, node: Node, path: str) -> KvCacheSpec | None:
        entry = self.mapping(node, path, "a KV-cache config mapping", _KV_KEYS)
        if entry is None:
            return None
        if "budget_gib" not in entry:
            self.problem(node, path, "expected the key 'budget_gib', found none", "add `budget_gib: 4`")
            return None
        budget = self._budget(entry["budget_gib"], f"{path}.budget_gib")
        tpb = self._optional_int(entry, "tokens_per_block", path) or 32
        avg = self._optional_int(entry, "avg_seq_len", path)
        ratio = None
        ratio_node = entry.get("pool_ratio")
        if ratio_node is not None and not (isinstance(ratio_node, ScalarNode) and kind(ratio_node) == "null"):
            if not isinstance(ratio_node, SequenceNode) or not ratio_node.value:
                self.mismatch(ratio_node, f"{path}.pool_ratio", "a list of positive weights, one per pool")
            else:
                weights = [self.number(n, f"{path}.pool_ratio[{i}]", "a weight > 0") for i, n in
                           enumerate(ratio_node.value)]  # fmt: skip
                if all(w is not None and w > 0 for w in weights):
                    ratio = tuple(w for w in weights if w is not None)
                else:
                    self.mismatch(ratio_node, f"{path}.pool_ratio", "a list of weights > 0")
        return None if budget is None else KvCacheSpec(budget, tpb, avg, ratio)

    def _budget(self, node: Node, path: str) -> float | None:
        value = self.number(node, path, "a budget in GiB > 0")
        if value is not None and value <= 0:
            self.problem(node, path, f"expected a budget in GiB > 0, found {value:g}")
            return None
        return value

    def _client(self, node: Node, path: str, base: PerfCase, names: set[str]) -> list[PerfCase]:
        entry = self.mapping(node, path, "a client config mapping", _CLIENT_KEYS)
        if entry is None:
            return []
        missing = [key for key in ("name", "concurrency", "input_len", "output_len") if key not in entry]
        for key in missing:
            self.problem(node, path, f"expected the key {key!r}, found none", f"add `{key}:`")
        if missing:
            return []
        name = self._unique(entry["name"], f"{path}.name", names)
        load = self._load(entry, path, None)
        if name is None or load is None:
            return []
        if load.concurrency > base.max_batch_size:
            self.problem(entry["concurrency"], f"{path}.concurrency",
                         f"expected a concurrency <= max_batch_size {base.max_batch_size}, found {load.concurrency}",
                         "raise max_batch_size or lower the concurrency")  # fmt: skip
            return []
        gpu = dataclasses.replace(base, client=name, load=load)
        cases = [gpu]
        if "cpu" in entry:
            cpu = self._cpu(entry["cpu"], f"{path}.cpu", gpu)
            if cpu is not None:
                cases.append(cpu)
        return cases

    def _load(self, entry: dict[str, Node], path: str, default: Load | None) -> Load | None:
        values = {}
        for key in ("concurrency", "input_len", "output_len"):
            if key in entry:
                values[key] = self.integer(entry[key], f"{path}.{key}", "an integer >= 1", minimum=1)
            elif default is not None:
                values[key] = getattr(default, key)
        if any(v is None for v in values.values()):
            return None
        return Load(**values)  # type: ignore[arg-type]

    def _cpu(self, node: Node, path: str, gpu: PerfCase) -> PerfCase | None:
        entry = self.mapping(node, path, "a mapping of CPU sizes", _CPU_KEYS)
        if entry is None:
            return None
        load = self._load(entry, path, gpu.load)
        hidden = self._optional_int(entry, "hidden_size", path) or gpu.hidden_size
        batch = self._optional_int(entry, "max_batch_size", path) or gpu.max_batch_size
        budget = self._budget(entry["budget_gib"], f"{path}.budget_gib") if "budget_gib" in entry else None
        if load is None or ("budget_gib" in entry and budget is None):
            return None
        if load.concurrency > batch:
            self.problem(node, path, f"expected a concurrency <= max_batch_size {batch}, found {load.concurrency}",
                         "raise max_batch_size or lower the concurrency")  # fmt: skip
            return None
        rounds = self._rounds(entry, path, Rounds(CPU_ROUNDS, 0))
        if rounds is None:
            return None
        kv = dataclasses.replace(gpu.kv_cache, budget_gib=budget) if budget is not None else gpu.kv_cache
        return dataclasses.replace(gpu, mode=Mode.CPU, load=load, hidden_size=hidden, kv_cache=kv,
                                   max_batch_size=batch, rounds=rounds)  # fmt: skip
