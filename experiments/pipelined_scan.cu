// Stand-alone experiment behind the library's pipelined single pass
// (kernels-gen/src/templates/pipelined.cuh): a warp-specialized, bulk-copy
// (TMA 1D) pipelined single-pass u32 inclusive sum for sm_90, in the style
// of CCCL's "warpspeed" / decoupled-lookahead scan, measured in the same run
// as the non-persistent decoupled look-back baseline of
// experiments/single_pass_status.cu (`np`, 256x16, 8 blocks/SM). Timed with
// CUDA events against a device-to-device copy, every configuration's output
// checked against a CPU scan. Not part of the library or of CI.
//
//   nvcc -arch=sm_90 -O3 -std=c++17 -o pipelined_scan pipelined_scan.cu && ./pipelined_scan
//       shapes (warps per squad, items per thread, stages, blocks per SM,
//       lookahead entries per lane) at 2^24 and 2^28, and an odd length
//   nvcc ... -DOVERHEAD_MAIN ...   short inputs, lengths with and without a
//       tail tile, and a per-tile timeline (globaltimer) of one short run;
//       -DUNR_VALUE=N unrolls the per-thread loops N times, -DSPIN_TEST
//       polls the mbarriers with test_wait instead of try_wait
//
// What it showed on the H200:
//  * 4 + 4 + 3 warps, 63 items per thread (31.5 KiB tiles), 6 stages (one
//    block per SM): 96.5% of copy speed at 2^28 and 80.6% at 2^24, against
//    80% and 70% for the look-back baseline; 4 stages 87.5%, 2 blocks of 3
//    stages 92.4%, 15.5 KiB tiles 89%; 8 lookahead entries per lane 72%.
//  * Short inputs cost about 15 µs whatever the stage count, unrolling,
//    bulk-copy chunking or mbarrier polling; the timeline showed why: the
//    tail tile's element-by-element path took 4 µs to reduce and 5 µs to
//    rescan. Without a tail tile (n = 16128) the scan took 7.3 µs, and
//    2^24 - 4096 elements ran at 83.9% of copy against 78.3% for 2^24. The
//    library pads its tail tile instead and runs the whole-tile code.
//
// Kernel `ws` (persistent CTAs; every CTA loops over tiles taken from a global
// atomic counter). Warp roles inside one CTA:
//   warps [0, CW)        reduce squad: wait for the tile to land in shared
//                        memory, reduce it, publish the tile aggregate at once
//                        (never waits for any other tile), hand per-thread and
//                        per-warp sums to the scan squad.
//   warps [CW, 2CW)      scan squad: wait for the sums and for the tile's
//                        exclusive prefix, rescan in place in shared memory.
//   warp 2CW             producer (lane 0): wait for a free stage, take the next
//                        tile index from the counter, issue one
//                        cp.async.bulk global->shared with mbarrier complete_tx.
//   warp 2CW+1           lookahead warp: for this CTA's tiles in order, sums the
//                        published aggregates from where it stopped for the
//                        previous tile of this CTA up to the current tile
//                        ("incremental lookahead"); it runs ahead of the compute
//                        squads, bounded only by the number of stages.
//   warp 2CW+2           store warp (lane 0): cp.async.bulk shared->global of the
//                        scanned tile, then releases the stage.
// Per stage s there are mbarriers: full (producer expect_tx + TMA bytes),
// idx (tile index ready, for the lookahead), sums (reduce -> scan, CW*32
// arrivals), pfx (lookahead -> scan), scanned (scan -> store, CW*32 arrivals)
// and empty (store -> producer).
//
// Status: one 64-bit word per tile, value in the high 32 bits, low 32 bits =
// (epoch << 2) | {0 not ready, 1 aggregate, 2 inclusive prefix}; entries
// `spread` words apart; relaxed gpu-scope loads and stores (the packed word
// makes value and state one atomic access). Only tile 0 ever publishes state 2
// (its aggregate is its inclusive prefix); the lookahead accepts state 2
// anywhere.
//
// Forward progress does not depend on block scheduling: a tile index is only
// handed out (atomicAdd) to a CTA that is already running and keeps running,
// and a tile only ever waits on aggregates of tiles with smaller indices, which
// were handed out earlier to running CTAs. By induction on the smallest tile
// whose aggregate is unpublished, its CTA's earlier (smaller) tiles can all get
// their prefixes, be stored and free their stages, so it gets loaded and
// reduced. The grid is sized to what is resident (blocks/SM x SMs) anyway.
//
// Every wait loop has a watchdog (clock64 based, ~2 s) that prints and traps.
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)

#ifndef UNR_VALUE
#define UNR_VALUE 63
#endif
constexpr int kUnroll = UNR_VALUE;
#ifndef WATCH_CYCLES
#define WATCH_CYCLES 4000000000ll  // ~2 s at 1.98 GHz
#endif

// ---------------------------------------------------------------------------
// Small device helpers
// ---------------------------------------------------------------------------
__device__ __forceinline__ unsigned long long ld_relaxed(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_relaxed(unsigned long long* p, unsigned long long v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// Watchdog: call tick() once per failed poll; after ~WATCH_CYCLES it prints and traps.
struct Watch {
  unsigned it = 0;
  long long t0 = 0;
  __device__ __forceinline__ void tick(int role, long long a, long long b) {
    if ((++it & 255u) == 0) {
      const long long now = clock64();
      if (t0 == 0) t0 = now;
      else if (now - t0 > WATCH_CYCLES) {
        printf("WATCHDOG block %d thread %d role %d a=%lld b=%lld\n", (int)blockIdx.x, (int)threadIdx.x, role, a, b);
        __trap();
      }
    }
  }
};

__device__ __forceinline__ unsigned smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void mbar_init(unsigned long long* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned long long* bar) {
  asm volatile("{ .reg .b64 st; mbarrier.arrive.shared::cta.b64 st, [%0]; }" ::"r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned long long* bar, unsigned bytes) {
  asm volatile("{ .reg .b64 st; mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1; }" ::"r"(smem_u32(bar)), "r"(bytes)
               : "memory");
}
#ifdef SPIN_TEST
#define MBAR_WAIT_OP "mbarrier.test_wait.parity.shared::cta.b64"
#else
#define MBAR_WAIT_OP "mbarrier.try_wait.parity.shared::cta.b64"
#endif
__device__ __forceinline__ bool mbar_try_wait(unsigned long long* bar, unsigned parity) {
  unsigned ok;
  asm volatile(
      "{ .reg .pred p; " MBAR_WAIT_OP " p, [%1], %2; selp.u32 %0, 1, 0, p; }"
      : "=r"(ok)
      : "r"(smem_u32(bar)), "r"(parity)
      : "memory");
  return ok != 0;
}
// Waits for the completion of the phase with the given parity (acquire, CTA scope).
__device__ __forceinline__ void mbar_wait(unsigned long long* bar, unsigned parity, int role, long long k) {
  if (mbar_try_wait(bar, parity)) return;
  Watch w;
  while (!mbar_try_wait(bar, parity)) w.tick(role, k, parity);
}
// 1D bulk copy global -> shared, completion signalled on the mbarrier (tx bytes).
__device__ __forceinline__ void bulk_load(void* smem_dst, const void* gmem_src, unsigned bytes, unsigned long long* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(smem_u32(smem_dst)),
      "l"(gmem_src), "r"(bytes), "r"(smem_u32(bar))
      : "memory");
}
// 1D bulk copy shared -> global, bulk-group completion.
__device__ __forceinline__ void bulk_store(void* gmem_dst, const void* smem_src, unsigned bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(gmem_dst), "r"(smem_u32(smem_src)), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory"); }
template <int N> __device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory"); }
__device__ __forceinline__ void fence_proxy_async_smem() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
__device__ __forceinline__ void fence_mbar_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
__device__ __forceinline__ void named_bar_sync(int id, int threads) { asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory"); }

__device__ __forceinline__ unsigned long long pack(unsigned value, unsigned epoch, unsigned state) {
  return ((unsigned long long)value << 32) | (unsigned long long)((epoch << 2) | state);
}

// ---------------------------------------------------------------------------
// Incremental lookahead (one full warp). (cur, acc): acc = sum of the tiles
// [0, cur). Advances cur to target, consuming the longest run of published
// entries starting at cur; an inclusive prefix (state 2) inside the run resets
// the base. LA: entries per lane per poll (32*LA entries per round).
// ---------------------------------------------------------------------------
template <int LA>
__device__ __forceinline__ void lookahead_walk(const unsigned long long* status, int spread, unsigned epoch, int& cur,
                                               unsigned& acc, int target, unsigned retry_ns) {
  const int lane = (int)(threadIdx.x & 31u);
  Watch w;
  while (cur < target) {
    unsigned long long x[LA];
#pragma unroll
    for (int i = 0; i < LA; ++i) {
      const int j = cur + 32 * i + lane;
      x[i] = j < target ? ld_relaxed(status + (long long)j * spread) : 0ull;
    }
    bool progressed = false;
#pragma unroll
    for (int i = 0; i < LA; ++i) {
      const int j = cur + lane;  // cur has advanced by 32 per fully consumed row
      const unsigned lo = (unsigned)x[i];
      const unsigned st = (j < target && (lo >> 2) == epoch) ? (lo & 3u) : 0u;
      const unsigned ready = __ballot_sync(~0u, st != 0);
      const int cnt = ready == ~0u ? 32 : __ffs(~ready) - 1;  // contiguous run from lane 0
      if (cnt == 0) break;
      const unsigned incl = __ballot_sync(~0u, st == 2 && lane < cnt);
      const int h = incl ? 31 - __clz(incl) : -1;
      const unsigned v = (unsigned)(x[i] >> 32);
      const unsigned s = __reduce_add_sync(~0u, (lane > h && lane < cnt) ? v : 0u);
      const unsigned base = __shfl_sync(~0u, v, h < 0 ? 0 : h);
      acc = (h >= 0 ? base : acc) + s;
      cur += cnt;
      progressed = true;
      if (cnt < 32) break;
    }
    if (!progressed) {
      if (retry_ns) __nanosleep(retry_ns);
      w.tick(4, cur, target);
    }
  }
}

// ---------------------------------------------------------------------------
// The warp-specialized kernel.
// CW: warps per compute squad (reduce squad = scan squad size), IPT: items per
// thread (odd -> conflict-free scalar LDS/STS; multiple of 4 with IPT/4 odd ->
// conflict-free 16-byte LDS/STS), S: stages, MB: blocks per SM (launch bounds),
// LA: lookahead entries per lane.
// ---------------------------------------------------------------------------
template <int CW, int IPT, int S, int MB, int LA>
struct WsCfg {
  static constexpr int CT = CW * 32;             // compute threads per squad
  static constexpr int TILE = CT * IPT;          // elements per tile
  static constexpr int TILE_BYTES = TILE * 4;    // multiple of 128
  static constexpr int THREADS = (2 * CW + 3) * 32;
  static constexpr int W_PRODUCER = 2 * CW, W_LOOK = 2 * CW + 1, W_STORE = 2 * CW + 2;
  static_assert(S >= 2, "the store warp releases stage k-1 after issuing tile k: needs S >= 2");
  static_assert(TILE_BYTES % 128 == 0, "");
  static_assert(IPT % 4 != 0 || ((IPT / 4) & 1), "16-byte path wants IPT/4 odd (bank conflicts otherwise)");
};

// Thread-local element range of the tile: [tid*IPT, tid*IPT+IPT).
template <int IPT, bool LAST>
__device__ __forceinline__ unsigned thread_reduce(const unsigned* tile_smem, int tid, const unsigned* gsrc, int valid4, int valid) {
  unsigned sum = 0;
  if constexpr (!LAST && IPT % 4 == 0) {
    const uint4* p = reinterpret_cast<const uint4*>(tile_smem + tid * IPT);
#pragma unroll
    for (int c = 0; c < IPT / 4; ++c) { const uint4 q = p[c]; sum += q.x + q.y + q.z + q.w; }
  } else if constexpr (!LAST) {
#pragma unroll kUnroll
    for (int j = 0; j < IPT; ++j) sum += tile_smem[tid * IPT + j];
  } else {
#pragma unroll 1
    for (int j = 0; j < IPT; ++j) {  // tail tile only: keep it rolled
      const int e = tid * IPT + j;
      if (e < valid4) sum += tile_smem[e];
      else if (e < valid4) sum += tile_smem[e];
      else if (e < valid) sum += gsrc[e];
    }
  }
  return sum;
}

template <int IPT, bool LAST>
__device__ __forceinline__ void thread_rescan(unsigned* tile_smem, int tid, unsigned run, const unsigned* gsrc, unsigned* gdst,
                                              int valid4, int valid) {
  if constexpr (!LAST && IPT % 4 == 0) {
    uint4* p = reinterpret_cast<uint4*>(tile_smem + tid * IPT);
#pragma unroll
    for (int c = 0; c < IPT / 4; ++c) {
      uint4 q = p[c];
      run += q.x; q.x = run; run += q.y; q.y = run; run += q.z; q.z = run; run += q.w; q.w = run;
      p[c] = q;
    }
  } else if constexpr (!LAST) {
#pragma unroll kUnroll
    for (int j = 0; j < IPT; ++j) { const int e = tid * IPT + j; run += tile_smem[e]; tile_smem[e] = run; }
  } else {
#pragma unroll 1
    for (int j = 0; j < IPT; ++j) {  // tail tile only: keep it rolled
      const int e = tid * IPT + j;
      if (e < valid4) { run += tile_smem[e]; tile_smem[e] = run; }
      else if (e < valid) { run += gsrc[e]; gdst[e] = run; }
    }
  }
}

__device__ unsigned g_load_chunks = 1, g_store_chunks = 1;
__device__ unsigned long long g_ts[64][10];
__device__ unsigned long long g_block_start[1024];
__device__ __forceinline__ unsigned long long gtime() { unsigned long long t; asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t)); return t; }
#define TS(tile, what) do { if ((tile) < 64 && (lane_id() == 0)) g_ts[(tile)][(what)] = gtime(); } while (0)
__device__ __forceinline__ unsigned lane_id() { return threadIdx.x & 31u; }

template <int CW, int IPT, int S, int MB, int LA>
__global__ void __launch_bounds__(WsCfg<CW, IPT, S, MB, LA>::THREADS, MB)
    ws(const unsigned* __restrict__ in, unsigned* __restrict__ out, unsigned long long* status, unsigned long long* counter,
       unsigned epoch, long long n, int tiles, int spread, unsigned retry_ns) {
  using C = WsCfg<CW, IPT, S, MB, LA>;
  constexpr int CT = C::CT, TILE = C::TILE, TILE_BYTES = C::TILE_BYTES;
  extern __shared__ __align__(128) unsigned char dsmem[];
  unsigned* stage_data = reinterpret_cast<unsigned*>(dsmem);  // S * TILE
  __shared__ __align__(8) unsigned long long bar_full[S], bar_idx[S], bar_sums[S], bar_pfx[S], bar_scanned[S], bar_empty[S];
  __shared__ int sh_tile[S];
  __shared__ unsigned sh_prefix[S];
  __shared__ unsigned sh_tsum[S][CT];
  __shared__ unsigned sh_wsum[S][CW];

  const int warp = (int)(threadIdx.x >> 5), lane = (int)(threadIdx.x & 31u);
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) {
      mbar_init(&bar_full[s], 1);
      mbar_init(&bar_idx[s], 1);
      mbar_init(&bar_sums[s], CT);
      mbar_init(&bar_pfx[s], 1);
      mbar_init(&bar_scanned[s], CT);
      mbar_init(&bar_empty[s], 1);
    }
    fence_mbar_init();
  }
  __syncthreads();  // the only CTA-wide barrier; roles split below
  if (threadIdx.x == 0) { g_block_start[blockIdx.x % 1024] = gtime(); }

  if (warp < CW) {
    // ------------------------------- reduce squad
    const int tid = (int)threadIdx.x;  // 0..CT-1
    for (int k = 0;; ++k) {
      const int s = k % S;
      const unsigned par = (unsigned)(k / S) & 1u;
      mbar_wait(&bar_full[s], par, 0, k);
      { const int t_ = sh_tile[s]; if (t_ < tiles) TS(t_, 2); }
      const int tile = sh_tile[s];
      if (tile >= tiles) break;
      const long long gbase = (long long)tile * TILE;
      const unsigned* tsm = stage_data + (size_t)s * TILE;
      unsigned tsum;
      if (gbase + TILE <= n) {
        tsum = thread_reduce<IPT, false>(tsm, tid, in + gbase, TILE, TILE);
      } else {
        const int valid = (int)(n - gbase), valid4 = valid & ~3;
        tsum = thread_reduce<IPT, true>(tsm, tid, in + gbase, valid4, valid);
      }
      const unsigned wsum = __reduce_add_sync(~0u, tsum);
      sh_tsum[s][tid] = tsum;
      if (lane == 0) sh_wsum[s][warp] = wsum;
      named_bar_sync(1, CT);  // all warp sums of this tile are in shared memory
      if (tid == 0) {
        unsigned total = 0;
#pragma unroll
        for (int w = 0; w < CW; ++w) total += sh_wsum[s][w];
        st_relaxed(status + (long long)tile * spread, pack(total, epoch, tile == 0 ? 2u : 1u));
        TS(tile, 3);
      }
      mbar_arrive(&bar_sums[s]);  // release: thread and warp sums visible to the scan squad
    }
  } else if (warp < 2 * CW) {
    // ------------------------------- scan squad
    const int tid = (int)threadIdx.x - CT;  // 0..CT-1
    const int sw = warp - CW;
    for (int k = 0;; ++k) {
      const int s = k % S;
      const unsigned par = (unsigned)(k / S) & 1u;
      mbar_wait(&bar_full[s], par, 1, k);
      const int tile = sh_tile[s];
      if (tile >= tiles) break;
      mbar_wait(&bar_sums[s], par, 1, k);
      const unsigned ts = sh_tsum[s][tid];
      unsigned x = ts;
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) { const unsigned o = __shfl_up_sync(~0u, x, d); if (lane >= d) x += o; }
      unsigned before = 0;
#pragma unroll
      for (int w = 0; w < CW; ++w) if (w < sw) before += sh_wsum[s][w];
      mbar_wait(&bar_pfx[s], par, 1, k);
      TS(tile, 5);
      const unsigned run = sh_prefix[s] + before + (x - ts);
      const long long gbase = (long long)tile * TILE;
      unsigned* tsm = stage_data + (size_t)s * TILE;
      if (gbase + TILE <= n) {
        thread_rescan<IPT, false>(tsm, tid, run, in + gbase, out + gbase, TILE, TILE);
      } else {
        const int valid = (int)(n - gbase), valid4 = valid & ~3;
        thread_rescan<IPT, true>(tsm, tid, run, in + gbase, out + gbase, valid4, valid);
      }
      fence_proxy_async_smem();  // generic-proxy smem writes -> visible to the bulk store (async proxy)
      mbar_arrive(&bar_scanned[s]);
      TS(tile, 6);
    }
  } else if (warp == C::W_PRODUCER) {
    // ------------------------------- producer: tile index + bulk load
    if (lane != 0) return;
    for (int k = 0;; ++k) {
      const int s = k % S;
      if (k >= S) mbar_wait(&bar_empty[s], (unsigned)(k / S - 1) & 1u, 2, k);
      const long long t = (long long)atomicAdd(counter, 1ull);
      const int tile = t < tiles ? (int)t : tiles;  // sentinel: tiles
      sh_tile[s] = tile;
      mbar_arrive(&bar_idx[s]);  // release sh_tile to the lookahead warp
      if (tile >= tiles) {
        mbar_arrive(&bar_full[s]);  // consumers read the sentinel and leave
        break;
      }
      const long long gbase = (long long)tile * TILE;
      const long long rem = n - gbase;
      const unsigned bytes = rem >= TILE ? (unsigned)TILE_BYTES : (unsigned)((rem & ~3ll) * 4);  // multiple of 16
      if (bytes) {
        mbar_arrive_expect_tx(&bar_full[s], bytes);
        {
          const unsigned chunk = ((bytes + g_load_chunks - 1) / g_load_chunks + 15u) & ~15u;
          for (unsigned off = 0; off < bytes; off += chunk)
            bulk_load((unsigned char*)(stage_data + (size_t)s * TILE) + off, (const unsigned char*)(in + gbase) + off, bytes - off < chunk ? bytes - off : chunk, &bar_full[s]);
          TS(tile, 1);
        }
      } else {
        mbar_arrive(&bar_full[s]);
      }
    }
  } else if (warp == C::W_LOOK) {
    // ------------------------------- lookahead warp
    int cur = 0;
    unsigned acc = 0;
    for (int k = 0;; ++k) {
      const int s = k % S;
      mbar_wait(&bar_idx[s], (unsigned)(k / S) & 1u, 3, k);
      const int tile = sh_tile[s];
      if (tile >= tiles) break;
      lookahead_walk<LA>(status, spread, epoch, cur, acc, tile, retry_ns);  // tile indices of a CTA increase
      if (lane == 0) {
        sh_prefix[s] = acc;
        TS(tile, 4);
        mbar_arrive(&bar_pfx[s]);
      }
      __syncwarp();
    }
  } else {
    // ------------------------------- store warp: bulk store, release stage
    if (lane != 0) return;
    long long last_tile = -1;
    for (int k = 0;; ++k) {
      const int s = k % S;
      const unsigned par = (unsigned)(k / S) & 1u;
      mbar_wait(&bar_full[s], par, 5, k);
      const int tile = sh_tile[s];
      if (tile >= tiles) break;
      mbar_wait(&bar_scanned[s], par, 5, k);
      TS(tile, 7);
      fence_proxy_async_smem();
      const long long gbase = (long long)tile * TILE;
      const long long rem = n - gbase;
      const unsigned bytes = rem >= TILE ? (unsigned)TILE_BYTES : (unsigned)((rem & ~3ll) * 4);
      if (bytes) {
        const unsigned chunk = ((bytes + g_store_chunks - 1) / g_store_chunks + 15u) & ~15u;
        for (unsigned off = 0; off < bytes; off += chunk)
          bulk_store((unsigned char*)(out + gbase) + off, (const unsigned char*)(stage_data + (size_t)s * TILE) + off, bytes - off < chunk ? bytes - off : chunk);
      }
      bulk_commit();
      // Release the previous stage once its store has finished reading shared memory
      // (keeps one store in flight while the next tile is scanned).
      bulk_wait_read<1>();
      TS(tile, 8);
      last_tile = tile;
      if (k >= 1) mbar_arrive(&bar_empty[(k - 1) % S]);
    }
    bulk_wait_all<0>();  // all output written before the CTA retires
    if (last_tile >= 0) TS(last_tile, 9);
  }
}

// ---------------------------------------------------------------------------
// Baseline from experiments/single_pass_status.cu: non-persistent, one tile per
// block from the atomic counter, decoupled look-back (W = 1), delays, spread.
// (Watchdog added to its poll loop.)
// ---------------------------------------------------------------------------
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }
__device__ __forceinline__ int pad(int c) { return c + (c >> 3); }

__device__ __noinline__ unsigned np_look_back(unsigned long long* status, long long tile, unsigned epoch, unsigned first_delay,
                                              unsigned retry_delay, int spread) {
  if (first_delay) __nanosleep(first_delay);
  const unsigned lane = threadIdx.x & 31u;
  long long window_end = tile - 1;
  unsigned excl = 0;
  unsigned fails = 0;  // watchdog without printf (keeps the baseline free of spills)
  while (true) {
    const long long p = window_end - 31 + (long long)lane;
    const unsigned long long x = ld_relaxed(status + (p < 0 ? 0 : p) * spread);
    const unsigned flag = (unsigned)x;
    unsigned state = (flag >> 2) == epoch ? (flag & 3u) : 0u;
    unsigned val = (unsigned)(x >> 32);
    if (p < 0) { state = 2; val = 0; }
    const unsigned prefix_lanes = __ballot_sync(~0u, state == 2);
    const unsigned start = prefix_lanes ? 31u - __clz((int)prefix_lanes) : 0u;
    const bool ok = lane < start || state != 0;
    if (__all_sync(~0u, ok)) {
      excl += __reduce_add_sync(~0u, lane >= start ? val : 0u);
      if (prefix_lanes) break;
      window_end -= 32;
    } else {
      if (retry_delay) __nanosleep(retry_delay);
      if (++fails > (1u << 25)) __trap();  // >= ~10 s with a 300 ns retry delay
    }
  }
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

template <int T, int I, int MB>
__global__ void __launch_bounds__(T, MB) np(const unsigned* in, unsigned* out, unsigned long long* status, unsigned long long* counter,
                                           unsigned epoch, long long tiles, unsigned first_delay, unsigned retry_delay, int spread) {
  constexpr int TILE = T * I, C = I / 4, CHUNKS = TILE / 4;
  extern __shared__ uint4 buf[];
  __shared__ long long sh_tile;
  __shared__ unsigned warp_tot[T / 32];
  __shared__ unsigned sh_prefix;
  if (threadIdx.x == 0) sh_tile = (long long)atomicAdd(counter, 1ull);
  __syncthreads();
  const long long tile = sh_tile;
  const uint4* in4 = (const uint4*)in;
  uint4* out4 = (uint4*)out;
#pragma unroll
  for (int v = 0; v < C; ++v) { int c = v * T + threadIdx.x; cp_async16(&buf[pad(c)], in4 + tile * CHUNKS + c); }
  cp_commit();
  cp_wait<0>();
  __syncthreads();
  unsigned sum = 0;
#pragma unroll
  for (int c = 0; c < C; ++c) { uint4 q = buf[pad(threadIdx.x * C + c)]; sum += q.x + q.y + q.z + q.w; }
  unsigned total;
  const unsigned thread_prefix = block_excl_scan<T>(sum, warp_tot, total);
  if (threadIdx.x < 32) {
    unsigned before = 0;
    if (tile == 0) {
      if (threadIdx.x == 0) st_relaxed(status, pack(total, epoch, 2u));
    } else {
      if (threadIdx.x == 0) st_relaxed(status + tile * spread, pack(total, epoch, 1u));
      before = np_look_back(status, tile, epoch, first_delay, retry_delay, spread);
      if (threadIdx.x == 0) st_relaxed(status + tile * spread, pack(before + total, epoch, 2u));
    }
    if (threadIdx.x == 0) sh_prefix = before;
  }
  __syncthreads();
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
}

// ---------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------
struct Ctx {
  unsigned* in; unsigned* out; unsigned long long* status; unsigned long long* counter;
  unsigned epoch; long long n; const std::vector<unsigned>* ref; int sms; long long total_bad;
};

static long long check(Ctx& c, const char* name) {
  std::vector<unsigned> got(c.n);
  CK(cudaMemcpy(got.data(), c.out, c.n * 4, cudaMemcpyDeviceToHost));
  long long bad = 0;
  for (long long i = 0; i < c.n; ++i)
    if (got[i] != (*c.ref)[i]) {
      if (bad < 3) printf("  !!! MISMATCH %s at %lld: got %u want %u\n", name, i, got[i], (*c.ref)[i]);
      ++bad;
    }
  if (bad) printf("  !!!!!!!! %s: %lld WRONG ELEMENTS (n=%lld) !!!!!!!!\n", name, bad, c.n);
  c.total_bad += bad;
  return bad;
}

// runs: 28 timed (drop 3, median) or, if check_only, 2 checked runs.
template <class Launch>
static void time_it(Ctx& c, const char* name, float copy_ms, Launch launch, const char* extra, bool check_only = false) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  std::vector<float> ms;
  const int runs = check_only ? 2 : 28;
  for (int r = 0; r < runs; ++r) {
    const bool checked = check_only || r == 0;
    // Poison: the whole output before a checked run; only the first and last 64 bytes
    // before timed runs (a full memset leaves dirty lines in L2 that distort the timing).
    if (checked) CK(cudaMemsetAsync(c.out, 0xAB, c.n * 4));
    else { CK(cudaMemsetAsync(c.out, 0xAB, 64)); CK(cudaMemsetAsync(c.out + c.n - 16, 0xAB, 64)); }
    CK(cudaMemsetAsync(c.counter, 0, 8));
    CK(cudaEventRecord(a));
    launch(++c.epoch);
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    CK(cudaGetLastError());
    float t; CK(cudaEventElapsedTime(&t, a, b));
    if (r >= 3) ms.push_back(t);
    if (checked) check(c, name);
  }
  CK(cudaEventDestroy(a)); CK(cudaEventDestroy(b));
  if (check_only) { printf("%-34s n=%lld %s  checked\n", name, c.n, extra); return; }
  std::sort(ms.begin(), ms.end());
  const float m = ms[ms.size() / 2];
  printf("%-34s n=2^%d %s  %.4f ms  %.1f%% of copy\n", name, 63 - __builtin_clzll(c.n), extra, m, 100.0 * copy_ms / m);
  fflush(stdout);
}

template <int CW, int IPT, int S, int MB, int LA>
static void bench_ws(Ctx& c, float copy_ms, int spread, unsigned retry_ns, bool check_only = false) {
  using Cf = WsCfg<CW, IPT, S, MB, LA>;
  const size_t smem = (size_t)S * Cf::TILE_BYTES;
  auto k = ws<CW, IPT, S, MB, LA>;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  int per_sm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, Cf::THREADS, smem));
  if (per_sm < 1) { printf("ws CW%d IPT%d S%d MB%d: does not fit\n", CW, IPT, S, MB); return; }
  const long long tiles = (c.n + Cf::TILE - 1) / Cf::TILE;
  const long long grid = std::min<long long>(tiles, (long long)std::min(per_sm, MB) * c.sms);
  char name[96], extra[128];
  snprintf(name, sizeof name, "ws w%d x%d S%d MB%d LA%d", CW, IPT, S, MB, LA);
  snprintf(extra, sizeof extra, "thr %d tileKB %.1f smemKB %.0f occ %d grid %lld spread %d retry %u%s", Cf::THREADS,
           Cf::TILE_BYTES / 1024.0, smem / 1024.0, per_sm, grid, spread, retry_ns, per_sm < MB ? " (OCC<MB!)" : "");
  time_it(c, name, copy_ms,
          [&](unsigned e) { k<<<(unsigned)grid, Cf::THREADS, smem>>>(c.in, c.out, c.status, c.counter, e, c.n, (int)tiles, spread, retry_ns); },
          extra, check_only);
}

static void bench_np(Ctx& c, float copy_ms) {
  constexpr int T = 256, I = 16, MB = 8, TILE = T * I, CHUNKS = TILE / 4, PADDED = CHUNKS + CHUNKS / 8;
  const unsigned first_delay = 1000, retry_delay = 300;
  const int spread = 8;
  const size_t smem = (size_t)PADDED * 16;
  auto k = np<T, I, MB>;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  int per_sm = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, T, smem));
  const long long tiles = c.n / TILE;
  if (tiles * TILE != c.n) { printf("np: n not a multiple of the tile, skipped\n"); return; }
  char extra[96];
  snprintf(extra, sizeof extra, "blocks/SM %d delays %u/%u spread %d", per_sm, first_delay, retry_delay, spread);
  time_it(c, "np 256x16 MB8 (baseline)", copy_ms,
          [&](unsigned e) { k<<<(unsigned)tiles, T, smem>>>(c.in, c.out, c.status, c.counter, e, tiles, first_delay, retry_delay, spread); },
          extra);
}

// Configurations: <CW, IPT, S, MB, LA>, spread, retry_ns.
static void all_ws(Ctx& c, float copy_ms, bool check_only) {
  bench_ws<4, 63, 4, 1, 4>(c, copy_ms, 1, 0, check_only);    // CCCL-like: 4+4+3 warps, 63 ipt, 32 KB tiles
  bench_ws<4, 63, 4, 1, 4>(c, copy_ms, 8, 0, check_only);
  bench_ws<4, 63, 6, 1, 4>(c, copy_ms, 1, 0, check_only);    // 6 stages, 189 KB
  bench_ws<4, 63, 3, 2, 4>(c, copy_ms, 1, 0, check_only);    // 2 CTAs/SM, 3 stages each
  bench_ws<4, 31, 4, 2, 4>(c, copy_ms, 1, 0, check_only);    // 16 KB tiles, 2 CTAs/SM
  bench_ws<4, 31, 6, 2, 4>(c, copy_ms, 1, 0, check_only);
  bench_ws<4, 31, 6, 2, 4>(c, copy_ms, 8, 64, check_only);
  bench_ws<2, 63, 4, 2, 4>(c, copy_ms, 1, 0, check_only);    // 2+2+3 warps
  bench_ws<2, 31, 4, 4, 4>(c, copy_ms, 1, 0, check_only);    // 8 KB tiles, 4 CTAs/SM
  bench_ws<8, 31, 4, 1, 4>(c, copy_ms, 1, 0, check_only);    // 8+8+3 warps, 31 KB tiles
  bench_ws<4, 20, 6, 2, 4>(c, copy_ms, 1, 0, check_only);    // 16-byte LDS path, 10 KB tiles
  bench_ws<4, 63, 4, 1, 8>(c, copy_ms, 1, 0, check_only);    // wider lookahead poll
}

#ifndef OVERHEAD_MAIN
int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const long long n_max = (1ll << 28);
  unsigned *d_in, *d_out; unsigned long long *d_status, *d_counter;
  CK(cudaMalloc(&d_in, n_max * 4)); CK(cudaMalloc(&d_out, n_max * 4));
  const size_t status_bytes = (size_t)(n_max / 1024 + 1024) * 64;  // >= tiles * spread(8) * 8 for tiles >= 1024 elements
  CK(cudaMalloc(&d_status, status_bytes)); CK(cudaMemset(d_status, 0, status_bytes));
  CK(cudaMalloc(&d_counter, 8));
  unsigned epoch = 0;
  long long total_bad = 0;
  for (int lg : {24, 28, -1}) {
    const bool odd = lg < 0;
    const long long n = odd ? (1ll << 24) + 12345 : 1ll << lg;
    std::vector<unsigned> h(n), ref(n);
    unsigned long long x = 0x1234567 + (odd ? 99 : lg);
    unsigned run = 0;
    for (long long i = 0; i < n; ++i) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; h[i] = (unsigned)x; run += h[i]; ref[i] = run; }
    CK(cudaMemcpy(d_in, h.data(), n * 4, cudaMemcpyHostToDevice));
    Ctx c{d_in, d_out, d_status, d_counter, epoch, n, &ref, sms, 0};
    float copy_ms = 0;
    if (!odd) {
      cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
      std::vector<float> ms;
      for (int r = 0; r < 28; ++r) {
        CK(cudaEventRecord(a)); CK(cudaMemcpyAsync(d_out, d_in, n * 4, cudaMemcpyDeviceToDevice)); CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b)); float t; CK(cudaEventElapsedTime(&t, a, b)); if (r >= 3) ms.push_back(t);
      }
      std::sort(ms.begin(), ms.end());
      copy_ms = ms[ms.size() / 2];
      printf("n=2^%d memcpy D2D %.4f ms (%.0f GB/s)\n", lg, copy_ms, 2.0 * n * 4 / copy_ms / 1e6);
      bench_np(c, copy_ms);
      all_ws(c, copy_ms, false);
      bench_np(c, copy_ms);  // again at the end (drift check)
    } else {
      printf("odd n = 2^24 + 12345 = %lld: correctness only\n", n);
      all_ws(c, copy_ms, true);
    }
    epoch = c.epoch;
    total_bad += c.total_bad;
  }
  printf(total_bad ? "!!!!!!!! TOTAL WRONG ELEMENTS: %lld !!!!!!!!\n" : "all outputs correct (%lld wrong)\n", total_bad);
  cudaFree(d_in); cudaFree(d_out); cudaFree(d_status); cudaFree(d_counter);
  return total_bad ? 1 : 0;
}
#endif

#ifdef OVERHEAD_MAIN
__global__ void empty_kernel(int* p) { if (p && threadIdx.x == 12345) *p = 1; }

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const long long n_max = 1ll << 28;
  unsigned *d_in, *d_out; unsigned long long *d_status, *d_counter;
  CK(cudaMalloc(&d_in, n_max * 4)); CK(cudaMalloc(&d_out, n_max * 4));
  const size_t status_bytes = (size_t)(n_max / 1024 + 1024) * 64;
  CK(cudaMalloc(&d_status, status_bytes)); CK(cudaMemset(d_status, 0, status_bytes));
  CK(cudaMalloc(&d_counter, 8));
  unsigned epoch = 0;
  long long bad = 0;
  // Empty launches: 132 x 352 threads with 0 and 197 KB of dynamic shared memory.
  for (size_t smem : {(size_t)0, (size_t)197136, (size_t)65536}) {
    CK(cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    std::vector<float> ms;
    for (int r = 0; r < 28; ++r) {
      CK(cudaEventRecord(a)); empty_kernel<<<sms, 352, smem>>>(nullptr); CK(cudaEventRecord(b));
      CK(cudaEventSynchronize(b)); float t; CK(cudaEventElapsedTime(&t, a, b)); if (r >= 3) ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    printf("empty kernel %d x 352, dynamic smem %zu: %.2f us\n", sms, smem, 1000 * ms[ms.size() / 2]);
  }
  for (long long nn : {16128ll, 16384ll, 1048320ll, 1048576ll, 16773120ll, 16777216ll}) {
    const long long n = nn;
    const int lg = 63 - __builtin_clzll(n);
    std::vector<unsigned> h(n), ref(n);
    unsigned long long x = 0x1234567 + lg;
    unsigned run = 0;
    for (long long i = 0; i < n; ++i) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; h[i] = (unsigned)x; run += h[i]; ref[i] = run; }
    CK(cudaMemcpy(d_in, h.data(), n * 4, cudaMemcpyHostToDevice));
    Ctx c{d_in, d_out, d_status, d_counter, epoch, n, &ref, sms, 0};
    float copy_ms = 0;
    {
      cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
      std::vector<float> ms;
      for (int r = 0; r < 28; ++r) {
        CK(cudaEventRecord(a)); CK(cudaMemcpyAsync(d_out, d_in, n * 4, cudaMemcpyDeviceToDevice)); CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b)); float t; CK(cudaEventElapsedTime(&t, a, b)); if (r >= 3) ms.push_back(t);
      }
      std::sort(ms.begin(), ms.end());
      copy_ms = ms[ms.size() / 2];
      printf("n=%lld copy %.2f us\n", n, 1000 * copy_ms);
    }
    if (n % 4096 == 0) bench_np(c, copy_ms);
    for (unsigned lc : {1u})
      for (unsigned sc : {1u}) {
        CK(cudaMemcpyToSymbol(g_load_chunks, &lc, 4));
        CK(cudaMemcpyToSymbol(g_store_chunks, &sc, 4));
        printf("load chunks %u store chunks %u: ", lc, sc);
        bench_ws<4, 63, 6, 1, 4>(c, copy_ms, 1, 0);
      }
    unsigned one = 1;
    CK(cudaMemcpyToSymbol(g_load_chunks, &one, 4));
    CK(cudaMemcpyToSymbol(g_store_chunks, &one, 4));
    bench_ws<4, 31, 6, 1, 4>(c, copy_ms, 1, 0);
    if (lg <= 14) {
      // One more run of the default shape, its per-tile timeline (ns from the first block's start).
      std::vector<unsigned long long> zero(64 * 10, 0), bs(1024, ~0ull);
      CK(cudaMemcpyToSymbol(g_ts, zero.data(), zero.size() * 8));
      CK(cudaMemcpyToSymbol(g_block_start, bs.data(), bs.size() * 8));
      bench_ws<4, 63, 6, 1, 4>(c, copy_ms, 1, 0, true);
      std::vector<unsigned long long> ts(64 * 10);
      CK(cudaMemcpyFromSymbol(ts.data(), g_ts, ts.size() * 8));
      CK(cudaMemcpyFromSymbol(bs.data(), g_block_start, bs.size() * 8));
      unsigned long long t0 = *std::min_element(bs.begin(), bs.end()), t1 = 0;
      for (auto b : bs) if (b != ~0ull) t1 = std::max(t1, b);
      printf("  block starts span %llu ns; per tile (ns): load-issued landed published prefix rescan-start rescanned store-start store-read last-write\n", t1 - t0);
      const long long tl = (n + 8063) / 8064;
      for (long long t = 0; t < 64 && t < tl; ++t) {
        if (t > 3 && t < tl - 2) continue;
        printf("  tile %3lld:", t);
        for (int w = 1; w < 10; ++w) printf(" %7lld", ts[t * 10 + w] ? (long long)(ts[t * 10 + w] - t0) : -1ll);
        printf("\n");
      }
    }
    epoch = c.epoch;
    bad += c.total_bad;
  }
  printf(bad ? "!!!!!!!! WRONG ELEMENTS: %lld\n" : "all outputs correct (%lld wrong)\n", bad);
  return bad ? 1 : 0;
}
#endif
