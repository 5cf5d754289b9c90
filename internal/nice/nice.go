// Package nice lowers the CPU priority of background work. Linux keeps the
// nice value per thread, and a new thread takes its creator's: a process is
// niced whole only when every thread it has is, before it makes more.
package nice

import (
	"errors"
	"os"
	"strconv"
	"syscall"
)

// Start starts path with argv and env in a session of its own (so it
// outlives its parent's), with files as its stdin, stdout and stderr, and
// then sets its nice value to n. The child runs at its parent's priority
// until it has exec'd: the parent waits for that (vfork), and a child niced
// before it would hand the parent's wait to the scheduler's mercy on a busy
// node. Niced right after, the child's runtime is still starting on that
// one thread, so the threads it makes are niced as well; a child that must
// be sure calls Self.
func Start(path string, argv, env []string, files []uintptr, n int) (pid int, err error) {
	pid, err = syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: env, Files: files,
		Sys: &syscall.SysProcAttr{Setsid: true}})
	if err != nil {
		return 0, err
	}
	return pid, syscall.Setpriority(syscall.PRIO_PROCESS, pid, n)
}

// Self sets the nice value of every thread of the calling process to n. A
// thread made meanwhile by one not yet reniced is caught by another look.
func Self(n int) error {
	for range 3 {
		changed, err := reniceTasks(n)
		if err != nil || !changed {
			return err
		}
	}
	return nil
}

// reniceTasks sets n on each thread whose nice value differs; changed says
// whether there was one.
func reniceTasks(n int) (changed bool, err error) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return false, err
	}
	var errs []error
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if cur, err := Of(tid); err == nil && cur == n {
			continue
		}
		changed = true
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, n); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, err) // ESRCH: the thread ended meanwhile
		}
	}
	return changed, errors.Join(errs...)
}

// Of is the nice value of thread (or process) id; the raw getpriority
// returns 20 - nice.
func Of(id int) (int, error) {
	p, err := syscall.Getpriority(syscall.PRIO_PROCESS, id)
	return 20 - p, err
}
