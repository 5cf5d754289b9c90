package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	goruntime "runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"
	"golang.org/x/sys/unix"
)

// A stop holds the shipped plugin at one point of its ADD, deterministically
// and with no hook in the binary: the plugin runs under ptrace(2), and the
// thread whose system call matches the point is held at the call's entry
// until the test says go on or kill. Go's netns.Do locks its thread before
// setns(2), so "the first setns" is where the pod's wiring starts.

// point matches a system call entry of the traced plugin: nr is the call
// (orig_rax), path its first path argument where it has one. It keeps its
// own state across calls (e.g. "after the first setns").
type point func(nr uint64, path func(argReg uint64) string, regs *syscall.PtraceRegs) bool

// atSetns is the entry of the plugin's first setns(2): its take is done and
// its wiring not begun.
func atSetns() point {
	return func(nr uint64, _ func(uint64) string, _ *syscall.PtraceRegs) bool { return nr == unix.SYS_SETNS }
}

// statOf is an lstat (newfstatat) or open of a file whose name ends in base.
func statOf(base string) point {
	return func(nr uint64, path func(uint64) string, regs *syscall.PtraceRegs) bool {
		return (nr == unix.SYS_NEWFSTATAT || nr == unix.SYS_OPENAT) && strings.HasSuffix(path(regs.Rsi), "/"+base)
	}
}

// writeToStdout is the plugin printing its result.
func writeToStdout() point {
	return func(nr uint64, _ func(uint64) string, regs *syscall.PtraceRegs) bool {
		return nr == unix.SYS_WRITE && regs.Rdi == 1
	}
}

// stopExec is libcni's invoke.Exec that runs the next ADD after arm under
// ptrace and holds it at each of the points in turn: held receives once the
// plugin is held at one, and the plugin goes on when goOn receives true or
// is SIGKILLed on false.
type stopExec struct {
	invoke.DefaultExec
	at    []point
	next  int // the point to hold at next
	armed atomic.Bool
	held  chan struct{}
	goOn  chan bool
}

func newStopExec(at ...point) *stopExec {
	return &stopExec{DefaultExec: invoke.DefaultExec{RawExec: &invoke.RawExec{Stderr: os.Stderr}},
		at: at, held: make(chan struct{}, 1), goOn: make(chan bool, 1)}
}

// arm makes the next ADD stop at the points.
func (e *stopExec) arm() { e.next = 0; e.armed.Store(true) }

// ExecPlugin traces the armed ADD; other runs go as libcni runs them.
func (e *stopExec) ExecPlugin(ctx context.Context, path string, stdin []byte, env []string) ([]byte, error) {
	if !slices.Contains(env, "CNI_COMMAND=ADD") || !e.armed.CompareAndSwap(true, false) {
		return e.RawExec.ExecPlugin(ctx, path, stdin, env)
	}
	// Every ptrace request must come from the thread that started the
	// tracee; it is the caller's, locked in the node netns.
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	out, code, err := e.trace(path, stdin, env)
	if err != nil {
		return nil, err
	}
	if code != 0 {
		var perr types.Error
		if json.Unmarshal(out, &perr) == nil && perr.Code != 0 {
			return nil, &perr
		}
		return nil, fmt.Errorf("plugin exited %d: %s", code, out)
	}
	return out, nil
}

// trace starts the plugin stopped at its exec, with its stdout in a file,
// and runs it to its end under the tracer loop. code is its exit status
// (-1 when a signal killed it).
func (e *stopExec) trace(path string, stdin []byte, env []string) (out []byte, code int, err error) {
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, 0, err
	}
	defer stdinR.Close()
	_, _ = stdinW.Write(stdin) // a conf fits the pipe's buffer
	stdinW.Close()
	stdout, err := os.CreateTemp("", "plugin-stdout")
	if err != nil {
		return nil, 0, err
	}
	defer os.Remove(stdout.Name())
	defer stdout.Close()
	attr := &syscall.ProcAttr{Env: env, Files: []uintptr{stdinR.Fd(), stdout.Fd(), os.Stderr.Fd()},
		Sys: &syscall.SysProcAttr{Ptrace: true, Setpgid: true}}
	pid, err := syscall.ForkExec(path, []string{path}, attr)
	if err != nil {
		return nil, 0, err
	}
	code, err = e.loop(pid)
	if err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		return nil, 0, err
	}
	out, err = os.ReadFile(stdout.Name())
	return out, code, err
}

// loop steps every thread of the tracee from one system call to the next
// until it holds one at the point; after the hold it lets them run. It
// returns the thread group's exit status. The tracee's own group is waited
// for (it was started with Setpgid), never another child of the test.
func (e *stopExec) loop(pid int) (int, error) {
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, syscall.WALL, nil); err != nil || !ws.Stopped() {
		return 0, fmt.Errorf("the plugin did not stop at its exec: %v %v", err, ws)
	}
	opts := syscall.PTRACE_O_TRACECLONE | syscall.PTRACE_O_TRACESYSGOOD | unix.PTRACE_O_EXITKILL
	if err := syscall.PtraceSetOptions(pid, opts); err != nil {
		return 0, err
	}
	t := &tracee{pid: pid, stepping: true, known: map[int]bool{pid: true}}
	t.resume(pid, 0)
	for {
		wpid, err := syscall.Wait4(-pid, &ws, syscall.WALL, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if ws.Exited() || ws.Signaled() {
			if wpid == pid {
				return exitCode(ws), nil
			}
			continue
		}
		if err := e.stopped(t, wpid, ws); err != nil {
			return 0, err
		}
	}
}

func exitCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return -1
	}
	return ws.ExitStatus()
}

// tracee is the traced thread group: whether its threads still stop at
// every system call, and the threads seen so far.
type tracee struct {
	pid      int
	stepping bool
	known    map[int]bool
}

func (t *tracee) resume(tid, sig int) {
	if t.stepping {
		_ = syscall.PtraceSyscall(tid, sig)
	} else {
		_ = syscall.PtraceCont(tid, sig)
	}
}

// stopped handles one ptrace stop of thread tid.
func (e *stopExec) stopped(t *tracee, tid int, ws syscall.WaitStatus) error {
	sig := ws.StopSignal()
	switch {
	case !ws.Stopped():
		return nil
	case !t.known[tid]:
		t.known[tid] = true // a new thread's first stop (its SIGSTOP)
		t.resume(tid, 0)
	case sig == syscall.SIGTRAP && ws.TrapCause() > 0: // a clone event
		t.resume(tid, 0)
	case sig == syscall.SIGTRAP|0x80:
		return e.atCall(t, tid)
	case sig == syscall.SIGTRAP || sig == syscall.SIGSTOP:
		t.resume(tid, 0)
	default:
		t.resume(tid, int(sig)) // the plugin's own signal (the Go runtime's SIGURG)
	}
	return nil
}

// enosys is rax at a system call's entry on amd64 (-ENOSYS).
const enosys = ^uint64(syscall.ENOSYS) + 1

// atCall is a system call stop: at the point's entry the thread is held
// until the test says what to do.
func (e *stopExec) atCall(t *tracee, tid int) error {
	var regs syscall.PtraceRegs
	if err := syscall.PtraceGetRegs(tid, &regs); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			// The thread ended between its stop and this read (the
			// runtime ends a thread whose goroutine kept it locked, as
			// a namespace switch does); the loop reaps it.
			return nil
		}
		return err
	}
	path := func(addr uint64) string { return peekString(tid, uintptr(addr)) }
	if !t.stepping || regs.Rax != enosys || !e.at[e.next](regs.Orig_rax, path, &regs) {
		t.resume(tid, 0)
		return nil
	}
	e.held <- struct{}{}
	e.next++
	t.stepping = e.next < len(e.at)
	if !<-e.goOn {
		return syscall.Kill(t.pid, syscall.SIGKILL) // the loop reaps the threads
	}
	t.resume(tid, 0)
	return nil
}

// peekString reads a NUL-terminated path from the tracee's memory.
func peekString(tid int, addr uintptr) string {
	var out []byte
	buf := make([]byte, 64)
	for len(out) < 4096 {
		n, err := syscall.PtracePeekData(tid, addr+uintptr(len(out)), buf)
		if n <= 0 || err != nil {
			break
		}
		if i := bytes.IndexByte(buf[:n], 0); i >= 0 {
			return string(append(out, buf[:i]...))
		}
		out = append(out, buf[:n]...)
	}
	return string(out)
}
