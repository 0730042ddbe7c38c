; Built-in thread ids replaced by the runtime's virtual ids (blockDim stays).
((identifier) @thread_id (#any-of? @thread_id "threadIdx" "blockIdx" "gridDim"))

; libcu++'s cuda::atomic_ref, cuda::atomic and cuda::atomic_thread_fence: in a file with device
; code the qualified name becomes WMFIX_ATOMIC_REF, WMFIX_ATOMIC or WMFIX_ATOMIC_THREAD_FENCE,
; which a race build traces with scope and order (runtime-cu/wmfix_race.cuh) and any other build
; takes as libcu++'s own; cuda::std::atomic_ref and cuda::std::atomic (system scope) become
; WMFIX_STD_ATOMIC_REF and WMFIX_STD_ATOMIC, cuda::std::atomic_thread_fence the same fence.
((qualified_identifier
   scope: (namespace_identifier) @_libcuxx.ns
   name: [(template_type name: (type_identifier) @_libcuxx.ref)
          (template_function name: (identifier) @_libcuxx.ref)]) @libcuxx.ref
  (#eq? @_libcuxx.ns "cuda") (#any-of? @_libcuxx.ref "atomic_ref" "atomic"))
((qualified_identifier
   scope: (namespace_identifier) @_libcuxx.ns
   name: [(identifier) (type_identifier)] @_libcuxx.name) @libcuxx.name
  (#eq? @_libcuxx.ns "cuda") (#any-of? @_libcuxx.name "atomic_ref" "atomic" "atomic_thread_fence"))
((qualified_identifier
   scope: (namespace_identifier) @_libcuxx.ns
   name: (qualified_identifier
     scope: (namespace_identifier) @_libcuxx.std
     name: [(template_type name: (type_identifier) @_libcuxx.ref)
            (template_function name: (identifier) @_libcuxx.ref)])) @libcuxx.ref
  (#eq? @_libcuxx.ns "cuda") (#eq? @_libcuxx.std "std") (#any-of? @_libcuxx.ref "atomic_ref" "atomic"))
((qualified_identifier
   scope: (namespace_identifier) @_libcuxx.ns
   name: (qualified_identifier
     scope: (namespace_identifier) @_libcuxx.std
     name: [(identifier) (type_identifier)] @_libcuxx.name)) @libcuxx.name
  (#eq? @_libcuxx.ns "cuda") (#eq? @_libcuxx.std "std")
  (#any-of? @_libcuxx.name "atomic_ref" "atomic" "atomic_thread_fence"))
