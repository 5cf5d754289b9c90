package clusterhost

import (
	"regexp"
	"strings"
)

// errorLine is a line logged at error or fatal severity: containerd's
// logrus text (level=error), klog's (E0102 15:04:05...), or a Go program's
// last words ("Error: ...", "panic: ...").
var errorLine = regexp.MustCompile(`level=(error|fatal)\b|^[EF]\d{4} \d\d:\d\d:\d\d|^(Error|panic|fatal error): `)

// FirstError is the first line of log at error severity, shortened to max
// bytes; "" when there is none.
func FirstError(log string, max int) string {
	for _, line := range strings.Split(log, "\n") {
		if errorLine.MatchString(line) {
			if len(line) > max {
				line = line[:max] + "..."
			}
			return line
		}
	}
	return ""
}
