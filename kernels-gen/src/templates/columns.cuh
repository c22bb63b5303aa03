// ---- Columns: a row-major matrix scanned down its columns ----
// `rows` × `cols` elements, row-major; column c is the sequence
// in[c], in[cols + c], in[2·cols + c], … (torch.cumsum(x, dim=0)). Reading
// one column at a time would touch a cache line per element, so each warp
// scans 32 adjacent columns at once: lane l owns column 32·s + l of strip s,
// and each of a warp's loads (one row of the strip) is one contiguous
// 32-element run.
//
// A matrix of 16 columns or fewer (elements of up to 8 bytes:
// Shape<Op>::column_rows_packed) packs rows instead: a row takes
// `row_lanes` lanes (the power of two at or above its width,
// kernels_gen::column_row_lanes), and a warp's groups of lanes hold
// 32 / row_lanes consecutive rows, so that each load reads that many rows
// at once (16 `f32` columns: two runs of 64 bytes, whole sectors, not
// one). Group g holds the warp's rows [g · Items, (g + 1) · Items), so a
// thread folds and rescans consecutive rows as in a strip, and only its
// partial is scanned across the groups (shuffles `row_lanes` lanes apart).
// (Group g holding every groups-th row, each load one contiguous run,
// needed a scan across the groups for every item: 80 to 116 registers.)
//
// A tile is the strip's rows [tile_rows · chunk, tile_rows · (chunk + 1)),
// tile_rows = warps × Items × groups (Shape<Op>::column_items_per_thread;
// groups = 1 for a strip of 32 columns): warp w holds Items × groups
// consecutive rows of it, each thread its column's Items elements, in
// registers, or for elements of 4 or 8 bytes (Shape<Op>::column_staged) in
// the tile staged in shared memory by asynchronous copies, which takes
// them out of the registers. The scan runs as the single pass with
// decoupled look-back (single_pass.cuh), per column:
//   1. each thread folds its items; the warps' partials of a column are
//      combined in order through shared memory (the tile's column totals);
//   2. warp 0 publishes the tile's 32 totals, looks back along its strip
//      (tiles chunk - 1, chunk - 2, … of the same strip, all 32 columns at
//      once) to the nearest published inclusive prefix, and publishes its
//      own prefixes: 4-byte elements poll 32 tiles' status words at once
//      (columns_window_look_back), the others one tile a round trip (with
//      their items live across it, the window took 80 to 128 registers);
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
  // The status word of `tile` (relaxed: the caller fences before it reads
  // the values).
  __device__ __forceinline__ unsigned poll(unsigned long long tile) const {
    unsigned w;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(w) : "l"(word(tile)) : "memory");
    return w;
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

// Item `x` of a packed warp scanned across its groups (lanes `row_lanes`
// apart hold one column's consecutive rows): the inclusive combination up
// to this lane's group.
template <class Op, class T = typename Op::T>
__device__ __forceinline__ T columns_group_scan(T x, unsigned lane, unsigned row_lanes) {
  for (unsigned d = row_lanes; d < 32u; d *= 2u) {
    const T up = scan_shfl_up(x, d);
    if (lane >= d) x = Op::combine(up, x);
  }
  return x;
}

// The look-back of staged tiles of 4-byte elements
// (Shape<Op>::column_windowed; their items in shared memory leave it the
// registers): up the strip 32 tiles at a time. Lane j polls the tile j
// chunks above the window's nearest until every one has published; the
// nearest prefix among them ends the walk, and each lane combines its
// column's values of the window's tiles up to it, farthest first, loading
// eight at a time. One tile a round trip, as columns_look_back, a strip's
// look-backs fall behind its tiles when many are in flight (a tile's wait
// grows with the square of the round trip: BENCHMARKS.md).
template <class Op, class Status, class T = typename Op::T>
__device__ __noinline__ T columns_window_look_back(unsigned long long tile, unsigned long long chunk, unsigned long long strips,
                                                      const T total, Status status) {
  constexpr int batch = 8;
  const unsigned epoch = scan_shared_epoch;
  const unsigned lane = threadIdx.x & 31u;
  status.publish(tile, (epoch << 2) | scan_tile_aggregate, total);
  T exclusive;
  unsigned long long nearest = tile - strips;
  // The strip's tiles at or above `nearest`.
  unsigned long long above = chunk;
  for (bool first = true;; first = false, above -= 32, nearest -= 32ull * strips) {
    const int span = above < 32 ? (int)above : 32;
    const bool polls = (int)lane < span;
    const unsigned long long mine = polls ? nearest - (unsigned long long)lane * strips : nearest;
    unsigned state = scan_tile_not_ready;
    while (true) {
      if (polls && state == scan_tile_not_ready) {
        const unsigned w = status.poll(mine);
        if ((w >> 2) == epoch && (w & 3u) != scan_tile_not_ready) state = w & 3u;
      }
      if (__all_sync(0xffffffffu, state != scan_tile_not_ready || !polls)) break;
    }
    // Each lane's relaxed poll saw a release store; its fence and the
    // warp's barrier make the values written before them visible to all.
    __threadfence();
    __syncwarp();
    const unsigned prefix_lanes = __ballot_sync(0xffffffffu, polls && state == scan_tile_prefix);
    const int take = prefix_lanes != 0 ? __ffs(prefix_lanes) : span;
    // The window's values of this lane's column, farthest first.
    const unsigned long long farthest = nearest - (unsigned long long)(take - 1) * strips;
    T window = ((prefix_lanes != 0) ? status.prefixes : status.aggregates)[farthest * 32 + lane];
    const T* at = status.aggregates + (farthest + strips) * 32 + lane;
    int left = take - 1;
    for (; left >= batch; left -= batch) {
      T v[batch];
#pragma unroll
      for (int b = 0; b < batch; ++b) v[b] = at[(unsigned long long)b * strips * 32];
#pragma unroll
      for (int b = 0; b < batch; ++b) window = Op::combine(window, v[b]);
      at += (unsigned long long)batch * strips * 32;
    }
#pragma unroll 1
    for (; left > 0; --left, at += strips * 32) window = Op::combine(window, *at);
    exclusive = first ? window : Op::combine(window, exclusive);
    if (prefix_lanes != 0) break;
  }
  status.publish(tile, (epoch << 2) | scan_tile_prefix, Op::combine(exclusive, status.aggregates[tile * 32 + lane]));
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
// Staged (Shape<Op>::column_staged), the tile itself too: row r of the
// tile, column c of its `row_lanes`, at slot (r + r / Items) · row_lanes + c
// (columns_stage_tile), a row of padding after each thread's Items rows so
// that a packed warp's groups read different banks.
template <class Op, class T = typename Op::T>
struct columns_shared {
  static constexpr int warps = Shape<Op>::warps;
  static constexpr bool prefix_slots = (warps + 1) * 32 * sizeof(T) + 64 <= 48 * 1024;
  static constexpr bool staged = Shape<Op>::column_staged;
  static constexpr int stage_slots = warps * (Shape<Op>::column_items_per_thread + 1) * 32;
  T partials[warps][32];
  T column_prefix[prefix_slots ? 32 : 1];
  T stage[staged ? stage_slots : 1];
};

// Copies one 4-byte word from global to shared memory: asynchronously
// (cp.async, sm_80 and newer), the caller waiting with columns_copy_wait.
__device__ __forceinline__ void columns_copy_word(unsigned* to, const unsigned* from) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" : : "r"((unsigned)__cvta_generic_to_shared(to)), "l"(from) : "memory");
#else
  *to = *from;
#endif
}
__device__ __forceinline__ void columns_copy_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;" : : : "memory");
#endif
  __syncthreads();
}

// Stages a tile: its scan rows [row0, row0 + tile rows) of columns [col0,
// col0 + row_lanes), those inside the matrix. Thread t copies the elements
// of one column (t mod row_lanes: block_threads is a multiple of it), every
// block_threads / row_lanes-th row, word by word, so that a warp's copies
// are consecutive elements in memory and in shared memory; every copy is in
// flight before any is waited for. (Addresses computed per word took over
// 200 registers: one pointer a thread, stepped, takes few.)
template <class Op, class T = typename Op::T>
__device__ __forceinline__ void columns_stage_tile(T* stage, const T* input, unsigned long long rows, unsigned long long cols,
                                                   unsigned long long row0, unsigned long long col0, unsigned row_lanes) {
  constexpr int items = Shape<Op>::column_items_per_thread;
  constexpr int words = (int)(sizeof(T) / 4);
  constexpr int threads = Shape<Op>::block_threads;
  // Each thread's elements: the tile's warps · Items · 32 slots, shared out.
  constexpr int copies = Shape<Op>::warps * items * 32 / threads;
  static_assert(sizeof(T) % 4 == 0 && copies * threads == Shape<Op>::warps * items * 32, "a staged tile is whole words, evenly shared");
  const unsigned lane_shift = (unsigned)__ffs((int)row_lanes) - 1u;
  const unsigned c = threadIdx.x & (row_lanes - 1u);
  const unsigned row_step = (unsigned)threads >> lane_shift;
  unsigned r = threadIdx.x >> lane_shift;
  const bool in_matrix = col0 + c < cols;
  // The element of row r (scan order), stepped by row_step rows.
  const long long step = (mirrored_memory<Op>::value ? -(long long)cols : (long long)cols) * (long long)row_step;
  const unsigned long long first_row = row0 + r;
  const unsigned* from = (const unsigned*)(input + (mirrored_memory<Op>::value ? (first_row < rows ? rows - 1 - first_row : 0ull) : first_row) * cols + col0 + c);
#pragma unroll
  for (int j = 0; j < copies; ++j, r += row_step, from += step * words) {
    if (in_matrix && row0 + r < rows) {
      unsigned* to = (unsigned*)(stage + (r + r / items) * row_lanes + c);
#pragma unroll
      for (int k = 0; k < words; ++k) columns_copy_word(to + k, from + k);
    }
  }
  columns_copy_wait();
}

template <class Op, int Mode, bool Walk, class T = typename Op::T>
__device__ __forceinline__ void columns_chunks(columns_shared<Op>& shared, const T* input, T* output, void* status, T* aggregates,
                                               T* prefixes, const T seed, unsigned long long rows, unsigned long long cols,
                                               unsigned row_lanes, unsigned long long tile, unsigned long long strips) {
  constexpr int warps = Shape<Op>::warps;
  constexpr int items = Shape<Op>::column_items_per_thread;
  constexpr bool prefix_slots = columns_shared<Op>::prefix_slots;
  T (&partials)[warps][32] = shared.partials;
  T* const column_prefix = shared.column_prefix;
  const unsigned lane = threadIdx.x & 31u;
  const unsigned warp = threadIdx.x >> 5;
  // Packed (`row_lanes` < 32), a warp's lanes form groups of `row_lanes`
  // (2 to 32 groups), group g holding rows [g · items, (g + 1) · items) of
  // the warp's: this lane's group and its column within the strip. (A
  // separate instantiation for packed tiles took 80 registers where this
  // takes 64: four blocks an SM, not three.)
  constexpr bool packs = Shape<Op>::column_rows_packed && !Walk;
  const bool packed = packs && row_lanes < 32u;
  const unsigned groups = packs ? 32u / row_lanes : 1u;
  const unsigned group = packs ? lane / row_lanes : 0u;
  const unsigned column = packs ? lane & (row_lanes - 1u) : lane;
  const unsigned long long warp_rows = (unsigned long long)items * groups;
  const unsigned long long tile_rows = warps * warp_rows;
  const unsigned long long chunks = (rows + tile_rows - 1) / tile_rows;
  const unsigned long long band = tile / strips;
  const unsigned long long strip = tile - band * strips;
  const unsigned long long col = strip * 32 + column;
  const bool in_matrix = col < cols;
  // Row k of scan order is memory row k (rows - 1 - k in reverse), so
  // consecutive scan rows are `step` elements apart.
  const long long step = mirrored_memory<Op>::value ? -(long long)cols : (long long)cols;
  // Staged, a thread reads its items from the staged tile for the fold
  // and again for the rescan. Otherwise it keeps them in registers from
  // the fold to the rescan where they take up to 128 bytes; wider ones it
  // reads again for the rescan (from L2: its block read them moments
  // before), so that the look-back's values have the registers (elements
  // of 256 bytes spilled).
  constexpr bool staged = columns_shared<Op>::staged;
  constexpr bool keep_items = !staged && sizeof(T) * items <= 128;
  // Staged, this thread's item i is mine[i · row_lanes]
  // (columns_stage_slot's row of the thread's first item, warp · groups +
  // group blocks of Items + 1 rows in).
  const T* const mine = shared.stage + (unsigned long long)(warp * groups + group) * (items + 1) * row_lanes + column;
  T carry = seed;  // warp 0, walking: the column's partial before the chunk
  const unsigned long long end = Walk ? chunks : band + 1;
  for (unsigned long long chunk = Walk ? 0 : band; chunk < end; ++chunk) {
    // This thread's first scan row, and how many of its items exist; item
    // i is at at[i · step].
    const unsigned long long first = chunk * tile_rows + warp * warp_rows + group * items;
    const int valid = first >= rows ? 0 : rows - first < (unsigned long long)items ? (int)(rows - first) : items;
    const unsigned long long top = mirrored_memory<Op>::value ? rows - 1 - (first < rows ? first : 0) : first;
    const T* at = input + top * cols + col;
    if constexpr (staged) {
      columns_stage_tile<Op>(shared.stage, input, rows, cols, chunk * tile_rows, strip * 32, row_lanes);
    }
    const auto item = [&](int i) -> T {
      if constexpr (staged) return in_matrix && i < valid ? mine[i * row_lanes] : Op::identity();
      return in_matrix && i < valid ? at[i * step] : Op::identity();
    };
    T x[keep_items ? items : 1];
    T partial = item(0);
    if constexpr (keep_items) x[0] = partial;
#pragma unroll
    for (int i = 1; i < items; ++i) {
      const T next = item(i);
      if constexpr (keep_items) x[i] = next;
      partial = Op::combine(partial, next);
    }
    // Packed: the groups' partials of a column combined in order, the
    // warp's in the last group, the ones before this group's rows kept.
    T group_before = partial;
    if constexpr (packs) {
      if (packed) {
        const T through = columns_group_scan<Op>(partial, lane, row_lanes);
        group_before = scan_shfl_up(through, row_lanes);
        partial = scan_shfl_idx(through, (int)(32u - row_lanes + column));
      }
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
          if constexpr (Shape<Op>::column_windowed) {
            prefix = columns_window_look_back<Op>(tile, chunk, strips, total, tile_status);
          } else {
            prefix = columns_look_back<Op>(tile, strips, total, tile_status);
          }
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
    if constexpr (packs) {
      if (group > 0) running = Op::combine(running, group_before);
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
                                             const T seed, unsigned long long rows, unsigned long long cols,
                                             unsigned long long row_lanes, int walk) {
  // A warp's rows at once: kernels_gen::columns_tiles's arithmetic. A
  // block walking down its strip takes rows one a warp (the host walks
  // only matrices of full strips).
  const bool packed = Shape<Op>::column_rows_packed && !walk && row_lanes < 32;
  const unsigned groups = packed ? 32u / (unsigned)row_lanes : 1u;
  const unsigned long long tile_rows = (unsigned long long)Shape<Op>::warps * Shape<Op>::column_items_per_thread * groups;
  const unsigned long long strips = (cols + 31) / 32;
  const unsigned long long chunks = (rows + tile_rows - 1) / tile_rows;
  // Walking, a block scans its strip's chunks one after the other with
  // the carry in registers, and nothing waits on another block.
  const unsigned long long tiles = strips * (walk ? 1 : chunks);
  const unsigned long long tile = scan_single_pass_take_tile(launch, tiles);
  if (tile == scan_no_tile) return;
  __shared__ columns_shared<Op> shared;
  if (walk) {
    columns_chunks<Op, Mode, true>(shared, input, output, status, aggregates, prefixes, seed, rows, cols, 32u, tile, strips);
  } else {
    columns_chunks<Op, Mode, false>(shared, input, output, status, aggregates, prefixes, seed, rows, cols, packed ? (unsigned)row_lanes : 32u, tile, strips);
  }
  if (tile == 0) scan_launch_sweep<Shape<Op>::tile_status_bytes, Shape<Op>::tile_status_stride>(status, launch, scan_shared_epoch, (int)threadIdx.x, (int)blockDim.x, tiles);
}

}  // namespace gpu_scan
