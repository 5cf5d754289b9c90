package awsnode

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// A checkpoint as ipamd writes it: two pods, one with an unknown field a
// later ipamd might add.
const good = `{"version":"vpc-cni-ipam/1","allocations":[
 {"networkName":"aws-cni","containerID":"abc","ifName":"eth0","ipv4":"100.64.1.10",
  "allocationTimestamp":1700000000000000000,
  "metadata":{"k8sPodNamespace":"default","k8sPodName":"web-0","interfacesCount":1}},
 {"networkName":"aws-cni","containerID":"def","ifName":"eth0","ipv4":"100.64.2.20","futureField":true,
  "metadata":{"k8sPodNamespace":"kube-system","k8sPodName":"dns"}}]}`

func TestParseGood(t *testing.T) {
	pods, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	want := []Pod{
		{Network: "aws-cni", ContainerID: "abc", IfName: "eth0", IP: netip.MustParseAddr("100.64.1.10"),
			Time: time.Unix(0, 1700000000000000000).UTC(), Namespace: "default", Name: "web-0"},
		{Network: "aws-cni", ContainerID: "def", IfName: "eth0", IP: netip.MustParseAddr("100.64.2.20"),
			Namespace: "kube-system", Name: "dns"},
	}
	if !slices.Equal(pods, want) {
		t.Errorf("got %+v\nwant %+v", pods, want)
	}
	if pods[0].Key() != "abc/eth0" {
		t.Errorf("key %q", pods[0].Key())
	}
}

// A fresh node's checkpoint has no allocations (ipamd writes null or []).
func TestParseEmpty(t *testing.T) {
	for _, in := range []string{`{"version":"vpc-cni-ipam/1","allocations":null}`, `{"version":"vpc-cni-ipam/1","allocations":[]}`} {
		pods, err := Parse([]byte(in))
		if err != nil || len(pods) != 0 {
			t.Errorf("%s: %v %v", in, pods, err)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	alloc := func(fields string) string {
		return `{"version":"vpc-cni-ipam/1","allocations":[` + fields + `]}`
	}
	const a1 = `{"containerID":"abc","ifName":"eth0","ipv4":"100.64.1.10"}`
	cases := []struct {
		name, in string
		is       error
		says     string
	}{
		{"not JSON", `{"version":`, ErrMalformed, "unexpected EOF"},
		{"empty file", ``, ErrMalformed, "EOF"},
		{"an array", `[]`, ErrMalformed, "cannot unmarshal array"},
		{"two objects", good + `{}`, ErrMalformed, "data after"},
		{"no version", `{"allocations":[]}`, ErrMalformed, `no "version"`},
		{"unknown version", `{"version":"vpc-cni-ipam/2","allocations":[]}`, ErrUnknownVersion, `"vpc-cni-ipam/2"`},
		{"empty version", `{"version":"","allocations":[]}`, ErrUnknownVersion, `""`},
		{"wrong type", alloc(`{"containerID":5}`), ErrMalformed, "cannot unmarshal number"},
		{"no container", alloc(`{"ifName":"eth0","ipv4":"100.64.1.10"}`), ErrMalformed, "no containerID"},
		{"no ifName", alloc(`{"containerID":"abc","ipv4":"100.64.1.10"}`), ErrMalformed, "no ifName"},
		{"slash in ID", alloc(`{"containerID":"a/b","ifName":"eth0","ipv4":"100.64.1.10"}`), ErrMalformed, "'/'"},
		{"no address", alloc(`{"containerID":"abc","ifName":"eth0"}`), ErrMalformed, "no ipv4"},
		{"IPv6 not global unicast", alloc(`{"containerID":"abc","ifName":"eth0","ipv6":"fe80::1"}`), ErrMalformed, "not a global unicast IPv6"},
		{"IPv6 not an address", alloc(`{"containerID":"abc","ifName":"eth0","ipv6":"10.0.0.1"}`), ErrMalformed, "not a global unicast IPv6"},
		{"no address", alloc(`{"containerID":"abc","ifName":"eth0"}`), ErrMalformed, "no ipv4 or ipv6 address"},
		{"bad address", alloc(`{"containerID":"abc","ifName":"eth0","ipv4":"100.64.1"}`), ErrMalformed, `"100.64.1"`},
		{"v6 in ipv4", alloc(`{"containerID":"abc","ifName":"eth0","ipv4":"::ffff:100.64.1.1"}`), ErrMalformed, "not a unicast IPv4"},
		{"unspecified", alloc(`{"containerID":"abc","ifName":"eth0","ipv4":"0.0.0.0"}`), ErrMalformed, "not a unicast IPv4"},
		{"negative time", alloc(`{"containerID":"abc","ifName":"eth0","ipv4":"100.64.1.10","allocationTimestamp":-1}`), ErrMalformed, "negative"},
		{"duplicate address", alloc(a1 + `,{"containerID":"def","ifName":"eth0","ipv4":"100.64.1.10"}`), ErrMalformed,
			"100.64.1.10 is allocated twice, to abc/eth0 and def/eth0"},
		{"duplicate interface", alloc(a1 + `,{"containerID":"abc","ifName":"eth0","ipv4":"100.64.1.11"}`), ErrMalformed,
			"abc/eth0 is allocated twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pods, err := Parse([]byte(c.in))
			if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("Parse = %v, %v; want %v saying %q", pods, err, c.is, c.says)
			}
			if pods != nil {
				t.Errorf("a refused checkpoint returned pods %v", pods)
			}
		})
	}
}

func TestReadFileNamesThePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ipam.json")
	if _, err := ReadFile(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if err := os.WriteFile(path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(path); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), path) {
		t.Errorf("malformed file: %v", err)
	}
}

func TestNICFiles(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"ipam.json", "ipam-nic-1.json", "ipam-nic-2.json", "other.json"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := NICFiles(filepath.Join(dir, "ipam.json"))
	want := []string{filepath.Join(dir, "ipam-nic-1.json"), filepath.Join(dir, "ipam-nic-2.json")}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("NICFiles = %v, %v; want %v", got, err, want)
	}
}

// FuzzParse: any input is either refused or gives pods that keep the
// parser's promises (IPv4, a key, no address or key twice).
func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte(`{"version":"vpc-cni-ipam/1","allocations":[{"containerID":"a","ifName":"e","ipv4":"1.2.3.4"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		pods, err := Parse(data)
		if err != nil {
			return
		}
		ips, keys := map[netip.Addr]bool{}, map[string]bool{}
		for _, p := range pods {
			if !p.IP.Is4() || p.ContainerID == "" || p.IfName == "" || ips[p.IP] || keys[p.Key()] {
				t.Fatalf("accepted a bad pod %+v from %q", p, data)
			}
			ips[p.IP], keys[p.Key()] = true, true
		}
	})
}

// The reference's IPv6 mode writes "ipv6" instead of "ipv4": read, the
// address kept as the pod's IPv6, a repeated /128 refused.
func TestParseIPv6Rows(t *testing.T) {
	pods, err := Parse([]byte(`{"version":"vpc-cni-ipam/1","allocations":[` +
		`{"networkName":"aws-cni","containerID":"abc","ifName":"eth0","ipv6":"2001:db8:0:1:1::5","allocationTimestamp":1700000000000000000,` +
		`"metadata":{"k8sPodNamespace":"ns","k8sPodName":"p"}}]}`))
	if err != nil || len(pods) != 1 || pods[0].IP.IsValid() || pods[0].IPv6.String() != "2001:db8:0:1:1::5" || pods[0].Name != "p" {
		t.Fatalf("Parse = %+v, %v", pods, err)
	}
	_, err = Parse([]byte(`{"version":"vpc-cni-ipam/1","allocations":[` +
		`{"containerID":"a","ifName":"eth0","ipv6":"2001:db8::5"},{"containerID":"b","ifName":"eth0","ipv6":"2001:db8::5"}]}`))
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "allocated twice") {
		t.Fatalf("a /128 twice: %v", err)
	}
}
