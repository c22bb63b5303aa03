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

// Whole tiles move as 16-byte vectors when a vector holds whole elements
// and each thread's share is whole vectors.
template <int Items>
constexpr bool $op_vector_loads() {
  return 16 % sizeof($op_t) == 0 && (Items * sizeof($op_t)) % 16 == 0;
}

// This thread's blocked items from a tile in `staging` (identity past `valid`).
template <int Items>
__device__ __forceinline__ void $op_read_items(const $op_t* staging, int valid, $op_t (&items)[Items]) {
#pragma unroll
  for (int i = 0; i < Items; ++i) {
    const int j = (int)threadIdx.x * Items + i;
    items[i] = j < valid ? staging[$op_staging_slot(j)] : $op_identity();
  }
}

// Moves elements [base, base + valid) of `input` into blocked registers.
// Global reads are "striped" (consecutive threads read consecutive elements,
// so they coalesce) and rearranged through the shared `staging` buffer
// (Items × $op_block_threads elements plus padding). Elements past `valid`
// become the identity. A whole tile at a 16-byte aligned address is read
// with 16-byte vector loads, all issued before the first is used.
template <int Items>
__device__ __forceinline__ void $op_load_tile(const $op_t* input, unsigned long long base, int valid, $op_t* staging, $op_t (&items)[Items]) {
  bool vectors_done = false;
  if constexpr ($op_vector_loads<Items>()) {
    if (valid == Items * $op_block_threads && ((unsigned long long)(input + base) & 15u) == 0) {
      constexpr int per_vector = sizeof($op_t) <= 16 ? 16 / (int)sizeof($op_t) : 1;
      constexpr int vectors = Items / per_vector;
      const uint4* source = (const uint4*)(input + base);
      uint4 loaded[vectors];
#pragma unroll
      for (int v = 0; v < vectors; ++v) loaded[v] = source[v * $op_block_threads + (int)threadIdx.x];
#pragma unroll
      for (int v = 0; v < vectors; ++v) {
        $op_t elements[per_vector];
        memcpy(elements, &loaded[v], 16);
        const int first = (v * $op_block_threads + (int)threadIdx.x) * per_vector;
#pragma unroll
        for (int e = 0; e < per_vector; ++e) staging[$op_staging_slot(first + e)] = elements[e];
      }
      vectors_done = true;
    }
  }
  if (!vectors_done) {
#pragma unroll
    for (int i = 0; i < Items; ++i) {
      const int j = i * $op_block_threads + (int)threadIdx.x;
      if (j < valid) staging[$op_staging_slot(j)] = input[base + j];
    }
  }
  __syncthreads();
  $op_read_items(staging, valid, items);
  __syncthreads();
}

// The inverse of $op_load_tile: blocked registers to elements
// [base, base + valid) of `output`, written striped (16-byte vector stores
// for a whole aligned tile).
template <int Items>
__device__ __forceinline__ void $op_store_tile($op_t* output, unsigned long long base, int valid, $op_t* staging, const $op_t (&items)[Items]) {
#pragma unroll
  for (int i = 0; i < Items; ++i) staging[$op_staging_slot((int)threadIdx.x * Items + i)] = items[i];
  __syncthreads();
  bool vectors_done = false;
  if constexpr ($op_vector_loads<Items>()) {
    if (valid == Items * $op_block_threads && ((unsigned long long)(output + base) & 15u) == 0) {
      constexpr int per_vector = sizeof($op_t) <= 16 ? 16 / (int)sizeof($op_t) : 1;
      constexpr int vectors = Items / per_vector;
      uint4* target = (uint4*)(output + base);
#pragma unroll
      for (int v = 0; v < vectors; ++v) {
        $op_t elements[per_vector];
        const int first = (v * $op_block_threads + (int)threadIdx.x) * per_vector;
#pragma unroll
        for (int e = 0; e < per_vector; ++e) elements[e] = staging[$op_staging_slot(first + e)];
        uint4 word;
        memcpy(&word, elements, 16);
        target[v * $op_block_threads + (int)threadIdx.x] = word;
      }
      vectors_done = true;
    }
  }
  if (!vectors_done) {
#pragma unroll
    for (int i = 0; i < Items; ++i) {
      const int j = i * $op_block_threads + (int)threadIdx.x;
      if (j < valid) output[base + j] = staging[$op_staging_slot(j)];
    }
  }
  __syncthreads();
}

// Combines a thread's items serially, in order.
template <int Items>
__device__ __forceinline__ $op_t $op_thread_reduce(const $op_t (&items)[Items]) {
  $op_t total = items[0];
#pragma unroll
  for (int i = 1; i < Items; ++i) total = $op_combine(total, items[i]);
  return total;
}

// Scans a thread's items in place, `running` (what precedes them) in front.
template <bool Inclusive, int Items>
__device__ __forceinline__ void $op_thread_scan($op_t (&items)[Items], $op_t running) {
#pragma unroll
  for (int i = 0; i < Items; ++i) {
    if (Inclusive) {
      running = $op_combine(running, items[i]);
      items[i] = running;
    } else {
      const $op_t item = items[i];
      items[i] = running;
      running = $op_combine(running, item);
    }
  }
}

// Scans the tile held in `items` in place. After the block has combined the
// thread totals, every thread calls `tile_prefix(tile_total)`, which returns
// what goes in front of the tile (the seed, or the single pass's look-back
// result; it may synchronise the block), then `reload(items)`, which may
// refill `items` (the single pass reads them back from shared memory rather
// than keeping them in registers through the look-back). Inclusive gives
// prefix ∘ v_0 ∘ … ∘ v_k at k, exclusive prefix ∘ v_0 ∘ … ∘ v_(k-1).
// Returns the tile total v_0 ∘ … ∘ v_last (without the prefix).
template <bool Inclusive, int Items, class TilePrefix, class Reload>
__device__ __forceinline__ $op_t $op_tile_scan_with($op_t (&items)[Items], $op_t* warp_totals, TilePrefix tile_prefix, Reload reload) {
  $op_t tile_total;
  const $op_t thread_prefix = $op_block_exclusive_scan($op_thread_reduce(items), warp_totals, tile_total);
  const $op_t prefix = tile_prefix(tile_total);
  reload(items);
  $op_thread_scan<Inclusive>(items, threadIdx.x == 0 ? prefix : $op_combine(prefix, thread_prefix));
  return tile_total;
}

// $op_tile_scan_with a known `seed` in front of the tile.
template <bool Inclusive, int Items>
__device__ __forceinline__ $op_t $op_tile_scan($op_t (&items)[Items], const $op_t seed, $op_t* warp_totals) {
  return $op_tile_scan_with<Inclusive>(items, warp_totals, [&](const $op_t&) { return seed; }, [](const $op_t (&)[Items]) {});
}
