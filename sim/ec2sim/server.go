// Package ec2sim is an EC2 Query API and IMDS emulator on loopback, faithful
// enough that the real aws-sdk-go-v2 ec2 and imds clients work against it
// unchanged. It models one instance (a node) in one subnet: instance-type
// limits, subnet address accounting, /28 prefixes, ENI attachment, tags,
// ClientToken idempotency, filters, pagination, EC2's error codes and HTTP
// statuses, and injectable faults.
package ec2sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Config describes the simulated node. Zero values take the defaults below.
type Config struct {
	InstanceType string       // default "t3.small"
	InstanceID   string       // default "i-0123456789abcdef0"
	Region       string       // default "us-west-2"
	AZ           string       // default Region+"a"
	VPCCIDR      netip.Prefix // default 100.64.0.0/16
	SubnetCIDR   netip.Prefix // default 100.64.0.0/20; must lie in 100.64.0.0/10 and in VPCCIDR
	// LinkNetns, when set, is the path of a network namespace in which a dummy
	// link "eth<deviceIndex>" ("c<card>eth<deviceIndex>" on cards > 0) with
	// the ENI's MAC is created (down) on attach, after Faults.LinkDelay, and
	// deleted on detach.
	LinkNetns string
	// LinkPeerNetns, with LinkNetns, makes every ENI link a veth whose other
	// end, "sim-eth<deviceIndex>" (up), sits in this namespace: a simulated
	// VPC there sees what the node sends (see PlugPrimary for device 0).
	LinkPeerNetns string
	Clock         func() time.Time // default time.Now
}

// Sim is one simulated node with its EC2 and IMDS endpoints.
// All state sits behind one mutex.
type Sim struct {
	mu  sync.Mutex
	cfg Config
	typ typeInfo
	ids idGen

	vpcID, subnetID, sgID string
	vpcExtra              []netip.Prefix // secondary CIDRs (AssociateVPCCIDR)
	groups                []*sgRec       // the VPC's security groups (groups.go), the default one first
	subnets               []*subnetPool  // the node's subnet first, then AddSubnet's
	ownerID, imageID      string
	reservationID         string
	launchTime            time.Time

	subnet  *subnetPool
	enis    map[string]*eniRec
	nextSeq int
	macs    map[string]bool
	idem    map[string]idemEntry
	resTags map[string]map[string]string // tags on the instance, subnet, VPC
	v6      *v6State                     // IPv6 (ipv6.go), made on first use

	faults     Faults
	rng        *rand.Rand
	failNext   map[string]*failRule
	denied     map[string]bool
	counters   map[string]int
	dryRuns    map[string]int            // DryRun=true requests that passed IAM, per action
	eniCalls   map[string]map[string]int // ENI ID -> action -> calls that named it
	releases   []Release                 // releases.go
	imdsTokens map[string]time.Time

	lastAccessKey string
	linkErr       error                // the last delayed link that could not be made
	trust         Trust                // STS and Pod Identity rules (identity.go)
	noRole        bool                 // DetachRole: IMDS serves no instance role
	issued        map[string]time.Time // access key id → expiry of credentials STS or the agent issued

	srv *http.Server
	url string
}

var simRange = netip.MustParsePrefix("100.64.0.0/10")

func (c Config) withDefaults() Config {
	if c.InstanceType == "" {
		c.InstanceType = "t3.small"
	}
	if c.InstanceID == "" {
		c.InstanceID = "i-0123456789abcdef0"
	}
	if c.Region == "" {
		c.Region = "us-west-2"
	}
	if c.AZ == "" {
		c.AZ = c.Region + "a"
	}
	if !c.VPCCIDR.IsValid() {
		c.VPCCIDR = netip.MustParsePrefix("100.64.0.0/16")
	}
	if !c.SubnetCIDR.IsValid() {
		c.SubnetCIDR = netip.MustParsePrefix("100.64.0.0/20")
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	return c
}

func (c Config) validate() error {
	sub, vpc := c.SubnetCIDR.Masked(), c.VPCCIDR.Masked()
	if !simRange.Contains(sub.Addr()) || sub.Bits() < simRange.Bits() {
		return fmt.Errorf("ec2sim: subnet %s must lie in %s", sub, simRange)
	}
	if !vpc.Contains(sub.Addr()) || sub.Bits() < vpc.Bits() {
		return fmt.Errorf("ec2sim: subnet %s must lie in the VPC %s", sub, vpc)
	}
	return nil
}

// New builds a node: one running instance with its primary ENI (device 0, one
// primary IP, no secondaries).
func New(cfg Config) (*Sim, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	table, err := instanceTypes()
	if err != nil {
		return nil, err
	}
	typ, ok := table[cfg.InstanceType]
	if !ok {
		return nil, fmt.Errorf("ec2sim: unknown instance type %q", cfg.InstanceType)
	}
	pool, err := newSubnetPool(cfg.SubnetCIDR)
	if err != nil {
		return nil, fmt.Errorf("ec2sim: %w", err)
	}
	s := &Sim{cfg: cfg, typ: typ, ids: idGen{state: seedFrom(cfg.InstanceID + cfg.SubnetCIDR.String())},
		subnet: pool, enis: map[string]*eniRec{}, macs: map[string]bool{}, idem: map[string]idemEntry{},
		resTags: map[string]map[string]string{}, failNext: map[string]*failRule{}, denied: map[string]bool{},
		counters: map[string]int{}, dryRuns: map[string]int{}, eniCalls: map[string]map[string]int{}, imdsTokens: map[string]time.Time{}, rng: rand.New(rand.NewPCG(0, 0)),
		ownerID: "123456789012", launchTime: cfg.Clock()}
	s.vpcID = "vpc-0" + s.ids.hex16()
	s.subnetID = "subnet-0" + s.ids.hex16()
	pool.id, pool.az = s.subnetID, cfg.AZ
	s.subnets = []*subnetPool{pool}
	s.sgID = "sg-0" + s.ids.hex16()
	s.imageID = "ami-0" + s.ids.hex16()
	s.reservationID = "r-0" + s.ids.hex16()
	if err := s.addPrimaryENI(); err != nil {
		return nil, err
	}
	return s, nil
}

// addPrimaryENI attaches device 0. Its times are zero so IMDS lag never hides it.
func (s *Sim) addPrimaryENI() error {
	e := s.newENI(s.subnetID, "", []string{s.sgID})
	ips, ok := s.subnet.allocLowest(1)
	if !ok {
		return errors.New("ec2sim: subnet has no address for the primary ENI")
	}
	e.primary = ips[0]
	e.attach = &attachment{id: "eni-attach-0" + s.ids.hex16(), instanceID: s.cfg.InstanceID,
		deleteOnTermination: true, linked: true}
	s.enis[e.id] = e
	return nil
}

func (s *Sim) newENI(subnetID, description string, groups []string) *eniRec {
	mac := s.ids.mac()
	for s.macs[mac] {
		mac = s.ids.mac()
	}
	s.macs[mac] = true
	s.nextSeq++
	e := newENIRec(s.nextSeq, "eni-0"+s.ids.hex16(), mac, subnetID, s.cfg.Clock())
	e.description = description
	e.groups = groups
	return e
}

func (s *Sim) now() time.Time { return s.cfg.Clock() }

// Start listens on addr (e.g. "127.0.0.1:0") and serves the EC2 Query API at
// POST /, IMDS at /latest/..., and the control API at /_sim/....
func (s *Sim) Start(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("ec2sim: %w", err)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	s.srv, s.url = srv, "http://"+ln.Addr().String()
	s.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
	return nil
}

// URL is the base URL after Start, for both AWS_ENDPOINT_URL_EC2 and
// AWS_EC2_METADATA_SERVICE_ENDPOINT.
func (s *Sim) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// Close stops the server started by Start.
func (s *Sim) Close() error {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Close()
}

// Handler serves EC2, IMDS, STS, Pod Identity and the control API, for httptest.
func (s *Sim) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

func (s *Sim) serveHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasPrefix(r.URL.Path, "/latest/"):
		s.serveIMDS(w, r)
	case strings.HasPrefix(r.URL.Path, "/_sim/"):
		s.serveControl(w, r)
	case r.URL.Path == PodIdentityPath:
		s.servePodIdentity(w, r)
	case isSTSRequest(r):
		s.serveSTS(w, r)
	case r.Method == http.MethodPost:
		if !s.refuseUnissued(w, r) {
			s.serveEC2(w, r)
		}
	default:
		http.NotFound(w, r)
	}
}

// Env is the environment that points the SDK's default configuration at this
// emulator with static credentials, isolated from the host's AWS files.
func (s *Sim) Env() []string {
	u := s.URL()
	return []string{
		"AWS_REGION=" + s.cfg.Region,
		"AWS_ENDPOINT_URL_EC2=" + u,
		"AWS_EC2_METADATA_SERVICE_ENDPOINT=" + u,
		"AWS_ACCESS_KEY_ID=AKIDEC2SIM",
		"AWS_SECRET_ACCESS_KEY=ec2sim-secret",
		"AWS_CONFIG_FILE=/dev/null",
		"AWS_SHARED_CREDENTIALS_FILE=/dev/null",
	}
}
