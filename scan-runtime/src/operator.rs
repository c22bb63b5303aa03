//! What the runtime needs of an operator to build and launch its kernels:
//! its program's name and CUDA part, the layout of its element and tiles,
//! and the key its kernels are kept under in memory. A `#[scan_op]` type
//! gives these as constants ([`OperatorProgram::of`]); an operator built at
//! run time from its text gives them as values ([`crate::dynamic`]), and
//! the scanner reads them from one place either way.

use kernels_gen::abi::KernelAbi;
use kernels_gen::layout::Layout;
use scan_core::ScanOp;
use std::any::TypeId;

/// The key of an operator's kernels in the process's memory cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum OperatorKey {
    /// A Rust type (`#[scan_op]` or written by hand).
    Type(TypeId),
    /// An operator built at run time, by the hash of everything its
    /// program is made from ([`crate::dynamic::DynOperator`]).
    Built(u64),
}

/// An operator's program: what its kernels are compiled from.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OperatorProgram {
    pub(crate) key: OperatorKey,
    /// The operator's name ([`ScanOp::NAME`]): every symbol starts with it.
    pub(crate) name: &'static str,
    /// The operator's part of the program ([`ScanOp::CUDA_SOURCE`]).
    pub(crate) cuda_source: &'static str,
    /// Every size the host and the kernels share.
    pub(crate) layout: Layout,
    /// Whether the operator is commutative ([`ScanOp::COMMUTATIVE`]).
    pub(crate) commutative: bool,
    /// The alignment the scan's prologue checks its buffers' addresses
    /// against: a built operator's element's (its buffers are bytes); 1 for
    /// a type's, whose buffers are aligned by their type.
    pub(crate) element_align: usize,
}

impl OperatorProgram {
    /// The program of `Op`, from its constants.
    pub(crate) fn of<Op: ScanOp>() -> Self {
        OperatorProgram {
            key: OperatorKey::Type(TypeId::of::<Op>()),
            name: Op::NAME,
            cuda_source: Op::CUDA_SOURCE,
            layout: crate::kernels::layout::<Op>(),
            commutative: Op::COMMUTATIVE,
            element_align: 1,
        }
    }

    /// The complete CUDA program with the kernels `kernels`.
    pub(crate) fn source(&self, kernels: &[KernelAbi]) -> String {
        kernels_gen::program(self.name, self.cuda_source, &self.layout, kernels)
    }

    /// Bytes of an element.
    pub(crate) fn element_size(&self) -> usize {
        self.layout.element_size
    }

    /// Threads per block of the tile kernels.
    pub(crate) fn block_threads(&self) -> u32 {
        self.layout.block_threads
    }

    /// Elements per tile.
    pub(crate) fn tile_items(&self) -> usize {
        self.layout.tile_items()
    }

    /// Elements per small tile (the single pass over short inputs).
    pub(crate) fn small_tile_items(&self) -> usize {
        self.layout.small_tile_items()
    }

    /// Elements per tile of the pipelined single pass (0 where the element
    /// cannot take it).
    pub(crate) fn pipelined_tile_items(&self) -> usize {
        if self.layout.pipelined_supported() {
            self.layout.pipelined_tile_items()
        } else {
            0
        }
    }
}
