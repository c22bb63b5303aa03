//! The ABI's names hold from the host to the library: every exported
//! kernel's `extern "C"` wrapper passes each of its parameters to the library
//! template's parameter of the same name, and each parameter it packs into a
//! policy value (`head_flags{flags, seed, seeded != 0}`) to the policy's data
//! member of the same name. The host's argument lists are checked against
//! the same table by name (`scan-runtime`'s `launch` tests), so two
//! arguments swapped anywhere between a launch and the template fail a test
//! without a GPU. The C++ compiler checks the types; this checks the order.

use kernels_gen::abi::{KernelAbi, StageRef, Stages};
use kernels_gen::segment_flags::{segment_flags_program, FlagsKernel};
use kernels_gen::LIBRARY;

/// A wrapper as printed: its parameters' names, the library function it
/// calls and the call's arguments.
struct Wrapper {
    params: Vec<String>,
    function: String,
    args: Vec<String>,
}

/// Splits `s` at its commas outside any bracket.
fn split_top(s: &str) -> Vec<String> {
    let (mut depth, mut start, mut parts) = (0i32, 0, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '(' | '<' | '{' | '[' => depth += 1,
            ')' | '>' | '}' | ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(s[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = s[start..].trim();
    if !last.is_empty() {
        parts.push(last.to_string());
    }
    parts
}

/// The text between the bracket opening at `open` and its match.
fn bracketed(s: &str, open: usize) -> &str {
    let (o, c) = match &s[open..open + 1] {
        "(" => ('(', ')'),
        "<" => ('<', '>'),
        "{" => ('{', '}'),
        other => panic!("no bracket at {open}: {other}"),
    };
    let mut depth = 0;
    for (i, ch) in s[open..].char_indices() {
        if ch == o {
            depth += 1;
        } else if ch == c {
            depth -= 1;
            if depth == 0 {
                return &s[open + 1..open + i];
            }
        }
    }
    panic!("unbalanced {o} at {open} in {s}")
}

/// The last identifier of a declaration (`const T* input` -> `input`).
fn declared_name(decl: &str) -> String {
    let decl = decl.split('=').next().unwrap().trim();
    let start = decl
        .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
        .map_or(0, |i| i + 1);
    decl[start..].to_string()
}

fn is_identifier(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars().all(|c| c.is_alphanumeric() || c == '_')
}

fn parse_wrapper(text: &str) -> Wrapper {
    // The parameter list is the bracket that closes just before the body
    // (launch bounds may come before the name).
    let close = text.find(") {").expect("a body");
    let body_at = close + 2;
    let mut depth = 0;
    let open = text[..=close]
        .char_indices()
        .rev()
        .find(|&(_, c)| {
            depth += match c {
                ')' => 1,
                '(' => -1,
                _ => 0,
            };
            c == '(' && depth == 0
        })
        .expect("a parameter list")
        .0;
    let params = split_top(bracketed(text, open))
        .iter()
        .map(|p| declared_name(p))
        .collect();
    let body = bracketed(text, body_at).trim();
    let body = body.strip_prefix("gpu_scan::").unwrap_or(body);
    let name_end = body.find(['<', '(']).expect("a call");
    let function = body[..name_end].to_string();
    let mut at = name_end;
    if body[at..].starts_with('<') {
        at += bracketed(body, at).len() + 2;
    }
    assert!(body[at..].starts_with('('), "a call in {text}");
    let args = split_top(bracketed(body, at));
    Wrapper {
        params,
        function,
        args,
    }
}

/// The parameter names of every definition of function `name` in
/// `library` (one list per definition).
fn function_params(library: &str, name: &str) -> Vec<Vec<String>> {
    let pattern = format!(" void {name}(");
    library
        .match_indices(&pattern)
        .map(|(at, _)| {
            let open = at + pattern.len() - 1;
            split_top(bracketed(library, open))
                .iter()
                .map(|p| declared_name(p))
                .collect()
        })
        .collect()
}

/// The data members, in order, of struct `name` in `library` (every
/// declaration of it must agree).
fn struct_members(library: &str, name: &str) -> Vec<String> {
    let pattern = format!("struct {name} {{");
    let mut found: Option<Vec<String>> = None;
    for (at, _) in library.match_indices(&pattern) {
        let body = bracketed(library, at + pattern.len() - 1);
        let mut depth = 0;
        let mut members = Vec::new();
        for line in body.lines() {
            let code = line.split("//").next().unwrap().trim();
            if depth == 0
                && code.ends_with(';')
                && !code.contains('(')
                && !code.starts_with("static")
                && !code.starts_with("typedef")
                && !code.starts_with("using")
            {
                members.push(declared_name(code.trim_end_matches(';')));
            }
            depth += code.matches('{').count() as i32 - code.matches('}').count() as i32;
        }
        if let Some(previous) = &found {
            assert_eq!(previous, &members, "two declarations of struct {name}");
        }
        found = Some(members);
    }
    found.unwrap_or_else(|| panic!("no struct {name} in the library"))
}

/// A policy value `policy<...>{a, b}`: the struct's name and the values.
fn policy_value(arg: &str) -> Option<(String, Vec<String>)> {
    let brace = arg.find('{')?;
    let head = arg[..brace].trim();
    let head = head.split('<').next().unwrap();
    let name = head.rsplit("::").next().unwrap().to_string();
    Some((name, split_top(bracketed(arg, brace))))
}

/// The parameter a value passes on, if it is one: `flags`, `seeded != 0`,
/// `(const unsigned*)heads`.
fn passed_param<'a>(value: &'a str, params: &[String]) -> Option<&'a str> {
    let value = value.trim();
    let value = value.strip_suffix("!= 0").unwrap_or(value).trim();
    let value = match value.strip_prefix('(') {
        Some(rest) => rest[rest.find(')')? + 1..].trim(),
        None => value,
    };
    (is_identifier(value) && params.iter().any(|p| p == value)).then_some(value)
}

/// Parameters passed on under another name on purpose, as `(parameter,
/// what it becomes)`: the one-block pass of a segmented reduce-then-scan
/// reads the tiles' flags as the head flags of the tile totals, and the
/// segment-flags program's `find_starts` reads its `heads` (flags or keys)
/// through a runs reader.
const RENAMED: [(&str, &str); 4] = [
    ("tile_flags", "head_flags's flags"),
    ("heads", "byte_runs's flags"),
    ("heads", "bit_runs's words"),
    ("heads", "key_runs's keys"),
];

fn renamed(param: &str, target: &str) -> bool {
    RENAMED.contains(&(param, target))
}

/// Checks `wrapper` against `library`; the errors, one a line.
fn check(wrapper_text: &str, library: &str) -> Vec<String> {
    let w = parse_wrapper(wrapper_text);
    let mut errors = Vec::new();
    let definitions = function_params(library, &w.function);
    if definitions.is_empty() {
        return vec![format!("no function {} in the library", w.function)];
    }
    let mut used = Vec::new();
    for names in &definitions {
        if names.len() != w.args.len() {
            errors.push(format!(
                "{} takes {} parameters, the wrapper passes {}",
                w.function,
                names.len(),
                w.args.len()
            ));
            continue;
        }
        for (arg, target) in w.args.iter().zip(names) {
            if let Some(param) = passed_param(arg, &w.params) {
                used.push(param.to_string());
                if param != target && !renamed(param, &format!("{}'s {target}", w.function)) {
                    errors.push(format!("{param} is passed as {}'s {target}", w.function));
                }
            } else if let Some((policy, values)) = policy_value(arg) {
                let members = struct_members(library, &policy);
                if members.len() != values.len() {
                    errors.push(format!(
                        "{policy} has {} members, given {}",
                        members.len(),
                        values.len()
                    ));
                    continue;
                }
                for (value, member) in values.iter().zip(&members) {
                    if let Some(param) = passed_param(value, &w.params) {
                        used.push(param.to_string());
                        if param != member && !renamed(param, &format!("{policy}'s {member}")) {
                            errors.push(format!("{param} is passed as {policy}'s {member}"));
                        }
                    }
                }
            }
        }
    }
    for p in &w.params {
        if !used.contains(p) {
            errors.push(format!("parameter {p} is not passed on by name"));
        }
    }
    errors
        .into_iter()
        .map(|e| format!("{}: {e}", w.function))
        .collect()
}

#[test]
fn every_scan_kernel_passes_its_parameters_by_name() {
    let mut errors = Vec::new();
    let mut kernels = 0;
    let stage = |name| StageRef {
        id: std::any::TypeId::of::<()>(),
        name,
        source: "",
        input_size: 4,
        output_size: 4,
    };
    let stages = Stages {
        load: Some(stage("widen")),
        store: Some(stage("narrow")),
    };
    for abi in KernelAbi::all().chain(KernelAbi::all_staged(stages)) {
        let wrapper = abi.wrapper("op");
        for e in check(&wrapper, LIBRARY) {
            errors.push(format!("{abi:?}: {e}"));
        }
        kernels += 1;
    }
    assert!(kernels > 100, "only {kernels} kernels");
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn every_segment_flags_kernel_passes_its_parameters_by_name() {
    let program = segment_flags_program();
    let mut errors = Vec::new();
    for kernel in FlagsKernel::all() {
        for e in check(&kernel.wrapper(), &program) {
            errors.push(format!("{kernel:?}: {e}"));
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// The checker itself finds what it is for: two arguments swapped, a
/// policy member passed out of place, a parameter left out.
#[test]
fn a_swapped_argument_is_found() {
    let abi = KernelAbi::all()
        .find(|abi| {
            let w = abi.wrapper("op");
            w.contains("scan_single_pass<") && w.contains("head_flags<")
        })
        .expect("a segmented kernel over flags");
    let good = abi.wrapper("op");
    assert!(check(&good, LIBRARY).is_empty());

    let swapped = good.replacen("output, status", "status, output", 1);
    assert_ne!(swapped, good);
    let errors = check(&swapped, LIBRARY);
    assert!(
        errors.iter().any(|e| e.contains("output is passed as")),
        "{errors:?}"
    );

    let policy = good.replacen("{flags, seed,", "{seed, flags,", 1);
    assert_ne!(policy, good);
    let errors = check(&policy, LIBRARY);
    assert!(
        errors
            .iter()
            .any(|e| e.contains("flags is passed as head_flags's seed")),
        "{errors:?}"
    );

    let dropped = good.replacen("output, status", "nullptr, status", 1);
    let errors = check(&dropped, LIBRARY);
    assert!(
        errors
            .iter()
            .any(|e| e.contains("parameter output is not passed on")),
        "{errors:?}"
    );
}
