//! Compiles every generated program with the real NVRTC 13.0 for the
//! architectures CUDA 13 supports (`Arch::CUDA_13`: sm_75 to sm_120, one
//! embedded source) and assembles it with `ptxas -v`: a compile error, a
//! missing kernel, a spill to local memory, or a tile size that differs
//! between the Rust and CUDA sides fails the test. Every test operator's
//! plain program and the flag builders go to every architecture; its
//! segmented program (every kernel: plain, element-wise, per-segment
//! totals, segmented of both strategies and every segment source, forward
//! and reverse) to sm_90 and
//! (for six of them) to one other architecture by rotation, or with
//! `SCAN_NVRTC_FULL=1` to all of them (`common::nvrtc::Coverage` says
//! why). Programs compile in parallel on all cores.
//!
//! Needs `libnvrtc.so.13` on the library path and `ptxas` on `PATH` (or in
//! `SCAN_PTXAS`); `scripts/test` installs both (pip packages
//! `nvidia-cuda-nvrtc==13.0.88`, `nvidia-cuda-nvcc==13.0.88`) and sets
//! `SCAN_REQUIRE_NVRTC=1`, under which their absence is a failure. Without
//! it, a plain `cargo test` skips with one line.
#![cfg(feature = "gpu")] // the GPU backend, its runtime and cudarc

mod common;
use common::ledger::{self, compile_and_assemble, compile_and_assemble_with, Spills};
use common::nvrtc::{parse_ptxas, tools_available, Coverage, KernelReport};
use common::ops::*;
use gpu_scan::kernels_gen::abi::{AreaStep, KernelAbi, TotalsStep, TOTALS_SOURCES};
use gpu_scan::kernels_gen::segment_flags::{segment_flags_program, FlagsKernel};
use gpu_scan::kernels_gen::segment_starts::HeadsIn;
use gpu_scan::kernels_gen::{
    self, Arch, FlagFormat, Kernel, SegmentSource, SegmentedKernel, SegmentedStrategy,
};
use gpu_scan::ScanOp;
use rayon::prelude::*;

/// Which of an operator's programs a job compiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    /// The plain scans' kernels.
    Plain,
    /// Every kernel, which switches on the library's segmented part.
    Segmented,
    /// The plain scans' kernels as quick builds
    /// ([`kernels_gen::QUICK_BUILD_OPTION`]).
    QuickPlain,
    /// Every kernel as a quick build.
    QuickSegmented,
}

/// Compiles one of `Op`'s programs for `arch`, as the runtime builds
/// them ([`Variant`]); collects ptxas's per-kernel report.
fn compile<Op: ScanOp>(arch: Arch, variant: Variant) -> (Vec<KernelReport>, Vec<String>) {
    let (mut reports, mut failures) = (Vec::new(), Vec::new());
    let kernels: Vec<KernelAbi> = if matches!(variant, Variant::Segmented | Variant::QuickSegmented)
    {
        KernelAbi::all().collect()
    } else {
        Kernel::ALL.into_iter().map(KernelAbi::plain).collect()
    };
    // The same options for plain and segmented programs: a program with
    // segmented kernels switches on the library's segmented part itself.
    let mut options = kernels_gen::nvrtc_options(arch);
    if matches!(variant, Variant::QuickPlain | Variant::QuickSegmented) {
        options.push(kernels_gen::QUICK_BUILD_OPTION.to_string());
    }
    let name = match variant {
        Variant::Plain => "plain",
        Variant::Segmented => "segmented",
        Variant::QuickPlain => "quick",
        Variant::QuickSegmented => "quick-segmented",
    };
    let label = format!("{}:{name}:{}", Op::NAME, arch.sm_name());
    let source = gpu_scan::scan_runtime::program_source::<Op>(&kernels);
    let symbols: Vec<String> = kernels.iter().map(|k| k.symbol(Op::NAME)).collect();
    let spills = if matches!(variant, Variant::QuickPlain | Variant::QuickSegmented) {
        Spills::Allowed
    } else {
        Spills::Refused
    };
    compile_and_assemble_with(
        &label,
        &source,
        options,
        &symbols,
        arch,
        spills,
        &mut reports,
        &mut failures,
    );
    (reports, failures)
}

/// The operator-independent program that builds head flags and finds
/// segments' starts.
fn compile_flag_builders(arch: Arch) -> (Vec<KernelReport>, Vec<String>) {
    let (mut reports, mut failures) = (Vec::new(), Vec::new());
    let symbols: Vec<String> = FlagsKernel::all().map(FlagsKernel::symbol).collect();
    let label = format!("segment_flags:{}", arch.sm_name());
    compile_and_assemble(
        &label,
        &segment_flags_program(),
        kernels_gen::nvrtc_options(arch),
        &symbols,
        arch,
        &mut reports,
        &mut failures,
    );
    (reports, failures)
}

/// Operators a declarative macro generates (`examples/common/wide_ops.rs`):
/// their array lengths and literal indices arrive in `macro_rules!`'s
/// invisible groups.
#[path = "../examples/common/wide_ops.rs"]
mod wide_ops;

#[test]
fn an_operator_from_a_declarative_macro_compiles() {
    if !tools_available() {
        return;
    }
    let arch = Arch::SM_90;
    let kernels = [KernelAbi::plain(Kernel::SinglePassInclusive)];
    let source = gpu_scan::scan_runtime::program_source::<wide_ops::Wide24>(&kernels);
    let symbols: Vec<String> = kernels
        .iter()
        .map(|k| k.symbol(<wide_ops::Wide24 as ScanOp>::NAME))
        .collect();
    let mut failures = Vec::new();
    let mut reports = Vec::new();
    compile_and_assemble(
        "macro_lanes3",
        &source,
        kernels_gen::nvrtc_options(arch),
        &symbols,
        arch,
        &mut reports,
        &mut failures,
    );
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(reports.len(), 1);
}

#[test]
fn the_ptxas_report_is_read_per_function() {
    // An entry that spills, followed by a callee that does not: the spill
    // stays with the entry (a parser that kept the last properties line
    // would report none).
    let log = "ptxas info    : Compiling entry function 'k' for 'sm_90'
ptxas info    : Function properties for k
    24 bytes stack frame, 20 bytes spill stores, 20 bytes spill loads
ptxas info    : Used 32 registers, used 1 barriers, 24 bytes cumulative stack size, 17024 bytes smem
ptxas info    : Function properties for _Z6calleev
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function 'j' for 'sm_90'
ptxas info    : Function properties for j
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 25600 bytes smem
ptxas info    : Function properties for _Z6calleev
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
";
    let mut reports = Vec::new();
    parse_ptxas("p", log, &mut reports);
    let rows: Vec<(String, u32, u32)> = reports
        .iter()
        .map(|r| (r.kernel.clone(), r.spill_bytes, r.registers))
        .collect();
    assert_eq!(
        rows,
        [
            ("k".to_string(), 40, 32),
            ("_Z6calleev (called by j)".to_string(), 8, 0),
            ("j".to_string(), 0, 40),
        ]
    );
}

type Job = fn(Arch, Variant) -> (Vec<KernelReport>, Vec<String>);

/// The test operators. Under [`Coverage::Rotation`] every operator's
/// segmented program (every kernel) is compiled for sm_90, and the first
/// [`ROTATED`] ones' also for one other architecture each (sm_75, sm_80,
/// sm_86, sm_89, sm_100, sm_120 in turn: Stats and Mat2, the most
/// registers, to the Blackwell parts, which also compile the pipelined
/// passes); the plain programs go to every architecture. The others are
/// elements of at most 16 bytes, like the rotated ones, and outside sm_90
/// every kernel may take 255 registers (one block per SM:
/// `kernels_gen::tuning::ArchTuning::occupancy_targets`).
const OPERATORS: [Job; 16] = [
    compile::<SumU8>,
    compile::<Affine>,
    compile::<Latest>,
    compile::<JoinSpans>,
    compile::<Stats>,
    compile::<Mat2>,
    compile::<SumU32>,
    compile::<MaxF32>,
    compile::<MinI64>,
    compile::<AffineU32>,
    compile::<Pairs>,
    compile::<SaturatingLanes>,
    compile::<SumU32Small>,
    compile::<Scan>,
    compile::<gpu_scan::ops::CompensatedF32>,
    compile::<gpu_scan::ops::CompensatedF64>,
];

/// How many of [`OPERATORS`] have their segmented programs compiled for an
/// architecture besides sm_90 under [`Coverage::Rotation`]: one for each.
const ROTATED: usize = 6;

/// Whether operator `i`'s segmented program is compiled for `arch`.
fn segmented_on(coverage: Coverage, arch: Arch, i: usize) -> bool {
    if i < ROTATED {
        coverage.covers(arch, i)
    } else {
        coverage.covers_all(arch)
    }
}

#[test]
fn every_generated_kernel_compiles_without_spills() {
    if !tools_available() {
        return;
    }
    let coverage = Coverage::from_env();
    // SCAN_NVRTC_ARCHS=sm_80,sm_90 narrows the run while iterating (the
    // test then fails, so that a narrowed run never passes for a full one).
    let only: Option<Vec<Arch>> = std::env::var("SCAN_NVRTC_ARCHS")
        .ok()
        .map(|v| v.split(',').filter_map(Arch::parse).collect());
    let archs: Vec<Arch> = Arch::CUDA_13
        .into_iter()
        .filter(|a| only.as_ref().is_none_or(|o| o.contains(a)))
        .collect();
    // The segmented programs first (the longest), then the plain ones and
    // the flag builders, so that both cores stay busy to the end.
    enum Program {
        Operator(Job, Variant),
        FlagBuilders,
    }
    let mut jobs: Vec<(Program, Arch)> = Vec::new();
    for &arch in &archs {
        for (i, &job) in OPERATORS.iter().enumerate() {
            if segmented_on(coverage, arch, i) {
                jobs.push((Program::Operator(job, Variant::Segmented), arch));
            }
        }
    }
    let segmented_programs = jobs.len();
    for &arch in &archs {
        jobs.extend(
            OPERATORS
                .iter()
                .map(|&job| (Program::Operator(job, Variant::Plain), arch)),
        );
        jobs.push((Program::FlagBuilders, arch));
    }
    // par_bridge hands the jobs out in this order, one at a time.
    let results: Vec<(Vec<KernelReport>, Vec<String>)> = jobs
        .iter()
        .par_bridge()
        .map(|(program, arch)| match program {
            Program::Operator(job, variant) => job(*arch, *variant),
            Program::FlagBuilders => compile_flag_builders(*arch),
        })
        .collect();
    let mut reports = Vec::new();
    let mut failures = Vec::new();
    for (r, f) in results {
        reports.extend(r);
        failures.extend(f);
    }

    println!(
        "{:<34} {:<62} {:>5} {:>6} {:>6} {:>6}",
        "program", "kernel", "regs", "spill", "stack", "smem"
    );
    // The kernels compiled in this run (those read from the ledger are in
    // tests/kernel-ledger.txt).
    for r in &reports {
        if !ledger::is_ledger_row(r) {
            println!(
                "{:<34} {:<62} {:>5} {:>6} {:>6} {:>6}",
                r.program, r.kernel, r.registers, r.spill_bytes, r.stack_bytes, r.smem_bytes
            );
        }
        if r.spill_bytes > 0 {
            failures.push(format!(
                "{}: {} spills {} bytes to local memory",
                r.program, r.kernel, r.spill_bytes
            ));
        }
    }
    // Per architecture and operator: the plain program, and the segmented
    // one (every kernel of `KernelAbi::all`: plain, element-wise, and the
    // segmented kernels of both strategies, forward and, but for the
    // segmented pipelined passes and the element-wise kernel, in reverse);
    // then the flag builders.
    let segmented_kernels = SegmentedStrategy::ALL.len() * SegmentedKernel::ALL.len();
    // The per-segment totals' two steps over rows and over offsets.
    let totals_kernels = TotalsStep::ALL.len() * TOTALS_SOURCES.len();
    // The two-dimensional scan's three steps.
    let area_kernels = AreaStep::ALL.len();
    let forward = Kernel::ALL.len() + 1 + segmented_kernels + totals_kernels + area_kernels;
    let no_reverse = KernelAbi::all_forward()
        .filter(|k| k.in_direction(gpu_scan::Direction::Reverse).is_none())
        .count();
    assert_eq!(
        no_reverse,
        1 + 2 * 2 * SegmentSource::ALL.len() + totals_kernels + area_kernels,
        "segmented pipelined kernels (two kinds, two strategies, every segment source), the element-wise one, the totals' steps and the two-dimensional scan's"
    );
    let full_program = KernelAbi::all().count();
    assert_eq!(full_program, 2 * forward - no_reverse);
    // Per format, two offset widths and four key widths; two offset checks
    // and four offset indexes (two offset widths, two entry widths); the
    // segment starts from each head source, and the count's store; a
    // shard's edges from each head source and each offset width.
    let flag_builders =
        FlagFormat::ALL.len() * (2 + 4) + 2 + 4 + HeadsIn::ALL.len() + 1 + HeadsIn::ALL.len() + 2;
    let expected_kernels = segmented_programs * full_program
        + archs.len() * (OPERATORS.len() * Kernel::ALL.len() + flag_builders);
    // Every architecture compiles some operator's segmented program.
    if only.is_none() {
        for arch in Arch::CUDA_13 {
            assert!((0..OPERATORS.len()).any(|i| segmented_on(coverage, arch, i)));
        }
    }
    if archs.len() != Arch::CUDA_13.len() {
        failures.push(format!(
            "SCAN_NVRTC_ARCHS narrowed the run to {} architectures",
            archs.len()
        ));
    }
    let entries = reports
        .iter()
        .filter(|r| !r.kernel.contains(" (called by "))
        .count();
    if entries != expected_kernels {
        failures.push(format!(
            "ptxas reported {entries} kernels, expected {expected_kernels}"
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    println!(
        "nvrtc_compile: {} kernels of {} programs compiled with NVRTC and ptxas, no spills: the {} operators' plain programs and the flag builders for every architecture, their segmented programs (every kernel) for {}",
        entries,
        jobs.len(),
        OPERATORS.len(),
        coverage.describe(),
    );
    println!("nvrtc_compile: {}", ledger::summary());
}

/// Quick builds: what a first scan runs on while the optimized build of
/// its kernel compiles (`GPU_SCAN_QUICK_BUILDS=always` builds every kernel
/// so). Every test operator's plain program compiles in NVRTC's
/// fast-compile mode for sm_90 and sm_80 (the pipelined passes and the
/// look-back passes of both families of architectures), and the rotated
/// operators' programs of every kernel (segmented, element-wise, totals,
/// two-dimensional) for sm_90, and assembles. Spills are allowed: a quick
/// build's code is slower by design, never different in what it computes
/// (the GPU tests run the suites on quick builds).
#[test]
fn quick_builds_compile() {
    if !tools_available() {
        return;
    }
    let mut jobs: Vec<(Job, Arch, Variant)> = OPERATORS[..ROTATED]
        .iter()
        .map(|&job| (job, Arch::SM_90, Variant::QuickSegmented))
        .collect();
    for arch in [Arch::SM_90, Arch::SM_80] {
        jobs.extend(
            OPERATORS
                .iter()
                .map(|&job| (job, arch, Variant::QuickPlain)),
        );
    }
    let results: Vec<(Vec<KernelReport>, Vec<String>)> = jobs
        .par_iter()
        .map(|&(job, arch, variant)| job(arch, variant))
        .collect();
    let failures: Vec<String> = results.iter().flat_map(|r| r.1.clone()).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let kernels = results
        .iter()
        .flat_map(|r| &r.0)
        .filter(|r| !r.kernel.contains(" (called by "))
        .count();
    assert_eq!(
        kernels,
        2 * OPERATORS.len() * Kernel::ALL.len() + ROTATED * KernelAbi::all().count()
    );
    println!("nvrtc_compile: {kernels} kernels of quick builds compiled");
}

/// The test stages' translations (`common::ops`: maps, predicates and
/// equalities over primitives and structs, and sort keys of one and of
/// three components), each in a kernel that applies it to an array,
/// compile for every architecture CUDA 13 supports.
#[test]
fn stage_programs_compile_for_every_architecture() {
    if !tools_available() {
        return;
    }
    use gpu_scan::stages::{ScanEquality, ScanMap, ScanPredicate};
    let stages: [(&str, &str, bool); 12] = [
        (
            <Double as ScanMap>::NAME,
            <Double as ScanMap>::CUDA_SOURCE,
            false,
        ),
        (
            <Triple as ScanMap>::NAME,
            <Triple as ScanMap>::CUDA_SOURCE,
            false,
        ),
        (
            <WrapU8 as ScanMap>::NAME,
            <WrapU8 as ScanMap>::CUDA_SOURCE,
            false,
        ),
        (
            <Shift as ScanMap>::NAME,
            <Shift as ScanMap>::CUDA_SOURCE,
            false,
        ),
        (
            <AtTwo as ScanMap>::NAME,
            <AtTwo as ScanMap>::CUDA_SOURCE,
            false,
        ),
        (
            <Third as ScanPredicate>::NAME,
            <Third as ScanPredicate>::CUDA_SOURCE,
            false,
        ),
        (
            <OneMore as ScanPredicate>::NAME,
            <OneMore as ScanPredicate>::CUDA_SOURCE,
            false,
        ),
        (
            <Growing as ScanPredicate>::NAME,
            <Growing as ScanPredicate>::CUDA_SOURCE,
            false,
        ),
        (
            <Positive as ScanPredicate>::NAME,
            <Positive as ScanPredicate>::CUDA_SOURCE,
            false,
        ),
        (
            <SameU32 as ScanEquality>::NAME,
            <SameU32 as ScanEquality>::CUDA_SOURCE,
            true,
        ),
        (
            <SameF32 as ScanEquality>::NAME,
            <SameF32 as ScanEquality>::CUDA_SOURCE,
            true,
        ),
        (
            <SameSlope as ScanEquality>::NAME,
            <SameSlope as ScanEquality>::CUDA_SOURCE,
            true,
        ),
    ];
    // The sort keys (`#[sort_key]`), their components each a function.
    use gpu_scan::sort::{CompositeKey, SortKey};
    fn key<K: SortKey>() -> (&'static str, &'static str, usize) {
        (K::NAME, K::CUDA_SOURCE, K::Key::WIDTHS.len())
    }
    let keys = [key::<BySignCountSum>(), key::<BySlope>()];
    // One program of all of them, for each architecture.
    let mut source = gpu_scan::kernels_gen::PRELUDE.to_string();
    for (name, stage, pairs) in &stages {
        let one = common::ops::stage_program(name, stage, *pairs);
        source.push_str(&one[gpu_scan::kernels_gen::PRELUDE.len()..]);
    }
    for (name, key, components) in keys {
        let one = common::ops::sort_key_program(name, key, components);
        source.push_str(&one[gpu_scan::kernels_gen::PRELUDE.len()..]);
    }
    let symbols: Vec<String> = stages
        .iter()
        .map(|(n, ..)| *n)
        .chain(keys.iter().map(|(n, ..)| *n))
        .map(|n| format!("run_{n}"))
        .collect();
    let (mut reports, mut failures) = (Vec::new(), Vec::new());
    for arch in Arch::CUDA_13 {
        compile_and_assemble(
            &format!("stages:{}", arch.sm_name()),
            &source,
            kernels_gen::nvrtc_options(arch),
            &symbols,
            arch,
            &mut reports,
            &mut failures,
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(
        reports
            .iter()
            .filter(|r| !r.kernel.contains(" (called by "))
            .count(),
        (stages.len() + keys.len()) * Arch::CUDA_13.len()
    );
    assert!(reports.iter().all(|r| r.spill_bytes == 0));
    println!(
        "nvrtc_compile: {} stages and {} sort keys in one program for {} architectures",
        stages.len(),
        keys.len(),
        Arch::CUDA_13.len()
    );
}

/// An operator whose snake-case name is a C++ keyword (`Int`: `int`).
#[gpu_scan::scan_op(element = u32, identity = 0, op = |a, b| a + b)]
struct Int;

/// Its policy is named `int_op`, and its plain program compiles.
#[test]
fn an_operator_named_like_a_keyword_compiles() {
    assert_eq!(<Int as ScanOp>::NAME, "int_op");
    if !tools_available() {
        return;
    }
    let (reports, failures) = compile::<Int>(Arch::SM_90, Variant::Plain);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(!reports.is_empty());
}

/// The compaction kernels (`kernels_gen::select`), for predicates and an
/// equality over words and over a struct and for flags over both, compile
/// for every architecture CUDA 13 supports without spilling.
#[test]
fn sort_programs_compile_for_every_architecture() {
    if !tools_available() {
        return;
    }
    use gpu_scan::kernels_gen::radix_sort::{sort_program, SortKernel, SortShape, SortValueType};
    use gpu_scan::scan_runtime::DeviceSortKey;
    use gpu_scan::ScanElement;
    fn value<T: ScanElement>() -> SortValueType {
        SortValueType {
            cuda_type: T::CUDA_TYPE,
            declarations: T::CUDA_DECL,
            size: std::mem::size_of::<T>(),
        }
    }
    let keys = [
        u8::KEY,
        i16::KEY,
        u32::KEY,
        i32::KEY,
        f32::KEY,
        u64::KEY,
        i64::KEY,
        f64::KEY,
    ];
    let values = [
        None,
        Some(value::<u32>()),
        Some(value::<u64>()),
        Some(value::<Affine>()),
    ];
    compile_everywhere_without_spills("sort", keys.len() * values.len(), |arch, i| {
        let (key, value) = (&keys[i / values.len()], values[i % values.len()].as_ref());
        let symbols = SortKernel::ALL
            .iter()
            .map(|s| s.symbol(key, value))
            .collect();
        let shape = SortShape::default_for(key, value.map_or(0, |v| v.size), arch);
        (sort_program(key, value, shape), symbols)
    });
    println!(
        "nvrtc_compile: {} sort programs for {} architectures",
        keys.len() * values.len(),
        Arch::CUDA_13.len()
    );

    // Records by a #[sort_key]: a component's bits and the gather.
    use gpu_scan::kernels_gen::radix_sort::{sort_by_key_program, ByKeyKernel};
    use gpu_scan::sort::{CompositeKey, SortKey};
    fn by_key<S: SortKey>() -> (String, Vec<String>) {
        let widths = <S::Key as CompositeKey>::WIDTHS;
        let program = sort_by_key_program(S::NAME, S::CUDA_SOURCE, widths);
        let symbols = ByKeyKernel::all(widths.len())
            .map(|k| k.symbol(S::NAME))
            .collect();
        (program, symbols)
    }
    // Segmented sorts: the segments' numbers and the gathers.
    use gpu_scan::kernels_gen::radix_sort::{segmented_sort_program, SegmentedKernel, SortKeyType};
    fn segmented(key: SortKeyType, value: Option<SortValueType>) -> (String, Vec<String>) {
        let symbols = SegmentedKernel::all(value.is_some())
            .iter()
            .map(|k| k.symbol(&key, value.as_ref()))
            .collect();
        (segmented_sort_program(&key, value.as_ref()), symbols)
    }
    let by_key_programs = [by_key::<BySignCountSum>(), by_key::<BySlope>()];
    compile_everywhere_without_spills("sort_by", by_key_programs.len(), |_, i| {
        by_key_programs[i].clone()
    });
    let mut segmented_programs = Vec::new();
    for key in [u8::KEY, u32::KEY, f64::KEY] {
        for value in [None, Some(value::<Affine>())] {
            segmented_programs.push(segmented(key, value));
        }
    }
    compile_everywhere_without_spills("segsort", segmented_programs.len(), |_, i| {
        segmented_programs[i].clone()
    });
}

#[test]
fn select_programs_compile_for_every_architecture() {
    if !tools_available() {
        return;
    }
    use gpu_scan::kernels_gen::select::{select_program, SelectKernel, SelectShape, SelectSource};
    use gpu_scan::stages::{ScanEquality, ScanPredicate};
    use gpu_scan::ScanElement;
    fn stage<P: ScanPredicate>() -> (SelectSource<'static>, usize) {
        let source = SelectSource::Stage {
            name: P::NAME,
            source: P::CUDA_SOURCE,
        };
        (source, std::mem::size_of::<P::Element>())
    }
    fn equality<E: ScanEquality>() -> (SelectSource<'static>, usize) {
        let source = SelectSource::Stage {
            name: E::NAME,
            source: E::CUDA_SOURCE,
        };
        (source, std::mem::size_of::<E::Element>())
    }
    fn keyed<E: ScanEquality, Op: ScanOp>() -> (SelectSource<'static>, usize) {
        let op_part =
            gpu_scan::scan_runtime::layout::<Op>().cuda_declaration(Op::NAME) + Op::CUDA_SOURCE;
        let source = SelectSource::Keyed {
            name: E::NAME,
            source: E::CUDA_SOURCE,
            op: Op::NAME,
            op_part: Box::leak(op_part.into_boxed_str()),
            value_size: std::mem::size_of::<Op::Element>(),
        };
        (source, std::mem::size_of::<E::Element>())
    }
    fn two<P: ScanPredicate, Q: ScanPredicate>() -> (SelectSource<'static>, usize) {
        let source = SelectSource::TwoStages {
            first: P::NAME,
            first_source: P::CUDA_SOURCE,
            second: Q::NAME,
            second_source: Q::CUDA_SOURCE,
        };
        (source, std::mem::size_of::<P::Element>())
    }
    fn element<T: ScanElement>() -> (SelectSource<'static>, usize) {
        let source = SelectSource::Element {
            cuda_type: T::CUDA_TYPE,
            declarations: T::CUDA_DECL,
        };
        (source, std::mem::size_of::<T>())
    }
    let programs: Vec<(SelectKernel, (SelectSource<'static>, usize))> = vec![
        (SelectKernel::If, stage::<Third>()),
        (SelectKernel::PartitionIf, stage::<Third>()),
        (SelectKernel::PartitionIf, stage::<ThirdU8>()),
        (SelectKernel::If, stage::<Growing>()),
        (SelectKernel::PartitionIf, stage::<Positive>()),
        (SelectKernel::If, stage::<EvenCount>()),
        (SelectKernel::PartitionIf, stage::<EvenCount>()),
        (SelectKernel::Unique, equality::<SameU32>()),
        (SelectKernel::Unique, equality::<SameSlope>()),
        (SelectKernel::RunLengthEncode, equality::<SameU32>()),
        (SelectKernel::RunLengthEncode, equality::<SameSlope>()),
        (SelectKernel::NonTrivialRuns, equality::<SameU32>()),
        (SelectKernel::NonTrivialRuns, equality::<SameSlope>()),
        (SelectKernel::Flagged, element::<u32>()),
        (SelectKernel::Flagged, element::<Affine>()),
        (SelectKernel::Flagged, element::<Stats>()),
        (SelectKernel::ReverseTail, element::<u32>()),
        (SelectKernel::ReverseTail, element::<Affine>()),
        (SelectKernel::ReduceByKey, keyed::<SameU32, AffineU32>()),
        (SelectKernel::ReduceByKey, keyed::<SameU32, SumU32>()),
        (SelectKernel::ReduceByKey, keyed::<SameSlope, Stats>()),
        (SelectKernel::ReduceByKey, keyed::<SameU32, Mat2>()),
        (SelectKernel::PartitionThreeCount, two::<Third, OneMore>()),
        (SelectKernel::PartitionThree, two::<Third, OneMore>()),
        (SelectKernel::PartitionThreeCount, two::<Growing, Lifting>()),
        (SelectKernel::PartitionThree, two::<Growing, Lifting>()),
        (
            SelectKernel::PartitionThreeCount,
            two::<EvenCount, LargeSum>(),
        ),
        (SelectKernel::PartitionThree, two::<EvenCount, LargeSum>()),
    ];
    let jobs: Vec<(Arch, usize)> = Arch::CUDA_13
        .iter()
        .flat_map(|&arch| (0..programs.len()).map(move |i| (arch, i)))
        .collect();
    let results: Vec<(Vec<KernelReport>, Vec<String>)> = jobs
        .par_iter()
        .map(|&(arch, i)| {
            let (kernel, (source, size)) = &programs[i];
            let (name, shape_size) = match source {
                SelectSource::Stage { name, .. } => (name.to_string(), *size),
                SelectSource::Keyed {
                    name,
                    op,
                    value_size,
                    ..
                } => (format!("{name}_{op}"), size + value_size),
                SelectSource::TwoStages { first, second, .. } => {
                    (format!("{first}_{second}"), *size)
                }
                SelectSource::Element { cuda_type, .. } => (cuda_type.to_string(), *size),
            };
            let (mut reports, mut failures) = (Vec::new(), Vec::new());
            compile_and_assemble(
                &format!("select:{}:{}", kernel.symbol(&name), arch.sm_name()),
                &select_program(
                    *kernel,
                    source,
                    *size,
                    SelectShape::default_for(*kernel, shape_size, arch),
                ),
                kernels_gen::nvrtc_options(arch),
                &[kernel.symbol(&name)],
                arch,
                &mut reports,
                &mut failures,
            );
            (reports, failures)
        })
        .collect();
    let failures: Vec<String> = results.iter().flat_map(|r| r.1.clone()).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let reports: Vec<&KernelReport> = results.iter().flat_map(|r| &r.0).collect();
    let spills: Vec<String> = reports
        .iter()
        .filter(|r| r.spill_bytes > 0)
        .map(|r| {
            format!(
                "{} {}: {} bytes spilled",
                r.program, r.kernel, r.spill_bytes
            )
        })
        .collect();
    assert!(spills.is_empty(), "{}", spills.join("\n"));
    println!(
        "nvrtc_compile: {} select programs for {} architectures",
        programs.len(),
        Arch::CUDA_13.len()
    );
}

/// Every staged kernel (the passes a scan through load and store stages
/// takes, forward and reverse) of the test stages' operators, as the
/// runtime builds them, compiles without spills for every architecture.
#[test]
fn staged_programs_compile_for_every_architecture() {
    if !tools_available() {
        return;
    }
    use gpu_scan::kernels_gen::abi::{StageRef, Stages};
    use gpu_scan::stages::ScanMap;
    fn stage<M: ScanMap>() -> Option<StageRef> {
        Some(StageRef {
            id: std::any::TypeId::of::<M>(),
            name: M::NAME,
            source: M::CUDA_SOURCE,
            input_size: std::mem::size_of::<M::Input>(),
            output_size: std::mem::size_of::<M::Output>(),
        })
    }
    fn program<Op: ScanOp>(stages: Stages) -> (String, Vec<String>) {
        let kernels: Vec<KernelAbi> = KernelAbi::all_staged(stages).collect();
        let source = gpu_scan::scan_runtime::program_source::<Op>(&kernels);
        let symbols = kernels.iter().map(|k| k.symbol(Op::NAME)).collect();
        (source, symbols)
    }
    let programs = [
        program::<SumU32>(Stages {
            load: stage::<Triple>(),
            store: None,
        }),
        program::<SumU32>(Stages {
            load: None,
            store: stage::<Double>(),
        }),
        program::<AffineU32>(Stages {
            load: stage::<ToAffineU32>(),
            store: stage::<AffineOffset>(),
        }),
        program::<Latest>(Stages {
            load: stage::<TagEveryThird>(),
            store: stage::<LatestValue>(),
        }),
        program::<Affine>(Stages {
            load: stage::<Shift>(),
            store: stage::<AtTwo>(),
        }),
        // An element the kernels hold packed in words, through both stages.
        program::<wide_ops::Bytes41>(Stages {
            load: stage::<wide_ops::Bytes41Again>(),
            store: stage::<wide_ops::Bytes41Lane>(),
        }),
    ];
    compile_everywhere_without_spills("staged", programs.len(), |_, p| programs[p].clone());
}

#[test]
fn recurrence_programs_compile_for_every_architecture() {
    if !tools_available() {
        return;
    }
    use gpu_scan::kernels_gen::recurrence::{
        recurrence_program, RecurrenceKernel, RecurrenceProgram, RecurrenceTransition,
    };
    use gpu_scan::kernels_gen::RealType;
    use RecurrenceTransition::*;
    // Every lane mapping a state up to 256 values takes, and matrices up to
    // the largest GpuRecurrence takes (8 × 8 in f32, 7 × 7 in f64).
    let mut programs = Vec::new();
    for real in [RealType::F32, RealType::F64] {
        for transition in [Scalar, Diagonal] {
            for (group, lanes) in [
                (1, 1),
                (2, 1),
                (4, 1),
                (8, 1),
                (16, 1),
                (32, 1),
                (32, 2),
                (32, 3),
                (32, 4),
                (32, 8),
            ] {
                programs.push(RecurrenceProgram {
                    real,
                    transition,
                    group,
                    lanes,
                });
            }
        }
        for state in 1..=kernels_gen::recurrence::most_matrix_state(real) as u32 {
            programs.push(RecurrenceProgram {
                real,
                transition: Matrix,
                group: 1,
                lanes: state,
            });
        }
    }
    compile_everywhere_without_spills("recurrence", programs.len(), |_, p| {
        let program = &programs[p];
        let symbols = RecurrenceKernel::all(program.transition)
            .iter()
            .map(|k| k.symbol(program))
            .collect();
        (recurrence_program(program), symbols)
    });
}

#[test]
fn spmv_programs_compile_for_every_architecture() {
    if !tools_available() {
        return;
    }
    use gpu_scan::kernels_gen::spmv::{spmv_program, SpmvKernel, SpmvProgram, SpmvShape};
    use gpu_scan::kernels_gen::RealType;
    // Both types and offset widths in the table's shapes, and the shapes
    // `examples/spmv_bench.rs` sweeps.
    let mut programs = Vec::new();
    for real in [RealType::F32, RealType::F64] {
        for offset_bits in [32, 64] {
            let table = SpmvShape::default_for(real, Arch::SM_90);
            for shape in std::iter::once(table).chain(SpmvShape::sweep(real)) {
                programs.push(SpmvProgram {
                    real,
                    offset_bits,
                    shape,
                });
            }
        }
    }
    programs.dedup();
    compile_everywhere_without_spills("spmv", programs.len(), |_, p| {
        let program = &programs[p];
        let symbols = SpmvKernel::ALL.iter().map(|k| k.symbol(program)).collect();
        (spmv_program(program), symbols)
    });
}

/// Compiles `count` programs (`program(arch, i)`: the source and its
/// symbols, labelled `family:first symbol:arch`) for every CUDA 13
/// architecture in parallel, through the ledger, and fails on any failure
/// or spill.
fn compile_everywhere_without_spills(
    family: &str,
    count: usize,
    program: impl Fn(Arch, usize) -> (String, Vec<String>) + Sync,
) {
    let jobs: Vec<(Arch, usize)> = Arch::CUDA_13
        .iter()
        .flat_map(|&arch| (0..count).map(move |i| (arch, i)))
        .collect();
    let results: Vec<(Vec<KernelReport>, Vec<String>)> = jobs
        .par_iter()
        .map(|&(arch, i)| {
            let (source, symbols) = program(arch, i);
            let (mut reports, mut failures) = (Vec::new(), Vec::new());
            compile_and_assemble(
                &format!("{family}:{}:{}", symbols[0], arch.sm_name()),
                &source,
                kernels_gen::nvrtc_options(arch),
                &symbols,
                arch,
                &mut reports,
                &mut failures,
            );
            (reports, failures)
        })
        .collect();
    let failures: Vec<String> = results.iter().flat_map(|r| r.1.clone()).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let spills: Vec<String> = results
        .iter()
        .flat_map(|r| &r.0)
        .filter(|r| r.spill_bytes > 0)
        .map(|r| {
            format!(
                "{} {}: {} bytes spilled",
                r.program, r.kernel, r.spill_bytes
            )
        })
        .collect();
    assert!(spills.is_empty(), "{}", spills.join("\n"));
}
