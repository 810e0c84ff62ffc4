package netcore

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/lagscope/lagscope/netcore/trace"
)

// The tracer's socket side through its seams: the hop-limit control
// message, the quote reader, the error-queue drain on a fake socket, and
// the Endpoint tracing over a transport that records hop limits.

// cmsgAt reads the control message at the start of b: level, type, data.
func cmsgAt(t *testing.T, b []byte) (level, typ int32, data, rest []byte) {
	t.Helper()
	if len(b) < cmsgHdrLen {
		t.Fatalf("control message of %d bytes", len(b))
	}
	var n int
	if ptrWord == 8 {
		n = int(binary.NativeEndian.Uint64(b))
	} else {
		n = int(binary.NativeEndian.Uint32(b))
	}
	if n < cmsgHdrLen || n > len(b) {
		t.Fatalf("cmsg_len %d of %d bytes", n, len(b))
	}
	level = int32(binary.NativeEndian.Uint32(b[ptrWord:]))
	typ = int32(binary.NativeEndian.Uint32(b[ptrWord+4:]))
	return level, typ, b[cmsgHdrLen:n], b[min(cmsgAlignOf(n), len(b)):]
}

func TestHopLimitControlMessage(t *testing.T) {
	for _, c := range []struct {
		to         string
		level, typ int32
	}{
		{"192.0.2.7:7373", solIP, cmsgIPTTL},
		{"[::ffff:192.0.2.7]:7373", solIP, cmsgIPTTL}, // the kernel sends it as IPv4
		{"[2001:db8::7]:7373", solIPv6, cmsgIPv6HopLim},
	} {
		b := appendHopLimit([]byte{0xEE}, netip.MustParseAddrPort(c.to), 7)
		if b[0] != 0xEE {
			t.Fatalf("%s: overwrote what was there", c.to)
		}
		level, typ, data, rest := cmsgAt(t, b[1:])
		if level != c.level || typ != c.typ || len(data) != 4 || int32(binary.NativeEndian.Uint32(data)) != 7 || len(rest) != 0 {
			t.Errorf("%s: level %d type %d data % x rest %d, want %d/%d and the int 7", c.to, level, typ, data, len(rest), c.level, c.typ)
		}
		if len(b)-1 != cmsgAlignOf(cmsgHdrLen+4) {
			t.Errorf("%s: %d bytes, want CMSG_SPACE(4)", c.to, len(b)-1)
		}
	}
}

// probeDgram is a probe as it travels, from peerA.
func probeDgram(p trace.Probe) []byte {
	b := make([]byte, probeDatagramLen)
	PutHeader(b, Header{Token: token, Sender: peerA, Channel: ChannelControl})
	return trace.AppendProbe(b[:HeaderLen], p)
}

func TestQuoteOf(t *testing.T) {
	probe := trace.Probe{Num: 77, TTL: 4}
	dgram := probeDgram(probe)
	data := bytes.Clone(dgram)
	data[14] = byte(ChannelUnreliable)
	sealed := bytes.Clone(dgram)
	sealed[3] = flagSealed
	keep := bytes.Clone(dgram)
	keep[HeaderLen] = recKeepAlive
	for _, c := range []struct {
		name  string
		quote []byte
		want  trace.Quote
	}{
		{"nothing quoted", nil, trace.QuoteNone},
		{"8 bytes of it", dgram[:8], trace.QuoteNone},
		{"the probe", dgram, trace.QuoteProbe},
		{"the probe and more", append(bytes.Clone(dgram), 1, 2, 3), trace.QuoteProbe},
		{"header and half the record", dgram[:HeaderLen+4], trace.QuoteNone},
		{"a numbered datagram", data, trace.QuoteOther},
		{"a sealed control datagram", sealed, trace.QuoteNone},
		{"another control record", keep, trace.QuoteOther},
		{"the peer's answer going out", probeDgram(probe.Reply()), trace.QuoteOther},
		{"not ours", bytes.Repeat([]byte{0xAA}, 40), trace.QuoteOther},
	} {
		p, q := quoteOf(c.quote)
		if q != c.want || (q == trace.QuoteProbe && p != probe) {
			t.Errorf("%s: %+v %v, want %v", c.name, p, q, c.want)
		}
	}
}

// errCmsg builds the control messages of one error-queue message as Linux
// lays them out: IP_RECVERR with sock_extended_err and the offender as a
// sockaddr_in, then SCM_TIMESTAMPNS when stamp is set.
func errCmsg(origin, typ, code uint8, off netip.Addr, stamp time.Time) []byte {
	put := func(b []byte, level, typ int32, data []byte) []byte {
		n := cmsgHdrLen + len(data)
		m := make([]byte, cmsgAlignOf(n))
		if ptrWord == 8 {
			binary.NativeEndian.PutUint64(m, uint64(n))
		} else {
			binary.NativeEndian.PutUint32(m, uint32(n))
		}
		binary.NativeEndian.PutUint32(m[ptrWord:], uint32(level))
		binary.NativeEndian.PutUint32(m[ptrWord+4:], uint32(typ))
		copy(m[cmsgHdrLen:], data)
		return append(b, m...)
	}
	ee := make([]byte, 16+16)
	binary.NativeEndian.PutUint32(ee, 113)
	ee[4], ee[5], ee[6] = origin, typ, code
	binary.NativeEndian.PutUint16(ee[16:], 2) // AF_INET
	a := off.As4()
	copy(ee[20:], a[:])
	b := put(nil, solIP, 11, ee) // IP_RECVERR
	if !stamp.IsZero() {
		ts := make([]byte, 2*ptrWord)
		if ptrWord == 8 {
			binary.NativeEndian.PutUint64(ts, uint64(stamp.Unix()))
			binary.NativeEndian.PutUint64(ts[8:], uint64(stamp.Nanosecond()))
		} else {
			binary.NativeEndian.PutUint32(ts, uint32(stamp.Unix()))
			binary.NativeEndian.PutUint32(ts[4:], uint32(stamp.Nanosecond()))
		}
		b = put(b, 1, 35, ts) // SOL_SOCKET, SCM_TIMESTAMPNS
	}
	return b
}

// fakeErrQueue is an error queue of canned messages.
type fakeErrQueue struct {
	msgs []fakeErrMsg
	// forever: the queue never empties (a flood refilling it).
	forever bool
}

type fakeErrMsg struct {
	quote, oob []byte
	to         netip.AddrPort
}

// recv is errDrain's recv on the fake: up to len(msgs) messages.
func (f *fakeErrQueue) recv(_ uintptr, msgs []errMsg) int {
	n := 0
	for ; n < len(msgs) && len(f.msgs) > 0; n++ {
		m := f.msgs[0]
		if !f.forever {
			f.msgs = f.msgs[1:]
		}
		msgs[n].n, msgs[n].oobn, msgs[n].to = copy(msgs[n].buf[:], m.quote), copy(msgs[n].oob[:], m.oob), m.to
	}
	return n
}

// fakeControl runs f as RawConn.Control would, on no descriptor.
func fakeControl(f func(fd uintptr)) error { f(0); return nil }

func TestErrDrain(t *testing.T) {
	epoch := time.Now().Add(-time.Minute)
	read := time.Now()
	stamp := read.Add(-3 * time.Millisecond)
	late := read.Add(-1500 * time.Millisecond) // a late drain: the stamp still holds
	r1 := netip.MustParseAddr("192.0.2.1")
	peer := netip.MustParseAddr("198.51.100.9")
	mapped := netip.MustParseAddrPort("[::ffff:198.51.100.9]:7373")
	to := netip.MustParseAddrPort("198.51.100.9:7373")
	probe := trace.Probe{Num: 41, TTL: 1}
	guess := trace.Probe{Num: 42, TTL: 1}
	q := &fakeErrQueue{msgs: []fakeErrMsg{
		{nil, errCmsg(2, 3, 3, peer, time.Time{}), mapped},                   // port unreachable, unstamped
		{probeDgram(probe), errCmsg(2, 11, 0, r1, stamp), mapped},            // time exceeded, quoting the probe
		{nil, []byte{1, 2, 3}, mapped},                                       // garbled
		{bytes.Repeat([]byte{9}, 600), errCmsg(2, 11, 0, r1, stamp), mapped}, // a long quote of other traffic: dropped
		{probeDgram(guess), errCmsg(2, 11, 0, r1, stamp), mapped},            // a probe this socket never sent: dropped
		{nil, errCmsg(2, 11, 0, r1, late), mapped},                           // drained 1.5 s late
	}}
	d := newErrDrain(fakeControl, q.recv)
	d.probes.add(to, probe)
	if n, contended := d.drain(read, &epoch); n != 6 || contended {
		t.Fatalf("drained %d messages (contended %v), want 6", n, contended)
	}
	if d.read.Load() != 6 || d.garbled.Load() != 1 || d.forged.Load() != 1 || d.drains.Load() != 1 {
		t.Fatalf("read %d garbled %d forged %d drains %d, want 6, 1, 1, 1", d.read.Load(), d.garbled.Load(), d.forged.Load(), d.drains.Load())
	}
	got := d.numbered.take(nil)
	if len(got) != 1 {
		t.Fatalf("%d answers quoting a probe, want 1: %+v", len(got), got)
	}
	a := got[0]
	if a.To != to || a.Answer.Offender != r1 || a.Answer.Quote != trace.QuoteProbe || a.Answer.Probe != probe {
		t.Errorf("the probe's answer %+v", a)
	}
	if want := stamp.Sub(epoch); a.At < want-time.Millisecond || a.At > want+time.Millisecond {
		t.Errorf("stamped answer at %v, want about %v", a.At, want)
	}
	got = d.bare.take(nil)
	if len(got) != 2 {
		t.Fatalf("%d header-only answers, want 2: %+v", len(got), got)
	}
	if b := got[0]; b.Answer.Offender != peer || b.At != read.Sub(epoch) || b.Answer.Quote != trace.QuoteNone {
		t.Errorf("unstamped answer %+v, want at the read, %v", b, read.Sub(epoch))
	}
	if want := late.Sub(epoch); got[1].At < want-time.Millisecond || got[1].At > want+time.Millisecond {
		t.Errorf("an answer drained 1.5 s late at %v, want its stamp, %v", got[1].At, want)
	}
	if more := append(d.numbered.take(nil), d.bare.take(nil)...); len(more) != 0 {
		t.Fatalf("taken twice: %+v", more)
	}
}

// A queue refilled as fast as it is read: one drain stops at maxDrain, and
// the answers waiting keep the newest answerQueueLen; draining and taking
// allocate nothing.
func TestErrDrainIsBounded(t *testing.T) {
	q := &fakeErrQueue{forever: true, msgs: []fakeErrMsg{{nil, errCmsg(2, 3, 3, netip.MustParseAddr("192.0.2.9"), time.Time{}), addrB}}}
	d := newErrDrain(fakeControl, q.recv)
	for range 3 {
		if n, _ := d.drain(time.Now(), nil); n != maxDrain {
			t.Fatalf("drained %d, want the bound %d", n, maxDrain)
		}
	}
	if got := d.bare.take(nil); len(got) != answerQueueLen || got[0].At != 0 {
		t.Fatalf("%d answers waiting (at %v), want %d, at 0 without an epoch", len(got), got[0].At, answerQueueLen)
	}
	buf := make([]HopAnswer, 0, answerQueueLen)
	if n := testing.AllocsPerRun(20, func() { d.drain(time.Now(), nil); buf = d.bare.take(buf[:0]) }); n != 0 {
		t.Fatalf("a drain allocates %v times", n)
	}
}

// A header-only flood never pushes an answer quoting a probe out of its
// queue.
func TestErrDrainKeepsNumberedAnswers(t *testing.T) {
	r1 := netip.MustParseAddr("192.0.2.1")
	probe := trace.Probe{Num: 7, TTL: 2}
	msgs := []fakeErrMsg{{probeDgram(probe), errCmsg(2, 11, 0, r1, time.Time{}), addrB}}
	for range 3 * answerQueueLen {
		msgs = append(msgs, fakeErrMsg{nil, errCmsg(2, 11, 0, r1, time.Time{}), addrB})
	}
	d := newErrDrain(fakeControl, (&fakeErrQueue{msgs: msgs}).recv)
	d.probes.add(addrB, probe)
	for range 8 {
		d.drain(time.Now(), nil)
	}
	got := append(d.numbered.take(nil), d.bare.take(nil)...)
	if len(got) != 1+answerQueueLen || got[0].Answer.Probe != probe {
		t.Fatalf("%d answers, the first %+v; want the probe's first, then %d", len(got), got[0], answerQueueLen)
	}
}

// The schedules of a drain nothing reported: every errBackstop, and every
// probeDrainEvery while a probe may await its answer.
func TestErrDrainDue(t *testing.T) {
	d := newErrDrain(fakeControl, (&fakeErrQueue{}).recv)
	at := func(dt time.Duration) time.Time { return d.base.Add(dt) }
	d.drain(at(time.Second), nil)
	for _, c := range []struct {
		dt   time.Duration
		want bool
	}{{time.Second + probeDrainEvery, false}, {time.Second + errBackstop - 1, false}, {time.Second + errBackstop, true}} {
		if got := d.due(at(c.dt)); got != c.want {
			t.Errorf("no probe: due at %v: %v, want %v", c.dt, got, c.want)
		}
	}
	d.lastProbe.Store(int64(time.Second))
	d.probing.Store(true)
	for _, c := range []struct {
		dt   time.Duration
		want bool
	}{{time.Second + probeDrainEvery - 1, false}, {time.Second + probeDrainEvery, true}} {
		if got := d.due(at(c.dt)); got != c.want {
			t.Errorf("a probe awaits: due at %v: %v, want %v", c.dt, got, c.want)
		}
	}
	d.drain(at(time.Second+probeAwait), nil)
	if d.due(at(time.Second + probeAwait + probeDrainEvery)) {
		t.Error("due every probeDrainEvery once the probe's wait is over")
	}
}

// FuzzQuoteOf: any quote is read without panicking, and a probe is found
// only in an unsealed control datagram whose first record is that probe.
func FuzzQuoteOf(f *testing.F) {
	f.Add(probeDgram(trace.Probe{Num: 3, TTL: 2}))
	f.Add(probeDgram(trace.Probe{Num: 3, TTL: 2})[:HeaderLen+2])
	f.Add([]byte{0x4c, 0x53})
	f.Fuzz(func(t *testing.T, q []byte) {
		p, kind := quoteOf(q)
		if kind != trace.QuoteProbe {
			return
		}
		h, err := DecodeHeader(q)
		d, derr := trace.DecodeProbe(q[HeaderLen:])
		if err != nil || h.Channel != ChannelControl || h.Flags != 0 || derr != nil || d != p || p.Answer {
			t.Fatalf("% x read as probe %+v", q, p)
		}
	})
}
