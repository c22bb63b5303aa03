//! Compiling generated programs with NVRTC, with the disk cache in front.

use crate::cache::{CacheKey, DiskCache};
use crate::error::{Result, ScanError};
use crate::image_check;
use cudarc::nvrtc;
use kernels_gen::Arch;
use std::path::PathBuf;
use std::sync::OnceLock;

/// Whether libnvrtc can be loaded (checked before any cudarc call that
/// would panic without it). Found once per process, and then kept loaded:
/// cudarc's own probe loads and unloads the library, which costs as much
/// as loading it (about 10-16 ms), so without this the first compile would
/// load it a second time.
pub fn nvrtc_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    *PRESENT.get_or_init(|| {
        // SAFETY: is_culib_present only tries to load the shared library;
        // culib() loads it for good, and cannot fail once it was found.
        unsafe {
            let present = nvrtc::sys::is_culib_present();
            if present {
                let _ = nvrtc::sys::culib();
            }
            present
        }
    })
}

/// NVRTC's version, `(major, minor)`.
pub fn nvrtc_version() -> Result<(i32, i32)> {
    static VERSION: OnceLock<(i32, i32)> = OnceLock::new();
    if let Some(v) = VERSION.get() {
        return Ok(*v);
    }
    if !nvrtc_present() {
        return Err(ScanError::NoNvrtc);
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: the library is present; nvrtcVersion writes two ints.
    let status = unsafe { nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    if status != nvrtc::sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(ScanError::NoNvrtc);
    }
    Ok(*VERSION.get_or_init(|| (major, minor)))
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
    let key = CacheKey::new(source, &options, arch, driver_version);
    let cubin = wants_cubin(&options);
    if let Some(image) = cached_image(disk, &key, cubin, arch) {
        return Ok(Compiled {
            image,
            from_disk: true,
        });
    }
    if !nvrtc_present() {
        return Err(ScanError::NoNvrtc);
    }
    let image = nvrtc_compile(op, source, &options, cubin)?;
    disk.store(&key, image.bytes());
    Ok(Compiled {
        image,
        from_disk: false,
    })
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
    disk.remove(&CacheKey::new(source, options, arch, driver_version));
}

/// One NVRTC compile: the CUBIN or the PTX of `source`.
fn nvrtc_compile(op: &'static str, source: &str, options: &[String], cubin: bool) -> Result<Image> {
    use nvrtc::result;
    let failed = |log: String| ScanError::Compile {
        op,
        log,
        source_path: write_failed_source(op, source),
    };
    let src =
        std::ffi::CString::new(source).map_err(|_| failed("the source holds a NUL byte".into()))?;
    let name = std::ffi::CString::new(format!("{op}.cu")).expect("operator names hold no NUL");
    let program =
        result::create_program(&src, Some(&name)).map_err(|e| failed(format!("{e:?}")))?;
    // Destroys the program however this function returns.
    struct Guard(nvrtc::sys::nvrtcProgram);
    impl Drop for Guard {
        fn drop(&mut self) {
            // SAFETY: created above, destroyed once.
            let _ = unsafe { result::destroy_program(self.0) };
        }
    }
    let guard = Guard(program);
    // SAFETY: a valid program; the options are plain strings.
    if let Err(e) = unsafe { result::compile_program(guard.0, options) } {
        // SAFETY: the program exists; its log is a NUL-terminated string.
        let log = unsafe { result::get_program_log(guard.0) }
            .map(|raw| {
                // SAFETY: NVRTC terminates the log with a NUL.
                unsafe { std::ffi::CStr::from_ptr(raw.as_ptr()) }
                    .to_string_lossy()
                    .into_owned()
            })
            .unwrap_or_else(|_| format!("{e:?}"));
        return Err(failed(log));
    }
    if cubin {
        let mut size = 0usize;
        // SAFETY: the program compiled for a real architecture; NVRTC writes
        // the CUBIN's size, then that many bytes.
        let status = unsafe { nvrtc::sys::nvrtcGetCUBINSize(guard.0, &mut size) };
        if status != nvrtc::sys::nvrtcResult::NVRTC_SUCCESS {
            return Err(failed(format!("nvrtcGetCUBINSize: {status:?}")));
        }
        let mut bytes = vec![0u8; size];
        // SAFETY: `bytes` holds `size` bytes.
        let status = unsafe { nvrtc::sys::nvrtcGetCUBIN(guard.0, bytes.as_mut_ptr().cast()) };
        if status != nvrtc::sys::nvrtcResult::NVRTC_SUCCESS {
            return Err(failed(format!("nvrtcGetCUBIN: {status:?}")));
        }
        Ok(Image::Cubin(bytes))
    } else {
        // SAFETY: the program compiled; NVRTC returns its PTX with a NUL.
        let ptx = unsafe { result::get_ptx(guard.0) }.map_err(|e| failed(format!("{e:?}")))?;
        // SAFETY: NVRTC terminates the PTX with a NUL.
        let text = unsafe { std::ffi::CStr::from_ptr(ptx.as_ptr()) };
        Ok(Image::Ptx(text.to_string_lossy().into_owned()))
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
        let key = CacheKey::new("program", &[], Arch::SM_90, 13000);
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
        let ptx_key = CacheKey::new("program", &[], Arch::SM_80, 13000);
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
