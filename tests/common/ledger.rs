//! The kernel ledger (`tests/kernel-ledger.txt`): what NVRTC and ptxas
//! reported for every program the compile tests build, keyed by a SHA-256
//! of everything the result depends on (the source, the NVRTC options, the
//! architecture, NVRTC's version and library, ptxas's version). Whether a
//! program compiles, which kernels it has, whether they spill and their
//! shared memory are a function of that key, so a program whose key is in
//! the ledger need not be compiled again to know them: the tests read the
//! result from the ledger. (Register and stack counts are recorded but may
//! differ in another process: NVVM's register numbering depends on what
//! the process compiled before.)
//!
//! The ledger stays honest three ways. A program whose key is missing (its
//! source, options or tools changed) is compiled, as before the ledger. A
//! share of the programs found in it ([`SAMPLE_ONE_IN`], chosen anew by
//! each commit) is compiled anyway and must agree with its entry (kernels,
//! spills, shared memory), so over a few commits every entry is checked
//! again. And
//! `SCAN_LEDGER=off` ignores it, compiling everything.
//!
//! Programs compiled here with no failure are appended to the ledger in
//! the working tree (commit it with the change that made them);
//! `scripts/kernel-ledger` writes it afresh for today's sources.

#![allow(dead_code)]

use super::nvrtc::{assemble, compile_program, KernelReport};
use gpu_scan::kernels_gen::Arch;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

/// One in this many programs found in the ledger is compiled anyway and
/// checked against its entry (`SCAN_LEDGER_SAMPLE_ONE_IN` overrides it:
/// CI's second pass, with NVRTC 12.9, samples fewer). Sixteen keeps CI's
/// compile tests near two minutes on two cores (a segmented program is
/// 30-60 s of it) while every entry is still checked about once in
/// sixteen commits.
pub const SAMPLE_ONE_IN: u8 = 16;

/// [`SAMPLE_ONE_IN`], or the override.
fn sample_one_in() -> u8 {
    std::env::var("SCAN_LEDGER_SAMPLE_ONE_IN")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(SAMPLE_ONE_IN)
}

/// A program's entry: its label and its kernels' `[registers, spill
/// bytes, stack bytes, shared memory bytes]` in ptxas's order.
type Entry = (String, Vec<[u32; 4]>);

/// What the ledger knows, per key.
struct Ledger {
    entries: HashMap<String, Entry>,
    /// The salt that picks the sampled programs.
    salt: String,
    mode: Mode,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Read the ledger, compile what it lacks and a sample, append.
    Use,
    /// Compile everything; leave the ledger alone (`SCAN_LEDGER=off`).
    Off,
}

fn path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/kernel-ledger.txt")
}

fn ledger() -> &'static Mutex<Ledger> {
    static LEDGER: OnceLock<Mutex<Ledger>> = OnceLock::new();
    LEDGER.get_or_init(|| {
        let mode = match std::env::var("SCAN_LEDGER").as_deref() {
            Ok("off") => Mode::Off,
            _ => Mode::Use,
        };
        let mut entries = HashMap::new();
        if mode == Mode::Use {
            for line in std::fs::read_to_string(path()).unwrap_or_default().lines() {
                if let Some((key, entry)) = parse(line) {
                    entries.insert(key, entry);
                }
            }
        }
        // Each commit samples other programs (SCAN_LEDGER_SALT overrides).
        let salt = std::env::var("SCAN_LEDGER_SALT").unwrap_or_else(|_| {
            std::process::Command::new("git")
                .args(["rev-parse", "HEAD"])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .output()
                .ok()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .unwrap_or_default()
        });
        Mutex::new(Ledger {
            entries,
            salt,
            mode,
        })
    })
}

/// `KEY LABEL R/S/T/M R/S/T/M …`.
fn parse(line: &str) -> Option<(String, Entry)> {
    if line.starts_with('#') {
        return None;
    }
    let mut words = line.split_whitespace();
    let key = words.next()?.to_string();
    let label = words.next()?.to_string();
    let kernels = words
        .map(|w| {
            let mut n = w.split('/').map(|x| x.parse::<u32>());
            let mut next = || n.next().and_then(Result::ok);
            Some([next()?, next()?, next()?, next()?])
        })
        .collect::<Option<Vec<_>>>()?;
    Some((key, (label, kernels)))
}

/// The versions of the tools, as part of every key: ptxas's, NVRTC's and
/// the size of the NVRTC library the runtime chose (`GPU_SCAN_NVRTC` names
/// another).
fn tools() -> &'static str {
    static TOOLS: OnceLock<String> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let ptxas = std::process::Command::new(super::nvrtc::ptxas())
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let nvrtc = gpu_scan::scan_runtime::nvrtc().expect("NVRTC is loaded (the caller checked)");
        let (major, minor) = (nvrtc.version().major, nvrtc.version().minor);
        let file = std::path::Path::new(nvrtc.library())
            .file_name()
            .map(|f| f.to_owned());
        let library = std::fs::read_to_string("/proc/self/maps")
            .unwrap_or_default()
            .lines()
            .find_map(|l| {
                l.split_whitespace()
                    .nth(5)
                    // The mapped file may be the versioned file a link
                    // points to (libnvrtc.so.13 -> libnvrtc.so.13.0.88).
                    .filter(|p| {
                        let mapped = std::path::Path::new(p).file_name();
                        match (mapped, &file) {
                            (Some(m), Some(f)) => {
                                m.to_string_lossy().starts_with(&*f.to_string_lossy())
                            }
                            _ => false,
                        }
                    })
            })
            .and_then(|p| std::fs::metadata(p).ok())
            .map_or(0, |m| m.len());
        format!("{ptxas}\nnvrtc {major}.{minor} {library}")
    })
}

fn key(source: &str, options: &[String], arch: Arch) -> String {
    let mut h = Sha256::new();
    h.update(b"gpu-scan kernel ledger 1\n");
    h.update(tools().as_bytes());
    h.update(format!("\n{}\n", arch.sm_name()).as_bytes());
    for option in options {
        h.update(option.as_bytes());
        h.update(b"\n");
    }
    h.update(source.as_bytes());
    h.finalize()
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Whether the program of `key` is compiled although the ledger has it.
fn sampled(key: &str, salt: &str) -> bool {
    let digest = Sha256::digest(format!("{salt}{key}").as_bytes());
    // In u16: one in 1 (every program) is 256, past u8.
    u16::from(digest[0]) < u16::from(u8::MAX / sample_one_in()) + 1
}

/// How a program's result was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Compiled: not in the ledger (now appended to it).
    Compiled,
    /// Compiled although in the ledger (the sample), and agreeing with it.
    Checked,
    /// Read from the ledger.
    Ledger,
}

/// Whether a program may spill to local memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spills {
    /// A spill is a failure the caller reports: only programs without
    /// one are recorded, and a sample must agree on every spill count.
    Refused,
    /// A quick build's spills are by design
    /// ([`gpu_scan::kernels_gen::QUICK_BUILD_OPTION`]): the program is
    /// recorded all the same (before, each of CI's runs compiled every
    /// spilling quick build again, about two minutes), and a sample's
    /// spill counts are not compared, since they follow the register
    /// counts, which may differ in another process.
    Allowed,
}

/// Compiles `source` (program `label`, exporting `symbols`) with NVRTC and
/// assembles it for `arch` with `ptxas -v`, or reads the result from the
/// ledger: either way `reports` gets one row per kernel (a ledger row's
/// kernel is its position, `#3`), `failures` every failure.
pub fn compile_and_assemble(
    label: &str,
    source: &str,
    options: Vec<String>,
    symbols: &[String],
    arch: Arch,
    reports: &mut Vec<KernelReport>,
    failures: &mut Vec<String>,
) -> Source {
    compile_and_assemble_with(
        label,
        source,
        options,
        symbols,
        arch,
        Spills::Refused,
        reports,
        failures,
    )
}

/// [`compile_and_assemble`], saying whether the program may spill.
#[allow(clippy::too_many_arguments)]
pub fn compile_and_assemble_with(
    label: &str,
    source: &str,
    options: Vec<String>,
    symbols: &[String],
    arch: Arch,
    spills: Spills,
    reports: &mut Vec<KernelReport>,
    failures: &mut Vec<String>,
) -> Source {
    let key = key(source, &options, arch);
    let (known, salt, mode) = {
        let ledger = ledger().lock().unwrap();
        (
            ledger.entries.get(&key).cloned(),
            ledger.salt.clone(),
            ledger.mode,
        )
    };
    if let Some((_, kernels)) = &known {
        if !sampled(&key, &salt) {
            reports.extend(kernels.iter().enumerate().map(|(i, k)| KernelReport {
                program: label.to_string(),
                kernel: format!("#{i}{LEDGER_ROW}"),
                registers: k[0],
                spill_bytes: k[1],
                stack_bytes: k[2],
                smem_bytes: k[3],
            }));
            sources().lock().unwrap().push(Source::Ledger);
            return Source::Ledger;
        }
    }
    let (mut mine, mut failed) = (Vec::new(), Vec::new());
    if let Some(ptx) = compile_program(label, source, options, symbols, &mut failed) {
        assemble(label, arch, &ptx, &mut mine, &mut failed);
    }
    // Kernels only: a row for a spilling callee (`f (called by k)`) is in
    // `mine`, where the caller sees the spill, but not in the ledger, whose
    // rows are the program's kernels.
    let kernels: Vec<[u32; 4]> = mine
        .iter()
        .filter(|r| !r.kernel.contains(" (called by "))
        .map(|r| [r.registers, r.spill_bytes, r.stack_bytes, r.smem_bytes])
        .collect();
    let clean =
        failed.is_empty() && (spills == Spills::Allowed || mine.iter().all(|r| r.spill_bytes == 0));
    let source = match known {
        Some((_, recorded)) => {
            // Registers and stack are compared for no more than the count:
            // NVVM numbers a program's virtual registers differently after
            // a process has compiled others (the same source and options
            // gave PTX that differed only in that numbering, and ptxas
            // 13.0 then allocated other counts: BENCHMARKS.md), so a sample
            // compiled in another process may take other counts of the
            // same code. What the compile tests check, that every kernel
            // compiles, spills nothing and has the shared memory the
            // layout says, must agree.
            let checked = |k: &[u32; 4]| match spills {
                Spills::Refused => (k[1], k[3]),
                Spills::Allowed => (0, k[3]),
            };
            if recorded.len() != kernels.len()
                || recorded.iter().map(checked).ne(kernels.iter().map(checked))
            {
                failed.push(format!(
                    "{label}: the kernel ledger's entry {key} disagrees with this compile \
                     ({} kernels recorded, {} now, or another spill or shared-memory count): \
                     the tools are not what the key says, or the entry is wrong \
                     (scripts/kernel-ledger writes it afresh)",
                    recorded.len(),
                    kernels.len()
                ));
            }
            Source::Checked
        }
        None => {
            if clean && mode == Mode::Use {
                append(&key, label, &kernels);
            }
            Source::Compiled
        }
    };
    reports.extend(mine);
    failures.extend(failed);
    sources().lock().unwrap().push(source);
    source
}

/// Whether a report row was read from the ledger (not compiled in this
/// run).
pub fn is_ledger_row(r: &KernelReport) -> bool {
    r.kernel.ends_with(LEDGER_ROW)
}

/// What ends the kernel name of a row read from the ledger.
const LEDGER_ROW: &str = " (ledger)";

/// Appends a compiled program's entry to the ledger.
fn append(key: &str, label: &str, kernels: &[[u32; 4]]) {
    let mut ledger = ledger().lock().unwrap();
    let mut line = format!("{key} {label}");
    for k in kernels {
        line.push_str(&format!(" {}/{}/{}/{}", k[0], k[1], k[2], k[3]));
    }
    line.push('\n');
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path())
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if written.is_ok() {
        ledger
            .entries
            .insert(key.to_string(), (label.to_string(), kernels.to_vec()));
    }
}

/// How this process's programs were obtained, in order.
fn sources() -> &'static Mutex<Vec<Source>> {
    static SOURCES: Mutex<Vec<Source>> = Mutex::new(Vec::new());
    &SOURCES
}

/// A line for a test's summary: how many of this process's programs were
/// compiled, read from the ledger, and compiled again to check it.
pub fn summary() -> String {
    let sources = sources().lock().unwrap();
    let count = |s: Source| sources.iter().filter(|&&x| x == s).count();
    format!(
        "{} programs compiled, {} read from the kernel ledger, {} compiled again and checked against it (one in {})",
        count(Source::Compiled),
        count(Source::Ledger),
        count(Source::Checked),
        sample_one_in(),
    )
}
