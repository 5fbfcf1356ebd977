// C glue for the custom components written in Go (shim.c). user_data is a
// runtime/cgo.Handle, passed as uintptr_t so that no Go code converts an integer to a
// pointer.
#ifndef CTXPACK_GO_SHIM_H
#define CTXPACK_GO_SHIM_H

#include <stdint.h>

#include "ctxpack.h"

ctxpack_status ctxpack_go_scorer_new(uintptr_t handle, ctxpack_scorer **out, ctxpack_error **out_error);
ctxpack_status ctxpack_go_slicer_new(uintptr_t handle, ctxpack_slicer **out, ctxpack_error **out_error);
ctxpack_status ctxpack_go_placer_new(uintptr_t handle, ctxpack_placer **out, ctxpack_error **out_error);

#endif
