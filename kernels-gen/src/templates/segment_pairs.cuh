// ---- Scans of (flag, value) pairs: warp, block and thread level ----
// segments.cuh's ⊕ over (flag, value) pairs, where the flag says "a
// segment starts in here", in its two strategies.
namespace gpu_scan {

// ---- Warp level over (flag, value) pairs ----
// Lane i returns the combination of the values from its segment's head (or
// lane 0) through lane i; `flag` (lane i's own flag on entry) becomes true
// when a head lies in lanes 0..i.
template <class Op, class Seg, class T = typename Op::T>
__device__ __forceinline__ T warp_pair_inclusive_scan(T value, bool& flag) {
  if constexpr (!Seg::segmented) {
    return warp_inclusive_scan<Op>(value);
  } else {
    const unsigned lane = threadIdx.x & 31u;
    if constexpr (Seg::strategy == scan_segmented_transform) {
#pragma unroll
      for (unsigned offset = 1; offset < 32; offset <<= 1) {
        const T earlier = scan_shfl_up(value, offset);
        const bool earlier_flag = __shfl_up_sync(0xffffffffu, (int)flag, offset) != 0;
        if (lane >= offset) {
          // (earlier_flag, earlier) ⊕ (flag, value)
          if (!flag) value = Op::combine(earlier, value);
          flag = flag || earlier_flag;
        }
      }
    } else {
      // The max-scan of head indices: the highest flagged lane at or below
      // this one (lane 0 when there is none). A ballot gives it in one step.
      const unsigned heads_so_far = __ballot_sync(0xffffffffu, flag) & (0xffffffffu >> (31u - lane));
      const unsigned head_lane = heads_so_far != 0 ? 31u - (unsigned)__clz((int)heads_so_far) : 0u;
#pragma unroll
      for (unsigned offset = 1; offset < 32; offset <<= 1) {
        const T earlier = scan_shfl_up(value, offset);
        // Lane i - offset holds a partial of this segment only when it is not
        // before the head; otherwise lane i already holds head..i.
        if (lane >= head_lane + offset) value = Op::combine(earlier, value);
      }
      flag = heads_so_far != 0;
    }
    return value;
  }
}

// ---- Block level over (flag, value) pairs, one per thread ----
// Returns thread t's *lifted exclusive prefix*: the combination of the
// values of threads h..t-1, where h is the last flagged thread before t
// (thread 0 if none); `prefix_flag` tells whether such a thread exists.
// Thread 0 gets (identity, false). A thread whose first element is a head
// ignores its prefix; any other puts it in front of its values.
// `block_total`, `block_flag`: all threads' pairs combined with ⊕.
// Shared memory: warp_totals[Shape<Op>::warps + 1], warp_flags[Shape<Op>::warps]
// (unused for no_segments). All threads must call it, and a second call
// must follow a __syncthreads().
template <class Op, class Seg, class T = typename Op::T>
__device__ __forceinline__ T block_pair_exclusive_scan(T value, bool flag, bool& prefix_flag, T* warp_totals, bool* warp_flags, T& block_total, bool& block_flag) {
  if constexpr (!Seg::segmented) {
    prefix_flag = false;
    block_flag = false;
    return block_exclusive_scan<Op, Shape<Op>::warps>(value, warp_totals, block_total);
  } else {
    const unsigned lane = threadIdx.x & 31u;
    const unsigned warp = threadIdx.x >> 5;
    bool inclusive_flag = flag;
    const T inclusive = warp_pair_inclusive_scan<Op, Seg>(value, inclusive_flag);
    if (lane == 31) {
      warp_totals[warp] = inclusive;
      warp_flags[warp] = inclusive_flag;
    }
    __syncthreads();
    if (warp == 0) {
      // Warp 0 scans the warps' pairs (idle lanes hold (identity, false)), so
      // entry w becomes the pair of warps 0..w.
      bool f = lane < Shape<Op>::warps && warp_flags[lane];
      const T total = lane < Shape<Op>::warps ? warp_totals[lane] : Op::identity();
      const T scanned = warp_pair_inclusive_scan<Op, Seg>(total, f);
      if (lane < Shape<Op>::warps) {
        warp_totals[lane] = scanned;
        warp_flags[lane] = f;
      }
    }
    __syncthreads();
    block_total = warp_totals[Shape<Op>::warps - 1];
    block_flag = warp_flags[Shape<Op>::warps - 1];
    // Within the warp, the exclusive prefix is the previous lane's inclusive one.
    T prefix = scan_shfl_up(inclusive, 1);
    const bool previous_flag = __shfl_up_sync(0xffffffffu, (int)inclusive_flag, 1) != 0;
    prefix_flag = lane != 0 && previous_flag;
    if (warp > 0 && !prefix_flag) {
      // No head in this warp before this lane: the segment that is open at
      // the warp's start continues here, so the earlier warps' partial goes
      // in front (lane 0 has nothing of its own warp in front of it).
      const T before = warp_totals[warp - 1];
      prefix = lane == 0 ? before : Op::combine(before, prefix);
      prefix_flag = warp_flags[warp - 1];
    }
    return threadIdx.x == 0 ? Op::identity() : prefix;
  }
}

// The block's pair that block_pair_exclusive_scan left in `warp_totals`
// and `warp_flags` (they keep it until written again): read back where
// keeping it in registers would cost more than the shared-memory load.
template <class Op, class Seg, class T = typename Op::T>
__device__ __forceinline__ T block_pair_total(const T* warp_totals, const bool* warp_flags, bool& block_flag) {
  if constexpr (!Seg::segmented) {
    block_flag = false;
    return warp_totals[Shape<Op>::warps];
  } else {
    block_flag = warp_flags[Shape<Op>::warps - 1];
    return warp_totals[Shape<Op>::warps - 1];
  }
}

// (total_flag, total) ⊕= (flag, value): for no_segments, total ∘= value.
template <class Op, class Seg, class T = typename Op::T>
__device__ __forceinline__ void pair_accumulate(T& total, bool& total_flag, const T& value, bool flag) {
  if constexpr (Seg::segmented) {
    total = flag ? value : Op::combine(total, value);
    total_flag = total_flag || flag;
  } else {
    total = Op::combine(total, value);
  }
}

// ---- Thread level: a thread's items and their head mask ----
// A thread's pair: whether one of its items is a head (heads != 0), and the
// combination of its last segment's items (all items when none is a head),
// seeded at a head. `item(i)` reads item i.
template <class Op, class Seg, int Items, class Item, class Mask, class T = typename Op::T>
__device__ __forceinline__ T thread_pair_reduce(Item item, Mask heads, const Seg& seg) {
  if constexpr (!Seg::segmented) {
    T total = item(0);
#pragma unroll
    for (int i = 1; i < Items; ++i) total = Op::combine(total, item(i));
    return total;
  } else {
    T total = (heads & 1u) ? seg.start(item(0)) : item(0);
#pragma unroll
    for (int i = 1; i < Items; ++i) {
      const T next = item(i);
      total = ((heads >> i) & 1u) ? seg.start(next) : Op::combine(total, next);
    }
    return total;
  }
}

// Rescans a thread's items in place behind `running`, the partial open
// before its first item (Mode: scan_inclusive, scan_exclusive or
// scan_exclusive_carry, see the prelude). `at(i)` is a reference to item i,
// or a value that converts to T and assigns from it.
template <class Op, int Mode, class Seg, int Items, class At, class Mask, class T = typename Op::T>
__device__ __forceinline__ void thread_pair_rescan(At at, Mask heads, T running, const Seg& seg) {
#pragma unroll
  for (int i = 0; i < Items; ++i) {
    auto&& slot = at(i);  // a T&, or a reference-like value
    const T item = slot;
    if constexpr (Seg::segmented) {
      if ((heads >> i) & 1u) {
        const T start = seg.start(item);
        slot = Mode == scan_inclusive ? start : Mode == scan_exclusive ? seg.seed : running;
        running = start;
        continue;
      }
    }
    const T next = Op::combine(running, item);
    slot = Mode == scan_inclusive ? next : running;
    running = next;
  }
}

}  // namespace gpu_scan
