//! Whether a kernel may load on the device: the GPU its manifest names
//! against the one the driver reports. Pure, so it is tested without a GPU.

use crate::error::{Result, RuntimeError};
use tilec_artifact::Manifest;
use tilec_target::Target;

/// `Ok` when the kernel of `manifest` may load on the device the driver
/// reports as `device_name` with `total_memory_bytes` of memory: the
/// manifest names no GPU (it was written before manifests named one), the
/// device is the GPU it names, or the device is no target tilec knows
/// (there is no other target to recompile for). A kernel compiled for one
/// known GPU is refused on another: it would run, but with the config
/// chosen for other hardware.
pub fn check_target(manifest: &Manifest, device_name: &str, total_memory_bytes: u64) -> Result<()> {
    let (Some(compiled_for), Some(device)) = (manifest.gpu.as_deref(), Target::of_device(device_name, total_memory_bytes)) else {
        return Ok(());
    };
    if compiled_for == device.name {
        return Ok(());
    }
    Err(RuntimeError::TargetMismatch {
        entry: manifest.entry.clone(),
        compiled_for: compiled_for.to_string(),
        device: device_name.to_string(),
        device_target: device.name,
    })
}
