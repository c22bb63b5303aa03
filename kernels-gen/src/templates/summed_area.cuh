// ---- Two-dimensional scans of commutative operators, in tiles ----
// A summed-area table out[r][c] combines the rectangle of rows 0..=r and
// columns 0..=c. Scanning the rows and then the columns reads and writes
// the matrix twice. When the operator is commutative, the rectangle's
// elements may be combined in any order, and the matrix can be cut into
// tiles of `band` rows × block_threads columns (tile (I, J) holds rows
// [I·band, (I+1)·band) and columns [J·W, (J+1)·W)): for r, c in tile (I, J),
//   out[r][c] = corner(I, J)                      everything above and left of the tile
//             ∘ Σ_{I' < I} Σ_{c0 ≤ c' ≤ c} x      the columns of the tile, above it
//             ∘ Σ_{r0 ≤ r' ≤ r} left(r')          each row of the tile, left of it
//             ∘ Σ_{r0 ≤ r' ≤ r, c0 ≤ c' ≤ c} x    the tile's own rectangle
// (the last three are tile-local scans). Three kernels (Nehab et al.'s
// summed-area tables in tiles, for any commutative monoid):
//  1. area_tile_totals reads the matrix once and writes each tile's row
//     totals (band values), column totals (W values) and total;
//  2. area_carries scans those small arrays in place: each row's totals
//     across the tiles to its left (left(r)), each column's down the
//     bands above (above(c)), and the tiles' totals into every tile's
//     corner, the initial value in front;
//  3. area_finish reads the matrix again and writes the table: a thread
//     owns a column of its tile and walks down the band, a chunk of rows at
//     a time, each row scanned across the block (staged through shared
//     memory, area_stage; a warp scan per row for elements with few items
//     per thread), its column's running value carried in a register from
//     the tile's top edge.
// Two reads and one write of the matrix, against two of each for rows then
// columns. An exclusive table's out[r][c] is the inclusive one's at
// [r - 1][c - 1]: each thread writes its inclusive value one row down and
// one column right (into other tiles at their edges, so out of place
// only), and the first row and column get the initial value (tile
// (0, 0)'s corner).
// Coordinates are in scan order; with `reverse` scan row r and column c
// are memory row rows - 1 - r and column cols - 1 - c, so the rectangle
// runs to the last row and column (commutative: the mirrored order
// combines the same elements).
// The small arrays are laid out for coalesced loads in area_carries, one
// thread per row or column: row totals column-tile-major (row_totals[J ·
// rows + r]), column totals band-major (column_totals[I · cols + c]), tile
// totals band-major (tile_totals[I · col_tiles + J]).
namespace gpu_scan {

template <class Op>
struct area_tiling {
  static constexpr int threads = Shape<Op>::block_threads;
  static constexpr int warps = Shape<Op>::warps;
  static constexpr int items = Shape<Op>::column_items_per_thread;
  unsigned long long rows, cols, band, col_tiles, bands, band_index, col_tile, r0, r1;
  bool reverse;
  __device__ __forceinline__ area_tiling(unsigned long long rows_, unsigned long long cols_, unsigned long long band_, int reverse_,
                                         unsigned long long tile)
      : rows(rows_), cols(cols_), band(band_), reverse(reverse_ != 0) {
    col_tiles = (cols + threads - 1) / threads;
    bands = (rows + band - 1) / band;
    band_index = tile / col_tiles;
    col_tile = tile - band_index * col_tiles;
    r0 = band_index * band;
    r1 = r0 + band < rows ? r0 + band : rows;
  }
  // This thread's column, in scan order.
  __device__ __forceinline__ unsigned long long column() const { return col_tile * threads + threadIdx.x; }
  // The memory index of scan-order element (r, c).
  __device__ __forceinline__ unsigned long long at(unsigned long long r, unsigned long long c) const {
    return reverse ? (rows - 1 - r) * cols + (cols - 1 - c) : r * cols + c;
  }
};

// Where a chunk of rows is staged through shared memory to be scanned
// along its rows (the "staged" forms of passes 1 and 3). A thread loads
// its column's `rows` elements (coalesced across the block), writes them
// to the chunk in shared memory, and then scans one segment of `rows`
// consecutive elements of one row: a row is `lanes_per_row` segments, whose
// totals are scanned across those lanes of the warp with shuffles. So a
// row costs about two combines an element and log2(lanes_per_row) shuffles
// a segment, where a warp scan per row costs five of each an element.
// One padding slot every 32 elements keeps both the column writes and the
// segment reads free of bank conflicts. Elements with fewer than 8 items
// per thread, or chunks too large for shared memory, take the warp scans.
template <class Op, class T = typename Op::T>
struct area_stage {
  static constexpr int threads = Shape<Op>::block_threads;
  static constexpr int items = Shape<Op>::column_items_per_thread;
  static constexpr int rows = items >= 16 ? 16 : items >= 8 ? 8 : 0;
  static constexpr int lanes_per_row = rows ? threads / rows : 0;
  static constexpr int slots = rows * threads + rows * threads / 32;
  static constexpr bool fits_twice = 2 * (slots * (int)sizeof(T) + rows * (int)sizeof(T)) <= 40 * 1024;
  static constexpr bool staged = rows != 0 && threads % rows == 0 && lanes_per_row <= 32 && 32 % lanes_per_row == 0 &&
                                 (slots + rows) * (int)sizeof(T) <= 40 * 1024;
  // Double-buffered where two chunks fit: one barrier fewer a chunk.
  static constexpr int buffers = fits_twice ? 2 : 1;
  // Blocks an SM should hold (the kernels' launch bounds): for staged
  // elements of one 4-byte scalar the tuning table's number (three on
  // sm_90, whose loads in flight then cover a DRAM round trip), one for
  // others (a struct of three bytes spilled on sm_90 under three, a `u8`
  // sum on sm_75).
  static constexpr int min_blocks = staged && sizeof(T) == 4 && alignof(T) == 4 ? Shape<Op>::area_scalar_min_blocks : 1;
  static __device__ __forceinline__ int slot(int i) { return i + (i >> 5); }
  // Inclusive scan of `value` across each group of lanes_per_row lanes.
  static __device__ __forceinline__ T group_inclusive(T value) {
    const unsigned lane = (threadIdx.x & 31u) % (unsigned)(lanes_per_row ? lanes_per_row : 1);
#pragma unroll
    for (int offset = 1; offset < lanes_per_row; offset <<= 1) {
      const T earlier = scan_shfl_up(value, offset);
      if (lane >= (unsigned)offset) value = Op::combine(earlier, value);
    }
    return value;
  }
};

// The tile's total, from each thread's column total: the warps' totals
// through `scratch` (a slot per warp; the caller's barrier guards it).
template <class Op, class T = typename Op::T>
__device__ __forceinline__ void area_write_tile_total(const area_tiling<Op>& t, const T column_total, T* scratch, T* tile_totals) {
  const T across = warp_inclusive_scan<Op>(column_total);
  if ((threadIdx.x & 31u) == 31) scratch[threadIdx.x >> 5] = across;
  __syncthreads();
  if (threadIdx.x == 0) {
    T total = scratch[0];
    for (int w = 1; w < area_tiling<Op>::warps; ++w) total = Op::combine(total, scratch[w]);
    tile_totals[t.band_index * t.col_tiles + t.col_tile] = total;
  }
}

// Pass 1 with a warp scan per row (elements with few items per thread).
template <class Op, class T = typename Op::T>
__device__ __forceinline__ void area_tile_totals_warps(const T* input, T* row_totals, T* column_totals, T* tile_totals,
                                                 unsigned long long rows, unsigned long long cols, unsigned long long band,
                                                 int reverse) {
  using Tiling = area_tiling<Op>;
  constexpr int warps = Tiling::warps, items = Tiling::items;
  const Tiling t(rows, cols, band, reverse, blockIdx.x);
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const unsigned long long c = t.column();
  const bool in_matrix = c < cols;
  // Each chunk's warp totals per row, double-buffered: one barrier a chunk.
  __shared__ T warp_totals[2][items][warps];
  T column_total = Op::identity();
  int buffer = 0;
  for (unsigned long long r = t.r0; r < t.r1; r += items, buffer ^= 1) {
    T x[items];
#pragma unroll
    for (int k = 0; k < items; ++k) x[k] = in_matrix && r + k < t.r1 ? input[t.at(r + k, c)] : Op::identity();
#pragma unroll
    for (int k = 0; k < items; ++k) {
      column_total = Op::combine(column_total, x[k]);
      const T row = warp_inclusive_scan<Op>(x[k]);
      if (lane == 31) warp_totals[buffer][k][warp] = row;
    }
    __syncthreads();
    if (threadIdx.x < (unsigned)items && r + threadIdx.x < t.r1) {
      T row = warp_totals[buffer][threadIdx.x][0];
      for (int w = 1; w < warps; ++w) row = Op::combine(row, warp_totals[buffer][threadIdx.x][w]);
      row_totals[t.col_tile * rows + r + threadIdx.x] = row;
    }
  }
  if (in_matrix) column_totals[t.band_index * cols + c] = column_total;
  __syncthreads();
  area_write_tile_total<Op>(t, column_total, &warp_totals[0][0][0], tile_totals);
}

// Pass 1, staged (area_stage): tile (blockIdx.x)'s row totals, column
// totals and total. The next chunk's loads are issued before this chunk's
// rows are summed.
template <class Op, class T = typename Op::T>
__device__ __forceinline__ void area_tile_totals_staged(const T* input, T* row_totals, T* column_totals, T* tile_totals,
                                                        unsigned long long rows, unsigned long long cols,
                                                        unsigned long long band, int reverse) {
  using Stage = area_stage<Op>;
  constexpr int R = Stage::rows, lanes = Stage::lanes_per_row;
  const area_tiling<Op> t(rows, cols, band, reverse, blockIdx.x);
  const unsigned long long c = t.column();
  const bool in_matrix = c < cols;
  const long long step = t.reverse ? -(long long)cols : (long long)cols;
  __shared__ T chunk[Stage::buffers][Stage::slots];
  const int row = threadIdx.x / lanes, segment = threadIdx.x % lanes;
  T x[R];
  const auto load = [&](unsigned long long r) {
    const T* at = input + t.at(r < t.r1 ? r : t.r0, in_matrix ? c : 0);
#pragma unroll
    for (int k = 0; k < R; ++k) x[k] = in_matrix && r + k < t.r1 ? at[k * step] : Op::identity();
  };
  load(t.r0);
  T column_total = Op::identity();
  int buffer = 0;
  for (unsigned long long r = t.r0; r < t.r1; r += R) {
    T* const tile = chunk[buffer];
#pragma unroll
    for (int k = 0; k < R; ++k) {
      tile[Stage::slot(k * Stage::threads + threadIdx.x)] = x[k];
      column_total = Op::combine(column_total, x[k]);
    }
    load(r + R);
    __syncthreads();
    const int base = row * Stage::threads + segment * R;
    T sum = tile[Stage::slot(base)];
#pragma unroll
    for (int i = 1; i < R; ++i) sum = Op::combine(sum, tile[Stage::slot(base + i)]);
    sum = Stage::group_inclusive(sum);
    if (segment == lanes - 1 && r + row < t.r1) row_totals[t.col_tile * rows + r + row] = sum;
    if (Stage::buffers == 1) __syncthreads();
    buffer = Stage::buffers == 1 ? 0 : buffer ^ 1;
  }
  if (in_matrix) column_totals[t.band_index * cols + c] = column_total;
  __syncthreads();
  area_write_tile_total<Op>(t, column_total, chunk[0], tile_totals);
}

// Pass 1: tile (blockIdx.x)'s row totals, column totals and total.
template <class Op, class T = typename Op::T>
__device__ __forceinline__ void area_tile_totals(const T* input, T* row_totals, T* column_totals, T* tile_totals,
                                                 unsigned long long rows, unsigned long long cols, unsigned long long band,
                                                 int reverse) {
  if constexpr (area_stage<Op>::staged) {
    area_tile_totals_staged<Op>(input, row_totals, column_totals, tile_totals, rows, cols, band, reverse);
  } else {
    area_tile_totals_warps<Op>(input, row_totals, column_totals, tile_totals, rows, cols, band, reverse);
  }
}

// values[0], values[stride], … values[(count - 1) · stride] become their
// exclusive scan behind `running`, in place; eight loads in flight at a
// time (the loop is a chain of combines, not of loads).
template <class Op, class T = typename Op::T>
__device__ __forceinline__ void area_exclusive_in_place(T* values, unsigned long long count, unsigned long long stride, T running) {
  constexpr int batch = 8;
  for (unsigned long long k0 = 0; k0 < count; k0 += batch) {
    T v[batch];
#pragma unroll
    for (int u = 0; u < batch; ++u) v[u] = k0 + u < count ? values[(k0 + u) * stride] : Op::identity();
#pragma unroll
    for (int u = 0; u < batch; ++u) {
      if (k0 + u < count) values[(k0 + u) * stride] = running;
      running = Op::combine(running, v[u]);
    }
  }
}

// Pass 2: block 0 turns the tile totals into corners; the other blocks,
// one thread per row then per column, turn row totals into left(r) and
// column totals into above(c).
template <class Op, class T = typename Op::T>
__device__ __forceinline__ void area_carries(T* row_totals, T* column_totals, T* tile_totals, unsigned long long rows,
                                             unsigned long long cols, unsigned long long band, const T seed) {
  using Tiling = area_tiling<Op>;
  const unsigned long long col_tiles = (cols + Tiling::threads - 1) / Tiling::threads;
  const unsigned long long bands = (rows + band - 1) / band;
  if (blockIdx.x == 0) {
    // Down the bands (each tile column), then across each band from the
    // seed: corner(I, J) = seed ∘ the totals of tiles (I' < I, J' < J).
    for (unsigned long long j = threadIdx.x; j < col_tiles; j += blockDim.x)
      area_exclusive_in_place<Op>(tile_totals + j, bands, col_tiles, Op::identity());
    __syncthreads();
    for (unsigned long long i = threadIdx.x; i < bands; i += blockDim.x)
      area_exclusive_in_place<Op>(tile_totals + i * col_tiles, col_tiles, 1, seed);
    return;
  }
  const unsigned long long stride = (unsigned long long)(gridDim.x - 1) * blockDim.x;
  for (unsigned long long job = (blockIdx.x - 1ull) * blockDim.x + threadIdx.x; job < rows + cols; job += stride) {
    if (job < rows) {
      area_exclusive_in_place<Op>(row_totals + job, col_tiles, rows, Op::identity());
    } else {
      area_exclusive_in_place<Op>(column_totals + (job - rows), bands, cols, Op::identity());
    }
  }
}

// The column's value at the tile's top edge: the tile's corner, then the
// columns of this tile up to this thread's, above the band (`scratch`: a
// slot per warp).
template <class Op, class T = typename Op::T>
__device__ __forceinline__ T area_top_edge(const area_tiling<Op>& t, const T* above, const T* corners, T* scratch) {
  const unsigned long long c = t.column();
  const T up = c < t.cols ? above[t.band_index * t.cols + c] : Op::identity();
  const T up_scan = warp_inclusive_scan<Op>(up);
  if ((threadIdx.x & 31u) == 31) scratch[threadIdx.x >> 5] = up_scan;
  __syncthreads();
  T running = corners[t.band_index * t.col_tiles + t.col_tile];
  for (int w = 0; w < (int)(threadIdx.x >> 5); ++w) running = Op::combine(running, scratch[w]);
  return Op::combine(running, up_scan);
}

// Writes an exclusive table's share of the inclusive value at scan-order
// (r, c): at (r + 1, c + 1) where that lies in the matrix, and the initial
// value `seed` at (r, 0) for column 0 and at (0, c + 1) for row 0, so that
// every element is written once.
template <class Op, class T = typename Op::T>
__device__ __forceinline__ void area_write_exclusive(const area_tiling<Op>& t, T* output, unsigned long long r, unsigned long long c,
                                                     const T& inclusive, const T& seed) {
  if (r + 1 < t.rows && c + 1 < t.cols) output[t.at(r + 1, c + 1)] = inclusive;
  if (c == 0) output[t.at(r, 0)] = seed;
  if (r == 0 && c + 1 < t.cols) output[t.at(0, c + 1)] = seed;
}

// Pass 3 with a warp scan per row (elements with few items per thread).
template <class Op, class T = typename Op::T>
__device__ __forceinline__ void area_finish_warps(const T* input, T* output, const T* left, const T* above, const T* corners,
                                            unsigned long long rows, unsigned long long cols, unsigned long long band, int reverse,
                                            int exclusive) {
  using Tiling = area_tiling<Op>;
  constexpr int warps = Tiling::warps, items = Tiling::items;
  const Tiling t(rows, cols, band, reverse, blockIdx.x);
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const unsigned long long c = t.column();
  const bool in_matrix = c < cols;
  __shared__ T warp_totals[2][items][warps];
  __shared__ T row_left[2][items];
  // Buffer 1 is first used by the second chunk, after the first's barrier.
  T running = area_top_edge<Op>(t, above, corners, &warp_totals[1][0][0]);
  int buffer = 0;
  for (unsigned long long r = t.r0; r < t.r1; r += items, buffer ^= 1) {
    // Load the chunk's rows, scan each across the warp, and post the
    // warps' totals and the rows' left carries; one barrier; then each
    // thread adds the warps before its own and walks down its column.
    T x[items];
#pragma unroll
    for (int k = 0; k < items; ++k) x[k] = in_matrix && r + k < t.r1 ? input[t.at(r + k, c)] : Op::identity();
    if (threadIdx.x < (unsigned)items && r + threadIdx.x < t.r1) row_left[buffer][threadIdx.x] = left[t.col_tile * rows + r + threadIdx.x];
#pragma unroll
    for (int k = 0; k < items; ++k) {
      x[k] = warp_inclusive_scan<Op>(x[k]);
      if (lane == 31) warp_totals[buffer][k][warp] = x[k];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < items; ++k) {
      if (r + k < t.r1) {
        T row = row_left[buffer][k];
        for (int w = 0; w < (int)warp; ++w) row = Op::combine(row, warp_totals[buffer][k][w]);
        running = Op::combine(running, Op::combine(row, x[k]));
        if (in_matrix) {
          if (exclusive) {
            area_write_exclusive<Op>(t, output, r + k, c, running, corners[0]);
          } else {
            output[t.at(r + k, c)] = running;
          }
        }
      }
    }
  }
}

// Pass 3, staged (area_stage): tile (blockIdx.x) of the table. Each chunk
// is scanned along its rows in shared memory, each row behind its left
// carry; then each thread walks down its column. The next chunk's loads
// are issued before this chunk is scanned.
template <class Op, class T = typename Op::T>
__device__ __forceinline__ void area_finish_staged(const T* input, T* output, const T* left, const T* above, const T* corners,
                                                   unsigned long long rows, unsigned long long cols, unsigned long long band,
                                                   int reverse, int exclusive) {
  using Stage = area_stage<Op>;
  constexpr int R = Stage::rows, lanes = Stage::lanes_per_row;
  const area_tiling<Op> t(rows, cols, band, reverse, blockIdx.x);
  const unsigned long long c = t.column();
  const bool in_matrix = c < cols;
  const long long step = t.reverse ? -(long long)cols : (long long)cols;
  __shared__ T chunk[Stage::buffers][Stage::slots];
  __shared__ T row_left[Stage::buffers][R];
  const int row = threadIdx.x / lanes, segment = threadIdx.x % lanes;
  T running = area_top_edge<Op>(t, above, corners, chunk[0]);
  __syncthreads();  // chunk[0] is the first chunk's
  T x[R];
  const auto load = [&](unsigned long long r) {
    const T* at = input + t.at(r < t.r1 ? r : t.r0, in_matrix ? c : 0);
#pragma unroll
    for (int k = 0; k < R; ++k) x[k] = in_matrix && r + k < t.r1 ? at[k * step] : Op::identity();
  };
  load(t.r0);
  int buffer = 0;
  for (unsigned long long r = t.r0; r < t.r1; r += R) {
    T* const tile = chunk[buffer];
#pragma unroll
    for (int k = 0; k < R; ++k) tile[Stage::slot(k * Stage::threads + threadIdx.x)] = x[k];
    if (threadIdx.x < (unsigned)R)
      row_left[buffer][threadIdx.x] = r + threadIdx.x < t.r1 ? left[t.col_tile * rows + r + threadIdx.x] : Op::identity();
    load(r + R);
    __syncthreads();
    // This thread's segment of its row, behind the segments before it and
    // the row's carry from the tiles on its left: its total, the totals'
    // scan across the row's lanes, then the segment again from shared
    // memory (read twice rather than held: the registers go to the next
    // chunk's loads).
    const int base = row * Stage::threads + segment * R;
    T sum = tile[Stage::slot(base)];
#pragma unroll
    for (int i = 1; i < R; ++i) sum = Op::combine(sum, tile[Stage::slot(base + i)]);
    const T inclusive = Stage::group_inclusive(sum);
    const T earlier = scan_shfl_up(inclusive, 1);
    T prefix = segment == 0 ? row_left[buffer][row] : Op::combine(row_left[buffer][row], earlier);
#pragma unroll
    for (int i = 0; i < R; ++i) {
      prefix = Op::combine(prefix, tile[Stage::slot(base + i)]);
      tile[Stage::slot(base + i)] = prefix;
    }
    __syncthreads();
    // Down the column.
    T* const out = output + t.at(r, in_matrix ? c : 0);
#pragma unroll
    for (int k = 0; k < R; ++k) {
      if (r + k < t.r1) {
        running = Op::combine(running, tile[Stage::slot(k * Stage::threads + threadIdx.x)]);
        if (in_matrix) {
          if (exclusive) {
            area_write_exclusive<Op>(t, output, r + k, c, running, corners[0]);
          } else {
            out[k * step] = running;
          }
        }
      }
    }
    if (Stage::buffers == 1) __syncthreads();
    buffer = Stage::buffers == 1 ? 0 : buffer ^ 1;
  }
}

// Pass 3: tile (blockIdx.x) of the table, inclusive or (out of place)
// exclusive. `left`, `above` and `corners` are pass 2's.
template <class Op, class T = typename Op::T>
__device__ __forceinline__ void area_finish(const T* input, T* output, const T* left, const T* above, const T* corners,
                                            unsigned long long rows, unsigned long long cols, unsigned long long band, int reverse,
                                            int exclusive) {
  if constexpr (area_stage<Op>::staged) {
    area_finish_staged<Op>(input, output, left, above, corners, rows, cols, band, reverse, exclusive);
  } else {
    area_finish_warps<Op>(input, output, left, above, corners, rows, cols, band, reverse, exclusive);
  }
}

}  // namespace gpu_scan
