// Stand-alone experiment: what bounds the time of a SHORT u32 inclusive sum
// scan (2^12 .. 2^17 elements, 2^16 in particular) when it is measured the way
// our baseline measures it ("CUDA events around each call, median of 25 calls
// after 3 warm-ups"), and can a Hopper thread-block-cluster scan get to
// <= 5 µs per call at 2^16? Not part of the library or of CI.
//
//   nvcc -O3 -arch=sm_90 -o short_scan experiments/short_scan.cu && ./short_scan
//   ./short_scan default      same, on the legacy default stream (stream 0)
//                             instead of one created non-blocking stream
//
// What it measures (all µs per call; "a", "b", "b2b" are timing harnesses):
//  1. The harness floor: an empty kernel <<<1,32>>> and <<<132,352>>> and a
//     256 KiB device-to-device cudaMemcpyAsync, each timed with
//       a    two events created once, recorded around each call, median of 25
//            calls after 3 warm-ups (the baseline's method);
//       b    the same but both events created (and destroyed) for every call,
//            the end event created after the call was enqueued (what a harness
//            built on cudarc's `stream.record_event` does);
//       b2b  25 calls back to back between one pair of events, / 25: the
//            throughput figure, NOT comparable with a or b (median of 5).
//  2. cub::DeviceScan::InclusiveSum (temp storage allocated up front), a and b.
//  3. A one-cluster scan (sm_90 thread block clusters, distributed shared
//     memory): C = 8 or 16 blocks of B = 256/512/1024 threads, IPT items per
//     thread in registers (IPT = the smallest of 4..64 for which C*B*IPT >= n),
//     a and b; a dash where n does not fit one cluster or the cluster cannot be
//     launched (cudaOccupancyMaxActiveClusters == 0 or a launch error).
//  4. A single-block scan (1 block of 1024 threads walking n in 16K tiles with
//     a carry), a only; and a cudaMemcpyAsync of n*4 bytes as a reference.
// Every scan is checked bit-exactly against a CPU inclusive scan once before
// it is timed (output poisoned with 0xAB bytes, including 64 words past n that
// must stay untouched); n = 2^16 - 1 is checked but not timed. Exits 1 if any
// check fails.
//
// What it showed on the H200 (two runs of this session, µs at 2^16, harness a):
//  * an EMPTY kernel costs 4.5-5.3 µs per call measured this way (3.1-3.8 µs
//    back to back), a 256 KiB copy 5.5-6.5 µs: a scan of 2^16 elements in
//    at most 5 µs per call is below what one launch costs here;
//  * creating the events inside the loop (b) changes little (±0.5 µs);
//  * CUB InclusiveSum 10.8-12.1 µs; the one-cluster scan 6.7-7.7 µs (best
//    C = 8, B = 256 or 512); one block 14.1-14.7 µs. The library's default
//    (look-back over small tiles) measured 7.1-7.4 µs in scan_bench.
//
// Cluster scan (kernel cluster_scan): block `rank` of the cluster owns the
// elements [rank*B*IPT, (rank+1)*B*IPT); warp w of the block owns a contiguous
// 32*IPT-element segment of it, which its lanes load as IPT/4 fully coalesced
// uint4 vectors: vector j of lane l covers elements 4*(32*j + l) .. +3 of the
// segment ("warp-striped"). Scan order within the segment is therefore vector
// j-major, lane-minor, component last. Per warp: scan each vector left to
// right, inclusive shuffle scans of the IPT/4 vector sums (independent chains,
// so 5 shuffle steps of latency in all), and a running carry across j. Warp
// totals -> shared memory -> warp 0 scans them -> block total in shared
// memory; cluster.sync(); each warp reads the totals of ranks < its own through
// DSMEM (lane i reads rank i), combines them in rank order with a shuffle scan;
// arrive on the cluster barrier (this block no longer reads remote shared
// memory), store, and wait on the cluster barrier before exiting so that no
// block's shared memory goes away while a higher rank may still read it.
// `op(a, b)` is always called with `a` the earlier operand (the library's
// operators are not commutative; the sum here is only the stand-in).
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <algorithm>
#include <functional>
#include <cuda_runtime.h>
#include <cooperative_groups.h>
#if __has_include(<cub/cub.cuh>)
#include <cub/cub.cuh>
#define HAVE_CUB 1
#else
#define HAVE_CUB 0  // the CUB row is left out (a line says so)
#endif
namespace cg = cooperative_groups;

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)

constexpr unsigned kId = 0;  // identity of op
__host__ __device__ __forceinline__ unsigned op(unsigned a, unsigned b) { return a + b; }  // a precedes b

__global__ void empty_kernel() {}

// Inclusive scan across the lanes of a warp of V independent values (lane order).
template <int V>
__device__ __forceinline__ void warp_incl(unsigned (&s)[V], int lane) {
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const unsigned t = __shfl_up_sync(~0u, s[j], d);
      if (lane >= d) s[j] = op(t, s[j]);
    }
  }
}

// Scans the B*4*V elements [base, base + B*4*V) ∩ [0, n) of one block (see the
// header for the arrangement). get_prefix(block_total) is called by every
// thread once the block total is known and returns op of everything before
// `base`. vec: in and out are 16-byte aligned (element 4k starts a uint4).
template <int B, int V, class GetPrefix>
__device__ __forceinline__ void scan_tile(const unsigned* __restrict__ in, unsigned* __restrict__ out, int n, int base, int vec,
                                          unsigned* s_warp, unsigned* s_total, GetPrefix get_prefix) {
  constexpr int NW = B / 32;
  static_assert(NW <= 32, "warp 0 scans the warp totals");
  const int lane = (int)(threadIdx.x & 31u), warp = (int)(threadIdx.x >> 5);
  const int wbase = base + warp * 32 * 4 * V;
  uint4 x[V];
#pragma unroll
  for (int j = 0; j < V; ++j) {
    const int e = wbase + 4 * (32 * j + lane);
    if (vec && e + 4 <= n) {
      x[j] = __ldg(reinterpret_cast<const uint4*>(in + e));
    } else {  // tail (or unaligned): one by one, the identity past n
      x[j] = make_uint4(e < n ? in[e] : kId, e + 1 < n ? in[e + 1] : kId, e + 2 < n ? in[e + 2] : kId, e + 3 < n ? in[e + 3] : kId);
    }
  }
  // Per vector, left to right; s[j] = the vector's total.
  unsigned s[V];
#pragma unroll
  for (int j = 0; j < V; ++j) {
    x[j].y = op(x[j].x, x[j].y);
    x[j].z = op(x[j].y, x[j].z);
    x[j].w = op(x[j].z, x[j].w);
    s[j] = x[j].w;
  }
  warp_incl<V>(s, lane);
  // pre[j]: op of everything in this warp's segment before vector (j, lane).
  unsigned pre[V], carry = kId;
#pragma unroll
  for (int j = 0; j < V; ++j) {
    unsigned left = __shfl_up_sync(~0u, s[j], 1);
    if (lane == 0) left = kId;
    pre[j] = op(carry, left);
    carry = op(carry, __shfl_sync(~0u, s[j], 31));
  }
  if (lane == 0) s_warp[warp] = carry;  // warp total
  __syncthreads();
  if (warp == 0) {  // exclusive scan of the warp totals in place, block total -> *s_total
    unsigned t[1] = {lane < NW ? s_warp[lane] : kId};
    warp_incl<1>(t, lane);
    unsigned ex = __shfl_up_sync(~0u, t[0], 1);
    if (lane == 0) ex = kId;
    if (lane < NW) s_warp[lane] = ex;
    if (lane == 31) *s_total = t[0];
  }
  __syncthreads();
  const unsigned wp = op(get_prefix(*s_total), s_warp[warp]);
#pragma unroll
  for (int j = 0; j < V; ++j) {
    const int e = wbase + 4 * (32 * j + lane);
    const unsigned p = op(wp, pre[j]);
    const uint4 y = make_uint4(op(p, x[j].x), op(p, x[j].y), op(p, x[j].z), op(p, x[j].w));
    if (vec && e + 4 <= n) {
      *reinterpret_cast<uint4*>(out + e) = y;
    } else {
      if (e < n) out[e] = y.x;
      if (e + 1 < n) out[e + 1] = y.y;
      if (e + 2 < n) out[e + 2] = y.z;
      if (e + 3 < n) out[e + 3] = y.w;
    }
  }
}

// One cluster (grid == cluster) of C blocks scans n <= C*B*4*V elements.
template <int B, int V>
__global__ void __launch_bounds__(B, 1) cluster_scan(const unsigned* __restrict__ in, unsigned* __restrict__ out, int n, int vec) {
  __shared__ unsigned s_warp[32];
  __shared__ unsigned s_total;
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = (int)cluster.block_rank();
  const int lane = (int)(threadIdx.x & 31u);
  scan_tile<B, V>(in, out, n, rank * B * 4 * V, vec, s_warp, &s_total, [&](unsigned) {
    // Publishes s_total to the cluster; also guarantees every block has started.
    cluster.sync();
    unsigned t[1] = {lane < rank ? *cluster.map_shared_rank(&s_total, lane) : kId};  // DSMEM read of rank `lane`
    warp_incl<1>(t, lane);  // rank order: op(op(total[0], total[1]), ...)
    const unsigned bp = __shfl_sync(~0u, t[0], rank > 0 ? rank - 1 : 0);
    cluster.barrier_arrive();  // done reading other blocks' shared memory
    return rank > 0 ? bp : kId;
  });
  cluster.barrier_wait();  // nobody exits while a higher rank may still read its s_total
}

// Reference: one block of 1024 threads walks n in tiles of 1024*4*V with a carry.
template <int V>
__global__ void __launch_bounds__(1024, 1) single_block_scan(const unsigned* __restrict__ in, unsigned* __restrict__ out, int n, int vec) {
  __shared__ unsigned s_warp[32];
  __shared__ unsigned s_total;
  unsigned carry = kId;
  for (int base = 0; base < n; base += 1024 * 4 * V)
    scan_tile<1024, V>(in, out, n, base, vec, s_warp, &s_total, [&](unsigned total) {
      const unsigned before = carry;
      carry = op(carry, total);
      return before;
    });
}

// ---------------------------------------------------------------------------
// Host side
// ---------------------------------------------------------------------------
using ScanFn = void (*)(const unsigned*, unsigned*, int, int);
constexpr int kMaxBlockItems = 16384;  // items per block kept in registers (64 KiB)

template <int B, int V>
ScanFn cluster_fn() {
  if constexpr (B * 4 * V <= kMaxBlockItems) return cluster_scan<B, V>;
  else return nullptr;
}
static ScanFn cluster_kernel(int B, int V) {
#define CLUSTER_ROW(BB) \
  if (B == BB) switch (V) { case 1: return cluster_fn<BB, 1>(); case 2: return cluster_fn<BB, 2>(); \
    case 4: return cluster_fn<BB, 4>(); case 8: return cluster_fn<BB, 8>(); case 16: return cluster_fn<BB, 16>(); }
  CLUSTER_ROW(256) CLUSTER_ROW(512) CLUSTER_ROW(1024)
#undef CLUSTER_ROW
  return nullptr;
}

// One cluster of C blocks of B threads: grid == cluster, cluster size given at launch.
static cudaLaunchConfig_t cluster_config(int C, int B, cudaStream_t s, cudaLaunchAttribute* attr) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(C); cfg.blockDim = dim3(B); cfg.dynamicSmemBytes = 0; cfg.stream = s;
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = C; attr[0].val.clusterDim.y = 1; attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr; cfg.numAttrs = 1;
  return cfg;
}

using Op = std::function<cudaError_t(cudaStream_t)>;
static bool g_fail = false;
constexpr int kWarm = 3, kSamples = 25, kPad = 64;

static float median_us(std::vector<float> ms) {
  std::sort(ms.begin(), ms.end());
  return 1000.f * ms[ms.size() / 2];
}
// (a) events created once, `per` ops between them, `reps` samples: per = 1,
// reps = kSamples is the baseline's method; per = kSamples, reps = 5 is (c), b2b.
static float time_a(cudaStream_t s, const Op& op, int per = 1, int reps = kSamples) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  for (int i = 0; i < kWarm; ++i) CK(op(s));
  std::vector<float> ms;
  for (int r = 0; r < reps; ++r) {
    CK(cudaEventRecord(a, s));
    for (int i = 0; i < per; ++i) CK(op(s));
    CK(cudaEventRecord(b, s)); CK(cudaEventSynchronize(b));
    float t; CK(cudaEventElapsedTime(&t, a, b)); ms.push_back(t / per);
  }
  CK(cudaEventDestroy(a)); CK(cudaEventDestroy(b));
  return median_us(ms);
}
// (b) events created for every sample, the end event after the op was enqueued.
static float time_b(cudaStream_t s, const Op& op) {
  for (int i = 0; i < kWarm; ++i) CK(op(s));
  std::vector<float> ms;
  for (int i = 0; i < kSamples; ++i) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a)); CK(cudaEventRecord(a, s));
    CK(op(s));
    CK(cudaEventCreate(&b)); CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    float t; CK(cudaEventElapsedTime(&t, a, b)); ms.push_back(t);
    CK(cudaEventDestroy(a)); CK(cudaEventDestroy(b));
  }
  return median_us(ms);
}
// Poisons out[0, n + kPad), runs op once, compares out[0, n) with ref and checks
// that out[n, n + kPad) was not written.
static bool verify(const char* name, cudaStream_t s, const Op& op, unsigned* d_out, int n, const std::vector<unsigned>& ref) {
  CK(cudaMemsetAsync(d_out, 0xAB, (size_t)(n + kPad) * 4, s));
  CK(op(s));
  CK(cudaStreamSynchronize(s));
  CK(cudaGetLastError());
  std::vector<unsigned> got(n + kPad);
  CK(cudaMemcpy(got.data(), d_out, got.size() * 4, cudaMemcpyDeviceToHost));
  long long bad = 0, first = -1;
  for (int i = 0; i < n + kPad; ++i) {
    const unsigned want = i < n ? ref[i] : 0xABABABABu;
    if (got[i] != want) { if (first < 0) first = i; ++bad; }
  }
  if (bad) {
    printf("  %-28s n=%-7d FAIL: %lld wrong, first at %lld: got %u want %u%s\n", name, n, bad, first, got[first],
           first < n ? ref[first] : 0xABABABABu, first >= n ? " (written past n)" : "");
    g_fail = true;
  } else {
    printf("  %-28s n=%-7d PASS\n", name, n);
  }
  return bad == 0;
}

static std::string fmt_us(float us) { char b[32]; snprintf(b, sizeof b, "%.2f", us); return b; }

int main(int argc, char** argv) {
  const bool use_default = argc > 1 && !strcmp(argv[1], "default");
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  int rt = 0, drv = 0;
  CK(cudaRuntimeGetVersion(&rt)); CK(cudaDriverGetVersion(&drv));
  printf("%s, %d SMs, runtime %d, driver %d, %s stream, %d warm-ups + median of %d\n", prop.name, prop.multiProcessorCount, rt,
         drv, use_default ? "legacy default" : "one created non-blocking", kWarm, kSamples);
  cudaStream_t s = 0;
  if (!use_default) CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  const std::vector<int> ns = {1 << 12, 1 << 14, 1 << 16, 1 << 17};
  const int n_odd = (1 << 16) - 1;  // correctness only (tail not a multiple of 4)
  const int n_max = 1 << 17;
  std::vector<unsigned> h(n_max), ref(n_max);
  unsigned long long rng = 0x9E3779B97F4A7C15ull;
  unsigned run = kId;
  for (int i = 0; i < n_max; ++i) {
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    h[i] = (unsigned)(rng >> 40) & 0xFFFFu;
    run = op(run, h[i]);
    ref[i] = run;  // the inclusive scan of any prefix of h is a prefix of ref
  }
  unsigned *d_in, *d_out;
  CK(cudaMalloc(&d_in, (size_t)n_max * 4));
  CK(cudaMalloc(&d_out, (size_t)(n_max + kPad) * 4));
  CK(cudaMemcpy(d_in, h.data(), (size_t)n_max * 4, cudaMemcpyHostToDevice));
  const int vec = ((uintptr_t)d_in % 16 == 0 && (uintptr_t)d_out % 16 == 0) ? 1 : 0;

  // ---- 1. harness floor -------------------------------------------------
  struct HRow { std::string name; float a, b, c; };
  std::vector<HRow> hrows;
  {
    const std::vector<std::pair<std::string, Op>> ops = {
        {"empty <<<1,32>>>", [](cudaStream_t st) { empty_kernel<<<1, 32, 0, st>>>(); return cudaGetLastError(); }},
        {"empty <<<132,352>>>", [](cudaStream_t st) { empty_kernel<<<132, 352, 0, st>>>(); return cudaGetLastError(); }},
        {"memcpy D2D 256 KiB", [&](cudaStream_t st) { return cudaMemcpyAsync(d_out, d_in, 256 << 10, cudaMemcpyDeviceToDevice, st); }},
    };
    printf("\n1. timing harness (µs per call)\n");
    for (auto& [name, op_] : ops) {
      HRow r{name, time_a(s, op_), time_b(s, op_), time_a(s, op_, kSamples, 5)};
      printf("  %-28s a %7.2f   b %7.2f   b2b %7.2f\n", name.c_str(), r.a, r.b, r.c);
      hrows.push_back(r);
    }
  }

  // ---- 2.-4. scans ----------------------------------------------------------
  struct Row { std::string name; std::vector<std::string> cell; };
  std::vector<Row> rows;
  auto all_n = ns;
  all_n.push_back(n_odd);

  printf("\n2.-4. scans (µs per call, harness a / b)\n");
  {  // memcpy of the same bytes, the floor of any scan
    Row r{"memcpy D2D n*4 B (a)", {}};
    for (int n : ns) {
      const float a = time_a(s, [&](cudaStream_t st) { return cudaMemcpyAsync(d_out, d_in, (size_t)n * 4, cudaMemcpyDeviceToDevice, st); });
      printf("  %-28s n=%-7d a %7.2f\n", r.name.c_str(), n, a);
      r.cell.push_back(fmt_us(a));
    }
    rows.push_back(r);
  }
#if HAVE_CUB
  {
    size_t temp_bytes = 0;
    for (int n : all_n) {
      size_t tb = 0;
      CK(cub::DeviceScan::InclusiveSum(nullptr, tb, d_in, d_out, n, s));
      temp_bytes = std::max(temp_bytes, tb);
    }
    void* d_temp;
    CK(cudaMalloc(&d_temp, temp_bytes));
    Row r{"CUB InclusiveSum (a/b)", {}};
    for (int n : all_n) {
      const Op op_ = [&, n](cudaStream_t st) { size_t tb = temp_bytes; return cub::DeviceScan::InclusiveSum(d_temp, tb, d_in, d_out, n, st); };
      const bool ok = verify("CUB InclusiveSum", s, op_, d_out, n, ref);
      if (n == n_odd) continue;
      const float a = time_a(s, op_), b = time_b(s, op_);
      printf("  %-28s n=%-7d a %7.2f   b %7.2f\n", "CUB InclusiveSum", n, a, b);
      r.cell.push_back(fmt_us(a) + "/" + fmt_us(b) + (ok ? "" : " FAIL"));
    }
    rows.push_back(r);
    CK(cudaFree(d_temp));
  }
#else
  printf("  CUB headers not found at compile time: no CUB rows\n");
#endif

  for (int C : {8, 16}) {
    for (int B : {256, 512, 1024}) {
      char name[64];
      snprintf(name, sizeof name, "cluster C=%d B=%d (a/b)", C, B);
      Row r{name, {}};
      for (int n : all_n) {
        int V = 1;  // smallest vector count per thread for which one cluster covers n
        while (V <= 16 && ((long long)C * B * 4 * V < n || !cluster_kernel(B, V))) V *= 2;
        const ScanFn k = V <= 16 ? cluster_kernel(B, V) : nullptr;
        if (!k) {
          printf("  %-28s n=%-7d -  (n exceeds one cluster of %d items)\n", name, n, C * std::min(B * 64, kMaxBlockItems));
          if (n != n_odd) r.cell.push_back("-");
          continue;
        }
        cudaLaunchAttribute attr[1];
        cudaLaunchConfig_t cfg = cluster_config(C, B, s, attr);
        cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
        int clusters = 0;
        if (e == cudaSuccess) e = cudaOccupancyMaxActiveClusters(&clusters, k, &cfg);
        if (e != cudaSuccess || clusters == 0) {
          printf("  %-28s n=%-7d cannot launch: %s, max active clusters %d\n", name, n, cudaGetErrorString(e), clusters);
          cudaGetLastError();  // clear a non-sticky error
          if (n != n_odd) r.cell.push_back("x");
          continue;
        }
        const Op op_ = [&, k, n, C, B](cudaStream_t st) {
          cudaLaunchAttribute at[1];
          cudaLaunchConfig_t c2 = cluster_config(C, B, st, at);
          return cudaLaunchKernelEx(&c2, k, (const unsigned*)d_in, d_out, n, vec);
        };
        // A launch failure here (unlike a kernel fault) is reported, not fatal.
        e = op_(s);
        if (e == cudaSuccess) e = cudaStreamSynchronize(s);
        if (e != cudaSuccess) {
          printf("  %-28s n=%-7d launch failed: %s\n", name, n, cudaGetErrorString(e));
          cudaGetLastError();
          if (n != n_odd) r.cell.push_back("x");
          continue;
        }
        char vname[64];
        snprintf(vname, sizeof vname, "cluster C=%d B=%d IPT=%d", C, B, 4 * V);
        const bool ok = verify(vname, s, op_, d_out, n, ref);
        if (n == n_odd) continue;
        const float a = time_a(s, op_), b = time_b(s, op_);
        printf("  %-28s n=%-7d a %7.2f   b %7.2f   (max active clusters %d)\n", vname, n, a, b, clusters);
        r.cell.push_back(fmt_us(a) + "/" + fmt_us(b) + (ok ? "" : " FAIL"));
      }
      rows.push_back(r);
    }
  }

  {
    Row r{"single block 1024x16 (a)", {}};
    for (int n : all_n) {
      const Op op_ = [&, n](cudaStream_t st) {
        single_block_scan<4><<<1, 1024, 0, st>>>(d_in, d_out, n, vec);
        return cudaGetLastError();
      };
      const bool ok = verify("single block 1024x16", s, op_, d_out, n, ref);
      if (n == n_odd) continue;
      const float a = time_a(s, op_);
      printf("  %-28s n=%-7d a %7.2f\n", "single block 1024x16", n, a);
      r.cell.push_back(fmt_us(a) + (ok ? "" : " FAIL"));
    }
    rows.push_back(r);
  }

  // ---- tables -----------------------------------------------------------------
  printf("\nHarness floor, µs per call (a: events once; b: events created per call; b2b: 25 back to back / 25)\n");
  printf("%-28s %9s %9s %9s\n", "op", "a", "b", "b2b");
  for (auto& r : hrows) printf("%-28s %9.2f %9.2f %9.2f\n", r.name.c_str(), r.a, r.b, r.c);
  printf("\nScans, µs per call, median (cells a/b where both were measured; - too long for one cluster, x cannot\n"
         "launch; a cluster row's IPT is the smallest of 4..64 with C*B*IPT >= n, see the lines above)\n");
  printf("%-28s", "configuration \\ n");
  for (int n : ns) printf(" %15s", ("2^" + std::to_string(31 - __builtin_clz(n))).c_str());
  printf("\n");
  for (auto& r : rows) {
    printf("%-28s", r.name.c_str());
    for (auto& c : r.cell) printf(" %15s", c.c_str());
    printf("\n");
  }
  printf("\n%s\n", g_fail ? "SOME CHECKS FAILED" : "all checks passed");
  CK(cudaFree(d_in)); CK(cudaFree(d_out));
  if (s) CK(cudaStreamDestroy(s));
  return g_fail ? 1 : 0;
}
