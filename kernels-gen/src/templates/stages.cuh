// ---- Load and store stages of a scan (#[scan_map]) ----
// A staged scan reads elements of a load stage's input type, maps each to
// the operator's element as it is loaded, scans, and maps each result by a
// store stage as it is stored, so that the input is read once and the
// output written once. The stages ride on the operator policy:
// staged<Op, Load, Store> is Op (its element, layout, identity and
// combine) with the stages beside it, and stages_of<P> gives any policy's
// stages (none for a plain operator; flipped<> and reversed<> keep those
// of the policy inside them). A stage is a policy of gpu_scan_stages
// (input_t, output_t, apply), or no_stage.
namespace gpu_scan {

// No stage: elements pass as they are.
struct no_stage {};

template <class Op, class Load, class Store>
struct staged : Op {};

template <class A, class B>
struct same_type {
  static constexpr bool value = false;
};
template <class A>
struct same_type<A, A> {
  static constexpr bool value = true;
};

// A stage on one side of element type T: what it reads and what it gives.
template <class Stage, class T>
struct load_stage {
  typedef typename Stage::input_t input_t;
  static_assert(same_type<typename Stage::output_t, T>::value, "a load stage gives the operator's element");
  static __device__ __forceinline__ T apply(const input_t x) { return Stage::apply(x); }
};
template <class T>
struct load_stage<no_stage, T> {
  typedef T input_t;
  static __device__ __forceinline__ T apply(const T x) { return x; }
};
template <class Stage, class T>
struct store_stage {
  typedef typename Stage::output_t output_t;
  static_assert(same_type<typename Stage::input_t, T>::value, "a store stage takes the operator's element");
  static __device__ __forceinline__ output_t apply(const T x) { return Stage::apply(x); }
};
template <class T>
struct store_stage<no_stage, T> {
  typedef T output_t;
  static __device__ __forceinline__ T apply(const T x) { return x; }
};

// A policy's stages: input_t (what its kernels read), output_t (what they
// write), load(x) and store(x).
template <class Op, class Load = no_stage, class Store = no_stage>
struct stages_of {
  typedef typename Op::T T;
  typedef typename load_stage<Load, T>::input_t input_t;
  typedef typename store_stage<Store, T>::output_t output_t;
  static __device__ __forceinline__ T load(const input_t x) { return load_stage<Load, T>::apply(x); }
  static __device__ __forceinline__ output_t store(const T x) { return store_stage<Store, T>::apply(x); }
};
template <class Op, class Load, class Store>
struct stages_of<staged<Op, Load, Store>> : stages_of<Op, Load, Store> {};
template <class Op>
struct stages_of<flipped<Op>> : stages_of<Op> {};
template <class Op>
struct stages_of<reversed<Op>> : stages_of<Op> {};

template <class Op>
using stage_input = typename stages_of<Op>::input_t;
template <class Op>
using stage_output = typename stages_of<Op>::output_t;

}  // namespace gpu_scan
