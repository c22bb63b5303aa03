#ifndef GPU_SCAN_LAUNCH
#define GPU_SCAN_LAUNCH
// ---- Launch state of the single-pass scans (scan_launch_state) ----
// Every single-pass launch, look-back or pipelined, plain or segmented,
// finds what it needs in the workspace's launch state, never in host
// arguments, so a launch captured in a CUDA graph replays correctly:
//  * one thread per block reads the epoch and the sweep position before it
//    takes its first tile index (scan_launch_open);
//  * tile indices come from the counter (scan_launch_take); the block that
//    takes the launch's last index, which every other block has taken
//    before it, sets the counter back to 0, advances the epoch and moves
//    the sweep on, for the next launch on the stream;
//  * each block zeroes scan_sweep_entries_per_block status entries that
//    this launch's tiles do not use (scan_launch_sweep): an epoch comes back
//    only after scan_max_epoch launches, long after every entry has been
//    rewritten or zeroed, so an old entry never passes for a new one.

// What one launch read from its state.
struct scan_launch_view {
  unsigned epoch;
  unsigned long long sweep;
  unsigned long long capacity;
};

// By one thread per block, before the block takes any tile index.
__device__ __forceinline__ scan_launch_view scan_launch_open(const scan_launch_state* state) {
  scan_launch_view view;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(view.epoch) : "l"(&state->epoch) : "memory");
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(view.sweep) : "l"(&state->sweep) : "memory");
  view.capacity = state->capacity;  // fixed for the workspace's life
  // These reads happen before this block's first index is taken, so before
  // the last index's taker rewrites them.
  __threadfence();
  return view;
}

// Takes the next tile index. The taker of `last_index` (the launch's final
// index) resets the state for the next launch; `swept` is how many entries
// the launch's blocks zeroed.
__device__ __forceinline__ unsigned long long scan_launch_take(scan_launch_state* state, const scan_launch_view& view,
                                                               unsigned long long last_index, unsigned long long swept) {
  const unsigned long long index = atomicAdd(&state->counter, 1ull);
  if (index == last_index) {
    __threadfence();  // after every other block's reads (they came before its index)
    const unsigned next_epoch = view.epoch >= scan_max_epoch ? 1u : view.epoch + 1u;
    const unsigned long long next_sweep = view.sweep + swept < view.capacity ? view.sweep + swept : 0ull;
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" : : "l"(&state->counter), "l"(0ull) : "memory");
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" : : "l"(&state->sweep), "l"(next_sweep) : "memory");
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" : : "l"(&state->epoch), "r"(next_epoch) : "memory");
  }
  return index;
}

// Block `block`'s share of the sweep: entries sweep + block·K … + K − 1
// that exist and are not among this launch's `tiles` get a zero status word
// (epoch 0 belongs to no launch). Nothing in this launch reads them. A
// launch's window stops at the end of the array, and the next one starts
// again at 0, so every entry is visited within capacity / swept + 1 launches.
__device__ __forceinline__ void scan_launch_sweep(void* status, const scan_launch_view& view, unsigned long long block, unsigned long long tiles) {
  const unsigned long long first = view.sweep + block * scan_sweep_entries_per_block;
#pragma unroll
  for (int i = 0; i < scan_sweep_entries_per_block; ++i) {
    const unsigned long long entry = first + i;
    if (entry >= tiles && entry < view.capacity) *(unsigned*)((unsigned char*)status + entry * scan_tile_status_stride) = 0u;
  }
}

// The start of every look-back single-pass block (one block per tile):
// thread 0 opens the launch, sweeps, and takes the block's tile index, which
// every thread receives, or scan_no_tile (this synchronises the block). The launch's epoch
// stays in shared memory (scan_shared_epoch) until the look-back needs it,
// rather than in a register through the tile's load and scan. Thread 0's
// part is out of line: it runs once per block, and inlined, its 64-bit
// state made ptxas spill in the register-capped kernels.
// An index past the launch's tiles, which a block then ends on (it cannot
// happen while the state is intact, but never reads or writes out of bounds).
constexpr unsigned long long scan_no_tile = ~0ull;
__shared__ unsigned long long scan_shared_tile;
__shared__ unsigned scan_shared_epoch;
__device__ __noinline__ void scan_single_pass_open_block(scan_launch_state* launch, void* status, unsigned long long tiles) {
  const scan_launch_view view = scan_launch_open(launch);
  scan_launch_sweep(status, view, blockIdx.x, tiles);
  const unsigned long long tile = scan_launch_take(launch, view, tiles - 1, (unsigned long long)gridDim.x * scan_sweep_entries_per_block);
  scan_shared_tile = tile < tiles ? tile : scan_no_tile;
  scan_shared_epoch = view.epoch;
}
__device__ __forceinline__ unsigned long long scan_single_pass_take_tile(scan_launch_state* launch, void* status, unsigned long long tiles) {
  if (threadIdx.x == 0) scan_single_pass_open_block(launch, status, tiles);
  __syncthreads();
  return scan_shared_tile;
}
#endif  // GPU_SCAN_LAUNCH
