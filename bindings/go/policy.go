package ctxpack

// Policies (spec 07 §1-3, docs/policy-json.md): presets, pipelines from policy JSON, and
// the policy JSON of a pipeline.

/*
#include "ctxpack.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Presets returns the names of the presets, in the order of spec 07 §2 ("Chat",
// "CodeReview", "Rag", "DocumentQa", "ToolUse", "LongRunning", "Debugging").
func Presets() []string {
	n := int(C.ctxpack_preset_count())
	names := make([]string, 0, n)
	for i := 0; i < n; i++ {
		var s C.ctxpack_str
		if check(C.ctxpack_preset_name(C.size_t(i), &s)) == nil {
			names = append(names, goString(s))
		}
	}
	return names
}

// newPipeline wraps the handle a pipeline constructor creates.
func newPipeline(construct func(**C.ctxpack_pipeline, **C.ctxpack_error) C.ctxpack_status) (*Pipeline, error) {
	var ptr *C.ctxpack_pipeline
	var cerr *C.ctxpack_error
	if err := takeError(construct(&ptr, &cerr), cerr); err != nil {
		return nil, err
	}
	return &Pipeline{newHandle(unsafe.Pointer(ptr), func(p unsafe.Pointer) {
		C.ctxpack_pipeline_free((*C.ctxpack_pipeline)(p))
	})}, nil
}

// NewPresetPipeline builds the pipeline of a preset. The name matches in any ASCII case,
// with or without "-", "_" or a space between words ("code-review", "TOOL USE"); an
// unknown name is StatusInvalidArgument.
func NewPresetPipeline(name string) (*Pipeline, error) {
	var a arena
	defer a.free()
	s := a.str(name)
	return newPipeline(func(o **C.ctxpack_pipeline, e **C.ctxpack_error) C.ctxpack_status {
		return C.ctxpack_pipeline_new_preset(s, o, e)
	})
}

// NewPipelineFromPolicyJSON builds a pipeline from a policy in its JSON form. A
// structural problem is StatusInvalidPolicy, with a message starting with the JSON path
// of the bad field; a value a component rejects keeps that component's status
// (StatusScorerConfig, StatusSlicerConfig, ...).
func NewPipelineFromPolicyJSON(json string) (*Pipeline, error) {
	var a arena
	defer a.free()
	s := a.str(json)
	return newPipeline(func(o **C.ctxpack_pipeline, e **C.ctxpack_error) C.ctxpack_status {
		return C.ctxpack_pipeline_new_policy_json(s, o, e)
	})
}

// PolicyJSON returns the pipeline's policy as JSON, compact or indented by two spaces.
// A pipeline with a custom component (or another shape the JSON form cannot express) is
// StatusInvalidPolicy.
func (p *Pipeline) PolicyJSON(pretty bool) (string, error) {
	defer runtime.KeepAlive(p)
	var str *C.ctxpack_string
	var cerr *C.ctxpack_error
	status := C.ctxpack_pipeline_policy_json(p.ptr(), flag(pretty), &str, &cerr)
	if err := takeError(status, cerr); err != nil {
		return "", err
	}
	return takeString(str)
}
