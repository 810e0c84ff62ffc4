package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The kernel's own counters, read without a process per reading: a
// netlink socket made inside a namespace asks nf_tables there for the
// named counters of one table (NFT_MSG_GETOBJ), so a reading takes some
// tens of microseconds and its time is known to as much. `nft list
// counters` under `ip netns exec` takes some 15 ms of wall clock a
// reading, too coarse for a tenth of a second.

// nftCount is one counter's reading.
type nftCount struct{ packets, bytes uint64 }

// payload is the bytes of the UDP payloads counted, for a counter of
// IPv4 UDP datagrams without IP options: 28 bytes of headers each.
func (c nftCount) payload() uint64 { return c.bytes - 28*c.packets }

// nftReader reads the named counters of one table (family ip) in one
// namespace. It is safe for use by several goroutines: one request is on
// its socket at a time.
type nftReader struct {
	ns, table string
	fd        int
	mu        sync.Mutex
	seq       uint32
	buf       []byte
}

// newNftReader opens a netlink socket in ns for table's counters; it
// closes when the test ends.
func newNftReader(t *testing.T, ns, table string) *nftReader {
	t.Helper()
	r := &nftReader{ns: ns, table: table, buf: make([]byte, 1<<16)}
	err := inNetnsDo(ns, func() error {
		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
		if err != nil {
			return err
		}
		if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
			unix.Close(fd)
			return err
		}
		tv := unix.NsecToTimeval(int64(2 * time.Second))
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			unix.Close(fd)
			return err
		}
		r.fd = fd
		return nil
	})
	if err != nil {
		t.Fatalf("netlink socket in %s: %v", ns, err)
	}
	t.Cleanup(func() { unix.Close(r.fd) })
	return r
}

// nlAttr appends one netlink attribute.
func nlAttr(b []byte, typ uint16, v []byte) []byte {
	b = binary.LittleEndian.AppendUint16(b, uint16(4+len(v)))
	b = binary.LittleEndian.AppendUint16(b, typ)
	b = append(b, v...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// nlAttrs walks a run of netlink attributes.
func nlAttrs(b []byte, each func(typ uint16, v []byte)) error {
	for len(b) >= 4 {
		n := int(binary.LittleEndian.Uint16(b))
		if n < 4 || n > len(b) {
			return errors.New("netlink attribute runs past its message")
		}
		each(binary.LittleEndian.Uint16(b[2:])&^unix.NLA_F_NESTED, b[4:n])
		b = b[min(len(b), (n+3)&^3):]
	}
	return nil
}

// read returns every counter of the table by name.
func (r *nftReader) read() (map[string]nftCount, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	msg := make([]byte, unix.NLMSG_HDRLEN, 64)
	msg = append(msg, unix.AF_INET, unix.NFNETLINK_V0, 0, 0) // nfgenmsg: family, version, resource id
	msg = nlAttr(msg, unix.NFTA_OBJ_TABLE, append([]byte(r.table), 0))
	msg = nlAttr(msg, unix.NFTA_OBJ_TYPE, binary.BigEndian.AppendUint32(nil, unix.NFT_OBJECT_COUNTER))
	binary.LittleEndian.PutUint32(msg[0:], uint32(len(msg)))
	binary.LittleEndian.PutUint16(msg[4:], unix.NFNL_SUBSYS_NFTABLES<<8|unix.NFT_MSG_GETOBJ)
	binary.LittleEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	binary.LittleEndian.PutUint32(msg[8:], r.seq)
	if err := unix.Sendto(r.fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("%s: netlink send: %w", r.ns, err)
	}
	out := map[string]nftCount{}
	for {
		n, _, err := unix.Recvfrom(r.fd, r.buf, 0)
		if err != nil {
			return nil, fmt.Errorf("%s: netlink receive: %w", r.ns, err)
		}
		msgs, err := syscall.ParseNetlinkMessage(r.buf[:n])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.ns, err)
		}
		for _, m := range msgs {
			if m.Header.Seq != r.seq {
				continue // a late answer to an earlier request
			}
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				return out, nil
			case unix.NLMSG_ERROR:
				if len(m.Data) >= 4 {
					if code := int32(binary.LittleEndian.Uint32(m.Data)); code != 0 {
						return nil, fmt.Errorf("%s: table ip %s: %w", r.ns, r.table, unix.Errno(-code))
					}
				}
				return out, nil
			case unix.NFNL_SUBSYS_NFTABLES<<8 | unix.NFT_MSG_NEWOBJ:
			default:
				continue
			}
			if len(m.Data) < 4 {
				continue
			}
			var table, name string
			var c nftCount
			err := nlAttrs(m.Data[4:], func(typ uint16, v []byte) {
				switch typ {
				case unix.NFTA_OBJ_TABLE:
					table = strings.TrimRight(string(v), "\x00")
				case unix.NFTA_OBJ_NAME:
					name = strings.TrimRight(string(v), "\x00")
				case unix.NFTA_OBJ_DATA:
					_ = nlAttrs(v, func(typ uint16, v []byte) {
						if len(v) != 8 {
							return
						}
						switch typ {
						case unix.NFTA_COUNTER_BYTES:
							c.bytes = binary.BigEndian.Uint64(v)
						case unix.NFTA_COUNTER_PACKETS:
							c.packets = binary.BigEndian.Uint64(v)
						}
					})
				}
			})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", r.ns, err)
			}
			if table == r.table && name != "" {
				out[name] = c
			}
		}
	}
}

// nftSample is one reading of every reader, with its time: at is taken
// just before the first request. Each namespace's counters were read
// between its from and to: tens of microseconds apart, unless the
// sampler's thread was kept from running in between.
type nftSample struct {
	at       time.Time
	counts   map[string]map[string]nftCount // namespace → counter → reading
	from, to map[string]time.Time           // namespace → when its reading began and ended
}

// nftSampler reads a set of readers every period until stopped, for at
// most limit.
type nftSampler struct {
	mu      sync.Mutex
	samples []nftSample
	err     error
	late    time.Duration // the most a reading came after its tick
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

func startNftSampler(t *testing.T, period, limit time.Duration, readers ...*nftReader) *nftSampler {
	s := &nftSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		// A thread of its own: the readings' times are this thread's.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tick := time.NewTicker(period)
		defer tick.Stop()
		end := time.Now().Add(limit)
		for {
			at := time.Now()
			smp := nftSample{at: at, counts: map[string]map[string]nftCount{}, from: map[string]time.Time{}, to: map[string]time.Time{}}
			for _, r := range readers {
				smp.from[r.ns] = time.Now()
				c, err := r.read()
				smp.to[r.ns] = time.Now()
				if err != nil {
					s.mu.Lock()
					s.err = err
					s.mu.Unlock()
					return
				}
				smp.counts[r.ns] = c
			}
			s.mu.Lock()
			s.samples = append(s.samples, smp)
			s.mu.Unlock()
			if at.After(end) {
				return
			}
			select {
			case <-s.stop:
				return
			case due := <-tick.C:
				s.mu.Lock()
				s.late = max(s.late, time.Since(due))
				s.mu.Unlock()
			}
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *nftSampler) close() {
	s.once.Do(func() {
		close(s.stop)
		<-s.done
	})
}

// taken stops the sampler and returns its readings, or the error that
// stopped it.
func (s *nftSampler) taken() ([]nftSample, time.Duration, error) {
	s.close()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples, s.late, s.err
}
