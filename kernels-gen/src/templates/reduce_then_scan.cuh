// ---- Global level: reduce-then-scan in three passes (chapter 1.4.4, 1.7.1) ----
// 1. reduce_tiles: each block reduces one tile to its tile total.
// 2. scan_tile_totals: one block scans the tile totals (exclusive, seeded).
// 3. scan_tiles_*: each block scans its tile seeded with its tile prefix.
// An input of at most one tile skips passes 1 and 2. Lengths and offsets are
// 64-bit; input and output may be the same buffer (in-place scans).
namespace gpu_scan {

template <class Op, class T = typename Op::T>
__device__ __forceinline__ void reduce_tiles(const T* input, T* tile_totals, unsigned long long n) {
  __shared__ T staging[Shape<Op>::staging_items];
  __shared__ T warp_totals[Shape<Op>::warps + 1];
  const unsigned long long base = (unsigned long long)blockIdx.x * Shape<Op>::items_per_tile;
  const int valid = (int)(n - base < Shape<Op>::items_per_tile ? n - base : Shape<Op>::items_per_tile);
  T items[Shape<Op>::items_per_thread];
  load_tile<Op>(input, base, valid, staging, items);
  T tile_total;
  block_exclusive_scan<Op>(thread_reduce<Op>(items), warp_totals, tile_total);
  if (threadIdx.x == 0) tile_totals[blockIdx.x] = tile_total;
}

// One block walks the tile totals a tile at a time, carrying the running
// prefix from chunk to chunk; tile_totals[k] becomes seed ∘ total_0 ∘ … ∘ total_(k-1).
template <class Op, class T = typename Op::T>
__device__ __forceinline__ void scan_tile_totals(T* tile_totals, unsigned long long num_tiles, const T seed) {
  __shared__ T staging[Shape<Op>::staging_items];
  __shared__ T warp_totals[Shape<Op>::warps + 1];
  T carry = seed;
  for (unsigned long long base = 0; base < num_tiles; base += Shape<Op>::items_per_tile) {
    const int valid = (int)(num_tiles - base < Shape<Op>::items_per_tile ? num_tiles - base : Shape<Op>::items_per_tile);
    T items[Shape<Op>::items_per_thread];
    load_tile<Op>(tile_totals, base, valid, staging, items);
    const T chunk_total = tile_scan<Op, false>(items, carry, warp_totals);
    store_tile<Op>(tile_totals, base, valid, staging, items);
    carry = Op::combine(carry, chunk_total);
  }
}

// Scans tile blockIdx.x seeded with tile_prefixes[blockIdx.x]; with
// tile_prefixes == nullptr the input is a single tile seeded with `seed`.
template <class Op, bool Inclusive, class T = typename Op::T>
__device__ __forceinline__ void scan_tile(const T* input, T* output, const T* tile_prefixes, const T seed, unsigned long long n) {
  __shared__ T staging[Shape<Op>::staging_items];
  __shared__ T warp_totals[Shape<Op>::warps + 1];
  const unsigned long long base = (unsigned long long)blockIdx.x * Shape<Op>::items_per_tile;
  const int valid = (int)(n - base < Shape<Op>::items_per_tile ? n - base : Shape<Op>::items_per_tile);
  T items[Shape<Op>::items_per_thread];
  load_tile<Op>(input, base, valid, staging, items);
  const T prefix = tile_prefixes != nullptr ? tile_prefixes[blockIdx.x] : seed;
  tile_scan<Op, Inclusive>(items, prefix, warp_totals);
  store_tile<Op>(output, base, valid, staging, items);
}

}  // namespace gpu_scan
