; Kernel launches `k<<<grid, block[, smem[, stream]]>>>(args)`, templated kernels too.
(call_expression (kernel_call_syntax) @launch.config) @launch
