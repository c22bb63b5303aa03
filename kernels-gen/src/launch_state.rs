//! The launch state of the single-pass scans: one small header per
//! workspace, in device memory, that every single-pass launch reads and the
//! launch's last block resets. Nothing about a launch comes from the host,
//! so a scan captured in a CUDA graph replays correctly any number of times.
//!
//! The layout is written once, in [`LAUNCH_STATE_FIELDS`]: [`LaunchState`]
//! is checked against it by a test, and the CUDA declaration
//! ([`launch_state_declaration`]) is printed from it.

/// The launch state as the host initialises it (`#[repr(C)]`, the layout of
/// the CUDA `scan_launch_state`).
///
/// * `counter`, `epoch`: one 64-bit word (`counter | epoch << 32`) that
///   blocks take their tile index from with a single atomic add, which
///   returns the launch's epoch with the index. Blocks take tiles in the
///   order they start, so a tile only waits on tiles that have started. The
///   block that takes a launch's last index (every other block has taken
///   its own before) sets the word to `next epoch << 32` for the next launch.
///   The epoch tags every status word a launch publishes, so words left by
///   earlier launches read as "not ready"; it runs from 1 to [`MAX_EPOCH`]
///   and wraps to 1.
/// * `capacity`: status entries in the workspace (at least 1). Each launch
///   zeroes [`SWEEP_ENTRIES`] of them that it does not use, the window
///   `epoch · SWEEP_ENTRIES …` around the array, so that no stale entry
///   survives until its epoch returns.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchState {
    /// Tile indices taken by the running launch (0 between launches).
    pub counter: u32,
    /// The next launch's epoch.
    pub epoch: u32,
    /// Status entries in the workspace.
    pub capacity: u64,
}

impl LaunchState {
    /// The state of a fresh workspace of `capacity` zeroed status entries.
    pub const fn fresh(capacity: u64) -> LaunchState {
        LaunchState {
            counter: 0,
            epoch: 1,
            capacity: if capacity == 0 { 1 } else { capacity },
        }
    }

    /// The state as the two little-endian 64-bit words of its layout, for
    /// uploading to the device.
    pub const fn to_words(&self) -> [u64; 2] {
        [
            self.counter as u64 | (self.epoch as u64) << 32,
            self.capacity,
        ]
    }

    /// The inverse of [`LaunchState::to_words`].
    pub const fn from_words(words: [u64; 2]) -> LaunchState {
        LaunchState {
            counter: words[0] as u32,
            epoch: (words[0] >> 32) as u32,
            capacity: words[1],
        }
    }
}

/// The fields of [`LaunchState`] in order: name, CUDA type, byte offset.
pub const LAUNCH_STATE_FIELDS: [(&str, &str, usize); 3] = [
    ("counter", "unsigned int", 0),
    ("epoch", "unsigned int", 4),
    ("capacity", "unsigned long long", 8),
];

/// The largest epoch: status words hold `epoch << 2 | state` in 32 bits.
pub const MAX_EPOCH: u32 = (1 << 30) - 1;

/// Status entries each launch zeroes (those of its window it does not use).
/// Consecutive epochs' windows follow each other around the array, so every
/// entry is rewritten or zeroed at least once every `2 · capacity / 32 + 1`
/// launches (twice the round, for the jump when the epoch wraps); with
/// fewer than 2^31 entries that is under 2^27 + 1 launches, far less than
/// the 2^30 − 1 after which an epoch returns, so no stale entry can carry
/// the epoch of the launch reading it.
pub const SWEEP_ENTRIES: u32 = 32;

/// The CUDA declaration of [`LaunchState`] and the constants above, behind
/// an include guard.
pub fn launch_state_declaration() -> String {
    let mut out = String::from(
        "#ifndef GPU_SCAN_LAUNCH_STATE\n#define GPU_SCAN_LAUNCH_STATE\n\
         // The single-pass scans' launch state (kernels_gen::LaunchState).\n\
         struct scan_launch_state {\n",
    );
    for (name, ty, _) in LAUNCH_STATE_FIELDS {
        out.push_str(&format!("  {ty} {name};\n"));
    }
    out.push_str("};\n");
    out.push_str(&format!(
        "static_assert(sizeof(scan_launch_state) == {}, \"the layout of kernels_gen::LaunchState\");\n",
        std::mem::size_of::<LaunchState>()
    ));
    out.push_str(&format!(
        "constexpr unsigned scan_max_epoch = {MAX_EPOCH}u;\n\
         constexpr int scan_sweep_entries = {SWEEP_ENTRIES};\n#endif\n"
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn the_field_table_is_the_struct_layout() {
        let offsets = [
            offset_of!(LaunchState, counter),
            offset_of!(LaunchState, epoch),
            offset_of!(LaunchState, capacity),
        ];
        for ((name, ty, offset), actual) in LAUNCH_STATE_FIELDS.iter().zip(offsets) {
            assert_eq!(*offset, actual, "{name}");
            let width = if ty.contains("long long") { 8 } else { 4 };
            assert_eq!(offset % width, 0, "{name}");
        }
        assert_eq!(size_of::<LaunchState>(), 16);
        let decl = launch_state_declaration();
        assert!(decl.contains("unsigned int counter;"));
        assert!(decl.contains("unsigned int epoch;"));
        assert!(decl.contains("sizeof(scan_launch_state) == 16"));
    }

    #[test]
    fn no_entry_outlives_an_epoch_period() {
        // The largest workspace (grid.x < 2^31 tiles): a full round of
        // windows, twice (the wrap), is far shorter than an epoch period.
        let capacity = i32::MAX as u64;
        let period = 2 * capacity.div_ceil(SWEEP_ENTRIES as u64) + 1;
        assert!(period < MAX_EPOCH as u64 / 4, "{period}");
        assert_eq!(LaunchState::fresh(0).capacity, 1);
        assert_eq!(LaunchState::fresh(5).epoch, 1);
    }

    #[test]
    fn words_are_the_struct_bytes() {
        let state = LaunchState {
            counter: 3,
            epoch: 6,
            capacity: 5,
        };
        let words = state.to_words();
        // SAFETY: LaunchState is repr(C), 16 bytes, no padding (checked above).
        let bytes: [u8; 16] = unsafe { std::mem::transmute(state) };
        let from_words: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(bytes.as_slice(), from_words.as_slice());
        assert_eq!(LaunchState::from_words(words), state);
        // The first word is the ticket the kernels add to: counter low, epoch high.
        assert_eq!(words[0], 3 | 6 << 32);
    }
}
