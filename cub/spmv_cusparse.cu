// cuSPARSE's CSR SpMV on the matrices examples/spmv_bench.rs writes
// (SPMV_BENCH_DUMP=dir): the comparator of issue 47's SpMV row. Each
// algorithm's result is checked first against a sequential f64 product on
// the host, within the bound of tests/gpu_spmv.rs (twice γ_n · Σ|v·x| for
// a row of n entries); then the median of 25 calls bracketed by CUDA
// events after 3 warm-ups, the buffer and the preprocessing done once
// beforehand.
//
//   nvcc -O3 -arch=sm_90 -o spmv_cusparse cub/spmv_cusparse.cu -lcusparse
//   ./spmv_cusparse dir/power-f32.csr [more.csr ...]
#include <cuda_runtime.h>
#include <cusparse.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CUDA(x)                                                                          \
  do {                                                                                   \
    cudaError_t e = (x);                                                                 \
    if (e != cudaSuccess) {                                                              \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)
#define SPARSE(x)                                                                        \
  do {                                                                                   \
    cusparseStatus_t s = (x);                                                            \
    if (s != CUSPARSE_STATUS_SUCCESS) {                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cusparseGetErrorString(s)); \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

template <class T> static void read_into(FILE* f, std::vector<T>& v, size_t n) {
  v.resize(n);
  if (n && std::fread(v.data(), sizeof(T), n, f) != n) {
    std::fprintf(stderr, "short file\n");
    std::exit(1);
  }
}

template <class T>
static void run(const char* path, FILE* f, uint64_t rows, uint64_t cols, uint64_t nnz) {
  std::vector<uint32_t> row_ptr, col_idx;
  std::vector<T> values, x, y_ours;
  read_into(f, row_ptr, rows + 1);
  read_into(f, col_idx, nnz);
  read_into(f, values, nnz);
  read_into(f, x, cols);
  read_into(f, y_ours, rows);
  const double u = sizeof(T) == 4 ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53);
  std::vector<double> want(rows), magnitude(rows);
  for (uint64_t r = 0; r < rows; ++r) {
    double s = 0, m = 0;
    for (uint32_t k = row_ptr[r]; k < row_ptr[r + 1]; ++k) {
      const double p = (double)values[k] * (double)x[col_idx[k]];
      s += p;
      m += std::fabs(p);
    }
    want[r] = s;
    magnitude[r] = m;
  }
  auto bad_rows = [&](const std::vector<T>& y) {
    uint64_t bad = 0;
    for (uint64_t r = 0; r < rows; ++r) {
      const double n = (double)(row_ptr[r + 1] - row_ptr[r]);
      const double bound = 2.0 * n * u / (1.0 - n * u) * magnitude[r] + 2.2250738585072014e-308;
      if (!(std::fabs((double)y[r] - want[r]) <= bound)) ++bad;
    }
    return bad;
  };
  std::printf("%s: %llu rows, %llu entries, %zu-byte values; the library's product: %llu rows outside the bound\n",
              path, (unsigned long long)rows, (unsigned long long)nnz, sizeof(T),
              (unsigned long long)bad_rows(y_ours));

  int *d_row_ptr, *d_col_idx;
  T *d_values, *d_x, *d_y;
  CUDA(cudaMalloc(&d_row_ptr, (rows + 1) * 4));
  CUDA(cudaMalloc(&d_col_idx, std::max<uint64_t>(nnz, 1) * 4));
  CUDA(cudaMalloc(&d_values, std::max<uint64_t>(nnz, 1) * sizeof(T)));
  CUDA(cudaMalloc(&d_x, cols * sizeof(T)));
  CUDA(cudaMalloc(&d_y, rows * sizeof(T)));
  CUDA(cudaMemcpy(d_row_ptr, row_ptr.data(), (rows + 1) * 4, cudaMemcpyHostToDevice));
  CUDA(cudaMemcpy(d_col_idx, col_idx.data(), nnz * 4, cudaMemcpyHostToDevice));
  CUDA(cudaMemcpy(d_values, values.data(), nnz * sizeof(T), cudaMemcpyHostToDevice));
  CUDA(cudaMemcpy(d_x, x.data(), cols * sizeof(T), cudaMemcpyHostToDevice));

  const cudaDataType type = sizeof(T) == 4 ? CUDA_R_32F : CUDA_R_64F;
  cusparseHandle_t handle;
  SPARSE(cusparseCreate(&handle));
  cudaStream_t stream;
  CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  SPARSE(cusparseSetStream(handle, stream));
  cusparseSpMatDescr_t a;
  cusparseDnVecDescr_t vx, vy;
  SPARSE(cusparseCreateCsr(&a, rows, cols, nnz, d_row_ptr, d_col_idx, d_values, CUSPARSE_INDEX_32I,
                           CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, type));
  SPARSE(cusparseCreateDnVec(&vx, cols, d_x, type));
  SPARSE(cusparseCreateDnVec(&vy, rows, d_y, type));
  const T alpha = 1, beta = 0;
  const struct {
    const char* name;
    cusparseSpMVAlg_t alg;
  } algs[] = {{"CSR_ALG1 (default)", CUSPARSE_SPMV_CSR_ALG1}, {"CSR_ALG2 (merge path, deterministic)", CUSPARSE_SPMV_CSR_ALG2}};
  cudaEvent_t start, end;
  CUDA(cudaEventCreate(&start));
  CUDA(cudaEventCreate(&end));
  for (const auto& alg : algs) {
    size_t bytes = 0;
    SPARSE(cusparseSpMV_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, a, vx, &beta, vy, type,
                                   alg.alg, &bytes));
    void* buffer = nullptr;
    CUDA(cudaMalloc(&buffer, std::max<size_t>(bytes, 1)));
    SPARSE(cusparseSpMV_preprocess(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, a, vx, &beta, vy, type,
                                   alg.alg, buffer));
    auto call = [&] {
      SPARSE(cusparseSpMV(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, a, vx, &beta, vy, type, alg.alg,
                          buffer));
    };
    CUDA(cudaMemsetAsync(d_y, 0xA5, rows * sizeof(T), stream));
    call();
    std::vector<T> y(rows);
    CUDA(cudaStreamSynchronize(stream));
    CUDA(cudaMemcpy(y.data(), d_y, rows * sizeof(T), cudaMemcpyDeviceToHost));
    const uint64_t bad = bad_rows(y);
    for (int i = 0; i < 3; ++i) call();
    std::vector<float> ms;
    for (int i = 0; i < 25; ++i) {
      CUDA(cudaEventRecord(start, stream));
      call();
      CUDA(cudaEventRecord(end, stream));
      CUDA(cudaEventSynchronize(end));
      float t;
      CUDA(cudaEventElapsedTime(&t, start, end));
      ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    std::printf("cusparse %-40s %8.4f ms  buffer %zu bytes  %s\n", alg.name, ms[ms.size() / 2], bytes,
                bad == 0 ? "ok" : "ROWS OUTSIDE THE BOUND");
    CUDA(cudaFree(buffer));
  }
  int version;
  SPARSE(cusparseGetVersion(handle, &version));
  std::printf("cusparse version %d\n", version);
  SPARSE(cusparseDestroySpMat(a));
  SPARSE(cusparseDestroyDnVec(vx));
  SPARSE(cusparseDestroyDnVec(vy));
  SPARSE(cusparseDestroy(handle));
  CUDA(cudaFree(d_row_ptr));
  CUDA(cudaFree(d_col_idx));
  CUDA(cudaFree(d_values));
  CUDA(cudaFree(d_x));
  CUDA(cudaFree(d_y));
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    FILE* f = std::fopen(argv[i], "rb");
    if (!f) {
      std::perror(argv[i]);
      return 1;
    }
    uint64_t header[4];
    if (std::fread(header, 8, 4, f) != 4) {
      std::fprintf(stderr, "%s: no header\n", argv[i]);
      return 1;
    }
    if (header[3] == 4) {
      run<float>(argv[i], f, header[0], header[1], header[2]);
    } else {
      run<double>(argv[i], f, header[0], header[1], header[2]);
    }
    std::fclose(f);
  }
  return 0;
}
