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

// Steps whose loads are issued together before their arithmetic: eight
// for one lane a thread, two for two or three (four spill for two lanes on
// sm_86 to sm_90), one from four (two spill for four f64 lanes on sm_120).
template <int PerStep> struct rec_unroll {
  static constexpr int value = PerStep >= 4 ? 1 : PerStep == 1 ? 8 : 2;
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

// The sums over a group's G threads of each of U values, spread over the
// group (a butterfly that halves the values a thread holds at each of the
// first log2(U) exchanges, then sums what is left): thread g ends with
// N = max(U / G, 1) totals, those of steps first..first + N, and stores
// them if `owner` (the other threads hold copies).
template <class T, int G, int U> struct rec_group_sums {
  static constexpr int N = U / G > 0 ? U / G : 1;
  int first;
  bool owner;

  __device__ __forceinline__ void reduce(T (&y)[U], unsigned g) {
    const unsigned lane = threadIdx.x & 31u;
    const unsigned mask = G == 32 ? 0xffffffffu : (((1u << G) - 1u) << (lane & ~(unsigned)(G - 1)));
    first = 0;
    int n = U;
#pragma unroll
    for (int offset = G / 2; offset > 0; offset /= 2) {
      if (n > 1) {
        const bool upper = (g & offset) != 0;
#pragma unroll
        for (int i = 0; i < n / 2; ++i) {
          const T send = upper ? y[i] : y[i + n / 2];
          const T keep = upper ? y[i + n / 2] : y[i];
          y[i] = keep + __shfl_xor_sync(mask, send, offset, G);
        }
        if (upper) first += n / 2;
        n /= 2;
      } else {
        y[0] += __shfl_xor_sync(mask, y[0], offset, G);
      }
    }
    owner = G > U ? (g & (unsigned)(G / U - 1)) == 0 : true;
  }
};

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

  // One batch of U steps' values of this thread's lanes.
  template <int U> struct batch {
    T a[U][R], b[U][R], c[U][R];
    // Value by value (a struct copy may go through local memory).
    __device__ __forceinline__ void take(const batch& x) {
#pragma unroll
      for (int u = 0; u < U; ++u) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
          a[u][r] = x.a[u][r];
          b[u][r] = x.b[u][r];
          c[u][r] = x.c[u][r];
        }
      }
    }
  };

  template <bool Readout, int U>
  __device__ __forceinline__ void load(const recurrence_params& p, unsigned long long i, batch<U>& x) const {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const unsigned long long e = rec_entry(p, q, i + u);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const unsigned long long j = lane(r);
        if (j < p.state) {
          x.a[u][r] = a_at(p, e, j);
          x.b[u][r] = rec_load<T>(p.b, e * p.state + j);
          if (Readout) x.c[u][r] = rec_load<T>(p.c, e * p.state + j);
        }
      }
    }
  }

  template <int U, class Step, class After>
  __device__ __forceinline__ void run(const recurrence_params& p, unsigned long long i, const batch<U>& x, Step& step,
                                      After& after) const {
#pragma unroll
    for (int u = 0; u < U; ++u) {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        if (lane(r) < p.state) step(r, x.a[u][r], x.b[u][r]);
      }
      after(rec_entry(p, q, i + u), x.c[u]);
    }
  }

  // A batch's steps from h, writing each step's c · h summed over the group.
  template <int U>
  __device__ __forceinline__ void readout_batch(const recurrence_params& p, unsigned long long i, const batch<U>& x,
                                                T (&h)[R], T* out) const {
    T y[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      y[u] = T(0);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        if (lane(r) < p.state) {
          h[r] = x.a[u][r] * h[r] + x.b[u][r];
          y[u] += x.c[u][r] * h[r];
        }
      }
    }
    rec_group_sums<T, G, U> sums;
    sums.reduce(y, g);
    if (sums.owner) {
#pragma unroll
      for (int v = 0; v < sums.N; ++v) out[rec_entry(p, q, i + sums.first + v)] = y[v];
    }
  }

  // Steps [begin, end) with a readout, pipelined as walk's: the sums of a
  // batch's U steps reduced over the group together.
  __device__ __forceinline__ void walk_readout(const recurrence_params& p, unsigned long long begin,
                                               unsigned long long end, T (&h)[R], T* out) const {
    constexpr int U = rec_unroll<R>::value;
    unsigned long long i = begin;
    if (i + U <= end) {
      batch<U> current;
      load<true>(p, i, current);
      for (; i + 2 * U <= end; i += U) {
        batch<U> next;
        load<true>(p, i + U, next);
        readout_batch(p, i, current, h, out);
        current.take(next);
      }
      readout_batch(p, i, current, h, out);
      i += U;
    }
    for (; i < end; ++i) {
      batch<1> x;
      load<true>(p, i, x);
      readout_batch(p, i, x, h, out);
    }
  }

  // Steps [begin, end) of unit's sequence: per step, each lane's a and b
  // (and c when Readout) loaded U steps at a time, then step(r, a, b) for
  // each lane and after(entry, c) for the step. Pipelined, the next
  // batch's loads are issued before this batch's arithmetic (the apply
  // pass, which streams; the compose pass keeps the registers).
  template <bool Readout, bool Pipelined, class Step, class After>
  __device__ __forceinline__ void walk(const recurrence_params& p, unsigned long long begin, unsigned long long end,
                                       Step step, After after) const {
    constexpr int U = rec_unroll<R>::value;
    unsigned long long i = begin;
    if (!Pipelined) {
      for (; i + U <= end; i += U) {
        batch<U> current;
        load<Readout>(p, i, current);
        run(p, i, current, step, after);
      }
    } else if (i + U <= end) {
      batch<U> current;
      load<Readout>(p, i, current);
      for (; i + 2 * U <= end; i += U) {
        batch<U> next;
        load<Readout>(p, i + U, next);
        run(p, i, current, step, after);
        current.take(next);
      }
      run(p, i, current, step, after);
      i += U;
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
  u.template walk<false, false>(
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

// The affine map (P, B) of x then y: h ↦ y.P · (x.P · h + x.B) + y.B.
template <class T> struct rec_map {
  T P, B;
};
template <class T> __device__ __forceinline__ rec_map<T> rec_then(rec_map<T> x, rec_map<T> y) {
  return rec_map<T>{y.P * x.P, y.P * x.B + y.B};
}

// Inclusive scan of a warp's maps, lanes in order.
template <class T> __device__ __forceinline__ rec_map<T> rec_warp_scan(rec_map<T> m, unsigned k) {
#pragma unroll
  for (int offset = 1; offset < 32; offset *= 2) {
    const rec_map<T> before{__shfl_up_sync(0xffffffffu, m.P, offset), __shfl_up_sync(0xffffffffu, m.B, offset)};
    if (k >= (unsigned)offset) m = rec_then(before, m);
  }
  return m;
}

// rec_carry: Threads threads per lane (sequence, j) — a warp, or the whole
// block when there are many chunks — scan the chunks' maps in order into
// each chunk's state on entry: thread k composes a run of consecutive
// chunks (loads issued eight at a time), the threads scan the runs, then
// k writes its chunks' states.
template <class T, int Threads> __device__ void rec_carry_lanes(const recurrence_params& p) {
  const unsigned long long w = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) / Threads;
  if (w >= p.sequences * p.state) return;
  const unsigned k = threadIdx.x % Threads;
  const unsigned long long q = w / p.state, j = w % p.state;
  const unsigned long long per = (p.chunks + Threads - 1) / Threads;
  const unsigned long long c0 = k * per < p.chunks ? k * per : p.chunks;
  const unsigned long long c1 = c0 + per < p.chunks ? c0 + per : p.chunks;
  const T* agg_a = reinterpret_cast<const T*>(p.agg_a);
  const T* agg_b = reinterpret_cast<const T*>(p.agg_b);
  const unsigned long long stride = p.sequences * p.state;
  const unsigned long long first = q * p.state + j;
  constexpr int U = 8;
  rec_map<T> run{T(1), T(0)};
  unsigned long long c = c0;
  for (; c + U <= c1; c += U) {
    rec_map<T> m[U];
#pragma unroll
    for (int u = 0; u < U; ++u) m[u] = rec_map<T>{agg_a[(c + u) * stride + first], agg_b[(c + u) * stride + first]};
#pragma unroll
    for (int u = 0; u < U; ++u) run = rec_then(run, m[u]);
  }
  for (; c < c1; ++c) run = rec_then(run, rec_map<T>{agg_a[c * stride + first], agg_b[c * stride + first]});

  // The runs before this thread's, composed.
  const unsigned lane = threadIdx.x & 31u;
  const rec_map<T> inclusive = rec_warp_scan(run, lane);
  rec_map<T> before{__shfl_up_sync(0xffffffffu, inclusive.P, 1), __shfl_up_sync(0xffffffffu, inclusive.B, 1)};
  if (lane == 0) before = rec_map<T>{T(1), T(0)};
  if (Threads > 32) {
    constexpr int Warps = Threads / 32;
    __shared__ rec_map<T> totals[Warps];
    const unsigned warp = k / 32;
    if (lane == 31) totals[warp] = inclusive;
    __syncthreads();
    rec_map<T> earlier{T(1), T(0)};
    for (unsigned v = 0; v < warp; ++v) earlier = rec_then(earlier, totals[v]);
    before = rec_then(earlier, before);
  }
  const T h0 = p.has_initial ? rec_load<T>(p.initial, q * p.state + j) : T(0);
  T h = before.P * h0 + before.B;
  T* carries = rec_out<T>(p.carries);
  c = c0;
  for (; c + U <= c1; c += U) {
    rec_map<T> m[U];
#pragma unroll
    for (int u = 0; u < U; ++u) m[u] = rec_map<T>{agg_a[(c + u) * stride + first], agg_b[(c + u) * stride + first]};
#pragma unroll
    for (int u = 0; u < U; ++u) {
      carries[(c + u) * stride + first] = h;
      h = m[u].P * h + m[u].B;
    }
  }
  for (; c < c1; ++c) {
    carries[c * stride + first] = h;
    h = agg_a[c * stride + first] * h + agg_b[c * stride + first];
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
    u.walk_readout(p, begin, end, h, out);
  } else {
    u.template walk<false, true>(p, begin, end, step, [&](unsigned long long e, const T*) {
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const unsigned long long j = u.lane(r);
        if (j < p.state) out[e * p.state + j] = h[r];
      }
    });
  }
}

// ---- Steps across a warp: one-value states whose steps are contiguous ----
// A warp takes a unit and walks its chunk 32 · W steps at a time, thread k
// the W consecutive steps from base + W · k, so that the warp's loads are
// contiguous: each thread composes its steps' maps, the warp scans them,
// and each thread runs its steps from the state the scan gives it.

constexpr int rec_warp_steps = 8;

struct rec_warp_unit {
  unsigned long long unit, q, chunk;
  unsigned k;
  bool active;
  __device__ __forceinline__ explicit rec_warp_unit(const recurrence_params& p) {
    unit = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    k = threadIdx.x & 31u;
    active = unit < p.chunks * p.sequences;
    q = unit % p.sequences;
    chunk = unit / p.sequences;
  }
};

// Thread k's steps of the tile at base: their maps (a, b), loaded, and
// composed into m; Readout also loads c.
template <class T, bool Readout>
__device__ __forceinline__ void rec_warp_tile(const recurrence_params& p, const rec_warp_unit& u,
                                              unsigned long long base, unsigned long long end,
                                              T (&a)[rec_warp_steps], T (&b)[rec_warp_steps],
                                              T (&c)[rec_warp_steps], rec_map<T>& m) {
  m = rec_map<T>{T(1), T(0)};
#pragma unroll
  for (int w = 0; w < rec_warp_steps; ++w) {
    const unsigned long long i = base + (unsigned long long)rec_warp_steps * u.k + w;
    if (i < end) {
      const unsigned long long e = rec_entry(p, u.q, i);
      a[w] = rec_load<T>(p.a, e);
      b[w] = rec_load<T>(p.b, e);
      if (Readout) c[w] = rec_load<T>(p.c, e);
      m = rec_then(m, rec_map<T>{a[w], b[w]});
    }
  }
}

template <class T> __device__ void rec_compose_warp(const recurrence_params& p) {
  const rec_warp_unit u(p);
  if (!u.active) return;
  unsigned long long begin, end;
  rec_chunk(p, u.chunk, begin, end);
  rec_map<T> total{T(1), T(0)};
  for (unsigned long long base = begin; base < end; base += 32 * rec_warp_steps) {
    T a[rec_warp_steps], b[rec_warp_steps], c[rec_warp_steps];
    rec_map<T> m;
    rec_warp_tile<T, false>(p, u, base, end, a, b, c, m);
    const rec_map<T> inclusive = rec_warp_scan(m, u.k);
    total = rec_then(total, rec_map<T>{__shfl_sync(0xffffffffu, inclusive.P, 31),
                                       __shfl_sync(0xffffffffu, inclusive.B, 31)});
  }
  if (u.k == 0) {
    rec_out<T>(p.agg_a)[u.unit] = total.P;
    rec_out<T>(p.agg_b)[u.unit] = total.B;
  }
}

template <class T> __device__ void rec_apply_warp(const recurrence_params& p) {
  const rec_warp_unit u(p);
  if (!u.active) return;
  unsigned long long begin, end;
  rec_chunk(p, u.chunk, begin, end);
  T h = T(0);
  if (p.chunks > 1) {
    h = reinterpret_cast<const T*>(p.carries)[u.unit];
  } else if (p.has_initial) {
    h = rec_load<T>(p.initial, u.q);
  }
  T* out = rec_out<T>(p.out);
  for (unsigned long long base = begin; base < end; base += 32 * rec_warp_steps) {
    T a[rec_warp_steps], b[rec_warp_steps], c[rec_warp_steps];
    rec_map<T> m;
    if (p.has_readout) {
      rec_warp_tile<T, true>(p, u, base, end, a, b, c, m);
    } else {
      rec_warp_tile<T, false>(p, u, base, end, a, b, c, m);
    }
    const rec_map<T> inclusive = rec_warp_scan(m, u.k);
    rec_map<T> before{__shfl_up_sync(0xffffffffu, inclusive.P, 1), __shfl_up_sync(0xffffffffu, inclusive.B, 1)};
    if (u.k == 0) before = rec_map<T>{T(1), T(0)};
    T x = before.P * h + before.B;
#pragma unroll
    for (int w = 0; w < rec_warp_steps; ++w) {
      const unsigned long long i = base + (unsigned long long)rec_warp_steps * u.k + w;
      if (i < end) {
        x = a[w] * x + b[w];
        out[rec_entry(p, u.q, i)] = p.has_readout ? c[w] * x : x;
      }
    }
    const T total_p = __shfl_sync(0xffffffffu, inclusive.P, 31);
    const T total_b = __shfl_sync(0xffffffffu, inclusive.B, 31);
    h = total_p * h + total_b;
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
