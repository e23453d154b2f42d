"""Load a model spec from YAML (a file or a shipped preset) into frozen dataclasses, validating once.

Errors name the place as `file:line:col (yaml.path)`, what was expected and what was found.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from kvengine.errors import SpecError, did_you_mean
from kvengine.manager import MANAGERS
from kvengine.spec import DTYPE_BYTES, LayerSpec, ModelSpec, RuntimeLimits

_TOP_KEYS = {"name", "manager", "tokens_per_block", "layers", "repeat", "runtime"}
_LAYER_KEYS = {"count", "num_kv_heads", "head_dim", "dtype", "window", "sink_tokens", "key_only", "num_q_heads"}
_REQUIRED = object()
_RUNTIME_KEYS = {
    "max_seq_len", "max_batch_size", "max_num_tokens", "max_draft_len", "num_extra_kv_tokens",
    "cuda_graph_batch_sizes",
}


def preset_names() -> tuple[str, ...]:
    folder = resources.files("kvengine.presets")
    return tuple(sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml")))


def load_preset(name: str) -> ModelSpec:
    if name not in preset_names():
        raise SpecError(f"unknown preset {name!r}.", hint=did_you_mean(name, preset_names()))
    text = (resources.files("kvengine.presets") / f"{name}.yaml").read_text(encoding="utf-8")
    return parse_spec(text, source=f"preset {name}")


def load_spec_file(path: Path) -> ModelSpec:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"cannot read model spec {str(path)!r}: {exc.strerror}.", hint="check the path") from None
    return parse_spec(text, source=str(path))


def parse_spec(text: str, *, source: str) -> ModelSpec:
    try:
        loader = yaml.SafeLoader(text)
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        raise SpecError(f"{where}: not valid YAML ({getattr(exc, 'problem', exc)}).") from None
    marks: dict[str, tuple[int, int]] = {}
    if node is not None:
        _record_marks(node, "", marks)
    return _Reader(source, marks).spec(data)


def _record_marks(node: yaml.Node, path: str, marks: dict[str, tuple[int, int]]) -> None:
    marks[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            child = f"{path}.{key.value}" if path else str(key.value)
            marks[child + "#key"] = (key.start_mark.line + 1, key.start_mark.column + 1)
            _record_marks(value, child, marks)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _record_marks(item, f"{path}[{index}]", marks)


@dataclass
class _Reader:
    source: str
    marks: dict[str, tuple[int, int]]

    def fail(self, path: str, expected: str, found: Any, hint: str | None = None, *, at_key: bool = False) -> SpecError:
        mark_path = path + "#key" if at_key else path
        line, col = self.marks.get(mark_path, self.marks.get(path.rsplit(".", 1)[0], (1, 1)))
        return SpecError(f"{self.source}:{line}:{col} ({path or '<top>'}): expected {expected}, found {found!r}.",
                         hint=hint)

    def mapping(self, data: Any, path: str, keys: set[str], required: set[str]) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise self.fail(path, "a mapping", data)
        for key in data:
            if key not in keys:
                where = f"{path}.{key}" if path else str(key)
                raise self.fail(where, "a known key", key, did_you_mean(str(key), keys), at_key=True)
        for key in sorted(required - set(data)):
            raise self.fail(path, f"key {key!r}", sorted(data), f"add {key}: ...")
        return data

    def integer(self, data: dict[str, Any], key: str, path: str, *, minimum: int, default: Any = _REQUIRED) -> Any:
        """The integer at `key`; an absent or null optional key gives `default` (None when not given)."""
        value = data.get(key)
        if value is None and default is not _REQUIRED:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.fail(f"{path}.{key}" if path else key, f"an integer >= {minimum}", value)
        return value

    def spec(self, data: Any) -> ModelSpec:
        top = self.mapping(data, "", _TOP_KEYS, {"name", "layers", "runtime"})
        name = top["name"]
        if not isinstance(name, str) or not name:
            raise self.fail("name", "a non-empty string", name)
        manager = top.get("manager", "generic")
        if manager not in MANAGERS:
            raise self.fail("manager", "a known manager", manager, did_you_mean(str(manager), MANAGERS))
        tokens_per_block = self.integer(top, "tokens_per_block", "", minimum=1, default=32)
        repeat = self.integer(top, "repeat", "", minimum=1, default=1)
        if not isinstance(top["layers"], list) or not top["layers"]:
            raise self.fail("layers", "a non-empty list of layer entries", top["layers"])
        layers: list[LayerSpec] = []
        for index, entry in enumerate(top["layers"]):
            count, layer = self.layer(entry, f"layers[{index}]")
            layers.extend([layer] * count)
        return ModelSpec(name, manager, tuple(layers * repeat), self.runtime(top["runtime"]), tokens_per_block)

    def layer(self, data: Any, path: str) -> tuple[int, LayerSpec]:
        entry = self.mapping(data, path, _LAYER_KEYS, {"num_kv_heads", "head_dim", "dtype", "window"})
        if entry["dtype"] not in DTYPE_BYTES:
            hint = did_you_mean(str(entry["dtype"]), DTYPE_BYTES)
            raise self.fail(f"{path}.dtype", "a known dtype", entry["dtype"], hint)
        window = self.integer(entry, "window", path, minimum=1, default=None)
        key_only = entry.get("key_only", False)
        if not isinstance(key_only, bool):
            raise self.fail(f"{path}.key_only", "true or false", key_only)
        layer = LayerSpec(
            num_kv_heads=self.integer(entry, "num_kv_heads", path, minimum=1),
            head_dim=self.integer(entry, "head_dim", path, minimum=1),
            dtype=entry["dtype"],
            window_tokens=window,
            sink_tokens=self.integer(entry, "sink_tokens", path, minimum=0, default=0),
            key_only=key_only,
            num_q_heads=self.integer(entry, "num_q_heads", path, minimum=1, default=None),
        )
        if layer.q_heads % layer.num_kv_heads:
            raise self.fail(f"{path}.num_q_heads", f"a multiple of num_kv_heads {layer.num_kv_heads}", layer.q_heads)
        return self.integer(entry, "count", path, minimum=1, default=1), layer

    def runtime(self, data: Any) -> RuntimeLimits:
        entry = self.mapping(data, "runtime", _RUNTIME_KEYS, {"max_seq_len", "max_batch_size"})
        sizes = entry.get("cuda_graph_batch_sizes")
        if sizes is not None and (
            not isinstance(sizes, list) or not sizes
            or any(isinstance(s, bool) or not isinstance(s, int) or s < 1 for s in sizes)
        ):
            raise self.fail("runtime.cuda_graph_batch_sizes", "a non-empty list of positive integers", sizes)
        return RuntimeLimits(
            max_seq_len=self.integer(entry, "max_seq_len", "runtime", minimum=1),
            max_batch_size=self.integer(entry, "max_batch_size", "runtime", minimum=1),
            max_num_tokens=self.integer(entry, "max_num_tokens", "runtime", minimum=1, default=None),
            max_draft_len=self.integer(entry, "max_draft_len", "runtime", minimum=0, default=0),
            num_extra_kv_tokens=self.integer(entry, "num_extra_kv_tokens", "runtime", minimum=0, default=0),
            cuda_graph_batch_sizes=tuple(sizes) if sizes is not None else None,
        )
