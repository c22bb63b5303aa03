// ---- Global level: single pass with decoupled look-back (Merrill & Garland 2016) ----
// Each block takes the next tile index from an atomic counter, so a tile
// only ever waits on tiles that have already started: no deadlock whatever
// order the hardware schedules blocks in. A tile
//   1. scans its elements within the block (tile_total = its aggregate),
//   2. publishes the aggregate (state "aggregate"), tile 0 its inclusive
//      prefix at once (state "prefix"),
//   3. looks back: warp 0 reads the status of the 32 preceding tiles at a
//      time, nearest last, and combines their aggregates in order until it
//      reaches a tile with an inclusive prefix,
//   4. publishes its own inclusive prefix and rescans with the exclusive one.
// Input and output are read and written once (2n element moves instead of
// reduce-then-scan's 3n). Values and status live in separate arrays, so any
// element size works: the value is written first, then the status word
// with release semantics; readers load the status with acquire semantics
// before the value.

// Warp 0's look-back for tile `tile` (> 0): returns the combination of all
// elements before the tile (with the seed in front). Lanes hold tiles
// window_end - 31 … window_end, so lane order is sequence order.
__device__ __forceinline__ $op_t $op_look_back(unsigned long long tile, const unsigned* status, const $op_t* aggregates, const $op_t* prefixes, unsigned epoch) {
  const unsigned lane = threadIdx.x & 31u;
  long long window_end = (long long)tile - 1;
  $op_t exclusive = $op_identity();
  bool have = false;
  while (true) {
    const long long p = window_end - (31 - (long long)lane);
    unsigned state;
    do {
      // Tiles before tile 0 act as empty prefixes.
      const unsigned word = p >= 0 ? scan_load_acquire(status + p) : ((epoch << 2) | scan_tile_prefix);
      state = (word >> 2) == epoch ? (word & 3u) : scan_tile_not_ready;
    } while (__any_sync(0xffffffffu, state == scan_tile_not_ready));
    const unsigned prefix_lanes = __ballot_sync(0xffffffffu, state == scan_tile_prefix);
    // The nearest tile with an inclusive prefix (lane 0 when none): nothing
    // before it is needed.
    const unsigned start = prefix_lanes != 0 ? 31u - (unsigned)__clz((int)prefix_lanes) : 0u;
    $op_t value = $op_identity();
    if (lane >= start && p >= 0) value = state == scan_tile_prefix ? prefixes[p] : aggregates[p];
    // Combine the window in lane order; lane 31 ends with its total.
    const $op_t window = scan_shfl_idx($op_warp_inclusive_scan(value), 31);
    exclusive = have ? $op_combine(window, exclusive) : window;
    have = true;
    if (prefix_lanes != 0) return exclusive;
    window_end -= 32;
  }
}

template <bool Inclusive>
__device__ __forceinline__ void $op_scan_single_pass(const $op_t* input, $op_t* output, unsigned* status, $op_t* aggregates, $op_t* prefixes,
                                                     unsigned long long* tile_counter, unsigned long long tile_base, unsigned epoch,
                                                     const $op_t seed, unsigned long long n) {
  __shared__ $op_t staging[$op_staging_items];
  __shared__ $op_t warp_totals[$op_warps + 1];
  __shared__ unsigned long long shared_tile;
  __shared__ $op_t shared_exclusive;
  if (threadIdx.x == 0) shared_tile = atomicAdd(tile_counter, 1ull) - tile_base;
  __syncthreads();
  const unsigned long long tile = shared_tile;
  const unsigned long long base = tile * $op_items_per_tile;
  const int valid = (int)(n - base < $op_items_per_tile ? n - base : $op_items_per_tile);
  $op_t items[$op_items_per_thread];
  $op_load_tile(input, base, valid, staging, items);
  $op_t tile_total;
  const $op_t thread_prefix = $op_block_exclusive_scan($op_thread_reduce(items), warp_totals, tile_total);
  if (threadIdx.x < 32) {
    if (tile == 0) {
      if (threadIdx.x == 0) {
        prefixes[0] = $op_combine(seed, tile_total);
        scan_store_release(status, (epoch << 2) | scan_tile_prefix);
        shared_exclusive = seed;
      }
    } else {
      if (threadIdx.x == 0) {
        aggregates[tile] = tile_total;
        scan_store_release(status + tile, (epoch << 2) | scan_tile_aggregate);
      }
      const $op_t before = $op_look_back(tile, status, aggregates, prefixes, epoch);
      if (threadIdx.x == 0) {
        // Tile 0's prefix already holds the seed.
        prefixes[tile] = $op_combine(before, tile_total);
        scan_store_release(status + tile, (epoch << 2) | scan_tile_prefix);
        shared_exclusive = before;
      }
    }
  }
  __syncthreads();
  const $op_t tile_prefix = shared_exclusive;
  // As in $op_tile_scan: the tile prefix, then this thread's prefix in the tile.
  $op_t running = threadIdx.x == 0 ? tile_prefix : $op_combine(tile_prefix, thread_prefix);
#pragma unroll
  for (int i = 0; i < $op_items_per_thread; ++i) {
    if (Inclusive) {
      running = $op_combine(running, items[i]);
      items[i] = running;
    } else {
      const $op_t item = items[i];
      items[i] = running;
      running = $op_combine(running, item);
    }
  }
  $op_store_tile(output, base, valid, staging, items);
}

extern "C" __global__ void __launch_bounds__($op_block_threads)
$op_single_pass_inclusive(const $op_t* input, $op_t* output, unsigned* status, $op_t* aggregates, $op_t* prefixes,
                          unsigned long long* tile_counter, unsigned long long tile_base, unsigned epoch, const $op_t seed, unsigned long long n) {
  $op_scan_single_pass<true>(input, output, status, aggregates, prefixes, tile_counter, tile_base, epoch, seed, n);
}

extern "C" __global__ void __launch_bounds__($op_block_threads)
$op_single_pass_exclusive(const $op_t* input, $op_t* output, unsigned* status, $op_t* aggregates, $op_t* prefixes,
                          unsigned long long* tile_counter, unsigned long long tile_base, unsigned epoch, const $op_t seed, unsigned long long n) {
  $op_scan_single_pass<false>(input, output, status, aggregates, prefixes, tile_counter, tile_base, epoch, seed, n);
}
