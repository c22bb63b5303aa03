// CUB comparator for examples/recurrence_bench.rs's `diag-readout` row
// (issue 47): the diagonal recurrence h[t] = a[t] * h[t-1] + b[t] over 2^12
// sequences x 2^14 steps x a state of 16, f32, sequence-major, with the
// readout y[t] = sum_j c[t][j] * h[t][j], as CUB does it: each (sequence,
// j) lane a segment of an inclusive scan by key of affine maps
// (DeviceScan::InclusiveScanByKey over 2^30 items, the maps gathered from
// the strided arrays by an iterator, the states scattered back), then a
// kernel for the readout. Checked first against a sequential recurrence
// in double on 8 sequences. CUDA events, median of 9 after a warm-up.
//
//   nvcc -O3 -arch=sm_90 -Xcompiler -fopenmp -o recurrence_cub recurrence_bench.cu && ./recurrence_cub

#include <cub/cub.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/iterator/transform_output_iterator.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#define CHECK(x)                                                                               \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));         \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

constexpr long long SEQUENCES = 1 << 12, STEPS = 1 << 14, STATE = 16;
constexpr long long ENTRIES = SEQUENCES * STEPS, VALUES = ENTRIES * STATE;

struct Affine {
  float a, b;
};

// x then y.
struct Compose {
  __host__ __device__ Affine operator()(Affine x, Affine y) const { return Affine{y.a * x.a, y.a * x.b + y.b}; }
};

// Item k of the scan, in lane-major order: lane k / STEPS, step k % STEPS;
// its place in the sequence-major arrays.
__host__ __device__ inline long long place(long long k) {
  const long long lane = k / STEPS, t = k % STEPS;
  return ((lane / STATE) * STEPS + t) * STATE + lane % STATE;
}

struct LaneOf {
  __host__ __device__ long long operator()(long long k) const { return k / STEPS; }
};

struct LoadMap {
  const float* a;
  const float* b;
  __host__ __device__ Affine operator()(long long k) const {
    const long long i = place(k);
    return Affine{a[i], b[i]};
  }
};

__global__ void readout(const float* h, const float* c, float* y, long long entries) {
  const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= entries) return;
  const float4* hv = reinterpret_cast<const float4*>(h + e * STATE);
  const float4* cv = reinterpret_cast<const float4*>(c + e * STATE);
  float sum = 0.0f;
#pragma unroll
  for (int v = 0; v < STATE / 4; ++v) {
    const float4 x = hv[v], w = cv[v];
    sum += w.x * x.x + w.y * x.y + w.z * x.z + w.w * x.w;
  }
  y[e] = sum;
}

// The scan's output iterator: item k's map goes to h[place(k)] (its b).
struct StateOutput {
  float* h;
  long long k;
  __host__ __device__ StateOutput operator+(long long n) const { return StateOutput{h, k + n}; }
  __host__ __device__ StateOutput& operator+=(long long n) {
    k += n;
    return *this;
  }
  struct Ref {
    float* p;
    __host__ __device__ Ref& operator=(Affine m) {
      *p = m.b;
      return *this;
    }
  };
  __host__ __device__ Ref operator[](long long n) const { return Ref{h + place(k + n)}; }
  __host__ __device__ Ref operator*() const { return Ref{h + place(k)}; }
  using difference_type = long long;
  using value_type = void;
  using pointer = void;
  using reference = Ref;
  using iterator_category = cuda::std::random_access_iterator_tag;
};

static uint64_t bits(uint64_t i) {
  uint64_t z = i + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The values recurrence_bench draws: stream `salt`, in [lo, hi).
static std::vector<float> values(long long n, uint64_t salt, float lo, float hi) {
  std::vector<float> v(n);
#pragma omp parallel for
  for (long long i = 0; i < n; ++i) v[i] = lo + (hi - lo) * ((float)(bits(i ^ (salt << 40)) >> 40) / (float)(1u << 24));
  return v;
}

int main() {
  std::printf("CUB %d.%d.%d\n", CUB_MAJOR_VERSION, CUB_MINOR_VERSION, CUB_SUBMINOR_VERSION);
  const std::vector<float> a = values(VALUES, 1, 0.5f, 1.0f), b = values(VALUES, 2, -1.0f, 1.0f),
                           c = values(VALUES, 3, -1.0f, 1.0f);
  float *da, *db, *dc, *dh, *dy;
  CHECK(cudaMalloc(&da, VALUES * 4));
  CHECK(cudaMalloc(&db, VALUES * 4));
  CHECK(cudaMalloc(&dc, VALUES * 4));
  CHECK(cudaMalloc(&dh, VALUES * 4));
  CHECK(cudaMalloc(&dy, ENTRIES * 4));
  CHECK(cudaMemcpy(da, a.data(), VALUES * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b.data(), VALUES * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dc, c.data(), VALUES * 4, cudaMemcpyHostToDevice));

  thrust::counting_iterator<long long> k(0);
  auto keys = thrust::make_transform_iterator(k, LaneOf{});
  auto maps = thrust::make_transform_iterator(k, LoadMap{da, db});
  StateOutput out{dh, 0};
  size_t temp_bytes = 0;
  void* temp = nullptr;
  CHECK(cub::DeviceScan::InclusiveScanByKey(temp, temp_bytes, keys, maps, out, Compose{}, VALUES));
  CHECK(cudaMalloc(&temp, temp_bytes));
  auto run = [&] {
    CHECK(cub::DeviceScan::InclusiveScanByKey(temp, temp_bytes, keys, maps, out, Compose{}, VALUES));
    readout<<<(unsigned)((ENTRIES + 255) / 256), 256>>>(dh, dc, dy, ENTRIES);
  };
  run();
  CHECK(cudaDeviceSynchronize());

  // Check 8 sequences against a sequential recurrence in double.
  std::vector<float> y(8 * STEPS);
  CHECK(cudaMemcpy(y.data(), dy, y.size() * 4, cudaMemcpyDeviceToHost));
  double worst = 0;
  for (long long q = 0; q < 8; ++q) {
    double h[STATE] = {0};
    for (long long t = 0; t < STEPS; ++t) {
      double want = 0;
      for (long long j = 0; j < STATE; ++j) {
        const long long i = (q * STEPS + t) * STATE + j;
        h[j] = (double)a[i] * h[j] + b[i];
        want += (double)c[i] * h[j];
      }
      worst = std::max(worst, std::fabs(y[q * STEPS + t] - want) / (std::fabs(want) + 1.0));
    }
  }

  cudaEvent_t start, end;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&end));
  std::vector<float> times;
  for (int i = 0; i < 9; ++i) {
    CHECK(cudaEventRecord(start));
    run();
    CHECK(cudaEventRecord(end));
    CHECK(cudaEventSynchronize(end));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, end));
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  std::printf("cub diag-readout %lld x %lld x %lld: %.4f ms (CUB %d.%d.%d: InclusiveScanByKey + readout; "
              "largest relative error on 8 sequences %.2e: %s)\n",
              SEQUENCES, STEPS, STATE, times[times.size() / 2], CUB_MAJOR_VERSION, CUB_MINOR_VERSION,
              CUB_SUBMINOR_VERSION, worst, worst < 1e-3 ? "ok" : "MISMATCH");
  return worst < 1e-3 ? 0 : 1;
}
