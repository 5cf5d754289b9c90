// Package scripts holds the make targets' shell scripts (the demo, the
// prerequisite checks); its tests run them as make does.
package scripts
