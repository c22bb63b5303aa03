// ---- Per-segment totals: every segment's carry-out, after its scan ----
// A scan asked for one total per segment (ScanSpec::segment_totals) writes,
// for segment r, what that segment would carry into one more element after
// its last in scan order: the seed (when seeded) combined with all its
// elements, the seed alone for an empty segment. The scan itself is the
// ordinary segmented scan; two small kernels around it read the totals off
// its output, so every path (reduce-then-scan, look-back, pipelined) and
// both directions get them without a change:
//  * segment_boundaries, before an exclusive scan: the element each
//    segment ends on in scan order (its last going forward, its first in
//    reverse), saved in totals[r]. An exclusive scan's output there stops
//    one element short of the total, and a scan in place overwrites it.
//  * segment_totals, after the scan: an inclusive scan's output at that
//    element is the total; an exclusive one's is combined with the saved
//    element, on the side the scan order puts it.
// Segments are ranges of elements in memory order: rows of row_length, or
// the windows [offsets[r], offsets[r + 1]) of CSR row pointers (CUB's
// DeviceSegmentedReduce convention, count - 1 segments). Segments given as
// head flags or keys come as offsets too: their starts, found on the
// device (segment_flags.cuh), with their count in device memory
// (segment_count), which then bounds `segments` (the totals slot's
// length); null where the host counted them. One thread per segment, a
// grid-stride loop over 64-bit segment numbers.
namespace gpu_scan {

// The segments to write: `segments`, or fewer where the device counted
// fewer.
__device__ __forceinline__ unsigned long long segments_to_write(unsigned long long segments,
                                                                const unsigned long long* segment_count) {
  if (segment_count != nullptr) {
    const unsigned long long counted = *segment_count;
    if (counted < segments) segments = counted;
  }
  return segments;
}

// Segment r of rows of row_length elements.
struct row_ranges {
  unsigned long long row_length;
  __device__ __forceinline__ void range(unsigned long long r, unsigned long long& begin, unsigned long long& end) const {
    begin = r * row_length;
    end = begin + row_length;
  }
};

// Segment r of CSR row pointers: [offsets[r], offsets[r + 1]).
struct offset_ranges {
  scan_offsets offsets;
  __device__ __forceinline__ void range(unsigned long long r, unsigned long long& begin, unsigned long long& end) const {
    begin = offset_at(offsets, r);
    end = offset_at(offsets, r + 1);
  }
};

template <class Op, class Ranges>
__device__ __forceinline__ void segment_boundaries(const typename Op::T* input, Ranges ranges, typename Op::T* totals,
                                                   unsigned long long segments,
                                                   const unsigned long long* segment_count, int reverse) {
  segments = segments_to_write(segments, segment_count);
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long r = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; r < segments; r += stride) {
    unsigned long long begin, end;
    ranges.range(r, begin, end);
    if (begin < end) totals[r] = input[reverse ? begin : end - 1];
  }
}

template <class Op, class Ranges>
__device__ __forceinline__ void segment_totals(const typename Op::T* output, Ranges ranges, typename Op::T* totals,
                                               unsigned long long segments,
                                               const unsigned long long* segment_count, const typename Op::T seed,
                                               int seeded, int exclusive, int reverse) {
  typedef typename Op::T T;
  segments = segments_to_write(segments, segment_count);
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long r = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; r < segments; r += stride) {
    unsigned long long begin, end;
    ranges.range(r, begin, end);
    if (begin == end) {
      totals[r] = seeded ? seed : Op::identity();
      continue;
    }
    T total = output[reverse ? begin : end - 1];
    if (exclusive) {
      const T last = totals[r];  // the element saved by segment_boundaries
      if (!seeded && end - begin == 1) {
        // Nothing was in front of it: the total is the element itself (the
        // identity is not combined in, as the CPU backend does not).
        total = last;
      } else {
        total = reverse ? Op::combine(last, total) : Op::combine(total, last);
      }
    }
    totals[r] = total;
  }
}

}  // namespace gpu_scan
