//! GPU energy from NVML's total-energy counter (millijoules since the driver loaded, Volta and
//! later). NVML is loaded at run time (nvml-wrapper uses libloading), so a machine without the
//! driver builds and runs wmfix and only loses the energy figures.

use nvml_wrapper::Nvml;

pub struct Meter {
    nvml: Nvml,
    index: u32,
    /// The GPU's name, as NVML gives it.
    pub name: String,
}

impl Meter {
    /// Opens GPU `index` in NVML's order (PCI bus order, as `CUDA_DEVICE_ORDER=PCI_BUS_ID`), or
    /// says why energy cannot be measured.
    pub fn open(index: u32) -> Result<Meter, String> {
        let nvml = Nvml::init().map_err(|e| format!("NVML unavailable ({e})"))?;
        let device = nvml
            .device_by_index(index)
            .map_err(|e| format!("NVML has no GPU {index} ({e})"))?;
        let name = device.name().unwrap_or_else(|_| "unknown GPU".into());
        device
            .total_energy_consumption()
            .map_err(|e| format!("{name}: no energy counter ({e})"))?;
        Ok(Meter { nvml, index, name })
    }

    /// The counter now, in millijoules.
    pub fn read_mj(&self) -> Option<u64> {
        self.nvml
            .device_by_index(self.index)
            .ok()?
            .total_energy_consumption()
            .ok()
    }
}
