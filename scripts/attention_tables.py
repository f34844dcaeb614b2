#!/usr/bin/env python3
"""The attention tables of docs/results.md, and their plot, from one or more rounds of
`host run --workload attention --json OURS` and `scripts/attention_sdpa.py --json SDPA` on the same
sizes, each round ours then SDPA in the same device call (docs/results.md says how they are timed).

    python3 scripts/attention_tables.py OURS1.json SDPA1.json [OURS2.json SDPA2.json ...] \
        [--svg docs/runs/attention-h200.svg]

Prints, in Markdown: the sweep (our BF16 kernel as `Attention::forward` picks it, cuDNN, the
FlashAttention-2 backend, ours as % of cuDNN) per head dimension and mask over the sequence
lengths; the ablation (each technique switched off, d = 128); and every other size measured
(GQA, ragged lengths). With several rounds each cell is the range over them, `min-max`, and
"% of cuDNN" is taken within each round (ours over the cuDNN of the same round) before its
range. The SVG draws the first round's medians of our kernel and cuDNN against the sequence
length, one panel per head dimension and mask.
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


class Round:
    """One `host run` report and the SDPA run taken right after it."""

    def __init__(self, ours_path, sdpa_path):
        self.ours = json.load(open(ours_path))
        self.sdpa = {r["size"]: r for r in json.load(open(sdpa_path))["rows"]}
        self.rates = {}  # (size, kernel) -> TFLOP/s
        for problem in self.ours["problems"]:
            for row in problem["rows"]:
                if row["rate"] is not None and row["passed"]:
                    self.rates[(problem["size"], row["name"])] = row["rate"]

    def peer(self, size, backend):
        return self.sdpa.get(size, {}).get(backend, {}).get("tflops")


def span(values, digits=0):
    """`x` for one value, `min-max` for several (rounded alike), `-` for none."""
    xs = [x for x in values if x is not None]
    if not xs:
        return "-"
    lo, hi = f"{min(xs):.{digits}f}", f"{max(xs):.{digits}f}"
    return lo if lo == hi else f"{lo}-{hi}"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("runs", nargs="+", help="OURS.json SDPA.json, once per round")
    p.add_argument("--svg")
    args = p.parse_args()
    if len(args.runs) % 2:
        p.error("give the runs in pairs: OURS.json SDPA.json for each round")
    rounds = [Round(a, b) for a, b in zip(args.runs[::2], args.runs[1::2])]
    sizes = list(dict.fromkeys(s for r in rounds for s, _ in r.rates))
    rate = lambda size, name: [r.rates.get((size, name)) for r in rounds]
    peer = lambda size, backend: [r.peer(size, backend) for r in rounds]

    def pct(size, name):
        return [None if a is None or c is None else 100 * a / c
                for a, c in zip(rate(size, name), peer(size, "cudnn"))]

    for r in rounds:
        print(f"Run: {r.ours['date']}, {r.ours['device']['name']}; `{r.ours['command']}`")
    print(f"\n{len(rounds)} round(s); each cell the range over them.\n")
    # The sweep: 16k tokens, hidden 2048 (heads = 2048 / d).
    sweep = {}
    for size in sizes:
        b, s, h, d, rest = parse(size)
        if b * s == 16384 and h * d == 2048 and rest in ("", ":causal"):
            sweep.setdefault((d, rest == ":causal"), []).append((s, size))
    panels = []
    if sweep:
        columns = next(iter(sweep.values()))
        print("| d | mask | | " + " | ".join(str(s) for s, _ in columns) + " |")
        print("|---|---|---|" + "---|" * len(columns))
    for (d, causal), cells in sorted(sweep.items()):
        mask = "causal" if causal else "none"
        names = [(size, dispatched(d, s, causal)) for s, size in cells]
        print(f"| {d} | {mask} | ours | " + " | ".join(span(rate(*n)) for n in names) + " |")
        print("| | | cuDNN | " + " | ".join(span(peer(size, "cudnn")) for _, size in cells) + " |")
        print("| | | FA2 | " + " | ".join(span(peer(size, "flash2")) for _, size in cells) + " |")
        print("| | | % of cuDNN | " + " | ".join(span(pct(*n)) + "%" for n in names) + " |")
        first = lambda xs: xs[0]
        panels.append((f"d = {d}, {mask}", [s for s, _ in cells],
                       [first(rate(*n)) for n in names],
                       [first(peer(size, "cudnn")) for _, size in cells],
                       [first(peer(size, "flash2")) for _, size in cells]))
    # The ablation at d = 128.
    variants = [
        ("attention_bf16_d128", "all (ping-pong, overlap, 2 consumers)"),
        ("attention_bf16_d128_no_pingpong", "no ping-pong"),
        ("attention_bf16_d128_no_overlap", "no intra-warpgroup overlap"),
        ("attention_bf16_d128_cp_async", "cp.async instead of TMA"),
        ("attention_bf16_d128_one_consumer", "one consumer warpgroup"),
    ]
    d128 = [(s, size) for (d, c), cells in sorted(sweep.items()) if d == 128 for s, size in cells]
    if d128 and any(v is not None for name, _ in variants[1:] for _, size in d128 for v in rate(size, name)):
        print("\n| d = 128 | " + " | ".join(size for _, size in d128) + " |")
        print("|---|" + "---|" * len(d128))
        for name, label in variants:
            print(f"| {label} | " + " | ".join(span(rate(size, name)) for _, size in d128) + " |")
    # d = 64: three consumer warpgroups (192 query rows per tile) against two (128).
    d64 = [(s, size) for (d, c), cells in sorted(sweep.items()) if d == 64 for s, size in cells]
    if d64:
        print("\n| d = 64 | " + " | ".join(size for _, size in d64) + " |")
        print("|---|" + "---|" * len(d64))
        for name, label in (("attention_bf16_d64", "three consumers (192 rows)"),
                            ("attention_bf16_d64_two_consumers", "two consumers (128 rows)")):
            print(f"| {label} | " + " | ".join(span(rate(size, name)) for _, size in d64) + " |")
    # Everything else.
    others = [size for size in sizes if not any(size == sz for cells in sweep.values() for _, sz in cells)]
    if others:
        print("\n| size | ours BF16 | ours FP16 | cuDNN | FA2 | % of cuDNN |")
        print("|---|---|---|---|---|---|")
        for size in others:
            _, sq, _, d, rest = parse(size)
            causal = ":causal" in rest
            name = dispatched(d, sq, causal)
            print(f"| {size} | {span(rate(size, name), 1)} | "
                  f"{span(rate(size, dispatched(d, sq, causal, 'f16')), 1)} | "
                  f"{span(peer(size, 'cudnn'), 1)} | {span(peer(size, 'flash2'), 1)} | "
                  f"{span(pct(size, name))}% |")
    if args.svg:
        write_svg(args.svg, panels, rounds[0].ours)


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
