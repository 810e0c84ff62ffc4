//go:build !(linux && (amd64 || arm64 || riscv64 || ppc64le || loong64))

package netcore

import (
	"net"
	"net/netip"
)

// Elsewhere the reader takes one datagram per read (udp_batch_linux.go
// batches them).

type batchReader struct {
	conn *net.UDPConn
	d    *Datagram
	oobb [oobSize]byte
	oobn int
	addr netip.AddrPort
}

func newBatchReader(conn *net.UDPConn, _ bool, _ func(fd uintptr) (int, bool)) (*batchReader, error) {
	return &batchReader{conn: conn, d: datagramPool.Get().(*Datagram)}, nil
}

func (r *batchReader) read() (int, error) {
	n, oobn, from, err := readStamped(r.conn, r.d.buf[:], r.oobb[:])
	if err != nil {
		return 0, err
	}
	r.d.n, r.oobn, r.addr = n, oobn, from
	return 1, nil
}

func (r *batchReader) datagram(int) *Datagram { return r.d }

func (r *batchReader) oob(int) []byte { return r.oobb[:r.oobn] }

func (r *batchReader) from(int) netip.AddrPort { return r.addr }

func (r *batchReader) take(int) *Datagram {
	d := r.d
	r.d = datagramPool.Get().(*Datagram)
	return d
}

func (r *batchReader) close() {
	datagramPool.Put(r.d)
	r.d = nil
}

// SendBatch writes the datagrams ps[i] to to[i] and returns how many
// failed; here one system call each (udp_batch_linux.go batches them).
func (t *UDPTransport) SendBatch(to []netip.AddrPort, ps [][]byte) (failed int) {
	for i, p := range ps {
		if t.Send(to[i], p) != nil {
			failed++
		}
	}
	return failed
}

type batchWriter struct{}

// writeRaw is write's own path elsewhere: none (udp_batch_linux.go).
func (t *UDPTransport) writeRaw([]byte, []byte, netip.AddrPort) (error, bool) { return nil, false }
