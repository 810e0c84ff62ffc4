//go:build !linux

package netcore

import "testing"

// Where the platform gives no kernel stamps, none is ever found.
func TestKernelStampNone(t *testing.T) {
	if _, ok := kernelStamp(make([]byte, 64)); ok {
		t.Error("a stamp found where the platform gives none")
	}
}
