//! Where a scan takes the device addresses of the buffers it is given, so
//! that it can be captured in a CUDA graph under cudarc's default event
//! tracking.
//!
//! Once a context has a stream from `ctx.new_stream()`, cudarc tracks every
//! buffer with events: `device_ptr(stream)` makes `stream` wait on the
//! buffer's last write and records the use on it afterwards. Inside a
//! capture that wait is a dependency on work outside the capture, which
//! CUDA refuses (`CUDA_ERROR_STREAM_CAPTURE_ISOLATION`, and the capture is
//! invalidated): cudarc's own copies fail the same way. A graph's replays
//! are ordered by the stream they are launched on, not by the events of
//! its capture, so while the caller's stream is being captured the scans
//! take addresses on a side stream of the same context instead: the waits
//! and records land there, where they are legal and order nothing the
//! graph holds. Outside a capture, and where cudarc does not track buffers,
//! addresses are taken on the caller's stream as before.

use crate::error::Result;
use cudarc::driver::sys::CUstreamCaptureStatus;
use cudarc::driver::CudaStream;
use std::sync::{Arc, Mutex};

/// The side stream of one scanner, made the first time it is needed.
#[derive(Default)]
pub(crate) struct AddressStream {
    side: Mutex<Option<Arc<CudaStream>>>,
}

impl AddressStream {
    /// The stream on which to take the addresses of buffers used on
    /// `stream` (module docs).
    pub(crate) fn for_stream(&self, stream: &Arc<CudaStream>) -> Result<Arc<CudaStream>> {
        let ctx = stream.context();
        // Without tracking, `device_ptr` neither waits nor records.
        if !ctx.is_managing_stream_synchronization() {
            return Ok(stream.clone());
        }
        if stream.capture_status()? == CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE {
            return Ok(stream.clone());
        }
        let mut held = self.side.lock().unwrap_or_else(|p| p.into_inner());
        match &*held {
            Some(side) if Arc::ptr_eq(side.context(), ctx) => Ok(side.clone()),
            _ => {
                // The context is in multi-stream mode already: one more
                // stream changes nothing in how cudarc treats it.
                let side = ctx.new_stream()?;
                *held = Some(side.clone());
                Ok(side)
            }
        }
    }
}
