package commands

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"vpc-cni/store"
)

// lockWaitNotice says on stderr, at once, that a command waits for a
// reconcile lock file: which, held by whom since when, and until when. On
// a terminal it shows the wait going on; in a pipe nothing more.
func lockWaitNotice(c *cli.Context) func(store.LockWait) func(bool) {
	return func(w store.LockWait) func(bool) {
		stderrLine(c, slog.LevelWarn, describeLockWait(w, time.Now()))
		start := time.Now()
		stop := func() {}
		if terminal(c.App.ErrWriter) && !jsonLogs(c) {
			stop = showWaiting(c.App.ErrWriter, start, w.Deadline)
		}
		return func(got bool) {
			stop()
			if got {
				slog.Debug("got the lock", "path", w.Path, "after", time.Since(start).Round(100*time.Millisecond))
			}
		}
	}
}

// describeLockWait is the notice's words.
func describeLockWait(w store.LockWait, now time.Time) string {
	holder := "another process (it did not write who it is)"
	if w.Holder != "" {
		holder = w.Holder
	}
	until := "no deadline"
	if !w.Deadline.IsZero() {
		until = fmt.Sprintf("giving up at %s (in %s)", w.Deadline.UTC().Format(time.RFC3339), w.Deadline.Sub(now).Round(time.Second))
	}
	return fmt.Sprintf("waiting for the reconcile lock %s, held by %s; %s", w.Path, holder, until)
}

// showWaiting rewrites one line with the time waited every second until
// stop, which erases it.
func showWaiting(out io.Writer, start, deadline time.Time) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				fmt.Fprint(out, "\r\033[K")
				return
			case now := <-tick.C:
				line := fmt.Sprintf("\r\033[Kwaiting for the reconcile lock: %s", now.Sub(start).Round(time.Second))
				if !deadline.IsZero() {
					line += fmt.Sprintf(" of %s", deadline.Sub(start).Round(time.Second))
				}
				fmt.Fprint(out, line)
			}
		}
	}()
	return func() { close(done); <-finished }
}

// terminal says whether w is a terminal (progress is for people, not pipes).
func terminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
