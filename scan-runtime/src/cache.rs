//! The on-disk cache of compiled programs.
//!
//! Location: `$GPU_SCAN_CACHE_DIR`, else `$XDG_CACHE_HOME/gpu-scan`, else
//! `$HOME/.cache/gpu-scan`. `GPU_SCAN_DISK_CACHE=0` turns it off.
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

use kernels_gen::Arch;
use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

const MAGIC: &str = "gpu-scan-image v2";

/// The identity of a compiled program.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CacheKey(String);

impl CacheKey {
    /// Hashes what decides NVRTC's output and the driver's version.
    pub fn new(source: &str, options: &[String], arch: Arch, driver: i32) -> CacheKey {
        let mut h = Sha256::new();
        for part in [
            source.as_bytes(),
            b"\0options\0",
            options.join("\u{1f}").as_bytes(),
        ] {
            h.update(part);
        }
        h.update(format!("\0arch {}\0driver {driver}", arch.sm_name()).as_bytes());
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
    /// The cache the environment asks for (see the module docs).
    pub fn from_env() -> DiskCache {
        if std::env::var("GPU_SCAN_DISK_CACHE")
            .is_ok_and(|v| v == "0" || v.eq_ignore_ascii_case("off"))
        {
            return DiskCache { dir: None };
        }
        let dir = std::env::var_os("GPU_SCAN_CACHE_DIR")
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("gpu-scan"))
            })
            .or_else(|| {
                std::env::var_os("HOME").map(|d| PathBuf::from(d).join(".cache").join("gpu-scan"))
            });
        DiskCache { dir }
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

    /// The file of `key`.
    pub fn entry_path(&self, key: &CacheKey) -> Option<PathBuf> {
        self.dir
            .as_ref()
            .map(|d| d.join(format!("{}.bin", key.as_str())))
    }

    /// The cached image of `key`, if present and intact. A damaged entry is
    /// removed (and so rebuilt by the caller).
    pub fn load(&self, key: &CacheKey) -> Option<Vec<u8>> {
        let path = self.entry_path(key)?;
        let bytes = std::fs::read(&path).ok()?;
        match parse_entry(&bytes) {
            Some(image) => Some(image),
            None => {
                let _ = std::fs::remove_file(&path);
                None
            }
        }
    }

    /// Deletes the entry for `key`, if there is one (an image the driver
    /// refused to load).
    pub fn remove(&self, key: &CacheKey) {
        if let Some(path) = self.entry_path(key) {
            let _ = std::fs::remove_file(path);
        }
    }

    /// Stores `image` (a CUBIN or PTX) under `key`, atomically; failures
    /// are ignored (the cache is an optimisation).
    pub fn store(&self, key: &CacheKey, image: &[u8]) {
        let (Some(dir), Some(path)) = (self.dir.as_ref(), self.entry_path(key)) else {
            return;
        };
        let _ = std::fs::create_dir_all(dir);
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let tmp = dir.join(format!(
            ".{}.{}.{}.tmp",
            key.as_str(),
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let written = (|| -> std::io::Result<()> {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(format!("{MAGIC} {}\n", hex(&Sha256::digest(image))).as_bytes())?;
            f.write_all(image)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
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

    fn temp_dir(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("gpu-scan-cache-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn keys_change_with_every_input() {
        let base = CacheKey::new("src", &["-a".into()], Arch::SM_90, 13000);
        assert_ne!(
            base,
            CacheKey::new("src2", &["-a".into()], Arch::SM_90, 13000)
        );
        assert_ne!(
            base,
            CacheKey::new("src", &["-b".into()], Arch::SM_90, 13000)
        );
        assert_ne!(
            base,
            CacheKey::new("src", &["-a".into()], Arch { major: 8, minor: 0 }, 13000)
        );
        assert_ne!(
            base,
            CacheKey::new("src", &["-a".into()], Arch::SM_90, 12080)
        );
        assert_eq!(
            base,
            CacheKey::new("src", &["-a".into()], Arch::SM_90, 13000)
        );
    }

    #[test]
    fn round_trip_and_corruption_is_detected_and_removed() {
        let cache = DiskCache::at(temp_dir("corrupt"));
        let key = CacheKey::new("program", &[], Arch::SM_90, 0);
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
    fn disabled_cache_stores_nothing() {
        let cache = DiskCache::disabled();
        let key = CacheKey::new("p", &[], Arch::SM_90, 0);
        cache.store(&key, b"x");
        assert_eq!(cache.load(&key), None);
    }
}
