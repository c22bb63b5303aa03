// ---- Tile level: Shape<Op>::items_per_thread elements per thread (chapter 1.8) ----
// A tile is Shape<Op>::block_threads × Shape<Op>::items_per_thread consecutive elements.
// Thread t owns elements t·IPT … t·IPT + IPT − 1 (the "blocked" order) in
// registers. It reduces them serially, the block scans the thread totals,
// and the thread rescans its elements seeded with its exclusive prefix.
namespace gpu_scan {

// The shared `staging` buffer holds a tile with one padding slot after every
// 32 elements. Without it, thread t's blocked items t·IPT … sit IPT slots
// apart from its neighbours', so a warp reading item i of each thread hits
// the same few banks (16-way conflicts for 4-byte elements and IPT = 16);
// with it, consecutive threads land in different banks.
__device__ __forceinline__ int staging_slot(int j) { return j + (j >> 5); }

// How far apart the slots of a thread's consecutive striped elements are
// when mirrored: items B apart (B threads, a multiple of 32) sit B + B/32
// slots apart, so slot(x - i·B) = slot(x) - i·(B + B/32) for any x (the
// shift rounds down for negative x too).
template <class Op>
constexpr int mirrored_slot_step() {
  return Shape<Op>::block_threads + Shape<Op>::block_threads / 32;
}

// Whole tiles move as 16-byte vectors when a vector holds whole elements
// (of the type in memory: a stage's input or output) and each thread's
// share is whole vectors.
template <class Op, int Items, class T = typename Op::T>
constexpr bool vector_loads() {
  return 16 % sizeof(T) == 0 && (Items * sizeof(T)) % 16 == 0;
}

// This thread's blocked items from a tile in `staging` (identity past `valid`).
template <class Op, int Items, class T = typename Op::T>
__device__ __forceinline__ void read_items(const T* staging, int valid, T (&items)[Items]) {
#pragma unroll
  for (int i = 0; i < Items; ++i) {
    const int j = (int)threadIdx.x * Items + i;
    items[i] = j < valid ? staging[staging_slot(j)] : Op::identity();
  }
}

// Moves elements [base, base + valid) of `input` into blocked registers
// (mirrored for a reverse scan: the element at base + m becomes item
// item_of<Op>(m, valid)), each through the policy's load stage
// (stages.cuh; none for a plain operator).
// Global reads are "striped" (consecutive threads read consecutive elements,
// so they coalesce) and rearranged through the shared `staging` buffer
// (Items × Shape<Op>::block_threads elements plus padding). Elements past `valid`
// become the identity. A whole tile at a 16-byte aligned address is read
// with 16-byte vector loads, all issued before the first is used.
template <class Op, int Items, class T = typename Op::T, class In = stage_input<Op>>
__device__ __forceinline__ void load_tile(const In* input, unsigned long long base, int valid, T* staging, T (&items)[Items]) {
  bool vectors_done = false;
  if constexpr (vector_loads<Op, Items, In>()) {
    if (valid == Items * Shape<Op>::block_threads && ((unsigned long long)(input + base) & 15u) == 0) {
      constexpr int per_vector = sizeof(In) <= 16 ? 16 / (int)sizeof(In) : 1;
      constexpr int vectors = Items / per_vector;
      // A whole tile: items are mirrored about its constant length.
      const uint4* source = (const uint4*)(input + base);
      uint4 loaded[vectors];
#pragma unroll
      for (int v = 0; v < vectors; ++v) loaded[v] = source[v * Shape<Op>::block_threads + (int)threadIdx.x];
#pragma unroll
      for (int v = 0; v < vectors; ++v) {
        In elements[per_vector];
        memcpy(elements, &loaded[v], 16);
        const int first = (v * Shape<Op>::block_threads + (int)threadIdx.x) * per_vector;
#pragma unroll
        for (int e = 0; e < per_vector; ++e)
          staging[staging_slot(item_of<Op>(first + e, Items * Shape<Op>::block_threads))] = stages_of<Op>::load(elements[e]);
      }
      vectors_done = true;
    }
  }
  if (!vectors_done) {
    // Element j = i·B + t (B threads) is item item_of(j); mirrored, its slot
    // falls by B + B/32 per i from thread t's first (B is a multiple of 32).
    const int top = staging_slot(item_of<Op>((int)threadIdx.x, valid));
#pragma unroll
    for (int i = 0; i < Items; ++i) {
      const int j = i * Shape<Op>::block_threads + (int)threadIdx.x;
      const int slot = mirrored_memory<Op>::value ? top - i * mirrored_slot_step<Op>() : staging_slot(j);
      if (j < valid) staging[slot] = stages_of<Op>::load(input[base + j]);
    }
  }
  __syncthreads();
  read_items<Op>(staging, valid, items);
  __syncthreads();
}

// The inverse of load_tile: blocked registers to elements
// [base, base + valid) of `output` (mirrored as load_tile), each through
// the policy's store stage, written striped (16-byte vector stores for a
// whole aligned tile).
template <class Op, int Items, class T = typename Op::T, class Out = stage_output<Op>>
__device__ __forceinline__ void store_tile(Out* output, unsigned long long base, int valid, T* staging, const T (&items)[Items]) {
#pragma unroll
  for (int i = 0; i < Items; ++i) staging[staging_slot((int)threadIdx.x * Items + i)] = items[i];
  __syncthreads();
  bool vectors_done = false;
  if constexpr (vector_loads<Op, Items, Out>()) {
    if (valid == Items * Shape<Op>::block_threads && ((unsigned long long)(output + base) & 15u) == 0) {
      constexpr int per_vector = sizeof(Out) <= 16 ? 16 / (int)sizeof(Out) : 1;
      constexpr int vectors = Items / per_vector;
      uint4* target = (uint4*)(output + base);
#pragma unroll
      for (int v = 0; v < vectors; ++v) {
        Out elements[per_vector];
        const int first = (v * Shape<Op>::block_threads + (int)threadIdx.x) * per_vector;
#pragma unroll
        for (int e = 0; e < per_vector; ++e)
          elements[e] = stages_of<Op>::store(staging[staging_slot(item_of<Op>(first + e, Items * Shape<Op>::block_threads))]);
        uint4 word;
        memcpy(&word, elements, 16);
        target[v * Shape<Op>::block_threads + (int)threadIdx.x] = word;
      }
      vectors_done = true;
    }
  }
  if (!vectors_done) {
    const int top = staging_slot(item_of<Op>((int)threadIdx.x, valid));  // as in load_tile
#pragma unroll
    for (int i = 0; i < Items; ++i) {
      const int j = i * Shape<Op>::block_threads + (int)threadIdx.x;
      const int slot = mirrored_memory<Op>::value ? top - i * mirrored_slot_step<Op>() : staging_slot(j);
      if (j < valid) output[base + j] = stages_of<Op>::store(staging[slot]);
    }
  }
  __syncthreads();
}

// Scans the tile held in `items` in place (Mode: scan_inclusive,
// scan_exclusive or scan_exclusive_carry), `heads` flagging this thread's
// items that start a segment (always 0 for no_segments). After the block
// has combined the threads' pairs, every thread calls
// `tile_prefix(tile_total, tile_flag)`, which returns what goes in front of
// the tile: the partial of the segment open at its start (the seed, or the
// single pass's look-back result; it may synchronise the block; it is not
// used where the tile's first element is a head), then `reload(items)`,
// which may refill `items` (the single pass reads them back from shared
// memory rather than keeping them in registers through the look-back).
// Returns the tile's pair: its last segment's partial (for a plain scan,
// v_0 ∘ … ∘ v_last without the prefix), and in `tile_flag` whether a
// segment starts in the tile.
template <class Op, int Mode, class Seg, int Items, class TilePrefix, class Reload, class T = typename Op::T>
__device__ __forceinline__ T tile_scan_with(T (&items)[Items], unsigned heads, const Seg& seg, T* warp_totals, bool* warp_flags, bool& tile_flag,
                                            TilePrefix tile_prefix_of, Reload reload) {
  bool prefix_flag;
  T tile_total;
  const T thread_prefix = block_pair_exclusive_scan<Op, Seg>(thread_pair_reduce<Op, Seg, Items>([&](int i) { return items[i]; }, heads, seg),
                                                             heads != 0u, prefix_flag, warp_totals, warp_flags, tile_total, tile_flag);
  const T tile_prefix = tile_prefix_of(tile_total, tile_flag);
  reload(items);
  // The partial in front of this thread's first item.
  const T running = threadIdx.x == 0 ? tile_prefix : prefix_flag ? thread_prefix : Op::combine(tile_prefix, thread_prefix);
  thread_pair_rescan<Op, Mode, Seg, Items>([&](int i) -> T& { return items[i]; }, heads, running, seg);
  return tile_total;
}

// The scan's carry-out, from its last tile in scan order: the tile's pair
// (tile_total, tile_flag) behind `tile_prefix`, which is the partial open
// at the scan's end (a plain scan's seed and every element; with segments,
// the last segment's partial). Thread 0 writes it to `carry_out`, unless
// that is null (no carry-out asked for).
template <class Op, class T = typename Op::T>
__device__ __forceinline__ void write_carry_out(T* carry_out, const T& tile_prefix, const T& tile_total, bool tile_flag) {
  if (carry_out != nullptr && threadIdx.x == 0) *carry_out = tile_flag ? tile_total : Op::combine(tile_prefix, tile_total);
}

// The last tile's carry-out (write_carry_out, from thread 0) behind
// `tile_prefix`, its pair read back from where block_pair_exclusive_scan
// left it, once the tile is stored: out of line, so that the tile scan
// never holds it in registers (inlined, ptxas spilled tile scans and wide
// elements' single passes at their register caps).
template <class Op, class Seg, class T = typename Op::T>
__device__ __noinline__ void write_block_carry_out(T* carry_out, const T tile_prefix, const T* warp_totals, const bool* warp_flags) {
  bool flag;
  const T total = block_pair_total<Op, Seg>(warp_totals, warp_flags, flag);
  write_carry_out<Op>(carry_out, tile_prefix, total, flag);
}

// tile_scan_with a known `tile_prefix` in front of the tile.
template <class Op, int Mode, class Seg, int Items, class T = typename Op::T>
__device__ __forceinline__ T tile_scan(T (&items)[Items], unsigned heads, const Seg& seg, const T tile_prefix, T* warp_totals, bool* warp_flags,
                                       bool& tile_flag) {
  return tile_scan_with<Op, Mode, Seg>(items, heads, seg, warp_totals, warp_flags, tile_flag, [&](const T&, bool) { return tile_prefix; },
                                       [](const T (&)[Items]) {});
}

}  // namespace gpu_scan
