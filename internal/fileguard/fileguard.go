// Package fileguard is the one rule for files that decide what a root
// process does to the node: the state directory and its database, the
// configuration file, the credentials handoff. Whoever can write one of them
// can hand a pod's address to another pod, change the pool's targets, or
// point the AWS client at their own credentials endpoint. So such a file (or
// directory) must be owned by this process's user (or root, where root
// installs it for every process) and must not be writable by group or
// others.
package fileguard

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"syscall"
)

// ErrUnsafe marks a file or directory refused for its owner, mode or type.
var ErrUnsafe = errors.New("unsafe path")

// Euid is this process's effective user id.
var Euid = sync.OnceValue(os.Geteuid)

// Rule is who may own a file and the mode a fix gives it.
type Rule struct {
	What       string      // names the file in messages: "configuration file"
	RootMayOwn bool        // root may own it as well as this process's user
	Mode       fs.FileMode // the mode the fix suggests
	Else       string      // another way out, after the fix: "or use another --state-dir"
}

// Check refuses info (of path) if a user the rule does not allow owns it,
// or group or others may write it. The error wraps ErrUnsafe and names the
// file, its owner and mode, and the commands that fix it.
func (r Rule) Check(path string, info fs.FileInfo) error {
	var problems, fixes []string
	if st, ok := info.Sys().(*syscall.Stat_t); ok && !r.mayOwn(int(st.Uid)) {
		problems = append(problems, fmt.Sprintf("owned by uid %d, not %s", st.Uid, r.owners()))
		fixes = append(fixes, fmt.Sprintf("chown %d %s", Euid(), path))
	}
	if mode := info.Mode().Perm(); mode&0o022 != 0 {
		problems = append(problems, fmt.Sprintf("mode %04o lets group or others write it", mode))
		fixes = append(fixes, fmt.Sprintf("chmod %04o %s", r.Mode, path))
	}
	if len(problems) == 0 {
		return nil
	}
	fix := strings.Join(fixes, " && ")
	if r.Else != "" {
		fix += " (" + r.Else + ")"
	}
	return fmt.Errorf("%s %s: %w: %s; check its contents, then fix: %s", r.What, path, ErrUnsafe, strings.Join(problems, " and "), fix)
}

func (r Rule) mayOwn(uid int) bool { return uid == Euid() || r.RootMayOwn && uid == 0 }

func (r Rule) owners() string {
	if r.RootMayOwn && Euid() != 0 {
		return fmt.Sprintf("root or this process's uid %d", Euid())
	}
	return fmt.Sprintf("this process's uid %d", Euid())
}

// Open opens path read-only and checks the opened file (so the check and
// the read see the same file, whatever a rename does in between). A symlink
// is followed: Kubernetes mounts a ConfigMap's files as links into a
// root-owned directory, and the file reached is what the rule checks.
func (r Rule) Open(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err == nil {
		err = r.Check(path, info)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadFile is os.ReadFile through Open.
func (r Rule) ReadFile(path string) ([]byte, error) {
	f, err := r.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
