// ---- Sparse matrix–vector products y = A·x over CSR ----
// The CPU's scan_core::spmv::csr_matvec computes the same products. Every
// kernel takes one spmv_params (printed from kernels_gen::spmv, its size
// asserted).
//
// The work is the merge of the rows' ends (row_ptr[1..]) with the entries
// (merge path): at a point (r, e) of it, the next item is row r's end when
// all of row r's entries come before e (row_ptr[r + 1] <= e), else entry e.
// Tile t (a block) takes the items on diagonals t·K .. (t+1)·K (K merge
// items); spmv_partition finds each tile's first row once, when a matrix
// is checked. A tile sums its products by rows: each thread walks its K/T
// items, writing the sum of every row that ends there and keeping the sum
// after its last row end (its carry-out); a segmented scan of the carries
// over the threads gives each thread's first row the sums before it in the
// tile. Each tile writes its carry-out and, for a first row begun in
// earlier tiles, the tile's part of its sum; then spmv_fixup adds the
// earlier tiles' parts, read back over their carry-outs until a tile with
// a row end: always the same tiles, summed in the same order, so the
// result does not depend on timing, and no tile waits for another.
namespace gpu_scan {

// The row of the split of diagonal `diag`: the number of row ends before
// it (the entries before it are diag minus that).
template <class O>
__device__ __forceinline__ unsigned long long spmv_merge_search(const O* ends, unsigned long long rows,
                                                                unsigned long long entries,
                                                                unsigned long long diag) {
  unsigned long long lo = diag > entries ? diag - entries : 0;
  unsigned long long hi = diag < rows ? diag : rows;
  while (lo < hi) {
    const unsigned long long mid = (lo + hi) >> 1;
    if ((unsigned long long)__ldg(ends + mid) <= diag - mid - 1) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// The first entry whose column is not below the matrix's columns, to *bad
// (atomicMin; the host sets it to ~0 first).
__device__ __forceinline__ void spmv_check_columns(const spmv_params& p) {
  const unsigned* col = reinterpret_cast<const unsigned*>(p.col_idx);
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < p.entries; i += stride) {
    if ((unsigned long long)__ldg(col + i) >= p.cols) {
      atomicMin(reinterpret_cast<unsigned long long*>(p.bad), i);
      return;  // A thread's later entries come after this one.
    }
  }
}

// tile_rows[i] for i <= tiles: the first row of tile i (the rows, for i = tiles).
template <class O>
__device__ __forceinline__ void spmv_partition(const spmv_params& p, unsigned long long k) {
  const unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i > p.tiles) return;
  const unsigned long long total = p.rows + p.entries;
  const unsigned long long diag = i * k < total ? i * k : total;
  reinterpret_cast<unsigned long long*>(p.tile_rows)[i] =
      spmv_merge_search(reinterpret_cast<const O*>(p.row_ptr) + 1, p.rows, p.entries, diag);
}

// The segmented sum's operator on (has a row end, sum after the last one):
// `later` follows `earlier`.
template <class T>
__device__ __forceinline__ void spmv_combine(bool earlier_f, T earlier_v, bool& later_f, T& later_v) {
  if (!later_f) later_v = earlier_v + later_v;
  later_f = later_f || earlier_f;
}

template <class T, bool L2Only> __device__ __forceinline__ T spmv_gather(const T* x, unsigned c) {
  if (L2Only) return __ldcg(x + c);
  return __ldg(x + c);
}

// A tile's state, tile_flags[t]: bit 0, a row ends in it; bit 1, its first
// row began in an earlier tile and ends in it (spmv_fixup completes it).
constexpr unsigned SPMV_ROW_END = 1u, SPMV_NEEDS_FIXUP = 2u;

template <class T, class O, int THREADS, int ITEMS, bool GatherL2>
__device__ __forceinline__ void spmv_tiles(const spmv_params& p) {
  constexpr int K = THREADS * ITEMS;
  constexpr int WARPS = THREADS / 32;
  static_assert(THREADS % 32 == 0 && WARPS <= 32, "a tile's threads: whole warps, at most 32");
  __shared__ unsigned s_end[K];  // row ends in the tile, less its first entry
  __shared__ T s_prod[K];        // the tile's products
  __shared__ T s_out[K];         // the sums of the rows ending in the tile
  __shared__ unsigned s_warp_f[WARPS];
  __shared__ T s_warp_v[WARPS];

  const unsigned long long t = blockIdx.x;
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  const unsigned long long* tile_rows = reinterpret_cast<const unsigned long long*>(p.tile_rows);
  const unsigned long long total = p.rows + p.entries;
  const unsigned long long d0 = t * K;
  const unsigned long long d1 = d0 + K < total ? d0 + K : total;
  const unsigned long long r0 = tile_rows[t], r1 = tile_rows[t + 1];
  const unsigned long long e0 = d0 - r0;
  const unsigned nrows = (unsigned)(r1 - r0);
  const unsigned nent = (unsigned)(d1 - r1 - e0);
  const O* row_ptr = reinterpret_cast<const O*>(p.row_ptr);
  const unsigned* col = reinterpret_cast<const unsigned*>(p.col_idx) + e0;
  const T* val = reinterpret_cast<const T*>(p.values) + e0;
  const T* x = reinterpret_cast<const T*>(p.x);

  // Loads, striped over the threads: the entries, the vector's values they
  // name, then the row ends, all issued before any is stored (a shared
  // store waits for its value's load, and ptxas places a store as early as
  // its value allows: a row end loaded first would hold back every load
  // after its store).
  unsigned c[ITEMS];
  T v[ITEMS], xv[ITEMS];
  O ends[ITEMS];
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const unsigned i = j * THREADS + threadIdx.x;
    if (i < nent) {
      c[j] = __ldg(col + i);
      v[j] = __ldg(val + i);
    }
  }
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    if (j * THREADS + threadIdx.x < nent) xv[j] = spmv_gather<T, GatherL2>(x, c[j]);
  }
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const unsigned i = j * THREADS + threadIdx.x;
    if (i < nrows) ends[j] = __ldg(row_ptr + r0 + 1 + i);
  }
  // Whether the first row began before the tile (then it is completed by
  // spmv_fixup, if it ends here).
  const bool begun = nrows > 0 && t > 0 && (unsigned long long)__ldg(row_ptr + r0) < e0;
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    const unsigned i = j * THREADS + threadIdx.x;
    if (i < nent) s_prod[i] = v[j] * xv[j];
    if (i < nrows) s_end[i] = (unsigned)((unsigned long long)ends[j] - e0);
  }
  __syncthreads();

  // This thread's items: a merge-path search of the tile's row ends.
  const unsigned n = nrows + nent;
  const unsigned begin = threadIdx.x * ITEMS < n ? threadIdx.x * ITEMS : n;
  const unsigned end = begin + ITEMS < n ? begin + ITEMS : n;
  unsigned lo = begin > nent ? begin - nent : 0, hi = begin < nrows ? begin : nrows;
  while (lo < hi) {
    const unsigned mid = (lo + hi) >> 1;
    if (s_end[mid] <= begin - mid - 1) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  unsigned ri = lo, ei = begin - lo;
  unsigned next_end = ri < nrows ? s_end[ri] : 0xffffffffu;
  int first = -1;  // the first row ending here: its sum lacks what came before
  T acc = T(0);
#pragma unroll
  for (int j = 0; j < ITEMS; ++j) {
    if (begin + j < end) {
      if (next_end <= ei) {
        s_out[ri] = acc;
        if (first < 0) first = (int)ri;
        acc = T(0);
        ++ri;
        next_end = ri < nrows ? s_end[ri] : 0xffffffffu;
      } else {
        acc += s_prod[ei];
        ++ei;
      }
    }
  }

  // The carries' segmented scan over the threads: each thread's exclusive
  // prefix (ex_f: a row ended in an earlier thread; ex_v: the sum since).
  bool f = first >= 0;
  T sum = acc;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const T up_v = __shfl_up_sync(0xffffffffu, sum, o);
    const bool up_f = __shfl_up_sync(0xffffffffu, (unsigned)f, o) != 0;
    if ((int)lane >= o) spmv_combine(up_f, up_v, f, sum);
  }
  bool ex_f = __shfl_up_sync(0xffffffffu, (unsigned)f, 1) != 0;
  T ex_v = __shfl_up_sync(0xffffffffu, sum, 1);
  if (lane == 0) {
    ex_f = false;
    ex_v = T(0);
  }
  if (lane == 31) {
    s_warp_f[warp] = f;
    s_warp_v[warp] = sum;
  }
  __syncthreads();
  // Warps before this one, in order; and the tile's carry-out.
  bool w_f = false, tile_f = false;
  T w_v = T(0), tile_v = T(0);
#pragma unroll
  for (int w = 0; w < WARPS; ++w) {
    if (w == (int)warp) {
      w_f = tile_f;
      w_v = tile_v;
    }
    bool g_f = s_warp_f[w] != 0;
    T g_v = s_warp_v[w];
    spmv_combine(tile_f, tile_v, g_f, g_v);
    tile_f = g_f;
    tile_v = g_v;
  }
  spmv_combine(w_f, w_v, ex_f, ex_v);
  if (threadIdx.x == 0) {
    reinterpret_cast<T*>(p.tile_values)[t] = tile_v;
    reinterpret_cast<unsigned*>(p.tile_flags)[t] =
        (tile_f ? SPMV_ROW_END : 0u) | (tile_f && begun ? SPMV_NEEDS_FIXUP : 0u);
  }
  // A first row begun in earlier tiles holds the tile's part here (and
  // spmv_fixup adds theirs). Each warp then stores the rows its threads
  // ended, whose sums only its own threads completed.
  if (first >= 0) s_out[first] = ex_v + s_out[first];
  const unsigned rows_begin = __shfl_sync(0xffffffffu, lo, 0);
  const unsigned rows_end = __shfl_sync(0xffffffffu, ri, 31);
  __syncwarp();
  T* y = reinterpret_cast<T*>(p.y) + r0;
  for (unsigned i = rows_begin + lane; i < rows_end; i += 32) y[i] = s_out[i];
}

// Completes the first row of each tile t > 0 whose first row began earlier
// and ends in it: adds to it the carry-outs of tiles t - 1, t - 2, ... up
// to and with the nearest that has a row end (whose carry-out is that
// row's). A thread a tile reads the first SPMV_FIXUP_NEAR of them, summed
// in order; a tile whose row reaches further joins its block's list, which
// the block's warps walk 32 tiles at a time, each window summed by the same
// tree. Which tiles go where depends on the matrix alone, so the sums do
// not depend on timing.
constexpr int SPMV_FIXUP_NEAR = 8;

template <class T, int THREADS> __device__ __forceinline__ void spmv_fixup(const spmv_params& p) {
  __shared__ unsigned long long s_tile[THREADS];
  __shared__ T s_sum[THREADS];
  __shared__ unsigned s_count;
  const unsigned* flags = reinterpret_cast<const unsigned*>(p.tile_flags);
  const T* values = reinterpret_cast<const T*>(p.tile_values);
  T* y = reinterpret_cast<T*>(p.y);
  const unsigned long long* tile_rows = reinterpret_cast<const unsigned long long*>(p.tile_rows);
  if (threadIdx.x == 0) s_count = 0;
  __syncthreads();
  const unsigned long long t = (unsigned long long)blockIdx.x * THREADS + threadIdx.x;
  if (t > 0 && t < p.tiles && (flags[t] & SPMV_NEEDS_FIXUP)) {
    unsigned f[SPMV_FIXUP_NEAR];
    T v[SPMV_FIXUP_NEAR];
#pragma unroll
    for (int j = 0; j < SPMV_FIXUP_NEAR; ++j) {
      const long long q = (long long)t - 1 - j;
      f[j] = q >= 0 ? flags[q] : SPMV_ROW_END;  // before tile 0: stop
      v[j] = q >= 0 ? values[q] : T(0);
    }
    T prefix = T(0);
    bool stopped = false;
#pragma unroll
    for (int j = 0; j < SPMV_FIXUP_NEAR; ++j) {
      if (!stopped) {
        prefix = prefix + v[j];
        stopped = (f[j] & SPMV_ROW_END) != 0;
      }
    }
    if (stopped) {
      y[tile_rows[t]] = prefix + y[tile_rows[t]];
    } else {
      const unsigned slot = atomicAdd(&s_count, 1u);
      s_tile[slot] = t;
      s_sum[slot] = prefix;
    }
  }
  __syncthreads();
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  for (unsigned e = warp; e < s_count; e += THREADS / 32) {
    const unsigned long long u = s_tile[e];
    T prefix = s_sum[e];
    for (long long k = (long long)u - 1 - SPMV_FIXUP_NEAR;; k -= 32) {
      const long long q = k - (long long)lane;
      const bool stop_here = q < 0 || (flags[q] & SPMV_ROW_END);
      T value = q >= 0 ? values[q] : T(0);
      const unsigned stops = __ballot_sync(0xffffffffu, stop_here);
      const int stop = stops ? __ffs(stops) - 1 : 32;
      if ((int)lane > stop) value = T(0);
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) value += __shfl_xor_sync(0xffffffffu, value, o);
      prefix = prefix + value;
      if (stops) break;
    }
    if (lane == 0) y[tile_rows[u]] = prefix + y[tile_rows[u]];
  }
}

}  // namespace gpu_scan
