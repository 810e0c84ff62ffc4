package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
)

// echoChildEnv makes the test binary a bare UDP echo server instead of
// running tests (TestMain): the reference a veth test measures lagscope's
// turnaround against, in a process of its own as lagscope's peer is
// (cmd_veth_test.go). The value is the address to listen on.
const echoChildEnv = "LAGSCOPE_TEST_ECHO"

// serveEcho listens on addr, prints the address it got on stdout, and
// answers every datagram from a plain blocking read until stdin closes.
func serveEcho(addr string) int {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	c, err := net.ListenUDP("udp", ua)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(c.LocalAddr())
	go func() {
		_, _ = io.Copy(io.Discard, bufio.NewReader(os.Stdin))
		c.Close()
	}()
	var buf [2048]byte
	for {
		n, from, err := c.ReadFromUDPAddrPort(buf[:])
		if err != nil {
			return 0
		}
		_, _ = c.WriteToUDPAddrPort(buf[:n], from)
	}
}
