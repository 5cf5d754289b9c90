// Package netns wires pods and secondary ENIs into the kernel with netlink,
// in the reference plugin's routed-ENI layout so that operators' knowledge
// carries over: a pod reaches the node through a veth pair and the link-local
// gateway PodGateway; the node reaches the pod by a /32 route in main and the
// rule `to <pod IP> lookup main`. A pod of the primary ENI leaves by main; a
// pod of a secondary ENI by the rule `from <pod IP> lookup <ENI table>`, a
// table that holds the subnet gateway and a default route through that ENI
// (RouteTable numbers the tables).
//
// IPv6 is wired the same way, as the reference's IPv6 mode: a /128 on the
// pod's interface (added nodad: the pool guarantees it is unique), the
// gateway PodGateway6 (fe80::1) with a permanent neighbour, a /128 host route
// and the IPv6 rule `to <pod> lookup main` (512); a dual-stack pod gets both
// on one interface. An egress pair (v4if0 or v6if0, see Egress) gives a
// single-stack pod the other family through the node's SNAT (hostnet).
//
// Every function acts on the network namespace of the calling OS thread (the
// node's namespace) and reaches a pod's namespace through a netlink handle
// opened at its path, so no function switches the caller's thread. A caller
// that itself runs inside another namespace must hold its OS thread locked
// (ns.Do does).
package netns
