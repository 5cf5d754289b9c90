// Package scripts holds the make targets' shell scripts (the demo, the
// prerequisite checks); its tests run them as make does. move-packages.sh
// moves the simulators to sim/ and the test support to
// internal/testsupport/, rewriting the imports; it is safe to run again
// after merging a branch that still uses the old paths.
package scripts
