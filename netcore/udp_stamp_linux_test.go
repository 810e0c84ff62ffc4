package netcore

import (
	"encoding/binary"
	"syscall"
	"testing"
	"time"
)

// TestKernelStampParsing: the control-message walk finds the stamp among
// others, and refuses lengths that run past the buffer.
func TestKernelStampParsing(t *testing.T) {
	hdr := syscall.CmsgLen(0)
	msg := func(level, typ int32, data []byte) []byte {
		b := make([]byte, syscall.CmsgSpace(len(data)))
		if ptrSize == 8 {
			binary.NativeEndian.PutUint64(b, uint64(hdr+len(data)))
		} else {
			binary.NativeEndian.PutUint32(b, uint32(hdr+len(data)))
		}
		binary.NativeEndian.PutUint32(b[ptrSize:], uint32(level))
		binary.NativeEndian.PutUint32(b[ptrSize+4:], uint32(typ))
		copy(b[hdr:], data)
		return b
	}
	var ts []byte
	if ptrSize == 8 {
		ts = binary.NativeEndian.AppendUint64(binary.NativeEndian.AppendUint64(nil, 1700000000), 123456789)
	} else {
		ts = binary.NativeEndian.AppendUint32(binary.NativeEndian.AppendUint32(nil, 1700000000), 123456789)
	}
	other := msg(syscall.SOL_IP, 8 /* IP_PKTINFO */, make([]byte, 12))
	oob := append(other, msg(syscall.SOL_SOCKET, syscall.SCM_TIMESTAMPNS, ts)...)
	k, ok := kernelStamp(oob)
	if !ok || !k.Equal(time.Unix(1700000000, 123456789)) {
		t.Errorf("stamp %v %v, want 1700000000.123456789", k, ok)
	}
	if _, ok := kernelStamp(other); ok {
		t.Error("a stamp found in a message without one")
	}
	bad := msg(syscall.SOL_SOCKET, syscall.SCM_TIMESTAMPNS, ts)
	binary.NativeEndian.PutUint32(bad, uint32(len(bad)+1)) // low bytes of cmsg_len on either size
	if _, ok := kernelStamp(bad); ok {
		t.Error("a length past the buffer was read")
	}
	for i := range len(oob) {
		kernelStamp(oob[:i]) // every cut: no panic
	}
}
