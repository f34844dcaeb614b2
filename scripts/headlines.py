#!/usr/bin/env python3
"""The README's headline figures, as ranges over the rounds `scripts/headlines.sh` stored.

    python3 scripts/headlines.py docs/runs/headlines-2026-12-05

Reads, per round R, study-R.json, study-1m-R.json, twin-R.txt, gemm-R.json, bf16-gemm-R.json,
gemm16-R.json, attention-R.json with sdpa-R.json, stream-R.json, dsmem-latency-R.json and
dsmem-bandwidth-R.json, and prints each headline with the range over the rounds (each round's
figure taken against the reference measured in that round), then the files it read. Every
ratio is of medians: "% of X" is X's median time over ours.
"""
import glob
import json
import os
import re
import sys

BF16_CUBLAS = ("cublas_gemm_ex_bf16", "cublaslt_matmul_bf16")


def load(path):
    with open(path) as f:
        return json.load(f)


def rows(report, size):
    for p in report["problems"]:
        if p["size"] == size:
            return {r["name"]: r for r in p["rows"] if r["median_ms"] is not None and r["passed"]}
    raise KeyError(f"{size} not in {report['command']}")


def ms(report, size, name):
    return rows(report, size)[name]["median_ms"]


def fastest(report, size, names):
    have = rows(report, size)
    return min(have[n]["median_ms"] for n in names if n in have)


def span(xs, fmt="{:.1f}", unit=""):
    if not xs:
        return "n/a"
    lo, hi = fmt.format(min(xs)), fmt.format(max(xs))
    return (lo if lo == hi else f"{lo}-{hi}") + unit


def pct(xs):
    return span([100 * x for x in xs], unit="%")


def ratio(xs):
    return span(xs, "{:.2f}", "x")


def twin(path):
    """The twin's JSON line: kernel name -> median ms."""
    for line in open(path):
        if line.startswith("{"):
            return {r["name"]: r["median_ms"] for r in json.loads(line)["results"] if r["check"] == "ok"}
    raise ValueError(f"{path}: no JSON line")


def pairs_flops(size):
    b, s, h, d, rest = re.match(r"(\d+)x(\d+)x(\d+)x(\d+)(.*)", size).groups()
    return int(b), int(s), int(h), int(d), ":causal" in rest


def dispatched(d, seqlen, causal):
    name = f"attention_bf16_d{d}"
    if d == 64 and (seqlen <= 128 or (causal and seqlen <= 2048)):
        name += "_two_consumers"
    return name


def main():
    folder = sys.argv[1]
    every = sorted({int(m.group(1)) for f in glob.glob(os.path.join(folder, "*-*.json"))
                    if (m := re.search(r"-(\d+)\.json$", f))})
    if not every:
        sys.exit(f"{folder}: no WORKLOAD-R.json")
    at = lambda name, r: os.path.join(folder, f"{name}-{r}.json")
    out = []

    def rounds_with(*names):
        """The rounds whose files for every one of `names` were stored (a device call that ran
        out of time leaves later ones out); each headline says how many it spans."""
        return [r for r in every if all(os.path.exists(at(n, r)) for n in names)]

    def emit(rounds, line):
        out.append(line + f" [rounds {', '.join(map(str, rounds)) or 'none'}]")

    # The study.
    rounds = rounds_with("study", "study-1m")
    tp, bp, tw, tensor = [], [], [], []
    for r in rounds:
        study = load(at("study", r))
        have = rows(study, "K = 65536")
        for n in (2, 3, 4):
            tp.append(have[f"raw_async_group_{n}"]["median_ms"] / have[f"thread_pipeline_{n}"]["median_ms"])
            bp.append(have[f"raw_mbarrier_{n}"]["median_ms"] / have[f"block_pipeline_{n}"]["median_ms"])
        twin_path = os.path.join(folder, f"twin-{r}.txt")
        if os.path.exists(twin_path):
            for name, t in twin(twin_path).items():
                if name in have:
                    tw.append(t / have[name]["median_ms"])
        big = load(at("study-1m", r))
        base = ms(big, "K = 1048576", "sync_baseline")
        tensor.append(max(base / ms(big, "K = 1048576", f"tensor_{n}") for n in (2, 3, 4)))
    emit(rounds, f"study: ThreadPipeline {ratio(tp)} and BlockPipeline {ratio(bp)} of their raw-PTX "
               f"counterparts (2-4 stages, K = 65536); nvcc twin's time over ours {ratio(tw) if tw else 'n/a'} "
               f"over every kernel; the tensor-copy style {ratio(tensor)} the synchronous baseline at K = 1048576")

    # The FP32 GEMM.
    rounds = rounds_with("gemm",)
    g = {s: [] for s in ("4096x4096x4096", "8192x8192x8192")}
    split = {s: [] for s in ("1024x1024x1024", "1000x1000x1000", "8192x64x8192", "64x8192x8192")}
    for r in rounds:
        gemm = load(at("gemm", r))
        for s in g:
            g[s].append(ms(gemm, s, "cublas_sgemm") / ms(gemm, s, "gemm32"))
        for s in split:
            split[s].append(ms(gemm, s, "cublas_sgemm") / ms(gemm, s, "gemm32"))
    emit(rounds, "FP32 Gemm32 (% of cuBLAS SGEMM): " + "; ".join(f"{s} {pct(v)}" for s, v in {**g, **split}.items()))
    # The K-split kernels by name, where the README quotes them.
    named = {("gemm_split_k_2x2", "1024x1024x1024"): [], ("gemm_split_k_1x8_64x64", "8192x64x8192"): []}
    for r in rounds:
        gemm = load(at("gemm", r))
        for (kernel, s), v in named.items():
            v.append(ms(gemm, s, "cublas_sgemm") / ms(gemm, s, kernel))
    emit(rounds, "FP32 K split (% of cuBLAS SGEMM): " + "; ".join(f"{k} at {s} {pct(v)}" for (k, s), v in named.items()))

    # The 16-bit GEMM.
    rounds = rounds_with("bf16-gemm",)
    sizes = ("4096x4096x4096", "8192x8192x8192", "16384x16384x1024", "2048x2048x2048")
    ragged = ("4095x4097x1023", "4096x4096x1023", "4096x4097x1024")
    coop = {s: [] for s in sizes}
    rag, pp, f16 = [], [], []
    for r in rounds:
        b = load(at("bf16-gemm", r))
        for s in sizes:
            coop[s].append(fastest(b, s, BF16_CUBLAS) / ms(b, s, "bf16_gemm_ws_cooperative"))
        for s in ragged:
            rag.append(fastest(b, s, BF16_CUBLAS) / ms(b, s, "bf16_gemm_ws_cooperative"))
        pp.append(ms(b, sizes[0], "bf16_gemm_ws_cooperative") / ms(b, sizes[0], "bf16_gemm_ws_pingpong"))
        f16.append(ms(b, sizes[0], "bf16_gemm_ws_cooperative") / ms(b, sizes[0], "f16_gemm_ws_cooperative"))
    emit(rounds, "BF16 ws_cooperative (% of the fastest of cublasGemmEx and cuBLASLt): "
               + "; ".join(f"{s} {pct(v)}" for s, v in coop.items())
               + f"; rows off 16 bytes ({', '.join(ragged)}) {ratio(rag)}; ws_pingpong / ws_cooperative at "
               f"4096^3 {pct(pp)}; FP16 / BF16 ws_cooperative at 4096^3 {pct(f16)}")
    mean, worst, n = [], [], 0
    rounds = rounds_with("gemm16")
    for r in rounds:
        g16 = load(at("gemm16", r))
        ratios = []
        for p in g16["problems"]:
            have = {x["name"]: x["median_ms"] for x in p["rows"] if x["median_ms"] and x["passed"]}
            best = min(have["bf16_gemm_ws_cooperative"], have["bf16_gemm_ws_pingpong"])
            ratios.append(best / have["gemm16"])
        n = len(ratios)
        mean.append(sum(ratios) / n)
        worst.append(min(ratios))
    emit(rounds, f"Gemm16 over {n} shapes: {pct(mean)} of the faster schedule on average, worst {pct(worst)}")

    # Attention.
    rounds = rounds_with("attention", "sdpa")
    plain, causal, d128, d64 = [], [], [], []
    for r in rounds:
        ours, sdpa = load(at("attention", r)), {x["size"]: x for x in load(at("sdpa", r))["rows"]}
        for p in ours["problems"]:
            if p["size"] not in sdpa:
                continue
            b, s, h, d, is_causal = pairs_flops(p["size"])
            have = {x["name"]: x for x in p["rows"] if x["passed"] and x["rate"]}
            mine = have[dispatched(d, s, is_causal)]["rate"]
            cudnn = sdpa[p["size"]]["cudnn"]["tflops"]
            (causal if is_causal else plain).append(mine / cudnn)
            if s == 16384 and not is_causal:
                (d128 if d == 128 else d64 if d == 64 else []).append(mine)
    emit(rounds, f"attention over the 36-cell sweep, % of cuDNN per cell and round: no mask {pct(plain)}, "
               f"causal {pct(causal)}; d128 at 16k {span(d128, '{:.0f}')} TFLOP/s, d64 at 16k "
               f"{span(d64, '{:.0f}')} TFLOP/s")

    # Streaming and clusters.
    rounds = rounds_with("stream", "dsmem-latency", "dsmem-bandwidth")
    st, lat, bw = [], {}, []
    for r in rounds:
        s = load(at("stream", r))
        st.append(ms(s, "2 GiB", "memcpy_dtod") / ms(s, "2 GiB", "stream_thread_pipeline_4"))
        l = load(at("dsmem-latency", r))
        first = l["problems"][0]
        for x in first["rows"]:
            m = re.match(r"([\d.]+) cycles/hop", x["note"] or "")
            if m:
                lat.setdefault(x["name"], []).append(float(m.group(1)))
        bw.append(rows(load(at("dsmem-bandwidth", r)), "cluster 2, peer +1")["dsmem_bandwidth_remote_read"]["rate"] / 1000)
    emit(rounds, f"stream_thread_pipeline_4 {pct(st)} of cuMemcpyDtoD at 2 GiB")
    emit(rounds, "DSMEM (clusters of 2, peer +1), cycles per hop: " + ", ".join(
        f"{k.removeprefix('dsmem_latency_')} {span(v, '{:.0f}')}" for k, v in lat.items())
        + f"; remote loads {span(bw, '{:.2f}')} TB/s")

    for line in out:
        print("- " + line)
    print("\nfiles:", ", ".join(sorted(os.path.basename(f) for f in glob.glob(os.path.join(folder, "*")))))


if __name__ == "__main__":
    main()
