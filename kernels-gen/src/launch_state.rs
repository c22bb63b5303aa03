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
/// * `counter`: tile indices taken so far by the running launch. Blocks take
///   their tile from it in the order they start, so a tile only waits on
///   tiles that have started. The block that takes a launch's last index
///   sets it back to 0.
/// * `sweep`: the first status entry the next launch invalidates (see
///   [`SWEEP_ENTRIES_PER_BLOCK`]).
/// * `capacity`: status entries in the workspace (at least 1).
/// * `epoch`: tags every status word a launch publishes, so that words left
///   by earlier launches read as "not ready"; 1 to [`MAX_EPOCH`], advanced by
///   the block that takes the launch's last index.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchState {
    /// Tile indices taken by the running launch (0 between launches).
    pub counter: u64,
    /// First status entry the next launch invalidates.
    pub sweep: u64,
    /// Status entries in the workspace.
    pub capacity: u64,
    /// The next launch's epoch.
    pub epoch: u32,
    /// Padding (0).
    pub reserved: u32,
}

impl LaunchState {
    /// The state of a fresh workspace of `capacity` zeroed status entries.
    pub const fn fresh(capacity: u64) -> LaunchState {
        LaunchState {
            counter: 0,
            sweep: 0,
            capacity: if capacity == 0 { 1 } else { capacity },
            epoch: 1,
            reserved: 0,
        }
    }
}

impl LaunchState {
    /// The state as the four little-endian 64-bit words of its layout, for
    /// uploading to the device.
    pub const fn to_words(&self) -> [u64; 4] {
        [
            self.counter,
            self.sweep,
            self.capacity,
            self.epoch as u64 | (self.reserved as u64) << 32,
        ]
    }

    /// The inverse of [`LaunchState::to_words`].
    pub const fn from_words(words: [u64; 4]) -> LaunchState {
        LaunchState {
            counter: words[0],
            sweep: words[1],
            capacity: words[2],
            epoch: words[3] as u32,
            reserved: (words[3] >> 32) as u32,
        }
    }
}

/// The fields of [`LaunchState`] in order: name, CUDA type, byte offset.
pub const LAUNCH_STATE_FIELDS: [(&str, &str, usize); 5] = [
    ("counter", "unsigned long long", 0),
    ("sweep", "unsigned long long", 8),
    ("capacity", "unsigned long long", 16),
    ("epoch", "unsigned int", 24),
    ("reserved", "unsigned int", 28),
];

/// The largest epoch: status words hold `epoch << 2 | state` in 32 bits.
pub const MAX_EPOCH: u32 = (1 << 30) - 1;

/// Status entries each block of a single-pass launch invalidates past the
/// launch's own tiles, walking the array from `sweep` (a launch's window
/// stops at the end of the array; the next starts again at 0). A launch has
/// at least one block, so every entry is rewritten or zeroed at least once
/// every `capacity / 8 + 1` launches; with fewer than 2^31 entries that is
/// under 2^28 + 1 launches, far less than the 2^30 - 1 after which an epoch
/// returns, so no stale entry can carry the epoch of the launch reading it.
pub const SWEEP_ENTRIES_PER_BLOCK: u32 = 8;

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
         constexpr int scan_sweep_entries_per_block = {SWEEP_ENTRIES_PER_BLOCK};\n#endif\n"
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
            offset_of!(LaunchState, sweep),
            offset_of!(LaunchState, capacity),
            offset_of!(LaunchState, epoch),
            offset_of!(LaunchState, reserved),
        ];
        for ((name, ty, offset), actual) in LAUNCH_STATE_FIELDS.iter().zip(offsets) {
            assert_eq!(*offset, actual, "{name}");
            let width = if ty.contains("long long") { 8 } else { 4 };
            assert_eq!(offset % width, 0, "{name}");
        }
        assert_eq!(size_of::<LaunchState>(), 32);
        let decl = launch_state_declaration();
        assert!(decl.contains("unsigned long long counter;"));
        assert!(decl.contains("unsigned int epoch;"));
        assert!(decl.contains("sizeof(scan_launch_state) == 32"));
    }

    #[test]
    fn no_entry_outlives_an_epoch_period() {
        // The largest workspace (grid.x < 2^31 tiles) swept by the smallest
        // launch (one block) is fully rewritten well before an epoch returns.
        let capacity = i32::MAX as u64;
        let period = capacity / SWEEP_ENTRIES_PER_BLOCK as u64 + 1;
        assert!(period < MAX_EPOCH as u64 / 2, "{period}");
        assert_eq!(LaunchState::fresh(0).capacity, 1);
        assert_eq!(LaunchState::fresh(5).epoch, 1);
        // The words are the struct's bytes.
        let state = LaunchState {
            counter: 3,
            sweep: 4,
            capacity: 5,
            epoch: 6,
            reserved: 7,
        };
        let words = state.to_words();
        // SAFETY: LaunchState is repr(C), 32 bytes, no padding (checked above).
        let bytes: [u8; 32] = unsafe { std::mem::transmute(state) };
        let from_words: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(bytes.as_slice(), from_words.as_slice());
        assert_eq!(LaunchState::from_words(words), state);
    }
}
