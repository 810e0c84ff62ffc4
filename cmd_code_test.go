package main

import (
	"bytes"
	"net/netip"
	"regexp"
	"strings"
	"testing"
)

// A session code is 16 letters of the 32-letter alphabet in four groups;
// every byte value maps into it, and the same random bytes give the same
// code.
func TestNewCode(t *testing.T) {
	var seed [codeLetters]byte
	for i := range seed {
		seed[i] = byte(i * 37)
	}
	a, err := newCode(bytes.NewReader(seed[:]))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := newCode(bytes.NewReader(seed[:]))
	if a != b {
		t.Fatalf("the same bytes gave %q and %q", a, b)
	}
	if !regexp.MustCompile(`^[2-9A-HJ-NP-Z]{4}(-[2-9A-HJ-NP-Z]{4}){3}$`).MatchString(a) {
		t.Fatalf("code %q", a)
	}
	if len(codeAlphabet) != 32 || strings.ContainsAny(codeAlphabet, "01IO") {
		t.Fatalf("alphabet %q: want 32 letters without 0, 1, I, O", codeAlphabet)
	}
	for v := range 256 {
		c, _ := newCode(bytes.NewReader(bytes.Repeat([]byte{byte(v)}, codeLetters)))
		if c[0] != codeAlphabet[v%32] {
			t.Fatalf("byte %d gave letter %q", v, c[0])
		}
	}
	if _, err := newCode(bytes.NewReader(seed[:3])); err == nil {
		t.Fatal("a short random source gave a code")
	}
}

// The join line names the address others can use: a specific listen
// address as it is; for a wildcard, the first non-loopback IPv4 address
// (then IPv6), with the bound port.
func TestShareAddr(t *testing.T) {
	cases := []struct {
		ifaces []string
		bound  string
		want   string
	}{
		{[]string{"127.0.0.1/8", "fe80::1/64", "192.168.1.20/24"}, "[::]:7373", "192.168.1.20:7373"},
		{[]string{"127.0.0.1/8", "2001:db8::5/64", "10.0.0.7/8"}, "0.0.0.0:7373", "10.0.0.7:7373"},
		{[]string{"127.0.0.1/8", "2001:db8::5/64"}, "[::]:9000", "[2001:db8::5]:9000"},
		{[]string{"127.0.0.1/8"}, "0.0.0.0:7373", "127.0.0.1:7373"},
		{[]string{"192.168.1.20/24"}, "127.0.0.1:4000", "127.0.0.1:4000"},
	}
	for _, c := range cases {
		injectInterfaces(t, c.ifaces...)
		if got := shareAddr(netip.MustParseAddrPort(c.bound)); got.String() != c.want {
			t.Errorf("%v bound %s: %s, want %s", c.ifaces, c.bound, got, c.want)
		}
	}
	injectInterfaces(t, "192.168.1.20/24")
	bound := netip.MustParseAddrPort("[::]:7373")
	if got := joinLines(bound, "7K3M-QX9P-4RTA-WZ2H", true); len(got) != 1 || got[0] != "lagscope join 192.168.1.20:7373 --key 7K3M-QX9P-4RTA-WZ2H" {
		t.Errorf("keyed: %q", got)
	}
	if got := joinLines(bound, "", false); len(got) != 2 || got[0] != "lagscope join 192.168.1.20:7373" || !strings.Contains(got[1], "anyone") {
		t.Errorf("open: %q", got)
	}
}

// The default name drops a Windows login's machine or domain part, on any
// platform (the same code runs on Windows).
func TestDefaultNameFromLogin(t *testing.T) {
	for _, c := range []struct{ login, env, want string }{
		{`DESKTOP-4F2K9Q1\Ada`, "", "Ada"},
		{`CORP\bob`, "ignored", "bob"},
		{"carol", "", "carol"},
		{"", "dave", "dave"},
		{`DESKTOP-4F2K9Q1\`, "erin", "erin"},
		{"", "", "player"},
	} {
		if got := nameFromLogin(c.login, c.env); got != c.want {
			t.Errorf("login %q, $USER %q: %q, want %q", c.login, c.env, got, c.want)
		}
	}
}

// One rule for names: config --name refuses what --name and the host
// refuse, and the error says how many characters of that name would fit.
func TestNameRuleIsOne(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	long := strings.Repeat("🎮", 10)
	for _, args := range [][]string{{"config", "--name", long}, {"demo", "--name", long, "--duration", "1s"}} {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), "40 bytes, longer than the 32 a name may take: its first 8 characters would fit") {
			t.Errorf("%v: exit %d, %q", args[0], code, errb.String())
		}
		if out.Len() != 0 {
			t.Errorf("%v wrote %q before refusing", args[0], out.String())
		}
	}
}
