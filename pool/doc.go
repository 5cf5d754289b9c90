// Package pool is the warm-pool policy: from the instance limits, the
// operator's targets, a snapshot of the node's addresses and the time, it
// computes the plan of EC2 work to do, and it chooses the address for a pod.
// It does no I/O; every other package depends on its types.
//
// # Policy
//
// Counting. A pod-usable address is free when it is Free, or Cooling and its
// IP_COOLDOWN_PERIOD has passed, in a block that is not Releasing. A Cooling
// address whose cooldown has not passed is held but not free: a pod never
// gets it and growth does not count on it. Held = free + cooling + assigned.
// Releasing blocks are neither held nor free, but still take one of their
// ENI's IPv4 slots. Every ENI, ready or not, counts. A block of the other mode
// (a /32 under prefix delegation, a /28 without) is used and counted like any
// other and goes back only as excess. All figures are in addresses.
//
// Limits. An ENI has IPv4PerENI-1 slots (its primary address is never a pod
// address); each slot holds one /32 or, with prefix delegation, one /28. No
// plan goes beyond min(MAX_ENI, the instance's ENIs) ENIs, their slots, or
// max pods held addresses (with prefixes: no new prefix once held reaches max
// pods, so at most ceil(max pods/16) prefixes when all blocks are prefixes).
//
// Rules, the first that applies:
//
//   - WARM_IP_TARGET (W) or MINIMUM_IP_TARGET (MIN) > 0: shortfall =
//     max(W+waiting-free, MIN-held, 0) addresses, grown as ceil(shortfall/16)
//     prefixes with prefix delegation. Excess blocks go back while free stays
//     >= W and held >= MIN. With MIN alone and no pod waiting the pool holds
//     exactly max(MIN, assigned+cooling), as in the reference.
//   - Prefix delegation, WARM_PREFIX_TARGET: keep that many whole free
//     prefixes (all 16 addresses free) and always at least max(waiting, 1)
//     free addresses, so WARM_PREFIX_TARGET=0 grows one prefix when nothing
//     is free.
//   - Otherwise WARM_ENI_TARGET (default 1): keep N = ceil((assigned +
//     cooling + waiting + max(WARM_ENI_TARGET*slots, 1)) / slots) ENIs, at
//     least 1 and at most the ENI limit, and fill the lowest N completely.
//     WARM_ENI_TARGET=0 thus keeps at least one free address and grows by
//     whole ENIs, without the reference's allocate/free loop. Only whole ENIs
//     go back, never single addresses.
//
// Waiting pods. Input.Waiting counts the pods whose ADD found no free
// address and waits for this pass. Each rule serves them on top of its target
// (the "waiting" terms above), so a burst of pods costs one EC2 call, not one
// per pod, and a pool at its target still grows for them; the limits above
// bound it as always. Plan.Figures.Waiting shows the count.
//
// No loop. A release is kept only if the plan computed right after it would
// grow nothing; a plan that grows releases nothing.
//
// Release delay. Excess goes back only once it has lasted ReleaseDelay: the
// first pass that sees it returns Plan.ExcessSince = Now and releases
// nothing; a pass at least ReleaseDelay later releases it and returns a zero
// ExcessSince, so new excess waits a full delay again. A pass with no excess
// returns zero. Callers persist Plan.ExcessSince in Snapshot.ExcessSince.
//
// Growth order. Existing ENIs with free slots, lowest device index first, one
// Assign each; then new ENIs at the lowest unused device indexes, each created
// with its addresses (CreateENI.Count, at most a full ENI). Nothing grows while
// Now < Snapshot.GrowBlockedUntil (subnet exhaustion back-off); the figures
// still show the shortfall, and nothing is released meanwhile.
//
// Prefix fallback. In prefix mode, while Now < Snapshot.NoPrefixesUntil (the
// subnet had no free /28), growth asks for single /32s, one per slot, within
// the same ENI, slot and max-pods limits: WARM_PREFIX_TARGET acts as
// WARM_IP_TARGET = max(WARM_PREFIX_TARGET*16, 1); the IP targets stay as
// they are. Releases follow the prefix rule as always, and are kept only if
// neither rule would grow afterwards, so the fallback's end can bring prefix
// growth but never undo a release; /32s it makes excess go back as excess.
//
// Release order. Highest device index ENI first, highest block first; only
// blocks whose every address is free, never one with an assigned or cooling
// address, never one already Releasing. One Unassign per ENI lists all its
// blocks to go; an ENI vpc-cni created (never the primary) left with no
// blocks and nothing in use or cooling is one DeleteENI instead; an adopted
// ENI gives its blocks back with an Unassign and stays attached. Action.Count is in prefixes when
// Action.Prefixes, else in addresses; an Unassign's Release holds the CIDRs.
//
// Address choice (PickAddress): lowest device index Ready ENI, lowest block,
// lowest address, so pods pack low and high ENIs drain.
//
// Classes (Classify, class.go). A not-ours ENI (ENI.Class NotOurs) is never
// grown, released, deleted or picked; its free addresses count for nothing,
// the addresses pods still hold on it (it changed class under them) count as
// assigned, and on card 0 it takes one ENI slot and one ENI's worth of the
// max-pods formula. ENIs on other cards are outside card 0's limits. Only an
// ENI of class Ours (or one recorded before classes) may be deleted.
package pool
