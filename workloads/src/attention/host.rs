//! The attention workload ([`super`]): every kernel of `gpu_kernels::attention`'s table on the
//! problem of one size, in its element, checked against the reference kernel.
//!
//! Inputs: one stream of draws from the seed, rounded to each element type (BF16 and FP16
//! multiply the same values, each as its type holds them); each type has its own Q, K, V, O,
//! log-sum-exp and reference.
//!
//! Checks (O widened to f32 on the GPU, the poison kept apart; the log-sum-exp on the host):
//! - random inputs, uniform in [-1, 1): O within `2^-7` of the reference norm-wise and `2^-5`
//!   of `max |O|` per element in BF16 (`2^-9` and `2^-7` in FP16). What our kernel rounds
//!   that the reference does not: P to the element before `P V` (relative `2^-9` in BF16) and
//!   O on the way out (the same): each moves O by about `2^-9 / sqrt(3)` of its size
//!   norm-wise, independently of the sequence length (a weighted mean of rounding errors of
//!   random sign); the bounds leave a margin of 4 to 8. A dropped or repeated block of 128
//!   keys at seqlen 4096 moves O by about 18% of its norm, a shifted mask row by `1 / n` of
//!   the row seeing `n` keys (whole rows at the start of a causal sequence);
//! - the log-sum-exp within `2^-14` of `max(1, |ref|)` per row, `-inf` exactly where the
//!   reference has it (a row that sees no key);
//! - small integers, exact: each key row is `8 c` for a code `c` in `{-1, 1}^d` drawn per
//!   pair of keys (`2p`, `2p + 1` share one), each query row `8 c` of the pair of one key it
//!   sees (the last, for a causal mask); V integers in [-8, 8]. Every score is an integer
//!   multiple of 64 (exact in FP32), the matching keys' at least 128 above any other's, so
//!   every other key's weight rounds to 0 next to their 1s and O must equal the mean of the
//!   matching keys' V that the row sees (one or two: exact in BF16 and FP16) bit for bit: a
//!   dropped or stale block, a wrong head or sequence shows as a whole wrong row, and a causal
//!   mask one key too wide as the half of the rows whose diagonal key is a pair's first (they
//!   then see its partner too).

use super::{
    ATTENTION_KERNELS, AttentionKernel, LoadKind, O_POISON, REFERENCE_THREADS,
    bf16_attention_reference, f16_attention_reference,
};
use crate::gemm16::{ElementType, bf16_widen, f16_widen};
use crate::verify::host::Reference;
use crate::verify::{verify_against_reference, verify_reference_scale};
use anyhow::{Result, bail};
use gpu::wgmma::{Bf16, F16};
use gpu_kernels::attention::{Attention, AttentionEntry, AttentionLayout, AttentionShape};
use gpu_runtime::cudarc::driver::CudaSlice;
use gpu_runtime::{Gpu, Kernel, LaunchConfig};
use harness::check::{CheckReport, Mismatch, POISON, Tolerance};
use harness::experiment::{
    Experiment, Fault, Inputs, Problem, Role, Unavailable, Values, Work, Workload,
};
use ptx_builder::Arch;
use rand::{Rng, SeedableRng};
use std::sync::LazyLock;

#[path = "host/size.rs"]
mod size;
pub use size::AttentionSize;

/// The attention workload.
pub struct AttentionWorkload;

/// One experiment: a kernel of the table.
#[derive(Clone, Copy, Debug)]
pub struct AttentionExperiment(pub &'static AttentionKernel);

static EXPERIMENTS: LazyLock<Vec<AttentionExperiment>> =
    LazyLock::new(|| ATTENTION_KERNELS.iter().map(AttentionExperiment).collect());

impl AttentionExperiment {
    /// What it leaves out, for its summary and style.
    fn label(&self) -> &'static str {
        let t = self.0.techniques;
        if t.loads == LoadKind::CpAsync {
            return "cp_async";
        }
        let best = AttentionKernel::best(self.0.element, self.0.geometry.head_dim);
        let consumers = best.map_or(2, |b| b.geometry.consumers);
        match (self.0.geometry.consumers, t.pingpong, t.overlap) {
            (c, true, true) if c == consumers => "pingpong_overlap",
            (2, true, true) => "two_consumers",
            (2, false, true) => "no_pingpong",
            (2, true, false) => "no_overlap",
            (1, _, true) => "one_consumer",
            _ => "plain",
        }
    }
}

impl Experiment for AttentionExperiment {
    fn name(&self) -> &'static str {
        self.0.name
    }
    fn role(&self) -> Role {
        Role::Library
    }
    fn style(&self) -> &'static str {
        self.label()
    }
    fn stages(&self) -> Option<u32> {
        Some(self.0.geometry.stages)
    }
    fn threads(&self) -> Option<u32> {
        Some(self.0.geometry.threads())
    }
    fn shared_bytes(&self) -> Option<u32> {
        Some(self.0.geometry.shared().bytes)
    }
    fn summary(&self) -> &'static str {
        match self.label() {
            "pingpong_overlap" => {
                "TMA producer warp, consumer warpgroups in ping-pong, QK^T issued with the previous P V"
            }
            "two_consumers" => {
                "as the full kernel with two consumer warpgroups (128 query rows per tile), not three"
            }
            "no_pingpong" => "as the full kernel, the two consumer warpgroups not ordered",
            "no_overlap" => {
                "as the full kernel, each warpgroup waiting for its multiplies before the softmax"
            }
            "one_consumer" => "as the full kernel, one consumer warpgroup (64 query rows per tile)",
            "cp_async" => {
                "as the full kernel, Q, K and V copied by the producer warpgroup's cp.async, not TMA"
            }
            _ => "an attention kernel",
        }
    }
    fn archs(&self) -> &'static [Arch] {
        &[Arch::Sm90a]
    }
}

/// Bytes of device memory a problem takes: per element type Q, K, V, O (16-bit), the
/// log-sum-exp (f32) and the references (f64); O widened (f32).
fn device_bytes(size: AttentionSize) -> u64 {
    let s = size.shape();
    let (q, kv, lse) = (s.q_elements(), s.kv_elements(), s.lse_elements());
    2 * (2 * (2 * q + 2 * kv) + 4 * lse + 8 * (q + lse)) + 4 * q
}

impl Workload for AttentionWorkload {
    type Experiment = AttentionExperiment;
    type Size = AttentionSize;
    type Problem = AttentionProblem;

    fn name(&self) -> &'static str {
        "attention"
    }
    fn summary(&self) -> &'static str {
        "O = softmax(scale Q K^T + mask) V, BF16/FP16, d 64/128/256, causal or not, GQA, on TMA + wgmma (sm_90a)"
    }
    fn experiments(&self) -> &'static [AttentionExperiment] {
        &EXPERIMENTS
    }
    fn helper_kernels(&self) -> &'static [&'static str] {
        const HELPERS: &[&str] = &[
            bf16_attention_reference.name(),
            f16_attention_reference.name(),
            bf16_widen.name(),
            f16_widen.name(),
            verify_reference_scale.name(),
            verify_against_reference.name(),
        ];
        HELPERS
    }
    fn device_bytes(&self, size: AttentionSize) -> u64 {
        device_bytes(size)
    }
    fn size_syntax(&self) -> &'static str {
        size::SYNTAX
    }
    fn parse_size(&self, text: &str) -> Result<AttentionSize, String> {
        text.parse()
    }
    fn default_sizes(&self) -> Vec<AttentionSize> {
        // The sweep at 16k tokens, hidden 2048: d128, causal or not, seqlen 1k-16k.
        [
            "16x1024x16x128",
            "8x2048x16x128",
            "4x4096x16x128",
            "2x8192x16x128",
            "1x16384x16x128",
        ]
        .iter()
        .flat_map(|s| [s.to_string(), format!("{s}:causal")])
        .map(|s| s.parse().expect("valid default sizes"))
        .collect()
    }
    fn test_cases(&self) -> Vec<(Values, AttentionSize)> {
        let random = [
            "1x1x1x64",
            "2x300x4x64:causal",
            "1x1000x2x128",
            "1x1000x2x128:causal",
            "1x17x8x128:kv=4096:hkv=2",
            "1x1x4x128:kv=4096:hkv=1:causal",
            "2x200x2x256:kv=333",
            "1x257x2x256:kv=100:causal",
            "1x513x4x64:hkv=1",
            "5x3x8x128:kv=640:hkv=2:ragged",
            "4x1x8x64:kv=1000:hkv=1:causal:ragged",
        ];
        let exact = [
            "1x1x1x64",
            "2x300x4x128:causal",
            "1x129x2x256:kv=1000:hkv=1",
            "1x64x2x64:kv=17:causal",
            "3x2x4x256:kv=300:hkv=2:causal:ragged",
        ];
        random
            .iter()
            .map(|s| (Values::Random, s))
            .chain(exact.iter().map(|s| (Values::SmallIntegers, s)))
            .map(|(values, s)| (values, s.parse().expect("valid test sizes")))
            .collect()
    }
    fn prepare(&self, gpu: &Gpu, size: AttentionSize, inputs: Inputs) -> Result<AttentionProblem> {
        AttentionProblem::new(gpu, size, inputs)
    }
}

/// The inputs of one element type as its bits: Q, K, V (the module docs say how).
pub fn generate_inputs(
    size: AttentionSize,
    values: Values,
    seed: u64,
    element: ElementType,
) -> [Vec<u16>; 3] {
    let s = size.shape();
    let d = s.head_dim as usize;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    match values {
        Values::Random => {
            let mut draw = |n: u64| {
                (0..n)
                    .map(|_| element.round(rng.gen_range(-1.0f32..1.0)))
                    .collect::<Vec<u16>>()
            };
            [
                draw(s.q_elements()),
                draw(s.kv_elements()),
                draw(s.kv_elements()),
            ]
        }
        Values::SmallIntegers => {
            // One code per (batch, pair of keys 2p and 2p + 1, kv head); a query row takes the
            // code of its chosen key's pair.
            let (b, sq, skv) = (s.batch as usize, s.seqlen_q as usize, s.seqlen_kv as usize);
            let (hq, hkv) = (s.heads_q as usize, s.heads_kv as usize);
            let pairs = skv.div_ceil(2);
            let words = d.div_ceil(64);
            let codes: Vec<u64> = (0..b * pairs * hkv * words)
                .map(|_| rng.r#gen::<u64>())
                .collect();
            let code_of = |batch: usize, key: usize, kv_head: usize| {
                ((batch * pairs + key / 2) * hkv + kv_head) * words
            };
            let sign = |word: u64, c: usize| {
                if (word >> (c % 64)) & 1 == 1 {
                    8.0f32
                } else {
                    -8.0
                }
            };
            let row = |at: usize| (0..d).map(move |c| (at, c));
            let mut k = Vec::with_capacity(b * skv * hkv * d);
            for batch in 0..b {
                for j in 0..skv {
                    for h in 0..hkv {
                        let at = code_of(batch, j, h);
                        k.extend(row(at).map(|(at, c)| element.round(sign(codes[at + c / 64], c))));
                    }
                }
            }
            let mut q = Vec::with_capacity(b * sq * hq * d);
            for (batch, &length) in size.kv_lengths().iter().enumerate() {
                // The sequence's own keys (at least one: a row of a sequence with none sees
                // no key whatever its code).
                let keys = (length as usize).max(1);
                for i in 0..sq {
                    for h in 0..hq {
                        // The last key row i sees (causal), or one of all.
                        let j = if s.causal {
                            (i as i64 + keys as i64 - sq as i64).max(0) as usize
                        } else {
                            (i * 7919) % keys
                        };
                        let at = code_of(batch, j, h / (hq / hkv));
                        q.extend(row(at).map(|(at, c)| element.round(sign(codes[at + c / 64], c))));
                    }
                }
            }
            let v = (0..s.kv_elements())
                .map(|_| element.round(rng.gen_range(-8i32..=8) as f32))
                .collect();
            [q, k, v]
        }
    }
}

/// One element type's buffers and references.
struct ElementProblem {
    q: CudaSlice<u16>,
    k: CudaSlice<u16>,
    v: CudaSlice<u16>,
    /// Each sequence's keys ([`AttentionSize::kv_lengths`]; read only with `ragged`).
    kv_lengths: CudaSlice<i32>,
    o: CudaSlice<u16>,
    lse: CudaSlice<f32>,
    reference: Reference,
    lse_reference: Vec<f64>,
    tolerance: Tolerance,
}

/// The tolerance of O in `element` (module docs).
pub fn output_tolerance(element: ElementType) -> Tolerance {
    match element {
        ElementType::Bf16 => Tolerance {
            norm: 2f64.powi(-7),
            element: 2f64.powi(-5),
        },
        ElementType::F16 => Tolerance {
            norm: 2f64.powi(-9),
            element: 2f64.powi(-7),
        },
    }
}

/// The log-sum-exp's tolerance, relative to `max(1, |ref|)`.
pub const LSE_TOLERANCE: f64 = 1.0 / 16384.0;

impl ElementProblem {
    fn new(gpu: &Gpu, size: AttentionSize, inputs: Inputs, element: ElementType) -> Result<Self> {
        let shape = size.shape();
        let [q, k, v] = generate_inputs(size, inputs.values, inputs.seed, element);
        let what = element.label();
        let q = gpu.upload(&q, &format!("Q ({what})"))?;
        let k = gpu.upload(&k, &format!("K ({what})"))?;
        let v = gpu.upload(&v, &format!("V ({what})"))?;
        let kv_lengths = gpu.upload(&size.kv_lengths(), "the sequences' key counts")?;
        let mut o_ref = gpu.zeros::<f64>(shape.q_elements() as usize, "the reference O")?;
        let mut lse_ref = gpu.zeros::<f64>(shape.lse_elements() as usize, "the reference LSE")?;
        let rows = shape.lse_elements();
        let blocks = (rows.div_ceil((REFERENCE_THREADS / 32) as u64)).min(16 * 1024) as u32;
        let config = LaunchConfig::linear(blocks, REFERENCE_THREADS, 0);
        let args = (
            &q,
            &k,
            &v,
            &kv_lengths,
            &mut o_ref,
            &mut lse_ref,
            shape.args(),
            shape.head_dim,
        );
        // SAFETY (both): the buffers hold Q, K, V (of the element), O's and the LSE's
        // doubles for this shape; 1-D grid of REFERENCE_THREADS blocks; the shape's sizes are
        // at least 1 and heads_q a multiple of heads_kv (parsed), d 64/128/256.
        let (q_in, k_in, v_in, lengths, o_out, lse_out, a, d) = args;
        match element {
            ElementType::Bf16 => {
                let kernel: Kernel<_> = gpu.entry_point(bf16_attention_reference)?;
                unsafe {
                    kernel.launch(
                        gpu,
                        config,
                        (q_in, k_in, v_in, lengths, o_out, lse_out, a, d),
                    )?
                }
            }
            ElementType::F16 => {
                let kernel: Kernel<_> = gpu.entry_point(f16_attention_reference)?;
                unsafe {
                    kernel.launch(
                        gpu,
                        config,
                        (q_in, k_in, v_in, lengths, o_out, lse_out, a, d),
                    )?
                }
            }
        }
        let lse_reference = gpu.download(&lse_ref, "the reference LSE")?;
        Ok(ElementProblem {
            o: gpu.zeros::<u16>(shape.q_elements() as usize, "O")?,
            lse: gpu.zeros::<f32>(shape.lse_elements() as usize, "LSE")?,
            q,
            k,
            v,
            kv_lengths,
            reference: Reference::new(gpu, o_ref, "the reference O")?,
            lse_reference,
            tolerance: output_tolerance(element),
        })
    }
}

/// Each element type's problem, and the kernels.
pub struct AttentionProblem {
    size: AttentionSize,
    values: Values,
    bf16: ElementProblem,
    f16: ElementProblem,
    widened: CudaSlice<f32>,
    widen_bf16: Kernel<(*const Bf16, *mut f32, u64, u32)>,
    widen_f16: Kernel<(*const F16, *mut f32, u64, u32)>,
    attention: Result<Attention, String>,
}

impl AttentionProblem {
    fn new(gpu: &Gpu, size: AttentionSize, inputs: Inputs) -> Result<AttentionProblem> {
        let sm90a = gpu
            .info()
            .specific
            .is_some_and(|(arch, _)| arch == Arch::Sm90a);
        let attention = if sm90a {
            Attention::load(gpu).map_err(|e| e.to_string())
        } else {
            Err("needs the sm_90a module (compute capability 9.0)".into())
        };
        Ok(AttentionProblem {
            size,
            values: inputs.values,
            bf16: ElementProblem::new(gpu, size, inputs, ElementType::Bf16)?,
            f16: ElementProblem::new(gpu, size, inputs, ElementType::F16)?,
            widened: gpu.zeros::<f32>(size.shape().q_elements() as usize, "O widened")?,
            widen_bf16: gpu.entry_point(bf16_widen)?,
            widen_f16: gpu.entry_point(f16_widen)?,
            attention,
        })
    }

    fn element(&mut self, element: ElementType) -> &mut ElementProblem {
        match element {
            ElementType::Bf16 => &mut self.bf16,
            ElementType::F16 => &mut self.f16,
        }
    }
}

impl Problem<AttentionExperiment> for AttentionProblem {
    fn unavailable(&self, experiment: &AttentionExperiment) -> Option<Unavailable> {
        if let Err(why) = &self.attention {
            return Some(Unavailable::Missing(why.clone()));
        }
        let d = self.size.shape().head_dim;
        (experiment.0.geometry.head_dim != d).then(|| {
            Unavailable::AtThisSize(format!(
                "a kernel for d = {}",
                experiment.0.geometry.head_dim
            ))
        })
    }

    fn poison(&mut self, gpu: &Gpu, experiment: &AttentionExperiment) -> Result<()> {
        let p = self.element(experiment.0.element);
        gpu.fill_u16(&mut p.o, O_POISON, "O")?;
        gpu.fill_words(&mut p.lse, POISON.to_bits(), "LSE")?;
        Ok(())
    }

    type Resolved = AttentionEntry;

    fn resolve(&self, _gpu: &Gpu, experiment: &AttentionExperiment) -> Result<AttentionEntry> {
        let Ok(attention) = &self.attention else {
            bail!("{} is not loaded (no sm_90a module)", experiment.0.name);
        };
        Ok(attention.resolve(experiment.0)?)
    }

    fn launch(
        &mut self,
        gpu: &Gpu,
        _experiment: &AttentionExperiment,
        entry: &AttentionEntry,
    ) -> Result<()> {
        let shape = self.size.shape();
        let p = match entry.kernel().element {
            ElementType::Bf16 => &mut self.bf16,
            ElementType::F16 => &mut self.f16,
        };
        let Ok(attention) = &self.attention else {
            bail!("{} is not loaded (no sm_90a module)", entry.kernel().name);
        };
        run_api(attention, gpu, entry, p, shape, self.size.ragged)?;
        Ok(())
    }

    fn check(&mut self, gpu: &Gpu, experiment: &AttentionExperiment) -> Result<CheckReport> {
        let element = experiment.0.element;
        let len = self.widened.len() as u64;
        let blocks = (len.div_ceil(256)).min(4 * 1024) as u32;
        let config = LaunchConfig::linear(blocks, 256, 0);
        let p = match element {
            ElementType::Bf16 => &mut self.bf16,
            ElementType::F16 => &mut self.f16,
        };
        let (o, widened, poison) = (&p.o, &mut self.widened, POISON.to_bits());
        // SAFETY (both): {bf16,f16}_widen(src, dst, len, poison): both buffers hold `len`
        // elements; any 1-D grid of 256-thread blocks.
        match element {
            ElementType::Bf16 => unsafe {
                self.widen_bf16
                    .launch(gpu, config, (o, widened, len, poison))?
            },
            ElementType::F16 => unsafe {
                self.widen_f16
                    .launch(gpu, config, (o, widened, len, poison))?
            },
        }
        let o_report = p
            .reference
            .check(gpu, &self.widened, self.values, p.tolerance)?;
        if !o_report.passed {
            return Ok(o_report);
        }
        let lse = gpu.download(&p.lse, "LSE")?;
        Ok(check_lse(&lse, &p.lse_reference, len as usize, o_report))
    }

    /// In O itself, in the experiment's element (the check widens O); for an unwritten tile,
    /// the last query tile of the last head of the last sequence.
    fn plant(
        &mut self,
        gpu: &Gpu,
        experiment: &AttentionExperiment,
        fault: Fault,
    ) -> Result<usize> {
        let s = self.size.shape();
        let element = experiment.0.element;
        let o = &mut self.element(element).o;
        let (d, h) = (s.head_dim as usize, s.heads_q as usize);
        match fault {
            Fault::WrongElement => {
                let index = o.len() / 2;
                let got = gpu.download_range(o, index..index + 1, "an element of O")?[0];
                let wrong = crate::gemm16::host::far_off_bits(element, got);
                gpu.upload_into(&[wrong], o, index, "a wrong element of O")?;
                Ok(index)
            }
            Fault::UnwrittenTile => {
                let block_m = experiment.0.geometry.block_m() as usize;
                let (b, sq) = (s.batch as usize, s.seqlen_q as usize);
                let m0 = (sq - 1) / block_m * block_m;
                let poisoned = vec![O_POISON; d];
                for i in m0..sq {
                    let at = (((b - 1) * sq + i) * h + h - 1) * d;
                    gpu.upload_into(&poisoned, o, at, "a poisoned tile of O")?;
                }
                Ok((((b - 1) * sq + m0) * h + h - 1) * d)
            }
        }
    }

    fn work(&self) -> Work {
        Work::Flops(self.size.flops() as u64)
    }
}

/// The log-sum-exp against its reference (module docs), failures indexed after O's
/// `o_len` elements; `passed` carries O's report, which passed.
fn check_lse(lse: &[f32], reference: &[f64], o_len: usize, passed: CheckReport) -> CheckReport {
    let mut report = passed;
    for (i, (&got, &want)) in lse.iter().zip(reference).enumerate() {
        let ok = if want == f64::NEG_INFINITY {
            got == f32::NEG_INFINITY
        } else if got.to_bits() == POISON.to_bits() {
            report.unwritten += 1;
            false
        } else if !got.is_finite() {
            report.non_finite += 1;
            false
        } else {
            let ok = (got as f64 - want).abs() <= LSE_TOLERANCE * want.abs().max(1.0);
            if !ok {
                report.wrong += 1;
            }
            ok
        };
        if !ok && report.first_failure.is_none() {
            report.first_failure = Some(Mismatch {
                index: o_len + i,
                got: got as f64,
                expected: want,
                what: Some("log-sum-exp"),
            });
        }
    }
    report.passed = report.first_failure.is_none();
    report
}

/// A fault of an attention kernel itself, planted by running the kernel on a problem that
/// differs from the one its output is checked against, or by spoiling the log-sum-exp it
/// wrote: what the check must catch (the GPU tests show it does).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelFault {
    /// The last block of keys left out (the kernel run with `seqlen_kv` one block shorter;
    /// one sequence, no mask: nothing else changes).
    DroppedKeyBlock,
    /// The mask flipped: causal for a problem without one, none for a causal one.
    WrongMask,
    /// One row's log-sum-exp off by `2^-10` of `max(1, |lse|)` (16 times the tolerance).
    WrongLse,
    /// The log-sum-exp in base 2 instead of base e.
    Base2Lse,
}

impl AttentionProblem {
    /// Runs `experiment` with `fault` planted (synchronized), then checks it as
    /// [`Problem::check`] does; `None` where the fault cannot be planted at this size (a
    /// dropped block needs one sequence, no mask and more than one block of keys).
    pub fn check_with_kernel_fault(
        &mut self,
        gpu: &Gpu,
        experiment: &AttentionExperiment,
        fault: KernelFault,
    ) -> Result<Option<CheckReport>> {
        let mut shape = self.size.shape();
        let block_n = experiment.0.geometry.block_n;
        match fault {
            KernelFault::DroppedKeyBlock => {
                // (A cache's rows are its layout: shortening them would move every row.)
                if shape.batch != 1
                    || shape.causal
                    || self.size.ragged
                    || shape.seqlen_kv <= block_n
                {
                    return Ok(None);
                }
                shape.seqlen_kv = (shape.seqlen_kv - 1) / block_n * block_n;
            }
            KernelFault::WrongMask => shape.causal = !shape.causal,
            KernelFault::WrongLse | KernelFault::Base2Lse => {}
        }
        let entry = self.resolve(gpu, experiment)?;
        self.poison(gpu, experiment)?;
        let p = match experiment.0.element {
            ElementType::Bf16 => &mut self.bf16,
            ElementType::F16 => &mut self.f16,
        };
        let Ok(attention) = &self.attention else {
            bail!("{} is not loaded (no sm_90a module)", experiment.0.name);
        };
        run_api(attention, gpu, &entry, p, shape, self.size.ragged)?;
        gpu.synchronize(|| format!("{} with {fault:?}", experiment.0.name))?;
        if matches!(fault, KernelFault::WrongLse | KernelFault::Base2Lse) {
            let mut lse = gpu.download(&p.lse, "LSE")?;
            let middle = lse.len() / 2;
            match fault {
                KernelFault::WrongLse => lse[middle] += lse[middle].abs().max(1.0) / 1024.0,
                _ => lse.iter_mut().for_each(|x| *x *= std::f32::consts::LOG2_E),
            }
            gpu.upload_into(&lse, &mut p.lse, 0, "a spoiled LSE")?;
        }
        self.check(gpu, experiment).map(Some)
    }
}

/// `entry` through gpu-kernels' API on the problem's buffers, which hold the bits of the
/// kernel's element as `u16`: viewed as `half::bf16` or `half::f16` for the call, packed.
fn run_api(
    attention: &Attention,
    gpu: &Gpu,
    entry: &AttentionEntry,
    p: &mut ElementProblem,
    shape: AttentionShape,
    ragged: bool,
) -> Result<(), gpu_kernels::KernelError> {
    match entry.kernel().element {
        ElementType::Bf16 => run_as::<half::bf16>(attention, gpu, entry, p, shape, ragged),
        ElementType::F16 => run_as::<half::f16>(attention, gpu, entry, p, shape, ragged),
    }
}

/// [`run_api`] for elements `E`.
fn run_as<E: gpu_kernels::Element16>(
    attention: &Attention,
    gpu: &Gpu,
    entry: &AttentionEntry,
    p: &mut ElementProblem,
    shape: AttentionShape,
    ragged: bool,
) -> Result<(), gpu_kernels::KernelError> {
    // SAFETY: each buffer holds 16-bit values of the kernel's element, `E` (u16 and `E` have
    // one size, so the views cover the buffers exactly).
    let (q, k, v, o) = unsafe {
        (
            p.q.transmute::<E>(p.q.len()),
            p.k.transmute::<E>(p.k.len()),
            p.v.transmute::<E>(p.v.len()),
            p.o.transmute_mut::<E>(p.o.len()),
        )
    };
    let (Some(q), Some(k), Some(v), Some(mut o)) = (q, k, v, o) else {
        unreachable!("a view of a 16-bit buffer as 16-bit elements fits it");
    };
    let layout = AttentionLayout::packed(&shape);
    if ragged {
        let lengths = &p.kv_lengths;
        attention.run_cache(
            gpu, entry, &q, &k, &v, lengths, &mut o, &mut p.lse, shape, &layout,
        )
    } else {
        attention.run(gpu, entry, &q, &k, &v, &mut o, &mut p.lse, shape, &layout)
    }
}
