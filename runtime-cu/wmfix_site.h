/* wmfix runtime: where this build's host library is (wmfix_glue.cuh). `wmfix build` writes this
 * file beside the instrumented tree with the absolute path of the library it built; this copy
 * names none, so a program built against runtime-cu/ itself needs WMFIX_HOST_LIB (or
 * -DWMFIX_HOST_LIBRARY=\"PATH\", or -DWMFIX_HOST_LINKED and wmfix_host.cpp linked in). */
#ifndef WMFIX_HOST_LIBRARY
#define WMFIX_HOST_LIBRARY ""
#endif
