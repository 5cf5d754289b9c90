package settings

import (
	"os"
	"testing"

	"vpc-cni/internal/testsupport/testenv"
)

// TestMain says how many root-only tests an unprivileged run skipped.
func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }
