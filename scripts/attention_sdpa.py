#!/usr/bin/env python3
"""PyTorch's fused attention (SDPA, cuDNN and FlashAttention-2 backends) on the shapes of the
`attention` workload, for the same GPU right after `host run --workload attention`: the speed
reference beside ours (see docs/results.md).

Sizes use the workload's syntax (`host list`): BxSxHxD, then :kv=N, :hkv=N, :causal. The tensors
are (batch, seqlen, heads, d) BF16 as ours are, handed to SDPA as (batch, heads, seqlen, d) views
(the same memory); a causal mask is aligned to the bottom right (`causal_lower_right`), as ours
is; grouped-query heads go through `enable_gqa`. TFLOP/s use the workload's count
(`AttentionShape::flops`): 4 d B H per (query, key) pair the mask keeps. Timed as `host run` times
ours: `--warmup` untimed launches (3), then `--reps` launches (20), each between two CUDA events
and waited for, and the median of those (the mean of the middle two for an even count).

    python3 scripts/attention_sdpa.py --json sdpa.json 4x4096x16x128 4x4096x16x128:causal
"""
import argparse
import json
import re
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.bias import causal_lower_right

SIZE = re.compile(r"^(\d+)x(\d+)x(\d+)x(\d+)((?::(?:kv=\d+|hkv=\d+|causal))*)$")


def parse(text):
    m = SIZE.match(text)
    if not m:
        sys.exit(f"error: `{text}` is not BxSxHxD[:kv=N][:hkv=N][:causal]")
    b, s, h, d = (int(x) for x in m.groups()[:4])
    size = dict(batch=b, seqlen_q=s, seqlen_kv=s, heads_q=h, heads_kv=h, d=d, causal=False)
    for part in filter(None, m.group(5).split(":")):
        if part == "causal":
            size["causal"] = True
        else:
            key, value = part.split("=")
            size["seqlen_kv" if key == "kv" else "heads_kv"] = int(value)
    return size


def pairs(sq, skv, causal):
    """(query, key) pairs the mask keeps: row i sees keys j <= i + skv - sq (bottom right)."""
    if not causal:
        return sq * skv
    lowest = max(skv - sq + 1, 1)
    return (skv + lowest) * (skv - lowest + 1) // 2


def median(times):
    """The harness's median (harness::experiment::median): the mean of the middle two for an
    even count."""
    times = sorted(times)
    mid = len(times) // 2
    return times[mid] if len(times) % 2 else (times[mid - 1] + times[mid]) / 2


def median_ms(fn, reps, warmup):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("sizes", nargs="+")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--json")
    args = p.parse_args()
    device = torch.cuda.get_device_name()
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}, {device}", flush=True)
    rows = []
    for text in args.sizes:
        s = parse(text)
        b, sq, skv, hq, hkv, d = (s[k] for k in ("batch", "seqlen_q", "seqlen_kv", "heads_q", "heads_kv", "d"))
        q = torch.randn(b, sq, hq, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
        k = torch.randn(b, skv, hkv, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
        v = torch.randn(b, skv, hkv, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
        flops = 4 * b * hq * d * pairs(sq, skv, s["causal"])
        # Equal lengths: the plain causal flag (which every backend takes) is the same mask.
        square_causal = s["causal"] and sq == skv
        mask = causal_lower_right(sq, skv) if s["causal"] and not square_causal else None
        row = dict(size=text, flops=flops)
        for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash2", SDPBackend.FLASH_ATTENTION)):
            try:
                with sdpa_kernel(backend):
                    run = lambda: F.scaled_dot_product_attention(
                        q, k, v, attn_mask=mask, is_causal=square_causal, enable_gqa=hkv != hq
                    )
                    ms = median_ms(run, args.reps, args.warmup)
                row[name] = dict(ms=ms, tflops=flops / ms / 1e9)
            except Exception as e:  # a backend that refuses the shape: say why, go on
                row[name] = dict(error=f"{type(e).__name__}: {str(e).splitlines()[0][:120]}")
        rows.append(row)
        cells = [f"{n} {row[n]['tflops']:.1f}" if "tflops" in row[n] else f"{n} n/a ({row[n]['error'][:60]})" for n in ("cudnn", "flash2")]
        print(f"{text}: " + " | ".join(cells) + " TFLOP/s", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(device=device, torch=torch.__version__, cudnn=torch.backends.cudnn.version(),
                           command=" ".join(sys.argv), timing=dict(warmup=args.warmup, reps=args.reps),
                           rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
