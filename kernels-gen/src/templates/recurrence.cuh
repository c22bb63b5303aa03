// ---- Linear recurrences h[t] = a[t] · h[t-1] + b[t], batched ----
// The CPU's scan_core::recurrence computes the same batches. Every kernel
// takes one recurrence_params (printed from kernels_gen::recurrence, its
// offsets asserted). A batch's steps are cut into `chunks` chunks of
// `chunk_steps` steps; a unit is one (chunk, sequence) pair, numbered
// chunk-major (unit = chunk · sequences + sequence) so that a warp's units
// are neighbouring sequences, which lie side by side in a time-major
// batch. With one chunk, rec_apply alone runs each sequence from its
// initial state. With more, rec_compose writes each unit's composed map
// (h_end = P · h_begin + B), rec_carry scans those maps over the chunks
// into each unit's state on entry, and rec_apply runs each unit from it.
//
// Scalar and diagonal transitions give each value j of the state its own
// recurrence (a lane): a group of G threads (a power of two, at most 32)
// takes one unit, thread g its lanes j = g + G·r for r < R. Matrix
// transitions couple the state's S values: one thread takes a unit and
// holds all of them.
namespace gpu_scan {

// Steps whose loads are issued together before their arithmetic.
template <int PerStep> struct rec_unroll {
  static constexpr int value = PerStep >= 8 ? 1 : 8 / PerStep;
};

__device__ __forceinline__ unsigned long long rec_entry(const recurrence_params& p, unsigned long long q,
                                                        unsigned long long i) {
  const unsigned long long t = p.reverse ? p.steps - 1 - i : i;
  return q * p.sequence_stride + t * p.step_stride;
}

__device__ __forceinline__ void rec_chunk(const recurrence_params& p, unsigned long long chunk,
                                          unsigned long long& begin, unsigned long long& end) {
  begin = chunk * p.chunk_steps;
  end = begin + p.chunk_steps < p.steps ? begin + p.chunk_steps : p.steps;
}

template <class T> __device__ __forceinline__ T rec_load(unsigned long long base, unsigned long long i) {
  return __ldg(reinterpret_cast<const T*>(base) + i);
}

template <class T> __device__ __forceinline__ T* rec_out(unsigned long long base) {
  return reinterpret_cast<T*>(base);
}

// ---- Lanes: scalar (Kind 0) and diagonal (Kind 1) transitions ----

template <class T, int Kind, int G, int R> struct rec_lanes {
  unsigned long long unit, q, chunk;
  unsigned g;
  bool active;

  __device__ __forceinline__ explicit rec_lanes(const recurrence_params& p) {
    const unsigned long long x = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unit = x / G;
    g = (unsigned)(x % G);
    active = unit < p.chunks * p.sequences;
    q = unit % p.sequences;
    chunk = unit / p.sequences;
  }

  __device__ __forceinline__ unsigned long long lane(int r) const { return g + (unsigned long long)G * r; }

  __device__ __forceinline__ T a_at(const recurrence_params& p, unsigned long long e, unsigned long long j) const {
    return Kind == 0 ? rec_load<T>(p.a, e) : rec_load<T>(p.a, e * p.state + j);
  }

  // Steps [begin, end) of unit's sequence: per step, each lane's a and b
  // (and c when Readout) loaded U steps at a time, then Step(u, r, a, b, c).
  template <bool Readout, class Step, class After>
  __device__ __forceinline__ void walk(const recurrence_params& p, unsigned long long begin, unsigned long long end,
                                       Step step, After after) const {
    constexpr int U = rec_unroll<R>::value;
    unsigned long long i = begin;
    for (; i + U <= end; i += U) {
      T av[U][R], bv[U][R], cv[U][R];
      unsigned long long e[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        e[u] = rec_entry(p, q, i + u);
#pragma unroll
        for (int r = 0; r < R; ++r) {
          const unsigned long long j = lane(r);
          if (j < p.state) {
            av[u][r] = a_at(p, e[u], j);
            bv[u][r] = rec_load<T>(p.b, e[u] * p.state + j);
            if (Readout) cv[u][r] = rec_load<T>(p.c, e[u] * p.state + j);
          }
        }
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
          if (lane(r) < p.state) step(r, av[u][r], bv[u][r]);
        }
        after(e[u], cv[u]);
      }
    }
    for (; i < end; ++i) {
      T cv[R];
      const unsigned long long e = rec_entry(p, q, i);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const unsigned long long j = lane(r);
        if (j < p.state) {
          const T a = a_at(p, e, j);
          const T b = rec_load<T>(p.b, e * p.state + j);
          if (Readout) cv[r] = rec_load<T>(p.c, e * p.state + j);
          step(r, a, b);
        }
      }
      after(e, cv);
    }
  }
};

// The sum of v over a group's G threads, in every one of them.
template <class T, int G> __device__ __forceinline__ T rec_group_sum(T v) {
  const unsigned lane = threadIdx.x & 31u;
  const unsigned mask = G == 32 ? 0xffffffffu : (((1u << G) - 1u) << (lane & ~(unsigned)(G - 1)));
#pragma unroll
  for (int offset = G / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(mask, v, offset, G);
  return v;
}

// rec_compose: each unit's composed map, lane by lane.
template <class T, int Kind, int G, int R> __device__ void rec_compose_lanes(const recurrence_params& p) {
  const rec_lanes<T, Kind, G, R> u(p);
  if (!u.active) return;
  unsigned long long begin, end;
  rec_chunk(p, u.chunk, begin, end);
  T P[R], B[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    P[r] = T(1);
    B[r] = T(0);
  }
  u.template walk<false>(
      p, begin, end,
      [&](int r, T a, T b) {
        P[r] = a * P[r];
        B[r] = a * B[r] + b;
      },
      [](unsigned long long, const T*) {});
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const unsigned long long j = u.lane(r);
    if (j < p.state) {
      rec_out<T>(p.agg_a)[u.unit * p.state + j] = P[r];
      rec_out<T>(p.agg_b)[u.unit * p.state + j] = B[r];
    }
  }
}

// rec_carry: one warp per lane (sequence, j) scans the chunks' maps in
// order into each chunk's state on entry: thread k composes a run of
// consecutive chunks, the warp scans the runs, then k writes its chunks'.
template <class T> __device__ void rec_carry_lanes(const recurrence_params& p) {
  const unsigned long long w = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (w >= p.sequences * p.state) return;
  const unsigned k = threadIdx.x & 31u;
  const unsigned long long q = w / p.state, j = w % p.state;
  const unsigned long long per = (p.chunks + 31) / 32;
  const unsigned long long c0 = k * per < p.chunks ? k * per : p.chunks;
  const unsigned long long c1 = c0 + per < p.chunks ? c0 + per : p.chunks;
  const T* agg_a = reinterpret_cast<const T*>(p.agg_a);
  const T* agg_b = reinterpret_cast<const T*>(p.agg_b);
  T P = T(1), B = T(0);
  for (unsigned long long c = c0; c < c1; ++c) {
    const unsigned long long at = (c * p.sequences + q) * p.state + j;
    const T pc = agg_a[at];
    B = pc * B + agg_b[at];
    P = pc * P;
  }
  // Inclusive scan of the runs' maps, earlier runs first.
#pragma unroll
  for (int offset = 1; offset < 32; offset *= 2) {
    const T p_before = __shfl_up_sync(0xffffffffu, P, offset);
    const T b_before = __shfl_up_sync(0xffffffffu, B, offset);
    if (k >= (unsigned)offset) {
      B = P * b_before + B;
      P = P * p_before;
    }
  }
  // Exclusive: the runs before this thread's.
  T p_ex = __shfl_up_sync(0xffffffffu, P, 1);
  T b_ex = __shfl_up_sync(0xffffffffu, B, 1);
  if (k == 0) {
    p_ex = T(1);
    b_ex = T(0);
  }
  const T h0 = p.has_initial ? rec_load<T>(p.initial, q * p.state + j) : T(0);
  T h = p_ex * h0 + b_ex;
  T* carries = rec_out<T>(p.carries);
  for (unsigned long long c = c0; c < c1; ++c) {
    const unsigned long long at = (c * p.sequences + q) * p.state + j;
    carries[at] = h;
    h = agg_a[at] * h + agg_b[at];
  }
}

// rec_apply: each unit's steps from its state on entry, writing the
// states or, with a readout, c · h (summed over the group).
template <class T, int Kind, int G, int R> __device__ void rec_apply_lanes(const recurrence_params& p) {
  const rec_lanes<T, Kind, G, R> u(p);
  if (!u.active) return;
  unsigned long long begin, end;
  rec_chunk(p, u.chunk, begin, end);
  T h[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const unsigned long long j = u.lane(r);
    h[r] = T(0);
    if (j < p.state) {
      if (p.chunks > 1) {
        h[r] = reinterpret_cast<const T*>(p.carries)[u.unit * p.state + j];
      } else if (p.has_initial) {
        h[r] = rec_load<T>(p.initial, u.q * p.state + j);
      }
    }
  }
  T* out = rec_out<T>(p.out);
  auto step = [&](int r, T a, T b) { h[r] = a * h[r] + b; };
  if (p.has_readout) {
    u.template walk<true>(p, begin, end, step, [&](unsigned long long e, const T* c) {
      T y = T(0);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        if (u.lane(r) < p.state) y += c[r] * h[r];
      }
      y = rec_group_sum<T, G>(y);
      if (u.g == 0) out[e] = y;
    });
  } else {
    u.template walk<false>(p, begin, end, step, [&](unsigned long long e, const T*) {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const unsigned long long j = u.lane(r);
        if (j < p.state) out[e * p.state + j] = h[r];
      }
    });
  }
}

// ---- Matrices: S × S transitions, one thread a unit ----

template <class T, int S> struct rec_matrix_unit {
  unsigned long long unit, q, chunk;
  bool active;
  __device__ __forceinline__ explicit rec_matrix_unit(const recurrence_params& p) {
    unit = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    active = unit < p.chunks * p.sequences;
    q = unit % p.sequences;
    chunk = unit / p.sequences;
  }
};

// h = A h + b for one step's A (row-major) and b at entry e.
template <class T, int S>
__device__ __forceinline__ void rec_matrix_step(const recurrence_params& p, unsigned long long e, T (&h)[S]) {
  T a[S * S], b[S], next[S];
#pragma unroll
  for (int m = 0; m < S * S; ++m) a[m] = rec_load<T>(p.a, e * S * S + m);
#pragma unroll
  for (int i = 0; i < S; ++i) b[i] = rec_load<T>(p.b, e * S + i);
#pragma unroll
  for (int i = 0; i < S; ++i) {
    T acc = a[i * S] * h[0];
#pragma unroll
    for (int m = 1; m < S; ++m) acc += a[i * S + m] * h[m];
    next[i] = acc + b[i];
  }
#pragma unroll
  for (int i = 0; i < S; ++i) h[i] = next[i];
}

template <class T, int S> __device__ void rec_compose_matrix(const recurrence_params& p) {
  const rec_matrix_unit<T, S> u(p);
  if (!u.active) return;
  unsigned long long begin, end;
  rec_chunk(p, u.chunk, begin, end);
  // The composed map (M, v): h_end = M h_begin + v.
  T M[S * S], v[S];
#pragma unroll
  for (int m = 0; m < S * S; ++m) M[m] = (m / S == m % S) ? T(1) : T(0);
#pragma unroll
  for (int i = 0; i < S; ++i) v[i] = T(0);
  for (unsigned long long i = begin; i < end; ++i) {
    const unsigned long long e = rec_entry(p, u.q, i);
    T a[S * S], next[S * S];
#pragma unroll
    for (int m = 0; m < S * S; ++m) a[m] = rec_load<T>(p.a, e * S * S + m);
#pragma unroll
    for (int r = 0; r < S; ++r) {
#pragma unroll
      for (int c = 0; c < S; ++c) {
        T acc = a[r * S] * M[c];
#pragma unroll
        for (int m = 1; m < S; ++m) acc += a[r * S + m] * M[m * S + c];
        next[r * S + c] = acc;
      }
    }
#pragma unroll
    for (int m = 0; m < S * S; ++m) M[m] = next[m];
    // v = A v + b, as a step from v.
    T w[S];
#pragma unroll
    for (int r = 0; r < S; ++r) {
      T acc = a[r * S] * v[0];
#pragma unroll
      for (int m = 1; m < S; ++m) acc += a[r * S + m] * v[m];
      w[r] = acc + rec_load<T>(p.b, e * S + r);
    }
#pragma unroll
    for (int r = 0; r < S; ++r) v[r] = w[r];
  }
  T* agg_a = rec_out<T>(p.agg_a);
  T* agg_b = rec_out<T>(p.agg_b);
#pragma unroll
  for (int m = 0; m < S * S; ++m) agg_a[u.unit * S * S + m] = M[m];
#pragma unroll
  for (int i = 0; i < S; ++i) agg_b[u.unit * S + i] = v[i];
}

// One thread a sequence, over its chunks in order (the plan keeps them few).
template <class T, int S> __device__ void rec_carry_matrix(const recurrence_params& p) {
  const unsigned long long q = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (q >= p.sequences) return;
  T h[S];
#pragma unroll
  for (int i = 0; i < S; ++i) h[i] = p.has_initial ? rec_load<T>(p.initial, q * S + i) : T(0);
  const T* agg_a = reinterpret_cast<const T*>(p.agg_a);
  const T* agg_b = reinterpret_cast<const T*>(p.agg_b);
  T* carries = rec_out<T>(p.carries);
  for (unsigned long long c = 0; c < p.chunks; ++c) {
    const unsigned long long unit = c * p.sequences + q;
    T next[S];
#pragma unroll
    for (int i = 0; i < S; ++i) {
      carries[unit * S + i] = h[i];
      T acc = agg_a[unit * S * S + i * S] * h[0];
#pragma unroll
      for (int m = 1; m < S; ++m) acc += agg_a[unit * S * S + i * S + m] * h[m];
      next[i] = acc + agg_b[unit * S + i];
    }
#pragma unroll
    for (int i = 0; i < S; ++i) h[i] = next[i];
  }
}

template <class T, int S> __device__ void rec_apply_matrix(const recurrence_params& p) {
  const rec_matrix_unit<T, S> u(p);
  if (!u.active) return;
  unsigned long long begin, end;
  rec_chunk(p, u.chunk, begin, end);
  T h[S];
#pragma unroll
  for (int i = 0; i < S; ++i) {
    h[i] = T(0);
    if (p.chunks > 1) {
      h[i] = reinterpret_cast<const T*>(p.carries)[u.unit * S + i];
    } else if (p.has_initial) {
      h[i] = rec_load<T>(p.initial, u.q * S + i);
    }
  }
  T* out = rec_out<T>(p.out);
  for (unsigned long long i = begin; i < end; ++i) {
    const unsigned long long e = rec_entry(p, u.q, i);
    rec_matrix_step<T, S>(p, e, h);
    if (p.has_readout) {
      T y = rec_load<T>(p.c, e * S) * h[0];
#pragma unroll
      for (int m = 1; m < S; ++m) y += rec_load<T>(p.c, e * S + m) * h[m];
      out[e] = y;
    } else {
#pragma unroll
      for (int m = 0; m < S; ++m) out[e * S + m] = h[m];
    }
  }
}

}  // namespace gpu_scan
