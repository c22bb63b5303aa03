// ---- Columns: a row-major matrix scanned down its columns ----
// `rows` × `cols` elements, row-major; column c is the sequence
// in[c], in[cols + c], in[2·cols + c], … (torch.cumsum(x, dim=0)). Reading
// one column at a time would touch a cache line per element, so each warp
// scans 32 adjacent columns at once: lane l owns column 32·s + l of strip s,
// and each of a warp's loads (one row of the strip) is one contiguous
// 32-element run.
//
// A tile is the strip's rows [tile_rows · chunk, tile_rows · (chunk + 1)),
// tile_rows = warps × Items (Shape<Op>::column_items_per_thread): warp w
// holds Items consecutive rows of it, each
// thread its column's Items elements in registers. The scan runs as the
// single pass with decoupled look-back (single_pass.cuh), per column:
//   1. each thread folds its items; the warps' partials of a column are
//      combined in order through shared memory (the tile's column totals);
//   2. warp 0 publishes the tile's 32 totals, looks back along its strip
//      (tiles chunk - 1, chunk - 2, … of the same strip, all 32 columns at
//      once) to the nearest published inclusive prefix, and publishes its
//      own prefixes;
//   3. every thread rescans its items behind its column's prefix and the
//      partials of the warps above it.
// Where the strips alone fill the GPU, each block instead walks down its
// whole strip (`walk`), the columns' partials carried in registers from one
// chunk to the next, and no block waits on another.
// Tiles are numbered chunk-major (tile = chunk · strips + strip) and taken
// from the launch state in order, so a tile only waits on tiles of earlier
// chunks, which started before it. A tile's status word is the single
// pass's (one per tile, the same stride and sweep); the values are the 32
// columns' own, in the aggregate and prefix arrays at tile · 32 + lane.
//
// In reverse (reversed<Op>) scan row k is memory row rows - 1 - k and the
// operator is mirrored, so every column is scanned from its last row.
namespace gpu_scan {

// The 32 column values of a tile's status: written by the lanes of one
// warp, then the tile's status word (lane 0, release).
// The words lie where the single passes' entries keep their first chunk's
// (scan_status_chunk_offset), so that one sweep serves both.
template <class T, unsigned Bytes, unsigned Stride>
struct column_status {
  void* status;
  T* aggregates;
  T* prefixes;
  __device__ __forceinline__ unsigned* word(unsigned long long tile) const {
    return (unsigned*)((unsigned char*)status + scan_status_chunk_offset<Bytes, Stride>(tile, 0));
  }
  // Called by all 32 lanes of a warp: lane l's column value, then the word.
  __device__ __forceinline__ void publish(unsigned long long tile, unsigned state_word, const T& value) const {
    const unsigned lane = threadIdx.x & 31u;
    ((state_word & 3u) == scan_tile_prefix ? prefixes : aggregates)[tile * 32 + lane] = value;
    __threadfence();
    __syncwarp();
    if (lane == 0) asm volatile("st.release.gpu.global.u32 [%0], %1;" : : "l"(word(tile)), "r"(state_word) : "memory");
  }
  // Called by all 32 lanes: waits until `tile` has published in `epoch`,
  // then returns its state; `value` receives lane l's column value.
  __device__ __forceinline__ unsigned wait(unsigned long long tile, unsigned epoch, T& value) const {
    unsigned state = scan_tile_not_ready;
    while (true) {
      unsigned w = 0;
      if ((threadIdx.x & 31u) == 0) asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(w) : "l"(word(tile)) : "memory");
      w = __shfl_sync(0xffffffffu, w, 0);
      if ((w >> 2) == epoch && (w & 3u) != scan_tile_not_ready) {
        state = w & 3u;
        break;
      }
    }
    // The relaxed poll saw the release store; the fence makes the values
    // written before it visible.
    __threadfence();
    value = (state == scan_tile_prefix ? prefixes : aggregates)[tile * 32 + (threadIdx.x & 31u)];
    return state;
  }
};

// Warp 0's steps 2 for tile `tile` (chunk `chunk` > 0 of strip `strip` of
// `strips`): returns lane l's column's exclusive prefix. Out of line, as
// the single pass's look-back. The tile's total is published first and
// read back for its inclusive prefix at the end, so it holds no registers
// while the look-back runs (wide elements spilled when it did).
template <class Op, class Status, class T = typename Op::T>
__device__ __forceinline__ T columns_look_back(unsigned long long tile, unsigned long long strips, const T total, Status status) {
  const unsigned epoch = scan_shared_epoch;
  status.publish(tile, (epoch << 2) | scan_tile_aggregate, total);
  // Back along the strip, nearest tile first: each value goes in front.
  T exclusive;
  unsigned long long p = tile - strips;
  for (bool first = true;; p -= strips, first = false) {
    T value;
    const unsigned state = status.wait(p, epoch, value);
    exclusive = first ? value : Op::combine(value, exclusive);
    if (state == scan_tile_prefix) break;
  }
  status.publish(tile, (epoch << 2) | scan_tile_prefix, Op::combine(exclusive, status.aggregates[tile * 32 + (threadIdx.x & 31u)]));
  return exclusive;
}

// One tile's rows of 32 columns (a chunk of a strip), or with Walk every
// chunk of the strip in turn: fold, the columns' prefixes, rescan. Walking,
// warp 0 carries the columns' partials from chunk to chunk in registers;
// looking back, nothing crosses chunks (the two are separate
// instantiations, so that the carry holds no registers while the
// look-back runs: wide elements spilled when it did).
// A column tile's shared memory: each warp's column partials, and the
// tile's column prefixes, from which every warp computes its own. Where
// the prefixes would not fit the 48 KiB of static shared memory (elements
// of 150 to 179 bytes, in tiles of 256 threads), warp 0 instead turns the
// partials into each warp's prefix in place.
template <class Op, class T = typename Op::T>
struct columns_shared {
  static constexpr int warps = Shape<Op>::warps;
  static constexpr bool prefix_slots = (warps + 1) * 32 * sizeof(T) + 64 <= 48 * 1024;
  T partials[warps][32];
  T column_prefix[prefix_slots ? 32 : 1];
};

template <class Op, int Mode, bool Walk, class T = typename Op::T>
__device__ __forceinline__ void columns_chunks(columns_shared<Op>& shared, const T* input, T* output, void* status, T* aggregates,
                                               T* prefixes, const T seed, unsigned long long rows, unsigned long long cols,
                                               unsigned long long tile, unsigned long long strips) {
  constexpr int warps = Shape<Op>::warps;
  constexpr int items = Shape<Op>::column_items_per_thread;
  constexpr int tile_rows = warps * items;
  constexpr bool prefix_slots = columns_shared<Op>::prefix_slots;
  T (&partials)[warps][32] = shared.partials;
  T* const column_prefix = shared.column_prefix;
  const unsigned long long chunks = (rows + tile_rows - 1) / tile_rows;
  const unsigned long long band = tile / strips;
  const unsigned long long strip = tile - band * strips;
  const unsigned lane = threadIdx.x & 31u;
  const unsigned warp = threadIdx.x >> 5;
  const unsigned long long col = strip * 32 + lane;
  const bool in_matrix = col < cols;
  // Row k of scan order is memory row k (rows - 1 - k in reverse), so
  // consecutive scan rows are `step` elements apart.
  const long long step = mirrored_memory<Op>::value ? -(long long)cols : (long long)cols;
  // A thread keeps its items in registers from the fold to the rescan
  // where they take up to 128 bytes; wider ones it reads again for the
  // rescan (from L2: its block read them moments before), so that the
  // look-back's values have the registers (elements of 256 bytes spilled).
  constexpr bool keep_items = sizeof(T) * items <= 128;
  T carry = seed;  // warp 0, walking: the column's partial before the chunk
  const unsigned long long end = Walk ? chunks : band + 1;
  for (unsigned long long chunk = Walk ? 0 : band; chunk < end; ++chunk) {
    // This thread's first scan row, and how many of its items exist; item
    // i is at at[i · step].
    const unsigned long long first = chunk * tile_rows + (unsigned long long)warp * items;
    const int valid = first >= rows ? 0 : rows - first < (unsigned long long)items ? (int)(rows - first) : items;
    const unsigned long long top = mirrored_memory<Op>::value ? rows - 1 - (first < rows ? first : 0) : first;
    const T* at = input + top * cols + col;
    const auto item = [&](int i) -> T { return in_matrix && i < valid ? at[i * step] : Op::identity(); };
    T x[keep_items ? items : 1];
    T partial = item(0);
    if constexpr (keep_items) x[0] = partial;
#pragma unroll
    for (int i = 1; i < items; ++i) {
      const T next = item(i);
      if constexpr (keep_items) x[i] = next;
      partial = Op::combine(partial, next);
    }
    partials[warp][lane] = partial;
    __syncthreads();
    if (warp == 0) {
      T total = partials[0][lane];
#pragma unroll
      for (int w = 1; w < warps; ++w) total = Op::combine(total, partials[w][lane]);
      T prefix = carry;
      if constexpr (Walk) {
        carry = Op::combine(carry, total);
      } else {
        const column_status<T, Shape<Op>::tile_status_bytes, Shape<Op>::tile_status_stride> tile_status{status, aggregates, prefixes};
        if (chunk == 0) {
          tile_status.publish(tile, (scan_shared_epoch << 2) | scan_tile_prefix, Op::combine(seed, total));
        } else {
          prefix = columns_look_back<Op>(tile, strips, total, tile_status);
        }
      }
      if constexpr (prefix_slots) {
        column_prefix[lane] = prefix;
      } else {
        // Warp w's partial becomes the column's partial before its rows.
        for (int w = 0; w < warps; ++w) {
          const T p = partials[w][lane];
          partials[w][lane] = prefix;
          prefix = Op::combine(prefix, p);
        }
      }
    }
    __syncthreads();
    T running;
    if constexpr (prefix_slots) {
      running = column_prefix[lane];
      for (int w = 0; w < (int)warp; ++w) running = Op::combine(running, partials[w][lane]);
    } else {
      running = partials[warp][lane];
    }
    if (in_matrix) {
      T* const out = output + top * cols + col;
#pragma unroll
      for (int i = 0; i < items; ++i) {
        if (i < valid) {
          T next;
          if constexpr (keep_items) {
            next = Op::combine(running, x[i]);
          } else {
            next = Op::combine(running, item(i));
          }
          out[i * step] = Mode == scan_inclusive ? next : running;
          running = next;
        }
      }
    }
    // The next chunk overwrites the partials.
    if (Walk) __syncthreads();
  }
}

template <class Op, int Mode, class T = typename Op::T>
__device__ __forceinline__ void scan_columns(const T* input, T* output, void* status, T* aggregates, T* prefixes, scan_launch_state* launch,
                                             const T seed, unsigned long long rows, unsigned long long cols, int walk) {
  constexpr int tile_rows = Shape<Op>::warps * Shape<Op>::column_items_per_thread;
  const unsigned long long strips = (cols + 31) / 32;
  const unsigned long long chunks = (rows + tile_rows - 1) / tile_rows;
  // Walking, a block scans its strip's chunks one after the other with
  // the carry in registers, and nothing waits on another block.
  const unsigned long long tiles = strips * (walk ? 1 : chunks);
  const unsigned long long tile = scan_single_pass_take_tile(launch, tiles);
  if (tile == scan_no_tile) return;
  __shared__ columns_shared<Op> shared;
  if (walk) {
    columns_chunks<Op, Mode, true>(shared, input, output, status, aggregates, prefixes, seed, rows, cols, tile, strips);
  } else {
    columns_chunks<Op, Mode, false>(shared, input, output, status, aggregates, prefixes, seed, rows, cols, tile, strips);
  }
  if (tile == 0) scan_launch_sweep<Shape<Op>::tile_status_bytes, Shape<Op>::tile_status_stride>(status, launch, scan_shared_epoch, (int)threadIdx.x, (int)blockDim.x, tiles);
}

}  // namespace gpu_scan
