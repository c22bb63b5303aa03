//! The scan specs the tests run: every kind, forward and in reverse.

#![allow(dead_code)] // each test binary uses a different part

use gpu_scan::prelude::*;

/// The four kinds, named, with `init` for the seeded ones.
fn kinds<E: Copy>(init: E) -> [(&'static str, ScanKind<E>); 4] {
    [
        ("inclusive", ScanKind::Inclusive),
        ("exclusive", ScanKind::Exclusive),
        ("exclusive+init", ScanKind::ExclusiveWithInit(init)),
        ("inclusive+init", ScanKind::InclusiveWithInit(init)),
    ]
}

/// Every kind forward, then every kind in reverse.
pub fn all_specs<E: Copy>(init: E) -> Vec<ScanSpec<E>> {
    every_named_spec(init, &[Direction::Forward, Direction::Reverse])
        .into_iter()
        .map(|(_, spec)| spec)
        .collect()
}

/// The first three kinds (inclusive, exclusive, exclusive from `init`) in
/// every direction of `directions`, named ("reverse …" in reverse): the
/// GPU suites' specs. The inclusive scan from `init` shares their kernels
/// (the inclusive mode, seeded as the exclusive one): `gpu_carry` runs it
/// on every path, plain and segmented ([`every_named_spec`]), and the CPU
/// tests everywhere ([`all_specs`]), without adding a third to every GPU
/// suite's time.
pub fn named_specs<E: Copy>(init: E, directions: &[Direction]) -> Vec<(&'static str, ScanSpec<E>)> {
    let mut specs = every_named_spec(init, directions);
    specs.retain(|(_, spec)| !matches!(spec.kind, ScanKind::InclusiveWithInit(_)));
    specs
}

/// Every kind in every direction of `directions`, named.
pub fn every_named_spec<E: Copy>(
    init: E,
    directions: &[Direction],
) -> Vec<(&'static str, ScanSpec<E>)> {
    directions
        .iter()
        .flat_map(|&d| {
            kinds(init).into_iter().map(move |(name, kind)| {
                let spec = ScanSpec::from(kind).with_direction(d);
                match d {
                    Direction::Reverse => {
                        let name: &'static str =
                            Box::leak(format!("reverse {name}").into_boxed_str());
                        (name, spec)
                    }
                    _ => (name, spec),
                }
            })
        })
        .collect()
}
