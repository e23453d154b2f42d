"""The stage-name grammar: the one place that knows what the tokens of a stage name mean.

    test stage  := GPU ["-" N "_GPUs"] ["-" M "_Nodes"] "-" BACKEND ("-" TAG)* ["-" "Post-Merge"] "-" K
                   ["-cbts"] ["-attempt-" A]
    family      := the same without "-" K      (a catalog family expands to family-1 .. family-<splits>)
    non-test    := GPU "-Build_Docs" | GPU "-AgentFlow-UnitTest" | GPU "-PackageSanityCheck-" KEY
                 | "Build-Docker-Images"

    GPU      [A-Z][A-Za-z0-9_]*   e.g. A10, H100_PCIe, DGX_B200, GB200, RTXPro6000D, CPU (no GPUs)
    BACKEND  a key of BACKENDS, e.g. PyTorch -> backend "pytorch"
    TAG      [+A-Za-z0-9_]+ (not only digits); MEANINGFUL_TAGS carry semantics, the rest is descriptive
             (Disagg, x86, topology strings such as CTX1-NODE1-GPU4-GEN1-NODE2-GPU8, ...)
    K        the 1-based shard index
    -cbts    the stage runs a list narrowed by change-based selection (reports carry it, so its results
             never stand in for the full stage's)
    A        the attempt (2, 3, ...) of a stage run again after an infrastructure failure

Topology tokens (TOPOLOGY_TOKEN: CTX<n>, GEN<n>, NODE<n>/Node<n>, GPU<n>) describe a disaggregated
layout, `...-CTX1-NODE1-GPU4-GEN1-NODE1-GPU8-...`: they stay in `tags`, in name order and repeated as
written, `topology` shows them joined, and no selection reads them (they are not `selection_tags`).

Examples: `DGX_H100-4_GPUs-PyTorch-DeepSeek-1`, `DGX_B200-8_GPUs-PyTorch-PerfSanity-Post-Merge-3`,
`GB200-8_GPUs-2_Nodes-PyTorch-Disagg-PerfSanity-FUNCTIONAL-ONLY-CTX1-NODE1-GPU4-GEN1-NODE2-GPU8-1`.

Decisions:
- The mode comes from exact tags: `Perf` is perf mode, `PerfSanity` is perf-sanity (not perf mode),
  `Perf-Sanity` is rejected as ambiguous. A tag that differs from a meaningful word only in case, `_` or
  `-` (`perf`, `Deepseek`, `post-merge`) is an error, never a silent descriptive tag.
- A test stage must carry a backend token right after the GPU/count tokens: a typo there would otherwise
  select every backend's tests.
- Every other tag appears once; only topology tokens repeat (a context and a generation server may
  both sit on one node).
- The old bracket spelling `A10-TensorRT-[Post-Merge]-1` parses as a post-merge stage;
  `canonical_name` gives today's spelling.
- Every name must match NAME_CHARSET (TensorRT-LLM's rule, `[-+\\w\\[\\]]+`, ASCII).
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, replace

from ci_tool.errors import StageError, Where, did_you_mean, shown
from ci_tool.stages.modes import ModePolicy, TestMode, mode_policy

NAME_CHARSET = re.compile(r"[-+\w\[\]]+", re.ASCII)

# Backend token -> the `backend` value of the test-db query.
BACKENDS: dict[str, str] = {
    "PyTorch": "pytorch",
    "CPP": "cpp",
    "Triton": "triton",
    "FMHA": "fmha",
    "TensorRT": "tensorrt",
    "AutoDeploy": "autodeploy",
    "Generic": "generic",
    "Verl": "verl",
}
# The backends `--test-backend` counts (as TensorRT-LLM's 2026 pipeline counts them): a stage with another
# backend token counts as having no backend, so it stays whatever is asked.
SELECTABLE_BACKENDS: tuple[str, ...] = ("pytorch", "cpp", "triton", "fmha")
# Backends the query does not send: TensorRT-LLM's 2026 pipeline maps no `-AutoDeploy-` substring, so
# those stages render every backend's blocks (their test-db blocks carry no backend term).
UNQUERIED_BACKENDS: frozenset[str] = frozenset({"autodeploy"})

CPU_GPU_TOKEN = "CPU"
POST_MERGE = "Post-Merge"
LEGACY_POST_MERGE = "[Post-Merge]"
FUNCTIONAL_ONLY = "FUNCTIONAL-ONLY"
MODE_TAGS: dict[str, TestMode] = {"Perf": TestMode.PERF, "PerfSanity": TestMode.PERF_SANITY}
AUTO_TRIGGER_TAGS: dict[str, str] = {"DeepSeek": "deepseek", "GptOss": "gpt_oss", "Others": "others"}
RAY_TAG = "Ray"  # orchestrator ray (else mpi)
ON_DEMAND_TAG = "OnDemand"  # never selected automatically, only by name
MEANINGFUL_TAGS: tuple[str, ...] = (*MODE_TAGS, FUNCTIONAL_ONLY, *AUTO_TRIGGER_TAGS, RAY_TAG, ON_DEMAND_TAG)

# Words spelled with a dash, read as one token.
_COMPOUNDS: tuple[tuple[str, str], ...] = (("Post", "Merge"), ("FUNCTIONAL", "ONLY"), ("[Post", "Merge]"))

CBTS_SUFFIX = "-cbts"
ATTEMPT_SUFFIX = "-attempt-"
# The suffixes after a test stage's shard index: `-1-cbts`, `-1-attempt-2`, `-1-cbts-attempt-2`.
_SUFFIXES = re.compile(r"(?P<cbts>-cbts)?(?:-attempt-(?P<attempt>\d+))?$")
_GPU = re.compile(r"[A-Z][A-Za-z0-9_]*")
_GPUS = re.compile(r"(\d+)_GPUs")
_NODES = re.compile(r"(\d+)_Nodes")
_MAX_DIGITS = 6  # of a shard index or count: int() of thousands of digits fails, and no pipeline is that big
_TAG = re.compile(r"[+\w]+", re.ASCII)
TOPOLOGY_TOKEN = re.compile(r"(?:CTX|GEN|NODE|Node|GPU)\d{1,6}")


class StageKind(enum.Enum):
    """Test stages render a test-db list and run it; the others are fixed jobs."""

    TEST = "test"
    BUILD_DOCS = "build_docs"
    AGENT_FLOW = "agent_flow"
    PACKAGE_SANITY = "package_sanity"
    DOCKER_IMAGES = "docker_images"


@dataclass(frozen=True)
class NonTestForm:
    kind: StageKind
    keyword: str  # the token that marks the form
    pattern: re.Pattern[str]
    example: str


_GPU_GROUP = r"(?P<gpu>[A-Z][A-Za-z0-9_]*)"
NON_TEST_FORMS: tuple[NonTestForm, ...] = (
    NonTestForm(StageKind.DOCKER_IMAGES, "Docker", re.compile(r"Build-Docker-Images"), "Build-Docker-Images"),
    NonTestForm(StageKind.BUILD_DOCS, "Build_Docs", re.compile(_GPU_GROUP + r"-Build_Docs"), "CPU-Build_Docs"),
    NonTestForm(
        StageKind.AGENT_FLOW, "AgentFlow", re.compile(_GPU_GROUP + r"-AgentFlow-UnitTest"), "CPU-AgentFlow-UnitTest"
    ),
    NonTestForm(
        StageKind.PACKAGE_SANITY,
        "PackageSanityCheck",
        re.compile(_GPU_GROUP + r"-PackageSanityCheck-(?P<key>[+\w]+(?:-[+\w]+)*)", re.ASCII),
        "A10-PackageSanityCheck-PY310-UB2204",
    ),
)


@dataclass(frozen=True)
class StageName:
    """A parsed stage (or family) name. `shard` is None for families and non-test stages."""

    name: str
    kind: StageKind
    gpu: str | None  # the GPU token as written; None only for Build-Docker-Images
    gpu_count: int  # N of N_GPUs; 1 when absent; 0 on CPU
    node_count: int
    backend: str | None  # lower case, e.g. "pytorch"; None for non-test stages
    tags: tuple[str, ...]  # in name order, without the backend, Post-Merge and the shard
    post_merge: bool
    shard: int | None
    mode: TestMode
    functional_only: bool
    cbts: bool = False  # `-cbts`: narrowed by change-based selection
    attempt: int | None = None  # `-attempt-A`

    @property
    def is_test(self) -> bool:
        return self.kind is StageKind.TEST

    @property
    def is_cpu(self) -> bool:
        """CPU stages (and Build-Docker-Images) render with fixed host facts instead of sysinfo."""
        return self.gpu is None or self.gpu == CPU_GPU_TOKEN

    @property
    def gpu_type(self) -> str:
        """The machine a stage runs on, as its name says: the GPU token with the GPU and node counts it takes
        (`DGX_H100-4_GPUs`, `GB200-8_GPUs-2_Nodes`; `A10` for one), CPU for a CPU stage. Touch records are
        kept per GPU type: a test may take other code paths on another GPU, or on more of them."""
        if self.is_cpu:
            return CPU_GPU_TOKEN
        counts = (f"-{self.gpu_count}_GPUs" if self.gpu_count > 1 else "") + (
            f"-{self.node_count}_Nodes" if self.node_count > 1 else ""
        )
        return f"{self.gpu}{counts}"

    @property
    def multi_gpu(self) -> bool:
        """More than one GPU (or node): held back from pre-merge unless asked for."""
        return self.gpu_count > 1 or self.node_count > 1

    @property
    def topology(self) -> str | None:
        """The topology tokens joined (`CTX1-NODE1-GPU4-GEN1-NODE2-GPU8`), or None: descriptive only."""
        tokens = [tag for tag in self.tags if TOPOLOGY_TOKEN.fullmatch(tag)]
        return "-".join(tokens) if tokens else None

    @property
    def selection_tags(self) -> tuple[str, ...]:
        """The tags a selection may read (tag triggers): every tag but the topology tokens."""
        return tuple(tag for tag in self.tags if not TOPOLOGY_TOKEN.fullmatch(tag))

    @property
    def orchestrator(self) -> str:
        return "ray" if RAY_TAG in self.tags else "mpi"

    @property
    def auto_trigger(self) -> str:
        return next((AUTO_TRIGGER_TAGS[t] for t in self.tags if t in AUTO_TRIGGER_TAGS), "others")

    @property
    def on_demand(self) -> bool:
        return ON_DEMAND_TAG in self.tags

    @property
    def policy(self) -> ModePolicy:
        return mode_policy(self.mode, post_merge=self.post_merge, functional_only=self.functional_only)

    @property
    def family(self) -> str:
        """The name without the shard index and suffixes (the catalog's family name)."""
        return self.name if self.shard is None else self.name[: self._suffix_start].rsplit("-", 1)[0]

    @property
    def _suffix_start(self) -> int:
        suffix = (CBTS_SUFFIX if self.cbts else "") + (f"{ATTEMPT_SUFFIX}{self.attempt}" if self.attempt else "")
        return len(self.name) - len(suffix)

    def with_cbts(self) -> StageName:
        """The stage narrowed by change-based selection: `A10-PyTorch-1` -> `A10-PyTorch-1-cbts`."""
        if self.shard is None or self.cbts or self.attempt is not None:
            raise StageError(f"expected a test stage without suffixes to narrow, found {self.name!r}")
        return replace(self, name=self.name + CBTS_SUFFIX, cbts=True)

    def with_attempt(self, attempt: int) -> StageName:
        """The stage run again after the infrastructure lost its earlier attempts: `A10-PyTorch-1` ->
        `A10-PyTorch-1-attempt-2` (attempt 1 is the stage itself)."""
        if self.shard is None or self.attempt is not None or attempt < 2:
            raise StageError(f"expected a test stage without an attempt and an attempt of 2, 3, ..., found "
                             f"{self.name!r} and {attempt}")  # fmt: skip
        return replace(self, name=f"{self.name}{ATTEMPT_SUFFIX}{attempt}", attempt=attempt)

    @property
    def first_attempt(self) -> str:
        """The name without `-attempt-A`: the stage whose attempt this is (`-cbts` stays)."""
        return self.name if self.attempt is None else self.name[: -len(f"{ATTEMPT_SUFFIX}{self.attempt}")]

    @property
    def canonical_name(self) -> str:
        """The name in today's spelling (the legacy `[Post-Merge]` becomes `Post-Merge`)."""
        return self.name.replace(LEGACY_POST_MERGE, POST_MERGE)

    def with_shard(self, shard: int) -> StageName:
        """The stage `family-<shard>` of a family name."""
        if not self.is_test or self.shard is not None:
            raise StageError(f"expected a test family name to add a shard index to, found {self.name!r}")
        if shard < 1:
            raise StageError(f"expected a shard index of at least 1 for family {self.name!r}, found {shard}")
        return replace(self, name=f"{self.name}-{shard}", shard=shard)

    def to_json(self) -> dict[str, object]:
        """The `ci-tool stage parse --json` object: exactly these keys, in this order."""
        return {
            "name": self.name,
            "gpu": self.gpu,
            "gpu_count": self.gpu_count,
            "node_count": self.node_count,
            "backend": self.backend,
            "tags": list(self.tags),
            "post_merge": self.post_merge,
            "shard": self.shard,
            "mode": self.mode.value,
            "functional_only": self.functional_only,
            "cbts": self.cbts,
            "attempt": self.attempt,
        }


def parse_stage_name(name: str, *, where: Where | None = None) -> StageName:
    """Parse a stage name (a test stage ends in its shard index; non-test stages have none)."""
    return _parse(name, where, with_shard=True)


def parse_family_name(name: str, *, where: Where | None = None) -> StageName:
    """Parse a catalog family name: a test stage name without the trailing shard index."""
    return _parse(name, where, with_shard=False)


@dataclass(frozen=True)
class _Token:
    text: str
    col: int  # 1-based column in the name


def _error(name: str, col: int, expected: str, found: str, where: Where | None, hint: str | None = None) -> StageError:
    message = f"stage name {name!r} at column {col}: expected {expected}, found {found}"
    return StageError(message, where=where, hint=hint)


def _parse(name: str, where: Where | None, *, with_shard: bool) -> StageName:
    _check_charset(name, where)
    for form in NON_TEST_FORMS:
        match = form.pattern.fullmatch(name)
        if match:
            return _non_test(name, form, match)
    suffixes = _SUFFIXES.search(name) if with_shard else None
    if suffixes is not None and suffixes.group(0):
        return _with_suffixes(name, suffixes, where)
    tokens = _tokenize(name, where)
    gpu = _gpu_token(name, tokens[0], where)
    shard, rest = _shard(name, tokens, with_shard, where)
    gpu_count, node_count, rest = _counts(name, gpu, rest, where)
    if not rest:
        last = tokens[-1] if shard is None else tokens[-2]
        found = f"the end of the name after {last.text!r}"
        hint = "put the backend after the GPU and counts, e.g. 'A10-PyTorch-1'"
        raise _error(name, len(name) + 1, _backend_expected(), found, where, hint)
    backend = _backend(name, rest[0], where)
    post_merge, tags = _tags(name, rest[1:], where)
    modes = [MODE_TAGS[t] for t in tags if t in MODE_TAGS]
    return StageName(
        name=name,
        kind=StageKind.TEST,
        gpu=gpu,
        gpu_count=gpu_count,
        node_count=node_count,
        backend=backend,
        tags=tags,
        post_merge=post_merge,
        shard=shard,
        mode=modes[0] if modes else TestMode.FUNCTIONAL,
        functional_only=FUNCTIONAL_ONLY in tags,
    )


def _with_suffixes(name: str, suffixes: re.Match[str], where: Where | None) -> StageName:
    """A test stage name ending in `-cbts` and/or `-attempt-A`: the stage before them, marked."""
    stage = name[: suffixes.start()]
    if not stage.rpartition("-")[2].isdigit():
        hint = f"the suffixes follow the shard index, e.g. {'A10-PyTorch-1' + suffixes.group(0)!r}"
        found = repr(stage.rpartition("-")[2])
        raise _error(name, suffixes.start() + 1, "the shard index -<K> before the suffix", found, where, hint)
    attempt = suffixes.group("attempt")
    if attempt is not None and (len(attempt) > _MAX_DIGITS or attempt != str(int(attempt)) or int(attempt) < 2):
        col = suffixes.start("attempt") + 1
        raise _error(name, col, "an attempt of 2, 3, ... without leading zeros", shown(attempt), where)
    parsed = _parse(stage, where, with_shard=True)
    cbts = suffixes.group("cbts") is not None
    return replace(parsed, name=name, cbts=cbts, attempt=int(attempt) if attempt else None)


def _check_charset(name: str, where: Where | None) -> None:
    if not name:
        raise StageError("expected a stage name, found ''", where=where, hint="stage names look like 'A10-PyTorch-1'")
    match = NAME_CHARSET.match(name)
    end = match.end() if match else 0
    if end < len(name):
        raise _error(
            name,
            end + 1,
            "only letters, digits, '_', '-', '+', '[' and ']'",
            repr(name[end]),
            where,
            "remove markdown escapes and spaces from stage names",
        )


def _non_test(name: str, form: NonTestForm, match: re.Match[str]) -> StageName:
    groups = match.groupdict()
    gpu = groups.get("gpu")
    key = groups.get("key")
    return StageName(
        name=name,
        kind=form.kind,
        gpu=gpu,
        gpu_count=0 if gpu in (None, CPU_GPU_TOKEN) else 1,
        node_count=1,
        backend=None,
        tags=tuple(key.split("-")) if key else (),
        post_merge=False,
        shard=None,
        mode=TestMode.FUNCTIONAL,
        functional_only=False,
    )


def _tokenize(name: str, where: Where | None) -> list[_Token]:
    """Split on '-', keeping the dashed words of _COMPOUNDS whole (matched case-insensitively)."""
    raw: list[_Token] = []
    col = 1
    for text in name.split("-"):
        if not text:
            hint = "remove the extra '-'"
            raise _error(name, col, "a token between dashes", "an empty token", where, hint)
        raw.append(_Token(text, col))
        col += len(text) + 1
    tokens: list[_Token] = []
    index = 0
    while index < len(raw):
        token = raw[index]
        if index + 1 < len(raw) and _is_compound(token.text, raw[index + 1].text):
            token = _Token(f"{token.text}-{raw[index + 1].text}", token.col)
            index += 1
        tokens.append(token)
        index += 1
    return tokens


def _is_compound(first: str, second: str) -> bool:
    return any(first.lower() == a.lower() and second.lower() == b.lower() for a, b in _COMPOUNDS)


def _gpu_token(name: str, token: _Token, where: Where | None) -> str:
    expected = "a GPU token such as 'A10', 'DGX_H100' or 'CPU' first"
    hint: str | None
    if token.text in BACKENDS or _GPUS.fullmatch(token.text):
        hint = "stage names start with the GPU, e.g. 'A10-PyTorch-1'"
        raise _error(name, token.col, expected, repr(token.text), where, hint)
    if not _GPU.fullmatch(token.text):
        hint = None
        if token.text[:1].isalpha():
            hint = f"GPU tokens start with a capital letter, e.g. {token.text.upper()!r}"
        raise _error(name, token.col, expected, repr(token.text), where, hint)
    return token.text


def _shard(name: str, tokens: list[_Token], with_shard: bool, where: Where | None) -> tuple[int | None, list[_Token]]:
    last = tokens[-1]
    rest = tokens[1:]
    if not with_shard:
        if len(tokens) > 1 and last.text.isdigit():
            hint = f"write the family as {name.rsplit('-', 1)[0]!r}; its stages get -1, -2, ..."
            raise _error(name, last.col, "a family name without a shard index", repr(last.text), where, hint)
        return None, rest
    if len(tokens) == 1 or not last.text.isdigit():
        hint = _non_test_hint(tokens) or (
            f"stage names end in their shard index, e.g. {name + '-1'!r}"
            if len(tokens) > 1
            else "stage names look like 'A10-PyTorch-1'"
        )
        raise _error(name, last.col, "the shard index -<K> at the end", repr(last.text), where, hint)
    if _number(name, last, last.text, "a shard index", where) < 1 or last.text != str(int(last.text)):
        raise _error(name, last.col, "a shard index 1, 2, ... without leading zeros", repr(last.text), where)
    return int(last.text), rest[:-1]


def _counts(name: str, gpu: str, rest: list[_Token], where: Where | None) -> tuple[int, int, list[_Token]]:
    gpu_count = 0 if gpu == CPU_GPU_TOKEN else 1
    node_count = 1
    if rest and (match := _GPUS.fullmatch(rest[0].text)):
        if gpu == CPU_GPU_TOKEN:
            raise _error(name, rest[0].col, "no GPU count on a CPU stage", repr(rest[0].text), where)
        gpu_count = _number(name, rest[0], match.group(1), "a GPU count", where)
        if gpu_count < 1:
            raise _error(name, rest[0].col, "a GPU count of at least 1", repr(rest[0].text), where)
        rest = rest[1:]
    if rest and (match := _NODES.fullmatch(rest[0].text)):
        node_count = _number(name, rest[0], match.group(1), "a node count", where)
        if node_count < 1:
            raise _error(name, rest[0].col, "a node count of at least 1", repr(rest[0].text), where)
        rest = rest[1:]
    return gpu_count, node_count, rest


def _number(name: str, token: _Token, digits: str, what: str, where: Where | None) -> int:
    """The index or count a token's `digits` say; more than _MAX_DIGITS of them is an error."""
    if len(digits) > _MAX_DIGITS:
        raise _error(name, token.col, f"{what} of at most {_MAX_DIGITS} digits", shown(token.text), where)
    return int(digits)


def _backend_expected() -> str:
    return f"a backend token ({', '.join(BACKENDS)})"


def _backend(name: str, token: _Token, where: Where | None) -> str:
    if token.text in BACKENDS:
        return BACKENDS[token.text]
    hint = (
        _non_test_hint([token])
        or _misplaced_hint(token.text)
        or _near_miss_hint(token.text)
        or did_you_mean(token.text, BACKENDS)
    )
    raise _error(name, token.col, _backend_expected(), repr(token.text), where, hint)


def _non_test_hint(tokens: list[_Token]) -> str | None:
    for form in NON_TEST_FORMS:
        if any(token.text == form.keyword for token in tokens):
            return f"{form.keyword} stages are written like {form.example!r}"
    return None


def _misplaced_hint(text: str) -> str | None:
    if re.fullmatch(r"\d+_gpus", text, re.IGNORECASE):
        return f"the GPU count comes right after the GPU token and is spelled {text.split('_')[0]}_GPUs"
    if re.fullmatch(r"\d+_nodes", text, re.IGNORECASE):
        return f"the node count comes right after the GPU count and is spelled {text.split('_')[0]}_Nodes"
    return None


def _normalized(text: str) -> str:
    return re.sub(r"[-_\[\]]", "", text).lower()


def _near_miss_hint(text: str) -> str | None:
    """A hint when `text` is a meaningful word in the wrong case or with extra '_'/'-'."""
    for word in (*BACKENDS, *MEANINGFUL_TAGS, POST_MERGE):
        if _normalized(text) == _normalized(word) and text != word:
            return f"did you mean {word!r}? tokens are case-sensitive"
    return None


def _tags(name: str, tokens: list[_Token], where: Where | None) -> tuple[bool, tuple[str, ...]]:
    post_merge = bool(tokens) and tokens[-1].text in (POST_MERGE, LEGACY_POST_MERGE)
    if post_merge:
        tokens = tokens[:-1]
    tags: list[str] = []
    for index, token in enumerate(tokens):
        following = tokens[index + 1].text if index + 1 < len(tokens) else None
        _check_tag(name, token, following, where)
        if token.text in tags and not TOPOLOGY_TOKEN.fullmatch(token.text):
            raise _error(name, token.col, "each tag once", f"{token.text!r} twice", where)
        tags.append(token.text)
    _check_conflicts(name, tokens, where)
    return post_merge, tuple(tags)


def _check_tag(name: str, token: _Token, following: str | None, where: Where | None) -> None:
    text = token.text
    hint: str | None
    if text in (POST_MERGE, LEGACY_POST_MERGE):
        hint = "Post-Merge comes last, right before the shard index"
        raise _error(name, token.col, "a tag before Post-Merge", repr(text), where, hint)
    if text == "Perf" and following == "Sanity":
        hint = "write 'PerfSanity' for a perf-sanity stage, or 'Perf' alone for perf mode"
        raise _error(name, token.col, "one mode tag", "'Perf-Sanity'", where, hint)
    if text in BACKENDS:
        raise _error(name, token.col, "one backend token", f"a second one, {text!r}", where)
    hint = _misplaced_hint(text) or _near_miss_hint(text)
    if hint:
        raise _error(name, token.col, "a tag", repr(text), where, hint)
    if text != FUNCTIONAL_ONLY and not _TAG.fullmatch(text):
        hint = "brackets appear only in the legacy spelling [Post-Merge]"
        raise _error(name, token.col, "a tag of letters, digits, '_' and '+'", repr(text), where, hint)
    if text.isdigit():
        hint = "only the last token is the shard index"
        raise _error(name, token.col, "a tag", f"the number {text!r}", where, hint)


def _check_conflicts(name: str, tokens: list[_Token], where: Where | None) -> None:
    for group, what in ((MODE_TAGS, "mode tag"), (AUTO_TRIGGER_TAGS, "auto-trigger tag")):
        found = [t for t in tokens if t.text in group]
        if len(found) > 1:
            names = " and ".join(repr(t.text) for t in found)
            raise _error(name, found[1].col, f"at most one {what} ({', '.join(group)})", names, where)
