// ---- Global level: reduce-then-scan in three passes (chapter 1.4.4, 1.7.1) ----
// 1. reduce_tiles: each block reduces one tile to its pair: the tile's
//    total (its last segment's partial) and whether a segment starts in it.
// 2. scan_tile_totals: one block scans the pairs into each tile's prefix,
//    the partial of the segment open at its start (a plain scan's tile
//    prefixes: the exclusive scan of the totals behind the seed).
// 3. scan_tiles: each block scans its tile behind its prefix.
// Block b takes scan tile b (span_of_tile: in reverse, the input's tile
// counted from the end), so tile totals and prefixes are in scan order.
// An input of at most one tile skips passes 1 and 2. Lengths and offsets are
// 64-bit; input and output may be the same buffer (in-place scans).
namespace gpu_scan {

template <class Op, class Seg, class T = typename Op::T>
__device__ __forceinline__ void reduce_tiles(const stage_input<Op>* input, const Seg& seg, T* tile_totals, unsigned char* tile_flags, unsigned long long n) {
  __shared__ T staging[Shape<Op>::staging_items];
  __shared__ T warp_totals[Shape<Op>::warps + 1];
  __shared__ bool warp_flags[Seg::segmented ? Shape<Op>::warps : 1];
  const tile_span span = span_of_tile<Op>(blockIdx.x, n, Shape<Op>::items_per_tile);
  const unsigned long long base = span.base;
  const int valid = span.valid;
  unsigned heads = 0;
  if constexpr (Seg::heads_before_load) heads = seg.template thread_heads<Shape<Op>::items_per_thread>(base, valid, n);
  T items[Shape<Op>::items_per_thread];
  load_tile<Op>(input, base, valid, staging, items);
  if constexpr (!Seg::heads_before_load) heads = seg.template thread_heads<Shape<Op>::items_per_thread>(base, valid, n);
  bool prefix_flag, tile_flag;
  T tile_total;
  block_pair_exclusive_scan<Op, Seg>(thread_pair_reduce<Op, Seg, Shape<Op>::items_per_thread>([&](int i) { return items[i]; }, heads, seg),
                                     heads != 0u, prefix_flag, warp_totals, warp_flags, tile_total, tile_flag);
  if (threadIdx.x == 0) {
    tile_totals[blockIdx.x] = tile_total;
    if constexpr (Seg::segmented) tile_flags[blockIdx.x] = tile_flag;
  }
}

// One block walks the tile pairs a chunk at a time, carrying the pair of
// everything before the chunk (from `seed`); tile_totals[k] becomes tile
// k's prefix. `tile_segments` says which tiles hold a head (bytes, one per
// tile), or no_segments.
template <class Op, class Seg, class T = typename Op::T>
__device__ __forceinline__ void scan_tile_totals(T* tile_totals, const Seg& tile_segments, unsigned long long num_tiles, const T seed) {
  __shared__ T staging[Shape<Op>::staging_items];
  __shared__ T warp_totals[Shape<Op>::warps + 1];
  __shared__ bool warp_flags[Seg::segmented ? Shape<Op>::warps : 1];
  T carry = seed;
  for (unsigned long long base = 0; base < num_tiles; base += Shape<Op>::items_per_tile) {
    const int valid = (int)(num_tiles - base < Shape<Op>::items_per_tile ? num_tiles - base : Shape<Op>::items_per_tile);
    T items[Shape<Op>::items_per_thread];
    load_tile<Op>(tile_totals, base, valid, staging, items);
    const unsigned heads = tile_segments.template thread_heads<Shape<Op>::items_per_thread>(base, valid, num_tiles);
    bool chunk_flag;
    const T chunk_total = tile_scan<Op, scan_exclusive_carry, Seg>(items, heads, tile_segments, carry, warp_totals, warp_flags, chunk_flag);
    store_tile<Op>(tile_totals, base, valid, staging, items);
    carry = chunk_flag ? chunk_total : Op::combine(carry, chunk_total);
  }
}

// Scans tile blockIdx.x behind tile_prefixes[blockIdx.x]; with
// tile_prefixes == nullptr the input is a single tile behind `seed`. The
// last block writes the carry-out (unless `carry_out` is null).
template <class Op, int Mode, class Seg, class T = typename Op::T>
__device__ __forceinline__ void scan_tiles(const stage_input<Op>* input, const Seg& seg, stage_output<Op>* output, const T* tile_prefixes, T* carry_out, const T seed,
                                           unsigned long long n) {
  __shared__ T staging[Shape<Op>::staging_items];
  __shared__ T warp_totals[Shape<Op>::warps + 1];
  __shared__ bool warp_flags[Seg::segmented ? Shape<Op>::warps : 1];
  const tile_span span = span_of_tile<Op>(blockIdx.x, n, Shape<Op>::items_per_tile);
  const unsigned long long base = span.base;
  const int valid = span.valid;
  unsigned heads = 0;
  if constexpr (Seg::heads_before_load) heads = seg.template thread_heads<Shape<Op>::items_per_thread>(base, valid, n);
  T items[Shape<Op>::items_per_thread];
  load_tile<Op>(input, base, valid, staging, items);
  if constexpr (!Seg::heads_before_load) heads = seg.template thread_heads<Shape<Op>::items_per_thread>(base, valid, n);
  const T prefix = tile_prefixes != nullptr ? tile_prefixes[blockIdx.x] : seed;
  bool tile_flag;
  tile_scan<Op, Mode, Seg>(items, heads, seg, prefix, warp_totals, warp_flags, tile_flag);
  store_tile<Op>(output, base, valid, staging, items);
  if (carry_out != nullptr && blockIdx.x == gridDim.x - 1 && threadIdx.x == 0)
    write_block_carry_out<Op, Seg>(carry_out, tile_prefixes != nullptr ? tile_prefixes[blockIdx.x] : seed, warp_totals, warp_flags);
}

}  // namespace gpu_scan
