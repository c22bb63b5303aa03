//! Which kernels a scan of more than one tile takes ([`ScanPath`]), and
//! the tile counts that follow from it.

use crate::policy::PLANNER_POLICY;

/// How a scan of more than one tile runs on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ScanPath {
    /// The path the library considers fastest for the input: the
    /// pipelined single pass for inputs of at least 2 MiB of elements of
    /// at most 12 bytes, and for plain scans of wider elements;
    /// otherwise the single pass with look-back. The single passes beat
    /// reduce-then-scan's three launches on the H200 at every size;
    /// BENCHMARKS.md has the numbers. Segmented scans over
    /// offsets of very short segments (a segment per fewer than 6 elements
    /// on average), over keys, and over rows of a power-of-two length up to
    /// 4096 elements of at most 4 bytes take the look-back pass.
    Auto,
    /// The pipelined single pass, for Hopper (sm_90) and newer: persistent
    /// blocks whose warps take roles. A producer warp loads tiles into a
    /// pipeline of shared-memory stages with bulk copies (TMA); a reduce
    /// squad publishes each tile's aggregate as soon as it lands; a
    /// lookahead warp sums its predecessors' aggregates into the tile's
    /// prefix; a rescan squad and a store warp finish the tile. Loads keep
    /// going while tiles wait for their prefixes (after CCCL's
    /// warp-specialized scan). Elements whose size is a multiple of 4
    /// bytes (past 156 bytes in squads of 2 warps, whose threads may take
    /// more registers), 16-byte aligned input, output (and head flags);
    /// plain scans longer than
    /// [`Tuning::small_tile_limit`](crate::Tuning::small_tile_limit),
    /// segmented scans longer than one tile of elements of at most 156
    /// bytes (forward only; segmented reverse scans run as
    /// [`ScanPath::SinglePass`]). Anything else runs as
    /// [`ScanPath::SinglePass`].
    Pipelined,
    /// One kernel: every tile publishes its aggregate and then its inclusive
    /// prefix, and looks back over its predecessors' (decoupled look-back;
    /// Merrill & Garland 2016). Reads and writes each element once.
    SinglePass,
    /// Three kernels: tile totals, a scan of the totals, a seeded rescan
    /// (chapter 1.4.4). Reads the input twice.
    ReduceThenScan,
}

/// The concrete path for a scan of more than one tile.
pub(crate) fn resolve_path(path: ScanPath) -> ScanPath {
    match path {
        ScanPath::Auto => ScanPath::Pipelined,
        concrete => concrete,
    }
}

/// Whether a scan of `n` elements of `size` bytes (more than one tile;
/// plain or segmented) on `path` should take the pipelined single pass
/// where it can: always on [`ScanPath::Pipelined`]; on [`ScanPath::Auto`]
/// only where it was measured faster ([`PLANNER_POLICY`]).
pub(crate) fn pipelined_wanted_for(size: usize, path: ScanPath, n: usize, segmented: bool) -> bool {
    let policy = &PLANNER_POLICY;
    match path {
        ScanPath::Pipelined => true,
        ScanPath::Auto => {
            n * size >= policy.pipelined_min_bytes
                && (size <= policy.pipelined_packed_max_size
                    || (!segmented && policy.pipelined_wide_plain_sizes.contains(&size)))
        }
        _ => false,
    }
}

/// Elements the pass over tile totals and the grid can handle (grid.x < 2^31).
pub(crate) const MAX_TILES: usize = i32::MAX as usize;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_takes_the_pipelined_pass_where_it_was_measured_faster() {
        let big = 1 << 26;
        let auto = |size, segmented| pipelined_wanted_for(size, ScanPath::Auto, big, segmented);
        // Values that pack with their status, plain and segmented.
        for size in [1, 4, 8, 12] {
            assert!(auto(size, false) && auto(size, true), "{size}");
        }
        // Past 12 bytes: the pipelined pass in plain scans only.
        for size in [13, 16, 24, 28, 32, 48, 72, 80, 96, 108, 128, 156, 192, 256] {
            assert!(auto(size, false) && !auto(size, true), "{size}");
        }
        // Short inputs never; explicit paths as asked.
        assert!(!pipelined_wanted_for(4, ScanPath::Auto, 1 << 10, false));
        assert!(pipelined_wanted_for(256, ScanPath::Pipelined, 1, true));
        assert!(!pipelined_wanted_for(4, ScanPath::SinglePass, big, false));
    }
}
