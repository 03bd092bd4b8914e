//! Modules (loaded GPU code) and their kernels.

use super::retag;
use crate::core::{self, KernelAttributes, ParamAttr};
use crate::error::Result;

/// Loaded GPU code: a cubin (or what [`Device::load_module`](crate::Device::load_module)
/// accepts) in GPU memory, until the module and every kernel taken from it are dropped and the
/// GPU work recorded so far no longer uses it. Cheap to clone; `Send` and `Sync`.
///
/// ```
/// let dev = tegragpu::Device::open("emu")?;
/// let module = dev.load_module(include_bytes!("../../tests/fixtures/cubin/kernels.sm_87.cubin"))?;
/// let saxpy = module.kernel("saxpy")?;
/// assert_eq!(saxpy.params().len(), 4);
/// # Ok::<(), tegragpu::Error>(())
/// ```
#[derive(Clone)]
pub struct Module {
    inner: core::Module,
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Module")
            .field("kernels", &self.kernel_names())
            .finish()
    }
}

impl Module {
    pub(crate) fn from_core(inner: core::Module) -> Module {
        Module { inner }
    }

    /// A kernel of the module, by its (mangled, unless `extern "C"`) name. `NotFound` names the
    /// kernels the module has.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let module = dev.load_module(include_bytes!("../../tests/fixtures/cubin/kernels.sm_87.cubin"))?;
    /// let k = module.kernel("vector_add")?;
    /// assert_eq!(k.name(), "vector_add");
    /// let err = module.kernel("vector_sub").unwrap_err();
    /// assert_eq!(err.status, tegragpu::Status::NotFound);
    /// assert!(err.message.contains("vector_add"), "{err}");
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn kernel(&self, name: &str) -> Result<Kernel> {
        Ok(Kernel {
            inner: self
                .inner
                .kernel(name)
                .map_err(|e| retag(e, "Module::kernel"))?,
        })
    }

    /// Names of the module's kernels.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let module = dev.load_module(include_bytes!("../../tests/fixtures/cubin/kernels.sm_87.cubin"))?;
    /// assert!(module.kernel_names().contains(&"fill_u32".to_string()));
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn kernel_names(&self) -> Vec<String> {
        self.inner.kernel_names()
    }

    /// Names of the module's `__device__` and `__constant__` variables.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let module = dev.load_module(include_bytes!("../../tests/fixtures/cubin/kernels.sm_87.cubin"))?;
    /// println!("globals: {:?}", module.global_names());
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn global_names(&self) -> Vec<String> {
        self.inner.global_names()
    }
}

/// A kernel of a [`Module`], with the parameter layout its cubin declares. Keeps its module
/// loaded. Cheap to clone; `Send` and `Sync`. Launch it with
/// [`Queue::launch`](crate::Queue::launch) or record it into a command buffer with
/// [`CmdBuf::launch`](crate::CmdBuf::launch).
///
/// ```
/// let dev = tegragpu::Device::open("emu")?;
/// let module = dev.load_module(include_bytes!("../../tests/fixtures/cubin/kernels.sm_87.cubin"))?;
/// // extern "C" __global__ void saxpy(float a, const float* x, float* y, unsigned n)
/// let saxpy = module.kernel("saxpy")?;
/// let sizes: Vec<u32> = saxpy.params().iter().map(|p| p.size).collect();
/// assert_eq!(sizes, [4, 8, 8, 4]);
/// # Ok::<(), tegragpu::Error>(())
/// ```
#[derive(Clone)]
pub struct Kernel {
    pub(crate) inner: core::Kernel,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernel")
            .field("name", &self.name())
            .field("params", &self.params())
            .finish()
    }
}

impl Kernel {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.inner.attributes().name
    }

    /// The parameters in declaration order: offset in the parameter block and size, bytes.
    /// [`Launch::arg`](crate::Launch::arg) checks each argument against these.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let module = dev.load_module(include_bytes!("../../tests/fixtures/cubin/kernels.sm_87.cubin"))?;
    /// // vector_add(const float* a, const float* b, float* c, unsigned n)
    /// let p = module.kernel("vector_add")?.params().to_vec();
    /// assert_eq!((p[3].offset, p[3].size), (24, 4));
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn params(&self) -> &[ParamAttr] {
        &self.inner.attributes().params
    }

    /// What the kernel needs and allows: registers, static shared and local memory, the
    /// largest block and dynamic shared memory a launch may use.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let module = dev.load_module(include_bytes!("../../tests/fixtures/cubin/kernels.sm_87.cubin"))?;
    /// // __launch_bounds__(128)
    /// assert_eq!(module.kernel("bounded_128")?.attributes().max_threads_per_block, 128);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn attributes(&self) -> &KernelAttributes {
        self.inner.attributes()
    }

    /// Most blocks of `block_threads` threads with `dynamic_shared_bytes` of dynamic shared
    /// memory one SM runs at once (like `cuOccupancyMaxActiveBlocksPerMultiprocessor`); 0 when
    /// such a block does not fit at all.
    ///
    /// ```
    /// let dev = tegragpu::Device::open("emu")?;
    /// let module = dev.load_module(include_bytes!("../../tests/fixtures/cubin/kernels.sm_87.cubin"))?;
    /// let blocks = module.kernel("vector_add")?.max_active_blocks(256, 0)?;
    /// assert!(blocks >= 1);
    /// # Ok::<(), tegragpu::Error>(())
    /// ```
    pub fn max_active_blocks(&self, block_threads: u32, dynamic_shared_bytes: u32) -> Result<u32> {
        self.inner
            .max_active_blocks(block_threads, dynamic_shared_bytes)
            .map_err(|e| retag(e, "Kernel::max_active_blocks"))
    }
}
