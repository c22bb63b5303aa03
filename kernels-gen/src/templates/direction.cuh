// ---- Direction: reverse (suffix) scans ----
// A reverse scan, out[i] = in[i] ∘ … ∘ in[n-1], is the forward scan of the
// mirrored sequence r[k] = in[n-1-k] under the mirrored operator
// x ∘' y = y ∘ x (so in[i] still comes before in[i+1]). Two operator
// policies carry this through every algorithm unchanged:
//  * flipped<Op>: the mirrored operator over memory in forward order (the
//    pass over tile totals, which are already in scan order);
//  * reversed<Op>: the mirrored operator over mirrored memory. Scan tile t
//    is the input's tile tiles-1-t, at the same place a forward scan's
//    tile is (so vector loads stay aligned), and within it the element at
//    offset m of `valid` is item valid-1-m. The one partial tile comes first
//    in scan order; its identity padding then lies between it and the next
//    tile, where it changes nothing.
// The seed stays in front in scan order, so an exclusive reverse scan's
// initial value ends up on the right: in[i+1] ∘ … ∘ in[n-1] ∘ init.
// With segments, a segment starts in scan order at its last element: item
// k is a head when its element is the input's last or the next element is
// a head (thread_heads reads the flags so).
namespace gpu_scan {

template <class Op>
struct flipped {
  typedef typename Op::T T;
  typedef typename Op::layout layout;
  static __device__ __forceinline__ T identity() { return Op::identity(); }
  static __device__ __forceinline__ T combine(const T x, const T y) { return Op::combine(y, x); }
};

template <class Op>
struct reversed : flipped<Op> {};

// Whether Op's tiles read and write memory mirrored.
template <class Op>
struct mirrored_memory {
  static constexpr bool value = false;
};
template <class Op>
struct mirrored_memory<reversed<Op>> {
  static constexpr bool value = true;
};

// Where scan tile `tile` of an input of `n` elements in tiles of
// `tile_items` lies in memory: its first element and its length.
struct tile_span {
  unsigned long long base;
  int valid;
};
template <class Op>
__device__ __forceinline__ tile_span span_of_tile(unsigned long long tile, unsigned long long n, int tile_items) {
  const unsigned long long at = mirrored_memory<Op>::value ? (n + tile_items - 1) / tile_items - 1 - tile : tile;
  tile_span span;
  span.base = at * tile_items;
  span.valid = (int)(n - span.base < (unsigned long long)tile_items ? n - span.base : tile_items);
  return span;
}

// The item that a tile's element at offset m (of `valid`) is in scan order.
template <class Op>
__device__ __forceinline__ int item_of(int m, int valid) {
  return mirrored_memory<Op>::value ? valid - 1 - m : m;
}

}  // namespace gpu_scan
