package commands

import (
	"log/slog"
	"time"

	"github.com/urfave/cli/v2"

	"vpc-cni/internal/printers"
	"vpc-cni/store"
)

// lockWaitNotice says on stderr, at once, that a command waits for a
// reconcile lock file: which, held by whom since when, and until when. On
// a terminal it shows the wait going on; in a pipe nothing more.
func lockWaitNotice(c *cli.Context) func(store.LockWait) func(bool) {
	return func(w store.LockWait) func(bool) {
		stderrLine(c, slog.LevelWarn, w.Describe(time.Now()))
		start := time.Now()
		stop := func() {}
		if printers.Terminal(c.App.ErrWriter) && !jsonLogs(c) {
			stop = printers.Waiting(c.App.ErrWriter, "waiting for the reconcile lock", start, w.Deadline)
		}
		return func(got bool) {
			stop()
			if got {
				slog.Debug("got the lock", "path", w.Path, "after", time.Since(start).Round(100*time.Millisecond))
			}
		}
	}
}
