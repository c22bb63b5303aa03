//! Every element size `#[scan_op]` accepts, 1 to `MAX_ELEMENT_SIZE` (256)
//! bytes, compiles with NVRTC 13.0 and assembles with ptxas without a
//! spill, for sm_90 and for one other architecture CUDA 13 supports (the
//! sizes `2k` and `2k + 1` for the `k % 6`-th of sm_75, sm_80, sm_86,
//! sm_89, sm_100 and sm_120, so that each takes sizes of every alignment
//! across the whole range), or with `SCAN_NVRTC_FULL=1` for all seven
//! (`common::nvrtc::Coverage` says why), in the tile shape the
//! macro would choose for it (`auto_items_per_thread`,
//! `auto_block_threads`) and its layout (`Layout`, packed in words where
//! `packed_element` says). Each size is an element struct of lanes of the
//! widest primitive dividing it (so alignments 1, 2, 4 and 8 all occur),
//! the layout with the fewest registers an element of that size can have:
//! where even it takes more than `MAX_ELEMENT_REGISTERS`, the macro rejects
//! every element of that size (odd sizes past 112 bytes, and sizes of two
//! more than a multiple of 4 past 224), and the test checks that it would.
//! Each is built into the kernels whose code depends on the element's size
//! (see [`size_dependent_kernels`]). The other kernels are compiled for the
//! test operators by `nvrtc_compile.rs`.
//!
//! Needs NVRTC and ptxas like `nvrtc_compile.rs` (`scripts/test` installs
//! them and sets `SCAN_REQUIRE_NVRTC=1`).
#![cfg(feature = "gpu")] // compiles with the runtime's NVRTC (scan_runtime::jit)

mod common;
use common::ledger::{self, compile_and_assemble};
use common::nvrtc::{tools_available, Coverage, KernelReport};
use gpu_scan::kernels_gen::abi::{AreaStep, KernelAbi};
use gpu_scan::kernels_gen::ir::{
    BinOp, Block, ElementType, Expr, FieldDesc, FieldType, Lit, OpDesc, Prim, StructDesc,
    StructName,
};
use gpu_scan::kernels_gen::layout::Layout;
use gpu_scan::kernels_gen::{
    self, auto_block_threads, auto_items_per_thread, Arch, FlagFormat, GenParams, Kernel,
    SegmentSource, SegmentedKernel, SegmentedStrategy, MAX_ELEMENT_REGISTERS, MAX_ELEMENT_SIZE,
};
use rayon::prelude::*;

/// The lane type of the element of `size` bytes: the widest unsigned
/// integer dividing it.
fn lane(size: usize) -> (Prim, usize) {
    [
        (Prim::U64, 8),
        (Prim::U32, 4),
        (Prim::U16, 2),
        (Prim::U8, 1),
    ]
    .into_iter()
    .find(|(_, bytes)| size % bytes == 0)
    .expect("1 divides every size")
}

/// Operator `e<size>` over struct `E<size> { head: lane, rest: [lane; n] }`
/// of `size` bytes: `E { head: x.head + y.head, ..y }`, an associative
/// operator that moves the whole element, as every operator does, but
/// computes on one lane (the translation of operators is tested elsewhere;
/// here the element's size is what varies).
fn operator(size: usize) -> (StructDesc, OpDesc) {
    let (prim, bytes) = lane(size);
    let lanes = size / bytes;
    let name = format!("E{size}");
    let mut fields = vec![FieldDesc {
        name: "head".into(),
        ty: FieldType::Prim(prim),
    }];
    if lanes > 1 {
        fields.push(FieldDesc {
            name: "rest".into(),
            ty: FieldType::Array(prim, lanes - 1),
        });
    }
    let element = StructDesc {
        name: name.clone(),
        fields,
    };
    let var = |v: &str| Box::new(Expr::Var(v.into()));
    let zero = || {
        Expr::Lit(Lit::Int {
            value: 0,
            suffix: Some(prim),
        })
    };
    let mut identity = vec![("head".to_string(), zero())];
    if lanes > 1 {
        identity.push((
            "rest".into(),
            Expr::Repeat(Box::new(zero()), lanes as u64 - 1),
        ));
    }
    let head = |v: &str| Box::new(Expr::Field(var(v), "head".into()));
    let op = OpDesc {
        name: format!("e{size}"),
        element: ElementType::Struct(name),
        identity: Expr::Struct {
            name: StructName::Element,
            fields: identity,
            base: None,
        },
        params: ["x".into(), "y".into()],
        body: Block {
            lets: vec![],
            value: Expr::Struct {
                name: StructName::Element,
                fields: vec![(
                    "head".into(),
                    Expr::Binary(BinOp::Add, head("x"), head("y")),
                )],
                base: Some(var("y")),
            },
        },
    };
    (element, op)
}

/// The kernels whose code depends on the element's size, for elements of
/// `size` bytes: the look-back single pass, plain and segmented (status
/// packing, registers; the segmented one has the largest static shared
/// memory), the column scan (32 partials per warp in static shared
/// memory), the two-dimensional scan's passes over the matrix (a chunk of
/// rows in static shared memory, three blocks an SM for small elements),
/// and where the element can take them the plain and segmented
/// pipelined passes (their shared-memory layouts, checked by
/// `static_assert`s against the host's sizes), the segmented one by bits
/// and by offsets (whose blocks have more warps, so fewer registers a
/// thread).
fn size_dependent_kernels(size: usize) -> Vec<KernelAbi> {
    let strategy = SegmentedStrategy::ConditionalIndexing;
    let mut kernels = vec![
        KernelAbi::segmented(
            SegmentedKernel::SinglePass {
                inclusive: true,
                source: FlagFormat::Bits.into(),
            },
            strategy,
        ),
        KernelAbi::plain(Kernel::SinglePassInclusive),
        KernelAbi::plain(Kernel::ColumnsInclusive),
        KernelAbi::SummedArea(AreaStep::TileTotals),
        KernelAbi::SummedArea(AreaStep::Finish),
    ];
    if kernels_gen::pipelined_supported(size) {
        kernels.push(KernelAbi::plain(Kernel::PipelinedInclusive));
        kernels.push(KernelAbi::segmented(
            SegmentedKernel::Pipelined {
                inclusive: true,
                source: FlagFormat::Bits.into(),
            },
            strategy,
        ));
    }
    // Over offsets its blocks have more heads warps, hence fewer registers
    // a thread (kernels_gen::pipelined_heads_warps).
    if kernels_gen::pipelined_segmented_shared_bytes(size) > 0 {
        kernels.push(KernelAbi::segmented(
            SegmentedKernel::Pipelined {
                inclusive: true,
                source: SegmentSource::Offsets,
            },
            strategy,
        ));
    }
    kernels
}

/// The registers of the element [`operator`] builds for `size` bytes: the
/// fewest any element of that size can take (its alignment bounds the
/// widest field).
fn registers(size: usize) -> usize {
    let (prim, bytes) = lane(size);
    prim.registers() * (size / bytes)
}

/// One program holding the operators of `sizes`, each in the tile shape
/// the macro would give it, and the symbols of its kernels.
fn program(sizes: &[usize]) -> (String, Vec<String>) {
    let mut source = String::new();
    let mut symbols = Vec::new();
    for (k, &size) in sizes.iter().enumerate() {
        let (element, op) = operator(size);
        let items = auto_items_per_thread(size);
        let fields: usize = element
            .fields
            .iter()
            .map(|f| f.ty.registers().expect("lanes of a primitive"))
            .sum();
        assert_eq!(fields, registers(size));
        let layout = Layout::new(size, fields, auto_block_threads(size, items), items);
        let part = kernels_gen::struct_declaration(&element)
            + &kernels_gen::operator_source(&op, &GenParams::default()).expect("valid parameters");
        let kernels = size_dependent_kernels(size);
        let whole = kernels_gen::program(&op.name, &part, &layout, &kernels);
        // The first operator brings the library; the others only their own
        // part (the library is guarded, so repeating it would also do).
        source.push_str(if k == 0 {
            &whole
        } else {
            &whole[whole
                .find("// ---- Layout of")
                .expect("the layout follows the library")..]
        });
        symbols.extend(kernels.iter().map(|k| k.symbol(&op.name)));
    }
    (source, symbols)
}

/// The architectures to compile for: every one CUDA 13 supports, unless
/// `SCAN_NVRTC_ARCHS=sm_80,sm_90` narrows a local run (the test then fails
/// on purpose, so that a narrowed run never passes for a full one), and the
/// sizes: all of them, unless `SCAN_NVRTC_SIZES=116,128` narrows them (the
/// same rule).
fn selection() -> (Vec<Arch>, Vec<usize>, Vec<String>) {
    let mut narrowed = Vec::new();
    let archs: Vec<Arch> = match std::env::var("SCAN_NVRTC_ARCHS") {
        Ok(v) => {
            narrowed.push(format!("SCAN_NVRTC_ARCHS={v} narrowed the architectures"));
            let only: Vec<Arch> = v.split(',').filter_map(Arch::parse).collect();
            Arch::CUDA_13
                .into_iter()
                .filter(|a| only.contains(a))
                .collect()
        }
        Err(_) => Arch::CUDA_13.to_vec(),
    };
    let sizes: Vec<usize> = match std::env::var("SCAN_NVRTC_SIZES") {
        Ok(v) => {
            narrowed.push(format!("SCAN_NVRTC_SIZES={v} narrowed the sizes"));
            v.split(',')
                .filter_map(|s| s.trim().parse().ok())
                .filter(|s| (1..=MAX_ELEMENT_SIZE).contains(s))
                .collect()
        }
        Err(_) => (1..=MAX_ELEMENT_SIZE).collect(),
    };
    (archs, sizes, narrowed)
}

#[test]
fn sizes_past_the_register_limit_are_the_ones_no_element_can_have() {
    // Odd sizes need byte fields (alignment 1), sizes of 2 more than a
    // multiple of 4 half-words at most; with 4-byte fields every size up
    // to 256 fits the limit.
    for size in 1..=MAX_ELEMENT_SIZE {
        let over = registers(size) > MAX_ELEMENT_REGISTERS;
        let expected = (size % 2 == 1 && size > 112) || (size % 4 == 2 && size > 224);
        assert_eq!(over, expected, "{size}");
    }
}

#[test]
fn every_element_size_compiles_without_spills() {
    if !tools_available() {
        return;
    }
    let (archs, selected, narrowed) = selection();
    // Sizes no element #[scan_op] accepts can have are not compiled.
    let sizes: Vec<usize> = selected
        .into_iter()
        .filter(|&s| registers(s) <= MAX_ELEMENT_REGISTERS)
        .collect();
    let coverage = Coverage::from_env();
    // Per architecture its sizes, in chunks: smaller ones for larger
    // elements, whose code is longer. The widest first, so that the last
    // jobs are short ones and both cores stay busy to the end.
    let mut jobs: Vec<(Arch, Vec<usize>)> = Vec::new();
    for &arch in &archs {
        let mine: Vec<usize> = sizes
            .iter()
            .copied()
            .filter(|&s| coverage.covers(arch, s / 2))
            .collect();
        let mut rest = &mine[..];
        while !rest.is_empty() {
            let take = match rest[0] {
                0..=64 => 16,
                65..=112 => 8,
                _ => 4,
            }
            .min(rest.len());
            let (chunk, tail) = rest.split_at(take);
            jobs.push((arch, chunk.to_vec()));
            rest = tail;
        }
    }
    jobs.sort_by_key(|(_, chunk)| std::cmp::Reverse(chunk[0]));
    // par_bridge hands the jobs out in this order, one at a time.
    let results: Vec<(Vec<KernelReport>, Vec<String>)> = jobs
        .iter()
        .par_bridge()
        .map(|&(arch, ref chunk)| {
            let (mut reports, mut failures) = (Vec::new(), Vec::new());
            let label = format!(
                "sizes_{}_{}:{}",
                chunk[0],
                chunk[chunk.len() - 1],
                arch.sm_name()
            );
            let (source, symbols) = program(chunk);
            let options = kernels_gen::nvrtc_options(arch);
            compile_and_assemble(
                &label,
                &source,
                options,
                &symbols,
                arch,
                &mut reports,
                &mut failures,
            );
            (reports, failures)
        })
        .collect();
    let mut failures = narrowed;
    let mut kernels = 0;
    for (reports, f) in results {
        failures.extend(f);
        for r in reports {
            kernels += usize::from(!r.kernel.contains(" (called by "));
            if r.spill_bytes > 0 {
                failures.push(format!(
                    "{}: {} spills {} bytes ({} registers)",
                    r.program, r.kernel, r.spill_bytes, r.registers
                ));
            }
        }
    }
    let expected: usize = jobs
        .iter()
        .flat_map(|(_, chunk)| chunk)
        .map(|&s| size_dependent_kernels(s).len())
        .sum();
    if kernels != expected {
        failures.push(format!(
            "ptxas reported {kernels} kernels, expected {expected}"
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    println!(
        "nvrtc_sizes: {kernels} kernels for the {} element sizes of 1 to {MAX_ELEMENT_SIZE} bytes #[scan_op] accepts compiled with NVRTC and ptxas for {}, no spills",
        sizes.len(),
        coverage.describe(),
    );
    println!("nvrtc_sizes: {}", ledger::summary());
}
