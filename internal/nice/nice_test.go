package nice

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Start nices the child, once it runs, and not the thread that forked it.
func TestStartNicesTheChildNotTheParent(t *testing.T) {
	runtime.LockOSThread() // the forking thread stays this goroutine's, to inspect
	defer runtime.UnlockOSThread()
	before, err := Of(syscall.Gettid())
	if err != nil {
		t.Fatal(err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	// The shell waits for a line, so it reads its own priority only after
	// Start has returned (and reniced it).
	pid, err := Start("/bin/sh", []string{"sh", "-c", "read x; cat /proc/$$/stat"}, os.Environ(),
		[]uintptr{inR.Fd(), outW.Fd(), outW.Fd()}, 10)
	if pid == 0 || err != nil {
		t.Fatalf("Start: pid %d, %v", pid, err)
	}
	inR.Close()
	outW.Close()
	if _, err := inW.WriteString("go\n"); err != nil {
		t.Fatal(err)
	}
	inW.Close()
	stat, err := bufio.NewReader(outR).ReadString('\n')
	var ws syscall.WaitStatus
	if _, werr := syscall.Wait4(pid, &ws, 0, nil); werr != nil || !ws.Exited() || ws.ExitStatus() != 0 {
		t.Fatalf("child: %v, status %v; read %q (%v)", werr, ws, stat, err)
	}
	// /proc/PID/stat: field 19 is nice; the command name (field 2) has no spaces here.
	if f := strings.Fields(stat); len(f) < 19 || f[18] != "10" {
		t.Fatalf("the child's nice is not 10: %q", stat)
	}
	if after, err := Of(syscall.Gettid()); err != nil || after != before {
		t.Fatalf("the forking thread's nice went from %d to %d (%v)", before, after, err)
	}
}

// Start fails, starting nothing, when the program cannot be run.
func TestStartFailsOnAMissingProgram(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	fd := null.Fd()
	pid, err := Start("/nonexistent/vpcctl", []string{"vpcctl"}, nil, []uintptr{fd, fd, fd}, 10)
	if pid != 0 || err == nil {
		t.Fatalf("pid %d, err %v", pid, err)
	}
}

// helperEnv makes the test binary the process that nices itself.
const helperEnv = "NICE_TEST_SELF"

// Self nices every thread of the process, those running before the call
// and those made after it; run in a child process, which it nices for good.
func TestSelfNicesEveryThread(t *testing.T) {
	if os.Getenv(helperEnv) == "1" {
		selfHelper()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSelfNicesEveryThread$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
}

// selfHelper holds threads before and after Self and exits non-zero unless
// every thread of the process ends up at nice 7.
func selfHelper() {
	hold := make(chan struct{})
	var started sync.WaitGroup
	spawn := func(n int) {
		for range n {
			started.Add(1)
			go func() {
				runtime.LockOSThread() // a thread of its own, kept until hold closes
				started.Done()
				<-hold
			}()
		}
		started.Wait()
	}
	spawn(3)
	if err := Self(7); err != nil {
		fail("Self: %v", err)
	}
	spawn(3)
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		fail("%v", err)
	}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		if n, err := Of(tid); err != nil || n != 7 {
			fail("thread %d: nice %d (%v), want 7 (of %d threads)", tid, n, err, len(tasks))
		}
	}
	close(hold)
	os.Exit(0)
}

func fail(format string, args ...any) {
	os.Stderr.WriteString("nice helper: " + strings.TrimSpace(fmt.Sprintf(format, args...)) + "\n")
	os.Exit(1)
}
