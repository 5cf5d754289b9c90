// Package docs holds the user documentation (the *.md pages beside this
// file). It has no code: its tests check the pages against the code, so a
// knob, a conflist key or a failure cause added without its entry fails.
package docs
