#ifndef GPU_SCAN_LAUNCH
#define GPU_SCAN_LAUNCH
// ---- Launch state of the single-pass scans (scan_launch_state) ----
// Every single-pass launch, look-back or pipelined, plain or segmented,
// finds what it needs in the workspace's launch state, never in host
// arguments, so a launch captured in a CUDA graph replays correctly:
//  * a tile index comes with the launch's epoch from one atomic add on the
//    state's first word, counter | epoch << 32 (scan_launch_take), as
//    cheap as taking an index alone. The block that takes the launch's last
//    index, which every other block has taken before it, sets the word to
//    the next epoch with a zero counter, for the next launch on the stream;
//  * each launch zeroes scan_sweep_entries status entries it does not use
//    (scan_launch_sweep), off the critical path: an epoch comes back only
//    after scan_max_epoch launches, long after every entry has been
//    rewritten or zeroed, so an old entry never passes for a new one.

// A tile index and the epoch of the launch it belongs to.
struct scan_ticket {
  unsigned long long index;
  unsigned epoch;
};

// Takes the next tile index. The taker of `last_index` (the launch's final
// index) resets the state for the next launch.
__device__ __forceinline__ scan_ticket scan_launch_take(scan_launch_state* state, unsigned long long last_index) {
  const unsigned long long word = atomicAdd((unsigned long long*)state, 1ull);
  scan_ticket ticket;
  ticket.index = word & 0xffffffffull;
  ticket.epoch = (unsigned)(word >> 32);
  if (ticket.index == last_index) {
    const unsigned next_epoch = ticket.epoch >= scan_max_epoch ? 1u : ticket.epoch + 1u;
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" : : "l"(state), "l"((unsigned long long)next_epoch << 32) : "memory");
  }
  return ticket;
}

// This epoch's sweep window: scan_sweep_entries entries from epoch ·
// scan_sweep_entries (modulo the capacity), around the array. Entries
// `first`, `first + step`, … of the window get zero status words (epoch 0
// belongs to no launch) unless one of this launch's `tiles` uses them;
// nothing in this launch reads them. Consecutive epochs' windows follow
// each other, so every entry is visited within capacity / scan_sweep_entries
// + 1 launches (twice that across the epoch's wrap).
template <unsigned Bytes, unsigned Stride>
__device__ __forceinline__ void scan_launch_sweep(void* status, const scan_launch_state* state, unsigned epoch, int first, int step, unsigned long long tiles) {
  const unsigned long long capacity = state->capacity;
  const unsigned long long start = ((unsigned long long)epoch * scan_sweep_entries) % capacity;
  for (int i = first; i < scan_sweep_entries; i += step) {
    unsigned long long entry = start + (unsigned)i;
    while (entry >= capacity) entry -= capacity;
    // Every 16-byte chunk's status word: wide elements' entries carry one
    // in each chunk (scan_tile_status).
    if (entry >= tiles) {
      for (unsigned chunk = 0; chunk < (Bytes < 32 ? 1u : Bytes / 16); ++chunk)
        *(unsigned*)((unsigned char*)status + scan_status_chunk_offset<Bytes, Stride>(entry, chunk)) = 0u;
    }
  }
}

// The start of every look-back single-pass block (one block per tile):
// thread 0 takes the block's tile index, which every thread receives, or
// scan_no_tile (this synchronises the block). The launch's epoch stays in
// shared memory (scan_shared_epoch) until the look-back needs it, rather
// than in a register through the tile's load and scan. Thread 0's part is
// out of line: it runs once per block, and inlined, its 64-bit state made
// ptxas spill in the register-capped kernels.
// An index past the launch's tiles, on which a block ends (it cannot happen
// while the state is intact, but never reads or writes out of bounds).
constexpr unsigned long long scan_no_tile = ~0ull;
__shared__ unsigned long long scan_shared_tile;
__shared__ unsigned scan_shared_epoch;
__device__ __noinline__ void scan_single_pass_open_block(scan_launch_state* launch, unsigned long long tiles) {
  const scan_ticket ticket = scan_launch_take(launch, tiles - 1);
  scan_shared_tile = ticket.index < tiles ? ticket.index : scan_no_tile;
  scan_shared_epoch = ticket.epoch;
}
__device__ __forceinline__ unsigned long long scan_single_pass_take_tile(scan_launch_state* launch, unsigned long long tiles) {
  if (threadIdx.x == 0) scan_single_pass_open_block(launch, tiles);
  __syncthreads();
  return scan_shared_tile;
}

// The end of every look-back single-pass block: the block of tile 0, which
// waits on nobody and finishes first, sweeps (one entry per thread) for the
// launch's `tiles` tiles of `tile_items` elements. Out of line, as the start.
template <unsigned Bytes, unsigned Stride>
__device__ __noinline__ void scan_single_pass_sweep(void* status, const scan_launch_state* launch, unsigned long long n, unsigned long long tile_items) {
  scan_launch_sweep<Bytes, Stride>(status, launch, scan_shared_epoch, (int)threadIdx.x, (int)blockDim.x, (n + tile_items - 1) / tile_items);
}
#endif  // GPU_SCAN_LAUNCH
