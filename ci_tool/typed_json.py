"""JSON to a typed value, or a located error: the one structuring step of ci-tool's JSON readers.

`load` reads JSON text (json_file.parse_json: its limits, syntax errors at file:line:col) into the given
class; `structure` does the same for a value already parsed (a JSON line, a file json_file.read_json read);
`dump` writes a dataclass back as JSON. Anything that is not the declared value is one error of the
caller's domain at its line, column and JSON path: `<file>:1:230 (result.tests[3].first.outcome): expected
one of passed, failed, ..., found 'x'` (`structure` given no text: the path alone), with a did-you-mean
hint for a key or word close to a declared one. Reading builds nothing but the declared values: the Slurm
hand-off (slurm_job.py) crosses files a job's tests can write as well, where a pickle would run whatever
code the file names. `partial=True` reads the part of a document that another module writes, in any of its versions:
keys no class declares are passed over (the run record, stages/record.py); a hand-off reads every key.

Why ours and not a library: cattrs (structure hooks, ClassValidationError) and pydantic (models,
ValidationError) both structure JSON into typed values with paths, but their messages are their own words
(`$.result.tests[3]`, `Input should be ...`) and ours are API that tests pin; pydantic also wants models in
place of the frozen dataclasses that travel between packages, and brings a compiled core. What the readers
need is this table, some 200 lines over the dataclasses they already have: a new field type extends it.
A rule beyond a value's type (a non-empty key, a count >= 1) stays with its reader, after `structure`.

    dataclass          an object with its fields (`__test__` and properties are not fields); a field with a
                       default may be left out, and no other key is taken unless `partial`
    str int float bool the JSON value itself (a float also takes a whole number; bool is never an int)
    Path               a string
    Enum               its value
    re.Pattern         its pattern (compiled again)
    tuple[X, ...]      an array; tuple[X, Y] an array of two
    Mapping[str, X]    an object
    X | None           null or an X
    X | Y              an X or a Y, told apart by their JSON values (a string or an object, say)
    object             any JSON value, kept as it is (the `details` a stage's executor adds)
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import re
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from ci_tool.errors import CiToolError, Where, did_you_mean, shown
from ci_tool.json_file import parse_json, value_position

T = TypeVar("T")
_SCALARS = {str: "a string", int: "a whole number", float: "a number", bool: "true or false"}


def dump(value: object) -> str:
    """The JSON text of a dataclass value (refused: NaN, infinities and types the table above lacks)."""
    return json.dumps(_plain(value), allow_nan=False, separators=(",", ":")) + "\n"


def load(text: str, kind: type[T], *, file: str, error: type[CiToolError], partial: bool = False) -> T:
    """The `kind` value that `text` holds; JSON that is not one raises `error` at the value's path."""
    data = parse_json(text, file=file, error=error)
    return structure(data, kind, file=file, error=error, text=text, partial=partial)


def structure(
    data: object,
    kind: type[T],
    *,
    file: str,
    error: type[CiToolError],
    text: str | None = None,
    partial: bool = False,
) -> T:
    """The `kind` value that parsed JSON `data` holds; anything else raises `error` at the value's path (and its
    line and column in `text`, the JSON `data` was parsed from, when given). `partial`: objects may hold keys
    their class does not declare, passed over."""
    return typing.cast(T, _build(data, kind, _Place(file, error, "", (), text, partial)))


def _plain(value: object) -> object:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: _plain(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return _plain(value.value)
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, re.Pattern):
        return value.pattern
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise TypeError(f"typed_json cannot write a {type(value).__name__}")  # a new field type: extend the table


@dataclasses.dataclass(frozen=True)
class _Place:
    """Where in the file a value sits, for the error."""

    file: str
    error: type[CiToolError]
    path: str
    parts: tuple[str | int, ...] = ()  # the path's keys and indexes
    text: str | None = None  # the JSON text, when `load` read it: errors then say its line and column too
    partial: bool = False  # keys a class does not declare are passed over

    def at(self, part: str | int) -> _Place:
        step = f"[{part}]" if isinstance(part, int) else (f".{part}" if self.path else part)
        return dataclasses.replace(self, path=self.path + step, parts=(*self.parts, part))

    def wrong(self, expected: str, data: object, hint: str | None = None) -> CiToolError:
        found = shown(data) if isinstance(data, str) else json.dumps(data)[:80]
        line, col = (value_position(self.text, self.parts) if self.text is not None else None) or (None, None)
        where = Where(self.file, line, col, yaml_path=self.path or None)
        return self.error(f"expected {expected}, found {found}", where=where, hint=hint)


@functools.cache
def _hints(kind: type) -> dict[str, Any]:
    return typing.get_type_hints(kind)


def _build(data: object, kind: Any, place: _Place) -> object:
    """The value of `kind` that `data` (parsed JSON) holds."""
    origin, arguments = typing.get_origin(kind), typing.get_args(kind)
    if origin is typing.Union or origin is types.UnionType:
        return _union(data, arguments, place)
    if origin is tuple:
        return _tuple(data, arguments, place)
    if origin in (Mapping, dict) or kind is dict:
        if not isinstance(data, dict):
            raise place.wrong("an object", data)
        value_kind = arguments[1] if arguments else object
        return {key: _build(item, value_kind, place.at(key)) for key, item in data.items()}
    if origin is re.Pattern or kind is re.Pattern:
        try:
            return re.compile(_scalar(data, str, place))
        except re.error as problem:
            raise place.wrong(f"a regular expression ({problem})", data) from None
    if kind is object:
        return data
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        return _dataclass(data, kind, place)
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return _enum(data, kind, place)
    if kind is Path:
        return Path(_scalar(data, str, place))
    if kind in (str, int, float, bool):
        return _scalar(data, kind, place)
    raise TypeError(f"typed_json cannot read a {kind}")  # a new field type: extend the table


def _json_kind(kind: Any) -> type:
    """The JSON value a member of a union is written as (what tells the members apart on the way in)."""
    origin = typing.get_origin(kind)
    if kind is type(None):
        return type(None)
    if (isinstance(kind, type) and dataclasses.is_dataclass(kind)) or origin in (Mapping, dict) or kind is dict:
        return dict
    if origin is tuple:
        return list
    if kind in (Path, str, re.Pattern) or origin is re.Pattern:
        return str
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return _json_kind(type(next(iter(kind)).value))
    if kind in (int, float):
        return float  # JSON has one kind of number
    if kind is bool:
        return bool
    raise TypeError(f"typed_json cannot read a {kind} in a union")  # a new member type: extend the table


def _union(data: object, arguments: tuple[Any, ...], place: _Place) -> object:
    """`X | None`, or members written as different JSON values (`Path | PostgresUrl`: a string or an object)."""
    kinds = [_json_kind(argument) for argument in arguments]
    if len(set(kinds)) != len(kinds):
        raise TypeError(f"typed_json cannot tell the members of {arguments} apart")
    found = float if isinstance(data, int | float) and not isinstance(data, bool) else type(data)
    for argument, json_kind in zip(arguments, kinds, strict=True):
        if json_kind is found:
            return None if data is None else _build(data, argument, place)
    names = {type(None): "null", dict: "an object", list: "an array", str: "a string", float: "a number",
             bool: "true or false"}  # fmt: skip
    raise place.wrong(" or ".join(names[kind] for kind in kinds), data)


def _tuple(data: object, arguments: tuple[Any, ...], place: _Place) -> tuple[object, ...]:
    if not isinstance(data, list):
        raise place.wrong("an array", data)
    if len(arguments) == 2 and arguments[1] is Ellipsis:
        return tuple(_build(item, arguments[0], place.at(index)) for index, item in enumerate(data))
    if len(data) != len(arguments):
        raise place.wrong(f"an array of {len(arguments)}", data)
    pairs = enumerate(zip(data, arguments, strict=True))
    return tuple(_build(item, part, place.at(index)) for index, (item, part) in pairs)


def _enum(data: object, kind: type[enum.Enum], place: _Place) -> enum.Enum:
    values = [member.value for member in kind]
    if data not in values:
        words = [str(value) for value in values]
        hint = did_you_mean(data, words) if isinstance(data, str) else None
        raise place.wrong(f"one of {', '.join(words)}", data, hint)
    return kind(data)


def _dataclass(data: object, kind: type, place: _Place) -> object:
    fields = dataclasses.fields(kind)
    names = [field.name for field in fields]
    if not isinstance(data, dict):
        raise place.wrong(f"an object with {', '.join(names)}", data)
    missing = [field.name for field in fields if field.name not in data and not _has_default(field)]
    if missing:
        raise place.wrong(f"an object with {', '.join(missing)} too ({kind.__name__})", sorted(data))
    unknown = [key for key in data if key not in names]
    if unknown and not place.partial:
        raise place.wrong(f"only the keys of {kind.__name__}", unknown[0], did_you_mean(unknown[0], names))
    hints = _hints(kind)
    return kind(**{name: _build(data[name], hints[name], place.at(name)) for name in names if name in data})


def _has_default(field: dataclasses.Field[object]) -> bool:
    """Whether the class gives `field` a value when the JSON leaves it out."""
    return field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING


def _scalar(data: object, kind: type, place: _Place) -> Any:
    if kind is float and isinstance(data, int) and not isinstance(data, bool):
        return float(data)
    if not isinstance(data, kind) or (kind is int and isinstance(data, bool)):
        raise place.wrong(_SCALARS[kind], data)
    return data
