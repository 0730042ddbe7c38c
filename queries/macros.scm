; Macros, reported when they hide memory accesses or CUDA qualifiers from the rewriter.
(preproc_def name: (identifier) @macro.name value: (preproc_arg) @macro.value)
(preproc_function_def name: (identifier) @macro.name value: (preproc_arg) @macro.value)
; Uses are the @ident captures of accesses.scm.
(function_definition type: (_) @fn.type)
