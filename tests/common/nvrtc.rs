//! NVRTC and ptxas for the compile tests: compiling a program, assembling
//! it with `ptxas -v`, and reading ptxas's per-function report.
#![allow(dead_code)]

use gpu_scan::kernels_gen::Arch;
use gpu_scan::scan_runtime::jit;
use std::path::PathBuf;
use std::process::Command;

/// How much of the kernel × architecture matrix the compile tests cover.
///
/// NVRTC and ptxas take about half a second per kernel, on one core: every
/// kernel of every test operator for every architecture, and every element
/// size for every architecture, is about three hours of CPU, past what CI
/// on two cores can spend. So by default ([`Coverage::Rotation`]) every
/// kernel is compiled for sm_90 (the architecture whose launch bounds ask
/// for occupancy, so the one that spills first), and each of the other six
/// architectures takes every kernel for a share of the operators or sizes
/// (the same share on every run), with the operator-independent parts (the
/// plain programs, the flag builders) on every architecture.
/// `SCAN_NVRTC_FULL=1` ([`Coverage::Full`]) compiles the whole matrix
/// (`scripts/test-kernels-full`; run it before landing a change to the
/// templates, the layout or the launch bounds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coverage {
    /// Every kernel for sm_90, a fixed share for each other architecture.
    Rotation,
    /// Every kernel for every architecture.
    Full,
}

impl Coverage {
    /// The coverage `SCAN_NVRTC_FULL` asks for.
    pub fn from_env() -> Coverage {
        match std::env::var("SCAN_NVRTC_FULL") {
            Ok(v) if v == "1" => Coverage::Full,
            _ => Coverage::Rotation,
        }
    }

    /// Whether item `index` of a list (an operator, an element size) is
    /// compiled for `arch`: always for sm_90 and under [`Coverage::Full`];
    /// otherwise for the one architecture of the other six that the item's
    /// `share` (its index, or a size's half) falls to.
    pub fn covers(self, arch: Arch, share: usize) -> bool {
        if self.covers_all(arch) {
            return true;
        }
        let others: Vec<Arch> = Arch::CUDA_13
            .into_iter()
            .filter(|&a| a != Arch::SM_90)
            .collect();
        others[share % others.len()] == arch
    }

    /// Whether everything is compiled for `arch`: sm_90, or every
    /// architecture under [`Coverage::Full`].
    pub fn covers_all(self, arch: Arch) -> bool {
        self == Coverage::Full || arch == Arch::SM_90
    }

    /// A line for the test's summary.
    pub fn describe(self) -> &'static str {
        match self {
            Coverage::Full => "every architecture (SCAN_NVRTC_FULL=1)",
            Coverage::Rotation => {
                "sm_90, and a share for each other architecture (SCAN_NVRTC_FULL=1: all)"
            }
        }
    }
}

/// One function's line of ptxas's report.
pub struct KernelReport {
    pub program: String,
    pub kernel: String,
    pub registers: u32,
    pub spill_bytes: u32,
    pub stack_bytes: u32,
    pub smem_bytes: u32,
}

/// Whether NVRTC can be loaded (the one the runtime chooses: `GPU_SCAN_NVRTC`
/// names another); with `SCAN_REQUIRE_NVRTC=1` its absence panics.
pub fn tools_available() -> bool {
    let nvrtc_present = jit::nvrtc_present();
    let required = std::env::var_os("SCAN_REQUIRE_NVRTC").is_some_and(|v| v == "1");
    if !nvrtc_present {
        assert!(
            !required,
            "SCAN_REQUIRE_NVRTC=1 but libnvrtc could not be loaded (LD_LIBRARY_PATH?)"
        );
        println!("nvrtc_compile: skipped (libnvrtc not found; run scripts/test to install NVRTC 13.0.88)");
    }
    // SCAN_NVRTC_EXPECT=12.9: the run is for that NVRTC, and fails with another.
    if let (true, Ok(expected)) = (nvrtc_present, std::env::var("SCAN_NVRTC_EXPECT")) {
        let version = jit::nvrtc_version().unwrap();
        let found = format!("{}.{}", version.0, version.1);
        assert_eq!(
            found, expected,
            "SCAN_NVRTC_EXPECT={expected} but NVRTC {found} was loaded"
        );
    }
    nvrtc_present
}

/// The ptxas to run: `SCAN_PTXAS`, or `ptxas` on `PATH`.
pub fn ptxas() -> PathBuf {
    std::env::var_os("SCAN_PTXAS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("ptxas"))
}

/// Compiles one program with NVRTC and checks that every symbol is an entry.
pub fn compile_program(
    label: &str,
    source: &str,
    options: Vec<String>,
    symbols: &[String],
    failures: &mut Vec<String>,
) -> Option<String> {
    let ptx = match jit::compile_uncached("program", source, &options) {
        Ok(jit::Image::Ptx(ptx)) => ptx,
        Ok(jit::Image::Cubin(_)) => panic!("{label}: the compile tests ask NVRTC for PTX"),
        Err(e) => {
            failures.push(format!("{label}: NVRTC failed: {e}"));
            return None;
        }
    };
    for symbol in symbols {
        if !ptx.contains(&format!(".entry {symbol}(")) {
            failures.push(format!("{label}: kernel {symbol} missing from the PTX"));
        }
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("nvrtc");
    std::fs::create_dir_all(&dir).unwrap();
    let stem = label.replace(':', ".");
    std::fs::write(dir.join(format!("{stem}.cu")), source).unwrap();
    // The PTX beside it: a refactor of the templates that leaves every
    // PTX file unchanged changed no kernel.
    std::fs::write(dir.join(format!("{stem}.ptx")), &ptx).unwrap();
    Some(ptx)
}

/// Assembles PTX for `arch` with `ptxas -v` and records its report.
pub fn assemble(
    label: &str,
    arch: Arch,
    ptx: &str,
    reports: &mut Vec<KernelReport>,
    failures: &mut Vec<String>,
) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("nvrtc");
    std::fs::create_dir_all(&dir).unwrap();
    let ptx_path = dir.join(format!("{}.ptx", label.replace(':', ".")));
    std::fs::write(&ptx_path, ptx).unwrap();
    let out = Command::new(ptxas())
        .args([
            "-v",
            &format!("-arch={}", arch.sm_name()),
            "-o",
            "/dev/null",
        ])
        .arg(&ptx_path)
        .output()
        .unwrap_or_else(|e| panic!("cannot run ptxas ({e}); put it on PATH or set SCAN_PTXAS"));
    let log =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        failures.push(format!("{label}: ptxas failed:\n{log}"));
        return;
    }
    parse_ptxas(label, &log, reports);
}

/// Reads `ptxas -v` output: per entry function, its stack, spills,
/// registers and shared memory. ptxas prints each function's properties
/// under a `Function properties for NAME` line: an entry's own, then those
/// of the out-of-line device functions it calls, so each properties line is
/// attributed to the function it names (a callee that spills is reported
/// as a row of its own).
pub fn parse_ptxas(program: &str, log: &str, reports: &mut Vec<KernelReport>) {
    let number_before = |line: &str, unit: &str| -> u32 {
        line.split(',')
            .find(|part| part.contains(unit))
            .and_then(|part| part.split_whitespace().find_map(|w| w.parse().ok()))
            .unwrap_or(0)
    };
    let mut current: Option<KernelReport> = None;
    let mut properties_of: Option<String> = None;
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            if let Some(done) = current.take() {
                reports.push(done);
            }
            let kernel = rest.split('\'').next().unwrap_or_default().to_string();
            current = Some(KernelReport {
                program: program.to_string(),
                kernel,
                registers: 0,
                spill_bytes: 0,
                stack_bytes: 0,
                smem_bytes: 0,
            });
        } else if let Some(name) = line.split("Function properties for ").nth(1) {
            properties_of = Some(name.trim().to_string());
        } else if line.contains("bytes stack frame") {
            let stack = number_before(line, "stack frame");
            let spills = number_before(line, "spill stores") + number_before(line, "spill loads");
            let Some(k) = current.as_mut() else { continue };
            if properties_of.as_deref() == Some(k.kernel.as_str()) {
                k.stack_bytes = stack;
                k.spill_bytes = spills;
            } else if spills > 0 {
                let callee = properties_of.clone().unwrap_or_default();
                reports.push(KernelReport {
                    program: program.to_string(),
                    kernel: format!("{callee} (called by {})", k.kernel),
                    registers: 0,
                    spill_bytes: spills,
                    stack_bytes: stack,
                    smem_bytes: 0,
                });
            }
        } else if let Some(k) = current.as_mut() {
            if line.contains("Used") && line.contains("registers") {
                k.registers = number_before(line, "registers");
                k.smem_bytes = number_before(line, "smem");
            }
        }
    }
    if let Some(done) = current {
        reports.push(done);
    }
}
