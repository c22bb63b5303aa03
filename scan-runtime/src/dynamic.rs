//! Operators built at run time: an operator's text (`kernels_gen::ir_text`,
//! what `#[scan_op]` records as [`ScanOp::OPERATOR_IR`] and what the Python
//! package translates a function into) read, checked and generated into the
//! same CUDA as the macro writes, then scanned on the GPU by the one
//! executor: a [`DynScanner`] is a [`GpuScanner`] whose operator's program
//! and identity are values, and whose elements are bytes.
//!
//! ```no_run
//! use gpu_scan::scan_runtime::{open_device, DynOperator, DynScanner, ScanError};
//! use gpu_scan::{ops::Sum, ScanOp, ScanSpec};
//!
//! // The text of x ∘ y = x + y over f32, as #[scan_op] records it (the
//! // Python package writes such texts from functions).
//! let op = DynOperator::from_text(<Sum<f32> as ScanOp>::OPERATOR_IR, &[])?;
//! let ctx = open_device(0)?;
//! let stream = ctx.new_stream()?;
//! let bytes: Vec<u8> = [1f32, 2.0, 3.0].iter().flat_map(|x| x.to_le_bytes()).collect();
//! let input = stream.clone_htod(&bytes)?;
//! let mut output = stream.alloc_zeros::<u8>(bytes.len())?;
//! let mut scanner = DynScanner::new(&ctx, &op)?;
//! let (input, mut output) = (scanner.elements(&input)?, scanner.elements_mut(&mut output)?);
//! scanner.scan(&stream, ScanSpec::inclusive(), &input, &mut output)?;
//! # Ok::<(), ScanError>(())
//! ```

use crate::cache::DiskCache;
use crate::carry::DeviceCarryOut;
use crate::error::{Result, ScanError};
use crate::gpu::{GpuScanner, LawCheck};
use crate::kernels::ProgramStats;
use crate::operator::{OperatorKey, OperatorProgram};
use crate::segments::DeviceSegmentsSpec;
use crate::tuning::Tuning;
use cudarc::driver::{
    CudaContext, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, DeviceSlice, SyncOnDrop,
    ValidAsZeroBits,
};
use kernels_gen::eval::{OpValues, StructValues, Value};
use kernels_gen::ir::ElementType;
use kernels_gen::layout::Layout;
use kernels_gen::lower::{lower_op, Leaf, Structs};
use kernels_gen::{ir_text, MAX_ELEMENT_REGISTERS, MAX_ELEMENT_SIZE};
use scan_core::{IntoScanSpec, ScanElement, ScanOp, ScanSpec};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// An element of an operator built at run time, as the host holds it: its
/// bytes (little-endian, `repr(C)`), in a buffer as large as the largest
/// element the kernels take. Made by [`DynOperator::element`]; a scan's
/// initial value ([`ScanKind::ExclusiveWithInit`](scan_core::ScanKind)).
#[repr(C, align(16))]
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct BuiltElement {
    bytes: [u8; MAX_ELEMENT_SIZE],
    size: u16,
}

impl BuiltElement {
    /// The element's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes[..self.size as usize]
    }
}

impl std::fmt::Debug for BuiltElement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BuiltElement({:02x?})", self.bytes())
    }
}

// SAFETY: a kernel parameter of the operator's element type is read from
// the first `sizeof(element)` bytes behind the pointer, which `bytes`
// starts with (offset 0 of a repr(C) struct), aligned to 16.
unsafe impl DeviceRepr for BuiltElement {}
// SAFETY: all-zero bytes and size are a valid value.
unsafe impl ValidAsZeroBits for BuiltElement {}

// SAFETY: the runtime never reads or writes a `BuiltElement` on the device
// as a type: a built operator's buffers are bytes, its sizes the
// operator's ([`OperatorProgram`]), and a kernel parameter of it is read
// from its leading bytes (above). The constants are not used: the scanner
// takes the operator's from its `DynOperator`.
unsafe impl ScanElement for BuiltElement {
    const CUDA_TYPE: &'static str = "";
    const CUDA_DECL: &'static str = "";
    const REGISTERS: usize = 0;
    fn for_each_lane(&self, visit: &mut dyn FnMut(scan_core::laws::Lane)) {
        for &b in self.bytes() {
            visit(scan_core::laws::Lane::Int(b.into()));
        }
    }
}

/// The operator type of [`DynScanner`]'s scanner: its program and identity
/// are the `DynOperator`'s values, given at construction
/// ([`GpuScanner::with_operator`]); nothing reads these constants.
pub(crate) struct BuiltOperator;

impl ScanOp for BuiltOperator {
    type Element = BuiltElement;
    const NAME: &'static str = "built_operator";
    const IDENTITY: BuiltElement = BuiltElement {
        bytes: [0; MAX_ELEMENT_SIZE],
        size: 0,
    };
    const CUDA_SOURCE: &'static str = "";
    const BLOCK_THREADS: u32 = 0;
    const ITEMS_PER_THREAD: u32 = 0;

    fn combine(_: BuiltElement, _: BuiltElement) -> BuiltElement {
        unreachable!("a built operator combines on the device only: DynScanner runs no host scan")
    }
}

/// An operator read from its text at run time (`kernels_gen::ir_text`), its
/// element a primitive or a `repr(C)` struct: checked as rustc would check
/// it, its CUDA written by the generator `#[scan_op]` uses, its tile shape
/// chosen from its element's size as the macro chooses it.
#[derive(Clone, Debug)]
pub struct DynOperator {
    program: OperatorProgram,
    identity: BuiltElement,
    align: usize,
}

impl DynOperator {
    /// Reads `text` (an operator, `ir_text::print`) and `structs` (the
    /// declarations of its struct element and the structs that one nests,
    /// `ir_text::print_struct`, any order), checks them, and writes the
    /// operator's CUDA. [`ScanError::InvalidOperator`] says what is wrong.
    /// No GPU is needed.
    ///
    /// ```
    /// use gpu_scan::scan_runtime::{DynOperator, ScanError};
    /// use gpu_scan::prelude::*;
    ///
    /// #[scan_op(identity = Affine { a: 1.0, b: 0.0 }, op = |x, y| Affine { a: x.a * y.a, b: y.a * x.b + y.b })]
    /// #[repr(C)]
    /// #[derive(Clone, Copy)]
    /// struct Affine {
    ///     a: f32,
    ///     b: f32,
    /// }
    ///
    /// let op = DynOperator::from_text(<Affine as ScanOp>::OPERATOR_IR, &[Affine::STRUCT_IR])?;
    /// assert_eq!((op.element_size(), op.element_align()), (8, 4));
    /// assert_eq!(op.identity().bytes(), [1f32.to_le_bytes(), 0f32.to_le_bytes()].concat());
    /// assert!(matches!(
    ///     DynOperator::from_text("(op", &[]),
    ///     Err(ScanError::InvalidOperator(_))
    /// ));
    /// # Ok::<(), ScanError>(())
    /// ```
    pub fn from_text(text: &str, structs: &[&str]) -> Result<Self> {
        let refuse = |m: String| ScanError::InvalidOperator(m);
        let (desc, params) = ir_text::parse(text).map_err(|e| refuse(e.to_string()))?;
        let mut source = String::new();
        // The element's leaves, size and alignment, and the identity's values.
        let (leaves, size, identity) = match &desc.element {
            ElementType::Prim(p) => {
                let values = OpValues::new(&desc).map_err(|e| refuse(e.to_string()))?;
                let leaf = Leaf {
                    path: String::new(),
                    prim: *p,
                    offset: 0,
                };
                (vec![leaf], p.size(), vec![values.identity()])
            }
            ElementType::Struct(name) => {
                let mut by_name = Structs::default();
                for text in structs {
                    let s = ir_text::parse_struct(text).map_err(|e| refuse(e.to_string()))?;
                    source.push_str(&kernels_gen::struct_declaration(&s));
                    by_name.insert(s.name.clone(), s);
                }
                let size = by_name.size(name).map_err(refuse)?;
                let lowered = lower_op(&desc, &by_name).map_err(refuse)?;
                let values = StructValues::new(&lowered)
                    .map_err(|e| refuse(format!("operator `{}`: {e}", desc.name)))?;
                let identity = values.identity();
                (lowered.leaves, size, identity)
            }
        };
        if size == 0 || size > MAX_ELEMENT_SIZE {
            return Err(refuse(format!(
                "an element of {size} bytes: the kernels take 1 to {MAX_ELEMENT_SIZE}"
            )));
        }
        // Registers as `#[scan_op]` counts them (ScanElement::REGISTERS):
        // one a scalar of up to 4 bytes, two an 8-byte one.
        let registers: usize = leaves.iter().map(|l| l.prim.size().div_ceil(4)).sum();
        if registers > MAX_ELEMENT_REGISTERS {
            return Err(refuse(format!(
                "an element of {registers} registers: the kernels take at most {MAX_ELEMENT_REGISTERS}"
            )));
        }
        let scalar_registers = leaves
            .iter()
            .map(|l| l.prim.size().div_ceil(4))
            .max()
            .unwrap_or(1);
        let align = leaves.iter().map(|l| l.prim.size()).max().unwrap_or(1);
        source.push_str(
            &kernels_gen::operator_source(&desc, &params).map_err(|e| refuse(e.to_string()))?,
        );
        let (threads, items) = (
            params.block_threads_for(size),
            params.items_per_thread_for(size),
        );
        let live = kernels_gen::pressure::peak_live_lets(&desc.body) as u32;
        let layout = Layout::new(size, registers, threads, items)
            .with_operator_registers(live * scalar_registers as u32);
        let mut identity_bytes = BuiltElement {
            bytes: [0; MAX_ELEMENT_SIZE],
            size: size as u16,
        };
        for (leaf, v) in leaves.iter().zip(&identity) {
            write_leaf(&mut identity_bytes.bytes, leaf, *v);
        }
        let (key, name, cuda_source) = registered(&desc.name, source);
        Ok(DynOperator {
            program: OperatorProgram {
                key,
                name,
                cuda_source,
                layout,
                commutative: false,
                element_align: align,
            },
            identity: identity_bytes,
            align,
        })
    }

    /// This operator declared commutative (`combine(x, y) == combine(y, x)`
    /// for every two values scanned, as `#[scan_op(commutative = true)]`
    /// says it, which the caller has checked): two-dimensional scans may
    /// then combine a rectangle's elements in any order and read the matrix
    /// in tiles ([`scan_core::ScanOp::COMMUTATIVE`]). Its kernels are the
    /// same.
    pub fn commutative(mut self, commutative: bool) -> Self {
        self.program.commutative = commutative;
        self
    }

    /// Whether it is declared commutative.
    pub fn is_commutative(&self) -> bool {
        self.program.commutative
    }

    /// The operator's name: the prefix of its CUDA symbols.
    pub fn name(&self) -> &str {
        self.program.name
    }

    /// Its program, as the kernels are compiled from it.
    pub(crate) fn program(&self) -> &OperatorProgram {
        &self.program
    }

    /// The element's size in bytes.
    pub fn element_size(&self) -> usize {
        self.program.element_size()
    }

    /// The element's alignment in bytes (its widest scalar's).
    pub fn element_align(&self) -> usize {
        self.align
    }

    /// The identity.
    pub fn identity(&self) -> BuiltElement {
        self.identity
    }

    /// The operator's part of its CUDA program (the element's declarations,
    /// the policy and the kernel wrappers), as `#[scan_op]` writes it.
    pub fn cuda_source(&self) -> &str {
        self.program.cuda_source
    }

    internal! {
        /// The layout of the operator's program (element and tile sizes), for
        /// tests that compare it with a `#[scan_op]` operator's.
        #[doc(hidden)]
        pub fn layout_for_tests(&self) -> Layout {
            self.program.layout
        }
    }

    internal! {
        /// The complete CUDA program with the kernels `kernels`, for tests
        /// that compile it.
        #[doc(hidden)]
        pub fn program_source_for_tests(&self, kernels: &[kernels_gen::abi::KernelAbi]) -> String {
            self.program.source(kernels)
        }
    }

    /// An element from its `bytes` (little-endian, `repr(C)`, padding
    /// included), for a scan's initial value.
    pub fn element(&self, bytes: &[u8]) -> Result<BuiltElement> {
        if bytes.len() != self.element_size() {
            return Err(ScanError::ElementBuffer {
                what: "an element",
                bytes: bytes.len(),
                address: 0,
                size: self.element_size(),
                align: self.align,
            });
        }
        let mut e = BuiltElement {
            bytes: [0; MAX_ELEMENT_SIZE],
            size: bytes.len() as u16,
        };
        e.bytes[..bytes.len()].copy_from_slice(bytes);
        Ok(e)
    }
}

/// Writes `v` as `leaf` of an element's bytes.
fn write_leaf(element: &mut [u8], leaf: &Leaf, v: Value) {
    let width = leaf.prim.size();
    element[leaf.offset..leaf.offset + width].copy_from_slice(&v.to_bits().to_le_bytes()[..width]);
}

/// The memory-cache key and the process-lived name and source of an
/// operator named `name` whose CUDA part is `source`: the same for the same
/// operator built again (its kernels are found in memory), another for any
/// other. Kept for the process's life, as its loaded kernels are.
pub(crate) fn registered(name: &str, source: String) -> (OperatorKey, &'static str, &'static str) {
    type Registry = HashMap<(String, String), (u64, &'static str, &'static str)>;
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    let mut registry = REGISTRY
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let next = registry.len() as u64;
    let entry = registry
        .entry((name.to_string(), source))
        .or_insert_with_key(|(name, source)| {
            let name: &'static str = Box::leak(name.clone().into_boxed_str());
            let source: &'static str = Box::leak(source.clone().into_boxed_str());
            (next, name, source)
        });
    (OperatorKey::Built(entry.0), entry.1, entry.2)
}

/// Elements of a built operator in a device buffer of bytes, for reading
/// ([`DynScanner::elements`]).
pub struct Elements<'a, D: ?Sized> {
    buffer: &'a D,
    len: usize,
    size: usize,
}

/// Elements of a built operator in a device buffer of bytes, for writing
/// ([`DynScanner::elements_mut`]): outputs, in-place data, carry-out and
/// totals slots.
pub struct ElementsMut<'a, D: ?Sized> {
    buffer: &'a mut D,
    len: usize,
    size: usize,
}

/// `DeviceSlice` of built elements for a view of bytes: `len` elements of
/// `size` bytes, on the bytes' stream.
macro_rules! element_slice {
    ($view:ident, $bound:ident) => {
        impl<D: $bound<u8> + ?Sized> DeviceSlice<BuiltElement> for $view<'_, D> {
            fn len(&self) -> usize {
                self.len
            }
            fn num_bytes(&self) -> usize {
                self.len * self.size
            }
            fn stream(&self) -> &Arc<CudaStream> {
                self.buffer.stream()
            }
        }
    };
}
element_slice!(Elements, DevicePtr);
element_slice!(ElementsMut, DevicePtrMut);

impl<D: DevicePtr<u8> + ?Sized> DevicePtr<BuiltElement> for Elements<'_, D> {
    fn device_ptr<'a>(&'a self, stream: &'a CudaStream) -> (u64, SyncOnDrop<'a>) {
        self.buffer.device_ptr(stream)
    }
}

impl<D: DevicePtrMut<u8> + ?Sized> DevicePtrMut<BuiltElement> for ElementsMut<'_, D> {
    fn device_ptr_mut<'a>(&'a mut self, stream: &'a CudaStream) -> (u64, SyncOnDrop<'a>) {
        self.buffer.device_ptr_mut(stream)
    }
}

/// What built at run time has elements of a size and alignment known as
/// values: [`DynOperator`] and [`DynStage`](crate::DynStage). Sealed: the
/// sizes size the kernels' reads and writes.
pub trait BuiltLayout: sealed::Sealed + Sized {
    /// The element's size in bytes.
    fn element_size(&self) -> usize;
    /// The alignment its buffers' addresses need.
    fn element_align(&self) -> usize;

    /// The elements in `buffer` (bytes) for reading;
    /// [`ScanError::ElementBuffer`] where it does not hold whole elements
    /// (an address the alignment does not allow is refused where it is
    /// used).
    fn elements<'a, D: DevicePtr<u8> + ?Sized>(&self, buffer: &'a D) -> Result<Elements<'a, D>> {
        let (len, size) = whole_elements(self, buffer.len())?;
        Ok(Elements { buffer, len, size })
    }

    /// The elements in `buffer` (bytes) for writing.
    fn elements_mut<'a, D: DevicePtrMut<u8> + ?Sized>(
        &self,
        buffer: &'a mut D,
    ) -> Result<ElementsMut<'a, D>> {
        let (len, size) = whole_elements(self, buffer.len())?;
        Ok(ElementsMut { buffer, len, size })
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::DynOperator {}
    impl Sealed for crate::DynStage {}
    impl Sealed for crate::DynSortKey {}
}

impl BuiltLayout for DynOperator {
    fn element_size(&self) -> usize {
        DynOperator::element_size(self)
    }
    fn element_align(&self) -> usize {
        self.align
    }
}

impl BuiltLayout for crate::DynSortKey {
    fn element_size(&self) -> usize {
        self.record_size()
    }
    fn element_align(&self) -> usize {
        self.record_align()
    }
}

impl BuiltLayout for crate::DynStage {
    fn element_size(&self) -> usize {
        crate::DynStage::element_size(self)
    }
    fn element_align(&self) -> usize {
        crate::DynStage::element_align(self)
    }
}

/// `Ok` where each buffer `(what, address, bytes, element size,
/// alignment)` lies at its alignment, else the error that names the
/// first that does not.
pub(crate) fn check_aligned(buffers: &[(&'static str, u64, usize, usize, usize)]) -> Result<()> {
    for &(what, address, bytes, size, align) in buffers {
        if address % align as u64 != 0 {
            return Err(ScanError::ElementBuffer {
                what,
                bytes,
                address,
                size,
                align,
            });
        }
    }
    Ok(())
}

/// `Ok` where each buffer `(what, bytes)` holds `n` whole elements of
/// `of`, else the error that names the first that does not (a view made
/// for another element).
pub(crate) fn check_whole(
    of: &impl BuiltLayout,
    n: usize,
    buffers: &[(&'static str, usize)],
) -> Result<()> {
    let size = of.element_size();
    for &(what, bytes) in buffers {
        if bytes != n * size {
            return Err(ScanError::ElementBuffer {
                what,
                bytes,
                address: 0,
                size,
                align: of.element_align(),
            });
        }
    }
    Ok(())
}

/// The number of elements of `of` in `bytes` bytes, and their size;
/// [`ScanError::ElementBuffer`] where they are not whole elements.
fn whole_elements(of: &impl BuiltLayout, bytes: usize) -> Result<(usize, usize)> {
    let size = of.element_size();
    if bytes % size != 0 {
        return Err(ScanError::ElementBuffer {
            what: "a device buffer",
            bytes,
            address: 0,
            size,
            align: of.element_align(),
        });
    }
    Ok((bytes / size, size))
}

/// Elements of a built operator at a device address another library owns
/// (a PyTorch tensor's, a CuPy array's): no cudarc buffer, no events; the
/// caller orders their uses on its streams.
pub struct RawElements {
    address: u64,
    len: usize,
    size: usize,
    stream: Arc<CudaStream>,
}

impl RawElements {
    /// The `bytes` bytes at `address`, elements of `of` (a
    /// [`DynOperator`], or a [`DynStage`](crate::DynStage)), used on
    /// `stream`. [`ScanError::ElementBuffer`] where they are not whole
    /// elements at an aligned address.
    ///
    /// # Safety
    /// `address` is device memory of `stream`'s context, valid for reads
    /// and writes of `bytes` bytes for as long as the scans enqueued with
    /// it run; nothing else writes it meanwhile unless ordered by streams.
    pub unsafe fn new(
        of: &impl BuiltLayout,
        address: u64,
        bytes: usize,
        stream: &Arc<CudaStream>,
    ) -> Result<Self> {
        let (size, align) = (of.element_size(), of.element_align());
        if bytes % size != 0 || address % align as u64 != 0 {
            return Err(ScanError::ElementBuffer {
                what: "a device buffer",
                bytes,
                address,
                size,
                align,
            });
        }
        Ok(RawElements {
            address,
            len: bytes / size,
            size,
            stream: stream.clone(),
        })
    }
}

impl DeviceSlice<BuiltElement> for RawElements {
    fn len(&self) -> usize {
        self.len
    }
    fn num_bytes(&self) -> usize {
        self.len * self.size
    }
    fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }
}

impl DevicePtr<BuiltElement> for RawElements {
    fn device_ptr<'a>(&'a self, _: &'a CudaStream) -> (u64, SyncOnDrop<'a>) {
        (self.address, SyncOnDrop::Record(None))
    }
}

impl DevicePtrMut<BuiltElement> for RawElements {
    fn device_ptr_mut<'a>(&'a mut self, _: &'a CudaStream) -> (u64, SyncOnDrop<'a>) {
        (self.address, SyncOnDrop::Record(None))
    }
}

/// Scans of an operator built at run time ([`DynOperator`]) on the GPU:
/// the [`GpuScanner`] verb (every kind and direction, segments by flags,
/// rows, offsets or keys with their totals, a carry-out, columns and two
/// dimensions) over buffers of bytes seen as elements
/// ([`DynScanner::elements`], [`RawElements`]). Its kernels are compiled
/// as a `#[scan_op]` operator's are, through the same caches.
pub struct DynScanner {
    inner: GpuScanner<BuiltOperator>,
    op: DynOperator,
}

impl DynScanner {
    /// A scanner of `op` on `ctx`, using the disk cache the environment
    /// selects.
    pub fn new(ctx: &Arc<CudaContext>, op: &DynOperator) -> Result<Self> {
        Self::with_disk_cache(ctx, op, &DiskCache::from_env())
    }

    /// A scanner of `op` on `ctx` with an explicit disk cache.
    pub fn with_disk_cache(
        ctx: &Arc<CudaContext>,
        op: &DynOperator,
        disk: &DiskCache,
    ) -> Result<Self> {
        let mut inner = GpuScanner::with_operator(ctx, disk, op.program, op.identity)?;
        // The laws are checked by combining on the host, which a built
        // operator does through its evaluator, not here.
        inner.law_check = LawCheck::Done;
        Ok(DynScanner {
            inner,
            op: op.clone(),
        })
    }

    /// The operator.
    pub fn operator(&self) -> &DynOperator {
        &self.op
    }

    /// The elements in `buffer` (bytes) for reading;
    /// [`ScanError::ElementBuffer`] where it does not hold whole elements.
    pub fn elements<'a, D: DevicePtr<u8> + ?Sized>(
        &self,
        buffer: &'a D,
    ) -> Result<Elements<'a, D>> {
        self.op.elements(buffer)
    }

    /// The elements in `buffer` (bytes) for writing.
    pub fn elements_mut<'a, D: DevicePtrMut<u8> + ?Sized>(
        &self,
        buffer: &'a mut D,
    ) -> Result<ElementsMut<'a, D>> {
        self.op.elements_mut(buffer)
    }

    /// [`GpuScanner::scan`]: any scan out of place.
    pub fn scan<'a, I, O>(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: impl IntoScanSpec<
            BuiltElement,
            Carry: DeviceCarryOut<BuiltElement>,
            Segments: DeviceSegmentsSpec<'a>,
        >,
        input: &I,
        output: &mut O,
    ) -> Result<()>
    where
        I: DevicePtr<BuiltElement>,
        O: DevicePtrMut<BuiltElement>,
    {
        let spec = self.checked(spec.into_spec())?;
        self.inner.scan(stream, spec, input, output)
    }

    /// [`GpuScanner::scan_in_place`]: any scan of `data` onto itself.
    pub fn scan_in_place<'a, D: DevicePtrMut<BuiltElement>>(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: impl IntoScanSpec<
            BuiltElement,
            Carry: DeviceCarryOut<BuiltElement>,
            Segments: DeviceSegmentsSpec<'a>,
        >,
        data: &mut D,
    ) -> Result<()> {
        let spec = self.checked(spec.into_spec())?;
        self.inner.scan_in_place(stream, spec, data)
    }

    /// Refuses an initial value that is not an element of this operator.
    fn checked<C, S>(
        &self,
        spec: ScanSpec<BuiltElement, C, S>,
    ) -> Result<ScanSpec<BuiltElement, C, S>> {
        match spec.kind.init() {
            Some(init) if init.size as usize != self.op.element_size() => {
                Err(ScanError::ElementBuffer {
                    what: "the initial value",
                    bytes: init.size as usize,
                    address: 0,
                    size: self.op.element_size(),
                    align: self.op.align,
                })
            }
            _ => Ok(spec),
        }
    }

    /// [`GpuScanner::reserve`].
    pub fn reserve<'a>(
        &mut self,
        stream: &Arc<CudaStream>,
        spec: impl IntoScanSpec<
            BuiltElement,
            Carry: DeviceCarryOut<BuiltElement>,
            Segments: DeviceSegmentsSpec<'a>,
        >,
        n: usize,
    ) -> Result<()> {
        self.inner.reserve(stream, spec, n)
    }

    /// [`GpuScanner::wait_for_background_compiles`].
    pub fn wait_for_background_compiles(&self) {
        self.inner.wait_for_background_compiles()
    }

    /// [`GpuScanner::program_stats`].
    pub fn program_stats(&self) -> ProgramStats {
        self.inner.program_stats()
    }

    /// [`GpuScanner::tuning`].
    pub fn tuning(&self) -> Tuning {
        self.inner.tuning()
    }

    /// [`GpuScanner::set_tuning`].
    pub fn set_tuning(&mut self, tuning: Tuning) {
        self.inner.set_tuning(tuning)
    }
}
