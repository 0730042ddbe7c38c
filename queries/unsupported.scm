; Grid-wide synchronisation: extra stressing blocks and remapped block ids break it (Sorensen & Donaldson, PLDI 2016,
; Sec. 4.1 left such applications out). Reported, not rewritten. (cudaLaunchKernelEx is rewritten
; (launches.scm): its config decides at run time whether it is cooperative.)
((call_expression function: (identifier) @coop.launch)
  (#any-of? @coop.launch "cudaLaunchCooperativeKernel" "cudaLaunchCooperativeKernelMultiDevice"))
((call_expression function: (qualified_identifier) @coop.grid)
  (#match? @coop.grid "this_grid$"))
((call_expression function: (identifier) @coop.grid)
  (#eq? @coop.grid "this_grid"))
