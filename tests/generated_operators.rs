//! Property tests of the CUDA translation on generated operator
//! expressions: random well-typed bodies (`common::ir_gen`) are printed
//! with `ExprPrinter`, compiled (host C++, NVRTC, the GPU) and evaluated
//! on input rows with edge values; every result must equal the IR
//! interpreter's (`kernels_gen::eval`, Rust's semantics) bit for bit, any
//! NaN matching any NaN. The same bodies go through the IR's text form
//! (`kernels_gen::ir_text`) and must come back unchanged.
//!
//! `GEN_OPS_SEED` fixes the seed (printed by every test), `GEN_OPS_COUNT`
//! the number of expressions.
//!
//! The printed code is what `#[scan_op]` prints: literals typed by
//! `kernels_gen::infer` first, then `ExprPrinter`. The five translation
//! bugs these tests found when they were written (an untyped float literal
//! beyond f32's range printed `inff`; an untyped `-2147483648` printed as a
//! `long long`; an untyped float literal directly under `as f32` rounded
//! twice; an untyped `let` evaluated at each use's type where Rust gives it
//! one; `std::cmp::min/max` with an untyped first argument did not compile)
//! are what that pass fixes.
//!
//! On the H100 and H200 (CUDA 13.0, driver 580) the GPU test found
//! optimised device code that disagrees with Rust where host compilers and
//! unoptimised builds agree; the prelude and `kernels_gen::fold` work
//! around each: a wrapped `short` that stayed wide, a packed 16-bit min/max
//! standing in for `== 0`, `(i8 as u32) as f64` converted as a signed byte,
//! `x.abs() > -1.0` taken as true for NaN, and float arithmetic on two
//! constants folded without rounding to `f32`.
#![cfg(feature = "gpu")] // the GPU backend, its runtime and cudarc

mod common;

use common::ir_gen::{self, GenConfig, GenOp};
use common::{host_cuda, nvrtc};
use gpu_scan::kernels_gen::eval::{self as ir_interp, Checked, Value};
use gpu_scan::kernels_gen::expr::{ExprPrinter, Hint};
use gpu_scan::kernels_gen::infer::{annotate_body, VarType};
use gpu_scan::kernels_gen::ir::{Expr, Prim};
use gpu_scan::kernels_gen::{self, Arch};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::fmt::Write;

/// Expressions per compiled program.
const BATCH: usize = 250;
/// The kernel of a device program.
const KERNEL: &str = "gen_ops_eval";

/// The seed: `GEN_OPS_SEED`, or the clock.
fn seed(test: &str) -> u64 {
    let seed = common::seed::from_env_or_clock("GEN_OPS_SEED");
    println!("{test}: seed {seed} (rerun with GEN_OPS_SEED={seed})");
    seed
}

fn count(default: usize) -> usize {
    std::env::var("GEN_OPS_COUNT")
        .map(|s| s.parse().expect("GEN_OPS_COUNT must be a number"))
        .unwrap_or(default)
}

/// `n` generated bodies that rustc would accept (as `ir_interp::check`
/// judges), and how many candidates were discarded, by reason.
fn generate(seed: u64, n: usize, config: GenConfig) -> (Vec<GenOp>, BTreeMap<String, usize>) {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    let strategy = ir_gen::operator_strategy(config);
    let vars = ir_gen::variables();
    let mut ops = Vec::new();
    let mut rejected = BTreeMap::new();
    while ops.len() < n {
        let op = strategy.new_tree(&mut runner).unwrap().current();
        match ir_interp::check(&op.body, op.ty, &vars) {
            Ok(checked) => {
                assert_eq!(checked.ty, op.ty, "{}", ir_gen::rust_block(&op.body));
                ops.push(op);
            }
            Err(why) => {
                // The reason's kind, without the values.
                let kind: String = why.split([':', '(']).next().unwrap_or("").into();
                *rejected.entry(kind).or_insert(0) += 1;
            }
        }
    }
    assert!(
        rejected.values().sum::<usize>() <= n,
        "the generator's programs are rejected too often: {rejected:?}"
    );
    (ops, rejected)
}

/// Edge values of each type, then random ones.
fn edge_values(p: Prim) -> Vec<u64> {
    let ints = |min: i128, max: i128| -> Vec<u64> {
        let mut v: Vec<i128> = vec![0, 1, 2, 3, 7, 8, 31, 32, 63, 64, 127, max, max - 1, min];
        if min < 0 {
            v.extend([-1, -2, min + 1, -8, -64]);
        }
        v.into_iter().map(|x| x as u64).collect()
    };
    match p {
        Prim::U8 => ints(0, u8::MAX as i128),
        Prim::U16 => ints(0, u16::MAX as i128),
        Prim::U32 => ints(0, u32::MAX as i128),
        Prim::U64 => ints(0, u64::MAX as i128),
        Prim::I8 => ints(i8::MIN as i128, i8::MAX as i128),
        Prim::I16 => ints(i16::MIN as i128, i16::MAX as i128),
        Prim::I32 => ints(i32::MIN as i128, i32::MAX as i128),
        Prim::I64 => ints(i64::MIN as i128, i64::MAX as i128),
        Prim::F32 => [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            1.5,
            2.5,
            -2.5,
            f32::NAN,
            -f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MAX,
            f32::MIN,
            f32::MIN_POSITIVE,
            f32::from_bits(1),
            f32::from_bits(0x007f_ffff),
            f32::EPSILON,
            2147483648.0,
            -2147483904.0,
            9.223372e18,
            1.8446744e19,
            255.5,
            65535.9,
            1e10,
            16777217.0,
        ]
        .iter()
        .map(|x| x.to_bits() as u64)
        .collect(),
        Prim::F64 => [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            1.5,
            2.5,
            -2.5,
            f64::NAN,
            -f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            f64::from_bits(1),
            f64::from_bits(0x000f_ffff_ffff_ffff),
            f64::EPSILON,
            2147483648.0,
            -2147483649.0,
            9.223_372_036_854_776e18,
            -9.223_372_036_854_776e18,
            1.844_674_407_370_955_2e19,
            4294967295.5,
            1e300,
            (1u64 << 53) as f64 + 1.0,
            f32::MAX as f64 * 1.5,
            f32::from_bits(1) as f64 / 2.0,
        ]
        .iter()
        .map(|x| x.to_bits())
        .collect(),
        Prim::Bool => vec![0, 1],
    }
}

/// One random value of type `p`: an edge value, a small integer (shift
/// amounts up to twice the widest width), or random bits.
fn random_value(rng: &mut rand::rngs::StdRng, p: Prim) -> Value {
    let edges = edge_values(p);
    let bits = match rng.random_range(0..10) {
        0..=3 => edges[rng.random_range(0..edges.len())],
        4..=5 if p.is_float() => {
            let small = rng.random_range(-300i32..300) as f64 / 4.0;
            if p == Prim::F32 {
                (small as f32).to_bits() as u64
            } else {
                small.to_bits()
            }
        }
        4..=6 => rng.random_range(0..=128u64),
        7 if p.is_float() => {
            let x = rng.random_range(-1e6..1e6f64);
            if p == Prim::F32 {
                (x as f32).to_bits() as u64
            } else {
                x.to_bits()
            }
        }
        _ => rng.random(),
    };
    Value::from_bits(p, bits)
}

/// Input rows: one row per edge value index (every variable at its type's
/// i-th edge value), then random rows.
fn input_rows(seed: u64, random_rows: usize) -> Vec<Vec<Value>> {
    let vars = ir_gen::variables();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5eed_1234);
    let edge_rows = vars
        .iter()
        .map(|(_, p)| edge_values(*p).len())
        .max()
        .unwrap();
    let mut rows = Vec::new();
    for i in 0..edge_rows {
        rows.push(
            vars.iter()
                .enumerate()
                .map(|(k, (_, p))| {
                    let e = edge_values(*p);
                    // Offset the b_ side so that a_x and b_x differ.
                    Value::from_bits(*p, e[(i + k / 11) % e.len()])
                })
                .collect(),
        );
    }
    for _ in 0..random_rows {
        rows.push(
            vars.iter()
                .map(|(_, p)| random_value(&mut rng, *p))
                .collect(),
        );
    }
    rows
}

/// The C++ function `expr_<k>` computing `op` from the input variables,
/// printed as `#[scan_op]` prints an operator's `combine`.
fn cuda_function(k: usize, op: &GenOp) -> String {
    let mut printer = ExprPrinter::new("op_t");
    let params: Vec<String> = ir_gen::variables()
        .iter()
        .map(|(n, p)| format!("const {} {n}", p.cuda_name()))
        .collect();
    let mut out = format!(
        "static __device__ GEN_NOINLINE {} expr_{k}({}) {{\n",
        op.ty.cuda_name(),
        params.join(", ")
    );
    // As `#[scan_op]` does: literals typed by rustc's rules first.
    let vars: Vec<(String, VarType)> = ir_gen::variables()
        .into_iter()
        .map(|(n, p)| (n, VarType::Prim(p)))
        .collect();
    let body = gpu_scan::kernels_gen::fold::fold_body(&annotate_body(
        &op.body,
        &vars,
        VarType::Prim(op.ty),
    ));
    for (name, value) in &body.lets {
        let _ = writeln!(out, "  {}", printer.let_binding(name, value));
    }
    let value = printer.expr(&body.value, &Hint::Prim(op.ty));
    let _ = writeln!(out, "  return {value};\n}}");
    out
}

/// A program evaluating `ops` on input rows: `gen_ops_eval_row(in, out)`
/// reads one row of raw values (u64 each) and writes each expression's
/// result's bytes, zero-extended to a u64; `main` (host) or the kernel
/// `gen_ops_eval` (device) applies it to every row.
fn program_body(ops: &[GenOp], device: bool) -> String {
    let vars = ir_gen::variables();
    let mut s = String::from(
        "\n#ifdef __CUDACC_RTC__\n#define GEN_NOINLINE __noinline__\n#else\n#define GEN_NOINLINE __attribute__((noinline))\n#endif\n",
    );
    for (k, op) in ops.iter().enumerate() {
        s.push_str(&cuda_function(k, op));
    }
    s.push_str("static __device__ void gen_ops_eval_row(const unsigned long long* in, unsigned long long* out) {\n");
    for (i, (name, p)) in vars.iter().enumerate() {
        let _ = writeln!(
            s,
            "  {t} {name}; memcpy(&{name}, &in[{i}], sizeof({t}));",
            t = p.cuda_name()
        );
    }
    let args: Vec<&str> = vars.iter().map(|(n, _)| n.as_str()).collect();
    let args = args.join(", ");
    for k in 0..ops.len() {
        let _ = writeln!(
            s,
            "  {{ const auto r = expr_{k}({args}); unsigned long long bits = 0; memcpy(&bits, &r, sizeof(r)); out[{k}] = bits; }}"
        );
    }
    s.push_str("}\n");
    let (nv, k) = (vars.len(), ops.len());
    if device {
        let _ = write!(
            s,
            r#"extern "C" __global__ void {KERNEL}(const unsigned long long* in, unsigned long long* out, unsigned rows) {{
  const unsigned r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < rows) gen_ops_eval_row(in + (unsigned long long)r * {nv}, out + (unsigned long long)r * {k});
}}
"#
        );
    } else {
        let _ = write!(
            s,
            r#"int main() {{
  unsigned long long rows = 0;
  if (fread(&rows, 8, 1, stdin) != 1) return 2;
  unsigned long long* in = (unsigned long long*)malloc(8 * rows * {nv} + 8);
  unsigned long long* out = (unsigned long long*)malloc(8 * rows * {k} + 8);
  if (fread(in, 8, rows * {nv}, stdin) != rows * {nv}) return 3;
  for (unsigned long long r = 0; r < rows; ++r) gen_ops_eval_row(in + r * {nv}, out + r * {k});
  fwrite(out, 8, rows * {k}, stdout);
  return 0;
}}
"#
        );
    }
    s
}

/// The input rows as the programs read them: raw bits, a u64 per value.
fn row_words(rows: &[Vec<Value>]) -> Vec<u64> {
    rows.iter().flatten().map(|v| v.to_bits()).collect()
}

/// Counts of a comparison, and the first disagreements, described.
#[derive(Default)]
struct Tally {
    compared: usize,
    unspecified: usize,
    inexact: usize,
    disagreements: usize,
    reports: Vec<String>,
}

/// Compares `results` (row-major, `ops.len()` per row) with the
/// interpreter's values.
fn compare(ops: &[GenOp], rows: &[Vec<Value>], results: &[u64], tally: &mut Tally, what: &str) {
    let vars = ir_gen::variables();
    let inputs: Vec<Vec<(&str, Value)>> = rows
        .iter()
        .map(|row| {
            vars.iter()
                .map(|(n, _)| n.as_str())
                .zip(row.iter().copied())
                .collect()
        })
        .collect();
    for (k, op) in ops.iter().enumerate() {
        let checked: Checked<'_> = ir_interp::check(&op.body, op.ty, &vars).expect("checked");
        let mut reported = false;
        for (r, input) in inputs.iter().enumerate() {
            let expected = checked.eval(input);
            let got = Value::from_bits(op.ty, results[r * ops.len() + k]);
            if expected.unspecified {
                tally.unspecified += 1;
                continue;
            }
            if expected.inexact {
                tally.inexact += 1;
                continue;
            }
            tally.compared += 1;
            if expected.value.same(got) {
                continue;
            }
            tally.disagreements += 1;
            if !reported && tally.reports.len() < 8 {
                reported = true;
                let used: Vec<String> = input
                    .iter()
                    .filter(|(n, _)| uses(&op.body.lets, &op.body.value, n))
                    .map(|(n, v)| format!("{n} = {v}"))
                    .collect();
                tally.reports.push(format!(
                    "{what}: fn(…) -> {}\n  Rust:   {{ {} }}\n  inputs: {}\n  Rust (interpreter): {}\n  {what}: {}\n  CUDA:\n{}",
                    op.ty.rust_name(),
                    ir_gen::rust_block(&op.body),
                    used.join(", "),
                    expected.value,
                    got,
                    cuda_function(k, op)
                ));
            }
        }
    }
}

/// Whether the body mentions variable `name`.
fn uses(lets: &[(String, Expr)], value: &Expr, name: &str) -> bool {
    let text = format!(
        "{:?} {:?}",
        lets.iter().map(|(_, e)| e).collect::<Vec<_>>(),
        value
    );
    text.contains(&format!("Var(\"{name}\")"))
}

fn report(test: &str, tally: &Tally) {
    for r in &tally.reports {
        println!("{r}");
    }
    assert_eq!(
        tally.disagreements, 0,
        "{test}: {} disagreements with the interpreter (first ones above)",
        tally.disagreements
    );
}

/// Generated bodies, as operators over their value's type, printed as
/// text and parsed back: the same operator, node for node.
#[test]
fn generated_operators_round_trip_through_text() {
    use gpu_scan::kernels_gen::ir::{Block, ElementType, Lit, OpDesc};
    use gpu_scan::kernels_gen::ir_text;
    let seed = seed("generated_operators_round_trip_through_text");
    let (ops, _) = generate(seed, count(2_000), GenConfig::default());
    for (k, op) in ops.iter().enumerate() {
        let desc = OpDesc {
            name: format!("gen_{k}"),
            element: ElementType::Prim(op.ty),
            identity: Expr::Lit(Lit::Int {
                value: k as u128,
                suffix: None,
            }),
            params: ["a".into(), "b".into()],
            body: Block {
                lets: op.body.lets.clone(),
                value: op.body.value.clone(),
            },
        };
        let params = kernels_gen::GenParams::default();
        let text = ir_text::print(&desc, &params);
        let back = ir_text::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(back, (desc, params), "{text}");
    }
    println!("{} generated operators round-trip through text", ops.len());
}

#[test]
fn host_matches_interpreter() {
    const TEST: &str = "host_matches_interpreter";
    if !host_cuda::available(TEST) {
        return;
    }
    let seed = seed(TEST);
    let n = count(2000);
    let config = GenConfig {
        max_depth: 4,
        transcendentals: true,
    };
    let (ops, rejected) = generate(seed, n, config);
    let rows = input_rows(seed, 64);
    let words = row_words(&rows);
    let mut input = (rows.len() as u64).to_le_bytes().to_vec();
    for w in &words {
        input.extend_from_slice(&w.to_le_bytes());
    }
    let batches: Vec<&[GenOp]> = ops.chunks(BATCH).collect();
    // Two compilers at a time.
    let compiled: Vec<Vec<HostRun<'_>>> = std::thread::scope(|s| {
        let mut compiled = Vec::new();
        for pair in batches.chunks(2) {
            let handles: Vec<_> = pair
                .iter()
                .enumerate()
                .map(|(i, batch)| {
                    let label = format!("generated_ops_{seed}_{}", compiled.len() + i);
                    let input = &input;
                    s.spawn(move || run_host(&label, batch, input))
                })
                .collect();
            for h in handles {
                compiled.push(h.join().expect("host program"));
            }
        }
        compiled
    });
    let mut tally = Tally::default();
    let mut programs = 0;
    for (batch, out) in compiled.iter().flatten() {
        programs += 1;
        let Ok(out) = out else {
            continue; // does not compile: reported below
        };
        let results: Vec<u64> = out
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(results.len(), rows.len() * batch.len());
        compare(batch, &rows, &results, &mut tally, "host");
    }
    let not_compiled: Vec<(&GenOp, &String)> = compiled
        .iter()
        .flatten()
        .filter_map(|(batch, out)| out.as_ref().err().map(|e| (&batch[0], e)))
        .collect();
    if let Ok(path) = std::env::var("GEN_OPS_DUMP") {
        let text: String = not_compiled
            .iter()
            .map(|(op, e)| {
                format!(
                    "{e}\n  {{ {} }}\n{}\n",
                    ir_gen::rust_block(&op.body),
                    cuda_function(0, op)
                )
            })
            .collect();
        std::fs::write(path, text).unwrap();
    }
    for (i, (op, error)) in not_compiled.iter().enumerate() {
        tally.disagreements += 1;
        if i >= 6 {
            continue;
        }
        tally.reports.push(format!(
            "host: valid Rust that does not compile as C++ ({error}): fn(…) -> {}\n  Rust:   {{ {} }}\n  CUDA:\n{}",
            op.ty.rust_name(),
            ir_gen::rust_block(&op.body),
            cuda_function(0, op)
        ));
    }
    println!(
        "{TEST}: {} expressions ({programs} programs) × {} rows: {} results compared, {} unspecified by Rust and {} of transcendental functions (not compared), {} expressions that do not compile, {} disagreements in all; discarded candidates: {rejected:?}; seed {seed}",
        ops.len(),
        rows.len(),
        tally.compared,
        tally.unspecified,
        tally.inexact,
        not_compiled.len(),
        tally.disagreements
    );
    report(TEST, &tally);
}

/// Expressions and their host program's output, or the compiler's error.
type HostRun<'o> = (&'o [GenOp], Result<Vec<u8>, String>);

/// Compiles `batch` as one host program and runs it on `input`; where the
/// program does not compile, bisects the batch down to the expressions that
/// do not (returned with empty output), so that one of them costs the
/// comparison of no other.
fn run_host<'o>(label: &str, batch: &'o [GenOp], input: &[u8]) -> Vec<HostRun<'o>> {
    let body = program_body(batch, false);
    let built = std::panic::catch_unwind(|| host_cuda::build(label, &body));
    match built {
        Ok(program) => vec![(batch, Ok(program.run(input)))],
        Err(panic) if batch.len() == 1 => {
            // The compiler's first error.
            let log = panic.downcast_ref::<String>().cloned().unwrap_or_default();
            let first = log
                .lines()
                .find(|l| l.contains("error:"))
                .unwrap_or("(no error line)")
                .split("error:")
                .nth(1)
                .unwrap_or_default()
                .trim()
                .to_string();
            vec![(batch, Err(first))]
        }
        Err(_) => {
            let (a, b) = batch.split_at(batch.len() / 2);
            let mut out = run_host(&format!("{label}a"), a, input);
            out.extend(run_host(&format!("{label}b"), b, input));
            out
        }
    }
}

/// NVRTC's PTX of `batch` as one device program for `arch`; where NVRTC
/// rejects it, the batch is bisected down to the expressions it rejects
/// (returned with NVRTC's log).
fn compile_device(
    batch: &[GenOp],
    arch: Arch,
) -> Vec<(
    &[GenOp],
    Result<gpu_scan::scan_runtime::cudarc::nvrtc::Ptx, String>,
)> {
    use gpu_scan::scan_runtime::cudarc::nvrtc as cu_nvrtc;
    let mut source = kernels_gen::launch_state::launch_state_declaration();
    source.push_str(kernels_gen::PRELUDE);
    source.push_str(&program_body(batch, true));
    let options = cu_nvrtc::CompileOptions {
        options: kernels_gen::nvrtc_options(arch),
        ..Default::default()
    };
    match cu_nvrtc::compile_ptx_with_opts(&source, options) {
        Ok(ptx) => vec![(batch, Ok(ptx))],
        Err(e) if batch.len() == 1 => vec![(batch, Err(format!("{e:?}")))],
        Err(_) => {
            let (a, b) = batch.split_at(batch.len() / 2);
            let mut out = compile_device(a, arch);
            out.extend(compile_device(b, arch));
            out
        }
    }
}

#[test]
fn nvrtc_compiles_generated() {
    const TEST: &str = "nvrtc_compiles_generated";
    if !nvrtc::tools_available() {
        return;
    }
    let seed = seed(TEST);
    let (ops, _) = generate(seed, BATCH, GenConfig::default());
    let mut source = kernels_gen::launch_state::launch_state_declaration();
    source.push_str(kernels_gen::PRELUDE);
    source.push_str(&program_body(&ops, true));
    let mut failures = Vec::new();
    let archs = [Arch::CUDA_13[0], Arch::CUDA_13[Arch::CUDA_13.len() - 1]];
    for arch in archs {
        let label = format!("generated_ops_{}", arch.sm_name());
        let ptx = nvrtc::compile_program(
            &label,
            &source,
            kernels_gen::nvrtc_options(arch),
            &[KERNEL.to_string()],
            &mut failures,
        );
        if ptx.is_some() {
            println!(
                "{TEST}: {} expressions compiled for {}",
                ops.len(),
                arch.sm_name()
            );
            continue;
        }
        // Name the expressions NVRTC rejects.
        for (batch, result) in compile_device(&ops, arch) {
            if let Err(log) = result {
                let error = log
                    .split("\\n")
                    .find(|l| l.contains("): error"))
                    .unwrap_or("")
                    .to_string();
                failures.push(format!(
                    "{}: NVRTC rejects valid Rust ({error}):\n  {{ {} }}",
                    arch.sm_name(),
                    ir_gen::rust_block(&batch[0].body)
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{TEST} (seed {seed}):\n{}",
        failures.join("\n")
    );
}

#[test]
fn gpu_matches_interpreter() {
    use gpu_scan::scan_runtime::cudarc::driver::{LaunchConfig, PushKernelArg};
    use gpu_scan::scan_runtime::cudarc::nvrtc as cu_nvrtc;
    use rayon::prelude::*;
    const TEST: &str = "gpu_matches_interpreter";
    let Some(ctx) = common::gpu::open_gpu(TEST) else {
        return;
    };
    let arch = gpu_scan::scan_runtime::device_arch(&ctx).expect("a supported GPU");
    let seed = seed(TEST);
    let n = count(10_000);
    // Transcendentals are left out: CUDA's math library may differ from
    // libm in the last bits.
    let (ops, rejected) = generate(seed, n, GenConfig::default());
    let rows = input_rows(seed, 96);
    let words = row_words(&rows);
    let batches: Vec<&[GenOp]> = ops.chunks(BATCH).collect();
    let started = std::time::Instant::now();
    let compiled: Vec<(&[GenOp], Result<cu_nvrtc::Ptx, String>)> = batches
        .par_iter()
        .flat_map(|batch| compile_device(batch, arch))
        .collect();
    let compile_s = started.elapsed().as_secs_f64();
    let stream = ctx.default_stream();
    let input = stream.clone_htod(&words).unwrap();
    let mut tally = Tally::default();
    let mut not_compiled = 0;
    for (batch, ptx) in compiled {
        let ptx = match ptx {
            Ok(ptx) => ptx,
            Err(log) => {
                not_compiled += 1;
                tally.disagreements += 1;
                let op = &batch[0];
                tally.reports.push(format!(
                    "GPU: valid Rust that NVRTC rejects: fn(…) -> {}\n  Rust:   {{ {} }}\n  NVRTC: {}\n  CUDA:\n{}",
                    op.ty.rust_name(),
                    ir_gen::rust_block(&op.body),
                    log.split("\\n").find(|l| l.contains("): error")).unwrap_or(""),
                    cuda_function(0, op)
                ));
                continue;
            }
        };
        let module = ctx.load_module(ptx).unwrap();
        let f = module.load_function(KERNEL).unwrap();
        let mut out = stream.alloc_zeros::<u64>(rows.len() * batch.len()).unwrap();
        let row_count = rows.len() as u32;
        let cfg = LaunchConfig {
            grid_dim: (row_count.div_ceil(64), 1, 1),
            block_dim: (64, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = stream.launch_builder(&f);
        launch.arg(&input).arg(&mut out).arg(&row_count);
        // SAFETY: (const u64* in, u64* out, unsigned rows): `input` holds
        // rows × 22 words, `out` rows × batch words.
        unsafe { launch.launch(cfg) }.unwrap();
        let results = stream.clone_dtoh(&out).unwrap();
        compare(batch, &rows, &results, &mut tally, "GPU");
    }
    println!(
        "{TEST}: {} ({}), NVRTC {compile_s:.1} s",
        ctx.name().unwrap(),
        arch.sm_name()
    );
    println!("| expressions tried | rows | results compared | unspecified by Rust | not compiled | disagreements | seed |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    println!(
        "| {} | {} | {} | {} | {not_compiled} | {} | {seed} |",
        ops.len(),
        rows.len(),
        tally.compared,
        tally.unspecified,
        tally.disagreements
    );
    println!("{TEST}: discarded candidates: {rejected:?}");
    report(TEST, &tally);
}
