//! The scan specs the tests run: every kind, forward and in reverse.

#![allow(dead_code)] // each test binary uses a different part

use gpu_scan::prelude::*;

/// The three kinds, named, with `init` for the seeded exclusive scan.
fn kinds<E: Copy>(init: E) -> [(&'static str, ScanKind<E>); 3] {
    [
        ("inclusive", ScanKind::Inclusive),
        ("exclusive", ScanKind::Exclusive),
        ("exclusive+init", ScanKind::ExclusiveWithInit(init)),
    ]
}

/// Every kind forward, then every kind in reverse.
pub fn all_specs<E: Copy>(init: E) -> Vec<ScanSpec<E>> {
    named_specs(init, &[Direction::Forward, Direction::Reverse])
        .into_iter()
        .map(|(_, spec)| spec)
        .collect()
}

/// Every kind in every direction of `directions`, named ("reverse …" in
/// reverse).
pub fn named_specs<E: Copy>(init: E, directions: &[Direction]) -> Vec<(&'static str, ScanSpec<E>)> {
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
