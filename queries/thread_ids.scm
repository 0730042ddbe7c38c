; Built-in thread ids replaced by the runtime's virtual ids (blockDim stays).
((identifier) @thread_id (#any-of? @thread_id "threadIdx" "blockIdx" "gridDim"))
