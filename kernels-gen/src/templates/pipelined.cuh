// ---- Global level: pipelined single pass (sm_90 and newer) ----
// A single pass like the one above, restructured so that no tile's wait
// for its predecessors stalls the loads behind it (after CCCL's
// warp-specialized "decoupled lookahead" scan). Blocks are persistent, one
// per SM (the stages fill its shared memory), and their warps take roles:
//   producer   takes the next tile index from the counter once a stage is
//              free and loads the tile into it with one bulk copy (TMA);
//   reduce     (a squad of 4 warps) combines the tile as soon as it lands
//              and publishes its aggregate at once: it never waits for the
//              tile's predecessors;
//   lookahead  walks the published aggregates forward, from where it
//              stopped for this block's previous tile to this tile, keeping
//              the running combination: the tile's exclusive prefix;
//   rescan     (4 warps) rescans the tile in shared memory behind its prefix;
//   store      writes the tile back with one bulk copy and frees its stage.
// Up to $op_pipelined_stages tiles are in flight per block, so loads keep
// going while a tile waits for its prefix. Tiles only publish aggregates
// (in order, no commutativity needed: lane order is sequence order); the
// seed starts every lookahead's running prefix.
//
// Forward progress does not depend on block scheduling: a tile index goes to
// a running block that already holds a free stage for it, so every tile
// handed out is loaded and its aggregate published without waiting for any
// other tile; a tile's prefix needs only aggregates of smaller indices,
// which were handed out earlier.
//
// Shared memory per stage s: the tile (bytes scan_pipelined_tile_bytes),
// then after all tiles the bookkeeping: barriers, tile indices, the reduce
// squad's per-lane warp-inclusive totals and per-warp totals, and prefixes.
// Barriers per stage, each used once per round k / stages (phase parity):
//   loaded (producer + bulk bytes), indexed (producer → lookahead),
//   reduced (reduce squad → rescan), prefixed (lookahead → rescan),
//   rescanned (rescan squad → store), free (store → producer).

constexpr int $op_pipelined_items_per_thread = scan_pipelined_items_per_thread(sizeof($op_t));
constexpr int $op_pipelined_items_per_tile = scan_pipelined_squad_threads * $op_pipelined_items_per_thread;
constexpr int $op_pipelined_stages = scan_pipelined_stages(sizeof($op_t));
// A tail tile moves its first elements by bulk copy, in whole 16-byte
// units: a multiple of this many elements.
constexpr int $op_pipelined_bulk_granule = sizeof($op_t) % 16 == 0 ? 1 : sizeof($op_t) % 8 == 0 ? 2 : 4;

// Shared-memory layout of one pipelined block.
struct $op_pipelined_shared {
  unsigned char* base;
  static constexpr int stages = $op_pipelined_stages > 1 ? $op_pipelined_stages : 1;
  static constexpr unsigned tile_bytes = scan_pipelined_tile_bytes(sizeof($op_t));
  static constexpr unsigned barriers_at = stages * tile_bytes;
  static constexpr unsigned indices_at = barriers_at + stages * 6 * 8;
  static constexpr unsigned values_at = scan_round_up(indices_at + stages * 8, 16);
  __device__ __forceinline__ $op_t* tile(int s) const { return ($op_t*)(base + s * tile_bytes); }
  __device__ __forceinline__ unsigned long long* barrier(int which, int s) const { return (unsigned long long*)(base + barriers_at) + which * stages + s; }
  __device__ __forceinline__ unsigned long long& tile_index(int s) const { return ((unsigned long long*)(base + indices_at))[s]; }
  __device__ __forceinline__ $op_t* lane_totals(int s) const { return ($op_t*)(base + values_at) + s * scan_pipelined_squad_threads; }
  __device__ __forceinline__ $op_t* warp_totals(int s) const { return ($op_t*)(base + values_at) + stages * scan_pipelined_squad_threads + s * scan_pipelined_squad_warps; }
  __device__ __forceinline__ $op_t& prefix(int s) const { return (($op_t*)(base + values_at) + stages * (scan_pipelined_squad_threads + scan_pipelined_squad_warps))[s]; }
};
static_assert(!scan_pipelined_supported(sizeof($op_t)) ||
                  $op_pipelined_shared::values_at + $op_pipelined_shared::stages * (scan_pipelined_squad_threads + scan_pipelined_squad_warps + 1) * sizeof($op_t) <=
                      scan_pipelined_shared_bytes(sizeof($op_t)),
              "the pipelined layout fits the shared memory the host provides");
enum { $op_loaded = 0, $op_indexed = 1, $op_reduced = 2, $op_prefixed = 3, $op_rescanned = 4, $op_freed = 5 };

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// Where tile `tile` starts, how many elements it has, and how many of them
// travel by bulk copy (the rest of a tail tile is read and written directly).
struct $op_pipelined_extent {
  unsigned long long base;
  int valid;
  int bulk;
  __device__ __forceinline__ $op_pipelined_extent(unsigned long long tile, unsigned long long n) {
    base = tile * $op_pipelined_items_per_tile;
    valid = (int)(n - base < $op_pipelined_items_per_tile ? n - base : $op_pipelined_items_per_tile);
    bulk = valid / $op_pipelined_bulk_granule * $op_pipelined_bulk_granule;
  }
};

// Reduce squad, before combining a tile: a tail tile's elements the bulk
// copy left out come from global memory and the rest of the stage is padded
// with the identity, so that it is combined by the same code as whole tiles
// (a separate element-by-element path for it measured about 8 µs slower, on
// the critical path of every scan). Whole tiles pass straight through.
__device__ __forceinline__ void $op_pipelined_pad_tail($op_t* tile, const $op_t* input, const $op_pipelined_extent& extent) {
  if (extent.valid == $op_pipelined_items_per_tile) return;
  for (int e = extent.bulk + (int)threadIdx.x; e < $op_pipelined_items_per_tile; e += scan_pipelined_squad_threads)
    tile[e] = e < extent.valid ? input[extent.base + e] : $op_identity();
  scan_named_barrier(1, scan_pipelined_squad_threads);
}

// Rescan squad thread t, after rescanning: the few elements of a tail tile
// the bulk store leaves out (fewer than 16 bytes' worth) that lie among its
// items, written directly.
__device__ __forceinline__ void $op_pipelined_store_tail(const $op_t* tile, $op_t* output, const $op_pipelined_extent& extent, int t) {
  if (extent.bulk == extent.valid) return;
  const int first = t * $op_pipelined_items_per_thread;
  const int end = first + $op_pipelined_items_per_thread < extent.valid ? first + $op_pipelined_items_per_thread : extent.valid;
  for (int e = first > extent.bulk ? first : extent.bulk; e < end; ++e) output[extent.base + e] = tile[e];
}

// Reduce squad: this thread's items of a whole (or padded) tile, in order.
__device__ __forceinline__ $op_t $op_pipelined_thread_reduce(const $op_t* tile) {
  const int first = (int)threadIdx.x * $op_pipelined_items_per_thread;
  $op_t total = tile[first];
#pragma unroll
  for (int i = 1; i < $op_pipelined_items_per_thread; ++i) total = $op_combine(total, tile[first + i]);
  return total;
}

// Rescan squad: this thread's items behind `running`, in place in the stage.
template <bool Inclusive>
__device__ __forceinline__ void $op_pipelined_thread_rescan($op_t* tile, $op_t running) {
  const int first = ((int)threadIdx.x - scan_pipelined_squad_threads) * $op_pipelined_items_per_thread;
#pragma unroll
  for (int i = 0; i < $op_pipelined_items_per_thread; ++i) {
    const $op_t item = tile[first + i];
    if (Inclusive) {
      running = $op_combine(running, item);
      tile[first + i] = running;
    } else {
      tile[first + i] = running;
      running = $op_combine(running, item);
    }
  }
}

// Tiles each lookahead lane polls per round (measured on the H200: 4 per
// lane ran the u32 sum at 94% of copy speed, 2 at 81%, 1 at 62%).
constexpr int $op_lookahead_per_lane = 4;

// One round of a lookahead warp's polling (both pipelined kernels): lane l
// reads the status (and, where it is packed there, the value) of the four
// consecutive tiles next + 4l … next + 4l + 3 below `target`; the warp then
// finds the run of ready tiles from `next` on, which ends in the first lane
// with fewer than all of its tiles ready. A tile published after the poll
// waits for the next round.
struct $op_lookahead_round {
  $op_t values[$op_lookahead_per_lane];
  unsigned states[$op_lookahead_per_lane];
  unsigned long long first;  // this lane's first tile
  unsigned count;            // the warp's run of ready tiles
  int used;                  // how many of the run are this lane's
  template <class Status>
  __device__ __forceinline__ $op_lookahead_round(const Status& status, unsigned epoch, unsigned long long next, unsigned long long target) {
    constexpr int per_lane = $op_lookahead_per_lane;
    const unsigned lane = threadIdx.x & 31u;
    first = next + per_lane * lane;
#pragma unroll
    for (int r = 0; r < per_lane; ++r) {
      const unsigned long long tile = first + r;
      const unsigned word = status.poll(tile < target ? tile : target - 1, values[r]);
      states[r] = tile < target && (word >> 2) == epoch ? (word & 3u) : scan_tile_not_ready;
    }
    int ready = 0;  // this lane's leading ready tiles
#pragma unroll
    for (int r = 0; r < per_lane; ++r) ready += ready == r && states[r] != scan_tile_not_ready;
    const unsigned short_lanes = __ballot_sync(0xffffffffu, ready < per_lane);
    const unsigned last_lane = short_lanes != 0 ? (unsigned)__ffs(short_lanes) - 1u : 32u;
    const int last_ready = __shfl_sync(0xffffffffu, ready, last_lane & 31u);
    count = per_lane * last_lane + (last_lane < 32 ? last_ready : 0);
    used = lane < last_lane ? per_lane : lane == last_lane ? ready : 0;
  }
};

// Lookahead warp: extends `running` (the seed and the aggregates of tiles
// [0, next)) up to `target`, a round at a time: each lane combines its
// share of the ready run in order, and one warp scan combines the lanes in
// lane order (sequence order). The warp spins without sleeping, since every
// tile of its block waits on it (a sleep after an empty poll measured no
// different).
template <class Status>
__device__ __forceinline__ void $op_pipelined_lookahead(const Status& status, unsigned epoch, unsigned long long& next, $op_t& running, unsigned long long target) {
  while (next < target) {
    $op_lookahead_round round(status, epoch, next, target);
    if (round.count == 0) continue;
    $op_t share = $op_identity();
#pragma unroll
    for (int r = 0; r < $op_lookahead_per_lane; ++r) {
      status.fetch(round.first + r, round.states[r], r < round.used, round.values[r]);
      if (r < round.used) share = r == 0 ? round.values[0] : $op_combine(share, round.values[r]);
    }
    running = $op_combine(running, scan_shfl_idx($op_warp_inclusive_scan(share), 31));
    next += round.count;
  }
}

// The roles both pipelined kernels (plain and segmented) share, over a
// shared-memory layout `Shared` with tile(s), barrier(which, s),
// tile_index(s) and prefix(s).

// Thread 0 sets up every stage's barriers; then the roles part.
template <class Shared>
__device__ __forceinline__ void $op_pipelined_init_barriers(const Shared& shared) {
  if (threadIdx.x == 0) {
    for (int s = 0; s < Shared::stages; ++s) {
      scan_mbarrier_init(shared.barrier($op_loaded, s), 1);
      scan_mbarrier_init(shared.barrier($op_indexed, s), 1);
      scan_mbarrier_init(shared.barrier($op_reduced, s), scan_pipelined_squad_threads);
      scan_mbarrier_init(shared.barrier($op_prefixed, s), 1);
      scan_mbarrier_init(shared.barrier($op_rescanned, s), scan_pipelined_squad_threads);
      scan_mbarrier_init(shared.barrier($op_freed, s), 1);
    }
    scan_fence_barrier_init();
  }
  __syncthreads();  // the only block-wide barrier
}

// Producer (one lane): a free stage, then a tile index, then its load. A
// tile may bring `extra_bytes(extent)` more bytes, which `load_extra(s,
// extent, barrier)` bulk-loads on the same barrier. The first index brings
// the launch's epoch, which the other roles read from scan_shared_epoch
// once a barrier of the first tile has passed. Every block takes one index
// past the last tile before it stops, so a launch takes tiles + blocks
// indices (launch.cuh); the last one's taker, whose block needs no more
// tiles, also sweeps.
template <class Shared, class ExtraBytes, class LoadExtra>
__device__ __forceinline__ void $op_pipelined_producer(const Shared& shared, const $op_t* input, void* status, scan_launch_state* launch,
                                                      unsigned long long n, unsigned long long tiles, ExtraBytes extra_bytes,
                                                      LoadExtra load_extra) {
  const unsigned long long last_index = tiles + gridDim.x - 1;
  for (int k = 0;; ++k) {
    const int s = k % Shared::stages;
    if (k >= Shared::stages) scan_mbarrier_wait(shared.barrier($op_freed, s), (unsigned)(k / Shared::stages - 1) & 1u);
    const scan_ticket ticket = scan_launch_take(launch, last_index);
    if (k == 0) scan_shared_epoch = ticket.epoch;
    if (ticket.index == last_index) scan_launch_sweep(status, launch, ticket.epoch, 0, 1, tiles);
    const unsigned long long taken = ticket.index;
    const unsigned long long tile = taken < tiles ? taken : tiles;
    shared.tile_index(s) = tile;
    scan_mbarrier_arrive(shared.barrier($op_indexed, s));
    if (tile >= tiles) {
      scan_mbarrier_arrive(shared.barrier($op_loaded, s));  // the others read the end mark and stop
      return;
    }
    const $op_pipelined_extent extent(tile, n);
    const unsigned bytes = (unsigned)extent.bulk * (unsigned)sizeof($op_t);
    const unsigned extra = extra_bytes(extent);
    if (bytes + extra != 0) {
      scan_mbarrier_arrive_expect_bytes(shared.barrier($op_loaded, s), bytes + extra);
      if (bytes != 0) scan_bulk_load(shared.tile(s), input + extent.base, bytes, shared.barrier($op_loaded, s));
      if (extra != 0) load_extra(s, extent, shared.barrier($op_loaded, s));
    } else {
      scan_mbarrier_arrive(shared.barrier($op_loaded, s));
    }
  }
}

// Lookahead warp: for each of this block's tiles in turn, `advance(next,
// running, tile)` extends the running prefix (from `running`, over tiles
// [0, next)) up to the tile, and lane 0 hands it to the rescan squad.
template <class Shared, class Advance>
__device__ __forceinline__ void $op_pipelined_lookahead_warp(const Shared& shared, unsigned long long tiles, $op_t running, Advance advance) {
  unsigned long long next = 0;
  for (int k = 0;; ++k) {
    const int s = k % Shared::stages;
    scan_mbarrier_wait(shared.barrier($op_indexed, s), (unsigned)(k / Shared::stages) & 1u);
    const unsigned long long tile = shared.tile_index(s);
    if (tile >= tiles) return;
    advance(next, running, tile);
    if ((threadIdx.x & 31u) == 0) {
      shared.prefix(s) = running;
      scan_mbarrier_arrive(shared.barrier($op_prefixed, s));
    }
    __syncwarp();
  }
}

// Store (one lane): each rescanned tile back to global memory; a stage is
// freed once the store after it is issued and its own has been read, so
// one store stays in flight behind the rescans. (The few elements of a tail
// tile the bulk store leaves out were written by the rescan squad.)
template <class Shared>
__device__ __forceinline__ void $op_pipelined_store_warp(const Shared& shared, $op_t* output, unsigned long long n, unsigned long long tiles) {
  for (int k = 0;; ++k) {
    const int s = k % Shared::stages;
    const unsigned parity = (unsigned)(k / Shared::stages) & 1u;
    scan_mbarrier_wait(shared.barrier($op_loaded, s), parity);
    const unsigned long long tile = shared.tile_index(s);
    if (tile >= tiles) break;
    scan_mbarrier_wait(shared.barrier($op_rescanned, s), parity);
    const $op_pipelined_extent extent(tile, n);
    scan_bulk_store(output + extent.base, shared.tile(s), (unsigned)extent.bulk * (unsigned)sizeof($op_t));
    scan_bulk_wait_read_all_but_newest();
    if (k >= 1) scan_mbarrier_arrive(shared.barrier($op_freed, (k - 1) % Shared::stages));
  }
  scan_bulk_wait_all();
}
#endif

// Kernels: (input, output, status, aggregates, prefixes, launch state,
// seed, n, tiles), on a persistent grid with
// scan_pipelined_shared_bytes(sizeof(T)) bytes of dynamic shared memory; the
// input and output 16-byte aligned.
template <bool Inclusive>
__device__ __forceinline__ void $op_scan_pipelined(const $op_t* input, $op_t* output, void* status, $op_t* aggregates, $op_t* prefixes,
                                                   scan_launch_state* launch, const $op_t seed, unsigned long long n, unsigned long long tiles) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (scan_pipelined_supported(sizeof($op_t))) {
    constexpr int stages = $op_pipelined_stages;
    constexpr int squad = scan_pipelined_squad_threads;
    const $op_pipelined_shared shared{scan_dynamic_shared};
    const int warp = (int)(threadIdx.x >> 5);
    const unsigned lane = threadIdx.x & 31u;
    $op_pipelined_init_barriers(shared);
    scan_tile_status<$op_t> tile_status(status, aggregates, prefixes);
    if (warp < scan_pipelined_squad_warps) {
      // Reduce squad: thread totals, their warp-inclusive scans (for the
      // rescan squad), warp totals, and the tile's aggregate.
      for (int k = 0;; ++k) {
        const int s = k % stages;
        scan_mbarrier_wait(shared.barrier($op_loaded, s), (unsigned)(k / stages) & 1u);
        const unsigned long long tile = shared.tile_index(s);
        if (tile >= tiles) break;
        $op_pipelined_pad_tail(shared.tile(s), input, $op_pipelined_extent(tile, n));
        const $op_t lane_total = $op_warp_inclusive_scan($op_pipelined_thread_reduce(shared.tile(s)));
        shared.lane_totals(s)[threadIdx.x] = lane_total;
        if (lane == 31) shared.warp_totals(s)[warp] = lane_total;
        scan_named_barrier(1, squad);
        if (threadIdx.x == 0) {
          $op_t tile_total = shared.warp_totals(s)[0];
#pragma unroll
          for (int w = 1; w < scan_pipelined_squad_warps; ++w) tile_total = $op_combine(tile_total, shared.warp_totals(s)[w]);
          tile_status.publish(tile, (scan_shared_epoch << 2) | scan_tile_aggregate, tile_total);
        }
        scan_mbarrier_arrive(shared.barrier($op_reduced, s));
      }
    } else if (warp < 2 * scan_pipelined_squad_warps) {
      // Rescan squad: what precedes each thread's items, then the rescan.
      const int t = (int)threadIdx.x - squad;
      const int squad_warp = warp - scan_pipelined_squad_warps;
      for (int k = 0;; ++k) {
        const int s = k % stages;
        const unsigned parity = (unsigned)(k / stages) & 1u;
        scan_mbarrier_wait(shared.barrier($op_loaded, s), parity);
        const unsigned long long tile = shared.tile_index(s);
        if (tile >= tiles) break;
        scan_mbarrier_wait(shared.barrier($op_reduced, s), parity);
        // Earlier warps' totals, then the earlier lanes of this warp.
        $op_t before = $op_identity();
        for (int w = 0; w < squad_warp; ++w) before = $op_combine(before, shared.warp_totals(s)[w]);
        if (lane != 0) before = $op_combine(before, shared.lane_totals(s)[t - 1]);
        scan_mbarrier_wait(shared.barrier($op_prefixed, s), parity);
        const $op_pipelined_extent extent(tile, n);
        $op_pipelined_thread_rescan<Inclusive>(shared.tile(s), $op_combine(shared.prefix(s), before));
        $op_pipelined_store_tail(shared.tile(s), output, extent, t);
        scan_fence_shared_for_bulk();
        scan_mbarrier_arrive(shared.barrier($op_rescanned, s));
      }
    } else if (warp == 2 * scan_pipelined_squad_warps) {
      // Producer (one lane): tiles alone, no extra bytes.
      if (lane == 0)
        $op_pipelined_producer(
            shared, input, status, launch, n, tiles, [](const $op_pipelined_extent&) { return 0u; },
            [](int, const $op_pipelined_extent&, unsigned long long*) {});
    } else if (warp == 2 * scan_pipelined_squad_warps + 1) {
      // Lookahead: the running prefix through this block's tiles, in order.
      $op_pipelined_lookahead_warp(shared, tiles, seed, [&](unsigned long long& next, $op_t& running, unsigned long long tile) {
        $op_pipelined_lookahead(tile_status, scan_shared_epoch, next, running, tile);
      });
    } else if (lane == 0) {
      // Store (one lane).
      $op_pipelined_store_warp(shared, output, n, tiles);
    }
    return;
  }
#endif
  __trap();  // the host launches this kernel only where it is supported
}

extern "C" __global__ void __launch_bounds__(scan_pipelined_block_threads, 1)
$op_pipelined_inclusive(const $op_t* input, $op_t* output, void* status, $op_t* aggregates, $op_t* prefixes, scan_launch_state* launch,
                        const $op_t seed, unsigned long long n, unsigned long long tiles) {
  $op_scan_pipelined<true>(input, output, status, aggregates, prefixes, launch, seed, n, tiles);
}

extern "C" __global__ void __launch_bounds__(scan_pipelined_block_threads, 1)
$op_pipelined_exclusive(const $op_t* input, $op_t* output, void* status, $op_t* aggregates, $op_t* prefixes, scan_launch_state* launch,
                        const $op_t seed, unsigned long long n, unsigned long long tiles) {
  $op_scan_pipelined<false>(input, output, status, aggregates, prefixes, launch, seed, n, tiles);
}
