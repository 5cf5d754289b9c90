//go:build cluster

package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one process the cluster started: its own process group, its
// output in a log file under the cluster's dir.
type proc struct {
	name  string
	cmd   *exec.Cmd
	done  chan struct{}
	log   string
	mark  int64  // firstError reads the log from here,
	since string // which is when this happened
}

// procs are stopped in reverse start order.
type procs struct {
	mu   sync.Mutex
	list []*proc
	dir  string
}

// start runs argv with output to <dir>/logs/<name>.log; with ns (a holder's
// pid) it runs inside that holder's namespaces (nsenter: net, and mount when mnt).
func (ps *procs) start(name string, holder int, mnt bool, env []string, argv ...string) (*proc, error) {
	if holder > 0 {
		pre := []string{"nsenter", "--target", strconv.Itoa(holder), "--net"}
		if mnt {
			pre = append(pre, "--mount")
		}
		argv = append(append(pre, "--"), argv...)
	}
	logPath := filepath.Join(ps.dir, "logs", name+".log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), log: logPath, since: "it started"}
	if fi, err := f.Stat(); err == nil {
		p.mark = fi.Size() // a dir used before holds an earlier run's lines
	}
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }()
	ps.mu.Lock()
	ps.list = append(ps.list, p)
	ps.mu.Unlock()
	ps.writePids()
	return p, nil
}

// writePids records every pid, so `down` can end them if `up` died.
func (ps *procs) writePids() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var b strings.Builder
	for _, p := range ps.list {
		fmt.Fprintf(&b, "%d %s\n", p.cmd.Process.Pid, p.name)
	}
	_ = os.WriteFile(filepath.Join(ps.dir, "pids"), []byte(b.String()), 0o644)
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

func (ps *procs) stopAll() {
	ps.mu.Lock()
	list := append([]*proc(nil), ps.list...)
	ps.mu.Unlock()
	for i := len(list) - 1; i >= 0; i-- {
		list[i].stop(10 * time.Second)
	}
}

// tail is the end of a process's log, for errors.
func (p *proc) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// waitFor polls cond until it holds, the process exits, or timeout.
func waitFor(what string, p *proc, timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if p != nil && p.exited() {
			return fmt.Errorf("%s: %s exited:\n%s", what, p.name, p.tail())
		}
		if time.Now().After(deadline) {
			if p != nil {
				return fmt.Errorf("%s: not in %s; %s", what, timeout, p.firstError())
			}
			return errors.New(what + ": timed out")
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}

// holder is a process that keeps namespaces alive: `unshare` runs a shell in
// new ones, which runs setup, says "ready" and sleeps until killed.
type holder struct {
	pid  int
	cmd  *exec.Cmd
	name string
}

func newHolder(name string, flags []string, setup string) (*holder, error) {
	args := append(flags, "--", "/bin/sh", "-ec", setup+"\necho ready\nexec sleep infinity")
	cmd := exec.Command("unshare", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("namespace %s: %s %s", name, line, errb.String())
	}
	go func() { _ = cmd.Wait() }()
	return &holder{pid: cmd.Process.Pid, cmd: cmd, name: name}, nil
}

func (h *holder) netns() string { return fmt.Sprintf("/proc/%d/ns/net", h.pid) }

func (h *holder) kill() { _ = syscall.Kill(h.pid, syscall.SIGKILL) }
