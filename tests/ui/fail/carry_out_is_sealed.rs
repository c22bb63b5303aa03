// A carry-out slot hands the kernels an address to write: users cannot
// implement `DeviceCarryOut` for a type of their own.
use gpu_scan::scan_runtime::cudarc::driver::{CudaStream, SyncOnDrop};
use gpu_scan::scan_runtime::DeviceCarryOut;

struct Anywhere;

impl DeviceCarryOut<u32> for Anywhere {
    fn check(&self) -> gpu_scan::scan_runtime::Result<()> {
        Ok(())
    }

    fn slot<'a>(&'a mut self, _: &'a CudaStream) -> (u64, Option<SyncOnDrop<'a>>) {
        (0xdead_0000, None)
    }
}

fn main() {}
