//! The host half of the multiply-atom self-test ([`super::mma`]): the input (small integers in
//! each element type's bits, packed into the rows the kernel copies), the expected
//! `C = 2 A B^T` per type, computed from the same bits, and the bit-for-bit check, which names
//! the atom of the first wrong element.

use super::mma::{
    MMA_C_ELEMENTS, MMA_ELEMENTS, MMA_INPUT_WORDS, MMA_N, MMA_OUTPUT_LEN, MMA_ROWS,
    MMA_SHARED_BYTES, MMA_THREADS, MMA_TILE_WORDS, mma_entry_points,
};
use anyhow::Result;
use gpu::wgmma::{Bf16, E4M3, E5M2, Element, F16};
use gpu_runtime::cudarc::driver::CudaSlice;
use gpu_runtime::{Gpu, Kernel, LaunchConfig};
use harness::check::{CheckReport, Mismatch, POISON};
use harness::experiment::Fault;
use rand::{Rng, SeedableRng};

/// The largest magnitude of an input element: the integers to it are exact in all four
/// formats (E5M2's 2 mantissa bits hold 3 = 1.1b x 2).
pub const MMA_MAX_INPUT: i32 = 4;

// Every partial sum of `2 A B^T` (at most 2 * 128 products of magnitude 16) is an integer
// FP32 holds exactly.
const _: () = assert!(2 * 128 * MMA_MAX_INPUT * MMA_MAX_INPUT < 1 << 24);

/// An element type with its bits as a number (each is its bits, 8 or 16 of them).
trait Bits: Element {
    fn bits(self) -> u32;
    fn with_bits(bits: u32) -> Self;
}

macro_rules! bits {
    ($($t:ident: $u:ty),*) => {$(
        impl Bits for $t {
            fn bits(self) -> u32 {
                u32::from(self.0)
            }
            fn with_bits(bits: u32) -> Self {
                $t(bits as $u)
            }
        }
    )*};
}
bits!(Bf16: u16, F16: u16, E4M3: u8, E5M2: u8);

/// One operand tile of 64 rows, each of `E::K_PER_ROW` integers from `rng`, as the kernel
/// reads it: each row's elements' bits packed little-endian into 32 words.
fn tile_words<E: Bits>(rng: &mut impl Rng) -> Vec<u32> {
    let per_word = 32 / E::BITS;
    (0..MMA_TILE_WORDS)
        .map(|_| {
            (0..per_word).fold(0u32, |word, i| {
                let v = rng.gen_range(-MMA_MAX_INPUT..=MMA_MAX_INPUT) as f32;
                word | E::from_f32(v).bits() << (i * E::BITS)
            })
        })
        .collect()
}

/// Element `(row, k)` of a tile packed by [`tile_words`], decoded.
fn element<E: Bits>(tile: &[u32], row: u32, k: u32) -> f32 {
    let bit = k * E::BITS;
    let word = tile[(row * 32 + bit / 32) as usize];
    E::with_bits((word >> (bit % 32)) & ((1u32 << E::BITS) - 1)).to_f32()
}

/// `2 A B^T` (64 x 64, row-major) for the tiles packed in `ab` (A, then B `n x k`), in f64
/// (exact: the sums are small integers), as floats.
fn expected_c<E: Bits>(ab: &[u32]) -> Vec<f32> {
    let (a, b) = ab.split_at(MMA_TILE_WORDS as usize);
    let mut c = Vec::with_capacity(MMA_C_ELEMENTS as usize);
    for m in 0..MMA_ROWS {
        for n in 0..MMA_N {
            let dot: f64 = (0..E::K_PER_ROW)
                .map(|k| f64::from(element::<E>(a, m, k)) * f64::from(element::<E>(b, n, k)))
                .sum();
            c.push((2.0 * dot) as f32);
        }
    }
    c
}

/// The kernel's input from `seed`: per type of [`MMA_ELEMENTS`], A and B of integers in
/// `-MMA_MAX_INPUT..=MMA_MAX_INPUT`, in that type's bits.
pub fn mma_inputs(seed: u64) -> Vec<u32> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut x = Vec::with_capacity(MMA_INPUT_WORDS as usize);
    for k in 0..MMA_ELEMENTS.len() {
        for _ in 0..2 {
            x.extend(match k {
                0 => tile_words::<Bf16>(&mut rng),
                1 => tile_words::<F16>(&mut rng),
                2 => tile_words::<E4M3>(&mut rng),
                _ => tile_words::<E5M2>(&mut rng),
            });
        }
    }
    debug_assert_eq!(x.len(), MMA_INPUT_WORDS as usize);
    x
}

/// What the kernel must write for input `x`: each type's `2 A B^T`, in order.
pub fn expected_mma(x: &[u32]) -> Vec<f32> {
    let per_type = 2 * MMA_TILE_WORDS as usize;
    let mut c = Vec::with_capacity(MMA_OUTPUT_LEN as usize);
    for (k, ab) in x.chunks(per_type).enumerate() {
        c.extend(match k {
            0 => expected_c::<Bf16>(ab),
            1 => expected_c::<F16>(ab),
            2 => expected_c::<E4M3>(ab),
            _ => expected_c::<E5M2>(ab),
        });
    }
    debug_assert_eq!(c.len(), MMA_OUTPUT_LEN as usize);
    c
}

/// Compares the kernel's output with [`expected_mma`]'s, bit for bit; the first failure
/// names its type's atom (its index is `type * 4096 + 64 row + column`).
pub fn check_mma(out: &[f32], expected: &[f32]) -> CheckReport {
    let mut report = CheckReport::default();
    for (index, (&got, &want)) in out.iter().zip(expected).enumerate() {
        if got.to_bits() == want.to_bits() {
            continue;
        }
        if got.to_bits() == POISON.to_bits() {
            report.unwritten += 1;
        } else if !got.is_finite() {
            report.non_finite += 1;
        } else {
            report.wrong += 1;
        }
        report.first_failure.get_or_insert(Mismatch {
            index,
            got: f64::from(got),
            expected: f64::from(want),
            what: Some(MMA_ELEMENTS[index / MMA_C_ELEMENTS as usize]),
        });
    }
    report.passed = report.first_failure.is_none() && out.len() == expected.len();
    report
}

/// The kernel's input and expected output, and its buffers on the GPU.
pub struct MmaProblem {
    x_device: CudaSlice<u32>,
    kernel: Kernel<(*const u32, *mut f32)>,
    out: CudaSlice<f32>,
    expected: Vec<f32>,
}

impl MmaProblem {
    /// Uploads the input (from `seed`) and allocates the output. Only where the sm_90a
    /// module is loaded: the kernel is in no other.
    pub fn new(gpu: &Gpu, seed: u64) -> Result<MmaProblem> {
        let x = mma_inputs(seed);
        Ok(MmaProblem {
            x_device: gpu.upload(&x, "the multiply-atom tiles")?,
            kernel: gpu.entry_point(mma_entry_points::selftest_mma)?,
            out: gpu.zeros(MMA_OUTPUT_LEN as usize, "the multiply-atom outputs")?,
            expected: expected_mma(&x),
        })
    }

    /// Fills the output with the poison.
    pub fn poison(&mut self, gpu: &Gpu) -> Result<()> {
        gpu.fill_words(&mut self.out, POISON.to_bits(), "the multiply-atom outputs")?;
        Ok(())
    }

    /// Queues the kernel.
    pub fn launch(&mut self, gpu: &Gpu) -> Result<()> {
        let config = LaunchConfig::linear(1, MMA_THREADS, MMA_SHARED_BYTES);
        // SAFETY: selftest_mma(x, out): one block of MMA_THREADS with MMA_SHARED_BYTES of
        // dynamic shared memory; `x` holds MMA_INPUT_WORDS words, `out` MMA_OUTPUT_LEN floats.
        unsafe {
            self.kernel
                .launch(gpu, config, (&self.x_device, &mut self.out))?
        };
        Ok(())
    }

    /// Downloads the output and checks it.
    pub fn check(&mut self, gpu: &Gpu) -> Result<CheckReport> {
        let out = gpu.download(&self.out, "the multiply-atom outputs")?;
        Ok(check_mma(&out, &self.expected))
    }

    /// Plants `fault` (the check runs in index order): one element of the E4M3 result
    /// (row 37, column 21) off by one, or the whole E5M2 result unwritten.
    pub fn plant(&mut self, gpu: &Gpu, fault: Fault) -> Result<usize> {
        let (start, values) = match fault {
            Fault::WrongElement => {
                let at = (2 * MMA_C_ELEMENTS + 37 * MMA_N + 21) as usize;
                (at, vec![self.expected[at] + 1.0])
            }
            Fault::UnwrittenTile => {
                let start = (3 * MMA_C_ELEMENTS) as usize;
                (start, vec![POISON; self.expected.len() - start])
            }
        };
        gpu.upload_into(&values, &mut self.out, start, "a fault")?;
        Ok(start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu::wgmma::{Accumulator, SwizzledKMajor};

    #[test]
    fn inputs_are_exact_small_integers_in_every_format() {
        for v in -MMA_MAX_INPUT..=MMA_MAX_INPUT {
            let v = v as f32;
            assert_eq!(Bf16::from_f32(v).to_f32(), v);
            assert_eq!(F16::from_f32(v).to_f32(), v);
            assert_eq!(E4M3::from_f32(v).to_f32(), v);
            assert_eq!(E5M2::from_f32(v).to_f32(), v);
        }
        let x = mma_inputs(5);
        assert_eq!(x.len(), MMA_INPUT_WORDS as usize);
        let per_type = 2 * MMA_TILE_WORDS as usize;
        let mut seen = std::collections::BTreeSet::new();
        for row in 0..64 {
            for k in 0..128 {
                let v = element::<E4M3>(&x[2 * per_type..], row, k);
                assert!(v.fract() == 0.0 && v.abs() <= MMA_MAX_INPUT as f32, "{v}");
                seen.insert(v as i32);
            }
        }
        assert_eq!(seen.len(), 2 * MMA_MAX_INPUT as usize + 1);
    }

    /// The packing puts element `k` of a row at byte `k * BITS / 8`, as the kernel's words
    /// land in the swizzled tile: a model of the fill (word `w` of row `r` at
    /// `byte_offset(r, 32 w / BITS)`) read back through `byte_offset` gives every element.
    #[test]
    fn the_fill_puts_each_element_where_byte_offset_says() {
        fn model<E: Bits>(tile: &[u32]) {
            type T<E> = SwizzledKMajor<64, E>;
            let mut smem = vec![0u8; T::<E>::BYTES as usize];
            for (j, &word) in tile.iter().enumerate() {
                let (row, w) = (j as u32 / 32, j as u32 % 32);
                let at = T::<E>::byte_offset(row, w * 32 / E::BITS) as usize;
                assert_eq!(at % 4, 0);
                smem[at..at + 4].copy_from_slice(&word.to_le_bytes());
            }
            let bytes = E::BITS as usize / 8;
            for row in 0..64 {
                for k in 0..E::K_PER_ROW {
                    let at = T::<E>::byte_offset(row, k) as usize;
                    let mut raw = [0u8; 4];
                    raw[..bytes].copy_from_slice(&smem[at..at + bytes]);
                    let got = E::with_bits(u32::from_le_bytes(raw)).to_f32();
                    assert_eq!(got, element::<E>(tile, row, k), "({row}, {k})");
                }
            }
        }
        let x = mma_inputs(9);
        let t = MMA_TILE_WORDS as usize;
        model::<Bf16>(&x[..t]);
        model::<F16>(&x[3 * t..4 * t]);
        model::<E4M3>(&x[4 * t..5 * t]);
        model::<E5M2>(&x[7 * t..8 * t]);
    }

    /// The expectation on a known input: element (m, n) of each C is twice row m of A dotted
    /// with row n of B; and the kernel's stores (`Accumulator::position`) cover each C once.
    #[test]
    fn the_expectation_is_twice_a_times_b_transposed() {
        let x = mma_inputs(17);
        let c = expected_mma(&x);
        let t = MMA_TILE_WORDS as usize;
        let (a, b) = (&x[4 * t..5 * t], &x[5 * t..6 * t]);
        let dot: f32 = (0..128)
            .map(|k| element::<E4M3>(a, 5, k) * element::<E4M3>(b, 60, k))
            .sum();
        assert_eq!(c[(2 * MMA_C_ELEMENTS + 5 * 64 + 60) as usize], 2.0 * dot);
        let (a, b) = (&x[..t], &x[t..2 * t]);
        let dot: f32 = (0..64)
            .map(|k| element::<Bf16>(a, 63, k) * element::<Bf16>(b, 0, k))
            .sum();
        assert_eq!(c[(63 * 64) as usize], 2.0 * dot);
        assert!(c.iter().all(|v| v.fract() == 0.0));
        let mut seen = vec![false; MMA_C_ELEMENTS as usize];
        for thread in 0..MMA_THREADS {
            for i in 0..32 {
                let (row, col) = Accumulator::<32>::position(thread, i);
                assert!(row < MMA_ROWS && col < MMA_N);
                assert!(!std::mem::replace(
                    &mut seen[(row * MMA_N + col) as usize],
                    true
                ));
            }
        }
    }

    #[test]
    fn the_check_passes_the_expectation_and_names_the_atom() {
        let x = mma_inputs(3);
        let expected = expected_mma(&x);
        assert!(check_mma(&expected, &expected).passed);
        // A stale accumulator that was added to (scale-d ignored): every element off by 1/2.
        let stale: Vec<f32> = expected.iter().map(|v| v + 0.5).collect();
        let report = check_mma(&stale, &expected);
        assert_eq!(report.wrong, MMA_OUTPUT_LEN as usize);
        assert_eq!(report.first_failure.unwrap().what, Some(MMA_ELEMENTS[0]));
        let mut out = expected.clone();
        let at = (2 * MMA_C_ELEMENTS + 37 * MMA_N + 21) as usize;
        out[at] += 1.0;
        let report = check_mma(&out, &expected);
        let first = report.first_failure.unwrap();
        assert_eq!((report.wrong, first.index), (1, at));
        assert_eq!(first.what, Some("Wgmma<E4M3, 64> (m64n64k32 e4m3)"));
        let mut out = expected.clone();
        out[3 * MMA_C_ELEMENTS as usize..].fill(POISON);
        let report = check_mma(&out, &expected);
        assert_eq!(report.unwritten, MMA_C_ELEMENTS as usize);
        assert!(report.summary().contains("e5m2"), "{}", report.summary());
    }
}
