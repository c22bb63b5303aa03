//! The on-disk cache of compiled programs.
//!
//! Location: `$GPU_SCAN_CACHE_DIR`, else `$XDG_CACHE_HOME/gpu-scan`, else
//! `$HOME/.cache/gpu-scan`. `GPU_SCAN_DISK_CACHE` turns it off (`0`,
//! `false`, `off`, `no`) or on (`1`, `true`, `on`, `yes`, the default).
//! The variables are read strictly ([`DiskCache::try_from_env`]): any
//! other switch value, an empty `GPU_SCAN_CACHE_DIR` or a relative one is
//! a [`CacheEnvError`], which [`DiskCache::from_env`] reports as a
//! `tracing` warning before going on without a disk cache (it never writes
//! where the user did not mean). An empty or relative `XDG_CACHE_HOME` is
//! ignored, as the XDG specification says. A directory the cache cannot be
//! written in (a path that is a file, no permission) is reported once per
//! process, as a warning, and scans go on.
//!
//! Each entry is one file named by the SHA-256 of what decides the output
//! (source, NVRTC options, architecture) and of the driver's version. The
//! NVRTC version is left out, so that a process whose kernels are all in
//! the cache never loads or calls NVRTC: an image another NVRTC built is
//! still one the driver loads (a CUBIN for this exact architecture, or PTX
//! the driver compiles), and one it refuses is rebuilt (below). After
//! upgrading NVRTC for a compiler fix, clear the cache directory. Its content is a header line (`gpu-scan-image v2 <sha256 of
//! the payload>`) and the image: a CUBIN for the device's architecture, or
//! PTX where the program targets an older one. Entries are written to a temporary file and
//! renamed into place, so readers never see a partial entry and two
//! processes filling the same entry both succeed (the last rename wins with
//! identical bytes). An entry whose checksum does not match (truncated,
//! corrupted) is removed and rebuilt, and so is an intact one the driver
//! refuses to load; cache failures never fail a scan.

use crate::toolkit::CudaVersion;
use kernels_gen::Arch;
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

const MAGIC: &str = "gpu-scan-image v2";

internal! {
    /// The identity of a compiled program (for the runtime and its tests: not
    /// part of the API).
    #[doc(hidden)]
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    pub struct CacheKey(String);
}

impl CacheKey {
    /// Hashes what decides NVRTC's output: the source, the options, the
    /// architecture, NVRTC's version; and the driver's version.
    pub fn new(
        source: &str,
        options: &[String],
        arch: Arch,
        driver: i32,
        nvrtc: CudaVersion,
    ) -> CacheKey {
        let mut h = Sha256::new();
        for part in [
            source.as_bytes(),
            b"\0options\0",
            options.join("\u{1f}").as_bytes(),
        ] {
            h.update(part);
        }
        h.update(format!("\0arch {}\0driver {driver}\0nvrtc {nvrtc}", arch.sm_name()).as_bytes());
        CacheKey(hex(&h.finalize()))
    }

    /// The key as hex text (the file name).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// A directory of compiled programs, or nothing (disabled).
#[derive(Clone, Debug)]
pub struct DiskCache {
    dir: Option<PathBuf>,
}

impl DiskCache {
    /// The cache the environment asks for (see the module docs); a variable
    /// it cannot use is reported as a `tracing` warning, and then there is
    /// no disk cache.
    pub fn from_env() -> DiskCache {
        match DiskCache::try_from_env() {
            Ok(cache) => cache,
            Err(e) => {
                tracing::warn!("gpu-scan: {e}; compiled kernels are not kept on disk");
                DiskCache::disabled()
            }
        }
    }

    /// The cache the environment asks for, or why a variable cannot be used.
    ///
    /// ```
    /// use gpu_scan::scan_runtime::{CacheEnvError, DiskCache};
    ///
    /// match DiskCache::try_from_env() {
    ///     Ok(cache) => println!("compiled kernels go to {:?}", cache.dir()),
    ///     Err(CacheEnvError::EmptyDir) => eprintln!("unset GPU_SCAN_CACHE_DIR or name a directory"),
    ///     Err(e) => eprintln!("{e}"),
    /// }
    /// ```
    pub fn try_from_env() -> Result<DiskCache, CacheEnvError> {
        let var = |name: &str| std::env::var_os(name);
        cache_dir_from(
            var("GPU_SCAN_DISK_CACHE").as_deref(),
            var("GPU_SCAN_CACHE_DIR").as_deref(),
            var("XDG_CACHE_HOME").as_deref(),
            var("HOME").as_deref(),
        )
        .map(|dir| DiskCache { dir })
    }

    /// A cache in `dir`.
    pub fn at(dir: impl Into<PathBuf>) -> DiskCache {
        DiskCache {
            dir: Some(dir.into()),
        }
    }

    /// No disk cache.
    pub fn disabled() -> DiskCache {
        DiskCache { dir: None }
    }

    /// The directory, when enabled.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    internal! {
        /// The file of `key`.
        #[doc(hidden)]
        pub fn entry_path(&self, key: &CacheKey) -> Option<PathBuf> {
            self.dir
                .as_ref()
                .map(|d| d.join(format!("{}.bin", key.as_str())))
        }
    }

    internal! {
        /// The cached image of `key`, if present and intact. A damaged entry is
        /// removed (and so rebuilt by the caller).
        #[doc(hidden)]
        pub fn load(&self, key: &CacheKey) -> Option<Vec<u8>> {
            let path = self.entry_path(key)?;
            if path.is_dir() {
                // Not an entry we wrote: it would keep every later store of
                // this key from renaming its file into place.
                let _ = std::fs::remove_dir_all(&path);
                return None;
            }
            let bytes = std::fs::read(&path).ok()?;
            match parse_entry(&bytes) {
                Some(image) => Some(image),
                None => {
                    let _ = std::fs::remove_file(&path);
                    None
                }
            }
        }
    }

    internal! {
        /// Deletes the entry for `key`, if there is one (an image the driver
        /// refused to load).
        #[doc(hidden)]
        pub fn remove(&self, key: &CacheKey) {
            if let Some(path) = self.entry_path(key) {
                let _ = std::fs::remove_file(path);
            }
        }
    }

    internal! {
        /// Stores `image` (a CUBIN or PTX) under `key`, atomically. A failure
        /// does not fail the scan (the cache is an optimisation); the first
        /// one in each directory is reported as a `tracing` warning.
        #[doc(hidden)]
        pub fn store(&self, key: &CacheKey, image: &[u8]) {
            if let Err(e) = self.try_store(key, image) {
                let dir = self.dir.clone().unwrap_or_default();
                static REPORTED: OnceLock<Mutex<HashSet<PathBuf>>> = OnceLock::new();
                let first = REPORTED
                    .get_or_init(Default::default)
                    .lock()
                    .map(|mut seen| seen.insert(dir.clone()))
                    .unwrap_or(false);
                if first {
                    tracing::warn!(
                        "gpu-scan: cannot write the disk cache in {}: {e}; compiled kernels are not kept between processes",
                        dir.display()
                    );
                }
            }
        }
    }

    internal! {
        /// [`DiskCache::store`], saying why it failed. Storing in a disabled
        /// cache succeeds (there is nothing to do).
        #[doc(hidden)]
        pub fn try_store(&self, key: &CacheKey, image: &[u8]) -> std::io::Result<()> {
            let (Some(dir), Some(path)) = (self.dir.as_ref(), self.entry_path(key)) else {
                return Ok(());
            };
            std::fs::create_dir_all(dir)?;
            static COUNTER: AtomicU64 = AtomicU64::new(0);
            let tmp = dir.join(format!(
                ".{}.{}.{}.tmp",
                key.as_str(),
                std::process::id(),
                COUNTER.fetch_add(1, Ordering::Relaxed)
            ));
            let written = (|| -> std::io::Result<()> {
                let mut f = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&tmp)?;
                f.write_all(format!("{MAGIC} {}\n", hex(&Sha256::digest(image))).as_bytes())?;
                f.write_all(image)?;
                f.sync_all()?;
                std::fs::rename(&tmp, &path)
            })();
            if written.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            written
        }
    }
}

/// A cache environment variable whose value cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CacheEnvError {
    /// `GPU_SCAN_DISK_CACHE` is neither on nor off.
    #[error(
        "GPU_SCAN_DISK_CACHE={0:?} is neither off (0, false, off, no) nor on (1, true, on, yes)"
    )]
    BadSwitch(String),
    /// `GPU_SCAN_CACHE_DIR` is set to the empty string.
    #[error("GPU_SCAN_CACHE_DIR is set but empty: name a directory, or unset it for the default")]
    EmptyDir,
    /// `GPU_SCAN_CACHE_DIR` is a relative path (it would depend on the
    /// current directory).
    #[error("GPU_SCAN_CACHE_DIR={0:?} is a relative path: name an absolute directory")]
    RelativeDir(PathBuf),
}

/// The cache directory (`None`: no disk cache) the variables
/// `GPU_SCAN_DISK_CACHE`, `GPU_SCAN_CACHE_DIR`, `XDG_CACHE_HOME` and `HOME`
/// ask for, parsed as the module docs say.
fn cache_dir_from(
    switch: Option<&OsStr>,
    dir: Option<&OsStr>,
    xdg_cache_home: Option<&OsStr>,
    home: Option<&OsStr>,
) -> Result<Option<PathBuf>, CacheEnvError> {
    if let Some(value) = switch {
        let text = value.to_string_lossy();
        match text.trim().to_ascii_lowercase().as_str() {
            "0" | "false" | "off" | "no" => return Ok(None),
            "1" | "true" | "on" | "yes" => {}
            _ => return Err(CacheEnvError::BadSwitch(text.into_owned())),
        }
    }
    if let Some(dir) = dir {
        if dir.is_empty() {
            return Err(CacheEnvError::EmptyDir);
        }
        let dir = PathBuf::from(dir);
        if dir.is_relative() {
            return Err(CacheEnvError::RelativeDir(dir));
        }
        return Ok(Some(dir));
    }
    // XDG: "If an implementation encounters a relative path in any of
    // these variables it should consider the path invalid and ignore it."
    let absolute =
        |v: Option<&OsStr>| -> Option<PathBuf> { v.map(PathBuf::from).filter(|p| p.is_absolute()) };
    Ok(absolute(xdg_cache_home)
        .map(|d| d.join("gpu-scan"))
        .or_else(|| absolute(home).map(|d| d.join(".cache").join("gpu-scan"))))
}

/// The PTX of an entry whose header and checksum are intact.
fn parse_entry(bytes: &[u8]) -> Option<Vec<u8>> {
    let newline = bytes.iter().position(|&b| b == b'\n')?;
    let header = std::str::from_utf8(&bytes[..newline]).ok()?;
    let image = &bytes[newline + 1..];
    let sum = header.strip_prefix(MAGIC)?.trim();
    (hex(&Sha256::digest(image)) == sum).then(|| image.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    const V13: CudaVersion = CudaVersion {
        major: 13,
        minor: 0,
    };
    const V12_9: CudaVersion = CudaVersion {
        major: 12,
        minor: 9,
    };
    use std::ffi::OsString;

    fn os(v: &str) -> OsString {
        OsString::from(v)
    }

    fn temp_dir(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("gpu-scan-cache-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn keys_change_with_every_input() {
        let base = CacheKey::new("src", &["-a".into()], Arch::SM_90, 13000, V13);
        assert_ne!(
            base,
            CacheKey::new("src2", &["-a".into()], Arch::SM_90, 13000, V13)
        );
        assert_ne!(
            base,
            CacheKey::new("src", &["-b".into()], Arch::SM_90, 13000, V13)
        );
        assert_ne!(
            base,
            CacheKey::new(
                "src",
                &["-a".into()],
                Arch { major: 8, minor: 0 },
                13000,
                V13
            )
        );
        assert_ne!(
            base,
            CacheKey::new("src", &["-a".into()], Arch::SM_90, 12080, V13)
        );
        assert_ne!(
            base,
            CacheKey::new("src", &["-a".into()], Arch::SM_90, 13000, V12_9)
        );
        assert_eq!(
            base,
            CacheKey::new("src", &["-a".into()], Arch::SM_90, 13000, V13)
        );
    }

    #[test]
    fn round_trip_and_corruption_is_detected_and_removed() {
        let cache = DiskCache::at(temp_dir("corrupt"));
        let key = CacheKey::new("program", &[], Arch::SM_90, 0, V13);
        assert_eq!(cache.load(&key), None);
        cache.store(&key, b".version 9.0\n// body\n");
        assert_eq!(
            cache.load(&key).as_deref(),
            Some(&b".version 9.0\n// body\n"[..])
        );
        let path = cache.entry_path(&key).unwrap();
        // Truncate the entry: the checksum no longer matches.
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        assert_eq!(cache.load(&key), None);
        assert!(!path.exists(), "a corrupt entry is removed");
        // Flip one byte of the payload.
        cache.store(&key, b".version 9.0\n// body\n");
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 2;
        bytes[last] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(cache.load(&key), None);
        // Garbage without a header.
        std::fs::write(&path, b"\xff\xfe not a cache entry").unwrap();
        assert_eq!(cache.load(&key), None);
        let _ = std::fs::remove_dir_all(cache.dir().unwrap());
    }

    #[test]
    fn the_variables_are_parsed_strictly() {
        let from =
            |switch: Option<&str>, dir: Option<&str>, xdg: Option<&str>, home: Option<&str>| {
                let (switch, dir, xdg, home) =
                    (switch.map(os), dir.map(os), xdg.map(os), home.map(os));
                cache_dir_from(
                    switch.as_deref(),
                    dir.as_deref(),
                    xdg.as_deref(),
                    home.as_deref(),
                )
            };
        let home_cache = Some(PathBuf::from("/home/u/.cache/gpu-scan"));
        assert_eq!(
            from(None, None, None, Some("/home/u")),
            Ok(home_cache.clone())
        );
        for off in ["0", "false", "FALSE", "off", "Off", "no", " 0 "] {
            assert_eq!(
                from(Some(off), Some("/c"), None, Some("/home/u")),
                Ok(None),
                "{off}"
            );
        }
        for on in ["1", "true", "on", "yes", "YES"] {
            assert_eq!(
                from(Some(on), None, None, Some("/home/u")),
                Ok(home_cache.clone()),
                "{on}"
            );
        }
        for bad in ["", "2", "disabled", "nope"] {
            assert_eq!(
                from(Some(bad), None, None, Some("/home/u")),
                Err(CacheEnvError::BadSwitch(bad.into())),
                "{bad:?}"
            );
        }
        assert_eq!(
            from(None, Some("/c"), None, None),
            Ok(Some(PathBuf::from("/c")))
        );
        assert_eq!(
            from(None, Some(""), None, Some("/home/u")),
            Err(CacheEnvError::EmptyDir)
        );
        assert_eq!(
            from(None, Some("cache"), None, Some("/home/u")),
            Err(CacheEnvError::RelativeDir("cache".into()))
        );
        assert_eq!(
            from(None, None, Some("/x"), Some("/home/u")),
            Ok(Some(PathBuf::from("/x/gpu-scan")))
        );
        // Empty or relative XDG_CACHE_HOME is ignored; so is a relative HOME.
        assert_eq!(
            from(None, None, Some(""), Some("/home/u")),
            Ok(home_cache.clone())
        );
        assert_eq!(
            from(None, None, Some("rel"), Some("/home/u")),
            Ok(home_cache)
        );
        assert_eq!(from(None, None, None, Some("rel")), Ok(None));
        assert_eq!(from(None, None, None, None), Ok(None));
    }

    #[test]
    fn a_cache_path_that_is_a_file_is_an_error_not_a_silent_skip() {
        let dir = temp_dir("file");
        std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
        std::fs::write(&dir, b"not a directory").unwrap();
        let cache = DiskCache::at(&dir);
        let key = CacheKey::new("p", &[], Arch::SM_90, 0, V13);
        assert!(cache.try_store(&key, b"x").is_err());
        cache.store(&key, b"x"); // reports, and does not panic
        assert_eq!(cache.load(&key), None);
        assert_eq!(std::fs::read(&dir).unwrap(), b"not a directory");
        let _ = std::fs::remove_file(&dir);
    }

    #[test]
    fn disabled_cache_stores_nothing() {
        let cache = DiskCache::disabled();
        let key = CacheKey::new("p", &[], Arch::SM_90, 0, V13);
        cache.store(&key, b"x");
        assert_eq!(cache.load(&key), None);
    }
}
