// CUB comparator for examples/sort_bench.rs: the same sorts of the same
// keys (the same stateless generator, splitmix64 of the index), with CUB's
// DeviceRadixSort (in -> out, not in place; temporary storage allocated once,
// outside the timing):
//   u32        SortKeys, 2^28 u32
//   u32-24     SortKeys, 2^28 u32, bits 0..24
//   u32-desc   SortKeysDescending, 2^28 u32
//   f32        SortKeys, 2^28 f32 (the bits as a float; NaNs included)
//   u64        SortKeys, 2^27 u64
//   pairs      SortPairs, 2^28 u32 keys, u32 values
//   argsort    SortPairs, 2^26 u32 keys, u64 values 0..n (as PyTorch's argsort)
//   records    2^26 32-byte records by their f32 field: the keys gathered,
//              SortPairs with u32 positions, the records gathered (CUB has
//              no sort of records by a function: the usual way round)
//   segmented  DeviceSegmentedSort::StableSortKeys, 2^20 segments of
//              power-law lengths (segment_length), u32 keys
// Each is the median of 25 calls bracketed by CUDA events (3 warm-ups), with
// a device-to-device copy of the keys timed the same way.
//
// Appends "case log2 ms copy_ms checksum" to <dir>/cub-sort.txt, where the
// checksum is a hash of the sorted keys (and values) sort_bench compares.
//
//   nvcc -O3 -arch=sm_90 -o sort_cub cub/sort_bench.cu && ./sort_cub <dir>
#include <cub/cub.cuh>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#define CHECK(x)                                                                      \
  do {                                                                                \
    cudaError_t e = (x);                                                              \
    if (e != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

static uint64_t bits(uint64_t i) {
  uint64_t z = i + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

template <class F>
static float median_ms(F f) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) f();
  std::vector<float> times;
  for (int i = 0; i < 25; ++i) {
    CHECK(cudaEventRecord(a));
    f();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  return times[times.size() / 2];
}

// FNV-1a over bytes (sort_bench.rs: `checksum`).
static uint64_t checksum(const void* p, size_t bytes, uint64_t h = 0xcbf29ce484222325ull) {
  const unsigned char* b = (const unsigned char*)p;
  for (size_t i = 0; i < bytes; ++i) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

static FILE* results;

template <class K, class V>
static void run(const char* name, int log_n, int end_bit, bool descending, bool with_values, bool iota) {
  const size_t n = size_t(1) << log_n;
  std::vector<K> keys(n);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t r = bits(i);
    std::memcpy(&keys[i], &r, sizeof(K));
  }
  std::vector<V> values(with_values ? n : 0);
  for (size_t i = 0; i < values.size(); ++i) values[i] = iota ? (V)i : (V)(bits(i) >> 32);
  K *d_keys, *d_keys_out;
  V *d_values = nullptr, *d_values_out = nullptr;
  CHECK(cudaMalloc(&d_keys, n * sizeof(K)));
  CHECK(cudaMalloc(&d_keys_out, n * sizeof(K)));
  CHECK(cudaMemcpy(d_keys, keys.data(), n * sizeof(K), cudaMemcpyHostToDevice));
  if (with_values) {
    CHECK(cudaMalloc(&d_values, n * sizeof(V)));
    CHECK(cudaMalloc(&d_values_out, n * sizeof(V)));
    CHECK(cudaMemcpy(d_values, values.data(), n * sizeof(V), cudaMemcpyHostToDevice));
  }
  size_t temp_bytes = 0;
  void* temp = nullptr;
  auto sort = [&] {
    if (with_values) {
      if (descending)
        CHECK(cub::DeviceRadixSort::SortPairsDescending(temp, temp_bytes, d_keys, d_keys_out, d_values, d_values_out, (int64_t)n, 0, end_bit));
      else
        CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, d_keys, d_keys_out, d_values, d_values_out, (int64_t)n, 0, end_bit));
    } else {
      if (descending)
        CHECK(cub::DeviceRadixSort::SortKeysDescending(temp, temp_bytes, d_keys, d_keys_out, (int64_t)n, 0, end_bit));
      else
        CHECK(cub::DeviceRadixSort::SortKeys(temp, temp_bytes, d_keys, d_keys_out, (int64_t)n, 0, end_bit));
    }
  };
  sort();
  CHECK(cudaMalloc(&temp, temp_bytes));
  const float ms = median_ms(sort);
  const float copy_ms = median_ms([&] { CHECK(cudaMemcpyAsync(d_keys_out, d_keys, n * sizeof(K), cudaMemcpyDeviceToDevice)); });
  sort();
  CHECK(cudaMemcpy(keys.data(), d_keys_out, n * sizeof(K), cudaMemcpyDeviceToHost));
  uint64_t h = checksum(keys.data(), n * sizeof(K));
  if (with_values) {
    CHECK(cudaMemcpy(values.data(), d_values_out, n * sizeof(V), cudaMemcpyDeviceToHost));
    h = checksum(values.data(), n * sizeof(V), h);
  }
  std::fprintf(results, "%s %d %.5f %.5f %llu\n", name, log_n, ms, copy_ms, (unsigned long long)h);
  std::printf("cub %-9s 2^%d %8.4f ms  copy %8.4f ms  %016llx\n", name, log_n, ms, copy_ms, (unsigned long long)h);
  CHECK(cudaFree(temp));
  CHECK(cudaFree(d_keys));
  CHECK(cudaFree(d_keys_out));
  if (with_values) {
    CHECK(cudaFree(d_values));
    CHECK(cudaFree(d_values_out));
  }
}

// A 32-byte record sorted by its f32 field (sort_bench.rs: `Record`).
struct Record {
  float key;
  uint32_t payload[7];
};

__global__ void record_keys(const Record* records, float* keys, uint32_t* positions, size_t n) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    keys[i] = records[i].key;
    positions[i] = (uint32_t)i;
  }
}

__global__ void gather_records(const Record* records, const uint32_t* positions, Record* out, size_t n) {
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = records[positions[i]];
}

// Record i: its key from the generator's high bits as a float in [-1, 1)
// (sort_bench.rs: `record`), the payload its index and its bits.
static Record record(uint64_t i) {
  const uint64_t r = bits(i);
  Record out;
  out.key = (float)((int32_t)(r >> 32)) / 2147483648.0f;
  for (int j = 0; j < 7; ++j) out.payload[j] = (uint32_t)(j == 0 ? i : r >> (4 * j));
  return out;
}

static void run_records(int log_n) {
  const size_t n = size_t(1) << log_n;
  std::vector<Record> host(n);
  for (size_t i = 0; i < n; ++i) host[i] = record(i);
  Record *d_records, *d_out;
  float *d_keys, *d_keys_out;
  uint32_t *d_pos, *d_pos_out;
  CHECK(cudaMalloc(&d_records, n * sizeof(Record)));
  CHECK(cudaMalloc(&d_out, n * sizeof(Record)));
  CHECK(cudaMalloc(&d_keys, n * sizeof(float)));
  CHECK(cudaMalloc(&d_keys_out, n * sizeof(float)));
  CHECK(cudaMalloc(&d_pos, n * sizeof(uint32_t)));
  CHECK(cudaMalloc(&d_pos_out, n * sizeof(uint32_t)));
  CHECK(cudaMemcpy(d_records, host.data(), n * sizeof(Record), cudaMemcpyHostToDevice));
  size_t temp_bytes = 0;
  void* temp = nullptr;
  const unsigned blocks = (unsigned)((n + 255) / 256);
  auto sort = [&] {
    record_keys<<<blocks, 256>>>(d_records, d_keys, d_pos, n);
    CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, d_keys, d_keys_out, d_pos, d_pos_out, (int64_t)n));
    if (temp) gather_records<<<blocks, 256>>>(d_records, d_pos_out, d_out, n);
  };
  sort();
  CHECK(cudaMalloc(&temp, temp_bytes));
  const float ms = median_ms(sort);
  const float copy_ms = median_ms([&] { CHECK(cudaMemcpyAsync(d_out, d_records, n * sizeof(Record), cudaMemcpyDeviceToDevice)); });
  sort();
  CHECK(cudaMemcpy(host.data(), d_out, n * sizeof(Record), cudaMemcpyDeviceToHost));
  const uint64_t h = checksum(host.data(), n * sizeof(Record));
  std::fprintf(results, "records %d %.5f %.5f %llu\n", log_n, ms, copy_ms, (unsigned long long)h);
  std::printf("cub %-9s 2^%d %8.4f ms  copy %8.4f ms  %016llx\n", "records", log_n, ms, copy_ms, (unsigned long long)h);
  for (void* p : {(void*)d_records, (void*)d_out, (void*)d_keys, (void*)d_keys_out, (void*)d_pos, (void*)d_pos_out, temp}) CHECK(cudaFree(p));
}

// Segment s's length: 1 to 2^16 elements, its log2 geometric (the
// trailing zeros of the generator), so that lengths follow a power law
// (sort_bench.rs: `segment_length`).
static uint64_t segment_length(uint64_t s) {
  const uint64_t r = bits(s ^ 0x5e65e65e65e65e6ull);
  int zeros = 0;
  while (zeros < 16 && !((r >> zeros) & 1)) ++zeros;
  return 1 + ((r >> 32) & ((uint64_t(1) << zeros) - 1));
}

static void run_segmented(int log_segments) {
  const size_t segments = size_t(1) << log_segments;
  std::vector<uint32_t> offsets(segments + 1, 0);
  for (size_t s = 0; s < segments; ++s) offsets[s + 1] = offsets[s] + (uint32_t)segment_length(s);
  const size_t n = offsets[segments];
  std::vector<uint32_t> keys(n);
  for (size_t i = 0; i < n; ++i) keys[i] = (uint32_t)bits(i);
  uint32_t *d_keys, *d_keys_out, *d_offsets;
  CHECK(cudaMalloc(&d_keys, n * sizeof(uint32_t)));
  CHECK(cudaMalloc(&d_keys_out, n * sizeof(uint32_t)));
  CHECK(cudaMalloc(&d_offsets, (segments + 1) * sizeof(uint32_t)));
  CHECK(cudaMemcpy(d_keys, keys.data(), n * sizeof(uint32_t), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_offsets, offsets.data(), (segments + 1) * sizeof(uint32_t), cudaMemcpyHostToDevice));
  size_t temp_bytes = 0;
  void* temp = nullptr;
  auto sort = [&] {
    CHECK(cub::DeviceSegmentedSort::StableSortKeys(temp, temp_bytes, d_keys, d_keys_out, (int64_t)n, (int64_t)segments, d_offsets,
                                                   d_offsets + 1));
  };
  sort();
  CHECK(cudaMalloc(&temp, temp_bytes));
  const float ms = median_ms(sort);
  const float copy_ms = median_ms([&] { CHECK(cudaMemcpyAsync(d_keys_out, d_keys, n * sizeof(uint32_t), cudaMemcpyDeviceToDevice)); });
  sort();
  CHECK(cudaMemcpy(keys.data(), d_keys_out, n * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  const uint64_t h = checksum(keys.data(), n * sizeof(uint32_t));
  std::fprintf(results, "segmented %d %.5f %.5f %llu\n", log_segments, ms, copy_ms, (unsigned long long)h);
  std::printf("cub %-9s 2^%d segments, %zu keys %8.4f ms  copy %8.4f ms  %016llx\n", "segmented", log_segments, n, ms, copy_ms,
              (unsigned long long)h);
  for (void* p : {(void*)d_keys, (void*)d_keys_out, (void*)d_offsets, temp}) CHECK(cudaFree(p));
}

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  results = std::fopen((dir + "/cub-sort.txt").c_str(), "a");
  if (!results) return 1;
  std::printf("CUB %d.%d.%d\n", CUB_MAJOR_VERSION, CUB_MINOR_VERSION, CUB_SUBMINOR_VERSION);
  run<uint32_t, uint32_t>("u32", 28, 32, false, false, false);
  run<uint32_t, uint32_t>("u32-24", 28, 24, false, false, false);
  run<uint32_t, uint32_t>("u32-desc", 28, 32, true, false, false);
  run<float, uint32_t>("f32", 28, 32, false, false, false);
  run<uint64_t, uint32_t>("u64", 27, 64, false, false, false);
  run<uint32_t, uint32_t>("pairs", 28, 32, false, true, false);
  run<uint32_t, uint64_t>("argsort", 26, 32, false, true, true);
  run_records(26);
  run_segmented(20);
  std::fclose(results);
  return 0;
}
