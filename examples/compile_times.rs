//! NVRTC compile time of each kernel of one operator's program, compiled on
//! its own as the runtime compiles it (a CUBIN for one architecture, no
//! disk cache): what a first use waits for, and why the interim kernels of
//! background compiles ([`gpu_scan::Tuning::background_compile`]) are the
//! ones they are. Needs libnvrtc, not a GPU.
//!
//! `compile_times [sm_XX] [filter]`: the architecture (default sm_90) and a
//! text the kernel's name must contain (default: every forward kernel).
//! `EXTRA` adds NVRTC options (for example `--fdevice-time-trace=FILE`).
//! `SALT=1` puts a comment no other run has in front of each program, so
//! that nothing a compile might keep between processes can serve it.

use gpu_scan::kernels_gen::abi::KernelAbi;
use gpu_scan::kernels_gen::{nvrtc_cubin_options, Direction};
use gpu_scan::prelude::*;
use gpu_scan::scan_runtime::{jit, program_source, DiskCache};
use gpu_scan::Arch;
use std::time::Instant;

#[scan_op(element = u32, identity = 0, op = |a, b| a + b)]
struct Sum;

fn main() {
    if !jit::nvrtc_present() {
        println!("no libnvrtc: nothing to time");
        return;
    }
    let mut args = std::env::args().skip(1);
    let arch = args
        .next()
        .map(|a| {
            Arch::CUDA_13
                .into_iter()
                .find(|x| x.sm_name() == a)
                .unwrap_or_else(|| panic!("unknown architecture {a}"))
        })
        .unwrap_or(Arch::SM_90);
    let filter = args.next().unwrap_or_default();
    let extra: Vec<String> = std::env::var("EXTRA")
        .map(|e| e.split_whitespace().map(String::from).collect())
        .unwrap_or_default();
    let disk = DiskCache::disabled();
    println!(
        "u32 sum, CUBIN for {}, one kernel per program:",
        arch.sm_name()
    );
    for abi in KernelAbi::all().filter(|k| k.direction() == Direction::Forward) {
        let name = format!("{abi:?}");
        if !name.contains(&filter) {
            continue;
        }
        let mut source = program_source::<Sum>(&[abi]);
        if std::env::var_os("SALT").is_some() {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            source.insert_str(0, &format!("// salt {now} {}\n", std::process::id()));
        }
        let mut options = nvrtc_cubin_options(arch);
        options.extend(extra.iter().cloned());
        let start = Instant::now();
        jit::compile("sum", &source, options, arch, 0, &disk).expect("the program compiles");
        println!("{:8.1} ms  {name}", start.elapsed().as_secs_f64() * 1e3);
    }
}
