package netns

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Why a path may not be used as a pod's network namespace. CheckPodNetns
// wraps them with the path and what it found, so errors.Is tells them apart.
var (
	// ErrNodeNetns: the path is the namespace the plugin runs in, the node's.
	// Wiring it as a pod would replace the node's default route.
	ErrNodeNetns = errors.New("is the plugin's own network namespace (the node's), not a pod's")
	// ErrNotNetns: the path is not a namespace file, or one of another kind.
	ErrNotNetns = errors.New("is not a network namespace")
)

// processNetns is the process's network namespace. /proc/self names the
// thread-group leader, which no code of ours moves; /proc/thread-self would
// name whatever thread the goroutine runs on, which may have entered a pod's
// namespace (ns.Do) and would then make that pod look like the node.
const processNetns = "/proc/self/ns/net"

// CheckPodNetns tells whether path may be used as a pod's network namespace:
// it must be a network namespace (a file of nsfs whose type is CLONE_NEWNET)
// other than the process's own, compared by device and inode. A path that
// does not exist gives an error matching fs.ErrNotExist. It only opens and
// stats: nothing is entered or changed.
func CheckPodNetns(path string) error {
	// O_PATH: a FIFO, a device or a socket is looked at, never opened for
	// I/O, so a hostile path can neither block nor trigger a driver.
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		return &os.PathError{Op: "statfs", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if fs.Type != unix.NSFS_MAGIC {
		return fmt.Errorf("%s %w (it is %s)", path, ErrNotNetns, fileKind(st.Mode))
	}
	if err := requireNetType(path, fd); err != nil {
		return err
	}
	var self unix.Stat_t
	if err := unix.Stat(processNetns, &self); err != nil {
		return fmt.Errorf("the plugin's own network namespace: %w", &os.PathError{Op: "stat", Path: processNetns, Err: err})
	}
	if st.Dev == self.Dev && st.Ino == self.Ino {
		return fmt.Errorf("%s %w", path, ErrNodeNetns)
	}
	return nil
}

// requireNetType asks the kernel which kind of namespace the nsfs file fd
// is. The ioctl needs a real descriptor, so the O_PATH one is reopened
// through /proc; an nsfs file has no open side effects.
func requireNetType(path string, fd int) error {
	rd, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", fd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(rd)
	typ, err := unix.IoctlRetInt(rd, unix.NS_GET_NSTYPE)
	if err != nil {
		return &os.PathError{Op: "ioctl NS_GET_NSTYPE", Path: path, Err: err}
	}
	if typ != unix.CLONE_NEWNET {
		return fmt.Errorf("%s %w (it is a %s namespace)", path, ErrNotNetns, nsKind(typ))
	}
	return nil
}

func fileKind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "a regular file"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFLNK:
		return "a symbolic link"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "a device"
	}
	return "not a namespace file"
}

func nsKind(typ int) string {
	switch typ {
	case unix.CLONE_NEWNS:
		return "mount"
	case unix.CLONE_NEWUTS:
		return "UTS"
	case unix.CLONE_NEWIPC:
		return "IPC"
	case unix.CLONE_NEWUSER:
		return "user"
	case unix.CLONE_NEWPID:
		return "PID"
	case unix.CLONE_NEWCGROUP:
		return "cgroup"
	case unix.CLONE_NEWTIME:
		return "time"
	}
	return fmt.Sprintf("type %#x", typ)
}
