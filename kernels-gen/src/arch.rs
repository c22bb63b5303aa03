//! The architectures the generated code targets, and the NVRTC options
//! that compile it for one of them.

/// A CUDA compute capability, e.g. `sm_90` for Hopper.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Arch {
    /// Major version (9 for Hopper).
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

impl Arch {
    /// Turing (T4, RTX 20).
    pub const SM_75: Arch = Arch { major: 7, minor: 5 };
    /// Ampere (A100).
    pub const SM_80: Arch = Arch { major: 8, minor: 0 };
    /// Ampere (RTX 30, A10, A40).
    pub const SM_86: Arch = Arch { major: 8, minor: 6 };
    /// Ada (L4, L40, RTX 40).
    pub const SM_89: Arch = Arch { major: 8, minor: 9 };
    /// Hopper (H100, H200): the architecture the defaults are tuned for,
    /// and the first with bulk copies (TMA) and mbarriers, which the
    /// pipelined single pass needs.
    pub const SM_90: Arch = Arch { major: 9, minor: 0 };
    /// Blackwell (B200).
    pub const SM_100: Arch = Arch {
        major: 10,
        minor: 0,
    };
    /// Blackwell (RTX 50, RTX PRO).
    pub const SM_120: Arch = Arch {
        major: 12,
        minor: 0,
    };
    /// The oldest architecture the generated code supports, and the oldest
    /// CUDA 13 compiles for.
    pub const MIN_SUPPORTED: Arch = Arch::SM_75;
    /// Every architecture CUDA 13 compiles for, oldest first: one embedded
    /// source serves them all (Hopper-only code sits behind `__CUDA_ARCH__`
    /// guards).
    pub const CUDA_13: [Arch; 7] = [
        Arch::SM_75,
        Arch::SM_80,
        Arch::SM_86,
        Arch::SM_89,
        Arch::SM_90,
        Arch::SM_100,
        Arch::SM_120,
    ];

    /// Whether the pipelined pass over segment offsets has more than one
    /// heads warp here ([`crate::pipelined_heads_warps`]), as its row of the
    /// tuning table says ([`crate::tuning::ArchTuning::pipelined_heads_warps`]):
    /// on sm_90 only. Its blocks of more than 384 threads leave 128
    /// registers a thread, which the squads of some operators exceed
    /// elsewhere (ptxas 13.0: the 2×2 matrix product spilled 28 bytes on
    /// sm_120, the 24-byte statistics 8 on sm_100; on sm_90 they take 95
    /// and 126).
    pub fn has_pipelined_heads_warps(self) -> bool {
        crate::tuning::arch_tuning(self).pipelined_heads_warps
    }

    /// Parses `sm_90`, `compute_90`, `90` or `9.0`.
    pub fn parse(text: &str) -> Option<Arch> {
        let t = text.trim();
        let digits = t
            .strip_prefix("sm_")
            .or_else(|| t.strip_prefix("compute_"))
            .unwrap_or(t);
        if let Some((major, minor)) = digits.split_once('.') {
            return Some(Arch {
                major: major.parse().ok()?,
                minor: minor.parse().ok()?,
            });
        }
        if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let (major, minor) = digits.split_at(digits.len() - 1);
        Some(Arch {
            major: major.parse().ok()?,
            minor: minor.parse().ok()?,
        })
    }

    /// Whether this architecture has the Hopper features the pipelined
    /// single pass is built from (bulk copies, mbarriers with transaction
    /// counts).
    pub fn has_bulk_copies(self) -> bool {
        self >= Arch::SM_90
    }

    /// `sm_90`-style name, as ptxas spells it.
    pub fn sm_name(self) -> String {
        format!("sm_{}{}", self.major, self.minor)
    }

    /// `compute_90`-style name, as NVRTC's `--gpu-architecture` takes it.
    pub fn compute_name(self) -> String {
        format!("compute_{}{}", self.major, self.minor)
    }

    /// The value of `__CUDA_ARCH__` on this architecture (900 for `sm_90`).
    pub fn cuda_arch_macro(self) -> u32 {
        self.major * 100 + self.minor * 10
    }
}

/// NVRTC options for compiling generated source for `arch`.
///
/// Floating point stays IEEE (`--ftz=false --prec-div=true --prec-sqrt=true`):
/// the operator's `+ - * /` already use `__fadd_rn`-style intrinsics, which
/// the compiler never contracts into FMAs, so results match the CPU backend
/// operation for operation.
///
/// `--minimal` leaves out the CUDA runtime's declarations (textures,
/// device-side launches, runtime types), which the generated programs never
/// use: the front end has less to parse (about 5% of a pipelined kernel's
/// compile), and the CUBIN is byte for byte the same.
pub fn nvrtc_options(arch: Arch) -> Vec<String> {
    let mut options = semantic_nvrtc_options(arch);
    options.extend([
        "--device-as-default-execution-space".to_string(),
        "--minimal".to_string(),
    ]);
    options
}

/// The NVRTC options generated source needs, for `arch`, and no others: the
/// virtual architecture, C++17, and IEEE floating point (see
/// [`nvrtc_options`]). Programs of the device API
/// ([`device_api_source`](crate::device_api_source)) with users' own
/// kernels compile with these.
pub fn semantic_nvrtc_options(arch: Arch) -> Vec<String> {
    vec![
        format!("--gpu-architecture={}", arch.compute_name()),
        "--std=c++17".to_string(),
        "--ftz=false".to_string(),
        "--prec-div=true".to_string(),
        "--prec-sqrt=true".to_string(),
    ]
}

/// NVRTC options for a CUBIN of generated source for exactly `arch`
/// (`--gpu-architecture=sm_XX`: NVRTC runs ptxas itself, and the driver
/// loads the result without compiling anything); otherwise as
/// [`nvrtc_options`].
pub fn nvrtc_cubin_options(arch: Arch) -> Vec<String> {
    let mut options = nvrtc_options(arch);
    options[0] = format!("--gpu-architecture={}", arch.sm_name());
    options
}

/// The NVRTC option of a quick build: NVRTC's fast-compile mode (NVRTC
/// 12.8 and newer), which leaves out its costlier optimizations. A first
/// scan that finds its kernel cold runs on a quick build of it while the
/// optimized one compiles on another thread
/// (`scan_runtime::Tuning::background_compile`). It changes how fast the
/// code runs, never what it computes: the operator's arithmetic is in
/// `__fadd_rn`-style intrinsics and the library's order of combines is in
/// its source. `mid`, by measurement (BENCHMARKS.md): `max` compiled no
/// faster, `min` barely faster than a full build. (For a PTX target the
/// driver's own compile of the PTX stays a full one.)
pub const QUICK_BUILD_OPTION: &str = "--Ofast-compile=mid";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn architectures_parse_in_every_spelling() {
        for text in ["sm_90", "compute_90", "90", "9.0", " sm_90 "] {
            assert_eq!(Arch::parse(text), Some(Arch::SM_90), "{text}");
        }
        assert_eq!(Arch::parse("sm_120"), Some(Arch::SM_120));
        assert_eq!(Arch::parse("75"), Some(Arch::SM_75));
        assert_eq!(Arch::parse("compute_86"), Some(Arch::SM_86));
        for bad in ["", "9", "sm_", "sm_9x", "ninety", "9.x"] {
            assert_eq!(Arch::parse(bad), None, "{bad}");
        }
        for arch in Arch::CUDA_13 {
            assert_eq!(Arch::parse(&arch.sm_name()), Some(arch));
            assert_eq!(Arch::parse(&arch.compute_name()), Some(arch));
        }
        assert!(Arch::SM_90.has_bulk_copies() && Arch::SM_120.has_bulk_copies());
        assert!(!Arch::SM_89.has_bulk_copies());
    }
}
