; Functions whose bodies run on the GPU. `__host__ __device__` functions count too.
(function_definition "__global__" body: (compound_statement) @kernel.body) @kernel
(function_definition "__device__" body: (compound_statement) @device.body) @device
; Also compiled for the host: plain CUDA fences there need `#ifdef __CUDA_ARCH__`.
(function_definition "__host__" body: (compound_statement) @host.body)
; Every function with a body: one whose head held a device qualifier macro (blanked before
; parsing, `rewrite/macros.rs`) is device code too.
(function_definition body: (compound_statement) @function.body)
; An extended lambda (`[=] __device__ (int i) {...}`), its qualifier blanked before parsing.
(lambda_expression body: (compound_statement) @function.body)
