"""`python -m kvengine plan`: print pool groups, slots, bytes, shares, the largest request and the graphs.

The only place that turns exceptions into exit codes: 1 for our errors, 2 for usage, 130 for Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import traceback
from pathlib import Path

from kvengine.config import KvCacheConfig
from kvengine.errors import ConfigError, KvEngineError
from kvengine.loader import load_preset, load_spec_file, preset_names
from kvengine.plan import make_plan
from kvengine.quota import GIB
from kvengine.report import plan_to_dict, render_plan
from kvengine.spec import ModelSpec, RuntimeLimits


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m kvengine", description="Plan KV-cache pools for a model.")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    plan = verbs.add_parser("plan", help="split a memory budget across pool groups and simulate warmup")
    source = plan.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", type=Path, metavar="SPEC.yaml", help="a model spec file")
    source.add_argument("--preset", metavar="NAME", help="a shipped spec: " + ", ".join(preset_names()))
    plan.add_argument("--budget-gib", type=float, required=True, metavar="G", help="bytes all pools may use")
    plan.add_argument("--avg-seq-len", type=int, metavar="L", help="typical request length (default: unset)")
    plan.add_argument("--pool-ratio", metavar="W,W,...", help="one weight per life cycle, summing to 1")
    plan.add_argument("--tokens-per-block", type=int, metavar="N", help="default: the spec's")
    plan.add_argument("--max-seq-len", type=int, metavar="N", help="override the spec's runtime limit")
    plan.add_argument("--max-batch-size", type=int, metavar="N", help="override the spec's runtime limit")
    plan.add_argument("--max-num-tokens", type=int, metavar="N", help="override the spec's runtime limit")
    plan.add_argument("--grain-bytes", type=int, metavar="N", help="allocation grain (default: GPU rule)")
    plan.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return parser


def run_plan(args: argparse.Namespace) -> str:
    spec = load_spec_file(args.model) if args.model is not None else load_preset(args.preset)
    if not args.budget_gib > 0:
        raise ConfigError(f"--budget-gib must be > 0, found {args.budget_gib!r}.", hint="pass e.g. --budget-gib 8")
    config = KvCacheConfig(
        tokens_per_block=args.tokens_per_block or spec.tokens_per_block,
        avg_seq_len=args.avg_seq_len,
        pool_ratio=_parse_ratio(args.pool_ratio),
        grain_bytes=args.grain_bytes,
    )
    plan = make_plan(spec, config, budget_bytes=int(args.budget_gib * GIB), limits=_limits(spec, args))
    return json.dumps(plan_to_dict(plan), indent=2) if args.json else render_plan(plan)


def _limits(spec: ModelSpec, args: argparse.Namespace) -> RuntimeLimits:
    limits = spec.runtime
    return RuntimeLimits(
        max_seq_len=args.max_seq_len if args.max_seq_len is not None else limits.max_seq_len,
        max_batch_size=args.max_batch_size if args.max_batch_size is not None else limits.max_batch_size,
        max_num_tokens=args.max_num_tokens if args.max_num_tokens is not None else limits.max_num_tokens,
        max_draft_len=limits.max_draft_len,
        num_extra_kv_tokens=limits.num_extra_kv_tokens,
        cuda_graph_batch_sizes=limits.cuda_graph_batch_sizes,
    )


def _parse_ratio(text: str | None) -> tuple[float, ...] | None:
    if text is None:
        return None
    try:
        return tuple(float(part) for part in text.split(","))
    except ValueError:
        raise ConfigError(
            f"--pool-ratio must be comma-separated numbers, found {text!r}.", hint="e.g. --pool-ratio 0.7,0.3"
        ) from None


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code."""
    logging.getLogger("kvengine").setLevel(logging.ERROR)  # skipped sizes are in the output already
    try:
        args = build_parser().parse_args(argv)
        print(run_plan(args))
    except SystemExit as done:  # argparse: --help (0) or a usage error (2)
        return int(done.code or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except KvEngineError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `... | head` closed the pipe: not an error of ours
        sys.stderr.close()
        return 0
    except Exception as bug:  # a bug of ours: keep the terminal clean, keep the evidence
        fd, path = tempfile.mkstemp(prefix="kvengine-crash-", suffix=".log")
        with os.fdopen(fd, "w") as log:
            traceback.print_exc(file=log)
        print(f"error: unexpected {type(bug).__name__}: {bug} (traceback written to {path})", file=sys.stderr)
        return 1
    return 0
