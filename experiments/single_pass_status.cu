// Stand-alone experiment behind the single pass's status layout and
// occupancy (kernels-gen/src/prelude.cuh, scan_tile_status_stride): a
// hand-written u32-sum single pass with decoupled look-back, timed with CUDA
// events against a device-to-device copy in the same run, every output
// checked against a CPU scan. Not part of the library or of CI.
//
//   nvcc -arch=sm_90 -O3 -std=c++17 -o single_pass_status single_pass_status.cu
//   ./single_pass_status
//
// `np`: one tile per block, taken from the atomic counter (the library's
// scheme), with per-tile clock64 phase timings (`rec`); parameters: tile
// shape, blocks per SM (launch bounds), look-back window per lane, the
// delay before the first poll and between polls, and the status spread
// (entries `spread` × 8 bytes apart). `sp`: a persistent variant whose
// blocks take their next tile early and prefetch it with cp.async.
//
// What it showed on the H200 (2^28 elements): the look-back took about
// half of each tile's time (the phase timings); spreading the status
// entries 32-64 bytes apart took 66% of copy speed to 78% (hot L2 lines);
// 8 blocks per SM beat 5-6; a delay before the first poll gained about 1%;
// the persistent blocks lost badly (12-31%): a tile taken early publishes
// its aggregate only after its block's current tile is done, so look-backs
// walk far.
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)

__device__ __forceinline__ unsigned long long ld_relaxed(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_relaxed(unsigned long long* p, unsigned long long v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

__device__ __forceinline__ int pad(int c) { return c + (c >> 3); }


// W consecutive tiles per lane: lane l polls tiles [end - 32W + 1 + lW, ... + W).
template <int W>
__device__ __noinline__ unsigned look_back(unsigned long long* status, long long tile, unsigned epoch, unsigned* rounds, unsigned first_delay = 0, unsigned retry_delay = 0, int spread = 1) {
  if (first_delay) __nanosleep(first_delay);
  const unsigned lane = threadIdx.x & 31u;
  long long window_end = tile - 1;
  unsigned excl = 0;
  unsigned r = 0;
  while (true) {
    ++r;
    unsigned state[W], val[W];
#pragma unroll
    for (int w = 0; w < W; ++w) {
      const long long p = window_end - 32 * W + 1 + (long long)lane * W + w;
      const unsigned long long x = ld_relaxed(status + (p < 0 ? 0 : p) * spread);
      unsigned flag = (unsigned)x;
      state[w] = (flag >> 2) == epoch ? (flag & 3u) : 0u;
      val[w] = (unsigned)(x >> 32);
      if (p < 0) { state[w] = 2; val[w] = 0; }
    }
    // my nearest prefix (highest w), and whether everything from it on is ready
    int mine = -1;
#pragma unroll
    for (int w = 0; w < W; ++w) if (state[w] == 2) mine = w;
    const unsigned prefix_lanes = __ballot_sync(~0u, mine >= 0);
    const unsigned start = prefix_lanes ? 31u - __clz((int)prefix_lanes) : 0u;
    const int from = lane < start ? W : (lane == start && prefix_lanes ? mine : 0);
    bool ok = true;
#pragma unroll
    for (int w = 0; w < W; ++w) if (w >= from && state[w] == 0) ok = false;
    if (__all_sync(~0u, ok)) {
      unsigned s = 0;
#pragma unroll
      for (int w = 0; w < W; ++w) if (w >= from) s += val[w];
      excl += __reduce_add_sync(~0u, s);
      if (prefix_lanes) break;
      window_end -= 32 * W;
    } else if (retry_delay) {
      __nanosleep(retry_delay);
    }
  }
  if (rounds) *rounds = r;
  return excl;
}

template <int T>
__device__ __forceinline__ unsigned block_excl_scan(unsigned v, unsigned* warp_tot, unsigned& total) {
  const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  unsigned x = v;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) { unsigned o = __shfl_up_sync(~0u, x, d); if (lane >= d) x += o; }
  if (lane == 31) warp_tot[warp] = x;
  __syncthreads();
  unsigned before = 0, all = 0;
#pragma unroll
  for (int w = 0; w < T / 32; ++w) { unsigned t = warp_tot[w]; if (w < (int)warp) before += t; all += t; }
  total = all;
  return before + x - v;
}

// Persistent (or not: grid = tiles) single pass. S buffers, prefetch distance S-1.
template <int T, int I, int S, int W>
__global__ void __launch_bounds__(T) sp(const unsigned* in, unsigned* out, unsigned long long* status, unsigned long long* counter,
                                       unsigned epoch, long long tiles) {
  constexpr int TILE = T * I, C = I / 4, CHUNKS = TILE / 4, PADDED = CHUNKS + CHUNKS / 8;
  extern __shared__ uint4 buf[];  // S * PADDED
  __shared__ long long ids[S];
  __shared__ unsigned warp_tot[T / 32];
  __shared__ unsigned sh_prefix;
  const uint4* in4 = (const uint4*)in;
  uint4* out4 = (uint4*)out;
  if (threadIdx.x == 0)
    for (int k = 0; k < S; ++k) ids[k] = (long long)atomicAdd(counter, 1ull);
  __syncthreads();
  for (int k = 0; k < S - 1; ++k) {
    const long long t = ids[k];
    if (t < tiles)
#pragma unroll
      for (int v = 0; v < C; ++v) { int c = v * T + threadIdx.x; cp_async16(&buf[k * PADDED + pad(c)], in4 + t * CHUNKS + c); }
    cp_commit();
  }
  for (int k = 0;; ++k) {
    const int slot = k % S;
    const long long tile = ids[slot];
    if (tile >= tiles) break;
    {
      const int ps = (k + S - 1) % S;
      const long long t = ids[ps];
      if (S > 1 && t < tiles)
#pragma unroll
        for (int v = 0; v < C; ++v) { int c = v * T + threadIdx.x; cp_async16(&buf[ps * PADDED + pad(c)], in4 + t * CHUNKS + c); }
      if (S == 1)
#pragma unroll
        for (int v = 0; v < C; ++v) { int c = v * T + threadIdx.x; cp_async16(&buf[slot * PADDED + pad(c)], in4 + tile * CHUNKS + c); }
      cp_commit();
    }
    cp_wait<S - 1>();
    __syncthreads();
    unsigned long long acquired = 0;
    if (threadIdx.x == 32) acquired = atomicAdd(counter, 1ull);
    uint4* b = buf + slot * PADDED;
    unsigned items[I];
#pragma unroll
    for (int c = 0; c < C; ++c) { uint4 q = b[pad(threadIdx.x * C + c)]; items[4*c] = q.x; items[4*c+1] = q.y; items[4*c+2] = q.z; items[4*c+3] = q.w; }
    unsigned sum = 0;
#pragma unroll
    for (int i = 0; i < I; ++i) sum += items[i];
    unsigned total;
    const unsigned thread_prefix = block_excl_scan<T>(sum, warp_tot, total);
    if (threadIdx.x < 32) {
      unsigned before = 0;
      if (tile == 0) {
        if (threadIdx.x == 0) st_relaxed(status, ((unsigned long long)total << 32) | (epoch << 2) | 2u);
      } else {
        if (threadIdx.x == 0) st_relaxed(status + tile, ((unsigned long long)total << 32) | (epoch << 2) | 1u);
        before = look_back<W>(status, tile, epoch, nullptr);
        if (threadIdx.x == 0) st_relaxed(status + tile, ((unsigned long long)(before + total) << 32) | (epoch << 2) | 2u);
      }
      if (threadIdx.x == 0) sh_prefix = before;
    }
    __syncthreads();
    unsigned run = sh_prefix + thread_prefix;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      uint4 q = b[pad(threadIdx.x * C + c)];
      run += q.x; q.x = run; run += q.y; q.y = run; run += q.z; q.z = run; run += q.w; q.w = run;
      b[pad(threadIdx.x * C + c)] = q;
    }
    __syncthreads();
#pragma unroll
    for (int v = 0; v < C; ++v) { int c = v * T + threadIdx.x; out4[tile * CHUNKS + c] = b[pad(c)]; }
    if (threadIdx.x == 32) ids[slot] = (long long)acquired;
    __syncthreads();
  }
  cp_wait<0>();
}

// Non-persistent: one tile per block, acquired at the start. MB: min blocks per SM.
// REC: per-tile clock64 phase durations.
template <int T, int I, int MB, int W, bool REC>
__global__ void __launch_bounds__(T, MB) np(const unsigned* in, unsigned* out, unsigned long long* status, unsigned long long* counter,
                                           unsigned epoch, long long tiles, unsigned* rec, unsigned first_delay, unsigned retry_delay, int spread) {
  constexpr int TILE = T * I, C = I / 4, CHUNKS = TILE / 4;
  extern __shared__ uint4 buf[];
  __shared__ long long sh_tile;
  __shared__ unsigned warp_tot[T / 32];
  __shared__ unsigned sh_prefix;
  long long c0 = clock64();
  if (threadIdx.x == 0) sh_tile = (long long)atomicAdd(counter, 1ull);
  __syncthreads();
  const long long tile = sh_tile;
  long long c1 = clock64();
  const uint4* in4 = (const uint4*)in;
  uint4* out4 = (uint4*)out;
#pragma unroll
  for (int v = 0; v < C; ++v) { int c = v * T + threadIdx.x; cp_async16(&buf[pad(c)], in4 + tile * CHUNKS + c); }
  cp_commit();
  cp_wait<0>();
  __syncthreads();
  long long c2 = clock64();
  unsigned sum = 0;
#pragma unroll
  for (int c = 0; c < C; ++c) { uint4 q = buf[pad(threadIdx.x * C + c)]; sum += q.x + q.y + q.z + q.w; }
  unsigned total;
  const unsigned thread_prefix = block_excl_scan<T>(sum, warp_tot, total);
  long long c3 = clock64();
  unsigned rounds = 0;
  if (threadIdx.x < 32) {
    unsigned before = 0;
    if (tile == 0) {
      if (threadIdx.x == 0) st_relaxed(status, ((unsigned long long)total << 32) | (epoch << 2) | 2u);
    } else {
      if (threadIdx.x == 0) st_relaxed(status + tile * spread, ((unsigned long long)total << 32) | (epoch << 2) | 1u);
      before = look_back<W>(status, tile, epoch, &rounds, first_delay, retry_delay, spread);
      if (threadIdx.x == 0) st_relaxed(status + tile * spread, ((unsigned long long)(before + total) << 32) | (epoch << 2) | 2u);
    }
    if (threadIdx.x == 0) sh_prefix = before;
  }
  __syncthreads();
  long long c4 = clock64();
  unsigned run = sh_prefix + thread_prefix;
#pragma unroll
  for (int c = 0; c < C; ++c) {
    uint4 q = buf[pad(threadIdx.x * C + c)];
    run += q.x; q.x = run; run += q.y; q.y = run; run += q.z; q.z = run; run += q.w; q.w = run;
    buf[pad(threadIdx.x * C + c)] = q;
  }
  __syncthreads();
#pragma unroll
  for (int v = 0; v < C; ++v) { int c = v * T + threadIdx.x; out4[tile * CHUNKS + c] = buf[pad(c)]; }
  if (REC && threadIdx.x == 0) {
    long long c5 = clock64();
    unsigned* r = rec + tile * 8;
    r[0] = (unsigned)(c1 - c0); r[1] = (unsigned)(c2 - c1); r[2] = (unsigned)(c3 - c2); r[3] = (unsigned)(c4 - c3);
    r[4] = (unsigned)(c5 - c4); r[5] = rounds;
    unsigned smid; asm("mov.u32 %0, %%smid;" : "=r"(smid)); r[6] = smid;
  }
}

__global__ void copy4(const uint4* in, uint4* out, long long n4) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x) out[i] = in[i];
}

struct Ctx { unsigned* rec; unsigned* in; unsigned* out; unsigned long long* status; unsigned long long* counter; unsigned epoch; long long n; std::vector<unsigned>* ref; };


template <class Launch>
float time_it(Ctx& c, const char* name, float copy_ms, Launch launch, const char* extra) {
  cudaEvent_t a, b;
  cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<float> ms;
  for (int r = 0; r < 28; ++r) {
    CK(cudaMemsetAsync(c.out, 0xAB, 64));
    CK(cudaMemsetAsync(c.counter, 0, 8));
    cudaEventRecord(a);
    launch(++c.epoch);
    cudaEventRecord(b);
    CK(cudaEventSynchronize(b));
    CK(cudaGetLastError());
    float t; cudaEventElapsedTime(&t, a, b);
    if (r >= 3) ms.push_back(t);
    if (r == 0) {
      std::vector<unsigned> got(c.n);
      CK(cudaMemcpy(got.data(), c.out, c.n * 4, cudaMemcpyDeviceToHost));
      long long bad = 0;
      for (long long i = 0; i < c.n; ++i) if (got[i] != (*c.ref)[i]) { if (!bad) printf("  mismatch at %lld\n", i); ++bad; }
      if (bad) printf("  %s: %lld BAD\n", name, bad);
    }
  }
  std::sort(ms.begin(), ms.end());
  float m = ms[ms.size() / 2];
  printf("%-30s n=2^%d %s  %.4f ms  %.1f%% of copy\n", name, 63 - __builtin_clzll(c.n), extra, m, 100.0 * copy_ms / m);
  return m;
}

template <int T, int I, int S, int W>
void bench(Ctx& c, bool persistent, const char* name, float copy_ms) {
  constexpr int TILE = T * I, CHUNKS = TILE / 4, PADDED = CHUNKS + CHUNKS / 8;
  const size_t smem = (size_t)S * PADDED * 16;
  auto k = sp<T, I, S, W>;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  int per_sm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, T, smem));
  const long long tiles = c.n / TILE;
  long long grid = persistent ? std::min<long long>(tiles, (long long)per_sm * 132) : tiles;
  char extra[64]; snprintf(extra, 64, "blocks/SM %d grid %lld", per_sm, grid);
  time_it(c, name, copy_ms, [&](unsigned e) { k<<<(unsigned)grid, T, smem>>>(c.in, c.out, c.status, c.counter, e, tiles); }, extra);
}

template <int T, int I, int MB, int W, bool REC>
void bench_np(Ctx& c, const char* name, float copy_ms, unsigned first_delay = 0, unsigned retry_delay = 0, int spread = 1) {
  constexpr int TILE = T * I, CHUNKS = TILE / 4, PADDED = CHUNKS + CHUNKS / 8;
  const size_t smem = (size_t)PADDED * 16;
  auto k = np<T, I, MB, W, REC>;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  int per_sm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, T, smem));
  const long long tiles = c.n / TILE;
  char extra[96]; snprintf(extra, 96, "blocks/SM %d delays %u/%u spread %d", per_sm, first_delay, retry_delay, spread);
  time_it(c, name, copy_ms, [&](unsigned e) { k<<<(unsigned)tiles, T, smem>>>(c.in, c.out, c.status, c.counter, e, tiles, c.rec, first_delay, retry_delay, spread); }, extra);
  if (REC) {
    std::vector<unsigned> r(tiles * 8);
    CK(cudaMemcpy(r.data(), c.rec, tiles * 8 * 4, cudaMemcpyDeviceToHost));
    double s[6] = {0}; unsigned mx[6] = {0};
    std::vector<unsigned> rounds;
    for (long long t = 0; t < tiles; ++t) for (int j = 0; j < 6; ++j) { s[j] += r[t * 8 + j]; mx[j] = std::max(mx[j], r[t * 8 + j]); }
    const char* names[6] = {"acquire", "load", "reduce+scan", "look-back", "rescan+store", "rounds"};
    printf("   per tile (mean cycles / max):");
    for (int j = 0; j < 6; ++j) printf(" %s %.0f/%u", names[j], s[j] / tiles, mx[j]);
    printf("\n");
  }
}

int main() {
  for (int lg : {24, 28}) {
    long long n = 1ll << lg;
    std::vector<unsigned> h(n), ref(n);
    unsigned long long x = 0x1234567 + lg;
    unsigned run = 0;
    for (long long i = 0; i < n; ++i) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; h[i] = (unsigned)x; run += h[i]; ref[i] = run; }
    Ctx c{};
    c.n = n; c.ref = &ref;
    CK(cudaMalloc(&c.in, n * 4)); CK(cudaMalloc(&c.out, n * 4));
    CK(cudaMalloc(&c.status, (n / 256 + 64) * 256)); CK(cudaMemset(c.status, 0, (n / 256 + 64) * 256));
    CK(cudaMalloc(&c.counter, 8)); CK(cudaMalloc(&c.rec, (n / 512 + 64) * 32));
    CK(cudaMemcpy(c.in, h.data(), n * 4, cudaMemcpyHostToDevice));
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
    std::vector<float> ms, ms2;
    for (int r = 0; r < 28; ++r) {
      cudaEventRecord(a); CK(cudaMemcpyAsync(c.out, c.in, n * 4, cudaMemcpyDeviceToDevice)); cudaEventRecord(b);
      CK(cudaEventSynchronize(b)); float t; cudaEventElapsedTime(&t, a, b); if (r >= 3) ms.push_back(t);
      cudaEventRecord(a); copy4<<<132 * 8, 256>>>((const uint4*)c.in, (uint4*)c.out, n / 4); cudaEventRecord(b);
      CK(cudaEventSynchronize(b)); cudaEventElapsedTime(&t, a, b); if (r >= 3) ms2.push_back(t);
    }
    std::sort(ms.begin(), ms.end()); std::sort(ms2.begin(), ms2.end());
    float copy_ms = ms[ms.size() / 2];
    printf("n=2^%d memcpy D2D %.4f ms (%.0f GB/s), copy kernel %.4f ms (%.1f%%)\n", lg, copy_ms, 2.0 * n * 4 / copy_ms / 1e6, ms2[ms2.size() / 2], 100.0 * copy_ms / ms2[ms2.size() / 2]);
    for (int spread : {1, 4, 8, 16, 32})
      for (unsigned fd : {0u, 500u, 1000u}) bench_np<256, 16, 8, 1, false>(c, "np 256x16 MB8", copy_ms, fd, 300, spread);
    bench_np<256, 16, 8, 1, false>(c, "np 256x16 MB8", copy_ms, 500, 0, 8);
    bench_np<256, 16, 8, 1, false>(c, "np 256x16 MB8", copy_ms, 500, 100, 8);
    bench_np<256, 16, 8, 1, false>(c, "np 256x16 MB8", copy_ms, 500, 600, 8);
    bench_np<256, 16, 6, 1, false>(c, "np 256x16 MB6", copy_ms, 500, 300, 8);
    bench_np<256, 16, 8, 4, false>(c, "np 256x16 MB8 W4", copy_ms, 500, 300, 8);
    bench_np<128, 32, 1, 1, false>(c, "np 128x32", copy_ms, 500, 300, 8);
    bench_np<128, 32, 1, 1, false>(c, "np 128x32", copy_ms, 1000, 300, 8);
    bench_np<128, 24, 1, 1, false>(c, "np 128x24", copy_ms, 500, 300, 8);
    bench_np<256, 24, 5, 1, false>(c, "np 256x24 MB5", copy_ms, 500, 300, 8);
    bench_np<256, 32, 4, 1, false>(c, "np 256x32 MB4", copy_ms, 500, 300, 8);
    bench_np<256, 8, 8, 1, false>(c, "np 256x8 MB8", copy_ms, 500, 300, 8);
    bench_np<512, 16, 4, 1, false>(c, "np 512x16 MB4", copy_ms, 500, 300, 8);
    bench_np<256, 16, 8, 1, true>(c, "np 256x16 MB8 rec", copy_ms, 500, 300, 8);
    bench<256, 16, 1, 1>(c, true, "p 256x16 S1 (no prefetch)", copy_ms);
    bench<256, 16, 2, 1>(c, true, "p 256x16 S2 (prefetch one)", copy_ms);
    cudaFree(c.in); cudaFree(c.out); cudaFree(c.status); cudaFree(c.counter); cudaFree(c.rec);
  }
}
