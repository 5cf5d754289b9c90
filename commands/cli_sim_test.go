package commands

import (
	"bufio"
	"os/exec"
	"strings"
	"testing"
)

// `vpcctl sim serve` as its first example runs it (no --link-netns) says
// that its ENIs get no link, so a pass's failed host setup and doctor's
// exit 1 are not taken for faults of the node; its help shows the flag.
func TestSimServeWithoutLinkNetnsSaysItsENIsHaveNoLink(t *testing.T) {
	cmd := exec.Command(vpcctl, "sim", "serve", "--listen", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(stderr)
	var said []string
	for len(said) < 2 && sc.Scan() { // the serving line, then the note
		said = append(said, sc.Text())
	}
	if len(said) < 2 || !strings.Contains(said[1], "no --link-netns") || !strings.Contains(said[1], "no link with this MAC yet") {
		t.Fatalf("sim serve said %q", said)
	}
	vpc(t, nil, "sim", "serve", "--help").want(t, 0, "--link-netns /run/netns/node1", "ip netns exec node1 vpcctl",
		// the emulator listens on the loopback of the namespace it starts in
		"ip netns exec node1 vpcctl sim serve --link-netns")
}
