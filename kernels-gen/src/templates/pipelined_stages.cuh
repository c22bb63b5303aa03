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
//
// Four files: this one, the stages (a block's shared memory, and how a
// tile's elements lie in a stage and move between it, registers and
// global memory); pipelined_heads.cuh, where each segment source finds a
// tile's heads; pipelined_roles.cuh, the warps' roles but the squads';
// pipelined.cuh, the kernel, with the reduce and rescan squads.
namespace gpu_scan {

// The pipelined tile shape and stage count are in Shape<Op> (shape.cuh).

// Round k of a role's walk over a block's stages: stage k % Stages, in
// phase (k / Stages) & 1 of that stage's barriers. Every role walks the
// rounds in order (the heads warps each every heads_warps-th), so a round
// names a stage and its phase alike for all of them.
template <int Stages>
struct stage_round {
  int k;
  __device__ __forceinline__ int stage() const { return k % Stages; }
  __device__ __forceinline__ unsigned parity() const { return (unsigned)(k / Stages) & 1u; }
  // The phase of the round a lap (Stages rounds) back, on the same stage
  // (k at least Stages).
  __device__ __forceinline__ unsigned lap_back_parity() const { return (unsigned)(k / Stages - 1) & 1u; }
  // The round `rounds` later (or earlier).
  __device__ __forceinline__ stage_round after(int rounds) const { return stage_round{k + rounds}; }
};

// Shared-memory layout of one pipelined block: the stages' tiles, then
// with segments the tiles' head bits (16-byte aligned, for bulk loads),
// then per stage the barriers and tile index, with segments the reduce
// threads' head masks, then the reduce squad's lane and warp totals (no
// warp totals where Shape<Op>::pipelined_warp_total_slots is 0) and the
// tile's prefix, with segments the flags of the lanes' and warps' pairs.
// Every size comes from the layout (kernels_gen::layout).
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
  static constexpr int warp_total_slots = Shape<Op>::pipelined_warp_total_slots;
  static_assert(warp_total_slots == 0 || warp_total_slots == warps, "one slot a warp, or none");
  static constexpr unsigned flags_at = values_at + stages * (squad + warp_total_slots + 1) * sizeof(T);
  static constexpr unsigned end = flags_at + (segmented ? stages * (squad + warps) : 0);
  __device__ __forceinline__ T* tile(int s) const { return (T*)(base + s * tile_bytes); }
  __device__ __forceinline__ unsigned* head_bits(int s) const { return (unsigned*)(base + bits_at + s * bits_bytes); }
  __device__ __forceinline__ unsigned long long* barrier(int which, int s) const { return (unsigned long long*)(base + barriers_at) + which * stages + s; }
  __device__ __forceinline__ unsigned long long& tile_index(int s) const { return ((unsigned long long*)(base + indices_at))[s]; }
  __device__ __forceinline__ unsigned long long* heads(int s) const { return (unsigned long long*)(base + heads_at) + s * squad; }
  __device__ __forceinline__ T* lane_totals(int s) const { return (T*)(base + values_at) + s * squad; }
  // Stage s's warp-total slots (where there are any).
  __device__ __forceinline__ T* warp_slots(int s) const { return (T*)(base + values_at) + stages * squad + s * warps; }
  // Warp w's total: its slot, or (without slots) its last lane's total
  // (lane totals written in rotated chunks lie in order all the same).
  __device__ __forceinline__ const T& warp_total(int s, int w) const {
    if constexpr (warp_total_slots == 0) {
      return lane_totals(s)[32 * w + 31];
    } else {
      return warp_slots(s)[w];
    }
  }
  // The reduce squad's lane 31 of warp w keeps its total (a no-op without
  // slots: the lane totals hold it).
  __device__ __forceinline__ void keep_warp_total(int s, int w, const T& total) const {
    if constexpr (warp_total_slots != 0) warp_slots(s)[w] = total;
  }
  __device__ __forceinline__ T& prefix(int s) const { return ((T*)(base + values_at) + stages * (squad + warp_total_slots))[s]; }
  __device__ __forceinline__ bool* lane_flags(int s) const { return (bool*)(base + flags_at) + s * squad; }
  __device__ __forceinline__ bool* warp_flags(int s) const { return (bool*)(base + flags_at) + stages * squad + s * warps; }
  static_assert(!supported || end <= shared_bytes, "the pipelined layout fits the shared memory the host provides");
  typedef stage_round<stages> round;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // Waits for barrier `which` of round r's stage in r's phase; arrives on it.
  __device__ __forceinline__ void wait(int which, round r) const { scan_mbarrier_wait(barrier(which, r.stage()), r.parity()); }
  __device__ __forceinline__ void arrive(int which, round r) const { scan_mbarrier_arrive(barrier(which, r.stage())); }
#endif
};
enum { stage_loaded = 0, stage_indexed = 1, stage_reduced = 2, stage_prefixed = 3, stage_rescanned = 4, stage_freed = 5 };

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
#endif

}  // namespace gpu_scan
