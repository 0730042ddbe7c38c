; Kernel launches `k<<<grid, block[, smem[, stream]]>>>(args)`, templated kernels too.
(call_expression (kernel_call_syntax) @launch.config) @launch
; `cudaLaunchKernelEx(&config, k, args...)` and `cudaLaunchKernelExC(&config, k, args)`, also
; `::`-qualified: the config, their first argument.
((call_expression
   function: [(identifier) (qualified_identifier)] @launch_ex.name
   arguments: [(argument_list . (expression) @launch_ex.config)
               (argument_list . (comment) . (expression) @launch_ex.config)])
  (#match? @launch_ex.name "^(::)?cudaLaunchKernelExC?$"))
; Their own definitions (cuda_runtime.h's template forwards to cudaLaunchKernelExC, and a
; preprocessed translation unit may hold it): the calls inside are not launches of their own.
(function_definition
  declarator: (function_declarator declarator: (identifier) @launch_ex.wrapper_name)
  body: (compound_statement) @launch_ex.wrapper
  (#match? @launch_ex.wrapper_name "^cudaLaunchKernelExC?$"))
