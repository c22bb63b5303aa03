// ---- Deterministic plain scans: one combination tree per input ----
// A plain scan whose bits depend only on its input (Tuning::deterministic):
// never on timing, the number of SMs, the path or the device. Its tree:
//  * tiles of the pipelined pass (Shape<Op>::pipelined_items_per_tile
//    elements, counted from the input's start, identity padding in the
//    tail tile), each combined as the pipelined squads combine it: a
//    thread's items in order, a warp scan of the squad's threads, the
//    squad's warps in order (pipelined.cuh);
//  * the tiles' totals in groups of deterministic_shape<Op>::group_tiles
//    (32 lanes × lookahead_tiles_per_lane): a group is folded as lane l
//    folding tiles per_lane·l … per_lane·l + per_lane - 1 in order, then a
//    warp scan of the lanes (fixed_group_fold);
//  * tile t's prefix: the seed, every earlier group's total in order, then
//    (unless t opens its group) the fold of its group's tiles before it
//    (deterministic_prefix); the carry-out is the prefix of tile `tiles`.
// A prefix depends only on the tiles before it, so the result at i depends
// only on the input up to i (batch invariance). Two implementations
// compute the tree: on sm_90 and newer the pipelined pass with a lookahead
// that walks the groups (scan_pipelined with Deterministic), in one pass;
// everywhere, three passes over the same tiles
// (deterministic_reduce_tiles, deterministic_group_prefixes,
// deterministic_scan_tiles). Float arithmetic is never contracted, so the
// same tree gives the same bits on every architecture.
namespace gpu_scan {

template <class Op>
struct deterministic_shape {
  // Tiles a lane folds, and tiles a group holds.
  static constexpr int per_lane = Shape<Op>::lookahead_tiles_per_lane;
  static constexpr int group_tiles = 32 * per_lane;
  // The tile: the pipelined reduce and rescan squads' threads and items.
  static constexpr int threads = Shape<Op>::pipelined_squad_threads;
  static constexpr int warps = Shape<Op>::pipelined_squad_warps;
  static constexpr int items = Shape<Op>::pipelined_items_per_thread;
  static constexpr int tile_items = Shape<Op>::pipelined_items_per_tile;
  static_assert(threads == 32 * warps && tile_items == threads * items, "a tile is its squad's items");
};

// The fold of `count` (1 … group_tiles) consecutive tiles' totals by one
// warp, every lane calling it: values[r] is lane l's tile per_lane·l + r of
// them (read only below `count`). Every lane returns the fold.
template <class Op, class T = typename Op::T>
__device__ __forceinline__ T fixed_group_fold(const T (&values)[deterministic_shape<Op>::per_lane], int count) {
  constexpr int per_lane = deterministic_shape<Op>::per_lane;
  const int lane = (int)(threadIdx.x & 31u);
  T share = Op::identity();
#pragma unroll
  for (int r = 0; r < per_lane; ++r) {
    if (per_lane * lane + r < count) share = r == 0 ? values[0] : Op::combine(share, values[r]);
  }
  const T inclusive = warp_inclusive_scan<Op>(share);
  return scan_shfl_idx(inclusive, (count - 1) / per_lane);
}

// Tile `target`'s prefix (target == tiles: the carry-out) by one warp:
// `groups` holds the seed and the totals of the first `folded` groups, in
// order, and takes the groups before the target's; group_fold(first,
// count) is fixed_group_fold of `count` tiles from tile `first`.
template <class Op, class GroupFold, class T = typename Op::T>
__device__ __forceinline__ T deterministic_prefix(T& groups, unsigned long long& folded, unsigned long long target, GroupFold group_fold) {
  constexpr int group_tiles = deterministic_shape<Op>::group_tiles;
  const unsigned long long group = target / group_tiles;
  for (; folded < group; ++folded) groups = Op::combine(groups, group_fold(folded * group_tiles, group_tiles));
  const int before = (int)(target % group_tiles);
  return before == 0 ? groups : Op::combine(groups, group_fold(group * group_tiles, before));
}

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

// The fold of tile_totals[first … first + count), by one warp.
template <class Op, class T = typename Op::T>
__device__ __forceinline__ T deterministic_totals_fold(const T* tile_totals, unsigned long long first, int count) {
  constexpr int per_lane = deterministic_shape<Op>::per_lane;
  const int lane = (int)(threadIdx.x & 31u);
  T values[per_lane];
#pragma unroll
  for (int r = 0; r < per_lane; ++r) {
    const int k = per_lane * lane + r;
    values[r] = k < count ? tile_totals[first + k] : Op::identity();
  }
  return fixed_group_fold<Op>(values, count);
}

// Pass 2, one block (abi::DETERMINISTIC_GROUPS_THREADS threads):
// group_prefixes[g] for g = 0 … num_tiles / group_tiles, the seed and the
// totals of groups 0 … g - 1 in order. The warps fold the whole groups,
// four at a time each (their loads in flight together), into their
// prefixes' slots (group g's total at g + 1); warp 0 then chains them from
// the seed, 32 a round.
template <class Op, class T = typename Op::T>
__device__ __forceinline__ void deterministic_group_prefixes(const T* tile_totals, T* group_prefixes, unsigned long long num_tiles, const T seed) {
  constexpr unsigned long long group_tiles = deterministic_shape<Op>::group_tiles;
  constexpr int unroll = 4;
  const unsigned long long whole = num_tiles / group_tiles;
  const unsigned long long warps = blockDim.x >> 5;
  const unsigned long long warp = threadIdx.x >> 5;
  const unsigned lane = threadIdx.x & 31u;
  for (unsigned long long g0 = warp; g0 < whole; g0 += warps * unroll) {
    T totals[unroll];
#pragma unroll
    for (int u = 0; u < unroll; ++u) {
      const unsigned long long g = g0 + (unsigned long long)u * warps;
      totals[u] = g < whole ? deterministic_totals_fold<Op>(tile_totals, g * group_tiles, (int)group_tiles) : Op::identity();
    }
#pragma unroll
    for (int u = 0; u < unroll; ++u) {
      const unsigned long long g = g0 + (unsigned long long)u * warps;
      if (lane == 0 && g < whole) group_prefixes[g + 1] = totals[u];
    }
  }
  __syncthreads();  // every total written, for warp 0
  if (warp != 0) return;
  T running = seed;
  if (lane == 0) group_prefixes[0] = seed;
  for (unsigned long long base = 0; base < whole; base += 32) {
    const unsigned long long g = base + lane;
    const T total = g < whole ? group_prefixes[g + 1] : Op::identity();
    const int round = whole - base < 32 ? (int)(whole - base) : 32;
    // Every lane chains the round (the same values in the same order);
    // lane k keeps the prefix after group base + k.
    T mine = running;
    for (int k = 0; k < round; ++k) {
      running = Op::combine(running, scan_shfl_idx(total, k));
      if ((int)lane == k) mine = running;
    }
    if (g < whole) group_prefixes[g + 1] = mine;
  }
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
// the tile's prefix. The last tile's block writes the carry-out (unless
// null). `input` and `output` may be the same buffer: a thread reads all of
// its items before it writes them, and no other thread's.
template <class Op, int Mode, class T = typename Op::T>
__device__ __forceinline__ void deterministic_scan_tiles(const T* input, T* output, const T* tile_totals, const T* group_prefixes, T* carry_out,
                                                         unsigned long long n) {
  typedef deterministic_shape<Op> S;
  __shared__ T warp_totals[S::warps];
  __shared__ T lane_totals[S::threads];
  __shared__ T shared_prefix;
  const unsigned long long tiles = (n + S::tile_items - 1) / S::tile_items;
  const unsigned long long tile = blockIdx.x;
  const int t = (int)threadIdx.x;
  const unsigned lane = threadIdx.x & 31u;
  const int warp = (int)(threadIdx.x >> 5);
  if (warp == 0) {
    const auto group_fold = [&](unsigned long long first, int count) { return deterministic_totals_fold<Op>(tile_totals, first, count); };
    constexpr unsigned long long group_tiles = S::group_tiles;
    T groups = group_prefixes[tile / group_tiles];
    unsigned long long folded = tile / group_tiles;
    const T prefix = deterministic_prefix<Op>(groups, folded, tile, group_fold);
    if (lane == 0) shared_prefix = prefix;
    if (carry_out != nullptr && tile == tiles - 1) {
      T last_groups = group_prefixes[tiles / group_tiles];
      unsigned long long last_folded = tiles / group_tiles;
      const T carry = deterministic_prefix<Op>(last_groups, last_folded, tiles, group_fold);
      if (lane == 0) *carry_out = carry;
    }
  }
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
  const T running = Op::combine(shared_prefix, before);
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
// The pipelined pass's deterministic lookahead: tiles [first, first +
// count) polled until every one is ready, then folded (fixed_group_fold).
template <class Op, class Status, class T = typename Op::T>
__device__ __forceinline__ T polled_group_fold(const Status& status, unsigned epoch, unsigned long long first, int count) {
  constexpr int per_lane = deterministic_shape<Op>::per_lane;
  const int lane = (int)(threadIdx.x & 31u);
  T values[per_lane];
  unsigned pending = 0;  // bit r: tile r of this lane not read ready yet
#pragma unroll
  for (int r = 0; r < per_lane; ++r) {
    values[r] = Op::identity();
    if (per_lane * lane + r < count) pending |= 1u << r;
  }
  while (__any_sync(0xffffffffu, pending != 0u)) {
#pragma unroll
    for (int r = 0; r < per_lane; ++r) {
      if ((pending >> r) & 1u) {
        const unsigned word = status.poll(first + (unsigned long long)(per_lane * lane + r), values[r]);
        if ((word >> 2) == epoch && (word & 3u) != scan_tile_not_ready) pending &= ~(1u << r);
      }
    }
  }
  return fixed_group_fold<Op>(values, count);
}
#endif

}  // namespace gpu_scan
