//! What an image read from the disk cache must look like before the driver
//! sees it. The driver trusts a CUBIN's headers: one cut short, with its
//! checksum recomputed, takes the process down by a signal when loaded, and
//! so would every later process that found it. A CUBIN must be a whole
//! 64-bit little-endian ELF file for `EM_CUDA` whose section and program
//! headers, and every section and segment they describe, lie inside the
//! file, built for exactly the architecture its cache key names; PTX must be
//! text whose `.target` is that architecture. Anything else is a
//! [`BadImage`], and the caller deletes the entry and compiles anew.

use kernels_gen::Arch;

/// `e_machine` of CUDA ELF files.
const EM_CUDA: u16 = 190;
/// Sizes of the ELF64 file header, a section header and a program header.
const EHDR_SIZE: usize = 64;
const SHDR_SIZE: usize = 64;
const PHDR_SIZE: usize = 56;
/// Section type that occupies no bytes of the file (`.bss`-like).
const SHT_NOBITS: u32 = 8;

/// Why an image cannot be handed to the driver.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BadImage {
    /// Not a 64-bit little-endian ELF file of version 1.
    #[error("not a 64-bit little-endian ELF file")]
    NotElf,
    /// An ELF file for another machine than CUDA.
    #[error("an ELF file for machine {0}, not CUDA ({EM_CUDA})")]
    NotCuda(u16),
    /// A header or what it describes lies (partly) outside the file.
    #[error("the {what} ends at byte {end}, past the file's {len} bytes")]
    Truncated {
        /// Which header or region.
        what: &'static str,
        /// Where it ends.
        end: u64,
        /// The file's length.
        len: usize,
    },
    /// A header size field other than the ELF64 one.
    #[error("the {what} size is {found}, not {expected}")]
    HeaderSize {
        /// Which header.
        what: &'static str,
        /// The size the file states.
        found: u16,
        /// The ELF64 size.
        expected: usize,
    },
    /// Machine code for another architecture than the key names.
    #[error("machine code for sm_{found}, not {expected}")]
    WrongArch {
        /// The architecture in the file (`major * 10 + minor`).
        found: u32,
        /// The one the cache key names.
        expected: String,
    },
    /// PTX that is not text, or whose `.target` is not the key's.
    #[error("PTX without a `.target {0}` line")]
    PtxTarget(String),
}

/// Checks that `bytes` is a CUBIN the driver can be given for `arch`
/// (module docs).
pub(crate) fn check_cubin(bytes: &[u8], arch: Arch) -> Result<(), BadImage> {
    let len = bytes.len();
    if len < EHDR_SIZE
        || bytes[..4] != *b"\x7fELF"
        || bytes[4] != 2
        || bytes[5] != 1
        || bytes[6] != 1
    {
        return Err(BadImage::NotElf);
    }
    let machine = u16_at(bytes, 18);
    if machine != EM_CUDA {
        return Err(BadImage::NotCuda(machine));
    }
    let found = cubin_arch(bytes[8], u32_at(bytes, 48));
    if found != arch.major * 10 + arch.minor {
        return Err(BadImage::WrongArch {
            found,
            expected: arch.sm_name(),
        });
    }
    if u16_at(bytes, 52) as usize != EHDR_SIZE {
        return Err(BadImage::HeaderSize {
            what: "file header",
            found: u16_at(bytes, 52),
            expected: EHDR_SIZE,
        });
    }
    // Program headers: (offset, count, entry size) at 32, 56, 54.
    let table = |what, offset: u64, count: u16, entry_size: u16, expected: usize| {
        if count > 0 && entry_size as usize != expected {
            return Err(BadImage::HeaderSize {
                what,
                found: entry_size,
                expected,
            });
        }
        within(what, offset, count as u64 * expected as u64, len)
    };
    let (phoff, phnum) = (u64_at(bytes, 32), u16_at(bytes, 56));
    table(
        "program header table",
        phoff,
        phnum,
        u16_at(bytes, 54),
        PHDR_SIZE,
    )?;
    for i in 0..phnum as u64 {
        let header = (phoff + i * PHDR_SIZE as u64) as usize;
        // p_offset at 8, p_filesz at 32.
        within(
            "segment",
            u64_at(bytes, header + 8),
            u64_at(bytes, header + 32),
            len,
        )?;
    }
    let (shoff, shnum) = (u64_at(bytes, 40), u16_at(bytes, 60));
    table(
        "section header table",
        shoff,
        shnum,
        u16_at(bytes, 58),
        SHDR_SIZE,
    )?;
    if shnum > 0 && u16_at(bytes, 62) >= shnum {
        return Err(BadImage::Truncated {
            what: "section name table index",
            end: u16_at(bytes, 62) as u64,
            len: shnum as usize,
        });
    }
    for i in 0..shnum as u64 {
        let header = (shoff + i * SHDR_SIZE as u64) as usize;
        // sh_type at 4, sh_offset at 24, sh_size at 32.
        if u32_at(bytes, header + 4) != SHT_NOBITS {
            within(
                "section",
                u64_at(bytes, header + 24),
                u64_at(bytes, header + 32),
                len,
            )?;
        }
    }
    Ok(())
}

/// Checks that `text` is PTX for `arch`: its `.target` directive names the
/// architecture (`sm_XX`, which NVRTC writes for `compute_XX` too).
pub(crate) fn check_ptx(text: &str, arch: Arch) -> Result<(), BadImage> {
    let target = format!(".target {}", arch.sm_name());
    let names_arch = text.lines().any(|line| {
        line.trim()
            .strip_prefix(&target)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([',', ' ', '\t']))
    });
    if names_arch {
        Ok(())
    } else {
        Err(BadImage::PtxTarget(arch.sm_name()))
    }
}

/// The architecture (`major * 10 + minor`) in a CUDA ELF header's
/// `e_flags`: bits 8-15 from ELF ABI version 8 on (CUDA 13), bits 0-7
/// before.
fn cubin_arch(abi_version: u8, flags: u32) -> u32 {
    if abi_version >= 8 {
        (flags >> 8) & 0xff
    } else {
        flags & 0xff
    }
}

/// Fails unless `size` bytes from `offset` lie inside a file of `len` bytes.
fn within(what: &'static str, offset: u64, size: u64, len: usize) -> Result<(), BadImage> {
    match offset.checked_add(size) {
        Some(end) if end <= len as u64 => Ok(()),
        end => Err(BadImage::Truncated {
            what,
            end: end.unwrap_or(u64::MAX),
            len,
        }),
    }
}

// Little-endian fields; the callers check the offsets lie inside the file
// (the file header's by its length; the tables' by `within` first), and a
// read past the end gives 0 rather than panicking all the same.
fn field<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    bytes
        .get(at..at.saturating_add(N))
        .and_then(|b| b.try_into().ok())
        .unwrap_or([0; N])
}
fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(field(bytes, at))
}
fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(field(bytes, at))
}
fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(field(bytes, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `extern "C" __global__ void k(int* p) { p[threadIdx.x] += 1; }`
    /// compiled by NVRTC 13.0.88 for sm_90 and sm_80 (`--gpu-architecture=sm_XX`).
    const SM_90: &[u8] = include_bytes!("../tests/fixtures/k_sm_90.cubin");
    const SM_80: &[u8] = include_bytes!("../tests/fixtures/k_sm_80.cubin");

    #[test]
    fn whole_cubins_of_the_keys_architecture_pass() {
        assert_eq!(check_cubin(SM_90, Arch::SM_90), Ok(()));
        assert_eq!(check_cubin(SM_80, Arch::SM_80), Ok(()));
    }

    #[test]
    fn a_cubin_of_another_architecture_is_refused() {
        assert_eq!(
            check_cubin(SM_80, Arch::SM_90),
            Err(BadImage::WrongArch {
                found: 80,
                expected: "sm_90".into()
            })
        );
        assert!(matches!(
            check_cubin(SM_90, Arch { major: 8, minor: 9 }),
            Err(BadImage::WrongArch { found: 90, .. })
        ));
    }

    #[test]
    fn every_truncation_is_refused() {
        // Every length short of the whole file: the headers lie at the end
        // of NVRTC's CUBINs, so even one byte less loses a header.
        for cut in 0..SM_90.len() {
            assert!(
                check_cubin(&SM_90[..cut], Arch::SM_90).is_err(),
                "cut to {cut} of {} bytes",
                SM_90.len()
            );
        }
    }

    #[test]
    fn a_section_or_segment_pointing_past_the_end_is_refused() {
        let shoff = u64_at(SM_90, 40) as usize;
        let phoff = u64_at(SM_90, 32) as usize;
        // The second section's size, then the first segment's file size,
        // grown past the file.
        for field in [shoff + SHDR_SIZE + 32, phoff + 32] {
            let mut bytes = SM_90.to_vec();
            bytes[field..field + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
            assert!(matches!(
                check_cubin(&bytes, Arch::SM_90),
                Err(BadImage::Truncated { .. })
            ));
        }
        // An offset that overflows when the size is added.
        let mut bytes = SM_90.to_vec();
        let field = shoff + SHDR_SIZE + 24;
        bytes[field..field + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(check_cubin(&bytes, Arch::SM_90).is_err());
        // A header table whose entries are not ELF64's size.
        let mut bytes = SM_90.to_vec();
        bytes[58] = 40;
        assert!(matches!(
            check_cubin(&bytes, Arch::SM_90),
            Err(BadImage::HeaderSize { .. })
        ));
    }

    #[test]
    fn other_files_are_refused() {
        assert_eq!(check_cubin(b"", Arch::SM_90), Err(BadImage::NotElf));
        let random: Vec<u8> = (0u32..4096)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        assert_eq!(check_cubin(&random, Arch::SM_90), Err(BadImage::NotElf));
        let mut x86 = SM_90.to_vec();
        x86[18..20].copy_from_slice(&62u16.to_le_bytes());
        assert_eq!(check_cubin(&x86, Arch::SM_90), Err(BadImage::NotCuda(62)));
        let mut elf32 = SM_90.to_vec();
        elf32[4] = 1;
        assert_eq!(check_cubin(&elf32, Arch::SM_90), Err(BadImage::NotElf));
    }

    #[test]
    fn both_flag_layouts_name_the_architecture() {
        // CUDA 13 (ELF ABI 8) and CUDA 12 (ABI 7) spell sm_90 differently.
        assert_eq!(cubin_arch(8, 0x0600_5a04), 90);
        assert_eq!(cubin_arch(7, 0x005a_005a), 90);
        assert_eq!(cubin_arch(8, 0x0600_7802), 120);
    }

    #[test]
    fn ptx_must_target_the_keys_architecture() {
        let ptx = "//\n.version 9.0\n.target sm_80\n.address_size 64\n";
        assert_eq!(check_ptx(ptx, Arch::SM_80), Ok(()));
        assert!(check_ptx(ptx, Arch::SM_90).is_err());
        assert!(check_ptx(".version 9.0\n.target sm_8", Arch::SM_80).is_err());
        assert!(check_ptx("", Arch::SM_80).is_err());
        assert_eq!(check_ptx(".target sm_90, debug\n", Arch::SM_90), Ok(()));
    }
}
