"""Why cuBLAS's BF16 GEMM lands outside our tolerance at 8191^3 (docs/design.md).

C = A B^T, A (M x K) and B (N x K) row-major BF16, uniform in [-1, 1) rounded to BF16 (the
bf16-gemm workload's inputs), C in BF16 with FP32 accumulation, as the workload calls cuBLAS.
For each setting of PyTorch's `allow_bf16_reduced_precision_reduction` (True, PyTorch's and
cuBLAS's default, lets cuBLAS reduce split-K partials in BF16; False asks cuBLAS for FP32
reductions: CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION, and no reduction scheme on
cuBLASLt) it prints, against an FP64 product of the same inputs:

- how many outputs fall outside the workload's check (|out - ref| > 2^-8 max|ref|);
- how many are not the correctly rounded BF16 of the FP64 result, and the largest error in
  units of the BF16 spacing at the result (one rounding: at most 0.5; two roundings, a BF16
  partial then the BF16 sum: up to about 1);
- whether the outputs equal an emulated split K into S equal parts, each partial rounded to
  BF16 and their sum rounded again (S = 1 is plain FP32 accumulation, one rounding).

Usage (PyTorch with CUDA): python3 scripts/cublas_bf16_reduction.py [M N K] [--seed S]
"""

import argparse
import torch


def bf16_spacing(x):
    """The distance between consecutive BF16 values at |x| (8 significant bits)."""
    e = torch.floor(torch.log2(x.abs().clamp_min(2.0**-126)))
    return torch.exp2(e - 7)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mnk", nargs="*", type=int, default=[8191, 8191, 8191])
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    m, n, k = (args.mnk * 3)[:3] if len(args.mnk) == 1 else args.mnk
    torch.manual_seed(args.seed)
    dev = "cuda"
    a = (torch.rand(m, k, device=dev) * 2 - 1).to(torch.bfloat16)
    b = (torch.rand(n, k, device=dev) * 2 - 1).to(torch.bfloat16)
    ref = a.double() @ b.double().T
    limit = ref.abs().max() / 256
    correct = ref.to(torch.bfloat16)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"C = A B^T at {m}x{n}x{k}, seed {args.seed}; check: |out - ref| <= {limit:.4f}")

    # Emulated split K: S equal parts (whole multiples of 64), partials rounded to BF16.
    torch.backends.cuda.matmul.allow_tf32 = False
    emulated = {}
    for s in (1, 2, 3, 4):
        part = -(-k // s + 63) // 64 * 64 if s > 1 else k
        total = torch.zeros(m, n, device=dev, dtype=torch.float32)
        for lo in range(0, k, part):
            hi = min(k, lo + part)
            partial = a[:, lo:hi].double() @ b[:, lo:hi].double().T
            total += partial.to(torch.bfloat16).float() if s > 1 else partial.float()
        emulated[s] = total.to(torch.bfloat16)

    for allow in (True, False):
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = allow
        out = a @ b.T
        torch.cuda.synchronize()
        err = (out.double() - ref).abs()
        outside = int((err > limit).sum())
        not_rounded = int((out != correct).sum())
        # In BF16 steps at the result, over results of magnitude 1 and more (below, the
        # check's absolute bound rules).
        big = ref.abs() >= 1
        ulps = float((err[big] / bf16_spacing(ref[big])).max())
        matches = ", ".join(
            f"S={s}: {int((out == e).sum()) / out.numel():.4%}" for s, e in emulated.items())
        worst = int(torch.argmax(err))
        print(f"allow_bf16_reduced_precision_reduction={allow}: {outside} outside the check, "
              f"{not_rounded} of {out.numel()} not correctly rounded, largest error "
              f"{ulps:.3f} BF16 steps where |exact| >= 1 (the worst at [{worst}]: got {float(out.view(-1)[worst]):.3f}, "
              f"exact {float(ref.view(-1)[worst]):.3f}); equal to emulated split K {matches}")


if __name__ == "__main__":
    main()
