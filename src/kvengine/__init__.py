"""kvengine: the bundled paged KV-cache engine that ci-tool's stages run.

Pure bookkeeping (no torch): spec, loader (+ presets/), config, lifecycle (life cycles, pool groups),
pool (free lists), request (KvCache.resize), storage (invariants), slots, quota, sizing (budget split),
manager (generic / DeepSeek-V4 constraints), dummies (one accounting function), warmup, padding, plan,
report, cli (`python -m kvengine plan`).
torch: memory (pool tensors), attention (paged + dense reference), model (tiny decoder), graphs (CUDA
graph capture/replay), engine (DecodeEngine ties it together and reports metrics).
"""
