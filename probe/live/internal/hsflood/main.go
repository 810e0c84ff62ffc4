// Command hsflood throws spoofed-looking Hellos at a lagscope host on
// loopback, to measure the handshake budget by hand:
// it sends RATE Hellos a second for DURATION from SOURCES sockets bound to
// different loopback addresses (127.0.1.x: Linux answers the whole 127/8),
// each Hello padded to the Challenge's size so the host would answer it,
// and counts the replies that come back to those sockets.
//
//	go run ./probe/live/internal/hsflood -host 127.0.0.1:7373 -rate 50000 -for 5s
//
// It is a measuring tool, not a test: loopback only, bounded in time.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lagscope/lagscope/netcore"
)

func main() {
	host := flag.String("host", "127.0.0.1:7373", "the host to flood (loopback only)")
	rate := flag.Int("rate", 50000, "Hellos per second")
	dur := flag.Duration("for", 5*time.Second, "how long")
	sources := flag.Int("sources", 250, "source addresses (127.0.1.1 … )")
	flag.Parse()
	to, err := netip.ParseAddrPort(*host)
	if err != nil || !to.Addr().IsLoopback() || *sources < 1 || *sources > 250 || *dur > time.Minute {
		fmt.Fprintln(os.Stderr, "hsflood: want a loopback -host, 1..250 -sources, -for at most 1m")
		os.Exit(2)
	}
	var conns []*net.UDPConn
	for i := range *sources {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 1, byte(i+1))})
		if err != nil {
			fmt.Fprintln(os.Stderr, "hsflood:", err)
			os.Exit(1)
		}
		conns = append(conns, c)
	}
	var replies, replyBytes atomic.Int64
	for _, c := range conns {
		go func() {
			b := make([]byte, 2048)
			for {
				n, _, err := c.ReadFromUDP(b)
				if err != nil {
					return
				}
				replies.Add(1)
				replyBytes.Add(int64(n))
			}
		}()
	}
	dst := net.UDPAddrFromAddrPort(to)
	start := time.Now()
	sent, errs := 0, 0
	const batch = 100 // Hellos per pacing step
	every := time.Second * batch / time.Duration(*rate)
	var d []byte
	for i := 0; time.Since(start) < *dur; i++ {
		for k := range batch {
			n := i*batch + k
			d = d[:0]
			d = append(d, make([]byte, netcore.HeaderLen)...)
			netcore.PutHeader(d, netcore.Header{Sender: netcore.PeerUnassigned, Channel: netcore.ChannelControl})
			d, _ = netcore.AppendHello(d, netcore.Hello{Nonce: uint64(n), Role: netcore.RolePlayer,
				Name: "x" + strings.Repeat("\x00", netcore.MaxNameLen-1)})
			if _, err := conns[n%len(conns)].WriteToUDP(d, dst); err != nil {
				errs++
			}
			sent++
		}
		if ahead := time.Until(start.Add(time.Duration(i+1) * every)); ahead > 0 {
			time.Sleep(ahead)
		}
	}
	took := time.Since(start)
	time.Sleep(500 * time.Millisecond) // the last replies
	for _, c := range conns {
		c.Close()
	}
	fmt.Printf("sent %d Hellos in %v (%.0f/s, %d send errors) from %d addresses; %d replies, %d bytes\n",
		sent, took.Round(time.Millisecond), float64(sent)/took.Seconds(), errs, len(conns), replies.Load(), replyBytes.Load())
}
