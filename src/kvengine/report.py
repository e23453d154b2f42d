"""Render a Plan as a text table or a JSON-ready dict (no I/O here; the CLI prints)."""

from __future__ import annotations

from typing import Any

from kvengine.plan import Plan
from kvengine.quota import GIB


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    sizing, layout, limits = plan.sizing, plan.sizing.layout, plan.sizing.limits
    return {
        "model": plan.spec.name,
        "manager": plan.spec.manager,
        "max_seq_len": limits.max_seq_len,
        "max_batch_size": limits.max_batch_size,
        "max_num_tokens": limits.max_num_tokens,
        "tokens_per_block": layout.tokens_per_block,
        "avg_seq_len": plan.config.avg_seq_len,
        "pool_ratio": list(plan.config.pool_ratio) if plan.config.pool_ratio else None,
        "budget_bytes": plan.config.max_gpu_total_bytes,
        "quota_bytes": sizing.pools.quota_bytes,
        "grain_bytes": sizing.pools.grain_bytes,
        "ratio_source": sizing.pools.ratio_source,
        "life_cycles": [
            {"id": i, "window": c.window_tokens, "sink_blocks": c.sink_blocks, "pool_group": layout.group_of(i)}
            for i, c in enumerate(layout.life_cycles)
        ],
        "pool_groups": [
            {
                "id": g.group_id,
                "window": layout.group_window(g.group_id),
                "life_cycles": list(layout.groups[g.group_id].life_cycle_ids),
                "slot_bytes": layout.slot_bytes(g.group_id),
                "num_slots": g.num_slots,
                "floor_slots": g.floor_slots,
                "bytes": g.num_bytes,
                "share": round(g.share, 6),
            }
            for g in sizing.pools.groups
        ],
        "largest_request_tokens": plan.largest_request_tokens,
        "capture_sizes_requested": list(plan.warmup.requested_sizes),
        "capture_sizes_ok": list(plan.warmup.captured_sizes),
        "capture_sizes_skipped": list(plan.warmup.skipped_sizes),
        "capture_coverage": round(plan.warmup.coverage, 6),
        "padding_dummy_ok": plan.padding_dummy_ok,
    }


def render_plan(plan: Plan) -> str:
    data = plan_to_dict(plan)
    lines = [
        f"model {data['model']} (manager {data['manager']}): max_seq_len {data['max_seq_len']}, "
        f"max_batch_size {data['max_batch_size']}, max_num_tokens {data['max_num_tokens']}, "
        f"{data['tokens_per_block']} tokens per block",
        f"budget {data['budget_bytes'] / GIB:.2f} GiB, quota {data['quota_bytes'] / GIB:.2f} GiB, "
        f"grain {data['grain_bytes']} bytes, split from {data['ratio_source']}",
        "",
        f"{'group':>5}  {'window':>8}  {'slots':>9}  {'floor':>7}  {'slot bytes':>11}  {'GiB':>8}  {'share':>7}",
    ]
    for group in data["pool_groups"]:
        window = "full" if group["window"] is None else str(group["window"])
        lines.append(
            f"{group['id']:>5}  {window:>8}  {group['num_slots']:>9}  {group['floor_slots']:>7}  "
            f"{group['slot_bytes']:>11}  {group['bytes'] / GIB:>8.3f}  {group['share'] * 100:>6.1f}%"
        )
    skipped = data["capture_sizes_skipped"]
    lines += [
        "",
        f"largest request that fits: {data['largest_request_tokens']} tokens",
        f"CUDA-graph batch sizes warmed up: {_sizes(data['capture_sizes_ok'])}",
        f"CUDA-graph batch sizes skipped:   {_sizes(skipped)}"
        + (" (batches of these sizes run eager)" if skipped else ""),
        f"capture coverage {data['capture_coverage'] * 100:.0f}%, padding dummy "
        + ("ok" if data["padding_dummy_ok"] else "missing (padded batches run eager)"),
    ]
    return "\n".join(lines)


def _sizes(sizes: list[int]) -> str:
    return ", ".join(str(s) for s in sizes) if sizes else "none"
