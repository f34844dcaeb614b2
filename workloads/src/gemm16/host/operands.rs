//! The inputs of a problem, per element type: generated on the host, uploaded, padded where a
//! tensor map cannot describe their rows, and multiplied by the `f64` reference kernel; and
//! the tolerance of an output against that reference (the module docs of [`super`]).

use super::super::{
    BLayout, ElementType, GEMM16_KERNELS, HELPER_THREADS, PadRows, RowPadder, bf16_gemm_reference,
    f16_gemm_reference,
};
use crate::gemm::host::{Mnk, far_off};
use crate::verify::host::Reference;
use anyhow::Result;
use gpu_runtime::cudarc::driver::CudaSlice;
use gpu_runtime::{Gpu, LaunchConfig};
use harness::check::Tolerance;
use harness::experiment::{Inputs, Values};
use rand::{Rng, SeedableRng};

/// The inputs as bits of `element`: A (`m x k`) then B (`n x k`), the same values for either
/// element (one stream of draws from `seed`, rounded to it). Random: uniform in [-1, 1).
/// Small integers: in [-8, 8], A with non-zeros only where `(row + col) % stride == 0`,
/// `stride = ceil(k / 4)` (at most 4 per row; see the module docs).
pub fn generate_inputs(
    size: Mnk,
    values: Values,
    seed: u64,
    element: ElementType,
) -> (Vec<u16>, Vec<u16>) {
    let (m, n, k) = (size.m as usize, size.n as usize, size.k as usize);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let value = |rng: &mut rand::rngs::StdRng| match values {
        Values::Random => element.round(rng.gen_range(-1.0f32..1.0)),
        Values::SmallIntegers => element.round(rng.gen_range(-8i32..=8) as f32),
    };
    let stride = k.div_ceil(4);
    let mut a = Vec::with_capacity(m * k);
    for row in 0..m {
        for col in 0..k {
            let keep = values == Values::Random || (row + col) % stride == 0;
            a.push(if keep { value(&mut rng) } else { 0 });
        }
    }
    let b = (0..n * k).map(|_| value(&mut rng)).collect();
    (a, b)
}

/// Whether a problem keeps B `k x n` in `element`: for the families that read it (`_b_kn`)
/// and, in BF16, cuBLAS's NN GEMM.
pub(super) fn has_b_kn(element: ElementType) -> bool {
    element == ElementType::Bf16
        || GEMM16_KERNELS
            .iter()
            .any(|f| f.element == element && f.b_layout == BLayout::KN)
}

/// Bytes of device memory one element's inputs take: A, B and (where kept) B `k x n`, with
/// padded copies where rows are not multiples of 8, and the `f64` reference.
pub(super) fn input_bytes(size: Mnk, element: ElementType) -> u64 {
    let (m, n, k) = (size.m as u64, size.n as u64, size.k as u64);
    let (kp, np) = (k.next_multiple_of(8), n.next_multiple_of(8));
    let a_b = 2 * (m + n) * k + if kp != k { 2 * (m + n) * kp } else { 0 };
    let b_kn = if has_b_kn(element) {
        2 * n * k + if np != n { 2 * k * np } else { 0 }
    } else {
        0
    };
    a_b + b_kn + 8 * m * n
}

/// A matrix (row-major, `rows x cols`, 16-bit elements) and, when its rows are not 16-byte
/// multiples (`cols` not a multiple of 8), a copy with rows padded with zeros to
/// `padded_cols`, which a tensor map can describe; the copy is refilled before every launch
/// that reads it.
pub(super) struct Operand {
    rows: u32,
    cols: u32,
    pub(super) data: CudaSlice<u16>,
    padded: Option<(u32, CudaSlice<u16>)>,
}

impl Operand {
    fn new(gpu: &Gpu, rows: u32, cols: u32, data: CudaSlice<u16>, what: &str) -> Result<Operand> {
        let padded = if !cols.is_multiple_of(8) {
            let padded_cols = cols.next_multiple_of(8);
            let len = rows as usize * padded_cols as usize;
            Some((
                padded_cols,
                gpu.zeros::<u16>(len, &format!("{what} padded"))?,
            ))
        } else {
            None
        };
        Ok(Operand {
            rows,
            cols,
            data,
            padded,
        })
    }

    /// The buffer and row length a kernel reads (rows 16-byte multiples, as a tensor map or a
    /// 16-byte `cp.async` needs): the matrix itself, or its padded copy ([`pad_operands`]
    /// refills it).
    pub(super) fn aligned(&self) -> (&CudaSlice<u16>, u32) {
        match &self.padded {
            Some((padded_cols, copy)) => (copy, *padded_cols),
            None => (&self.data, self.cols),
        }
    }
}

/// The padding kernel, as [`Gemm16`](gpu_kernels::gemm16::Gemm16) runs it.
pub(super) struct Padder {
    pad: RowPadder,
}

impl Padder {
    pub(super) fn new(gpu: &Gpu) -> Result<Padder> {
        Ok(Padder {
            pad: RowPadder::load(gpu)?,
        })
    }

    /// Queues the refill of the padded copies of `a` and `b` (those that have one), of either
    /// element (it copies bits): each row of `cols` into a row of `padded_cols`, zeros past
    /// `cols`, both in one `gemm16_pad_rows` launch. The copy engine's 2-D copy
    /// (`cuMemcpy2DAsync`) was slower with these odd pitches, and so was a launch per operand
    /// (docs/results.md).
    pub(super) fn pad_operands(
        &mut self,
        gpu: &Gpu,
        a: &mut Operand,
        b: &mut Operand,
    ) -> Result<()> {
        let rows = |o: &Operand| match &o.padded {
            Some((padded_cols, copy)) => PadRows::new(
                gpu.address(&o.data),
                o.rows,
                o.cols,
                o.cols,
                gpu.address(copy),
                *padded_cols,
            ),
            None => PadRows::NONE,
        };
        // SAFETY: each source holds rows * cols 16-bit elements and each copy rows * padded
        // cols (cols rounded up to 8), driver allocations (256-byte aligned), alive until
        // the next launch that reads them, in stream order.
        unsafe { self.pad.launch(gpu, [rows(a), rows(b)])? };
        Ok(())
    }
}

/// One element type's inputs: A (`m x k`), B (`n x k`), B as `k x n` row-major where kept
/// ([`has_b_kn`]), the `f64` reference of those very (rounded) values, and the tolerance of
/// an output against it.
pub(super) struct ElementInputs {
    pub(super) a: Operand,
    pub(super) b: Operand,
    pub(super) b_kn: Option<Operand>,
    pub(super) reference: Reference,
    pub(super) tolerance: Tolerance,
}

impl ElementInputs {
    pub(super) fn new(
        gpu: &Gpu,
        size: Mnk,
        inputs: Inputs,
        element: ElementType,
    ) -> Result<ElementInputs> {
        let Mnk { m, n, k } = size;
        let name = element.label().to_uppercase();
        let (a_host, b_host) = generate_inputs(size, inputs.values, inputs.seed, element);
        let b_kn = if has_b_kn(element) {
            let (nu, ku) = (n as usize, k as usize);
            let mut b_kn_host = vec![0u16; b_host.len()];
            for (j, row) in b_host.chunks_exact(ku).enumerate() {
                for (kk, &x) in row.iter().enumerate() {
                    b_kn_host[kk * nu + j] = x;
                }
            }
            let what = format!("{name} B (k x n)");
            Some(Operand::new(
                gpu,
                k,
                n,
                gpu.upload(&b_kn_host, &what)?,
                &what,
            )?)
        } else {
            None
        };
        let (what_a, what_b) = (format!("{name} A"), format!("{name} B"));
        let a = Operand::new(gpu, m, k, gpu.upload(&a_host, &what_a)?, &what_a)?;
        let b = Operand::new(gpu, n, k, gpu.upload(&b_host, &what_b)?, &what_b)?;
        drop((a_host, b_host));
        let mn = m as usize * n as usize;
        let mut c64 = gpu.zeros::<f64>(mn, "the reference C")?;
        let config = LaunchConfig::linear(
            (mn as u64).div_ceil(HELPER_THREADS as u64) as u32,
            HELPER_THREADS,
            0,
        );
        let (a_in, b_in, c_out) = (&a.data, &b.data, &mut c64);
        // SAFETY (both): {bf16,f16}_gemm_reference(a, b, c, m, n, k) reads m*k and n*k
        // elements and writes m*n doubles, which the buffers hold; the 1-D grid covers m*n
        // threads (below 2^31, checked by the caller).
        match element {
            ElementType::Bf16 => unsafe {
                gpu.entry_point(bf16_gemm_reference)?.launch(
                    gpu,
                    config,
                    (a_in, b_in, c_out, m, n, k),
                )?
            },
            ElementType::F16 => unsafe {
                gpu.entry_point(f16_gemm_reference)?.launch(
                    gpu,
                    config,
                    (a_in, b_in, c_out, m, n, k),
                )?
            },
        }
        gpu.synchronize(|| format!("computing the reference of a {size} {name} GEMM"))?;
        let reference = Reference::new(gpu, c64, "the reference C")?;
        let (max_abs, norm) = match &reference {
            Reference::Host(values) => (
                values.iter().fold(0.0f64, |acc, x| acc.max(x.abs())),
                values.iter().map(|x| x * x).sum::<f64>().sqrt(),
            ),
            Reference::Device { scale, .. } => (scale.max_abs, scale.sum_sq.sqrt()),
        };
        Ok(ElementInputs {
            a,
            b,
            b_kn,
            reference,
            tolerance: output_tolerance(element, mn as u64, max_abs, norm),
        })
    }
}

/// The tolerance of an output in `element` of `len` elements against a reference whose
/// largest magnitude is `max_abs` and whose norm is `norm` (the module docs of [`super`]):
/// BF16 `2^-8` element-wise and norm-wise; FP16 `2^-10`, plus what rounding to FP16's
/// subnormals (below `2^-14`, where its steps are `2^-24` whatever the value) may add: `2^-24`
/// per element, `2^-24 / max_abs` of the scale element-wise and `2^-24 sqrt(len) / norm`
/// norm-wise — nothing at any realistic scale, but a 1 x 1 product below `2^-15` would fail
/// without it.
pub fn output_tolerance(element: ElementType, len: u64, max_abs: f64, norm: f64) -> Tolerance {
    match element {
        ElementType::Bf16 => Tolerance {
            norm: 1.0 / 256.0,
            element: 1.0 / 256.0,
        },
        ElementType::F16 => {
            let step = (-24f64).exp2();
            let relative =
                |extra: f64, over: f64| 1.0 / 1024.0 + if over > 0.0 { extra / over } else { 0.0 };
            Tolerance {
                norm: relative(step * (len as f64).sqrt(), norm),
                element: relative(step, max_abs),
            }
        }
    }
}

/// The bits of an element of `element` moved far outside any tolerance ([`far_off`]) and
/// still finite: where that overflows FP16 (65504), the largest finite value of the other
/// sign, at least 65504 away.
pub(crate) fn far_off_bits(element: ElementType, bits: u16) -> u16 {
    let x = element.value(bits);
    let far = element.round(far_off(x));
    if element.value(far).is_finite() {
        far
    } else {
        element.round(-65504.0f32.copysign(x))
    }
}
