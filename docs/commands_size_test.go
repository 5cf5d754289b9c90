package docs

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// commandsLimit is the house's limit on commands/ (development.md,
// Conventions): its non-test files, every line counted as `wc -l` counts it.
const commandsLimit = 2200

// commands/ is flags, options and rendering: what grows past the limit is a
// feature that belongs in its own package (the shape of podgc.Run).
func TestCommandsStaysFlagsAndPrinting(t *testing.T) {
	files, err := filepath.Glob("../commands/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("commands/*.go: %v", err)
	}
	lines := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines += bytes.Count(b, []byte("\n"))
	}
	if lines > commandsLimit {
		t.Errorf("commands/ has %d non-test lines, over the limit of %d: move the logic that grew there to its feature package", lines, commandsLimit)
	}
	t.Logf("commands/: %d non-test lines of %d", lines, commandsLimit)
}
