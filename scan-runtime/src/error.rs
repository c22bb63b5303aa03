//! The one error type of the runtime.

use std::path::PathBuf;

/// Everything that can go wrong when scanning on the GPU. Each message says
/// what to do about it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScanError {
    /// The CUDA driver library (`libcuda.so`) cannot be loaded.
    #[error("no CUDA driver: libcuda could not be loaded (install the NVIDIA driver, or use the CPU backend)")]
    NoDriver,
    /// No NVRTC library that the driver can use could be loaded: none was
    /// found, or the one found is too old (before 12.4) or makes code the
    /// driver cannot load (NVRTC 13 with a CUDA 12 driver).
    #[error(
        "no usable NVRTC ({reason}); install the CUDA toolkit's NVRTC of your driver's CUDA version (12.4 or newer, \
         or 13.x; `pip install nvidia-cuda-nvrtc-cu12` or `nvidia-cuda-nvrtc`) and put its lib directory on \
         LD_LIBRARY_PATH, or name the library in GPU_SCAN_NVRTC"
    )]
    NoNvrtc {
        /// Each library tried, and why it was not used.
        reason: String,
    },
    /// The NVRTC in use is newer than the driver within one CUDA major
    /// version: its CUBINs load, but PTX (an older target named by
    /// `GPU_SCAN_TARGET_ARCH`, or a device newer than NVRTC knows) the
    /// driver would refuse.
    #[error(
        "NVRTC {nvrtc} makes PTX for {target} that the CUDA {driver} driver cannot compile (an older target named by \
         GPU_SCAN_TARGET_ARCH, or a device newer than this NVRTC knows takes PTX): use an NVRTC no newer than the driver \
         (GPU_SCAN_NVRTC) or a newer driver"
    )]
    PtxNewerThanDriver {
        /// NVRTC's version.
        nvrtc: String,
        /// The driver's CUDA version.
        driver: String,
        /// The virtual architecture asked for (`compute_80`).
        target: String,
    },
    /// The driver loaded but reports no CUDA device.
    #[error(
        "no CUDA device found (check nvidia-smi and CUDA_VISIBLE_DEVICES, or use the CPU backend)"
    )]
    NoDevice,
    /// The device is older than the generated code supports.
    #[error("device {device} has compute capability {major}.{minor}; gpu-scan needs 7.5 (Turing) or newer")]
    UnsupportedDevice {
        /// Device name.
        device: String,
        /// Compute capability, major.
        major: i32,
        /// Compute capability, minor.
        minor: i32,
    },
    /// `GPU_SCAN_TARGET_ARCH` does not name an architecture the device can
    /// run programs for.
    #[error(
        "GPU_SCAN_TARGET_ARCH={value:?} is not a target for this device ({device}): name an architecture from sm_75 \
         up to the device's own, as sm_80, compute_80, 80 or 8.0, or unset it"
    )]
    BadTargetArch {
        /// The variable's value.
        value: String,
        /// The device's architecture.
        device: String,
    },
    /// `GPU_SCAN_QUICK_BUILDS` ([`crate::QUICK_BUILDS_ENV`]) is not one of
    /// its values.
    #[error("GPU_SCAN_QUICK_BUILDS={value:?} is not auto, never or always (or unset)")]
    BadQuickBuilds {
        /// The variable's value.
        value: String,
    },
    /// The NVRTC in use cannot compile for the architecture asked for
    /// (`GPU_SCAN_TARGET_ARCH=compute_100` with NVRTC 12.4, say).
    #[error("NVRTC {nvrtc} cannot compile for {target}: use a newer NVRTC (GPU_SCAN_NVRTC) or another target")]
    TargetUnknownToNvrtc {
        /// NVRTC's version.
        nvrtc: String,
        /// The architecture asked for (`compute_100`).
        target: String,
    },
    /// A scan asked to be bit-reproducible ([`Tuning::deterministic`]) in a
    /// shape that has no deterministic form yet.
    ///
    /// [`Tuning::deterministic`]: crate::Tuning::deterministic
    #[error("a deterministic scan of {shape} is not available: its pass looks back over other blocks' results; scan with Tuning::deterministic off")]
    NotDeterministic {
        /// The shape (`columns`).
        shape: &'static str,
    },
    /// A CUDA driver call failed (out of memory, launch failure, …).
    #[error("CUDA driver error: {0}")]
    Driver(#[from] cudarc::driver::DriverError),
    /// NVRTC rejected the generated program.
    #[error(
        "NVRTC could not compile the program of operator `{op}`; {}:\n{log}",
        match source_path {
            Some(path) => format!("the source is in {}", path.display()),
            None => "the source could not be written to the temporary directory".to_string(),
        }
    )]
    Compile {
        /// Operator name.
        op: &'static str,
        /// NVRTC's log.
        log: String,
        /// Where the source was written for reading: `<op>.cu` in a new
        /// private directory of the temporary directory (`None` when it
        /// could not be written).
        source_path: Option<PathBuf>,
    },
    /// Input and output lengths differ.
    #[error("output has {output} elements but the input has {input}: scans write one output element per input element")]
    LengthMismatch {
        /// Input length.
        input: usize,
        /// Output length.
        output: usize,
    },
    /// The head flags do not have the size the input needs.
    #[error(transparent)]
    FlagsLength(#[from] scan_core::segmented::FlagsLengthMismatch),
    /// A row length of 0, or one that does not divide the input's length.
    #[error(transparent)]
    RowLength(#[from] scan_core::segmented::RowLengthMismatch),
    /// Segment offsets that are not row pointers (past the end, or
    /// decreasing): no flags were written.
    #[error(transparent)]
    InvalidOffsets(#[from] scan_core::segmented::InvalidOffsets),
    /// Segment keys that are not one per element.
    #[error(transparent)]
    KeysLength(#[from] scan_core::segmented::KeysLengthMismatch),
    /// A per-segment totals slot ([`ScanSpec::segment_totals`](scan_core::ScanSpec::segment_totals))
    /// whose length is not the number of segments (one for a scan without
    /// segments).
    #[error(transparent)]
    SegmentTotalsLength(#[from] scan_core::segmented::SegmentTotalsLength),
    /// A slot of exactly one total per segment
    /// ([`ScanSpec::segment_totals`](scan_core::ScanSpec::segment_totals))
    /// asked of a scan over device head flags or keys, whose number of
    /// segments the host does not know: use
    /// [`ScanSpec::counted_segment_totals`](scan_core::ScanSpec::counted_segment_totals),
    /// which takes a slot of any length and writes the count on the device.
    #[error("a slot of one total per segment needs segments the host can count (rows or offsets); for {source_kind} in device memory use counted_segment_totals, which writes the count on the device")]
    SegmentTotalsUncounted {
        /// "head flags" or "keys".
        source_kind: &'static str,
    },
    /// A segment count slot
    /// ([`ScanSpec::counted_segment_totals`](scan_core::ScanSpec::counted_segment_totals))
    /// that is not one `u64` long.
    #[error("the segment count slot has {len} elements: a scan writes the count to a one-element buffer")]
    SegmentCountLength {
        /// The slot's length.
        len: usize,
    },
    /// A carry-out slot that is not one element long.
    #[error("the carry-out slot has {len} elements: a scan writes its carry-out to a one-element buffer")]
    CarryOutLength {
        /// The slot's length.
        len: usize,
    },
    /// A carry-out slot in the spec of a scan of a matrix, which has none
    /// (the spec's builder refuses one at compile time; this guards specs
    /// put together otherwise).
    #[error("a scan of a matrix (down its columns or in two dimensions) writes no carry-out: leave the spec's carry-out slot out")]
    MatrixCarryOut,
    /// A sort that cannot run as asked (a bit range outside the key, values
    /// not one per key): the same error as the CPU backend's.
    #[error(transparent)]
    Sort(#[from] scan_core::sort::SortError),
    /// Buffers of a compaction (select, partition, unique) that do not fit
    /// its input: the same error as the CPU backend's.
    #[error(transparent)]
    Select(#[from] scan_core::select::SelectLengthError),
    /// Arrays of a linear recurrence that do not fit its shape: the same
    /// error as the CPU backend's.
    #[error(transparent)]
    Recurrence(#[from] scan_core::recurrence::RecurrenceLengthError),
    /// A sparse matrix or vector that does not fit (row pointers that do
    /// not cut the entries, a column past the matrix's, vectors of other
    /// lengths): the same error as the CPU backend's.
    #[error(transparent)]
    Spmv(#[from] scan_core::spmv::SpmvError),
    /// A sparse-product tile shape (`GpuSpmv::set_shape`) that cannot run.
    #[error("sparse-product tile shape: {detail}")]
    SpmvShape {
        /// What does not fit.
        detail: String,
    },
    /// A recurrence whose state is larger than the GPU's kernels hold.
    #[error(
        "a {transition} recurrence on the GPU takes a state of at most {most} values, not {state}"
    )]
    RecurrenceState {
        /// `scalar`, `diagonal` or `matrix`.
        transition: &'static str,
        /// The state asked for.
        state: usize,
        /// The largest the kernels take for this transition and type.
        most: usize,
    },
    /// A compaction's count slot of the wrong length: one `u64`, or two
    /// for a three-way partition.
    #[error(
        "the count slot has {len} elements: this compaction writes {expected} count(s) to a buffer of that many"
    )]
    SelectCountLength {
        /// The slot's length.
        len: usize,
        /// The slots this compaction writes.
        expected: usize,
    },
    /// A compaction tile shape (`GpuSelect::set_shape`) that cannot hold
    /// the element.
    #[error("select tile shape: {detail}")]
    SelectShape {
        /// What does not fit.
        detail: String,
    },
    /// A sort tile shape (`GpuSort::set_shape`) that cannot hold the keys
    /// and values.
    #[error("sort tile shape: {detail}")]
    SortShape {
        /// What does not fit.
        detail: String,
    },
    /// The input is longer than the kernels' grid can cover.
    #[error("{len} elements is more than the {max} one scan can cover with this tile size")]
    TooLong {
        /// Requested length.
        len: usize,
        /// Largest supported length.
        max: usize,
    },
    /// A scan (or compaction, or sort) needed more scratch memory while its
    /// stream was being captured into a CUDA graph, where an allocation
    /// would belong to the graph.
    #[error(
        "{bytes} more bytes of workspace are needed while the stream is being captured into a CUDA graph: \
         call {reserve} for the longest input before beginning the capture"
    )]
    WorkspaceDuringCapture {
        /// Bytes the call would have allocated.
        bytes: usize,
        /// The call that reserves them ahead: `GpuScanner::reserve`,
        /// `GpuSelect::reserve`, `GpuSort::reserve`,
        /// `GpuRecurrence::reserve` or `GpuSpmv::reserve`.
        reserve: &'static str,
    },
    /// A launch's arguments disagree with the kernel ABI table: a bug in
    /// gpu-scan, caught before anything was enqueued.
    #[error(
        "internal error: the arguments of kernel `{kernel}` disagree with the ABI table: {detail}"
    )]
    KernelAbi {
        /// The kernel's symbol.
        kernel: String,
        /// What differs.
        detail: String,
    },
    /// The operator broke associativity or the identity law on the data
    /// checked (see [`GpuScanner::set_law_checks`](crate::GpuScanner::set_law_checks)):
    /// its scans would depend on how the backend groups the work. Nothing
    /// was written.
    #[error(
        "operator `{op}` cannot be scanned: {counterexample}\n(found by the check gpu-scan runs on the first scan's \
         data in debug builds; fix the operator or its IDENTITY, or turn the check off with set_law_checks(false) \
         if the difference is rounding you accept)"
    )]
    OperatorLaws {
        /// Operator name.
        op: &'static str,
        /// The values, scalar by scalar.
        counterexample: Box<scan_core::Counterexample<scan_core::laws::Lanes>>,
    },
    /// The GPU backend was requested explicitly but is unusable.
    #[error("the GPU backend was requested but is unusable: {0}")]
    GpuUnavailable(Box<ScanError>),
    /// An operator built at run time from its text
    /// ([`DynOperator::from_text`](crate::DynOperator::from_text)) was
    /// refused: a malformed text, a type rustc would reject, an element
    /// the kernels do not take.
    #[error("operator refused: {0}")]
    InvalidOperator(String),
    /// A buffer given to a built operator's scan
    /// ([`DynScanner`](crate::DynScanner)) does not hold whole elements,
    /// or lies at an address the element's alignment does not allow.
    #[error("{what}: {bytes} bytes at {address:#x}: elements of {size} bytes aligned to {align} expected")]
    ElementBuffer {
        /// Which buffer.
        what: &'static str,
        /// Its length in bytes.
        bytes: usize,
        /// Its device address (0 where not yet known).
        address: u64,
        /// The element's size.
        size: usize,
        /// The element's alignment.
        align: usize,
    },
}

impl From<scan_core::LengthMismatch> for ScanError {
    fn from(e: scan_core::LengthMismatch) -> Self {
        ScanError::LengthMismatch {
            input: e.input,
            output: e.output,
        }
    }
}

/// `Result` with [`ScanError`].
pub type Result<T, E = ScanError> = std::result::Result<T, E>;

impl From<scan_core::segmented::SegmentedError> for ScanError {
    fn from(e: scan_core::segmented::SegmentedError) -> Self {
        use scan_core::segmented::SegmentedError;
        match e {
            SegmentedError::Length(m) => ScanError::LengthMismatch {
                input: m.input,
                output: m.output,
            },
            SegmentedError::Flags(m) => m.into(),
            SegmentedError::Rows(m) => m.into(),
            SegmentedError::Offsets(m) => m.into(),
            SegmentedError::Keys(m) => m.into(),
            SegmentedError::Totals(m) => m.into(),
        }
    }
}

impl ScanError {
    /// A [`ScanError::WorkspaceDuringCapture`] naming `call` as the one that
    /// reserves ahead (the workspace is shared by the scanner, the
    /// compactions and the sort); any other error unchanged.
    pub(crate) fn reserved_by(self, call: &'static str) -> Self {
        match self {
            ScanError::WorkspaceDuringCapture { bytes, .. } => ScanError::WorkspaceDuringCapture {
                bytes,
                reserve: call,
            },
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capture_refusal_names_the_reserve_of_the_type_that_refused() {
        let refused = ScanError::WorkspaceDuringCapture {
            bytes: 4096,
            reserve: "GpuScanner::reserve",
        };
        assert!(refused.to_string().contains("call GpuScanner::reserve"));
        let sort = refused.reserved_by("GpuSort::reserve").to_string();
        assert!(
            sort.contains("4096 more bytes") && sort.contains("call GpuSort::reserve"),
            "{sort}"
        );
        let other = ScanError::SortShape { detail: "x".into() }.reserved_by("GpuSort::reserve");
        assert!(matches!(other, ScanError::SortShape { .. }));
    }
}
