//! Compiling generated programs with NVRTC, with the disk cache in front.

use crate::cache::{CacheKey, DiskCache};
use crate::error::{Result, ScanError};
use crate::image_check;
use crate::toolkit;
use cudarc::nvrtc;
use kernels_gen::Arch;
use std::path::PathBuf;

/// Whether an NVRTC the driver can use is loaded ([`toolkit::nvrtc`]).
pub fn nvrtc_present() -> bool {
    toolkit::nvrtc().is_ok()
}

/// The version of the NVRTC in use, `(major, minor)`.
pub fn nvrtc_version() -> Result<(i32, i32)> {
    let v = toolkit::nvrtc()?.version();
    Ok((v.major as i32, v.minor as i32))
}

/// A compiled program: a CUBIN for one exact architecture, which the
/// driver loads as it is, or PTX, which the driver compiles for the device
/// when the module is loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Image {
    /// Machine code for the architecture the options named (`sm_XX`).
    Cubin(Vec<u8>),
    /// PTX for a virtual architecture (`compute_XX`).
    Ptx(String),
}

impl Image {
    /// The image in the form `CudaContext::load_module` takes.
    pub fn to_module_image(&self) -> nvrtc::Ptx {
        match self {
            Image::Cubin(bytes) => nvrtc::Ptx::from_binary(bytes.clone()),
            Image::Ptx(text) => nvrtc::Ptx::from_src(text.clone()),
        }
    }

    /// The image's bytes, as the disk cache keeps them.
    fn bytes(&self) -> &[u8] {
        match self {
            Image::Cubin(bytes) => bytes,
            Image::Ptx(text) => text.as_bytes(),
        }
    }
}

/// What a compile produced, and whether it came from the disk cache.
pub struct Compiled {
    /// The program's image.
    pub image: Image,
    /// True when read from the disk cache.
    pub from_disk: bool,
}

/// Whether NVRTC `options` ask for a CUBIN (`--gpu-architecture=sm_XX`)
/// rather than PTX (`compute_XX`).
fn wants_cubin(options: &[String]) -> bool {
    options
        .iter()
        .any(|o| o.starts_with("--gpu-architecture=sm_"))
}

/// Compiles `source` for `arch` with NVRTC `options` (from
/// [`kernels_gen::nvrtc_options`] for PTX or [`kernels_gen::nvrtc_cubin_options`]
/// for a CUBIN), through the disk cache. `driver_version` is part of the
/// cache key (0 when compiling without a driver).
pub fn compile(
    op: &'static str,
    source: &str,
    options: Vec<String>,
    arch: Arch,
    driver_version: i32,
    disk: &DiskCache,
) -> Result<Compiled> {
    let nvrtc = toolkit::nvrtc()?;
    let key = CacheKey::new(source, &options, arch, driver_version, nvrtc.version());
    let cubin = wants_cubin(&options);
    if let Some(image) = cached_image(disk, &key, cubin, arch) {
        return Ok(Compiled {
            image,
            from_disk: true,
        });
    }
    let image = compile_uncached(op, source, &options)?;
    disk.store(&key, image.bytes());
    Ok(Compiled {
        image,
        from_disk: false,
    })
}

static COMPILES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many programs NVRTC has compiled in this process (cache reads not
/// counted): `examples/scan_stress` checks with it that scanners built at
/// once compile each kernel once.
pub fn compiles() -> u64 {
    COMPILES.load(std::sync::atomic::Ordering::Relaxed)
}

/// Compiles `source` with the NVRTC in use ([`toolkit::nvrtc`]) and
/// `options`, past the disk cache: a CUBIN for `--gpu-architecture=sm_XX`,
/// else PTX. A source NVRTC rejects is written where the error says.
pub fn compile_uncached(op: &'static str, source: &str, options: &[String]) -> Result<Image> {
    COMPILES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let cubin = wants_cubin(options);
    match toolkit::nvrtc()?.compile(source, &format!("{op}.cu"), options, cubin) {
        Ok(bytes) if cubin => Ok(Image::Cubin(bytes)),
        Ok(text) => Ok(Image::Ptx(String::from_utf8_lossy(&text).into_owned())),
        Err(log) => Err(ScanError::Compile {
            op,
            log,
            source_path: write_failed_source(op, source),
        }),
    }
}

/// The image of `key` in the disk cache, if there is one the driver can be
/// given ([`image_check`]): an entry that is not a whole image for `arch`
/// of the form asked for (a CUBIN, else PTX) is deleted, so that the caller
/// compiles it anew and stores the new image in its place.
fn cached_image(disk: &DiskCache, key: &CacheKey, cubin: bool, arch: Arch) -> Option<Image> {
    let bytes = disk.load(key)?;
    let checked = if cubin {
        image_check::check_cubin(&bytes, arch).map(|()| Image::Cubin(bytes))
    } else {
        String::from_utf8(bytes)
            .map_err(|_| image_check::BadImage::PtxTarget(arch.sm_name()))
            .and_then(|text| image_check::check_ptx(&text, arch).map(|()| Image::Ptx(text)))
    };
    match checked {
        Ok(image) => Some(image),
        Err(defect) => {
            tracing::warn!(
                "gpu-scan: deleting the disk cache entry {} ({defect}); compiling it anew",
                key.as_str()
            );
            disk.remove(key);
            None
        }
    }
}

/// Forgets the disk cache's entry for what [`compile`] would look up with
/// these arguments: the runtime calls it when the driver refuses to load an
/// image read from the cache, before compiling anew.
pub fn forget(source: &str, options: &[String], arch: Arch, driver_version: i32, disk: &DiskCache) {
    if let Ok(nvrtc) = toolkit::nvrtc() {
        disk.remove(&CacheKey::new(source, options, arch, driver_version, nvrtc.version()));
    }
}

/// Writes a source NVRTC rejected where the user can read it: `<op>.cu` in
/// a new directory of the temporary directory, with an unpredictable name,
/// readable by this user alone, the file created there anew (so nothing
/// planted in the temporary directory, a symbolic link say, is followed or
/// overwritten). Best effort: `None` when it cannot be written (the error
/// still carries NVRTC's log).
pub(crate) fn write_failed_source(op: &str, source: &str) -> Option<PathBuf> {
    let mut builder = tempfile::Builder::new();
    builder.prefix("gpu-scan-failed-");
    #[cfg(unix)]
    let private = {
        use std::os::unix::fs::PermissionsExt;
        std::fs::Permissions::from_mode(0o700)
    };
    #[cfg(unix)]
    builder.permissions(private);
    let dir = builder.tempdir().ok()?.keep();
    let path = dir.join(format!("{op}.cu"));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .ok()?;
    std::io::Write::write_all(&mut file, source.as_bytes()).ok()?;
    Some(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolkit::CudaVersion;

    const NVRTC_13: CudaVersion = CudaVersion {
        major: 13,
        minor: 0,
    };

    /// A fresh cache directory of this process.
    fn temp_cache(name: &str) -> DiskCache {
        let dir = std::env::temp_dir().join(format!("gpu-scan-jit-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        DiskCache::at(dir)
    }

    /// Every kind of bad entry the disk cache can hold under a key is
    /// deleted rather than handed to the driver (which a CUBIN cut short
    /// would crash), and the next store of the key succeeds; a whole CUBIN
    /// of the key's architecture is read back.
    #[test]
    fn bad_cache_entries_are_deleted_not_loaded() {
        let sm_90: &[u8] = include_bytes!("../tests/fixtures/k_sm_90.cubin");
        let sm_80: &[u8] = include_bytes!("../tests/fixtures/k_sm_80.cubin");
        let cache = temp_cache("bad-entries");
        let key = CacheKey::new("program", &[], Arch::SM_90, 13000, NVRTC_13);
        let path = cache.entry_path(&key).unwrap();
        let random: Vec<u8> = (0u32..2048)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
            .collect();
        // Entries stored through the cache, so their checksums are right.
        for (what, image) in [
            ("a CUBIN cut in half", &sm_90[..sm_90.len() / 2]),
            ("a CUBIN one byte short", &sm_90[..sm_90.len() - 1]),
            ("a whole CUBIN of another architecture", sm_80),
            ("random bytes", &random[..]),
            ("an empty image", &[][..]),
        ] {
            cache.try_store(&key, image).unwrap();
            assert!(path.is_file());
            assert_eq!(
                cached_image(&cache, &key, true, Arch::SM_90),
                None,
                "{what}"
            );
            assert!(!path.exists(), "{what}: the entry is deleted");
        }
        // An empty file (no header at all).
        std::fs::write(&path, b"").unwrap();
        assert_eq!(cached_image(&cache, &key, true, Arch::SM_90), None);
        assert!(!path.exists(), "an empty file is deleted");
        // A directory where the entry's file should be.
        std::fs::create_dir_all(path.join("inside")).unwrap();
        assert_eq!(cached_image(&cache, &key, true, Arch::SM_90), None);
        assert!(
            !path.exists(),
            "a directory in the entry's place is deleted"
        );
        // ... so that the rebuilt image can be stored and read back.
        cache.try_store(&key, sm_90).unwrap();
        assert_eq!(
            cached_image(&cache, &key, true, Arch::SM_90),
            Some(Image::Cubin(sm_90.to_vec()))
        );
        // PTX for another architecture, or not text.
        let ptx_key = CacheKey::new("program", &[], Arch::SM_80, 13000, NVRTC_13);
        let ptx_path = cache.entry_path(&ptx_key).unwrap();
        cache
            .try_store(&ptx_key, b".version 9.0\n.target sm_90\n")
            .unwrap();
        assert_eq!(cached_image(&cache, &ptx_key, false, Arch::SM_80), None);
        assert!(!ptx_path.exists());
        cache
            .try_store(&ptx_key, b"\xff\xfe.target sm_80\n")
            .unwrap();
        assert_eq!(cached_image(&cache, &ptx_key, false, Arch::SM_80), None);
        cache
            .try_store(&ptx_key, b".version 9.0\n.target sm_80\n")
            .unwrap();
        assert!(matches!(
            cached_image(&cache, &ptx_key, false, Arch::SM_80),
            Some(Image::Ptx(_))
        ));
        let _ = std::fs::remove_dir_all(cache.dir().unwrap());
    }

    #[test]
    fn failed_sources_go_to_a_new_private_directory() {
        let first = write_failed_source("op", "int x;").expect("writable temp dir");
        let second = write_failed_source("op", "int y;").expect("writable temp dir");
        assert_ne!(first.parent(), second.parent(), "a new directory each time");
        assert_eq!(std::fs::read_to_string(&first).unwrap(), "int x;");
        assert_eq!(std::fs::read_to_string(&second).unwrap(), "int y;");
        for path in [&first, &second] {
            let dir = path.parent().unwrap();
            assert!(dir.starts_with(std::env::temp_dir()));
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            assert!(name.starts_with("gpu-scan-failed-") && name.len() > "gpu-scan-failed-".len());
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = std::fs::metadata(dir).unwrap().permissions().mode() & 0o777;
                assert_eq!(mode, 0o700, "{}", dir.display());
            }
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
