//! The element types a `wgmma` multiplies: BF16 and FP16 (16 bits, k16 per instruction, B
//! K-major or MN-major) and the two FP8 formats E4M3 and E5M2 (8 bits, k32, both operands
//! K-major only: the PTX ISA has no transpose for 8-bit types). Each is its bits
//! (`repr(transparent)`), with exact conversions for the host's references.
//!
//! What follows from the element size is derived here once: elements of K in one 128-byte
//! swizzled row ([`Element::K_PER_ROW`]), per instruction ([`Element::K_PER_MMA`]), and
//! whether B may be MN-major ([`SixteenBit`]).

mod sealed {
    pub trait Sealed {}
}

/// An input type of the tensor cores. Sealed: the instructions exist for these four only.
pub trait Element:
    sealed::Sealed + Copy + Default + PartialEq + core::fmt::Debug + 'static
{
    /// Bits of one element.
    const BITS: u32;
    /// The PTX type name (`bf16`, `f16`, `e4m3`, `e5m2`).
    const PTX: &'static str;
    /// Elements of K in one 128-byte swizzled row: what one k-tile (four instructions) covers.
    const K_PER_ROW: u32 = 1024 / Self::BITS;
    /// Elements of K one `wgmma.mma_async` multiplies (32 bytes).
    const K_PER_MMA: u32 = 256 / Self::BITS;
    /// The nearest value (ties to even; the 8-bit types saturate to their largest finite
    /// value, as `cvt.rn.satfinite` does; NaN stays NaN).
    fn from_f32(x: f32) -> Self;
    /// The value, exactly.
    fn to_f32(self) -> f32;
}

/// A 16-bit element: B may be stored MN-major, and accumulators pack into A fragments.
pub trait SixteenBit: Element {
    /// The element with these bits.
    fn from_bits(bits: u16) -> Self;
    /// Its bits.
    fn to_bits(self) -> u16;
    /// Two floats rounded to this type in one 32-bit register, `lo` in the low half
    /// (`cvt.rn.bf16x2.f32` / `cvt.rn.f16x2.f32`).
    #[cfg(target_feature = "sm_90a")]
    fn pack2(lo: f32, hi: f32) -> u32;
}

/// A bfloat16 value (1 sign, 8 exponent, 7 mantissa bits) as its bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(transparent)]
pub struct Bf16(pub u16);

/// An IEEE binary16 value (1 sign, 5 exponent, 10 mantissa bits) as its bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(transparent)]
pub struct F16(pub u16);

/// An FP8 E4M3 value (OCP "FN": 4 exponent bits, bias 7, 3 mantissa bits, no infinities,
/// largest finite 448, NaN `S.1111.111`) as its bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(transparent)]
pub struct E4M3(pub u8);

/// An FP8 E5M2 value (5 exponent bits, bias 15, 2 mantissa bits, IEEE-like infinities and
/// NaNs, largest finite 57344) as its bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(transparent)]
pub struct E5M2(pub u8);

/// A binary floating-point format of at most 16 bits: exponent and mantissa widths, whether
/// all-ones exponents are infinities/NaNs (IEEE) or only `all ones` is NaN (E4M3), and what an
/// overflow becomes.
struct MiniFloat {
    exponent_bits: u32,
    mantissa_bits: u32,
    ieee_specials: bool,
    saturate: bool,
}

impl MiniFloat {
    const fn bias(&self) -> i32 {
        (1 << (self.exponent_bits - 1)) - 1
    }

    /// The largest finite magnitude's code.
    const fn max_finite(&self) -> u32 {
        let all = (1u32 << (self.exponent_bits + self.mantissa_bits)) - 1;
        if self.ieee_specials {
            all - (1 << self.mantissa_bits) // exponent all ones minus one, mantissa all ones
        } else {
            all - 1 // all ones is NaN
        }
    }

    const fn nan(&self) -> u32 {
        if self.ieee_specials {
            ((1 << self.exponent_bits) - 1) << self.mantissa_bits | 1 << (self.mantissa_bits - 1)
        } else {
            (1u32 << (self.exponent_bits + self.mantissa_bits)) - 1
        }
    }

    const fn sign_bit(&self) -> u32 {
        1 << (self.exponent_bits + self.mantissa_bits)
    }

    /// `x` rounded to nearest, ties to even.
    const fn encode(&self, x: f32) -> u32 {
        let bits = x.to_bits();
        let sign = if bits >> 31 == 1 { self.sign_bit() } else { 0 };
        if x.is_nan() {
            return sign | self.nan();
        }
        let overflow = if self.saturate || !self.ieee_specials {
            self.max_finite()
        } else {
            ((1 << self.exponent_bits) - 1) << self.mantissa_bits
        };
        if x.is_infinite() {
            return sign | overflow;
        }
        let exp32 = ((bits >> 23) & 0xFF) as i32;
        let man32 = bits & 0x7F_FFFF;
        if exp32 == 0 {
            return sign; // f32 subnormals are below half of every format's smallest value
        }
        let full = man32 | 0x80_0000;
        let e = exp32 - 127 + self.bias(); // the biased exponent in this format
        // Keep `mantissa_bits` bits below the leading one (normal) or fewer (subnormal).
        let shift = if e >= 1 {
            23 - self.mantissa_bits as i32
        } else {
            23 - self.mantissa_bits as i32 + 1 - e
        };
        if shift > 25 {
            return sign;
        }
        let shift = shift as u32;
        let kept = full >> shift;
        let rest = full & ((1 << shift) - 1);
        let half = 1 << (shift - 1);
        let rounded = if rest > half || (rest == half && kept & 1 == 1) {
            kept + 1
        } else {
            kept
        };
        // Normal: drop the leading one into the exponent field (a carry moves it on by one).
        let code = if e >= 1 {
            ((e as u32) << self.mantissa_bits) + rounded - (1 << self.mantissa_bits)
        } else {
            rounded
        };
        if code > self.max_finite() {
            sign | overflow
        } else {
            sign | code
        }
    }

    const fn decode(&self, code: u32) -> f32 {
        let negative = code & self.sign_bit() != 0;
        let magnitude = code & (self.sign_bit() - 1);
        let exp = magnitude >> self.mantissa_bits;
        let man = magnitude & ((1 << self.mantissa_bits) - 1);
        let all_ones = (1 << self.exponent_bits) - 1;
        let value = if self.ieee_specials && exp == all_ones {
            if man == 0 { f32::INFINITY } else { f32::NAN }
        } else if !self.ieee_specials && magnitude == self.nan() {
            f32::NAN
        } else {
            // Exact in f32: at most 11 significant bits, exponents well inside f32's.
            let (significand, power) = if exp == 0 {
                (man, 1 - self.bias() - self.mantissa_bits as i32)
            } else {
                (
                    man | 1 << self.mantissa_bits,
                    exp as i32 - self.bias() - self.mantissa_bits as i32,
                )
            };
            significand as f32 * pow2(power)
        };
        if negative { -value } else { value }
    }
}

/// `2^p` for the exponents these formats reach (normal f32 range).
const fn pow2(p: i32) -> f32 {
    f32::from_bits(((p + 127) as u32) << 23)
}

const FP16: MiniFloat = MiniFloat {
    exponent_bits: 5,
    mantissa_bits: 10,
    ieee_specials: true,
    saturate: false,
};
const FP8_E4M3: MiniFloat = MiniFloat {
    exponent_bits: 4,
    mantissa_bits: 3,
    ieee_specials: false,
    saturate: true,
};
const FP8_E5M2: MiniFloat = MiniFloat {
    exponent_bits: 5,
    mantissa_bits: 2,
    ieee_specials: true,
    saturate: true,
};

impl Bf16 {
    /// `x` rounded to the nearest BF16 (ties to even; NaN stays NaN).
    pub const fn from_f32(x: f32) -> Bf16 {
        let bits = x.to_bits();
        if x.is_nan() {
            return Bf16(((bits >> 16) | 0x40) as u16);
        }
        let rounding = 0x7FFF + ((bits >> 16) & 1);
        Bf16((bits.wrapping_add(rounding) >> 16) as u16)
    }

    /// The value, exactly.
    pub const fn to_f32(self) -> f32 {
        f32::from_bits((self.0 as u32) << 16)
    }
}

impl F16 {
    /// `x` rounded to the nearest FP16 (ties to even; overflow to infinity; NaN stays NaN).
    pub const fn from_f32(x: f32) -> F16 {
        F16(FP16.encode(x) as u16)
    }

    /// The value, exactly.
    pub const fn to_f32(self) -> f32 {
        FP16.decode(self.0 as u32)
    }
}

impl E4M3 {
    /// `x` rounded to the nearest E4M3 (ties to even, saturating at ±448).
    pub const fn from_f32(x: f32) -> E4M3 {
        E4M3(FP8_E4M3.encode(x) as u8)
    }

    /// The value, exactly.
    pub const fn to_f32(self) -> f32 {
        FP8_E4M3.decode(self.0 as u32)
    }
}

impl E5M2 {
    /// `x` rounded to the nearest E5M2 (ties to even, saturating at ±57344).
    pub const fn from_f32(x: f32) -> E5M2 {
        E5M2(FP8_E5M2.encode(x) as u8)
    }

    /// The value, exactly.
    pub const fn to_f32(self) -> f32 {
        FP8_E5M2.decode(self.0 as u32)
    }
}

macro_rules! element {
    ($t:ident, $bits:literal, $ptx:literal) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const BITS: u32 = $bits;
            const PTX: &'static str = $ptx;
            #[inline(always)]
            fn from_f32(x: f32) -> Self {
                $t::from_f32(x)
            }
            #[inline(always)]
            fn to_f32(self) -> f32 {
                $t::to_f32(self)
            }
        }
    };
}

element!(Bf16, 16, "bf16");
element!(F16, 16, "f16");
element!(E4M3, 8, "e4m3");
element!(E5M2, 8, "e5m2");

impl SixteenBit for Bf16 {
    #[inline(always)]
    fn from_bits(bits: u16) -> Self {
        Bf16(bits)
    }
    #[inline(always)]
    fn to_bits(self) -> u16 {
        self.0
    }
    #[cfg(target_feature = "sm_90a")]
    #[inline(always)]
    fn pack2(lo: f32, hi: f32) -> u32 {
        crate::ptx::pack_bf16x2(lo, hi)
    }
}

impl SixteenBit for F16 {
    #[inline(always)]
    fn from_bits(bits: u16) -> Self {
        F16(bits)
    }
    #[inline(always)]
    fn to_bits(self) -> u16 {
        self.0
    }
    #[cfg(target_feature = "sm_90a")]
    #[inline(always)]
    fn pack2(lo: f32, hi: f32) -> u32 {
        crate::ptx::pack_f16x2(lo, hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_rounds_to_nearest_even() {
        assert_eq!(Bf16::from_f32(1.0).0, 0x3F80);
        assert_eq!(Bf16::from_f32(1.0).to_f32(), 1.0);
        // 1 + 2^-8 is half-way between 1 and 1 + 2^-7: to even (1).
        assert_eq!(Bf16::from_f32(1.0 + 1.0 / 256.0).to_f32(), 1.0);
        assert_eq!(
            Bf16::from_f32(1.0 + 3.0 / 256.0).to_f32(),
            1.0 + 2.0 / 128.0
        );
        assert_eq!(Bf16::from_f32(-256.0).to_f32(), -256.0);
        assert!(Bf16::from_f32(f32::NAN).to_f32().is_nan());
        assert_eq!(Bf16::from_f32(f32::INFINITY).to_f32(), f32::INFINITY);
    }

    #[test]
    fn fp16_matches_ieee_binary16() {
        assert_eq!(F16::from_f32(1.0).0, 0x3C00);
        assert_eq!(F16::from_f32(-2.0).0, 0xC000);
        assert_eq!(F16::from_f32(65504.0).0, 0x7BFF);
        assert_eq!(F16::from_f32(65520.0).0, 0x7C00, "rounds up to infinity");
        assert_eq!(F16::from_f32(65519.0).0, 0x7BFF);
        assert_eq!(F16::from_f32(f32::INFINITY).0, 0x7C00);
        assert!(F16::from_f32(f32::NAN).to_f32().is_nan());
        // Smallest subnormal 2^-24; half of it ties to even (zero), a bit more rounds up.
        assert_eq!(F16::from_f32(pow2(-24)).0, 1);
        assert_eq!(F16::from_f32(pow2(-25)).0, 0);
        assert_eq!(F16::from_f32(pow2(-25) * 1.5).0, 1);
        assert_eq!(F16(1).to_f32(), pow2(-24));
        assert_eq!(F16(0x3FF).to_f32(), 1023.0 * pow2(-24));
        // 1 + 2^-11 ties to even (1); 1 + 3 * 2^-11 to 1 + 2^-9.
        assert_eq!(F16::from_f32(1.0 + pow2(-11)).0, 0x3C00);
        assert_eq!(F16::from_f32(1.0 + 3.0 * pow2(-11)).0, 0x3C02);
        // Every finite code decodes and encodes back to itself.
        for code in 0..=0xFFFFu32 {
            let h = F16(code as u16);
            let x = h.to_f32();
            if x.is_finite() {
                assert_eq!(F16::from_f32(x), h, "{code:#06x}");
            }
        }
    }

    #[test]
    fn fp8_formats_round_trip_and_saturate() {
        assert_eq!(E4M3::from_f32(448.0).0, 0x7E);
        assert_eq!(E4M3::from_f32(1.0e6).0, 0x7E);
        assert_eq!(E4M3::from_f32(-1.0e6).0, 0xFE);
        assert!(E4M3(0x7F).to_f32().is_nan());
        assert_eq!(E4M3::from_f32(1.0).0, 0x38);
        assert_eq!(E4M3(1).to_f32(), pow2(-9));
        assert_eq!(E5M2::from_f32(57344.0).0, 0x7B);
        assert_eq!(E5M2::from_f32(f32::INFINITY).0, 0x7B);
        assert_eq!(E5M2(0x7C).to_f32(), f32::INFINITY);
        assert_eq!(E5M2::from_f32(1.0).0, 0x3C);
        assert_eq!(E5M2(1).to_f32(), pow2(-16));
        for code in 0..=0xFFu32 {
            let (a, b) = (E4M3(code as u8), E5M2(code as u8));
            if a.to_f32().is_finite() {
                assert_eq!(E4M3::from_f32(a.to_f32()), a, "e4m3 {code:#04x}");
            }
            if b.to_f32().is_finite() {
                assert_eq!(E5M2::from_f32(b.to_f32()), b, "e5m2 {code:#04x}");
            }
        }
        // Ties to even between 1 (0x38) and 1.125 (0x39): 1.0625 goes to 1.
        assert_eq!(E4M3::from_f32(1.0625).0, 0x38);
        assert_eq!(E4M3::from_f32(1.1875).0, 0x3A);
    }

    #[test]
    fn k_per_row_and_per_instruction_follow_the_element_size() {
        assert_eq!((Bf16::K_PER_ROW, Bf16::K_PER_MMA), (64, 16));
        assert_eq!((F16::K_PER_ROW, F16::K_PER_MMA), (64, 16));
        assert_eq!((E4M3::K_PER_ROW, E4M3::K_PER_MMA), (128, 32));
        assert_eq!((E5M2::K_PER_ROW, E5M2::K_PER_MMA), (128, 32));
    }
}
