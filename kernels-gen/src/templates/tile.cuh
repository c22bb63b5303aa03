// ---- Tile level: $op_items_per_thread elements per thread (chapter 1.8) ----
// A tile is $op_block_threads × $op_items_per_thread consecutive elements.
// Thread t owns elements t·IPT … t·IPT + IPT − 1 (the "blocked" order) in
// registers. It reduces them serially, the block scans the thread totals,
// and the thread rescans its elements seeded with its exclusive prefix.

// The shared `staging` buffer holds a tile with one padding slot after every
// 32 elements. Without it, thread t's blocked items t·IPT … sit IPT slots
// apart from its neighbours', so a warp reading item i of each thread hits
// the same few banks (16-way conflicts for 4-byte elements and IPT = 16);
// with it, consecutive threads land in different banks.
__device__ __forceinline__ int $op_staging_slot(int j) { return j + (j >> 5); }

// Moves elements [base, base + valid) of `input` into blocked registers.
// Global reads are "striped" (consecutive threads read consecutive elements,
// so they coalesce) and rearranged through the shared `staging` buffer
// ($op_staging_items elements). Elements past `valid` become the identity.
__device__ __forceinline__ void $op_load_tile(const $op_t* input, unsigned long long base, int valid, $op_t* staging, $op_t (&items)[$op_items_per_thread]) {
#pragma unroll
  for (int i = 0; i < $op_items_per_thread; ++i) {
    const int j = i * $op_block_threads + (int)threadIdx.x;
    if (j < valid) staging[$op_staging_slot(j)] = input[base + j];
  }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < $op_items_per_thread; ++i) {
    const int j = (int)threadIdx.x * $op_items_per_thread + i;
    items[i] = j < valid ? staging[$op_staging_slot(j)] : $op_identity();
  }
  __syncthreads();
}

// The inverse of $op_load_tile: blocked registers to elements
// [base, base + valid) of `output`, written striped.
__device__ __forceinline__ void $op_store_tile($op_t* output, unsigned long long base, int valid, $op_t* staging, const $op_t (&items)[$op_items_per_thread]) {
#pragma unroll
  for (int i = 0; i < $op_items_per_thread; ++i) staging[$op_staging_slot((int)threadIdx.x * $op_items_per_thread + i)] = items[i];
  __syncthreads();
#pragma unroll
  for (int i = 0; i < $op_items_per_thread; ++i) {
    const int j = i * $op_block_threads + (int)threadIdx.x;
    if (j < valid) output[base + j] = staging[$op_staging_slot(j)];
  }
  __syncthreads();
}

// Combines a thread's items serially, in order.
__device__ __forceinline__ $op_t $op_thread_reduce(const $op_t (&items)[$op_items_per_thread]) {
  $op_t total = items[0];
#pragma unroll
  for (int i = 1; i < $op_items_per_thread; ++i) total = $op_combine(total, items[i]);
  return total;
}

// Scans the tile held in `items` in place, with `seed` in front of it:
// inclusive gives seed ∘ v_0 ∘ … ∘ v_k at k, exclusive seed ∘ v_0 ∘ … ∘ v_(k-1).
// Returns the tile total v_0 ∘ … ∘ v_last (without the seed).
template <bool Inclusive>
__device__ __forceinline__ $op_t $op_tile_scan($op_t (&items)[$op_items_per_thread], const $op_t seed, $op_t* warp_totals) {
  $op_t tile_total;
  const $op_t thread_prefix = $op_block_exclusive_scan($op_thread_reduce(items), warp_totals, tile_total);
  $op_t running = threadIdx.x == 0 ? seed : $op_combine(seed, thread_prefix);
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
  return tile_total;
}
