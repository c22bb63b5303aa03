// ---- Global level: pipelined single pass (sm_90 and newer) ----
// A single pass like the one above, restructured so that no tile's wait
// for its predecessors stalls the loads behind it (after CCCL's
// warp-specialized "decoupled lookahead" scan). Blocks are persistent, one
// per SM (the stages fill its shared memory), and their warps take roles:
//   producer   loads a tile into each stage as it frees, with bulk copies
//              (TMA: one a tile, or one a run: stage_runs), taking its
//              index from the counter; with segments it
//              takes the next index as soon as the load is issued, so that
//              the index is known a round ahead and its round trip stays
//              off the stages' critical path;
//   reduce     (a squad of 4 warps) combines the tile as soon as it lands
//              and publishes its aggregate at once: it never waits for the
//              tile's predecessors;
//   lookahead  walks the published aggregates forward, from where it
//              stopped for this block's previous tile to this tile, keeping
//              the running combination: the tile's exclusive prefix; or,
//              for wide elements (Shape<Op>::pipelined_look_back), looks
//              back from the tile to the nearest published inclusive
//              prefix and, once the tile is reduced, publishes the tile's;
//   rescan     (4 warps) rescans the tile in shared memory behind its prefix;
//   store      writes the tile back with bulk copies and frees its stage;
//   heads      over segment offsets (Shape<Op>::pipelined_heads_warps
//              warps, taking the tiles in turn), finds the tile's heads
//              from them into the stage's head bits as the tile loads, so
//              that the reduce squad reads them from shared memory as it
//              reads bit flags that came with the tile (finding them itself
//              put two or three dependent loads on its path for every
//              tile); with other segment sources and without segments the
//              one heads warp stops at once.
// Up to Shape<Op>::pipelined_stages tiles are in flight per block, so loads keep
// going while a tile waits for its prefix. Tiles only publish aggregates
// (in order, no commutativity needed: lane order is sequence order); the
// seed starts every lookahead's running prefix.
//
// Forward progress does not depend on block scheduling. Tile indices go
// out in increasing order, to running blocks only, each of which holds at
// most one index without a stage (segmented scans claim one ahead; plain
// ones take an index only for a free stage). Take the smallest tile not
// yet loaded: its block waits for a stage whose tile has a smaller index,
// and so do all of that tile's predecessors, which are loaded, so their
// aggregates get published without waiting on anything else; that tile
// gets its prefix, is stored, and frees the stage.
//
// Shared memory per stage s: the tile (Shape<Op>::pipelined_tile_bytes),
// then after all tiles the bookkeeping: barriers, tile indices, the reduce
// squad's per-lane warp-inclusive totals and per-warp totals, and prefixes.
// Barriers per stage, each used once per round k / stages (phase parity):
//   loaded (producer + bulk bytes, and with offsets the tile's heads warp),
//   indexed (producer → lookahead and heads warps),
//   reduced (reduce squad → rescan), prefixed (lookahead → rescan),
//   rescanned (rescan squad → store), free (store → producer).
namespace gpu_scan {

// The pipelined tile shape and stage count are in Shape<Op> (shape.cuh).

// Shared-memory layout of one pipelined block: the stages' tiles, then
// with segments the tiles' head bits (16-byte aligned, for bulk loads),
// then per stage the barriers and tile index, with segments the reduce
// threads' head masks, then the reduce squad's lane and warp totals and
// the tile's prefix, with segments the flags of the lanes' and warps'
// pairs. Every size comes from the layout (kernels_gen::layout).
template <class Op, class Seg>
struct pipelined_shared {
  typedef typename Op::T T;
  unsigned char* base;
  static constexpr bool segmented = Seg::segmented;
  static constexpr int configured_stages = segmented ? Shape<Op>::pipelined_segmented_stages : Shape<Op>::pipelined_stages;
  static constexpr unsigned shared_bytes = segmented ? Shape<Op>::pipelined_segmented_shared_bytes : Shape<Op>::pipelined_shared_bytes;
  static constexpr bool supported = shared_bytes != 0;
  static constexpr int stages = configured_stages > 1 ? configured_stages : 1;
  static constexpr int squad = Shape<Op>::pipelined_squad_threads;
  static constexpr int warps = Shape<Op>::pipelined_squad_warps;
  static constexpr unsigned tile_bytes = Shape<Op>::pipelined_tile_bytes;
  static constexpr unsigned bits_bytes = segmented ? Shape<Op>::pipelined_flag_bits_bytes : 0;
  static constexpr unsigned bits_at = stages * tile_bytes;
  static constexpr unsigned barriers_at = bits_at + stages * bits_bytes;
  static constexpr unsigned indices_at = barriers_at + stages * 6 * 8;
  static constexpr unsigned heads_at = indices_at + stages * 8;
  static constexpr unsigned values_at = scan_round_up(heads_at + (segmented ? stages * squad * 8 : 0), 16);
  static constexpr unsigned flags_at = values_at + stages * (squad + warps + 1) * sizeof(T);
  static constexpr unsigned end = flags_at + (segmented ? stages * (squad + warps) : 0);
  __device__ __forceinline__ T* tile(int s) const { return (T*)(base + s * tile_bytes); }
  __device__ __forceinline__ unsigned* head_bits(int s) const { return (unsigned*)(base + bits_at + s * bits_bytes); }
  __device__ __forceinline__ unsigned long long* barrier(int which, int s) const { return (unsigned long long*)(base + barriers_at) + which * stages + s; }
  __device__ __forceinline__ unsigned long long& tile_index(int s) const { return ((unsigned long long*)(base + indices_at))[s]; }
  __device__ __forceinline__ unsigned long long* heads(int s) const { return (unsigned long long*)(base + heads_at) + s * squad; }
  __device__ __forceinline__ T* lane_totals(int s) const { return (T*)(base + values_at) + s * squad; }
  __device__ __forceinline__ T* warp_totals(int s) const { return (T*)(base + values_at) + stages * squad + s * warps; }
  __device__ __forceinline__ T& prefix(int s) const { return ((T*)(base + values_at) + stages * (squad + warps))[s]; }
  __device__ __forceinline__ bool* lane_flags(int s) const { return (bool*)(base + flags_at) + s * squad; }
  __device__ __forceinline__ bool* warp_flags(int s) const { return (bool*)(base + flags_at) + stages * squad + s * warps; }
  static_assert(!supported || end <= shared_bytes, "the pipelined layout fits the shared memory the host provides");
};
enum { stage_loaded = 0, stage_indexed = 1, stage_reduced = 2, stage_prefixed = 3, stage_rescanned = 4, stage_freed = 5 };

// Whether heads warps find the tiles' heads (segments given by offsets):
// the 32 lanes of a tile's heads warp then also arrive on its stage's
// `loaded` barrier.
template <class Seg>
constexpr bool heads_warp_finds_heads() {
  if constexpr (Seg::segmented) {
    return Seg::format == scan_segment_offsets;
  } else {
    return false;
  }
}

// How the squads move their items and lane totals between a stage and
// registers. Elements of a multiple of 128 bytes all start in bank 0, so a
// warp's threads reading the same 16-byte chunk of their own items at once
// hit the same bank group: 8-way conflicts on every 16-byte load (for
// 128-byte elements 6 times the ideal shared-memory wavefronts, the
// shared-memory pipe 75% busy and DRAM 32%: `ncu` on an H100,
// BENCHMARKS.md). Such elements move in 16-byte chunks in rotated order
// instead: thread t starts at chunk t mod 8, so at every step a quarter
// warp's 8 threads touch 8 distinct bank groups, and a barrel shifter of
// selects (3 stages) puts the chunks in order in registers. (Where the
// squads' runs of items are padded apart, stage_runs, items need neither.)
template <class T>
struct rotated_chunks {
  static constexpr bool value = sizeof(T) % 128 == 0;
  static constexpr int chunks = value ? (int)(sizeof(T) / 16) : 8;  // 8: unused
  // Chunk c + r, wrapped (r < 8 ≤ chunks).
  static __device__ __forceinline__ int wrap(int c) { return c < chunks ? c : c - chunks; }
  // Slot k becomes slot k - 2^b (right) or k + 2^b (left) where bit b of r
  // is set: three stages move every slot by r.
  template <bool Right>
  static __device__ __forceinline__ void rotate(uint4 (&x)[chunks], unsigned r) {
#pragma unroll
    for (int b = 0; b < 3; ++b) {
      const bool shift = ((r >> b) & 1u) != 0;
      const int d = 1 << b;
      uint4 y[chunks];
#pragma unroll
      for (int k = 0; k < chunks; ++k) y[k] = shift ? x[Right ? (k - d + chunks) % chunks : (k + d) % chunks] : x[k];
#pragma unroll
      for (int k = 0; k < chunks; ++k) x[k] = y[k];
    }
  }
  static __device__ __forceinline__ T load(const T* at, unsigned r) {
    const uint4* from = reinterpret_cast<const uint4*>(at);
    uint4 x[chunks];
#pragma unroll
    for (int j = 0; j < chunks; ++j) x[j] = from[wrap(j + (int)r)];  // slot j: chunk j + r
    rotate<true>(x, r);
    T value;
    memcpy(&value, x, sizeof(T));
    return value;
  }
  static __device__ __forceinline__ void store(T* at, const T& value, unsigned r) {
    uint4 x[chunks];
    memcpy(x, &value, sizeof(T));
    rotate<false>(x, r);  // slot j: chunk j + r
    uint4* to = reinterpret_cast<uint4*>(at);
#pragma unroll
    for (int j = 0; j < chunks; ++j) to[wrap(j + (int)r)] = x[j];
  }
};

// A squad thread's reference to an element of a stage (an item or a lane
// total): reads and writes it whole, or in rotated chunks where Rotate
// (rotated_chunks says which elements; items in padded runs need not:
// stage_runs) starting at chunk `r` (the thread's index mod 8).
template <class T, bool Rotate = rotated_chunks<T>::value>
struct stage_element {
  T* at;
  unsigned r;
  __device__ __forceinline__ operator T() const {
    if constexpr (Rotate) {
      return rotated_chunks<T>::load(at, r);
    } else {
      return *at;
    }
  }
  __device__ __forceinline__ void operator=(const T& value) const {
    if constexpr (Rotate) {
      rotated_chunks<T>::store(at, value, r);
    } else {
      *at = value;
    }
  }
};

// Where a tile's elements lie in a stage: in the squad threads' runs of
// Shape<Op>::pipelined_items_per_thread consecutive elements, one run every
// Shape<Op>::pipelined_run_stride bytes. Where the layout pads them apart
// by 16 bytes (kernels_gen::pipelined_run_padding: 256-byte elements),
// thread t's run starts t chunks further along the banks, so a quarter
// warp's threads reading the same chunk of their own items hit 8 distinct
// bank groups, and every thread reads its items in order, without the
// rotation. Other runs are contiguous, the tile one array. The bulk copies
// move a run each where runs are padded, else the whole tile in one.
template <class Op>
struct stage_runs {
  typedef typename Op::T T;
  static constexpr int items = Shape<Op>::pipelined_items_per_thread;
  static constexpr int runs = Shape<Op>::pipelined_squad_threads;
  static constexpr unsigned stride = Shape<Op>::pipelined_run_stride;
  static constexpr bool padded = stride != items * sizeof(T);
  static_assert(stride >= items * sizeof(T) && (!padded || stride % 16 == 0), "runs hold their items; padded ones start at 16-byte boundaries");
  static_assert(runs * stride <= Shape<Op>::pipelined_tile_bytes, "the runs fit the stage's tile");
  // The first element of run `run`.
  static __device__ __forceinline__ T* run(T* tile, int run) { return (T*)((unsigned char*)tile + run * stride); }
  // Stage element e: the tile's element e in memory order.
  static __device__ __forceinline__ T* element(T* tile, int e) {
    if constexpr (padded) {
      return run(tile, e / items) + e % items;
    } else {
      return tile + e;
    }
  }
  // Squad thread t's item i, in scan order. In reverse (mirrored_memory)
  // scan tile t is the input's tile tiles-1-t and its item k the stage's
  // element items_per_tile-1-k, mirrored about the whole stage, not the
  // valid elements: a tail tile's identity padding (stage elements valid
  // and up) then comes first in scan order, in front of the real items,
  // where it changes nothing, and the squads index every tile alike. So
  // thread t scans run runs-1-t, from its last element to its first.
  static __device__ __forceinline__ T* item(T* tile, int t, int i) {
    if constexpr (padded) {
      return mirrored_memory<Op>::value ? run(tile, runs - 1 - t) + (items - 1 - i) : run(tile, t) + i;
    } else {
      const int k = t * items + i;
      return tile + (mirrored_memory<Op>::value ? runs * items - 1 - k : k);
    }
  }
  // A reference to squad thread t's item i (stage_element: rotated where
  // the element asks for it and the runs are not padded).
  static __device__ __forceinline__ stage_element<T, rotated_chunks<T>::value && !padded> item_ref(T* tile, int t, int i) {
    return {item(tile, t, i), (unsigned)t & 7u};
  }
  // Where runs are padded, the producer's and store warp's 32 lanes issue
  // a tile's bulk copies, one a run; else lane 0 alone, one copy a tile.
  static constexpr bool warp_copies = padded;
  // Padded runs' bulk copies of a tile's first `bulk` elements: lane `lane`
  // of the warp calls copy(run's stage address, its first element, bytes)
  // for runs lane, lane + 32, … that hold any of them.
  template <class Copy>
  static __device__ __forceinline__ void each_run_copy(T* tile, int bulk, unsigned lane, Copy copy) {
    static_assert(padded, "unpadded tiles move in one copy");
    for (int c = (int)lane; c < runs; c += 32) {
      const int first = c * items;
      const int count = bulk - first < items ? bulk - first : items;
      if (count > 0) copy(run(tile, c), first, (unsigned)count * (unsigned)sizeof(T));
    }
  }
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// Where scan tile `tile` starts in memory, how many elements it has, and how
// many of them travel by bulk copy (the rest of a tail tile is read and
// written directly). In reverse (mirrored_memory) scan tile t is the input's
// tile tiles-1-t, and its item k the stage element stage_runs::item says.
template <class Op>
struct pipelined_extent {
  typedef typename Op::T T;
  unsigned long long base;
  int valid;
  int bulk;
  __device__ __forceinline__ pipelined_extent(unsigned long long tile, unsigned long long n) {
    const tile_span span = span_of_tile<Op>(tile, n, Shape<Op>::pipelined_items_per_tile);
    base = span.base;
    valid = span.valid;
    bulk = valid / Shape<Op>::pipelined_bulk_granule * Shape<Op>::pipelined_bulk_granule;
  }
};

// Reduce squad, before combining a tile: a tail tile's elements the bulk
// copy left out come from global memory and the rest of the stage is padded
// with the identity, so that it is combined by the same code as whole tiles
// (a separate element-by-element path for it measured about 8 µs slower, on
// the critical path of every scan). Whole tiles pass straight through.
template <class Op, class T = typename Op::T>
__device__ __forceinline__ void pipelined_pad_tail(T* tile, const T* input, const pipelined_extent<Op>& extent) {
  if (extent.valid == Shape<Op>::pipelined_items_per_tile) return;
  for (int e = extent.bulk + (int)threadIdx.x; e < Shape<Op>::pipelined_items_per_tile; e += Shape<Op>::pipelined_squad_threads)
    *stage_runs<Op>::element(tile, e) = e < extent.valid ? input[extent.base + e] : Op::identity();
  scan_named_barrier(1, Shape<Op>::pipelined_squad_threads);
}

// Rescan squad thread t, after rescanning: the few elements of a tail tile
// the bulk store leaves out (fewer than 16 bytes' worth) that lie among its
// items (stage elements [lo, lo + items), mirrored in reverse), written
// directly.
template <class Op, class T = typename Op::T>
__device__ __forceinline__ void pipelined_store_tail(T* tile, T* output, const pipelined_extent<Op>& extent, int t) {
  if (extent.bulk == extent.valid) return;
  constexpr int items = Shape<Op>::pipelined_items_per_thread;
  const int lo = mirrored_memory<Op>::value ? Shape<Op>::pipelined_items_per_tile - (t + 1) * items : t * items;
  const int end = lo + items < extent.valid ? lo + items : extent.valid;
  for (int e = lo > extent.bulk ? lo : extent.bulk; e < end; ++e) output[extent.base + e] = *stage_runs<Op>::element(tile, e);
}

// Tiles each lookahead lane polls per round (measured on the H200: 4 per
// lane ran the u32 sum at 94% of copy speed, 2 at 81%, 1 at 62%). Elements
// over 88 bytes poll 2: four values of theirs and the chunks of a poll
// made ptxas spill at the pipelined kernels' register cap (168: over 96
// bytes on sm_90, 92 and 96 on sm_100 and sm_120). Elements past
// kernels_gen::PIPELINED_FULL_SQUAD_MAX (156) bytes poll 1.
template <class T>
constexpr int lookahead_tiles_per_lane() { return sizeof(T) > 156 ? 1 : sizeof(T) > 88 ? 2 : 4; }

// One round of a lookahead warp's polling (both pipelined kernels): lane l
// reads the status and value of its per_lane consecutive tiles next +
// per_lane·l … below `target` (four: next + 4l … next + 4l + 3); the warp then
// finds the run of ready tiles from `next` on, which ends in the first lane
// with fewer than all of its tiles ready. A tile published after the poll
// waits for the next round.
template <class Op>
struct lookahead_round {
  typedef typename Op::T T;
  static constexpr int per_lane = lookahead_tiles_per_lane<T>();
  T values[per_lane];
  unsigned states[per_lane];
  unsigned long long first;  // this lane's first tile
  unsigned count;            // the warp's run of ready tiles
  int used;                  // how many of the run are this lane's
  template <class Status>
  __device__ __forceinline__ lookahead_round(const Status& status, unsigned epoch, unsigned long long next, unsigned long long target) {
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

// Lookahead warp: extends `running` (the seed and the pairs of tiles
// [0, next)) up to `target`, a round at a time: each lane combines its
// share of the ready run in order, and one warp scan combines the lanes in
// lane order (sequence order). With segments, a tile that published a
// prefix (it holds a head) replaces what came before it. The warp spins
// without sleeping, since every tile of its block waits on it (a sleep
// after an empty poll measured no different).
template <class Op, class Seg, class Status, class T = typename Op::T>
__device__ __forceinline__ void pipelined_lookahead(const Status& status, unsigned epoch, unsigned long long& next, T& running, unsigned long long target) {
  while (next < target) {
    lookahead_round<Op> round(status, epoch, next, target);
    if (round.count == 0) continue;
    T share = Op::identity();
    bool share_flag = false;
#pragma unroll
    for (int r = 0; r < lookahead_round<Op>::per_lane; ++r) {
      if (r < round.used) {
        const bool head = Seg::segmented && round.states[r] == scan_tile_prefix;
        share = head || r == 0 ? round.values[r] : Op::combine(share, round.values[r]);
        share_flag = share_flag || head;
      }
    }
    const T total = scan_shfl_idx(warp_pair_inclusive_scan<Op, Seg>(share, share_flag), 31);
    const bool total_flag = Seg::segmented && __shfl_sync(0xffffffffu, (int)share_flag, 31) != 0;
    running = total_flag ? total : Op::combine(running, total);
    next += round.count;
  }
}

// The roles both pipelined kernels (plain and segmented) share, over a
// shared-memory layout `Shared` with tile(s), barrier(which, s),
// tile_index(s) and prefix(s).

// Thread 0 sets up every stage's barriers; then the roles part.
// `loaded_arrivals`: the producer's, and the heads warp's lanes' where it
// finds heads.
template <class Op, class Shared, class T = typename Op::T>
__device__ __forceinline__ void pipelined_init_barriers(const Shared& shared, unsigned loaded_arrivals = 1) {
  if (threadIdx.x == 0) {
    for (int s = 0; s < Shared::stages; ++s) {
      scan_mbarrier_init(shared.barrier(stage_loaded, s), loaded_arrivals);
      scan_mbarrier_init(shared.barrier(stage_indexed, s), 1);
      scan_mbarrier_init(shared.barrier(stage_reduced, s), Shape<Op>::pipelined_squad_threads);
      scan_mbarrier_init(shared.barrier(stage_prefixed, s), 1);
      scan_mbarrier_init(shared.barrier(stage_rescanned, s), Shape<Op>::pipelined_squad_threads);
      scan_mbarrier_init(shared.barrier(stage_freed, s), 1);
    }
    scan_fence_barrier_init();
  }
  __syncthreads();  // the only block-wide barrier
}

// Producer (one lane, or a warp where stage_runs::warp_copies): a free
// stage, a tile index, the tile's load. Lane 0 takes the indices and keeps
// the barriers; with warp_copies all lanes share the tile's bulk copies,
// one a run. With ClaimAhead (segmented scans) the index is taken a round
// ahead, right after the previous tile's load, so that its round trip
// overlaps the wait for the free stage: bit-flag segmented sums gained
// 0.7% at 2^28 on the H200. Plain scans take it once the stage is free:
// their prefixes chain through every tile, and tiles claimed ahead load
// further out of order, which cost affine maps 1.6% and the 16-byte
// statistics about 1% there (BENCHMARKS.md). A tile may bring
// `extra_bytes(extent)` more bytes, which lane 0's `load_extra(s, extent,
// barrier)` bulk-loads on the same barrier. The first index brings the
// launch's epoch, which the other roles read from scan_shared_epoch once a
// barrier of the first tile has passed. Every block takes one index past
// the last tile before it stops, so a launch takes tiles + blocks indices
// (launch.cuh); the last one's taker, whose block needs no more tiles,
// also sweeps. The end mark goes to EndMarks consecutive stages, so that
// each of that many heads warps, which take the stages in turn, meets one
// (no other role waits past the first).
template <bool ClaimAhead, int EndMarks, class Op, class Shared, class ExtraBytes, class LoadExtra, class T = typename Op::T>
__device__ __forceinline__ void pipelined_producer(const Shared& shared, const T* input, void* status, scan_launch_state* launch,
                                                      unsigned long long n, unsigned long long tiles, ExtraBytes extra_bytes,
                                                      LoadExtra load_extra) {
  constexpr bool warp = stage_runs<Op>::warp_copies;
  const unsigned lane = warp ? threadIdx.x & 31u : 0u;
  const bool leader = lane == 0;
  const unsigned long long last_index = tiles + gridDim.x - 1;
  const auto take = [&](int k) -> unsigned long long {
    unsigned long long index = 0;
    if (leader) {
      const scan_ticket ticket = scan_launch_take(launch, last_index);
      if (k == 0) scan_shared_epoch = ticket.epoch;
      if (ticket.index == last_index) scan_launch_sweep(status, Shape<Op>::tile_status_stride, launch, ticket.epoch, 0, 1, tiles);
      index = ticket.index < tiles ? ticket.index : tiles;
    }
    if constexpr (warp) index = __shfl_sync(0xffffffffu, index, 0);
    return index;
  };
  // Round k's stage is free once round k - stages' tile was stored.
  const auto wait_free = [&](int k) {
    if (k >= Shared::stages) scan_mbarrier_wait(shared.barrier(stage_freed, k % Shared::stages), (unsigned)(k / Shared::stages - 1) & 1u);
  };
  unsigned long long tile = ClaimAhead ? take(0) : 0ull;
  for (int k = 0;; ++k) {
    const int s = k % Shared::stages;
    wait_free(k);
    if (!ClaimAhead) tile = take(k);
    if (leader) {
      shared.tile_index(s) = tile;
      scan_mbarrier_arrive(shared.barrier(stage_indexed, s));
    }
    if (tile >= tiles) {
      if (!leader) return;
      scan_mbarrier_arrive(shared.barrier(stage_loaded, s));  // the others read the end mark and stop
      // The next stages' earlier tiles are stored before the last one is,
      // so their stages free (the last stored tile's may never do: EndMarks
      // is below the stages, checked by the kernel).
      for (int j = k + 1; j < k + EndMarks; ++j) {
        const int e = j % Shared::stages;
        wait_free(j);
        shared.tile_index(e) = tiles;
        scan_mbarrier_arrive(shared.barrier(stage_indexed, e));
        scan_mbarrier_arrive(shared.barrier(stage_loaded, e));
      }
      return;
    }
    const pipelined_extent<Op> extent(tile, n);
    const unsigned bytes = (unsigned)extent.bulk * (unsigned)sizeof(T);
    const unsigned extra = extra_bytes(extent);
    if (bytes + extra != 0) {
      if (leader) scan_mbarrier_arrive_expect_bytes(shared.barrier(stage_loaded, s), bytes + extra);
      if constexpr (warp) {
        __syncwarp();
        stage_runs<Op>::each_run_copy(shared.tile(s), extent.bulk, lane, [&](T* to, int first, unsigned run_bytes) {
          scan_bulk_load(to, input + extent.base + first, run_bytes, shared.barrier(stage_loaded, s));
        });
      } else if (bytes != 0) {
        scan_bulk_load(shared.tile(s), input + extent.base, bytes, shared.barrier(stage_loaded, s));
      }
      if (extra != 0 && leader) load_extra(s, extent, shared.barrier(stage_loaded, s));
    } else if (leader) {
      scan_mbarrier_arrive(shared.barrier(stage_loaded, s));
    }
    if (ClaimAhead) tile = take(k + 1);
  }
}

// Lookahead warp: for each of this block's tiles in turn, `advance(next,
// running, tile)` extends the running prefix (from `running`, over tiles
// [0, next)) up to the tile, and lane 0 hands it to the rescan squad. The
// block of the last tile then extends it over that tile too (its reduce
// squad publishes it without waiting on anyone) for the carry-out, unless
// `carry_out` is null.
template <class Op, class Shared, class Advance, class T = typename Op::T>
__device__ __forceinline__ void pipelined_lookahead_warp(const Shared& shared, unsigned long long tiles, T running, T* carry_out, Advance advance) {
  unsigned long long next = 0;
  // One call of `advance` per round (a second one, inlined, made ptxas
  // spill the wide elements' kernels): a round extends the prefix to the
  // next tile, or, after the last tile, over it for the carry-out.
  bool owe_carry = false;
  for (int k = 0;; ++k) {
    const int s = k % Shared::stages;
    unsigned long long target = tiles;
    if (!owe_carry) {
      scan_mbarrier_wait(shared.barrier(stage_indexed, s), (unsigned)(k / Shared::stages) & 1u);
      target = shared.tile_index(s);
      if (target >= tiles) return;
    }
    advance(next, running, target);
    if (owe_carry) {
      if ((threadIdx.x & 31u) == 0) *carry_out = running;
      return;
    }
    if ((threadIdx.x & 31u) == 0) {
      shared.prefix(s) = running;
      scan_mbarrier_arrive(shared.barrier(stage_prefixed, s));
    }
    __syncwarp();
    owe_carry = target == tiles - 1 && carry_out != nullptr;
  }
}

// The pair of a reduced tile in stage s (its total, and whether it holds a
// head): the reduce squad's warp pairs in shared memory, combined in order.
template <class Op, class Seg, class Shared, class T = typename Op::T>
__device__ __forceinline__ T stage_tile_pair(const Shared& shared, int s, bool& flag) {
  T total = shared.warp_totals(s)[0];
  flag = Seg::segmented && shared.warp_flags(s)[0];
#pragma unroll
  for (int w = 1; w < Shape<Op>::pipelined_squad_warps; ++w)
    pair_accumulate<Op, Seg>(total, flag, shared.warp_totals(s)[w], Seg::segmented && shared.warp_flags(s)[w]);
  return total;
}

// Lookahead warp of wide elements (Shape<Op>::pipelined_look_back): for
// each of this block's tiles in turn, a decoupled look-back (single_pass.cuh)
// from the tile to the nearest tile that published an inclusive prefix,
// over the aggregates in between, while the tile loads and reduces; then,
// the tile reduced, its inclusive prefix published for the tiles behind
// it, and its exclusive one handed to the rescan squad. (The forward walk
// combines every tile's aggregate in every block: work that grows with the
// number of blocks and, for wide elements, outlasted the tiles' loads.)
// Tile 0's reduce squad publishes its inclusive prefix itself (the seed
// then its total), as does a tile holding a segment head (its last
// segment's partial); a tile's pair comes from stage_tile_pair, as reduce
// thread 0's did. The block of the last tile writes its inclusive prefix
// to `carry_out` unless null.
template <class Op, class Seg, class Shared, class Status, class T = typename Op::T>
__device__ __forceinline__ void pipelined_look_back_warp(const Shared& shared, Status status, unsigned long long tiles, const T seed, T* carry_out) {
  const unsigned lane = threadIdx.x & 31u;
  for (int k = 0;; ++k) {
    const int s = k % Shared::stages;
    const unsigned parity = (unsigned)(k / Shared::stages) & 1u;
    scan_mbarrier_wait(shared.barrier(stage_indexed, s), parity);
    const unsigned long long tile = shared.tile_index(s);
    if (tile >= tiles) return;
    const unsigned epoch = scan_shared_epoch;  // the producer set it before the first index
    // Tile 0 needs nothing before it but the seed (with segments, its first
    // element is a head).
    const T before = tile == 0 ? (Seg::segmented ? Op::identity() : seed) : decoupled_look_back<Op>(tile, status, epoch);
    // Waiting here, before the rescan squad may run, also keeps the stage
    // (its warp pairs) from being reused while they are read.
    scan_mbarrier_wait(shared.barrier(stage_reduced, s), parity);
    bool flag;
    const T total = stage_tile_pair<Op, Seg>(shared, s, flag);
    const bool published = flag || (!Seg::segmented && tile == 0);
    const T inclusive = flag ? total : Op::combine(before, total);
    if (lane == 0) {
      if (!published) status.publish(tile, (epoch << 2) | scan_tile_prefix, inclusive);
      shared.prefix(s) = before;
      scan_mbarrier_arrive(shared.barrier(stage_prefixed, s));
      if (carry_out != nullptr && tile == tiles - 1) *carry_out = inclusive;
    }
    __syncwarp();
  }
}

// Whether the store warp frees each stage as soon as its tile's store has
// read it (FreeAtOnce in pipelined_store_warp) rather than when the next
// tile's store is issued. Holding a stage through the next tile's rescan
// costs up to a third of the pipeline where there are 3 stages or fewer
// (every element over 48 bytes: kernels_gen::pipelined_items_per_thread):
// freeing at once took 72-byte affine maps from 76% to 93% of copy speed
// at 2^26 and 256-byte ones from 41% to 44% (H100, the same call, 3
// stages of about 48 KiB then, BENCHMARKS.md). Over segment
// offsets it took power-law lengths from 82% to 87% at 2^28. With 4 or 6
// stages freeing at once moved 64- and 96-byte maps, `u32` sums, affine
// maps and statistics by about a point either way, so those keep one
// store in flight.
template <class Seg>
constexpr bool pipelined_frees_at_once(int stages) {
  return stages <= 3 || heads_warp_finds_heads<Seg>();
}

// Store (one lane, or a warp where stage_runs::warp_copies): each
// rescanned tile back to global memory, with warp_copies the lanes sharing
// its bulk copies, one a run. A stage is freed once its store has read it
// (FreeAtOnce), or once the store after it is issued and its own has been
// read, so that one store stays in flight behind the rescans. Bulk groups
// are each lane's own: every lane closes one group a tile and waits for
// its own, and lane 0 frees the stage after all lanes. (The few elements
// of a tail tile the bulk copies leave out were written by the rescan
// squad.)
template <bool FreeAtOnce, class Op, class Shared, class T = typename Op::T>
__device__ __forceinline__ void pipelined_store_warp(const Shared& shared, T* output, unsigned long long n, unsigned long long tiles) {
  constexpr bool warp = stage_runs<Op>::warp_copies;
  const unsigned lane = warp ? threadIdx.x & 31u : 0u;
  for (int k = 0;; ++k) {
    const int s = k % Shared::stages;
    const unsigned parity = (unsigned)(k / Shared::stages) & 1u;
    scan_mbarrier_wait(shared.barrier(stage_loaded, s), parity);
    const unsigned long long tile = shared.tile_index(s);
    if (tile >= tiles) break;
    scan_mbarrier_wait(shared.barrier(stage_rescanned, s), parity);
    const pipelined_extent<Op> extent(tile, n);
    if constexpr (warp) {
      stage_runs<Op>::each_run_copy(shared.tile(s), extent.bulk, lane,
                                    [&](T* from, int first, unsigned run_bytes) { scan_bulk_store(output + extent.base + first, from, run_bytes); });
    } else {
      scan_bulk_store(output + extent.base, shared.tile(s), (unsigned)extent.bulk * (unsigned)sizeof(T));
    }
    scan_bulk_commit();
    if constexpr (FreeAtOnce) {
      scan_bulk_wait_read_all();
      if constexpr (warp) __syncwarp();
      if (lane == 0) scan_mbarrier_arrive(shared.barrier(stage_freed, s));
    } else {
      scan_bulk_wait_read_all_but_newest();
      if constexpr (warp) __syncwarp();
      if (k >= 1 && lane == 0) scan_mbarrier_arrive(shared.barrier(stage_freed, (k - 1) % Shared::stages));
    }
  }
  scan_bulk_wait_all();
}
#endif

// The pipelined kernel: runs on a persistent grid with
// pipelined_shared<Op, Seg>::shared_bytes bytes of dynamic shared memory;
// input, output (and bit flags) 16-byte aligned. With segments, head flags
// given as bits come with a whole tile, in the producer's bulk loads;
// otherwise (bytes, or the tail tile) the reduce squad reads each thread's
// flags from global memory while the tile loads (rows of a fixed length
// compute them; with keys, the squad compares the tile's keys together
// into the stage's head bits), and keeps them as a 64-bit mask for the
// rescan. A tile holding a head publishes its last
// segment's partial as a prefix, which the lookahead takes in place of
// everything before it.
template <class Op, int Mode, class Seg, class T = typename Op::T>
__device__ __forceinline__ void scan_pipelined(const T* input, const Seg& seg, T* output, void* status, T* aggregates, T* prefixes,
                                               scan_launch_state* launch, T* carry_out, const T seed, unsigned long long n, unsigned long long tiles) {
  // Reverse scans take the pipelined pass without segments only: mirrored,
  // a tail tile's padding would come before its first head.
  static_assert(!(mirrored_memory<Op>::value && Seg::segmented), "no segmented reverse pipelined pass");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  typedef pipelined_shared<Op, Seg> Shared;
  if constexpr (Shared::supported) {
    constexpr int stages = Shared::stages;
    constexpr int squad = Shape<Op>::pipelined_squad_threads;
    constexpr int items = Shape<Op>::pipelined_items_per_thread;
    const Shared shared{scan_dynamic_shared};
    const int warp = (int)(threadIdx.x >> 5);
    const unsigned lane = threadIdx.x & 31u;
    constexpr bool heads_warp = heads_warp_finds_heads<Seg>();
    // Heads warps taking the tiles in turn, each of them one tile at a
    // time: more than one where a tile's heads take longer than a tile's
    // share of the copy (its index, then its offsets: two round trips to
    // memory).
    constexpr int heads_warps = heads_warp ? Shape<Op>::pipelined_heads_warps : 1;
    // A heads warp waits for its next stage's index only after the stage's
    // tile before (`heads_warps` tiles back, at most `stages`) was indexed,
    // and that stage is not indexed again before the warp has found its
    // heads: a wait is never a phase behind or ahead. The end marks free
    // only stages whose tiles were stored before the last one.
    static_assert(heads_warps >= 1 && heads_warps < stages, "every heads warp meets an end mark");
    pipelined_init_barriers<Op>(shared, heads_warp ? 33u : 1u);
    scan_tile_status<T, Shape<Op>::tile_status_bytes, Shape<Op>::tile_status_stride> tile_status(status);
    if (warp < Shape<Op>::pipelined_squad_warps) {
      // Reduce squad: thread pairs, their warp-inclusive scans (for the
      // rescan squad), the warps' pairs, and the tile's, published at once:
      // an aggregate, or a prefix where a segment starts in the tile.
      const int first = (int)threadIdx.x * items;
      for (int k = 0;; ++k) {
        const int s = k % stages;
        const unsigned parity = (unsigned)(k / stages) & 1u;
        // With segments the index comes first, so that the flags are read
        // while the tile loads (offsets' heads come with the tile, from the
        // heads warp).
        scan_mbarrier_wait(shared.barrier(Seg::segmented && !heads_warp ? stage_indexed : stage_loaded, s), parity);
        const unsigned long long tile = shared.tile_index(s);
        if (tile >= tiles) break;
        const pipelined_extent<Op> extent(tile, n);
        unsigned long long heads = 0;
        if constexpr (keyed<Seg>()) {
          // The squad compares the tile's keys together (coalesced, while
          // the tile loads) into the stage's head bits, then reads its own.
          write_key_words<items, squad, false, items>(seg.keys, extent.base, extent.valid, n, shared.head_bits(s));
          scan_named_barrier(1, squad);
          const int count = extent.valid - first < items ? extent.valid - first : items;
          if (count > 0) heads = bit_window(shared.head_bits(s) + (first >> 5), (unsigned)(first & 31), count);
          scan_mbarrier_wait(shared.barrier(stage_loaded, s), parity);
        } else if constexpr (heads_warp) {
          // The heads warp wrote the tile's head bits before the stage
          // counted as loaded; element 0 is a head.
          heads = bit_window(shared.head_bits(s) + (first >> 5), (unsigned)(first & 31), items);
          if (extent.base + (unsigned long long)first == 0ull) heads |= 1ull;
        } else if constexpr (Seg::segmented) {
          const bool bits_loaded = Seg::format == scan_flags_bits && extent.valid == Shape<Op>::pipelined_items_per_tile;
          if (!bits_loaded) heads = span_heads(seg, extent.base, first, extent.valid - first < items ? extent.valid - first : items);
          scan_mbarrier_wait(shared.barrier(stage_loaded, s), parity);
          if (bits_loaded) {
            // A whole tile's head bits arrived with it; element 0 is a head.
            heads = bit_window(shared.head_bits(s) + (first >> 5), (unsigned)(first & 31), items);
            if (extent.base + (unsigned long long)first == 0ull) heads |= 1ull;
          }
        }
        pipelined_pad_tail<Op>(shared.tile(s), input, extent);  // padding has no heads
        T* const tile_items = shared.tile(s);
        const int t = (int)threadIdx.x;
        const unsigned r = threadIdx.x & 7u;
        bool lane_flag = heads != 0ull;
        const T lane_total = warp_pair_inclusive_scan<Op, Seg>(
            thread_pair_reduce<Op, Seg, items>([&](int i) -> T { return stage_runs<Op>::item_ref(tile_items, t, i); }, heads, seg), lane_flag);
        stage_element<T>{shared.lane_totals(s) + threadIdx.x, r} = lane_total;
        if constexpr (Seg::segmented) {
          shared.heads(s)[threadIdx.x] = heads;
          shared.lane_flags(s)[threadIdx.x] = lane_flag;
        }
        if (lane == 31) {
          shared.warp_totals(s)[warp] = lane_total;
          if constexpr (Seg::segmented) shared.warp_flags(s)[warp] = lane_flag;
        }
        scan_named_barrier(1, squad);
        if (threadIdx.x == 0) {
          bool tile_flag;
          const T tile_total = stage_tile_pair<Op, Seg>(shared, s, tile_flag);
          // A tile holding a head knows the partial open at its end whatever
          // precedes it: it publishes it as a prefix. So does tile 0 of a
          // plain scan whose lookahead looks back (the seed, then its total).
          const bool seeded = Shape<Op>::pipelined_look_back && !Seg::segmented && tile == 0;
          tile_status.publish(tile, (scan_shared_epoch << 2) | (tile_flag || seeded ? scan_tile_prefix : scan_tile_aggregate),
                              seeded ? Op::combine(seed, tile_total) : tile_total);
        }
        scan_mbarrier_arrive(shared.barrier(stage_reduced, s));
      }
    } else if (warp < 2 * Shape<Op>::pipelined_squad_warps) {
      // Rescan squad: the partial open before each thread's first item
      // (the lifted exclusive prefix), then the rescan in place.
      const int t = (int)threadIdx.x - squad;
      const int squad_warp = warp - Shape<Op>::pipelined_squad_warps;
      for (int k = 0;; ++k) {
        const int s = k % stages;
        const unsigned parity = (unsigned)(k / stages) & 1u;
        scan_mbarrier_wait(shared.barrier(stage_loaded, s), parity);
        const unsigned long long tile = shared.tile_index(s);
        if (tile >= tiles) break;
        scan_mbarrier_wait(shared.barrier(stage_reduced, s), parity);
        const unsigned long long heads = Seg::segmented ? shared.heads(s)[t] : 0ull;
        // This warp's earlier lanes, then (when no head lies there) the
        // earlier warps' pairs in front.
        const unsigned r = (unsigned)t & 7u;
        T before = lane != 0 ? (T)stage_element<T>{shared.lane_totals(s) + (t - 1), r} : Op::identity();
        bool before_flag = Seg::segmented && lane != 0 && shared.lane_flags(s)[t - 1];
        if (!before_flag && squad_warp > 0) {
          T warps_before = shared.warp_totals(s)[0];
          bool warps_flag = Seg::segmented && shared.warp_flags(s)[0];
          for (int w = 1; w < squad_warp; ++w)
            pair_accumulate<Op, Seg>(warps_before, warps_flag, shared.warp_totals(s)[w], Seg::segmented && shared.warp_flags(s)[w]);
          before = lane != 0 ? Op::combine(warps_before, before) : warps_before;
          before_flag = warps_flag;
        }
        scan_mbarrier_wait(shared.barrier(stage_prefixed, s), parity);
        const T running = before_flag ? before : Op::combine(shared.prefix(s), before);
        T* const tile_items = shared.tile(s);
        thread_pair_rescan<Op, Mode, Seg, items>([&](int i) { return stage_runs<Op>::item_ref(tile_items, t, i); }, heads, running, seg);
        pipelined_store_tail<Op>(tile_items, output, pipelined_extent<Op>(tile, n), t);
        scan_fence_shared_for_bulk();
        scan_mbarrier_arrive(shared.barrier(stage_rescanned, s));
      }
    } else if (warp == 2 * Shape<Op>::pipelined_squad_warps) {
      // Producer (one lane); with bit flags, a whole tile's head bits come
      // in a second bulk load on the same barrier (tiles start at multiples
      // of 128 elements: their bits at 16 bytes).
      const auto bits_bytes = [](const pipelined_extent<Op>& extent) -> unsigned {
        if constexpr (Seg::segmented) {
          return Seg::format == scan_flags_bits && extent.valid == Shape<Op>::pipelined_items_per_tile ? (unsigned)Shape<Op>::pipelined_items_per_tile / 8u : 0u;
        } else {
          return 0u;
        }
      };
      const auto load_bits = [&](int s, const pipelined_extent<Op>& extent, unsigned long long* loaded) {
        if constexpr (Seg::segmented) {
          if constexpr (Seg::format == scan_flags_bits) scan_bulk_load(shared.head_bits(s), (const unsigned char*)seg.flags + extent.base / 8, bits_bytes(extent), loaded);
        }
      };
      if (stage_runs<Op>::warp_copies || lane == 0)
        pipelined_producer<Seg::segmented, heads_warps, Op>(shared, input, status, launch, n, tiles, bits_bytes, load_bits);
    } else if (warp == 2 * Shape<Op>::pipelined_squad_warps + 1) {
      if constexpr (Shape<Op>::pipelined_look_back) {
        pipelined_look_back_warp<Op, Seg>(shared, tile_status, tiles, seed, carry_out);
      } else {
        // Lookahead: the running prefix through this block's tiles, in
        // order, from the seed (with segments, tile 0 holds a head, element
        // 0, so what precedes it never matters).
        pipelined_lookahead_warp<Op>(shared, tiles, Seg::segmented ? Op::identity() : seed, carry_out, [&](unsigned long long& next, T& running, unsigned long long tile) {
          pipelined_lookahead<Op, Seg>(tile_status, scan_shared_epoch, next, running, tile);
        });
      }
    } else if (warp == 2 * Shape<Op>::pipelined_squad_warps + 2) {
      // Store (one lane, or the warp).
      if (stage_runs<Op>::warp_copies || lane == 0) pipelined_store_warp<pipelined_frees_at_once<Seg>(stages), Op>(shared, output, n, tiles);
    } else if constexpr (heads_warp) {
      // Heads warp h: the head bits of tiles h, h + heads_warps, … of this
      // block from the offsets, written to the stage once the index is
      // known (the stage is free then: its previous tile was reduced,
      // rescanned and stored), while the tile loads; every lane arrives on
      // the stage's `loaded` barrier after.
      const int h = warp - (2 * Shape<Op>::pipelined_squad_warps + 3);
      for (int k = h;; k += heads_warps) {
        const int s = k % stages;
        scan_mbarrier_wait(shared.barrier(stage_indexed, s), (unsigned)(k / stages) & 1u);
        const unsigned long long tile = shared.tile_index(s);
        if (tile < tiles) {
          const pipelined_extent<Op> extent(tile, n);
          warp_offsets_words<Shape<Op>::pipelined_items_per_tile>(seg.offsets, extent.base, extent.valid, shared.head_bits(s));
        }
        scan_mbarrier_arrive(shared.barrier(stage_loaded, s));
        if (tile >= tiles) break;
      }
    }
    return;
  }
#endif
  __trap();  // the host launches this kernel only where it is supported
}

}  // namespace gpu_scan
