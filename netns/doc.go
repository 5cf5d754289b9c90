// Package netns wires pods and secondary ENIs into the kernel with netlink:
// the routed-ENI layout of DESIGN §7, shared with the reference plugin so that
// operators' knowledge carries over.
//
// Every function acts on the network namespace of the calling OS thread (the
// node's namespace) and reaches a pod's namespace through a netlink handle
// opened at its path, so no function switches the caller's thread. A caller
// that itself runs inside another namespace must hold its OS thread locked
// (ns.Do does).
package netns
