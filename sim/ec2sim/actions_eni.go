package ec2sim

import (
	"net/netip"
	"strconv"
	"strings"
)

// CreateNetworkInterface, AttachNetworkInterface, DetachNetworkInterface,
// DeleteNetworkInterface, ModifyNetworkInterfaceAttribute.

type createNIResp struct {
	respMeta
	NetworkInterface niXML  `xml:"networkInterface"`
	ClientToken      string `xml:"clientToken,omitempty"`
}

// isResourceID checks an EC2 id: the prefix and 8 to 17 lower-case hex
// digits. (No regexp: this package is linked into the plugin, and package
// initialisation runs at every pod's start.)
func isResourceID(id, prefix string) bool {
	hex, ok := strings.CutPrefix(id, prefix)
	if !ok || len(hex) < 8 || len(hex) > 17 {
		return false
	}
	for _, c := range hex {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func (s *Sim) createNetworkInterface(f form) (response, *apiError) {
	token := f.get("ClientToken")
	if resp, err, done := s.replayCreate(token, f); done {
		return resp, err
	}
	subnet := f.get("SubnetId")
	if s.poolOf(subnet) == nil {
		return nil, newAPIError("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", subnet)
	}
	groups, err := readGroups(f)
	if err != nil {
		return nil, err
	}
	if len(groups) == 0 {
		groups = []string{s.sgID} // the VPC's default group, as EC2 does
	}
	tags, err := readCreateTags(f)
	if err != nil {
		return nil, err
	}
	primary, r, err := readCreateRequest(f)
	if err != nil {
		return nil, err
	}
	ifType, err := readInterfaceType(f.get("InterfaceType"), primary, r)
	if err != nil {
		return nil, err
	}
	e, err := s.buildENI(subnet, f.get("Description"), groups, ifType, primary, r)
	if err != nil {
		return nil, err
	}
	for _, t := range tags {
		e.tags[t.key] = t.value
	}
	s.enis[e.id] = e
	resp := &createNIResp{NetworkInterface: s.eniXML(e), ClientToken: token}
	resp.NetworkInterface.Status = "pending" // as EC2 answers; Describe says "available"
	s.rememberCreate(token, f, e.id, resp.NetworkInterface)
	return resp, nil
}

// buildENI reserves the primary and the requested addresses, all or nothing.
func (s *Sim) buildENI(subnetID, description string, groups []string, ifType string, primary netip.Addr,
	r addrRequest) (*eniRec, *apiError) {
	if ifType == TypeEFAOnly { // no IPv4 address at all
		e := s.newENI(subnetID, description, groups)
		e.ifType = ifType
		return e, nil
	}
	withPrimary := r
	if primary.IsValid() {
		withPrimary.ips = append([]netip.Addr{primary}, r.ips...)
	} else {
		withPrimary.count++
	}
	ips, pfxs, err := s.reserve(s.poolOf(subnetID), 0, withPrimary)
	if err != nil {
		return nil, err
	}
	// The primary is the explicit one (first) or else the lowest auto-chosen
	// address, which follows the explicit secondaries.
	at := 0
	if !primary.IsValid() {
		at = len(r.ips)
	}
	e := s.newENI(subnetID, description, groups)
	e.ifType = ifType
	e.primary = ips[at]
	ips = append(ips[:at:at], ips[at+1:]...)
	e.give(ips, pfxs, s.now())
	return e, nil
}

// readCreateRequest reads the primary address (optional) and the secondaries
// and prefixes asked for, with EC2's rules on combining them.
func readCreateRequest(f form) (netip.Addr, addrRequest, *apiError) {
	r, err := readCounts(f)
	if err != nil {
		return netip.Addr{}, r, err
	}
	primaryRaw := f.get("PrivateIpAddress")
	var explicit []string
	for _, m := range f.indexed("PrivateIpAddresses") {
		if b, _ := strconv.ParseBool(m["Primary"]); b && primaryRaw == "" {
			primaryRaw = m["PrivateIpAddress"]
			continue
		}
		explicit = append(explicit, m["PrivateIpAddress"])
	}
	var primary netip.Addr
	if primaryRaw != "" {
		addrs, err := parseAddrs([]string{primaryRaw})
		if err != nil {
			return primary, r, err
		}
		primary = addrs[0]
	}
	if r.ips, err = parseAddrs(explicit); err != nil {
		return primary, r, err
	}
	var rawPrefixes []string
	for _, m := range f.indexed("Ipv4Prefix") {
		rawPrefixes = append(rawPrefixes, m["Ipv4Prefix"])
	}
	if r.prefixes, err = parsePrefixes(rawPrefixes); err != nil {
		return primary, r, err
	}
	return primary, r, checkCreateCombination(primary, r)
}

func checkCreateCombination(primary netip.Addr, r addrRequest) *apiError {
	switch {
	case r.count > 0 && len(r.ips) > 0:
		return newAPIError("InvalidParameterCombination",
			"You may specify secondaryPrivateIpAddressCount or specific secondary private IP addresses, but not both.")
	case r.wantsPrefixes() && (r.wantsIPs() || primary.IsValid()):
		return newAPIError("InvalidParameterCombination",
			"IPv4 prefixes cannot be specified together with private IPv4 addresses or a count of them.")
	case r.prefixCount > 0 && len(r.prefixes) > 0:
		return newAPIError("InvalidParameterCombination",
			"You may specify ipv4PrefixCount or specific IPv4 prefixes, but not both.")
	}
	return nil
}

func readGroups(f form) ([]string, *apiError) {
	groups := f.list("SecurityGroupId")
	for _, g := range groups {
		if !isResourceID(g, "sg-") {
			return nil, newAPIError("InvalidGroupId.Malformed", "Invalid id: \"%s\" (expecting \"sg-...\")", g)
		}
	}
	return groups, nil
}

func readCreateTags(f form) ([]tagParam, *apiError) {
	types, tags := f.tagSpecs()
	for _, t := range types {
		if t != "network-interface" {
			return nil, errInvalidParameterValue("'%s' is not a valid taggable resource type for this operation.", t)
		}
	}
	return tags, checkTags(tags, nil)
}

type attachResp struct {
	respMeta
	AttachmentID     string `xml:"attachmentId"`
	NetworkCardIndex int    `xml:"networkCardIndex"`
}

func (s *Sim) attachNetworkInterface(f form) (response, *apiError) {
	e, err := s.eniParam(f)
	if err != nil {
		return nil, err
	}
	if id := f.get("InstanceId"); id != s.cfg.InstanceID {
		return nil, newAPIError("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
	}
	device, _, err := f.intParam("DeviceIndex")
	if err != nil {
		return nil, err
	}
	card, _, err := f.intParam("NetworkCardIndex")
	if err != nil {
		return nil, err
	}
	a, err := s.attach(e, device, card)
	if err != nil {
		return nil, err
	}
	return &attachResp{AttachmentID: a.id, NetworkCardIndex: card}, nil
}

// attach checks EC2's rules, attaches e and plugs its link (now, or after
// Faults.LinkDelay).
func (s *Sim) attach(e *eniRec, device, card int) (*attachment, *apiError) {
	if err := s.checkAttach(e, device, card); err != nil {
		return nil, err
	}
	a := &attachment{id: "eni-attach-0" + s.ids.hex16(), instanceID: s.cfg.InstanceID, deviceIndex: device,
		cardIndex: card, at: s.now()}
	if err := s.plugLink(e, a); err != nil {
		return nil, newAPIError("InternalError", "ec2sim: creating the ENI's link: %v", err)
	}
	e.attach = a
	return a, nil
}

func (s *Sim) checkAttach(e *eniRec, device, card int) *apiError {
	if e.attach != nil || e.branchInUse {
		return newAPIError("InvalidNetworkInterface.InUse", "Interface: [%s] in use.", e.id)
	}
	if e.ifType == TypeBranch { // [unverified message] branch ENIs are associated with a trunk, never attached
		return errInvalidParameterValue("Network interface '%s' of type branch cannot be attached to an instance.", e.id)
	}
	if card < 0 || card >= s.typ.NetworkCards {
		cards := map[bool]string{true: "network card", false: "network cards"}[s.typ.NetworkCards == 1]
		return errInvalidParameterValue("Invalid value '%d' for networkCardIndex: %s has %d %s",
			card, s.cfg.InstanceType, s.typ.NetworkCards, cards)
	}
	if device < 0 {
		return errInvalidParameterValue("Invalid value '%d' for deviceIndex", device)
	}
	attached, onCard := 0, 0
	for _, other := range s.attachedENIs() {
		attached++
		if other.attach.cardIndex == card {
			onCard++
		}
	}
	if attached >= s.typ.total() || onCard >= s.typ.MaxENIs {
		return newAPIError("AttachmentLimitExceeded", "Interface count %d exceeds the limit for %s",
			attached+1, s.cfg.InstanceType)
	}
	for _, other := range s.attachedENIs() {
		if other.attach.cardIndex == card && other.attach.deviceIndex == device {
			return errInvalidParameterValue("Instance '%s' already has an interface attached at device index '%d'.",
				s.cfg.InstanceID, device)
		}
	}
	if e.slots() > s.typ.IPv4PerENI {
		return newAPIError("PrivateIpAddressLimitExceeded", "Number of private addresses will exceed limit.")
	}
	return nil
}

func (s *Sim) detachNetworkInterface(f form) (response, *apiError) {
	id := f.get("AttachmentId")
	var e *eniRec
	for _, cand := range s.enis {
		if cand.attach != nil && cand.attach.id == id {
			e = cand
		}
	}
	if e == nil {
		return nil, newAPIError("InvalidAttachmentID.NotFound", "The attachment ID '%s' does not exist", id)
	}
	if e.attach.deviceIndex == 0 && e.attach.cardIndex == 0 {
		return nil, newAPIError("OperationNotPermitted",
			"The network interface at device index 0 and networkCard index 0 cannot be detached.")
	}
	if e.attach.pending != nil {
		e.attach.pending.Stop() // the link never came
	}
	if err := s.linkDown(e); err != nil {
		return nil, newAPIError("InternalError", "ec2sim: deleting the ENI's link: %v", err)
	}
	e.attach = nil
	s.noteRelease("DetachNetworkInterface", e.id, nil)
	return okReturn(), nil
}

func (s *Sim) deleteNetworkInterface(f form) (response, *apiError) {
	e, err := s.eniParam(f)
	if err != nil {
		return nil, err
	}
	if e.attach != nil || e.branchInUse {
		return nil, errInvalidParameterValue("Network interface '%s' is currently in use.", e.id)
	}
	s.dropENI(e)
	s.noteRelease("DeleteNetworkInterface", e.id, nil)
	return okReturn(), nil
}

func (s *Sim) modifyNetworkInterfaceAttribute(f form) (response, *apiError) {
	e, err := s.eniParam(f)
	if err != nil {
		return nil, err
	}
	given := 0
	for _, key := range []string{"Attachment.AttachmentId", "Description.Value", "SourceDestCheck.Value", "SecurityGroupId.1"} {
		if f.has(key) {
			given++
		}
	}
	if given != 1 {
		return nil, newAPIError("InvalidParameterCombination", "Exactly one attribute must be specified, got %d.", given)
	}
	switch {
	case f.has("Attachment.AttachmentId"):
		err = s.modifyAttachment(e, f)
	case f.has("Description.Value"):
		e.description = f.get("Description.Value")
	case f.has("SourceDestCheck.Value"):
		e.sourceDestCheck, _, err = f.boolParam("SourceDestCheck.Value")
	default:
		e.groups, err = readGroups(f)
	}
	if err != nil {
		return nil, err
	}
	return okReturn(), nil
}

func (s *Sim) modifyAttachment(e *eniRec, f form) *apiError {
	id := f.get("Attachment.AttachmentId")
	if e.attach == nil || e.attach.id != id {
		return newAPIError("InvalidAttachmentID.NotFound", "The attachment ID '%s' does not exist", id)
	}
	dot, ok, err := f.boolParam("Attachment.DeleteOnTermination")
	if err != nil {
		return err
	}
	if !ok {
		return newAPIError("MissingParameter", "The request must contain the parameter attachment.deleteOnTermination")
	}
	e.attach.deleteOnTermination = dot
	return nil
}
