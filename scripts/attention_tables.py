#!/usr/bin/env python3
"""The attention tables of docs/results.md, and their plot, from one run: `host run --workload
attention --json OURS` and `scripts/attention_sdpa.py --json SDPA` on the same sizes.

    python3 scripts/attention_tables.py OURS.json SDPA.json --svg docs/runs/attention-h200.svg

Prints, in Markdown: the sweep (our BF16 kernel as `Attention::forward` picks it, cuDNN, the FlashAttention-2 backend, ours as %
of cuDNN) per head dimension and mask over the sequence lengths; the ablation (each technique
switched off, d = 128); and every other size measured (GQA, ragged lengths). The SVG draws our
kernel and cuDNN against the sequence length, one panel per head dimension and mask.
"""
import argparse
import json
import re

SIZE = re.compile(r"^(\d+)x(\d+)x(\d+)x(\d+)(.*)$")


def parse(size):
    b, s, h, d, rest = SIZE.match(size).groups()
    return int(b), int(s), int(h), int(d), rest


def dispatched(d, seqlen_q, causal, element="bf16"):
    """The kernel `Attention::forward` runs (mirrors `AttentionKernel::for_shape` in
    kernels/src/attention/host.rs, whose unit test pins the rule): at d = 64 the two-consumer
    kernel for causal masks up to 2048 query rows and for at most 128 query rows."""
    name = f"attention_{element}_d{d}"
    if d == 64 and (seqlen_q <= 128 or (causal and seqlen_q <= 2048)):
        name += "_two_consumers"
    return name


def main():
    p = argparse.ArgumentParser()
    p.add_argument("ours")
    p.add_argument("sdpa")
    p.add_argument("--svg")
    args = p.parse_args()
    ours = json.load(open(args.ours))
    sdpa = {r["size"]: r for r in json.load(open(args.sdpa))["rows"]}
    rates = {}  # (size, kernel) -> TFLOP/s
    for problem in ours["problems"]:
        for row in problem["rows"]:
            if row["rate"] is not None:
                rates[(problem["size"], row["name"])] = row["rate"]
    sizes = list(dict.fromkeys(s for s, _ in rates))

    def peer(size, backend):
        r = sdpa.get(size, {}).get(backend, {})
        return r.get("tflops")

    print(f"Run: {ours['date']}, {ours['device']['name']}; `{ours['command']}`\n")
    # The sweep: 16k tokens, hidden 2048 (heads = 2048 / d).
    sweep = {}
    for size in sizes:
        b, s, h, d, rest = parse(size)
        if b * s == 16384 and h * d == 2048 and rest in ("", ":causal"):
            sweep.setdefault((d, rest == ":causal"), []).append((s, size))
    print("| d | mask | | " + " | ".join(str(s) for s, _ in next(iter(sweep.values()))) + " |")
    print("|---|---|---|" + "---|" * len(next(iter(sweep.values()))))
    panels = []
    for (d, causal), cells in sorted(sweep.items()):
        mask = "causal" if causal else "none"
        ours_row = [rates.get((size, dispatched(d, s, causal))) for s, size in cells]
        cudnn = [peer(size, "cudnn") for _, size in cells]
        fa2 = [peer(size, "flash2") for _, size in cells]
        fmt = lambda xs: " | ".join("-" if x is None else f"{x:.0f}" for x in xs)
        pct = [None if (a is None or c is None) else 100 * a / c for a, c in zip(ours_row, cudnn)]
        print(f"| {d} | {mask} | ours | {fmt(ours_row)} |")
        print(f"| | | cuDNN | {fmt(cudnn)} |")
        print(f"| | | FA2 | {fmt(fa2)} |")
        print(f"| | | % of cuDNN | " + " | ".join("-" if x is None else f"{x:.0f}%" for x in pct) + " |")
        panels.append((f"d = {d}, {mask}", [s for s, _ in cells], ours_row, cudnn, fa2))
    # The ablation at d = 128.
    variants = [
        ("attention_bf16_d128", "all (ping-pong, overlap, 2 consumers)"),
        ("attention_bf16_d128_no_pingpong", "no ping-pong"),
        ("attention_bf16_d128_no_overlap", "no intra-warpgroup overlap"),
        ("attention_bf16_d128_cp_async", "cp.async instead of TMA"),
        ("attention_bf16_d128_one_consumer", "one consumer warpgroup"),
    ]
    d128 = [(s, size) for (d, c), cells in sorted(sweep.items()) if d == 128 for s, size in cells]
    print("\n| d = 128 | " + " | ".join(size for _, size in d128) + " |")
    print("|---|" + "---|" * len(d128))
    for name, label in variants:
        print(f"| {label} | " + " | ".join(
            "-" if rates.get((size, name)) is None else f"{rates[(size, name)]:.0f}" for _, size in d128) + " |")
    # d = 64: three consumer warpgroups (192 query rows per tile) against two (128).
    d64 = [(s, size) for (d, c), cells in sorted(sweep.items()) if d == 64 for s, size in cells]
    if d64:
        print("\n| d = 64 | " + " | ".join(size for _, size in d64) + " |")
        print("|---|" + "---|" * len(d64))
        for name, label in (("attention_bf16_d64", "three consumers (192 rows)"),
                            ("attention_bf16_d64_two_consumers", "two consumers (128 rows)")):
            print(f"| {label} | " + " | ".join(
                "-" if rates.get((size, name)) is None else f"{rates[(size, name)]:.0f}" for _, size in d64) + " |")
    # Everything else.
    others = [size for size in sizes if not any(size == sz for cells in sweep.values() for _, sz in cells)]
    if others:
        print("\n| size | ours BF16 | ours FP16 | cuDNN | FA2 | % of cuDNN |")
        print("|---|---|---|---|---|---|")
        for size in others:
            _, sq, _, d, rest = parse(size)
            causal = ":causal" in rest
            a = rates.get((size, dispatched(d, sq, causal)))
            f = rates.get((size, dispatched(d, sq, causal, "f16")))
            c, f2 = peer(size, "cudnn"), peer(size, "flash2")
            cell = lambda x: "-" if x is None else f"{x:.1f}"
            print(f"| {size} | {cell(a)} | {cell(f)} | {cell(c)} | {cell(f2)} | "
                  + ("-" if a is None or c is None else f"{100 * a / c:.0f}%") + " |")
    if args.svg:
        write_svg(args.svg, panels, ours)


def write_svg(path, panels, ours):
    w, h, cols = 320, 220, 3
    rows = (len(panels) + cols - 1) // cols
    top = 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{cols * w}" height="{top + rows * h}" font-family="sans-serif" font-size="11">',
           f'<text x="10" y="20" font-size="14">Attention forward, BF16, 16k tokens, hidden 2048: TFLOP/s ({ours["device"]["name"]}, {ours["date"]})</text>',
           f'<text x="10" y="34" fill="#1f77b4">ours</text><text x="50" y="34" fill="#d62728">cuDNN (SDPA)</text><text x="140" y="34" fill="#7f7f7f">FlashAttention-2 (SDPA)</text>']
    ymax = 800
    for i, (title, seqlens, a, c, f) in enumerate(panels):
        x0, y0 = (i % cols) * w + 45, top + (i // cols) * h + 20
        pw, ph = w - 65, h - 60
        out.append(f'<text x="{x0}" y="{y0 - 5}">{title}</text>')
        out.append(f'<rect x="{x0}" y="{y0}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>')
        for t in range(0, ymax + 1, 200):
            y = y0 + ph - ph * t / ymax
            out.append(f'<text x="{x0 - 5}" y="{y + 4}" text-anchor="end">{t}</text>')
        n = len(seqlens)
        xs = [x0 + pw * (k + 0.5) / n for k in range(n)]
        for x, s in zip(xs, seqlens):
            out.append(f'<text x="{x}" y="{y0 + ph + 14}" text-anchor="middle">{s // 1024 if s >= 1024 else s}{"k" if s >= 1024 else ""}</text>')
        for series, colour in ((a, "#1f77b4"), (c, "#d62728"), (f, "#7f7f7f")):
            pts = [(x, y0 + ph - ph * v / ymax) for x, v in zip(xs, series) if v is not None]
            if pts:
                out.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' % (colour, " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)))
                out.extend(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{colour}"/>' for x, y in pts)
    out.append("</svg>")
    open(path, "w").write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
