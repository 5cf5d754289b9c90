package logfile

import (
	"fmt"
	"io"
	"log/slog"
)

// The log line encodings of vpcctl's stderr and the plugin's log file.
const (
	FormatText = "text" // slog's key=value lines
	FormatJSON = "json" // one slog JSON object per line
)

// CheckFormat refuses a format NewHandler does not write.
func CheckFormat(format string) error {
	if format != FormatText && format != FormatJSON {
		return fmt.Errorf("%q: must be %s or %s", format, FormatText, FormatJSON)
	}
	return nil
}

// NewHandler writes records of level or above to w in format (text
// unless json).
func NewHandler(w io.Writer, format string, level slog.Leveler) slog.Handler {
	opts := &slog.HandlerOptions{Level: level}
	if format == FormatJSON {
		return slog.NewJSONHandler(w, opts)
	}
	return slog.NewTextHandler(w, opts)
}
