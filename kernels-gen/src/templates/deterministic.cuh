// ---- Deterministic plain scans: one chain of tiles per input ----
// A plain scan whose bits depend only on its input (Tuning::deterministic):
// never on timing, the number of SMs, the path or the device. Its order of
// combination:
//  * tiles of the pipelined pass (Shape<Op>::pipelined_items_per_tile
//    elements, counted from the input's start, identity padding in the
//    tail tile), each combined as the pipelined squads combine it: a
//    thread's items in order, a warp scan of the squad's threads, the
//    squad's warps in order (pipelined.cuh);
//  * tile t's prefix: the chain seed ⊕ total(0) ⊕ total(1) ⊕ … ⊕
//    total(t - 1), combined strictly left to right; the carry-out is the
//    prefix of tile `tiles`.
// A lookahead that walks the tiles' totals in order computes exactly that
// chain from any earlier link, so the one pass's lookahead (every block
// folding every total before its tiles, as the plain lookahead does) costs
// one combine a tile where the plain one spends a warp scan a round. A
// prefix depends only on the tiles before it, so the result at i depends
// only on the input up to i (batch invariance). Two implementations
// compute it: on sm_90 and newer the pipelined pass whose lookahead folds
// the chain (scan_pipelined with Deterministic), in one pass; everywhere,
// three passes over the same tiles (deterministic_reduce_tiles,
// deterministic_tile_prefixes, deterministic_scan_tiles). Float arithmetic
// is never contracted, so the same chain gives the same bits on every
// architecture.
namespace gpu_scan {

template <class Op>
struct deterministic_shape {
  // The tile: the pipelined reduce and rescan squads' threads and items.
  static constexpr int threads = Shape<Op>::pipelined_squad_threads;
  static constexpr int warps = Shape<Op>::pipelined_squad_warps;
  static constexpr int items = Shape<Op>::pipelined_items_per_thread;
  static constexpr int tile_items = Shape<Op>::pipelined_items_per_tile;
  static_assert(threads == 32 * warps && tile_items == threads * items, "a tile is its squad's items");
};

// Item i of squad thread t of the tile at `span`, read from global memory:
// the element the pipelined stage holds there (stage_runs::item: in
// reverse, mirrored about the whole tile), or the identity past the input.
template <class Op, class T = typename Op::T>
__device__ __forceinline__ T deterministic_item(const T* input, const tile_span& span, int t, int i) {
  const int k = t * deterministic_shape<Op>::items + i;
  const int e = mirrored_memory<Op>::value ? deterministic_shape<Op>::tile_items - 1 - k : k;
  return e < span.valid ? input[span.base + e] : Op::identity();
}

// Squad thread t's warp-inclusive total of its items (the pipelined reduce
// squad's lane total), `item(i)` reading its item i.
template <class Op, class Item, class T = typename Op::T>
__device__ __forceinline__ T deterministic_lane_total(Item item) {
  const T thread_total = thread_pair_reduce<Op, no_segments, deterministic_shape<Op>::items>(item, 0u, no_segments{});
  bool flag = false;
  return warp_pair_inclusive_scan<Op, no_segments>(thread_total, flag);
}

// Whether the block has the dynamic shared memory of a pipelined stage's
// tile (Shape<Op>::pipelined_tile_bytes; the host gives it where the device
// allows): then the tile passes stage their tile there, laid out as the
// pipelined pass lays it out, loading and storing it coalesced; otherwise
// each thread reads its items from global memory itself (the same values).
template <class Op>
__device__ __forceinline__ bool deterministic_staged() {
  unsigned bytes;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(bytes));
  return bytes >= (unsigned)Shape<Op>::pipelined_tile_bytes;
}

// The tile at `span` into the stage at `tile`, coalesced, the identity past
// the input (pipelined_pad_tail's padding); the block's threads call it.
template <class Op, class T = typename Op::T>
__device__ __forceinline__ void deterministic_stage_in(T* tile, const T* input, const tile_span& span) {
  for (int e = (int)threadIdx.x; e < deterministic_shape<Op>::tile_items; e += deterministic_shape<Op>::threads)
    *stage_runs<Op>::element(tile, e) = e < span.valid ? input[span.base + (unsigned long long)e] : Op::identity();
  __syncthreads();
}

// Squad thread t's lane total of the tile at `span`: from the stage where
// the block has one (deterministic_staged, the stage loaded), else from
// global memory.
template <class Op, class T = typename Op::T>
__device__ __forceinline__ T deterministic_tile_lane_total(bool staged, T* tile, const T* input, const tile_span& span, int t) {
  if (staged) return deterministic_lane_total<Op>([&](int i) -> T { return stage_runs<Op>::item_ref(tile, t, i); });
  return deterministic_lane_total<Op>([&](int i) -> T { return deterministic_item<Op>(input, span, t, i); });
}

// Pass 1: each block (one squad, one tile) writes its tile's total, the
// warps' totals combined in order, as the reduce squad publishes it.
template <class Op, class T = typename Op::T>
__device__ __forceinline__ void deterministic_reduce_tiles(const T* input, T* tile_totals, unsigned long long n) {
  typedef deterministic_shape<Op> S;
  __shared__ T warp_totals[S::warps];
  const tile_span span = span_of_tile<Op>(blockIdx.x, n, S::tile_items);
  T* const tile = (T*)scan_dynamic_shared;
  const bool staged = deterministic_staged<Op>();
  if (staged) deterministic_stage_in<Op>(tile, input, span);
  const T lane_total = deterministic_tile_lane_total<Op>(staged, tile, input, span, (int)threadIdx.x);
  if ((threadIdx.x & 31u) == 31u) warp_totals[threadIdx.x >> 5] = lane_total;
  __syncthreads();
  if (threadIdx.x == 0) {
    T total = warp_totals[0];
#pragma unroll
    for (int w = 1; w < S::warps; ++w) total = Op::combine(total, warp_totals[w]);
    tile_totals[blockIdx.x] = total;
  }
}

// Pass 2, one warp: tile_prefixes[t] for t = 0 … num_tiles, the chain
// of the seed and the totals of tiles 0 … t - 1; the last is the
// carry-out, also written to `carry_out` (unless null). The warp moves the
// totals a chunk at a time into shared memory (coalesced; the next chunk's
// loads are in flight while this one is linked), lane 0 links the chunk in
// place, one combine a total, its loads from shared memory independent of
// the chain, and the warp stores the prefixes coalesced.
template <class Op, class T = typename Op::T>
__device__ __forceinline__ void deterministic_tile_prefixes(const T* tile_totals, T* tile_prefixes, T* carry_out, unsigned long long num_tiles,
                                                            const T seed) {
  constexpr int per_lane = sizeof(T) <= 16 ? 8 : sizeof(T) <= 64 ? 2 : 1;  // at most 8 KiB of shared memory
  constexpr int chunk = 32 * per_lane;
  __shared__ T links[chunk];
  const unsigned lane = threadIdx.x & 31u;
  if (threadIdx.x >= 32u) return;
  T running = seed;
  if (lane == 0) tile_prefixes[0] = seed;
  T ahead[per_lane];
#pragma unroll
  for (int r = 0; r < per_lane; ++r) {
    const unsigned long long i = (unsigned long long)(r * 32) + lane;
    ahead[r] = i < num_tiles ? tile_totals[i] : Op::identity();
  }
  for (unsigned long long base = 0; base < num_tiles; base += chunk) {
#pragma unroll
    for (int r = 0; r < per_lane; ++r) links[r * 32 + lane] = ahead[r];
    __syncwarp();
#pragma unroll
    for (int r = 0; r < per_lane; ++r) {
      const unsigned long long i = base + chunk + (unsigned long long)(r * 32) + lane;
      ahead[r] = i < num_tiles ? tile_totals[i] : Op::identity();
    }
    const int count = num_tiles - base < (unsigned long long)chunk ? (int)(num_tiles - base) : chunk;
    if (lane == 0) {
#pragma unroll 16
      for (int k = 0; k < count; ++k) {
        running = Op::combine(running, links[k]);
        links[k] = running;
      }
    }
    __syncwarp();
#pragma unroll
    for (int r = 0; r < per_lane; ++r) {
      const int k = r * 32 + (int)lane;
      if (k < count) tile_prefixes[base + 1 + (unsigned long long)k] = links[k];
    }
    __syncwarp();
  }
  if (lane == 0 && carry_out != nullptr) *carry_out = running;
}

// A squad thread's item of a tile in global memory, as thread_pair_rescan
// reads and writes it: from `input`, to `output` (only below the input's
// end).
template <class Op, class T = typename Op::T>
struct deterministic_slot {
  const T* input;
  T* output;
  unsigned long long at;
  bool real;
  __device__ __forceinline__ operator T() const { return real ? input[at] : Op::identity(); }
  __device__ __forceinline__ void operator=(const T& value) const {
    if (real) output[at] = value;
  }
};

// Pass 3: each block (one squad, one tile) rescans its tile behind its
// prefix as the rescan squad does: a thread's partial before it is the
// warp's earlier lanes, behind the earlier warps' totals in order, behind
// the tile's prefix. `input` and `output` may be the same buffer: a thread
// reads all of its items before it writes them, and no other thread's.
template <class Op, int Mode, class T = typename Op::T>
__device__ __forceinline__ void deterministic_scan_tiles(const T* input, T* output, const T* tile_prefixes, unsigned long long n) {
  typedef deterministic_shape<Op> S;
  __shared__ T warp_totals[S::warps];
  __shared__ T lane_totals[S::threads];
  const unsigned long long tile = blockIdx.x;
  const int t = (int)threadIdx.x;
  const unsigned lane = threadIdx.x & 31u;
  const int warp = (int)(threadIdx.x >> 5);
  const tile_span span = span_of_tile<Op>(tile, n, S::tile_items);
  T* const stage = (T*)scan_dynamic_shared;
  const bool staged = deterministic_staged<Op>();
  if (staged) deterministic_stage_in<Op>(stage, input, span);
  const T lane_total = deterministic_tile_lane_total<Op>(staged, stage, input, span, t);
  lane_totals[t] = lane_total;
  if (lane == 31u) warp_totals[warp] = lane_total;
  __syncthreads();
  T before = lane != 0 ? lane_totals[t - 1] : Op::identity();
  if (warp > 0) {
    T warps_before = warp_totals[0];
    for (int w = 1; w < warp; ++w) warps_before = Op::combine(warps_before, warp_totals[w]);
    before = lane != 0 ? Op::combine(warps_before, before) : warps_before;
  }
  const T running = Op::combine(tile_prefixes[tile], before);
  if (staged) {
    // Rescanned in the stage, then stored from it coalesced.
    thread_pair_rescan<Op, Mode, no_segments, S::items>([&](int i) { return stage_runs<Op>::item_ref(stage, t, i); }, 0u, running,
                                                        no_segments{});
    __syncthreads();
    for (int e = t; e < span.valid; e += S::threads) output[span.base + (unsigned long long)e] = *stage_runs<Op>::element(stage, e);
    return;
  }
  thread_pair_rescan<Op, Mode, no_segments, S::items>(
      [&](int i) {
        const int k = t * S::items + i;
        const int e = mirrored_memory<Op>::value ? S::tile_items - 1 - k : k;
        return deterministic_slot<Op>{input, output, span.base + (unsigned long long)e, e < span.valid};
      },
      0u, running, no_segments{});
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// The pipelined pass's deterministic lookahead: extends `running` (the
// chain through tiles [0, next)) up to `target` as pipelined_lookahead
// does, a round of polls at a time, but links the ready run's totals one
// by one in tile order (every lane the same links; lane l's tiles are
// next + per_lane·l …), not by a warp scan of the lanes' shares.
template <class Op, class Status, class T = typename Op::T>
__device__ __forceinline__ void deterministic_lookahead(const Status& status, unsigned epoch, unsigned long long& next, T& running,
                                                       unsigned long long target) {
  constexpr int per_lane = lookahead_round<Op>::per_lane;
  while (next < target) {
    lookahead_round<Op> round(status, epoch, next, target);
    if (round.count == 0) continue;
    const int lanes = (int)((round.count + per_lane - 1) / per_lane);
    for (int l = 0; l < lanes; ++l) {
#pragma unroll
      for (int r = 0; r < per_lane; ++r) {
        const T value = scan_shfl_idx(round.values[r], l);
        if (per_lane * l + r < (int)round.count) running = Op::combine(running, value);
      }
    }
    next += round.count;
  }
}
#endif

}  // namespace gpu_scan
