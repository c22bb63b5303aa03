// ---- Global level: reduce-then-scan in three passes (chapter 1.4.4, 1.7.1) ----
// 1. $op_reduce_tiles: each block reduces one tile to its tile total.
// 2. $op_scan_tile_totals: one block scans the tile totals (exclusive, seeded).
// 3. $op_scan_tiles_*: each block scans its tile seeded with its tile prefix.
// An input of at most one tile skips passes 1 and 2. Lengths and offsets are
// 64-bit; input and output may be the same buffer (in-place scans).

extern "C" __global__ void SCAN_BOUNDS($op_block_threads)
$op_reduce_tiles(const $op_t* input, $op_t* tile_totals, unsigned long long n) {
  __shared__ $op_t staging[$op_staging_items];
  __shared__ $op_t warp_totals[$op_warps + 1];
  const unsigned long long base = (unsigned long long)blockIdx.x * $op_items_per_tile;
  const int valid = (int)(n - base < $op_items_per_tile ? n - base : $op_items_per_tile);
  $op_t items[$op_items_per_thread];
  $op_load_tile(input, base, valid, staging, items);
  $op_t tile_total;
  $op_block_exclusive_scan($op_thread_reduce(items), warp_totals, tile_total);
  if (threadIdx.x == 0) tile_totals[blockIdx.x] = tile_total;
}

// One block walks the tile totals a tile at a time, carrying the running
// prefix from chunk to chunk; tile_totals[k] becomes seed ∘ total_0 ∘ … ∘ total_(k-1).
extern "C" __global__ void SCAN_BOUNDS($op_block_threads)
$op_scan_tile_totals($op_t* tile_totals, unsigned long long num_tiles, const $op_t seed) {
  __shared__ $op_t staging[$op_staging_items];
  __shared__ $op_t warp_totals[$op_warps + 1];
  $op_t carry = seed;
  for (unsigned long long base = 0; base < num_tiles; base += $op_items_per_tile) {
    const int valid = (int)(num_tiles - base < $op_items_per_tile ? num_tiles - base : $op_items_per_tile);
    $op_t items[$op_items_per_thread];
    $op_load_tile(tile_totals, base, valid, staging, items);
    const $op_t chunk_total = $op_tile_scan<false>(items, carry, warp_totals);
    $op_store_tile(tile_totals, base, valid, staging, items);
    carry = $op_combine(carry, chunk_total);
  }
}

// Scans tile blockIdx.x seeded with tile_prefixes[blockIdx.x]; with
// tile_prefixes == nullptr the input is a single tile seeded with `seed`.
template <bool Inclusive>
__device__ __forceinline__ void $op_scan_tile(const $op_t* input, $op_t* output, const $op_t* tile_prefixes, const $op_t seed, unsigned long long n) {
  __shared__ $op_t staging[$op_staging_items];
  __shared__ $op_t warp_totals[$op_warps + 1];
  const unsigned long long base = (unsigned long long)blockIdx.x * $op_items_per_tile;
  const int valid = (int)(n - base < $op_items_per_tile ? n - base : $op_items_per_tile);
  $op_t items[$op_items_per_thread];
  $op_load_tile(input, base, valid, staging, items);
  const $op_t prefix = tile_prefixes != nullptr ? tile_prefixes[blockIdx.x] : seed;
  $op_tile_scan<Inclusive>(items, prefix, warp_totals);
  $op_store_tile(output, base, valid, staging, items);
}

extern "C" __global__ void SCAN_BOUNDS($op_block_threads)
$op_scan_tiles_inclusive(const $op_t* input, $op_t* output, const $op_t* tile_prefixes, const $op_t seed, unsigned long long n) {
  $op_scan_tile<true>(input, output, tile_prefixes, seed, n);
}

extern "C" __global__ void SCAN_BOUNDS($op_block_threads)
$op_scan_tiles_exclusive(const $op_t* input, $op_t* output, const $op_t* tile_prefixes, const $op_t seed, unsigned long long n) {
  $op_scan_tile<false>(input, output, tile_prefixes, seed, n);
}
